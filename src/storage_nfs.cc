// The nfs:// backend of src/storage.h: NFSv3 through libnfs, with no kernel mount (docs/nfs.md).
//
// nfs://SERVER/EXPORT/PATH?ARGS. The export is found by asking MOUNT for the URL's path one
// component at a time (/EXPORT, then /EXPORT/PATH's first directory, ...), so that paths beside
// the dataset (a writer's temp directory) stay inside the mount. ARGS are libnfs's own (version,
// nfsport, mountport, uid, gid, ...) plus dspack's `connections` (TCP connections, as the kernel's
// nconnect; default 2) and `timeout` (seconds before an RPC fails; default 10).
//
// Paths inside the backend are the URL's: "/EXPORT/PATH". Each file is served by one connection
// (its file handle belongs to that libnfs context); files are spread over the connections in
// turn, and any number of reads are in flight on each.
#include "src/storage_nfs.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <nfsc/libnfs.h>
// After libnfs.h, which defines what these use (EXTERN).
#include <nfsc/libnfs-raw.h>
//
#include <nfsc/libnfs-raw-nfs.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <vector>

#include "src/fd.h"
#include "src/nfs_connection.h"
#include "src/nfs_engine.h"

namespace ds {
namespace {

constexpr int kDefaultConnections = 2;
constexpr int kMaxConnections = 64;
constexpr int kDefaultTimeoutS = 10;
// Reads worth keeping in flight per connection (fio's libnfs engine runs iodepth 64 on one).
constexpr unsigned kInflightPerConnection = 64;
// Appends are gathered up to this much before a WRITE.
constexpr size_t kWriteBuffer = 1 << 20;

using Callback = NfsConnection::Callback;

FileType TypeOfMode(uint64_t mode) {
  if (S_ISREG(mode)) return FileType::kRegular;
  if (S_ISDIR(mode)) return FileType::kDirectory;
  if (S_ISLNK(mode)) return FileType::kSymlink;
  if (S_ISFIFO(mode)) return FileType::kFifo;
  if (S_ISSOCK(mode)) return FileType::kSocket;
  if (S_ISCHR(mode) || S_ISBLK(mode)) return FileType::kDevice;
  return FileType::kOther;
}

FileType TypeOfFtype3(uint32_t type) {
  switch (type) {
    case NF3REG:
      return FileType::kRegular;
    case NF3DIR:
      return FileType::kDirectory;
    case NF3LNK:
      return FileType::kSymlink;
    case NF3FIFO:
      return FileType::kFifo;
    case NF3SOCK:
      return FileType::kSocket;
    case NF3BLK:
    case NF3CHR:
      return FileType::kDevice;
    default:
      return FileType::kOther;
  }
}

FileInfo NfsInfoOf(const nfs_stat_64& st) {
  FileInfo info;
  info.type = TypeOfMode(st.nfs_mode);
  info.size = st.nfs_size;
  info.mtime_ns =
      static_cast<int64_t>(st.nfs_mtime) * 1000000000 + static_cast<int64_t>(st.nfs_mtime_nsec);
  info.mode = static_cast<mode_t>(st.nfs_mode & 07777);
  info.device = st.nfs_dev;
  info.inode = st.nfs_ino;
  return info;
}

class NfsStorage;

// Holds the storage while a file lives, so that its connection does.
struct NfsHandle {
  std::shared_ptr<NfsStorage> storage;
  NfsConnection* conn = nullptr;
  nfsfh* fh = nullptr;
};

class NfsStorage final : public Storage, public std::enable_shared_from_this<NfsStorage> {
 public:
  NfsStorage(NfsTarget target, std::vector<std::unique_ptr<NfsConnection>> conns)
      : server_(target.server),
        export_(target.export_path),
        target_(std::move(target)),
        conns_(std::move(conns)) {}

  std::string_view scheme() const override { return "nfs"; }
  StorageCaps caps() const override {
    StorageCaps c;
    c.atomic_rename = true;  // RENAME within the export replaces its target atomically
    c.max_inflight = kInflightPerConnection * static_cast<unsigned>(conns_.size());
    return c;
  }
  const std::string& export_path() const { return export_; }
  pid_t pid() const { return pid_; }

  // "nfs://SERVER/PATH": how errors name a path.
  std::string Uri(const std::string& path) const override {
    return fmt::format("nfs://{}{}", server_, path);
  }

  // The path inside the export, for libnfs.
  Result<std::string> Rel(const std::string& path) const {
    if (path == export_ || (export_ == "/" && !path.empty() && path[0] == '/')) {
      return export_ == "/" ? path : std::string("/");
    }
    if (path.size() > export_.size() && path.compare(0, export_.size(), export_) == 0 &&
        path[export_.size()] == '/') {
      return path.substr(export_.size());
    }
    return Status(
        Code::kInvalidArgument,
        fmt::format("{}: outside the mounted export {}: name a path under it", Uri(path), export_));
  }

  NfsConnection& Next() { return *conns_[next_.fetch_add(1) % conns_.size()]; }

  // One call on conn; a failure is a Status naming what.
  static Status Run(NfsConnection& conn, const NfsConnection::Start& start,
                    const NfsConnection::OnReply& on_reply, const std::string& what) {
    std::string error;
    int rc = conn.Call(start, on_reply, &error);
    return rc < 0 ? NfsStatus(rc, what, error) : Status::Ok();
  }

  // Opens path on the next connection with flags (nfs_open2 / nfs_create).
  Result<NfsHandle> OpenHandle(const std::string& path, int flags, bool create_excl) {
    DS_ASSIGN_OR_RETURN(std::string rel, Rel(path));
    NfsHandle h{shared_from_this(), &Next(), nullptr};
    DS_RETURN_IF_ERROR(Run(
        *h.conn,
        [&](nfs_context* nfs, Callback cb, void* p) {
          return create_excl ? nfs_create_async(nfs, rel.c_str(), flags, 0666, cb, p)
                             : nfs_open2_async(nfs, rel.c_str(), flags, 0666, cb, p);
        },
        [&](int, nfs_context*, void* data) { h.fh = static_cast<nfsfh*>(data); }, Uri(path)));
    return h;
  }

  // A call on a closed handle is an error, as EBADF is locally (a writer that failed may still
  // flush what it holds): libnfs would dereference the freed handle.
  static Status CheckOpen(const NfsHandle& h, const std::string& what) {
    if (h.fh) return Status::Ok();
    return Status(Code::kIOError, what + ": the file is closed", EBADF);
  }

  static void CloseHandle(const NfsHandle& h) {
    if (!h.fh) return;
    std::string error;
    h.conn->Call(
        [&](nfs_context* nfs, Callback cb, void* p) { return nfs_close_async(nfs, h.fh, cb, p); },
        [](int, nfs_context*, void*) {}, &error);
  }

  static Result<nfs_stat_64> FStat(const NfsHandle& h, const std::string& what) {
    DS_RETURN_IF_ERROR(CheckOpen(h, what));
    nfs_stat_64 st{};
    DS_RETURN_IF_ERROR(Run(
        *h.conn,
        [&](nfs_context* nfs, Callback cb, void* p) { return nfs_fstat64_async(nfs, h.fh, cb, p); },
        [&](int, nfs_context*, void* data) { st = *static_cast<nfs_stat_64*>(data); }, what));
    return st;
  }

  // Up to n bytes at offset through h; a short reply is asked again for the rest.
  static Result<size_t> Read(const NfsHandle& h, uint64_t offset, void* buf, size_t n,
                             const std::string& what) {
    DS_RETURN_IF_ERROR(CheckOpen(h, what));
    size_t got = 0;
    while (got < n) {
      size_t want = n - got;
      size_t this_time = 0;
      std::string error;
      int rc = h.conn->Call(
          [&](nfs_context* nfs, Callback cb, void* p) {
            return nfs_pread_async(nfs, h.fh, offset + got, want, cb, p);
          },
          [&](int err, nfs_context*, void* data) {
            this_time = std::min(static_cast<size_t>(err), want);
            std::memcpy(static_cast<char*>(buf) + got, data, this_time);
          },
          &error);
      if (rc < 0)
        return NfsStatus(rc, fmt::format("{}: read at offset {}", what, offset + got), error);
      if (this_time == 0) break;  // the end of the file
      got += this_time;
    }
    return got;
  }

  static Status Write(const NfsHandle& h, uint64_t offset, const void* data, size_t n,
                      const std::string& what) {
    DS_RETURN_IF_ERROR(CheckOpen(h, what));
    size_t done = 0;
    while (done < n) {
      size_t wrote = 0;
      std::string error;
      int rc = h.conn->Call(
          [&](nfs_context* nfs, Callback cb, void* p) {
            return nfs_pwrite_async(nfs, h.fh, offset + done, n - done,
                                    static_cast<const char*>(data) + done, cb, p);
          },
          [&](int err, nfs_context*, void*) { wrote = static_cast<size_t>(err); }, &error);
      if (rc < 0) {
        return NfsStatus(rc, fmt::format("{}: write at offset {}", what, offset + done), error);
      }
      if (wrote == 0) {
        return Status(
            Code::kIOError,
            fmt::format("{}: write at offset {}: the server wrote nothing", what, offset + done));
      }
      done += wrote;
    }
    return Status::Ok();
  }

  static Status Fsync(const NfsHandle& h, const std::string& what) {
    DS_RETURN_IF_ERROR(CheckOpen(h, what));
    return Run(
        *h.conn,
        [&](nfs_context* nfs, Callback cb, void* p) { return nfs_fsync_async(nfs, h.fh, cb, p); },
        [](int, nfs_context*, void*) {}, what + ": fsync");
  }

  // A path call on the next connection.
  Status PathCall(
      const std::string& path, const std::string& what,
      const std::function<int(nfs_context*, const char*, Callback, void*)>& call,
      const NfsConnection::OnReply& on_reply = [](int, nfs_context*, void*) {}) {
    DS_ASSIGN_OR_RETURN(std::string rel, Rel(path));
    return Run(
        Next(),
        [&](nfs_context* nfs, Callback cb, void* p) { return call(nfs, rel.c_str(), cb, p); },
        on_reply, what);
  }

  Result<std::unique_ptr<RandomAccessFile>> OpenRead(const std::string& path) override;
  Result<std::unique_ptr<WritableFile>> Create(const std::string& path) override;
  Result<std::unique_ptr<RandomWriteFile>> OpenWrite(const std::string& path,
                                                     WriteMode mode) override;

  Status SyncDir(const std::string&) override {
    return Status::Ok();  // NFSv3's CREATE, REMOVE and RENAME are stable when they reply
  }

  Result<FileInfo> Stat(const std::string& path, bool follow) override {
    nfs_stat_64 st{};
    DS_RETURN_IF_ERROR(PathCall(
        path, Uri(path),
        [follow](nfs_context* nfs, const char* rel, Callback cb, void* p) {
          return follow ? nfs_stat64_async(nfs, rel, cb, p) : nfs_lstat64_async(nfs, rel, cb, p);
        },
        [&](int, nfs_context*, void* data) { st = *static_cast<nfs_stat_64*>(data); }));
    return NfsInfoOf(st);
  }

  Result<std::vector<DirEntry>> List(const std::string& dir) override {
    std::vector<DirEntry> out;
    DS_RETURN_IF_ERROR(PathCall(
        dir, Uri(dir),
        [](nfs_context* nfs, const char* rel, Callback cb, void* p) {
          return nfs_opendir_async(nfs, rel, cb, p);
        },
        [&](int, nfs_context* nfs, void* data) {
          auto* d = static_cast<nfsdir*>(data);
          while (nfsdirent* e = nfs_readdir(nfs, d)) {
            if (std::strcmp(e->name, ".") == 0 || std::strcmp(e->name, "..") == 0) continue;
            DirEntry entry;
            entry.name = e->name;
            entry.info.type = TypeOfFtype3(e->type);
            entry.info.size = e->size;
            entry.info.mtime_ns = static_cast<int64_t>(e->mtime.tv_sec) * 1000000000 +
                                  static_cast<int64_t>(e->mtime_nsec);
            entry.info.mode = static_cast<mode_t>(e->mode & 07777);
            entry.info.device = e->dev;
            entry.info.inode = e->inode;
            out.push_back(std::move(entry));
          }
          nfs_closedir(nfs, d);
        }));
    return out;
  }

  Status MakeDirs(const std::string& dir) override {
    DS_ASSIGN_OR_RETURN(std::string rel, Rel(dir));
    auto info = Stat(dir, true);
    if (info.ok()) {
      if (info->type == FileType::kDirectory) return Status::Ok();
      return Status(Code::kAlreadyExists, Uri(dir) + ": exists and is not a directory");
    }
    if (info.status().code() != Code::kNotFound) return info.status();
    auto slash = dir.rfind('/');
    if (slash != std::string::npos && slash > 0 && dir.substr(0, slash) != export_) {
      DS_RETURN_IF_ERROR(MakeDirs(dir.substr(0, slash)));
    }
    Status s = PathCall(dir, Uri(dir), [](nfs_context* nfs, const char* r, Callback cb, void* p) {
      return nfs_mkdir2_async(nfs, r, 0777, cb, p);
    });
    if (s.code() == Code::kAlreadyExists) return Status::Ok();  // made by another writer
    return s;
  }

  // REMOVE first, as unlink(2) would be asked: one call for a file (no GETATTR before it); a
  // directory refuses it (NFS3ERR_ISDIR, or EPERM/EACCES from some servers) and is then
  // asked with RMDIR.
  Status Remove(const std::string& path) override {
    Status s = PathCall(path, Uri(path), [](nfs_context* nfs, const char* r, Callback cb, void* p) {
      return nfs_unlink_async(nfs, r, cb, p);
    });
    if (s.ok() || (s.err() != EISDIR && s.err() != EPERM && s.err() != EACCES)) return s;
    auto info = Stat(path, false);
    if (!info.ok() || info->type != FileType::kDirectory) return s;
    return PathCall(path, Uri(path), [](nfs_context* nfs, const char* r, Callback cb, void* p) {
      return nfs_rmdir_async(nfs, r, cb, p);
    });
  }

  Status Rename(const std::string& from, const std::string& to) override {
    DS_ASSIGN_OR_RETURN(std::string rel_to, Rel(to));
    return PathCall(from, fmt::format("{}: rename from {}", Uri(to), Uri(from)),
                    [&](nfs_context* nfs, const char* r, Callback cb, void* p) {
                      return nfs_rename_async(nfs, r, rel_to.c_str(), cb, p);
                    });
  }

  Result<std::unique_ptr<StorageLock>> LockWriter(const std::string& dir,
                                                  std::string* warning) override {
    if (warning) {
      *warning = fmt::format(
          "{}: not locked: libnfs has no NFS lock manager (NLM); make sure no other writer "
          "uses this directory",
          Uri(dir));
    }
    return std::make_unique<StorageLock>();
  }

  // fio's libnfs engine: a connection of its own per worker, driven by the worker's thread.
  Result<std::unique_ptr<IoEngine>> NewEngine(const EngineOptions& options) override {
    auto self = shared_from_this();
    // A path of this storage, or a file's name (its URI: what a reader's RandomAccessFile says).
    auto path_of = [self](const std::string& p) {
      const std::string own = self->Uri("");
      return p.compare(0, own.size(), own) == 0 ? p.substr(own.size()) : p;
    };
    NfsEnginePaths paths{[self, path_of](const std::string& p) { return self->Rel(path_of(p)); },
                         [self, path_of](const std::string& p) { return self->Uri(path_of(p)); }};
    auto engine = MakeNfsEngine(target_, options, std::move(paths));
    if (!engine.ok()) return engine.status().Prefixed(Uri(export_));
    return engine;
  }

 private:
  std::string server_;
  std::string export_;
  NfsTarget target_;
  std::vector<std::unique_ptr<NfsConnection>> conns_;
  std::atomic<size_t> next_{0};
  pid_t pid_ = ::getpid();  // a forked child mounts its own (NfsConnection: the loop's thread)
};

class NfsFile final : public RandomAccessFile {
 public:
  NfsFile(NfsHandle h, std::string name, uint64_t size)
      : h_(std::move(h)), name_(std::move(name)), size_(size) {}
  ~NfsFile() override { NfsStorage::CloseHandle(h_); }
  const std::string& name() const override { return name_; }
  uint64_t size() const override { return size_; }
  Result<size_t> ReadSome(uint64_t offset, void* buf, size_t n) const override {
    if (offset >= size_) return size_t{0};
    // Never ask past the end: libnfs would send READs for what is not there.
    n = static_cast<size_t>(std::min<uint64_t>(n, size_ - offset));
    return NfsStorage::Read(h_, offset, buf, n, name_);
  }

 private:
  NfsHandle h_;
  std::string name_;
  uint64_t size_;
};

// A new file under a temp name beside its final one, renamed over it at Commit.
class NfsWritable final : public WritableFile {
 public:
  NfsWritable(NfsHandle h, std::string name, std::string tmp, std::string uri)
      : h_(std::move(h)), name_(std::move(name)), tmp_(std::move(tmp)), uri_(std::move(uri)) {}
  ~NfsWritable() override {
    NfsStorage::CloseHandle(h_);
    if (!committed_) (void)h_.storage->Remove(tmp_);
  }
  const std::string& name() const override { return name_; }
  uint64_t size() const override { return written_ + buf_.size(); }
  Status Append(std::string_view data) override {
    if (buf_.size() + data.size() > kWriteBuffer) DS_RETURN_IF_ERROR(Flush());
    if (data.size() >= kWriteBuffer) {
      DS_RETURN_IF_ERROR(NfsStorage::Write(h_, written_, data.data(), data.size(), uri_));
      written_ += data.size();
      return Status::Ok();
    }
    buf_.append(data);
    return Status::Ok();
  }
  Status Sync() override {
    DS_RETURN_IF_ERROR(Flush());
    return NfsStorage::Fsync(h_, uri_);
  }
  Status Commit() override {
    DS_RETURN_IF_ERROR(Sync());
    NfsStorage::CloseHandle(h_);
    h_.fh = nullptr;
    DS_RETURN_IF_ERROR(h_.storage->Rename(tmp_, name_));
    committed_ = true;
    return Status::Ok();
  }

 private:
  Status Flush() {
    if (buf_.empty()) return Status::Ok();
    DS_RETURN_IF_ERROR(NfsStorage::Write(h_, written_, buf_.data(), buf_.size(), uri_));
    written_ += buf_.size();
    buf_.clear();
    return Status::Ok();
  }
  NfsHandle h_;
  std::string name_, tmp_, uri_;
  std::string buf_;
  uint64_t written_ = 0;
  bool committed_ = false;
};

class NfsRandomWrite final : public RandomWriteFile {
 public:
  NfsRandomWrite(NfsHandle h, std::string path, std::string uri)
      : h_(std::move(h)), path_(std::move(path)), uri_(std::move(uri)) {}
  ~NfsRandomWrite() override { NfsStorage::CloseHandle(h_); }
  const std::string& name() const override { return uri_; }
  Status WriteAt(uint64_t offset, const void* data, size_t n) override {
    return NfsStorage::Write(h_, offset, data, n, uri_);
  }
  Result<size_t> ReadSome(uint64_t offset, void* buf, size_t n) override {
    DS_ASSIGN_OR_RETURN(uint64_t size, Size());
    if (offset >= size) return size_t{0};
    n = static_cast<size_t>(std::min<uint64_t>(n, size - offset));
    return NfsStorage::Read(h_, offset, buf, n, uri_);
  }
  Result<uint64_t> Size() override {
    DS_ASSIGN_OR_RETURN(nfs_stat_64 st, NfsStorage::FStat(h_, uri_));
    return st.nfs_size;
  }
  Status Truncate(uint64_t size) override {
    DS_RETURN_IF_ERROR(NfsStorage::CheckOpen(h_, uri_));
    return NfsStorage::Run(
        *h_.conn,
        [&](nfs_context* nfs, Callback cb, void* p) {
          return nfs_ftruncate_async(nfs, h_.fh, size, cb, p);
        },
        [](int, nfs_context*, void*) {}, uri_ + ": truncate");
  }
  Status Sync() override { return NfsStorage::Fsync(h_, uri_); }
  Status Close() override {
    NfsStorage::CloseHandle(h_);
    h_.fh = nullptr;
    return Status::Ok();
  }
  Status SetAttributes(mode_t mode, int64_t mtime_ns) override {
    DS_RETURN_IF_ERROR(NfsStorage::CheckOpen(h_, uri_));
    DS_RETURN_IF_ERROR(NfsStorage::Run(
        *h_.conn,
        [&](nfs_context* nfs, Callback cb, void* p) {
          return nfs_fchmod_async(nfs, h_.fh, static_cast<int>(mode & 07777), cb, p);
        },
        [](int, nfs_context*, void*) {}, uri_ + ": chmod"));
    struct timeval times[2];
    times[0].tv_sec = times[1].tv_sec = mtime_ns / 1000000000;
    times[0].tv_usec = times[1].tv_usec = (mtime_ns % 1000000000) / 1000;
    return h_.storage->PathCall(path_, uri_ + ": set mtime",
                                [&](nfs_context* nfs, const char* r, Callback cb, void* p) {
                                  return nfs_utimes_async(nfs, r, times, cb, p);
                                });
  }

 private:
  NfsHandle h_;
  std::string path_, uri_;
};

Result<std::unique_ptr<RandomAccessFile>> NfsStorage::OpenRead(const std::string& path) {
  DS_ASSIGN_OR_RETURN(NfsHandle h, OpenHandle(path, O_RDONLY, false));
  std::string uri = Uri(path);
  auto st = FStat(h, uri);
  if (!st.ok()) {
    CloseHandle(h);
    return st.status();
  }
  if (TypeOfMode(st->nfs_mode) != FileType::kRegular) {
    CloseHandle(h);
    return Status(Code::kBadInput,
                  fmt::format("{}: {}", uri, FileTypeName(TypeOfMode(st->nfs_mode))));
  }
  return std::unique_ptr<RandomAccessFile>(new NfsFile(std::move(h), uri, st->nfs_size));
}

Result<std::unique_ptr<WritableFile>> NfsStorage::Create(const std::string& path) {
  for (int attempt = 0;; attempt++) {
    std::string tmp = TempNameFor(path);
    auto h = OpenHandle(tmp, O_WRONLY | O_EXCL, true);
    if (h.ok()) {
      return std::unique_ptr<WritableFile>(new NfsWritable(std::move(*h), path, tmp, Uri(tmp)));
    }
    if (h.status().code() != Code::kAlreadyExists || attempt == 16) return h.status();
  }
}

Result<std::unique_ptr<RandomWriteFile>> NfsStorage::OpenWrite(const std::string& path,
                                                               WriteMode mode) {
  Result<NfsHandle> h = Status::Ok();
  switch (mode) {
    case WriteMode::kCreateNew:
      h = OpenHandle(path, O_RDWR | O_EXCL, true);
      break;
    case WriteMode::kTruncate:
      h = OpenHandle(path, O_RDWR | O_TRUNC, true);
      break;
    case WriteMode::kKeep:
      h = OpenHandle(path, O_RDWR | O_CREAT, false);
      break;
  }
  if (!h.ok()) return h.status();
  return std::unique_ptr<RandomWriteFile>(new NfsRandomWrite(std::move(*h), path, Uri(path)));
}

// dspack's own URL arguments, taken out of the query; the rest is libnfs's.
struct NfsArgs {
  int connections = kDefaultConnections;
  int timeout_s = kDefaultTimeoutS;
  std::string libnfs;  // "a=b&c=d"
};

// query's arguments over `args`.
Result<NfsArgs> ParseNfsArgs(std::string_view query, NfsArgs args);

Result<NfsArgs> ParseNfsArgs(std::string_view query) {
  NfsArgs args;
  // The process's defaults, where the URL gives none (docs/nfs.md): the environment.
  std::string env_query;
  for (const auto& [var, key] : {std::pair{"DSPACK_NFS_CONNECTIONS", "connections"},
                                 std::pair{"DSPACK_NFS_TIMEOUT", "timeout"}}) {
    if (const char* v = std::getenv(var); v && *v) env_query += fmt::format("{}={}&", key, v);
  }
  if (!env_query.empty()) {
    auto defaults = ParseNfsArgs(env_query.substr(0, env_query.size() - 1), args);
    if (!defaults.ok()) return defaults.status().Prefixed("DSPACK_NFS_* in the environment");
    args = *defaults;
  }
  return ParseNfsArgs(query, args);
}

Result<NfsArgs> ParseNfsArgs(std::string_view query, NfsArgs args) {
  while (!query.empty()) {
    auto amp = query.find('&');
    std::string_view kv = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    if (kv.empty()) continue;
    auto eq = kv.find('=');
    std::string_view key = kv.substr(0, eq);
    std::string_view value = eq == std::string_view::npos ? std::string_view() : kv.substr(eq + 1);
    auto number = [&](int lo, int hi) -> Result<int> {
      int v = 0;
      auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
      if (ec != std::errc() || p != value.data() + value.size() || v < lo || v > hi) {
        return Status(Code::kInvalidArgument,
                      fmt::format("{}={}: give a whole number from {} to {}", key, value, lo, hi));
      }
      return v;
    };
    if (key == "connections") {
      DS_ASSIGN_OR_RETURN(args.connections, number(1, kMaxConnections));
    } else if (key == "timeout") {
      DS_ASSIGN_OR_RETURN(args.timeout_s, number(1, 3600));
    } else if (key == "version" && value != "3") {
      return Status(Code::kUnsupported,
                    fmt::format("version={}: dspack speaks NFSv3 (libnfs 4.0's NFSv4 opens fail "
                                "with NFS4ERR_BAD_STATEID); use version=3",
                                value));
    } else {
      if (!args.libnfs.empty()) args.libnfs += '&';
      args.libnfs += kv;
    }
  }
  return args;
}

// The prefixes of path that MOUNT is asked for, shortest first, then "/".
std::vector<std::string> ExportCandidates(const std::string& path) {
  std::vector<std::string> out;
  for (size_t i = 1; i <= path.size(); ++i) {
    if (i == path.size() || path[i] == '/') {
      std::string p = path.substr(0, i);
      if (p.size() > 1 && (out.empty() || out.back() != p)) out.push_back(p);
    }
  }
  out.push_back("/");
  return out;
}

// Backends already mounted, so that the URLs of one export share their connections.
struct Mounted {
  std::mutex mu;
  std::multimap<std::string, std::weak_ptr<NfsStorage>> by_server;  // key: server?args
};

Mounted& TheMounted() {
  static Mounted* m = new Mounted;
  return *m;
}

}  // namespace

Result<std::shared_ptr<Storage>> OpenNfsStorage(const StorageUri& uri) {
  if (uri.authority.empty()) {
    return Status(Code::kInvalidArgument, "name the server: nfs://SERVER/EXPORT/PATH");
  }
  DS_ASSIGN_OR_RETURN(NfsArgs args, ParseNfsArgs(uri.query));
  std::string key = fmt::format("{}?{}&connections={}&timeout={}", uri.authority, args.libnfs,
                                args.connections, args.timeout_s);
  Mounted& mounted = TheMounted();
  std::lock_guard lock(mounted.mu);
  auto range = mounted.by_server.equal_range(key);
  for (auto it = range.first; it != range.second;) {
    auto storage = it->second.lock();
    if (!storage || storage->pid() != ::getpid()) {
      it = mounted.by_server.erase(it);
      continue;
    }
    const std::string& e = storage->export_path();
    if (e == "/" || uri.path == e || uri.path.rfind(e + "/", 0) == 0) {
      return std::shared_ptr<Storage>(std::move(storage));
    }
    ++it;
  }

  NfsTarget target{uri.authority, "", args.libnfs, args.timeout_s * 1000};
  Status first_refusal;
  for (const std::string& candidate : ExportCandidates(uri.path)) {
    target.export_path = candidate;
    auto conn = NfsConnection::Mount(target);
    if (!conn.ok()) {
      if (conn.status().code() != Code::kNotFound) return conn.status();
      if (first_refusal.ok()) first_refusal = conn.status();
      continue;
    }
    std::vector<std::unique_ptr<NfsConnection>> conns;
    conns.push_back(std::move(*conn));
    while (static_cast<int>(conns.size()) < args.connections) {
      DS_ASSIGN_OR_RETURN(auto more, NfsConnection::Mount(target));
      conns.push_back(std::move(more));
    }
    auto storage = std::make_shared<NfsStorage>(target, std::move(conns));
    mounted.by_server.emplace(key, storage);
    return std::shared_ptr<Storage>(std::move(storage));
  }
  return Status(Code::kNotFound,
                fmt::format("{}; nor any other prefix of {}: name an export (showmount -e {})",
                            first_refusal.message(), uri.path, uri.authority),
                first_refusal.err());
}

}  // namespace ds
