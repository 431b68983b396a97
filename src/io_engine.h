// IO engines, shaped like fio's ops table (fio ioengines.h): Queue / Submit / Reap, with
// capability flags. Whatever keeps many reads in flight goes through this layer: dsbench's io
// jobs, the batched sample read of every layout (LayoutReader::ReadBatch), and dssync's chunk
// copy; so a result measured by dsbench is what the tools can do.
//
//   psync     pread/pwrite, completed inside Queue (fio's "psync"); always available
//   io_uring  liburing; Submit hands what is queued to the kernel at once, Reap waits once and
//             drains
//             (liburing's io_uring-cp loop). Options (fio's): SQPOLL (sqthread_poll),
//             registered files (registerfiles) and fixed buffers (fixedbufs, used by requests
//             that name a buf_index). Only io_uring_engine.cc includes liburing.h (and the
//             measurement harness tools/micro/tree_read.cc, for the operations the engine lacks).
//   libaio    Linux native AIO (io_submit/io_getevents, fio's "libaio"); asynchronous for
//             O_DIRECT only, as in fio. Only libaio_engine.cc includes libaio.h.
//   mmap      memcpy from/to a MAP_SHARED mapping of the whole file (fio's "mmap"), made by
//             OpenFile: read-write where the fd was opened for writing, read-only else (a write
//             to a read-only file is -EBADF, as pwrite's); no syscall per IO. A file truncated
//             under it raises SIGBUS, as with any mmap reader.
//
// File hooks (fio's open_file/close_file): a caller hands every fd to OpenFile before its first
// request and to CloseFile before closing it, so that an engine can own per-file state (mmap's
// mapping; a remote engine's handle). A request on an fd the engine was not given is -EBADF on
// an engine that keeps such state; OpenFile on an fd number it already holds replaces the old
// state (the number was reused). EngineFile does both for one fd.
//
// Contract: an IoRequest belongs to the caller and must stay alive until Reap returns it.
// result is the byte count (possibly short: at EOF, or a partial transfer) or -errno.
// ErrnoStatus converts a -errno result into a Status in one place.
// O_DIRECT is the caller's business: open the fd with it and pass buffers and offsets aligned to
// the device's logical block size (AlignedBuffer, src/aligned_buffer.h).
// Thread-safety: an engine is used by one thread (one engine per worker, as fio does).
// Counters: every engine counts requests queued and reaped and the peak number in flight (for a
// synchronous engine, queued but not yet reaped), so a caller can show its queue depth.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "src/aligned_buffer.h"
#include "src/status.h"

namespace ds {

struct IoRequest {
  enum class Op : uint8_t { kRead, kWrite };
  Op op = Op::kRead;
  int fd = -1;
  void* buf = nullptr;
  size_t len = 0;
  uint64_t offset = 0;
  ssize_t result = 0;    // set on completion: bytes, or -errno
  void* user = nullptr;  // the caller's context, untouched
  int buf_index = -1;    // io_uring with registered buffers: which one buf lies in (else -1)
};

enum EngineFlag : unsigned {
  kEngineSync = 1u << 0,    // Queue completes the request (no real queue depth)
  kEngineMemcpy = 1u << 1,  // no syscall per IO (mmap): O_DIRECT does not apply
  // The files are remote and the engine opens them (OpenPath) by a path of the storage that
  // made it (Storage::NewEngine: nfs); there is no local fd, page cache, fsync or trim.
  kEngineRemote = 1u << 2,
};

struct EngineCounters {
  uint64_t queued = 0;
  uint64_t reaped = 0;
  unsigned peak_inflight = 0;
};

struct EngineOptions {
  unsigned depth = 32;  // requests in flight at most
  bool sqpoll = false;  // io_uring: kernel thread polls the submission queue
  // io_uring: the kernel polls for completions (IORING_SETUP_IOPOLL, fio's hipri): O_DIRECT
  // only, on a device with poll queues; a request it cannot poll completes with -EOPNOTSUPP.
  bool iopoll = false;
};

class IoEngine {
 public:
  virtual ~IoEngine() = default;
  virtual std::string_view name() const = 0;
  virtual unsigned flags() const = 0;
  virtual unsigned depth() const = 0;
  virtual unsigned inflight() const = 0;
  // Queues r (REQUIRES: inflight() < depth(); else kInvalidArgument).
  virtual Status Queue(IoRequest* r) = 0;
  // Hands what was queued to the kernel now (Reap also submits anything left queued); returns
  // how many requests it covers.
  virtual Result<unsigned> Submit() = 0;
  // Waits until at least `min` requests are complete (0: do not wait), then returns up to
  // out.size() of them in out. REQUIRES: min <= inflight().
  virtual Result<size_t> Reap(size_t min, std::span<IoRequest*> out) = 0;
  // io_uring only (kInvalidArgument elsewhere): registers fds (requests on them then go by
  // index, skipping the per-IO file lookup) and buffers (a request with buf_index = i must lie
  // inside buffers[i]; the kernel pins them once instead of per IO). Before any Queue.
  virtual Status RegisterFiles(std::span<const int> fds);
  // The file hooks (see the header comment). Defaults: nothing to do.
  virtual Status OpenFile(int fd);
  virtual void CloseFile(int fd);
  // kEngineRemote: opens path (a path of the storage that made the engine, or the URI a file of
  // that storage names itself by) for reading, or writing too, and returns the handle that requests
  // carry in IoRequest::fd; CloseFile(handle) closes it (EngineFile::Adopt). Elsewhere
  // kUnsupported: the caller opens a local fd and hands it to OpenFile.
  virtual Result<int> OpenPath(const std::string& path, bool write);
  // The Status of a request that failed (r.result < 0), starting with `what`: ErrnoStatus, or
  // what the engine knows more (nfs: the server's or libnfs's reason, a lost connection named).
  virtual Status RequestError(const IoRequest& r, std::string_view what) const;
  virtual Status RegisterBuffers(std::span<const std::span<char>> buffers);
  const EngineCounters& counters() const { return counters_; }
  // Starts the counters afresh (an engine reused for a new batch). REQUIRES: inflight() == 0.
  void ResetCounters() { counters_ = {}; }

 protected:
  void NoteQueued(unsigned inflight_now) {
    counters_.queued++;
    if (inflight_now > counters_.peak_inflight) counters_.peak_inflight = inflight_now;
  }
  void NoteReaped(size_t n) { counters_.reaped += n; }

 private:
  EngineCounters counters_;
};

// Hands fd to engine.OpenFile now and to CloseFile when it goes (it does not close fd).
class EngineFile {
 public:
  static Result<EngineFile> Open(IoEngine& engine, int fd) {
    DS_RETURN_IF_ERROR(engine.OpenFile(fd));
    return EngineFile(&engine, fd);
  }
  // A handle the engine gave (OpenPath): closed with CloseFile when this goes.
  static EngineFile Adopt(IoEngine& engine, int handle) { return EngineFile(&engine, handle); }
  EngineFile(EngineFile&& o) noexcept : engine_(o.engine_), fd_(o.fd_) { o.engine_ = nullptr; }
  EngineFile& operator=(EngineFile&&) = delete;
  ~EngineFile() {
    if (engine_) engine_->CloseFile(fd_);
  }

 private:
  EngineFile(IoEngine* engine, int fd) : engine_(engine), fd_(fd) {}
  IoEngine* engine_;
  int fd_;
};

// name: "psync", "io_uring", "libaio" or "mmap" ("nfs" comes from its storage:
// Storage::NewEngine). io_uring that the kernel refuses (old kernel,
// seccomp) is kUnsupported with the reason, so a caller can fall back to psync and say so.
Result<std::unique_ptr<IoEngine>> MakeEngine(std::string_view name, const EngineOptions& options);

// "<what>: <strerror(-result)>" for a failed request.
Status ErrnoStatus(ssize_t result, std::string_view what);

// Reads [offset, offset+len) through the engine, requeueing short reads until done or EOF.
// Returns the bytes read (less than len only at EOF).
Result<size_t> EngineReadFull(IoEngine& engine, int fd, void* buf, size_t len, uint64_t offset);

namespace internal {
Result<std::unique_ptr<IoEngine>> MakeIoUringEngine(const EngineOptions& options);
Result<std::unique_ptr<IoEngine>> MakeLibaioEngine(const EngineOptions& options);
}  // namespace internal

}  // namespace ds
