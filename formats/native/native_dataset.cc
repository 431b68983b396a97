#include "formats/native/native_dataset.h"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <system_error>

#include "src/checksum.h"
#include "src/endian.h"
#include "src/human.h"

namespace ds::native {

// ---- Dataset -----------------------------------------------------------------------------------

namespace {

// A file the manifest lists that is not there: the dataset is damaged (bad data, exit 1), not a
// usage error.
Status MissingIsDamage(Status s, const std::string& dir, std::string_view name) {
  if (s.code() != Code::kNotFound) return s;
  return Status(Code::kCorruption,
                fmt::format("{}/{}: missing, but {} lists it: the dataset is damaged (restore the "
                            "file, or convert again)",
                            dir, name, kManifestName));
}

}  // namespace

Result<std::unique_ptr<Dataset>> Dataset::Open(const std::string& dir) {
  return Open(LocalStorage(), dir);
}

Result<std::unique_ptr<Dataset>> Dataset::Open(std::shared_ptr<Storage> storage,
                                               const std::string& dir) {
  auto d = std::make_unique<Dataset>();
  d->dir_ = dir;
  d->storage_ = std::move(storage);
  DS_ASSIGN_OR_RETURN(d->manifest_, Manifest::Load(*d->storage_, dir));
  DS_ASSIGN_OR_RETURN(d->manifest_stat_, d->storage_->Stat(dir + "/" + kManifestName, true));
  auto index = GlobalIndex::Open(*d->storage_, dir + "/" + d->manifest_.index.name);
  if (!index.ok()) return MissingIsDamage(index.status(), dir, d->manifest_.index.name);
  d->index_ = std::move(index).value();
  if (d->index_.size() != d->manifest_.samples ||
      d->index_.shard_count() != d->manifest_.shards.size()) {
    return Status(Code::kCorruption,
                  fmt::format("{}/{}: {} samples in {} shards, but the manifest says {} in {}", dir,
                              kIndexName, d->index_.size(), d->index_.shard_count(),
                              d->manifest_.samples, d->manifest_.shards.size()));
  }
  d->files_.resize(d->manifest_.shards.size());
  d->OpenShards();
  return d;
}

void Dataset::OpenShards() {
  // Half the open-file limit at most: a process may hold several datasets, and other files.
  struct rlimit nofile;
  size_t budget = ::getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur != RLIM_INFINITY
                      ? static_cast<size_t>(nofile.rlim_cur / 2)
                      : files_.size();
  for (size_t k = 0; k < files_.size() && k < budget; k++) {
    const FileMeta& meta = manifest_.shards[k];
    auto file = storage_->OpenRead(dir_ + "/" + meta.name);
    if (!file.ok()) {
      if (file.status().err() == EMFILE || file.status().err() == ENFILE) break;
      continue;  // missing: ShardFile reports it when the shard is read
    }
    if ((*file)->size() == meta.size) files_[k] = std::move(file).value();
  }
  // Replaced while these were opened: none of them is known to be this dataset's.
  if (!CheckNotReplaced().ok()) {
    for (auto& f : files_) f.reset();
  }
}

Result<const RandomAccessFile*> Dataset::ShardFile(uint32_t shard) const {
  if (shard >= files_.size()) {
    return Status(Code::kCorruption, fmt::format("{}/{}: entry names shard {} of {}", dir_,
                                                 kIndexName, shard, files_.size()));
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (!files_[shard]) {
    const FileMeta& meta = manifest_.shards[shard];
    auto opened = storage_->OpenRead(dir_ + "/" + meta.name);
    DS_RETURN_IF_ERROR(CheckNotReplaced());  // after the open: then the file is of this dataset
    if (!opened.ok()) return MissingIsDamage(opened.status(), dir_, meta.name);
    uint64_t size = (*opened)->size();
    if (size != meta.size) {
      return Status(Code::kCorruption,
                    fmt::format("{}: {} bytes, but the manifest says {} (truncated or replaced); "
                                "run `dspack verify {}`",
                                meta.name, size, meta.size, dir_));
    }
    files_[shard] = std::move(opened).value();
  }
  return files_[shard].get();
}

Status Dataset::CheckNotReplaced() const {
  auto now = storage_->Stat(dir_ + "/" + kManifestName, true);
  if (now.ok() && now->device == manifest_stat_.device && now->inode == manifest_stat_.inode &&
      now->mtime_ns == manifest_stat_.mtime_ns && now->size == manifest_stat_.size) {
    return Status::Ok();
  }
  return Status(Code::kIOError,
                fmt::format("{}: the dataset was replaced or removed since it was opened "
                            "(by another convert?); open it again",
                            dir_));
}

Result<GlobalEntry> Dataset::Entry(uint64_t i) const {
  GlobalEntry e = index_.entry(i);
  if (e.shard >= manifest_.shards.size() || e.offset + e.length > manifest_.shards[e.shard].size ||
      e.offset + e.length < e.offset) {
    return Status(Code::kCorruption,
                  fmt::format("{}/{}: entry for sample {} (shard {}, offset {}, length {}) points "
                              "outside the dataset",
                              dir_, kIndexName, i, e.shard, e.offset, e.length));
  }
  return e;
}

std::string Dataset::Where(uint64_t i, const GlobalEntry& e) const {
  std::string shard = e.shard < manifest_.shards.size() ? manifest_.shards[e.shard].name : "?";
  return fmt::format("{}: sample {} at offset {}", shard, i, e.offset);
}

Result<Sample> Dataset::Get(uint64_t i) const {
  DS_ASSIGN_OR_RETURN(GlobalEntry e, Entry(i));
  DS_ASSIGN_OR_RETURN(const RandomAccessFile* file, ShardFile(e.shard));
  return ReadRecordAt(*file, e.offset, e.length, Where(i, e));
}

Result<std::pair<const RandomAccessFile*, GlobalEntry>> Dataset::RecordExtent(uint64_t i) const {
  DS_ASSIGN_OR_RETURN(GlobalEntry e, Entry(i));
  DS_ASSIGN_OR_RETURN(const RandomAccessFile* file, ShardFile(e.shard));
  return std::make_pair(file, e);
}

Result<Sample> Dataset::DecodeRecordBytes(uint64_t i, const GlobalEntry& e,
                                          std::string_view bytes) const {
  if (bytes.size() != e.length) {
    return Status(Code::kCorruption, fmt::format("{}: {} of {} record bytes (truncated shard)",
                                                 Where(i, e), bytes.size(), e.length));
  }
  return DecodeRecord(reinterpret_cast<const uint8_t*>(bytes.data()), e.length, Where(i, e));
}

Result<RecordHead> Dataset::Head(uint64_t i) const {
  DS_ASSIGN_OR_RETURN(GlobalEntry e, Entry(i));
  DS_ASSIGN_OR_RETURN(const RandomAccessFile* file, ShardFile(e.shard));
  return ReadRecordHeadAt(*file, e.offset, e.length, Where(i, e));
}

Status Dataset::StreamPayload(uint64_t i, const RecordHead& head,
                              const std::function<Status(size_t, std::string_view)>& fn) const {
  DS_ASSIGN_OR_RETURN(GlobalEntry e, Entry(i));
  DS_ASSIGN_OR_RETURN(const RandomAccessFile* file, ShardFile(e.shard));
  std::string where = Where(i, e);
  std::string buf(std::min<uint64_t>(head.payload_len(), 1 << 20), '\0');
  uint64_t pos = e.offset + head.payload_offset();
  uint32_t crc = 0;
  for (size_t f = 0; f < head.fields.size(); f++) {
    uint64_t left = head.fields[f].size;
    if (left == 0) DS_RETURN_IF_ERROR(fn(f, std::string_view()));
    while (left > 0) {
      size_t k = static_cast<size_t>(std::min<uint64_t>(left, buf.size()));
      DS_RETURN_IF_ERROR(file->ReadAt(pos, buf.data(), k, where));
      crc = Crc32cExtend(crc, buf.data(), k);
      DS_RETURN_IF_ERROR(fn(f, std::string_view(buf.data(), k)));
      pos += k;
      left -= k;
    }
  }
  uint8_t stored[4];
  DS_RETURN_IF_ERROR(file->ReadAt(pos, stored, 4, where));
  if (LoadLE32(stored) != crc) {
    return Status(Code::kCorruption,
                  fmt::format("{} (key {}): data checksum mismatch", where, EscapeBytes(head.key)));
  }
  return Status::Ok();
}

Result<std::optional<uint64_t>> Dataset::Find(std::string_view key) const {
  for (uint64_t c : index_.Candidates(key)) {
    if (c >= size()) continue;
    DS_ASSIGN_OR_RETURN(RecordHead h, Head(c));
    if (h.key == key) return std::optional<uint64_t>(c);
  }
  return std::optional<uint64_t>();
}

Result<std::vector<std::string>> Dataset::Classes() const {
  std::vector<std::string> out;
  if (manifest_.label_field.empty()) return out;
  auto read = ReadAll(*storage_, dir_ + "/" + kClassesName);
  if (!read.ok()) return MissingIsDamage(read.status(), dir_, kClassesName);
  std::string text = std::move(read).value();
  size_t pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string::npos) nl = text.size();
    out.push_back(text.substr(pos, nl - pos));
    pos = nl + 1;
  }
  return out;
}

}  // namespace ds::native
