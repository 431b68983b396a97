// CountingStorage and FaultStorage (src/storage_decorators.h).
#include "src/storage_decorators.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <vector>

#include "src/io_engine.h"

namespace ds {

std::string_view StorageOpName(StorageOp op) {
  static constexpr std::array<std::string_view, kStorageOpCount> kNames = {
      "open", "stat",   "list",  "read",   "create", "write",
      "sync", "commit", "mkdir", "remove", "rename", "lock"};
  return kNames[static_cast<size_t>(op)];
}

uint64_t StorageOps::total() const {
  uint64_t t = 0;
  for (uint64_t c : count) t += c;
  return t;
}

std::string FormatStorageBill(const StorageOps& ops, uint64_t samples) {
  double per = samples == 0 ? 1.0 : static_cast<double>(samples);
  std::string parts;
  for (size_t i = 0; i < kStorageOpCount; ++i) {
    if (ops.count[i] == 0) continue;
    if (!parts.empty()) parts += ", ";
    parts += fmt::format("{} {:.3g}", StorageOpName(static_cast<StorageOp>(i)),
                         static_cast<double>(ops.count[i]) / per);
  }
  return fmt::format("{:.3g} ops per {} ({})", static_cast<double>(ops.total()) / per,
                     samples == 0 ? "run" : "sample", parts.empty() ? "none" : parts);
}

nlohmann::json StorageOpsJson(const StorageOps& ops, uint64_t samples) {
  nlohmann::json j = nlohmann::json::object();
  for (size_t i = 0; i < kStorageOpCount; ++i) {
    j[std::string(StorageOpName(static_cast<StorageOp>(i)))] = ops.count[i];
  }
  j["read_bytes"] = ops.read_bytes;
  j["write_bytes"] = ops.write_bytes;
  j["total"] = ops.total();
  j["per_sample"] = samples == 0 ? nlohmann::json(nullptr)
                                 : nlohmann::json(static_cast<double>(ops.total()) / samples);
  return j;
}

// ---- StorageDecorator ----

Result<std::unique_ptr<RandomAccessFile>> StorageDecorator::OpenRead(const std::string& path) {
  DS_RETURN_IF_ERROR(Before(StorageOp::kOpen, path + ": open"));
  DS_ASSIGN_OR_RETURN(auto file, base_->OpenRead(path));
  return WrapRead(std::move(file));
}

Result<std::unique_ptr<RandomAccessFile>> StorageDecorator::OpenListed(const std::string& path,
                                                                       const FileInfo& listed) {
  DS_RETURN_IF_ERROR(Before(StorageOp::kOpen, path + ": open"));
  DS_ASSIGN_OR_RETURN(auto file, base_->OpenListed(path, listed));
  return WrapRead(std::move(file));
}

Result<std::unique_ptr<WritableFile>> StorageDecorator::Create(const std::string& path) {
  DS_RETURN_IF_ERROR(Before(StorageOp::kCreate, path + ": create"));
  DS_ASSIGN_OR_RETURN(auto file, base_->Create(path));
  return WrapWrite(std::move(file));
}

Result<std::unique_ptr<RandomWriteFile>> StorageDecorator::OpenWrite(const std::string& path,
                                                                     WriteMode mode) {
  DS_RETURN_IF_ERROR(Before(StorageOp::kCreate, path + ": open for writing"));
  DS_ASSIGN_OR_RETURN(auto file, base_->OpenWrite(path, mode));
  return WrapRandomWrite(std::move(file));
}

Status StorageDecorator::SyncDir(const std::string& dir) {
  DS_RETURN_IF_ERROR(Before(StorageOp::kSync, dir + ": fsync"));
  return base_->SyncDir(dir);
}

Result<FileInfo> StorageDecorator::Stat(const std::string& path, bool follow) {
  DS_RETURN_IF_ERROR(Before(StorageOp::kStat, path + ": stat"));
  return base_->Stat(path, follow);
}

Result<std::vector<DirEntry>> StorageDecorator::List(const std::string& dir) {
  DS_RETURN_IF_ERROR(Before(StorageOp::kList, dir + ": list"));
  return base_->List(dir);
}

Status StorageDecorator::MakeDirs(const std::string& dir) {
  DS_RETURN_IF_ERROR(Before(StorageOp::kMkdir, dir + ": mkdir"));
  return base_->MakeDirs(dir);
}

Status StorageDecorator::Remove(const std::string& path) {
  DS_RETURN_IF_ERROR(Before(StorageOp::kRemove, path + ": remove"));
  return base_->Remove(path);
}

Status StorageDecorator::Rename(const std::string& from, const std::string& to) {
  DS_RETURN_IF_ERROR(Before(StorageOp::kRename, fmt::format("{}: rename to {}", from, to)));
  return base_->Rename(from, to);
}

Status StorageDecorator::Exchange(const std::string& a, const std::string& b) {
  DS_RETURN_IF_ERROR(Before(StorageOp::kRename, fmt::format("{}: exchange with {}", a, b)));
  return base_->Exchange(a, b);
}

Result<std::unique_ptr<RandomWriteFile>> StorageDecorator::OpenDirect(const std::string& path) {
  DS_RETURN_IF_ERROR(Before(StorageOp::kCreate, path + ": open for direct writing"));
  DS_ASSIGN_OR_RETURN(auto file, base_->OpenDirect(path));
  return WrapRandomWrite(std::move(file));
}

Status StorageDecorator::SyncAll(const std::string& dir) {
  DS_RETURN_IF_ERROR(Before(StorageOp::kSync, dir + ": syncfs"));
  return base_->SyncAll(dir);
}

Result<std::unique_ptr<StorageLock>> StorageDecorator::LockWriter(const std::string& dir,
                                                                  std::string* warning) {
  DS_RETURN_IF_ERROR(Before(StorageOp::kLock, dir + ": lock"));
  return base_->LockWriter(dir, warning);
}

// ---- CountingStorage ----

Result<std::unique_ptr<IoEngine>> CountingStorage::NewEngine(const EngineOptions& options) {
  return base().NewEngine(options);
}

namespace {

class CountingFile final : public RandomAccessFile {
 public:
  CountingFile(std::unique_ptr<RandomAccessFile> base, CountingStorage* owner)
      : base_(std::move(base)), owner_(owner) {}
  const std::string& name() const override { return base_->name(); }
  uint64_t size() const override { return base_->size(); }
  // An engine reading through the fd counts its reads with CountingStorage::Count.
  int fd() const override { return base_->fd(); }
  void Advise(Advice advice, uint64_t offset, uint64_t len) const override {
    base_->Advise(advice, offset, len);
  }
  Result<size_t> ReadSome(uint64_t offset, void* buf, size_t n) const override {
    auto got = base_->ReadSome(offset, buf, n);
    owner_->Count(StorageOp::kRead, got.ok() ? *got : 0);
    return got;
  }
  // One gathered read is one operation below (preadv, one READ RPC of the whole range).
  Status ReadAtV(iovec* iov, size_t count, uint64_t offset, std::string_view what) const override {
    uint64_t bytes = 0;
    for (size_t i = 0; i < count; i++) bytes += iov[i].iov_len;
    Status st = base_->ReadAtV(iov, count, offset, what);
    owner_->Count(StorageOp::kRead, st.ok() ? bytes : 0);
    return st;
  }

 private:
  std::unique_ptr<RandomAccessFile> base_;
  CountingStorage* owner_;
};

class CountingWritable final : public WritableFile {
 public:
  CountingWritable(std::unique_ptr<WritableFile> base, CountingStorage* owner)
      : base_(std::move(base)), owner_(owner) {}
  const std::string& name() const override { return base_->name(); }
  uint64_t size() const override { return base_->size(); }
  Status Append(std::string_view data) override {
    owner_->Count(StorageOp::kWrite, data.size());
    return base_->Append(data);
  }
  Status Sync() override {
    owner_->Count(StorageOp::kSync);
    return base_->Sync();
  }
  Status Commit() override {
    owner_->Count(StorageOp::kCommit);
    return base_->Commit();
  }

 private:
  std::unique_ptr<WritableFile> base_;
  CountingStorage* owner_;
};

class CountingRandomWrite final : public RandomWriteFile {
 public:
  CountingRandomWrite(std::unique_ptr<RandomWriteFile> base, CountingStorage* owner)
      : base_(std::move(base)), owner_(owner) {}
  const std::string& name() const override { return base_->name(); }
  int fd() const override { return base_->fd(); }
  Status WriteAt(uint64_t offset, const void* data, size_t n) override {
    owner_->Count(StorageOp::kWrite, n);
    return base_->WriteAt(offset, data, n);
  }
  Result<size_t> ReadSome(uint64_t offset, void* buf, size_t n) override {
    auto got = base_->ReadSome(offset, buf, n);
    owner_->Count(StorageOp::kRead, got.ok() ? *got : 0);
    return got;
  }
  Result<uint64_t> Size() override {
    owner_->Count(StorageOp::kStat);
    return base_->Size();
  }
  Status Truncate(uint64_t size) override {
    owner_->Count(StorageOp::kWrite);
    return base_->Truncate(size);
  }
  Status Sync() override {
    owner_->Count(StorageOp::kSync);
    return base_->Sync();
  }
  Status Close() override { return base_->Close(); }
  Status Allocate(uint64_t size) override {
    owner_->Count(StorageOp::kWrite);
    return base_->Allocate(size);
  }
  Status SetAttributes(mode_t mode, int64_t mtime_ns) override {
    return base_->SetAttributes(mode, mtime_ns);
  }

 private:
  std::unique_ptr<RandomWriteFile> base_;
  CountingStorage* owner_;
};

}  // namespace

void CountingStorage::Count(StorageOp op, uint64_t bytes, uint64_t n) {
  count_[static_cast<size_t>(op)].fetch_add(n, std::memory_order_relaxed);
  if (op == StorageOp::kRead) read_bytes_.fetch_add(bytes, std::memory_order_relaxed);
  if (op == StorageOp::kWrite) write_bytes_.fetch_add(bytes, std::memory_order_relaxed);
}

StorageOps CountingStorage::ops() const {
  StorageOps out;
  for (size_t i = 0; i < kStorageOpCount; ++i) out.count[i] = count_[i].load();
  out.read_bytes = read_bytes_.load();
  out.write_bytes = write_bytes_.load();
  return out;
}

void CountingStorage::Reset() {
  for (auto& c : count_) c = 0;
  read_bytes_ = 0;
  write_bytes_ = 0;
}

Status CountingStorage::Before(StorageOp op, const std::string&) {
  Count(op);
  return Status::Ok();
}

std::unique_ptr<RandomAccessFile> CountingStorage::WrapRead(std::unique_ptr<RandomAccessFile> f) {
  return std::make_unique<CountingFile>(std::move(f), this);
}

std::unique_ptr<WritableFile> CountingStorage::WrapWrite(std::unique_ptr<WritableFile> f) {
  return std::make_unique<CountingWritable>(std::move(f), this);
}

std::unique_ptr<RandomWriteFile> CountingStorage::WrapRandomWrite(
    std::unique_ptr<RandomWriteFile> f) {
  return std::make_unique<CountingRandomWrite>(std::move(f), this);
}

// ---- FaultStorage ----

namespace {

class FaultFile final : public RandomAccessFile {
 public:
  FaultFile(std::unique_ptr<RandomAccessFile> base, FaultStorage* owner)
      : base_(std::move(base)), owner_(owner) {}
  const std::string& name() const override { return base_->name(); }
  uint64_t size() const override { return base_->size(); }
  void Advise(Advice advice, uint64_t offset, uint64_t len) const override {
    base_->Advise(advice, offset, len);
  }
  Result<size_t> ReadSome(uint64_t offset, void* buf, size_t n) const override {
    DS_RETURN_IF_ERROR(
        owner_->Check(StorageOp::kRead, fmt::format("{}: read at offset {}", name(), offset)));
    size_t cap = owner_->short_reads();
    return base_->ReadSome(offset, buf, cap == 0 ? n : std::min(n, cap));
  }

 private:
  std::unique_ptr<RandomAccessFile> base_;
  FaultStorage* owner_;
};

// Holds appends in memory until Sync, Commit or kFaultWriteBack bytes, so that Crash() loses
// exactly what a power cut may lose.
class FaultWritable final : public WritableFile {
 public:
  FaultWritable(std::unique_ptr<WritableFile> base, FaultStorage* owner)
      : base_(std::move(base)), owner_(owner) {}
  const std::string& name() const override { return base_->name(); }
  uint64_t size() const override { return base_->size() + pending_.size(); }
  Status Append(std::string_view data) override {
    DS_RETURN_IF_ERROR(
        owner_->Check(StorageOp::kWrite, fmt::format("{}: write at offset {}", name(), size())));
    pending_.append(data);
    if (pending_.size() >= kFaultWriteBack) return WriteBack();
    return Status::Ok();
  }
  Status Sync() override {
    DS_RETURN_IF_ERROR(owner_->Check(StorageOp::kSync, name() + ": fsync"));
    DS_RETURN_IF_ERROR(WriteBack());
    return base_->Sync();
  }
  Status Commit() override {
    DS_RETURN_IF_ERROR(owner_->Check(StorageOp::kCommit, name() + ": commit"));
    DS_RETURN_IF_ERROR(WriteBack());
    return base_->Commit();
  }

 private:
  Status WriteBack() {
    if (owner_->crashed()) return owner_->Check(StorageOp::kWrite, name());
    Status st = base_->Append(pending_);
    pending_.clear();
    return st;
  }

  std::unique_ptr<WritableFile> base_;
  FaultStorage* owner_;
  std::string pending_;
};

// The same for a file written in place: writes are held (offset and bytes, in order) until Sync,
// or kFaultWriteBack bytes, or a read, size or truncation that must see them.
class FaultRandomWrite final : public RandomWriteFile {
 public:
  FaultRandomWrite(std::unique_ptr<RandomWriteFile> base, FaultStorage* owner)
      : base_(std::move(base)), owner_(owner) {}
  const std::string& name() const override { return base_->name(); }
  Status WriteAt(uint64_t offset, const void* data, size_t n) override {
    DS_RETURN_IF_ERROR(
        owner_->Check(StorageOp::kWrite, fmt::format("{}: write at offset {}", name(), offset)));
    owner_->MarkUnsynced(name(), true);
    std::lock_guard lock(mu_);
    held_.push_back(Held{offset, std::string(static_cast<const char*>(data), n)});
    held_bytes_ += n;
    if (held_bytes_ >= kFaultWriteBack) return WriteBackLocked();
    return Status::Ok();
  }
  Result<size_t> ReadSome(uint64_t offset, void* buf, size_t n) override {
    DS_RETURN_IF_ERROR(
        owner_->Check(StorageOp::kRead, fmt::format("{}: read at offset {}", name(), offset)));
    DS_RETURN_IF_ERROR(WriteBack());
    return base_->ReadSome(offset, buf, n);
  }
  Result<uint64_t> Size() override {
    DS_RETURN_IF_ERROR(owner_->Check(StorageOp::kStat, name() + ": stat"));
    DS_RETURN_IF_ERROR(WriteBack());
    return base_->Size();
  }
  Status Truncate(uint64_t size) override {
    DS_RETURN_IF_ERROR(
        owner_->Check(StorageOp::kWrite, fmt::format("{}: truncate to {}", name(), size)));
    owner_->MarkUnsynced(name(), true);
    DS_RETURN_IF_ERROR(WriteBack());
    return base_->Truncate(size);
  }
  Status Sync() override {
    DS_RETURN_IF_ERROR(owner_->Check(StorageOp::kSync, name() + ": fsync"));
    DS_RETURN_IF_ERROR(WriteBack());
    DS_RETURN_IF_ERROR(base_->Sync());
    owner_->MarkUnsynced(name(), false);
    return Status::Ok();
  }
  Status Allocate(uint64_t size) override {
    DS_RETURN_IF_ERROR(
        owner_->Check(StorageOp::kWrite, fmt::format("{}: fallocate {} bytes", name(), size)));
    return base_->Allocate(size);
  }
  // After the held writes: a write landing later would move the mtime.
  Status SetAttributes(mode_t mode, int64_t mtime_ns) override {
    DS_RETURN_IF_ERROR(WriteBack());
    return base_->SetAttributes(mode, mtime_ns);
  }
  // Closing is not syncing: what is still held is what a crash would lose.
  Status Close() override {
    Status st = WriteBack();
    Status closed = base_->Close();
    return st.ok() ? closed : st;
  }

 private:
  struct Held {
    uint64_t offset;
    std::string data;
  };
  Status WriteBack() {
    std::lock_guard lock(mu_);
    return WriteBackLocked();
  }
  Status WriteBackLocked() {
    if (held_.empty()) return Status::Ok();
    if (owner_->crashed()) return owner_->Check(StorageOp::kWrite, name());
    Status st;
    for (const Held& h : held_) {
      if (st.ok()) st = base_->WriteAt(h.offset, h.data.data(), h.data.size());
    }
    held_.clear();
    held_bytes_ = 0;
    return st;
  }

  std::unique_ptr<RandomWriteFile> base_;
  FaultStorage* owner_;
  std::mutex mu_;  // WriteAt may come from FileWriter's background thread
  std::vector<Held> held_;
  size_t held_bytes_ = 0;
};

}  // namespace

void FaultStorage::MarkUnsynced(const std::string& path, bool unsynced) {
  std::lock_guard lock(unsynced_mu_);
  if (unsynced) {
    unsynced_.insert(path);
  } else {
    unsynced_.erase(path);
  }
}

void FaultStorage::Crash() {
  if (crashed_.exchange(true)) return;
  std::lock_guard lock(unsynced_mu_);
  for (const std::string& path : unsynced_) {
    auto file = below_->OpenWrite(path, WriteMode::kKeep);
    if (file.ok()) (void)(*file)->Truncate(0);
  }
  unsynced_.clear();
}

Status FaultStorage::Rename(const std::string& from, const std::string& to) {
  DS_RETURN_IF_ERROR(StorageDecorator::Rename(from, to));
  std::lock_guard lock(unsynced_mu_);
  unsynced_.erase(to);
  if (unsynced_.erase(from) > 0) unsynced_.insert(to);
  return Status::Ok();
}

Status FaultStorage::Remove(const std::string& path) {
  DS_RETURN_IF_ERROR(StorageDecorator::Remove(path));
  MarkUnsynced(path, false);
  return Status::Ok();
}

void FaultStorage::FailOp(StorageOp op, uint64_t nth, int err) {
  std::lock_guard lock(mu_);
  size_t i = static_cast<size_t>(op);
  armed_[i] = Armed{seen_[i] + std::max<uint64_t>(nth, 1), err != 0 ? err : EIO};
}

void FaultStorage::CrashAt(StorageOp op, uint64_t nth) {
  std::lock_guard lock(mu_);
  size_t i = static_cast<size_t>(op);
  armed_[i] = Armed{seen_[i] + std::max<uint64_t>(nth, 1), EIO, /*crash=*/true};
}

Status FaultStorage::Check(StorageOp op, const std::string& what) {
  if (crashed_) {
    return Status(Code::kIOError, what + ": Input/output error (after a simulated crash)", EIO);
  }
  size_t i = static_cast<size_t>(op);
  uint64_t n = ++seen_[i];
  std::lock_guard lock(mu_);
  if (armed_[i].at == 0 || n != armed_[i].at) return Status::Ok();
  int err = armed_[i].err;
  bool crash = armed_[i].crash;
  armed_[i] = Armed{};
  if (crash) {
    Crash();
    return Status(Code::kIOError,
                  fmt::format("{}: simulated crash (at {} #{})", what, StorageOpName(op), n), EIO);
  }
  Code code = err == ENOSPC ? Code::kNoSpace : Code::kIOError;
  return Status(
      code, fmt::format("{}: {} (injected {} #{})", what, std::strerror(err), StorageOpName(op), n),
      err);
}

Result<std::unique_ptr<RandomWriteFile>> FaultStorage::OpenDirect(const std::string& path) {
  return Status(Code::kUnsupported,
                path + ": fault storage holds writes in memory; no handle writes around them");
}

Status FaultStorage::SyncAll(const std::string& dir) {
  return Status(Code::kUnsupported, dir + ": fault storage syncs each file (no syncfs)");
}

std::unique_ptr<RandomAccessFile> FaultStorage::WrapRead(std::unique_ptr<RandomAccessFile> f) {
  return std::make_unique<FaultFile>(std::move(f), this);
}

std::unique_ptr<WritableFile> FaultStorage::WrapWrite(std::unique_ptr<WritableFile> f) {
  return std::make_unique<FaultWritable>(std::move(f), this);
}

std::unique_ptr<RandomWriteFile> FaultStorage::WrapRandomWrite(std::unique_ptr<RandomWriteFile> f) {
  return std::make_unique<FaultRandomWrite>(std::move(f), this);
}

}  // namespace ds
