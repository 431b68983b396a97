// MD5 (RFC 1321), for fio's verify=md5 in `dsbench io` (bench/io/io_verify.h). Not for security:
// a checksum fio users already know. Checked against the RFC's test suite (tests/core).
//
// Thread-safety: an Md5 object is single-threaded; Md5Of is pure.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace ds {

class Md5 {
 public:
  Md5();
  void Update(const void* data, size_t n);
  void Update(std::string_view s) { Update(s.data(), s.size()); }
  std::array<uint8_t, 16> Digest();  // ends the hash; Update after it is not allowed

 private:
  void Block(const uint8_t* p);
  uint32_t a_, b_, c_, d_;
  uint64_t bytes_ = 0;
  uint8_t buf_[64];
  size_t buffered_ = 0;
};

std::array<uint8_t, 16> Md5Of(const void* data, size_t n);
std::string Md5Hex(std::string_view s);  // 32 lowercase hex digits

}  // namespace ds
