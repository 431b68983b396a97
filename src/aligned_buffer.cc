#include "src/aligned_buffer.h"

#include <cstdlib>
#include <new>

namespace ds {

AlignedBuffer::AlignedBuffer(size_t size, size_t align) : size_(size) {
  void* p = nullptr;
  if (::posix_memalign(&p, align, size ? size : align) != 0) throw std::bad_alloc();
  p_ = static_cast<char*>(p);
}

AlignedBuffer::~AlignedBuffer() { std::free(p_); }

AlignedBuffer& AlignedBuffer::operator=(AlignedBuffer&& o) noexcept {
  if (this != &o) {
    std::free(p_);
    p_ = std::exchange(o.p_, nullptr);
    size_ = std::exchange(o.size_, 0);
  }
  return *this;
}

}  // namespace ds
