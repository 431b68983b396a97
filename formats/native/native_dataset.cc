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
  auto d = std::make_unique<Dataset>();
  d->dir_ = dir;
  DS_ASSIGN_OR_RETURN(d->manifest_, Manifest::Load(dir));
  if (::stat((dir + "/" + kManifestName).c_str(), &d->manifest_stat_) != 0) {
    return Status::FromErrno(errno, dir + "/" + kManifestName);
  }
  auto index = GlobalIndex::Open(dir + "/" + d->manifest_.index.name);
  if (!index.ok()) return MissingIsDamage(index.status(), dir, d->manifest_.index.name);
  d->index_ = std::move(index).value();
  if (d->index_.size() != d->manifest_.samples ||
      d->index_.shard_count() != d->manifest_.shards.size()) {
    return Status(Code::kCorruption,
                  fmt::format("{}/{}: {} samples in {} shards, but the manifest says {} in {}", dir,
                              kIndexName, d->index_.size(), d->index_.shard_count(),
                              d->manifest_.samples, d->manifest_.shards.size()));
  }
  d->fds_.resize(d->manifest_.shards.size());
  d->OpenShards();
  return d;
}

void Dataset::OpenShards() {
  // Half the open-file limit at most: a process may hold several datasets, and other files.
  struct rlimit nofile;
  size_t budget = ::getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur != RLIM_INFINITY
                      ? static_cast<size_t>(nofile.rlim_cur / 2)
                      : fds_.size();
  for (size_t k = 0; k < fds_.size() && k < budget; k++) {
    const FileMeta& meta = manifest_.shards[k];
    auto fd = OpenFile(dir_ + "/" + meta.name, O_RDONLY);
    if (!fd.ok()) {
      if (fd.status().err() == EMFILE || fd.status().err() == ENFILE) break;
      continue;  // missing: ShardFd reports it when the shard is read
    }
    auto size = FileSize(fd->get(), meta.name);
    if (size.ok() && *size == meta.size) fds_[k] = std::move(fd).value();
  }
  // Replaced while these were opened: none of them is known to be this dataset's.
  if (!CheckNotReplaced().ok()) {
    for (auto& fd : fds_) fd = OwnedFd();
  }
}

Result<int> Dataset::ShardFd(uint32_t shard) const {
  if (shard >= fds_.size()) {
    return Status(Code::kCorruption, fmt::format("{}/{}: entry names shard {} of {}", dir_,
                                                 kIndexName, shard, fds_.size()));
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (!fds_[shard].valid()) {
    const FileMeta& meta = manifest_.shards[shard];
    auto opened = OpenFile(dir_ + "/" + meta.name, O_RDONLY);
    DS_RETURN_IF_ERROR(CheckNotReplaced());  // after the open: then the fd is of this dataset
    if (!opened.ok()) return MissingIsDamage(opened.status(), dir_, meta.name);
    OwnedFd fd = std::move(opened).value();
    DS_ASSIGN_OR_RETURN(uint64_t size, FileSize(fd.get(), meta.name));
    if (size != meta.size) {
      return Status(Code::kCorruption,
                    fmt::format("{}: {} bytes, but the manifest says {} (truncated or replaced); "
                                "run `dspack verify {}`",
                                meta.name, size, meta.size, dir_));
    }
    fds_[shard] = std::move(fd);
  }
  return fds_[shard].get();
}

Status Dataset::CheckNotReplaced() const {
  struct stat now;
  if (::stat((dir_ + "/" + kManifestName).c_str(), &now) == 0 &&
      now.st_dev == manifest_stat_.st_dev && now.st_ino == manifest_stat_.st_ino &&
      now.st_mtim.tv_sec == manifest_stat_.st_mtim.tv_sec &&
      now.st_mtim.tv_nsec == manifest_stat_.st_mtim.tv_nsec) {
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
  DS_ASSIGN_OR_RETURN(int fd, ShardFd(e.shard));
  return ReadRecordAt(fd, e.offset, e.length, Where(i, e));
}

Result<std::pair<int, GlobalEntry>> Dataset::RecordExtent(uint64_t i) const {
  DS_ASSIGN_OR_RETURN(GlobalEntry e, Entry(i));
  DS_ASSIGN_OR_RETURN(int fd, ShardFd(e.shard));
  return std::make_pair(fd, e);
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
  DS_ASSIGN_OR_RETURN(int fd, ShardFd(e.shard));
  return ReadRecordHeadAt(fd, e.offset, e.length, Where(i, e));
}

Status Dataset::StreamPayload(uint64_t i, const RecordHead& head,
                              const std::function<Status(size_t, std::string_view)>& fn) const {
  DS_ASSIGN_OR_RETURN(GlobalEntry e, Entry(i));
  DS_ASSIGN_OR_RETURN(int fd, ShardFd(e.shard));
  std::string where = Where(i, e);
  std::string buf(std::min<uint64_t>(head.payload_len(), 1 << 20), '\0');
  uint64_t pos = e.offset + head.payload_offset();
  uint32_t crc = 0;
  for (size_t f = 0; f < head.fields.size(); f++) {
    uint64_t left = head.fields[f].size;
    if (left == 0) DS_RETURN_IF_ERROR(fn(f, std::string_view()));
    while (left > 0) {
      size_t k = static_cast<size_t>(std::min<uint64_t>(left, buf.size()));
      DS_RETURN_IF_ERROR(ReadFullAt(fd, buf.data(), k, pos, where));
      crc = Crc32cExtend(crc, buf.data(), k);
      DS_RETURN_IF_ERROR(fn(f, std::string_view(buf.data(), k)));
      pos += k;
      left -= k;
    }
  }
  uint8_t stored[4];
  DS_RETURN_IF_ERROR(ReadFullAt(fd, stored, 4, pos, where));
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
  auto read = ReadWholeFile(dir_ + "/" + kClassesName);
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
