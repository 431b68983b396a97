// Storage: "where the bytes live", one interface under every reader, writer and copier
// (ARCHITECTURE.md, "The storage interface"). Modelled on leveldb's Env, RocksDB's FileSystem
// and Arrow's FileSystem: a backend per URI scheme, chosen by OpenStorage.
//
// Schemes: a plain path or file:///abs/path is the local backend (LocalStorage). Other schemes
// (nfs://, s3://) are registered by their backends with RegisterStorage; an unregistered scheme
// is kBadInput naming the URI and the schemes this build knows (exit 1).
//
// Contracts, for every backend:
//   - Paths are the backend's own (OpenStorage returns the path inside the backend). Errors name
//     the path, and for reads the offset, in the message.
//   - RandomAccessFile::ReadAt reads exactly n bytes or fails: EOF first is kCorruption
//     "truncated at offset X"; a short read from the backend is continued, never returned. It is
//     safe from many threads at once on one file.
//   - WritableFile: bytes appended are invisible under the final name until Commit(), which
//     syncs and then publishes atomically (local: fsync + rename + fsync(dir)). A file dropped
//     without Commit() removes its temp: nothing partial stays under a final name.
//   - List gives every entry of one directory with its type, size and mtime in one call (NFS's
//     READDIRPLUS, S3's ListObjectsV2); "." and ".." are not listed; order is unspecified; an
//     entry removed while listing is left out. Symlinks are described, not followed.
//   - Capabilities are asked, not found out by failing: caps() says whether a file can be
//     memory-mapped, whether rename is atomic, whether a page cache can be controlled, how many
//     reads may be in flight, whether locks exclude writers.
//   - LockWriter: one writer per directory while the lock lives (local: flock, dir_lock.h).
//   - EvictCache / CachedPages: the local page cache (src/page_cache.h); a backend without one
//     refuses them (kUnsupported), so a "cold" run over it is cold by construction.
// Thread-safety: a Storage is safe to share between threads; a WritableFile is not.
#pragma once

#include <sys/types.h>
#include <sys/uio.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "src/fd.h"
#include "src/page_cache.h"
#include "src/status.h"

namespace ds {

class IoEngine;        // src/io_engine.h (internal: not installed)
struct EngineOptions;  // src/io_engine.h

enum class FileType : uint8_t { kRegular, kDirectory, kSymlink, kFifo, kSocket, kDevice, kOther };

// "a fifo", "a socket", "a device"; "not a regular file" for any other type: what an error
// says about an entry that cannot be read as a file.
const char* FileTypeName(FileType type);

struct FileInfo {
  FileType type = FileType::kOther;
  uint64_t size = 0;
  int64_t mtime_ns = 0;
  mode_t mode = 0;  // permission bits (07777)
  // Which file this is, where the backend can tell (local: st_dev, st_ino; 0 elsewhere): a
  // reader checks that a name still holds the file it opened.
  uint64_t device = 0;
  uint64_t inode = 0;
  // The content's version, where the backend keeps one (s3://: the ETag); "" elsewhere. A file
  // opened with OpenListed reads this version or fails.
  std::string version;
};

struct DirEntry {
  std::string name;
  FileInfo info;
};

struct StorageCaps {
  bool mmap = false;            // files can be memory-mapped (liblmdb, the native global index)
  bool atomic_rename = false;   // Rename and Commit replace the target atomically
  bool page_cache = false;      // a local page cache that can be dropped and queried
  bool exclusive_lock = false;  // LockWriter excludes writers on other clients too
  unsigned max_inflight = 1;    // reads worth keeping in flight at once
  bool local_fd = false;        // RandomAccessFile::fd() is a local fd an engine may read
  bool sync_all = false;        // SyncAll makes every write under a directory durable at once
  // A file's reads see the version OpenRead found, or fail: a copy cannot mix two versions, so
  // a copier need not stat the source again after it (s3://: every GET carries If-Match with
  // the ETag seen at open, and a changed object answers 412).
  bool pinned_reads = false;
};

class RandomAccessFile {
 public:
  virtual ~RandomAccessFile() = default;
  virtual const std::string& name() const = 0;
  virtual uint64_t size() const = 0;
  // Up to n bytes at offset; fewer only at EOF (0 at or past it).
  virtual Result<size_t> ReadSome(uint64_t offset, void* buf, size_t n) const = 0;
  // Exactly n bytes at offset (see the contract above). `what` starts the truncation message
  // (default: name()); a read error names the file and the offset.
  Status ReadAt(uint64_t offset, void* buf, size_t n, std::string_view what = {}) const;
  // The same into count buffers, filled in order from offset (preadv). The iovecs are consumed.
  // Default: ReadAt per buffer.
  virtual Status ReadAtV(iovec* iov, size_t count, uint64_t offset,
                         std::string_view what = {}) const;
  // The local fd for an engine that owns local files (io_uring, libaio, mmap); -1 if remote.
  virtual int fd() const { return -1; }

  // Access advice to the backend's page cache (local: posix_fadvise); nothing where there is
  // none. kSequential before streaming the file; kDontNeed drops [offset, offset+len) once read
  // (len 0: to the end), as dssync does so that staging does not evict the job's working set.
  enum class Advice : uint8_t { kSequential, kDontNeed };
  virtual void Advise(Advice advice, uint64_t offset = 0, uint64_t len = 0) const;
};

class WritableFile {
 public:
  virtual ~WritableFile() = default;
  virtual const std::string& name() const = 0;  // the final name
  virtual uint64_t size() const = 0;
  virtual Status Append(std::string_view data) = 0;
  // Makes what was appended durable (still under the temp name).
  virtual Status Sync() = 0;
  // Sync, then publish under the final name, replacing what was there. Once only.
  virtual Status Commit() = 0;
};

// A file written in place, at offsets its writer chooses (RocksDB's FSRandomRWFile): a shard under
// its .tmp name that its writer renames when whole, a journal appended to, dssync's resumable
// destination. Unlike WritableFile, what is written is under the name at once: the writer's own
// commit point (a rename, a manifest) publishes it. Writes, reads and truncation are positional;
// WriteAt of disjoint ranges may run on two threads at once (FileWriter's background write),
// everything else is one thread's. Dropped without Close(), the file is closed and kept.
class RandomWriteFile {
 public:
  virtual ~RandomWriteFile() = default;
  virtual const std::string& name() const = 0;
  // Exactly n bytes at offset, or an error naming the file and the offset ("No space left on
  // device" is kNoSpace).
  virtual Status WriteAt(uint64_t offset, const void* data, size_t n) = 0;
  // Up to n bytes at offset; fewer only at EOF (to read back the block a truncation falls in).
  virtual Result<size_t> ReadSome(uint64_t offset, void* buf, size_t n) = 0;
  virtual Result<uint64_t> Size() = 0;
  virtual Status Truncate(uint64_t size) = 0;
  // Makes what was written durable.
  virtual Status Sync() = 0;
  // Closes, reporting what closing finds. The file is unusable afterwards.
  virtual Status Close() = 0;
  // Reserves room for size bytes where the backend can (local: posix_fallocate), so that a copy
  // runs out of room when it starts, not midway. OK where the backend or file system cannot.
  virtual Status Allocate(uint64_t size);
  // Sets the permission bits and the mtime (dssync keeps the source's). kUnsupported where the
  // backend keeps neither.
  virtual Status SetAttributes(mode_t mode, int64_t mtime_ns);
  // The local fd, for O_DIRECT, writeback hints and the engines; -1 if remote.
  virtual int fd() const { return -1; }
};

enum class WriteMode : uint8_t {
  kCreateNew,  // a new file; an existing one is kAlreadyExists (O_CREAT | O_EXCL)
  kTruncate,   // created, or emptied if it exists
  kKeep,       // created, or opened as it is (a journal, a resumed copy)
};

// Held while a writer owns a directory; released when destroyed.
class StorageLock {
 public:
  virtual ~StorageLock() = default;
};

class Storage {
 public:
  virtual ~Storage() = default;
  virtual std::string_view scheme() const = 0;
  virtual StorageCaps caps() const = 0;
  // How a message names path: the path itself locally, the URL elsewhere ("nfs://srv/x/y").
  virtual std::string Uri(const std::string& path) const { return path; }

  virtual Result<std::unique_ptr<RandomAccessFile>> OpenRead(const std::string& path) = 0;
  // OpenRead for a file that List or Stat described as `listed`, without asking the backend
  // again where the listing says enough (s3://: its size and ETag make the open, not a HEAD).
  // Its reads then see that version or fail with kCorruption and errno ESTALE ("changed since
  // it was listed"): a copier reopens it with OpenRead. Default: OpenRead(path).
  virtual Result<std::unique_ptr<RandomAccessFile>> OpenListed(const std::string& path,
                                                               const FileInfo& listed);
  // A new file that appears under `path` at Commit(). The parent directory must exist.
  virtual Result<std::unique_ptr<WritableFile>> Create(const std::string& path) = 0;
  // follow: a symlink is described by its target (stat) rather than itself (lstat).
  // A file written in place (RandomWriteFile). The parent directory must exist.
  virtual Result<std::unique_ptr<RandomWriteFile>> OpenWrite(const std::string& path,
                                                             WriteMode mode) = 0;
  // Makes the names created, renamed and removed in dir durable (local: fsync of the directory;
  // a backend whose namespace operations are durable when they return: nothing to do).
  virtual Status SyncDir(const std::string& dir) = 0;
  virtual Result<FileInfo> Stat(const std::string& path, bool follow = false) = 0;
  virtual Result<std::vector<DirEntry>> List(const std::string& dir) = 0;
  // Creates dir and its missing parents; an existing directory is fine.
  virtual Status MakeDirs(const std::string& dir) = 0;
  // Removes a file or an empty directory; a missing one is kNotFound.
  virtual Status Remove(const std::string& path) = 0;
  virtual Status Rename(const std::string& from, const std::string& to) = 0;
  // Swaps the two names atomically (local: renameat2 RENAME_EXCHANGE): a directory published over
  // another whole, with no moment where neither is there (formats/out_dir.h, a replace). Both must
  // exist. kUnsupported where the backend or the file system cannot (the caller falls back).
  virtual Status Exchange(const std::string& a, const std::string& b);
  // A second handle on an existing file that writes around the page cache (local: O_DIRECT), for
  // offsets and lengths that are multiples of kDirectAlign (src/aligned_buffer.h). kUnsupported
  // where the backend or the file system refuses (tmpfs): the caller stays buffered.
  virtual Result<std::unique_ptr<RandomWriteFile>> OpenDirect(const std::string& path);
  // Where caps().sync_all: makes every file written under dir durable in one call, and the names
  // created and renamed there (local: syncfs(2), one call for a batch of files instead of an
  // fsync each). kUnsupported elsewhere: the caller syncs each file and its directory.
  virtual Status SyncAll(const std::string& dir);
  // *warning says so when the backend cannot lock here and the run goes on unlocked.
  virtual Result<std::unique_ptr<StorageLock>> LockWriter(const std::string& dir,
                                                          std::string* warning) = 0;

  // The page cache (src/page_cache.h), where caps().page_cache: EvictCache drops what it holds
  // of path (dirty pages written back first), CachedPages says how much of path it holds.
  // Elsewhere kUnsupported: "PATH: SCHEME storage has no page cache here".
  virtual Status EvictCache(const std::string& path);
  virtual Result<PageResidency> CachedPages(const std::string& path);

  // An IO engine of the backend's own for one worker thread (src/io_engine.h, kEngineRemote):
  // it opens this storage's paths itself and keeps options.depth requests in flight (nfs: its
  // own connection, fio's libnfs engine). kUnsupported where the backend has none (local: the
  // engines of MakeEngine read its fds).
  virtual Result<std::unique_ptr<IoEngine>> NewEngine(const EngineOptions& options);
};

// "scheme://authority/path": scheme "file" for a plain path. file:// takes no authority.
struct StorageUri {
  std::string scheme;
  std::string authority;  // host[:port] for nfs://, the bucket for s3://
  std::string path;       // inside the backend; "/"-separated
  std::string query;      // after '?', for a scheme other than file: the backend's options
};
Result<StorageUri> ParseStorageUri(std::string_view uri);

using StorageFactory = std::function<Result<std::shared_ptr<Storage>>(const StorageUri&)>;
// Registers (or replaces) the backend for scheme. Thread-safe.
void RegisterStorage(std::string scheme, StorageFactory factory);
// The schemes OpenStorage knows, sorted.
std::vector<std::string> StorageSchemes();

struct StorageRef {
  std::shared_ptr<Storage> storage;
  std::string path;  // uri's path inside storage
};
// The backend for uri and the path inside it.
Result<StorageRef> OpenStorage(std::string_view uri);

// The process's local backend (POSIX files; safe to share).
std::shared_ptr<Storage> LocalStorage();
// A RandomAccessFile of the local backend over an fd its caller opened (an unnamed spool file,
// O_TMPFILE): `name` names it in errors, `size` is its size.
std::unique_ptr<RandomAccessFile> LocalFileFromFd(OwnedFd fd, std::string name, uint64_t size);

// Refuses a backend that lacks mmap, with why and the fix, e.g. "s3://b/x: LMDB needs a local
// file: liblmdb maps it; stage it with dssync or read it through a mount" (kUnsupported).
Status RequireMmap(const Storage& storage, std::string_view uri, std::string_view why);

// Reads a whole (small) file through storage.
Result<std::string> ReadAll(Storage& storage, const std::string& path);
// The XXH3-64 of a whole file, read through storage in large pieces.
Result<uint64_t> HashFile(Storage& storage, const std::string& path);
// Writes data under path through Create + Append + Commit.
Status WriteAll(Storage& storage, const std::string& path, std::string_view data);

}  // namespace ds
