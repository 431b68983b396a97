// Checksums used by every dspack format.
//
// CRC32C (Castagnoli, reflected polynomial 0x82F63B78, init/xorout 0xFFFFFFFF), the CRC of iSCSI,
// ext4, TFRecord and our native shards. On a CPU with AVX-512 VPCLMULQDQ, buffers of 256 bytes
// and more are folded 64 bytes per carry-less multiply; otherwise the SSE4.2 crc32 instruction
// runs three interleaved streams; without SSE4.2, a slicing-by-8 table. All give identical
// results (tested against RFC 3720 B.4 and against each other).
// Crc32cExtend(crc, data) continues a CRC: Crc32c(a+b) == Crc32cExtend(Crc32c(a), b).
//
// Xxh3Hasher: streaming XXH3-64 (seed 0) from libxxhash, used for whole-file hashes in
// manifests and for key hashes in the global index.
//
// Thread-safety: free functions are pure; a Xxh3Hasher object is single-threaded.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace ds {

uint32_t Crc32cExtend(uint32_t crc, const void* data, size_t n);
inline uint32_t Crc32c(const void* data, size_t n) { return Crc32cExtend(0, data, n); }
inline uint32_t Crc32c(std::string_view s) { return Crc32c(s.data(), s.size()); }
uint32_t Crc32cSoftwareExtend(uint32_t crc, const void* data, size_t n);  // for tests/benchmarks
bool Crc32cHardwareAvailable();
bool Crc32cFoldAvailable();  // the VPCLMULQDQ path
// Turns the VPCLMULQDQ path on or off for the whole process (tests and benchmarks compare the
// paths; not thread-safe against concurrent CRCs); returns the previous setting.
bool Crc32cUseFold(bool on);

// TFRecord's masking (see tensorflow/core/lib/hash/crc32c.h).
inline uint32_t MaskCrc(uint32_t crc) { return ((crc >> 15) | (crc << 17)) + 0xa282ead8u; }

uint64_t Xxh3_64(const void* data, size_t n);
inline uint64_t Xxh3_64(std::string_view s) { return Xxh3_64(s.data(), s.size()); }

class Xxh3Hasher {
 public:
  Xxh3Hasher();
  ~Xxh3Hasher();
  Xxh3Hasher(const Xxh3Hasher&) = delete;
  Xxh3Hasher& operator=(const Xxh3Hasher&) = delete;
  void Update(const void* data, size_t n);
  void Update(std::string_view s) { Update(s.data(), s.size()); }
  uint64_t Digest() const;
  void Reset();  // back to the empty input
  // Makes this hasher's state a copy of other's (to roll back a speculative update).
  void CopyFrom(const Xxh3Hasher& other);

 private:
  void* state_;  // XXH3_state_t*, kept opaque so xxhash.h stays out of our headers
};

// 16 lowercase hex digits, as stored in manifests.
std::string HexU64(uint64_t v);

}  // namespace ds
