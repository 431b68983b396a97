// FileWriter: appends to a file through an aligned user-space buffer, with positional writes,
// over any storage backend's RandomWriteFile (src/storage.h). O_DIRECT and writeback hints need a
// local fd (file->fd() >= 0); elsewhere the writer stays buffered and writes through WriteAt.
//
// Modes:
//   buffered (default)  writes go through the page cache; EnableWriteback() starts kernel
//                       writeback of each written range at once (sync_file_range WRITE, as
//                       RocksDB's bytes_per_sync) so dirty pages never pile up before fsync.
//   direct              EnableDirect() switches the fd to O_DIRECT when the file system allows
//                       it (not tmpfs): whole 4 KiB blocks go straight to the device, skipping the
//                       page-cache copy (measured: docs/benchmarks.md) and leaving the reader's
//                       cache alone. The unaligned tail is written at Close() without O_DIRECT.
// In direct mode a full buffer is written by a background thread while the caller fills a second
// one (double buffering), so device time overlaps CPU work; a write error surfaces at the next
// Append/Flush/TruncateTo/Close.
// TruncateTo() drops everything after `size` (to cancel a record in progress).
// The owner must call Close() to learn whether the last writes and the fsync succeeded.
// Not thread-safe.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>

#include "src/aligned_buffer.h"
#include "src/status.h"
#include "src/storage.h"

namespace ds {

class FileWriter {
 public:
  static constexpr size_t kDefaultBuffer = 4 << 20;
  static constexpr size_t kBlock = 4096;

  // REQUIRES: buffer_size is a multiple of kBlock; file is not null.
  explicit FileWriter(std::unique_ptr<RandomWriteFile> file, size_t buffer_size = kDefaultBuffer);
  FileWriter(FileWriter&&) noexcept;
  FileWriter& operator=(FileWriter&&) noexcept;
  ~FileWriter();

  // Returns whether O_DIRECT is now on (false: the file system refused, or the file is not
  // local; stays buffered).
  bool EnableDirect();
  void EnableWriteback() { writeback_ = true; }

  Status Append(std::string_view data);
  Status AppendZeros(uint64_t n);
  // Hands buffered bytes to the kernel (in direct mode, whole blocks only).
  Status Flush();
  // Drops everything after `size`. REQUIRES: size <= this->size().
  Status TruncateTo(uint64_t size);
  // Writes the rest, fsyncs if `sync`, closes. The writer is unusable afterwards.
  Status Close(bool sync);

  uint64_t size() const { return base_ + len_; }
  const std::string& name() const { return file_->name(); }
  bool direct() const { return direct_; }

 private:
  struct Async;               // background writer for direct mode
  Status WriteOut(size_t n);  // writes buf_[0, n) at base_, shifts the rest down
  Status Drain();             // waits for the background write; returns its status

  std::unique_ptr<RandomWriteFile> file_;
  AlignedBuffer buf_;
  size_t cap_;
  size_t len_ = 0;
  uint64_t base_ = 0;  // file offset of buf_[0]
  bool direct_ = false;
  bool writeback_ = false;
  std::unique_ptr<Async> async_;
};

}  // namespace ds
