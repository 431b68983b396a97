#include "src/io_engine.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <deque>
#include <new>
#include <unordered_map>
#include <vector>

namespace ds {

Status IoEngine::RegisterFiles(std::span<const int>) {
  return Status(
      Code::kInvalidArgument,
      std::string("registered files need `ioengine=io_uring`, not ") + std::string(name()));
}

Status IoEngine::RegisterBuffers(std::span<const std::span<char>>) {
  return Status(Code::kInvalidArgument,
                std::string("fixed buffers need `ioengine=io_uring`, not ") + std::string(name()));
}

Status IoEngine::OpenFile(int) { return Status::Ok(); }
void IoEngine::CloseFile(int) {}
Status IoEngine::RequestError(const IoRequest& r, std::string_view what) const {
  return ErrnoStatus(r.result, what);
}
Result<int> IoEngine::OpenPath(const std::string& path, bool) {
  return Status(Code::kUnsupported,
                fmt::format("{}: the {} engine reads local files by fd", path, name()));
}

Status ErrnoStatus(ssize_t result, std::string_view what) {
  return Status::FromErrno(static_cast<int>(-result), what);
}

namespace {

// Completes requests at Queue time; Reap hands them back.
class SyncEngineBase : public IoEngine {
 public:
  explicit SyncEngineBase(unsigned depth) : depth_(depth) {}
  unsigned depth() const override { return depth_; }
  unsigned inflight() const override { return static_cast<unsigned>(done_.size()); }
  Status Queue(IoRequest* r) override {
    if (done_.size() >= depth_) {
      return Status(Code::kInvalidArgument, std::string(name()) + ": queue full");
    }
    r->result = Do(*r);
    done_.push_back(r);
    NoteQueued(static_cast<unsigned>(done_.size()));
    return Status::Ok();
  }
  Result<unsigned> Submit() override { return 0u; }
  Result<size_t> Reap(size_t, std::span<IoRequest*> out) override {
    size_t n = 0;
    while (n < out.size() && !done_.empty()) {
      out[n++] = done_.front();
      done_.pop_front();
    }
    NoteReaped(n);
    return n;
  }

 protected:
  virtual ssize_t Do(IoRequest& r) = 0;

 private:
  unsigned depth_;
  std::deque<IoRequest*> done_;
};

class PsyncEngine : public SyncEngineBase {
 public:
  using SyncEngineBase::SyncEngineBase;
  std::string_view name() const override { return "psync"; }
  unsigned flags() const override { return kEngineSync; }

 protected:
  ssize_t Do(IoRequest& r) override {
    for (;;) {
      ssize_t n = r.op == IoRequest::Op::kRead
                      ? ::pread(r.fd, r.buf, r.len, static_cast<off_t>(r.offset))
                      : ::pwrite(r.fd, r.buf, r.len, static_cast<off_t>(r.offset));
      if (n >= 0) return n;
      if (errno != EINTR) return -errno;
    }
  }
};

class MmapEngine : public SyncEngineBase {
 public:
  using SyncEngineBase::SyncEngineBase;
  ~MmapEngine() override {
    for (auto& [fd, m] : maps_) Unmap(m);
  }
  std::string_view name() const override { return "mmap"; }
  unsigned flags() const override { return kEngineSync | kEngineMemcpy; }

  // Maps the whole file once, with the protection its open mode allows (fio maps at open too):
  // the request path then makes no syscall, and a write after a read finds a writable mapping.
  Status OpenFile(int fd) override {
    int mode = ::fcntl(fd, F_GETFL);
    struct stat st;
    if (mode < 0 || ::fstat(fd, &st) != 0) {
      return Status::FromErrno(errno, "mmap engine: fd " + std::to_string(fd));
    }
    bool writable = (mode & O_ACCMODE) == O_RDWR;  // MAP_SHARED + PROT_WRITE needs O_RDWR
    Map m{nullptr, static_cast<uint64_t>(st.st_size), writable};
    if (m.size > 0) {
      void* a = ::mmap(nullptr, m.size, PROT_READ | (writable ? PROT_WRITE : 0), MAP_SHARED, fd, 0);
      if (a == MAP_FAILED) {
        return Status::FromErrno(errno, "mmap engine: mapping fd " + std::to_string(fd));
      }
      m.addr = a;
    }
    auto [it, fresh] = maps_.try_emplace(fd, m);
    if (!fresh) {  // the fd number was reused without CloseFile: the old mapping is not this file
      Unmap(it->second);
      it->second = m;
    }
    return Status::Ok();
  }
  void CloseFile(int fd) override {
    auto it = maps_.find(fd);
    if (it == maps_.end()) return;
    Unmap(it->second);
    maps_.erase(it);
  }

 protected:
  ssize_t Do(IoRequest& r) override {
    auto it = maps_.find(r.fd);
    if (it == maps_.end()) return -EBADF;  // not handed to OpenFile
    const Map& m = it->second;
    bool write = r.op == IoRequest::Op::kWrite;
    if (write && !m.writable) return -EBADF;  // as pwrite on an fd opened read-only
    if (r.offset >= m.size) return 0;
    size_t n = static_cast<size_t>(std::min<uint64_t>(r.len, m.size - r.offset));
    char* p = static_cast<char*>(m.addr) + r.offset;
    if (write)
      std::memcpy(p, r.buf, n);  // writes never extend the file (as fio's mmap engine)
    else
      std::memcpy(r.buf, p, n);
    return static_cast<ssize_t>(n);
  }

 private:
  struct Map {
    void* addr = nullptr;
    uint64_t size = 0;
    bool writable = false;
  };
  static void Unmap(Map& m) {
    if (m.addr) ::munmap(m.addr, m.size);
    m.addr = nullptr;
  }
  std::unordered_map<int, Map> maps_;
};

}  // namespace

Result<std::unique_ptr<IoEngine>> MakeEngine(std::string_view name, const EngineOptions& o) {
  if (o.depth == 0) return Status(Code::kInvalidArgument, "iodepth must be at least 1");
  if (name == "psync") return std::unique_ptr<IoEngine>(new PsyncEngine(o.depth));
  if (name == "mmap") return std::unique_ptr<IoEngine>(new MmapEngine(o.depth));
  if (name == "io_uring") return internal::MakeIoUringEngine(o);
  if (name == "libaio") return internal::MakeLibaioEngine(o);
  return Status(Code::kInvalidArgument,
                "unknown ioengine '" + std::string(name) + "' (psync, io_uring, libaio, mmap)");
}

Result<size_t> EngineReadFull(IoEngine& engine, int fd, void* buf, size_t len, uint64_t offset) {
  size_t done = 0;
  IoRequest r;
  IoRequest* out[1];
  while (done < len) {
    r.op = IoRequest::Op::kRead;
    r.fd = fd;
    r.buf = static_cast<char*>(buf) + done;
    r.len = len - done;
    r.offset = offset + done;
    DS_RETURN_IF_ERROR(engine.Queue(&r));
    DS_ASSIGN_OR_RETURN(unsigned submitted, engine.Submit());
    (void)submitted;
    DS_ASSIGN_OR_RETURN(size_t n, engine.Reap(1, out));
    if (n != 1 || out[0] != &r) return Status(Code::kIOError, "engine returned a foreign request");
    if (r.result < 0) {
      if (r.result == -EINTR || r.result == -EAGAIN) continue;  // requeue
      return ErrnoStatus(r.result, "read at offset " + std::to_string(r.offset));
    }
    if (r.result == 0) break;               // EOF
    done += static_cast<size_t>(r.result);  // a short read is requeued for the rest
  }
  return done;
}

}  // namespace ds
