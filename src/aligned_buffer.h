// AlignedBuffer: the one owner of a block-aligned heap buffer, for O_DIRECT IO (buffer address,
// length and offset aligned to the device's logical block size) and io_uring fixed buffers.
// Move-only; not zero-filled; an allocation that fails throws std::bad_alloc (caught only in a
// main), never a null buffer. A default-constructed or moved-from buffer is empty (data() null).
#pragma once

#include <cstddef>
#include <utility>

namespace ds {

inline constexpr size_t kDirectAlign = 4096;  // the logical block size O_DIRECT needs at most here

class AlignedBuffer {
 public:
  AlignedBuffer() = default;
  explicit AlignedBuffer(size_t size, size_t align = kDirectAlign);
  ~AlignedBuffer();
  AlignedBuffer(AlignedBuffer&& o) noexcept
      : p_(std::exchange(o.p_, nullptr)), size_(std::exchange(o.size_, 0)) {}
  AlignedBuffer& operator=(AlignedBuffer&& o) noexcept;
  AlignedBuffer(const AlignedBuffer&) = delete;
  AlignedBuffer& operator=(const AlignedBuffer&) = delete;
  char* data() { return p_; }
  const char* data() const { return p_; }
  size_t size() const { return size_; }

 private:
  char* p_ = nullptr;
  size_t size_ = 0;
};

}  // namespace ds
