#include "src/file_writer.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <new>
#include <thread>

namespace ds {

struct FileWriter::Async {
  std::mutex mu;
  std::condition_variable cv;
  AlignedBuffer buf;  // the buffer being written (or free when !busy)
  size_t len = 0;
  uint64_t off = 0;
  bool busy = false;
  bool quit = false;
  Status status;
  std::thread thread;

  void Run(int fd, const std::string& name) {
    std::unique_lock<std::mutex> lock(mu);
    for (;;) {
      cv.wait(lock, [&] { return busy || quit; });
      if (!busy) return;
      lock.unlock();
      Status s = WriteFullAt(fd, buf.data(), len, off, name);
      lock.lock();
      if (status.ok()) status = s;
      busy = false;
      cv.notify_all();
    }
  }
};

FileWriter::FileWriter(OwnedFd fd, std::string name, size_t buffer_size)
    : fd_(std::move(fd)), name_(std::move(name)), cap_(buffer_size) {
  buf_ = AlignedBuffer(cap_, kBlock);
}

FileWriter::FileWriter(FileWriter&&) noexcept = default;
FileWriter& FileWriter::operator=(FileWriter&&) noexcept = default;

FileWriter::~FileWriter() {
  if (async_) {
    {
      std::lock_guard<std::mutex> lock(async_->mu);
      async_->quit = true;
    }
    async_->cv.notify_all();
    async_->thread.join();
  }
}

bool FileWriter::EnableDirect() {
  if (base_ % kBlock != 0 || direct_) return direct_;
  int flags = ::fcntl(fd_.get(), F_GETFL);
  if (flags >= 0 && ::fcntl(fd_.get(), F_SETFL, flags | O_DIRECT) == 0) direct_ = true;
  if (direct_) {
    // Installed only once its thread runs, so the destructor never joins a thread that never
    // started (std::thread's constructor can throw).
    auto a = std::make_unique<Async>();
    a->buf = AlignedBuffer(cap_, kBlock);
    a->thread = std::thread([p = a.get(), fd = fd_.get(), n = name_] { p->Run(fd, n); });
    async_ = std::move(a);
  }
  return direct_;
}

Status FileWriter::Drain() {
  if (!async_) return Status::Ok();
  std::unique_lock<std::mutex> lock(async_->mu);
  async_->cv.wait(lock, [&] { return !async_->busy; });
  return async_->status;
}

Status FileWriter::WriteOut(size_t n) {
  if (n == 0) return Drain();
  if (async_ && direct_) {
    // Hand the filled buffer to the background thread; keep filling the other one.
    DS_RETURN_IF_ERROR(Drain());
    AlignedBuffer next = std::move(async_->buf);
    std::memcpy(next.data(), buf_.data() + n, len_ - n);
    {
      std::lock_guard<std::mutex> lock(async_->mu);
      async_->buf = std::move(buf_);
      async_->len = n;
      async_->off = base_;
      async_->busy = true;
    }
    async_->cv.notify_all();
    buf_ = std::move(next);
    len_ -= n;
    base_ += n;
    return Status::Ok();
  }
  DS_RETURN_IF_ERROR(WriteFullAt(fd_.get(), buf_.data(), n, base_, name_));
  if (writeback_ && !direct_) {
    ::sync_file_range(fd_.get(), static_cast<off_t>(base_), static_cast<off_t>(n),
                      SYNC_FILE_RANGE_WRITE);
  }
  std::memmove(buf_.data(), buf_.data() + n, len_ - n);
  len_ -= n;
  base_ += n;
  return Status::Ok();
}

Status FileWriter::Append(std::string_view data) {
  while (!data.empty()) {
    if (len_ == cap_) DS_RETURN_IF_ERROR(Flush());
    size_t k = std::min(data.size(), cap_ - len_);
    std::memcpy(buf_.data() + len_, data.data(), k);
    len_ += k;
    data.remove_prefix(k);
  }
  return Status::Ok();
}

Status FileWriter::AppendZeros(uint64_t n) {
  while (n > 0) {
    if (len_ == cap_) DS_RETURN_IF_ERROR(Flush());
    size_t k = static_cast<size_t>(std::min<uint64_t>(n, cap_ - len_));
    std::memset(buf_.data() + len_, 0, k);
    len_ += k;
    n -= k;
  }
  return Status::Ok();
}

Status FileWriter::Flush() { return WriteOut(direct_ ? len_ / kBlock * kBlock : len_); }

Status FileWriter::TruncateTo(uint64_t size) {
  DS_RETURN_IF_ERROR(Drain());
  if (size >= base_) {
    len_ = static_cast<size_t>(size - base_);
    return Status::Ok();
  }
  // The cut falls in bytes already written: reload the block it falls in (direct mode keeps
  // base_ block-aligned), then cut the file there.
  uint64_t new_base = direct_ ? size / kBlock * kBlock : size;
  size_t keep = static_cast<size_t>(size - new_base);
  if (keep > 0) {
    ssize_t r = ::pread(fd_.get(), buf_.data(), kBlock, static_cast<off_t>(new_base));
    if (r < static_cast<ssize_t>(keep))
      return Status::FromErrno(r < 0 ? errno : EIO, name_ + ": reread");
  }
  if (::ftruncate(fd_.get(), static_cast<off_t>(size)) != 0) {
    return Status::FromErrno(errno, name_ + ": ftruncate");
  }
  base_ = new_base;
  len_ = keep;
  return Status::Ok();
}

Status FileWriter::Close(bool sync) {
  Status s = Flush();
  if (s.ok()) s = Drain();
  if (s.ok() && len_ > 0) {  // direct mode: the unaligned tail goes through the page cache
    int flags = ::fcntl(fd_.get(), F_GETFL);
    direct_ = false;
    if (flags < 0 || ::fcntl(fd_.get(), F_SETFL, flags & ~O_DIRECT) != 0) {
      s = Status::FromErrno(errno, name_ + ": fcntl");
    } else {
      s = WriteOut(len_);
    }
  }
  if (s.ok() && sync && ::fsync(fd_.get()) != 0) s = Status::FromErrno(errno, name_ + ": fsync");
  int fd = fd_.release();
  if (fd >= 0 && ::close(fd) != 0 && s.ok()) s = Status::FromErrno(errno, name_ + ": close");
  return s;
}

}  // namespace ds
