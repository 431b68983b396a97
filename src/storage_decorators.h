// Two backends that stand over any other (src/storage.h), as leveldb's FaultInjectionTestEnv and
// RocksDB's FaultInjectionTestFS stand over theirs.
//
// CountingStorage counts the operations a run makes, by kind, and the bytes moved: the bill of a
// layout ("dir: 3 ops per sample; native: 0.002"); over NFS it is the RPC bill. A read is one
// ReadSome call on the backend below (ReadAt's continuation of a short read counts again, as a
// second RPC would). Counters are atomic: share one CountingStorage between threads.
//
// FaultStorage injects the failures a test needs:
//   - FailOp(op, nth, err): the nth operation of that kind from now fails with err (EIO by
//     default; ENOSPC on a write is "disk full"). The error names the path, and for a read the
//     offset, and says it was injected.
//   - ShortReads(max): every read returns at most max bytes (ReadAt must continue them).
//   - Crash(): a power cut. Every writable file loses what it did not Sync (writes are held in
//     memory until Sync, Commit, or kFaultWriteBack bytes, when they go down as the kernel's
//     writeback would), and every later operation fails with EIO "after a simulated crash".
//     A file not yet committed never appears under its final name. A RandomWriteFile's held
//     writes go down before it is read, sized, truncated or closed; a file written in place and
//     not synced since (closed or not, renamed or not) is emptied by the crash: the page cache's
//     worst case, as leveldb's FaultInjectionTestEnv drops unsynced data.
// Every write (Append, WriteAt), truncation and Allocate is one kWrite; OpenWrite is a kCreate
// and SyncDir a kSync.
// Files from FaultStorage report fd() -1, so every byte read passes through the faults.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "src/storage.h"

namespace ds {

enum class StorageOp : uint8_t {
  kOpen,
  kStat,
  kList,
  kRead,
  kCreate,
  kWrite,
  kSync,
  kCommit,
  kMkdir,
  kRemove,
  kRename,
  kLock,
};
inline constexpr size_t kStorageOpCount = 12;
std::string_view StorageOpName(StorageOp op);

struct StorageOps {
  std::array<uint64_t, kStorageOpCount> count{};
  uint64_t read_bytes = 0;
  uint64_t write_bytes = 0;

  uint64_t operator[](StorageOp op) const { return count[static_cast<size_t>(op)]; }
  uint64_t total() const;
};

// "3.00 ops per sample (open 1.00, stat 1.00, read 1.00)": every kind with a count, per sample
// (per operation when samples is 0).
std::string FormatStorageBill(const StorageOps& ops, uint64_t samples);
// {"open": n, ..., "read_bytes", "write_bytes", "total", "per_sample"} (every kind, zeros too;
// per_sample null when samples is 0).
nlohmann::json StorageOpsJson(const StorageOps& ops, uint64_t samples);

// Forwards every operation to the backend below, after Before(op, what) (an error fails the
// operation) and wraps the files it opens; the two decorators below are its hooks.
class StorageDecorator : public Storage {
 public:
  explicit StorageDecorator(std::shared_ptr<Storage> base) : base_(std::move(base)) {}

  std::string_view scheme() const override { return base_->scheme(); }
  StorageCaps caps() const override { return base_->caps(); }
  std::string Uri(const std::string& path) const override { return base_->Uri(path); }
  Result<std::unique_ptr<RandomAccessFile>> OpenRead(const std::string& path) override;
  Result<std::unique_ptr<RandomAccessFile>> OpenListed(const std::string& path,
                                                       const FileInfo& listed) override;  // an open
  Result<std::unique_ptr<WritableFile>> Create(const std::string& path) override;
  Result<std::unique_ptr<RandomWriteFile>> OpenWrite(const std::string& path,
                                                     WriteMode mode) override;
  Status SyncDir(const std::string& dir) override;
  Result<FileInfo> Stat(const std::string& path, bool follow = false) override;
  Result<std::vector<DirEntry>> List(const std::string& dir) override;
  Status MakeDirs(const std::string& dir) override;
  Status Remove(const std::string& path) override;
  Status Rename(const std::string& from, const std::string& to) override;
  Status Exchange(const std::string& a, const std::string& b) override;  // a kRename
  Result<std::unique_ptr<RandomWriteFile>> OpenDirect(const std::string& path) override;
  Status SyncAll(const std::string& dir) override;  // a kSync
  Result<std::unique_ptr<StorageLock>> LockWriter(const std::string& dir,
                                                  std::string* warning) override;
  // Forwarded as they are: cache control, not dataset IO, so neither counted nor faulted.
  Status EvictCache(const std::string& path) override { return base_->EvictCache(path); }
  Result<PageResidency> CachedPages(const std::string& path) override {
    return base_->CachedPages(path);
  }

 protected:
  Storage& base() const { return *base_; }
  // `what` names the operand as an error message would start ("PATH: stat").
  virtual Status Before(StorageOp op, const std::string& what) = 0;
  virtual std::unique_ptr<RandomAccessFile> WrapRead(std::unique_ptr<RandomAccessFile> f) = 0;
  virtual std::unique_ptr<WritableFile> WrapWrite(std::unique_ptr<WritableFile> f) = 0;
  // Default: the file as it is.
  virtual std::unique_ptr<RandomWriteFile> WrapRandomWrite(std::unique_ptr<RandomWriteFile> f) {
    return f;
  }

 private:
  std::shared_ptr<Storage> base_;
};

class CountingStorage final : public StorageDecorator {
 public:
  using StorageDecorator::StorageDecorator;

  StorageOps ops() const;
  void Reset();
  // n operations of kind op that moved `bytes` in all.
  void Count(StorageOp op, uint64_t bytes = 0, uint64_t n = 1);
  // The backend's own engine (nfs://, s3://), so that a batch read over a counted storage keeps
  // its requests in flight as it would without the count. Its reads pass uncounted, as an
  // engine's reads on a local fd do: the caller counts them (Count), from what the batch reports.
  Result<std::unique_ptr<IoEngine>> NewEngine(const EngineOptions& options) override;

 protected:
  Status Before(StorageOp op, const std::string& what) override;
  std::unique_ptr<RandomAccessFile> WrapRead(std::unique_ptr<RandomAccessFile> f) override;
  std::unique_ptr<WritableFile> WrapWrite(std::unique_ptr<WritableFile> f) override;
  std::unique_ptr<RandomWriteFile> WrapRandomWrite(std::unique_ptr<RandomWriteFile> f) override;

 private:
  std::array<std::atomic<uint64_t>, kStorageOpCount> count_{};
  std::atomic<uint64_t> read_bytes_{0};
  std::atomic<uint64_t> write_bytes_{0};
};

inline constexpr size_t kFaultWriteBack = 8 << 20;

class FaultStorage final : public StorageDecorator {
 public:
  explicit FaultStorage(std::shared_ptr<Storage> base) : StorageDecorator(base), below_(base) {}

  // One armed fault per kind; arming again replaces it. nth >= 1.
  void FailOp(StorageOp op, uint64_t nth, int err = 0);
  void ShortReads(size_t max_bytes) { short_reads_ = max_bytes; }
  void Crash();
  // Crash() at the nth operation of that kind from now, which fails as every later one does: a
  // process killed there (nothing after it runs, its cleanup included).
  void CrashAt(StorageOp op, uint64_t nth);
  bool crashed() const { return crashed_; }
  // Operations of this kind seen so far (failed ones included).
  uint64_t count(StorageOp op) const { return seen_[static_cast<size_t>(op)]; }

  // OK, or the injected failure for this operation on `what`.
  Status Check(StorageOp op, const std::string& what);
  size_t short_reads() const { return short_reads_; }
  // Its files report fd() -1: no engine reads around the faults. Writes are held until each
  // file's own Sync, so a syncfs below would not reach them (no sync_all), and a second handle
  // writing around them is refused (OpenDirect).
  StorageCaps caps() const override {
    StorageCaps c = StorageDecorator::caps();
    c.local_fd = false;
    c.sync_all = false;
    return c;
  }
  Result<std::unique_ptr<RandomWriteFile>> OpenDirect(const std::string& path) override;
  Status SyncAll(const std::string& dir) override;
  Status Rename(const std::string& from, const std::string& to) override;
  Status Remove(const std::string& path) override;
  // A file written in place has data below that a crash loses (true) or not any more (false).
  void MarkUnsynced(const std::string& path, bool unsynced);

 protected:
  Status Before(StorageOp op, const std::string& what) override { return Check(op, what); }
  std::unique_ptr<RandomAccessFile> WrapRead(std::unique_ptr<RandomAccessFile> f) override;
  std::unique_ptr<WritableFile> WrapWrite(std::unique_ptr<WritableFile> f) override;
  std::unique_ptr<RandomWriteFile> WrapRandomWrite(std::unique_ptr<RandomWriteFile> f) override;

 private:
  struct Armed {
    uint64_t at = 0;  // fail when seen_ reaches this; 0 = nothing armed
    int err = 0;
    bool crash = false;
  };
  std::mutex mu_;
  std::array<std::atomic<uint64_t>, kStorageOpCount> seen_{};
  std::array<Armed, kStorageOpCount> armed_{};
  std::atomic<size_t> short_reads_{0};
  std::atomic<bool> crashed_{false};
  std::shared_ptr<Storage> below_;  // the backend below, to empty unsynced files at a crash
  std::mutex unsynced_mu_;          // guards unsynced_
  std::set<std::string> unsynced_;  // files written in place and not synced since
};

}  // namespace ds
