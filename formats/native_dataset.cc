#include "formats/native_dataset.h"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <system_error>

#include "src/checksum.h"
#include "src/endian.h"
#include "src/human.h"

namespace ds::native {

namespace {

// Files a dspack dataset directory may hold (what --force may remove).
bool IsDatasetFile(const std::string& name) {
  auto ends = [&](std::string_view suf) {
    return name.size() >= suf.size() &&
           name.compare(name.size() - suf.size(), suf.size(), suf) == 0;
  };
  if (name == kManifestName || name == kIndexName || name == kClassesName) return true;
  std::string base = ends(".tmp") ? name.substr(0, name.size() - 4) : name;
  if (base == kManifestName || base == kIndexName || base == kClassesName) return true;
  return base.rfind("shard-", 0) == 0 && base.size() > 10 &&
         base.compare(base.size() - 4, 4, ".dsr") == 0;
}

Result<std::vector<std::string>> ListDir(const std::string& dir) {
  DIR* d = ::opendir(dir.c_str());
  if (!d) return Status::FromErrno(errno, dir);
  std::vector<std::string> names;
  while (dirent* e = ::readdir(d)) {
    std::string n = e->d_name;
    if (n != "." && n != "..") names.push_back(std::move(n));
  }
  ::closedir(d);
  return names;
}

}  // namespace

// ---- DatasetWriter -----------------------------------------------------------------------------

DatasetWriter::DatasetWriter(std::string out, DatasetOptions options, bool created_dir)
    : out_(std::move(out)), options_(std::move(options)), created_dir_(created_dir) {}

DatasetWriter::~DatasetWriter() {
  if (!done_) Abandon();
}

Result<std::unique_ptr<DatasetWriter>> DatasetWriter::Create(const std::string& out,
                                                             const DatasetOptions& options) {
  if (options.align == 0 || options.align > kMaxAlign || (options.align & (options.align - 1))) {
    return Status(
        Code::kInvalidArgument,
        fmt::format("--align {}: must be a power of two between 1 and 1GiB", options.align));
  }
  if (options.shard_size < 4096) {
    return Status(Code::kInvalidArgument, "--shard-size must be at least 4KiB");
  }
  bool created = false;
  struct stat st;
  if (::stat(out.c_str(), &st) != 0) {
    if (errno != ENOENT) return Status::FromErrno(errno, out);
    std::error_code ec;
    std::filesystem::create_directories(out, ec);
    if (ec) return Status::FromErrno(ec.value(), "cannot create output directory " + out);
    created = true;
  } else if (!S_ISDIR(st.st_mode)) {
    return Status(Code::kAlreadyExists, out +
                                            ": exists and is not a directory; choose a directory "
                                            "path for the dataset");
  } else {
    DS_ASSIGN_OR_RETURN(auto names, ListDir(out));
    bool has_manifest = false, has_parts = false;
    std::string foreign;
    for (const auto& n : names) {
      if (n == kManifestName)
        has_manifest = true;
      else if (IsDatasetFile(n))
        has_parts = true;
      else if (foreign.empty())
        foreign = n;
    }
    if (!foreign.empty()) {
      return Status(Code::kAlreadyExists,
                    fmt::format("{}: not empty (holds '{}', which dspack did not write); choose an "
                                "empty or new directory",
                                out, EscapeBytes(foreign)));
    }
    if ((has_manifest || has_parts) && !options.force) {
      return Status(Code::kAlreadyExists,
                    has_manifest
                        ? out + ": already holds a dspack dataset; pass --force to replace it"
                        : out +
                              ": holds an unfinished dataset (an interrupted convert?); pass "
                              "--force to discard it and start again");
    }
    // Remove the manifest first: the directory must never claim a dataset we are replacing.
    if (has_manifest) ::unlink((out + "/" + kManifestName).c_str());
    for (const auto& n : names) {
      if (n != kManifestName && ::unlink((out + "/" + n).c_str()) != 0) {
        return Status::FromErrno(errno, "cannot remove old dataset file " + out + "/" + n);
      }
    }
  }
  std::unique_ptr<DatasetWriter> w(new DatasetWriter(out, options, created));
  w->manifest_.created_by = std::string("dspack ") + DSPACK_VERSION;
  w->manifest_.options = options.creation_options;
  w->manifest_.align = options.align;
  w->manifest_.shard_size = options.shard_size;
  // Open the first shard now so that an unwritable OUT fails before any input is read.
  auto shard = ShardWriter::Create(out + "/" + ShardName(0) + ".tmp",
                                   ShardHeader{kFormatVersion, options.align, 0, 0});
  if (!shard.ok()) {
    w->Abandon();
    return shard.status().Prefixed("cannot write to output directory");
  }
  w->shard_ = std::move(shard).value();
  return w;
}

Status DatasetWriter::Fail(Status s) {
  if (status_.ok()) status_ = s;
  return s;
}

Status DatasetWriter::FinishShard() {
  uint64_t n = manifest_.shards.size();
  std::string tmp = out_ + "/" + ShardName(n) + ".tmp";
  std::string final_name = out_ + "/" + ShardName(n);
  ShardSummary sum;
  DS_RETURN_IF_ERROR(Fail(shard_->Finish(&sum)));
  shard_.reset();
  if (::rename(tmp.c_str(), final_name.c_str()) != 0) {
    int e = errno;
    ::unlink(tmp.c_str());
    return Fail(Status::FromErrno(e, "rename " + tmp));
  }
  created_.push_back(final_name);
  FileMeta meta;
  meta.name = ShardName(n);
  meta.size = sum.size;
  meta.samples = sum.records;
  meta.first_sample = index_.size() - sum.records;
  meta.xxh3 = sum.xxh3;
  manifest_.shards.push_back(meta);
  bytes_written_ += sum.size;
  return Status::Ok();
}

Status DatasetWriter::BeginSample(std::string_view key, std::span<const FieldInfo> fields) {
  DS_RETURN_IF_ERROR(status_);
  DS_RETURN_IF_ERROR(CheckRecordShape(key, fields));
  uint64_t len = RecordLength(key, fields);
  uint64_t projected =
      shard_->next_offset() + len + (shard_->records() + 1) * kIndexEntrySize + kFooterSize;
  if (shard_->records() > 0 && projected > options_.shard_size) {
    DS_RETURN_IF_ERROR(FinishShard());
    uint64_t n = manifest_.shards.size();
    auto next = ShardWriter::Create(out_ + "/" + ShardName(n) + ".tmp",
                                    ShardHeader{kFormatVersion, options_.align, n, index_.size()});
    if (!next.ok()) return Fail(next.status());
    shard_ = std::move(next).value();
  }
  pending_key_.assign(key);
  pending_payload_ = 0;
  for (const auto& f : fields) pending_payload_ += f.size;
  return Fail(shard_->BeginRecord(key, fields));
}

Status DatasetWriter::AppendData(std::string_view chunk) {
  DS_RETURN_IF_ERROR(status_);
  return Fail(shard_->AppendData(chunk));
}

Status DatasetWriter::EndSample() {
  DS_RETURN_IF_ERROR(status_);
  DS_RETURN_IF_ERROR(Fail(shard_->EndRecord()));
  const IndexEntry& e = shard_->index().back();
  DS_RETURN_IF_ERROR(Fail(index_.Add(static_cast<uint32_t>(manifest_.shards.size()), e.offset,
                                     e.length, pending_key_)));
  payload_bytes_ += pending_payload_;
  return Status::Ok();
}

void DatasetWriter::CancelSample() {
  if (shard_) shard_->CancelRecord();
}

Status DatasetWriter::Add(const Sample& sample) {
  std::vector<FieldInfo> infos;
  infos.reserve(sample.fields.size());
  for (const auto& f : sample.fields) infos.push_back({f.name, f.data.size()});
  DS_RETURN_IF_ERROR(BeginSample(sample.key, infos));
  for (const auto& f : sample.fields) DS_RETURN_IF_ERROR(AppendData(f.data));
  return EndSample();
}

void DatasetWriter::AddSkipped(std::string_view path, std::string_view error) {
  skipped_.push_back({{"path", std::string(path)}, {"error", std::string(error)}});
}

void DatasetWriter::SetClasses(std::vector<std::string> names, std::string label_field) {
  classes_ = std::move(names);
  manifest_.label_field = std::move(label_field);
}

Status DatasetWriter::Finish(DatasetSummary* summary) {
  DS_RETURN_IF_ERROR(status_);
  DS_RETURN_IF_ERROR(FinishShard());
  std::string idx_tmp = out_ + "/" + kIndexName + ".tmp";
  FileMeta& im = manifest_.index;
  im.name = kIndexName;
  Status s =
      index_.Write(idx_tmp, static_cast<uint32_t>(manifest_.shards.size()), &im.size, &im.xxh3);
  if (s.ok() && ::rename(idx_tmp.c_str(), (out_ + "/" + kIndexName).c_str()) != 0) {
    s = Status::FromErrno(errno, "rename " + idx_tmp);
  }
  if (!s.ok()) {
    ::unlink(idx_tmp.c_str());
    return Fail(s);
  }
  created_.push_back(out_ + "/" + kIndexName);
  if (!manifest_.label_field.empty()) {
    std::string text;
    for (const auto& c : classes_) text += c + "\n";
    created_.push_back(out_ + "/" + kClassesName);
    DS_RETURN_IF_ERROR(Fail(WriteFileAtomic(out_ + "/" + kClassesName, text)));
    manifest_.class_count = classes_.size();
    manifest_.classes_xxh3 = Xxh3_64(text);
  }
  manifest_.samples = index_.size();
  manifest_.payload_bytes = payload_bytes_;
  manifest_.skipped = skipped_;
  created_.push_back(out_ + "/" + kManifestName);
  DS_RETURN_IF_ERROR(Fail(WriteFileAtomic(out_ + "/" + kManifestName, manifest_.ToJson())));
  done_ = true;
  if (summary) {
    summary->samples = index_.size();
    summary->shards = manifest_.shards.size();
    summary->payload_bytes = payload_bytes_;
    summary->bytes_written = bytes_written_ + im.size;
  }
  return Status::Ok();
}

void DatasetWriter::Abandon() {
  if (done_) return;
  done_ = true;
  if (shard_) shard_->Abandon();
  shard_.reset();
  // Manifest first, so a crash mid-cleanup never leaves a manifest over missing shards.
  for (auto it = created_.rbegin(); it != created_.rend(); ++it) ::unlink(it->c_str());
  ::unlink((out_ + "/" + kIndexName + ".tmp").c_str());
  if (created_dir_) ::rmdir(out_.c_str());
}

// ---- Dataset -----------------------------------------------------------------------------------

Result<std::unique_ptr<Dataset>> Dataset::Open(const std::string& dir) {
  auto d = std::make_unique<Dataset>();
  d->dir_ = dir;
  DS_ASSIGN_OR_RETURN(d->manifest_, Manifest::Load(dir));
  DS_ASSIGN_OR_RETURN(d->index_, GlobalIndex::Open(dir + "/" + d->manifest_.index.name));
  if (d->index_.size() != d->manifest_.samples ||
      d->index_.shard_count() != d->manifest_.shards.size()) {
    return Status(Code::kCorruption,
                  fmt::format("{}/{}: {} samples in {} shards, but the manifest says {} in {}", dir,
                              kIndexName, d->index_.size(), d->index_.shard_count(),
                              d->manifest_.samples, d->manifest_.shards.size()));
  }
  d->fds_.resize(d->manifest_.shards.size());
  return d;
}

Result<int> Dataset::ShardFd(uint32_t shard) const {
  if (shard >= fds_.size()) {
    return Status(Code::kCorruption, fmt::format("{}/{}: entry names shard {} of {}", dir_,
                                                 kIndexName, shard, fds_.size()));
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (!fds_[shard].valid()) {
    const FileMeta& meta = manifest_.shards[shard];
    DS_ASSIGN_OR_RETURN(OwnedFd fd, OpenFile(dir_ + "/" + meta.name, O_RDONLY));
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
  DS_ASSIGN_OR_RETURN(std::string text, ReadWholeFile(dir_ + "/" + kClassesName));
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
