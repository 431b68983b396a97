#include "src/file_writer.h"

#include <fcntl.h>
#include <fmt/format.h>
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

  void Run(RandomWriteFile* file) {
    std::unique_lock<std::mutex> lock(mu);
    for (;;) {
      cv.wait(lock, [&] { return busy || quit; });
      if (!busy) return;
      lock.unlock();
      Status s = file->WriteAt(off, buf.data(), len);
      lock.lock();
      if (status.ok()) status = s;
      busy = false;
      cv.notify_all();
    }
  }
};

FileWriter::FileWriter(std::unique_ptr<RandomWriteFile> file, size_t buffer_size)
    : file_(std::move(file)), cap_(buffer_size) {
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
  if (base_ % kBlock != 0 || direct_ || file_->fd() < 0) return direct_;
  int flags = ::fcntl(file_->fd(), F_GETFL);
  if (flags >= 0 && ::fcntl(file_->fd(), F_SETFL, flags | O_DIRECT) == 0) direct_ = true;
  if (direct_) {
    // Installed only once its thread runs, so the destructor never joins a thread that never
    // started (std::thread's constructor can throw).
    auto a = std::make_unique<Async>();
    a->buf = AlignedBuffer(cap_, kBlock);
    a->thread = std::thread([p = a.get(), f = file_.get()] { p->Run(f); });
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
  DS_RETURN_IF_ERROR(file_->WriteAt(base_, buf_.data(), n));
  if (writeback_ && !direct_ && file_->fd() >= 0) {
    ::sync_file_range(file_->fd(), static_cast<off_t>(base_), static_cast<off_t>(n),
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
    DS_ASSIGN_OR_RETURN(size_t got, file_->ReadSome(new_base, buf_.data(), kBlock));
    if (got < keep) {
      return Status(Code::kIOError, fmt::format("{}: reread at offset {}: {} of {} bytes", name(),
                                                new_base, got, keep));
    }
  }
  DS_RETURN_IF_ERROR(file_->Truncate(size));
  base_ = new_base;
  len_ = keep;
  return Status::Ok();
}

Status FileWriter::Close(bool sync) {
  Status s = Flush();
  if (s.ok()) s = Drain();
  if (s.ok() && len_ > 0) {  // direct mode: the unaligned tail goes through the page cache
    int flags = ::fcntl(file_->fd(), F_GETFL);
    direct_ = false;
    if (flags < 0 || ::fcntl(file_->fd(), F_SETFL, flags & ~O_DIRECT) != 0) {
      s = Status::FromErrno(errno, name() + ": fcntl");
    } else {
      s = WriteOut(len_);
    }
  }
  if (s.ok() && sync) s = file_->Sync();
  Status closed = file_->Close();
  return s.ok() ? closed : s;
}

}  // namespace ds
