// Checksums used by every dspack format.
//
// CRC32C (Castagnoli, reflected polynomial 0x82F63B78, init/xorout 0xFFFFFFFF), the CRC of iSCSI,
// ext4, TFRecord and our native shards. Uses the SSE4.2 crc32 instruction when the CPU has it,
// otherwise a slicing-by-8 table; both give identical results (tested against RFC 3720 B.4).
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
