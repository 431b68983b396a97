#include <xxhash.h>

#include <array>
#include <cstdio>
#include <cstring>

#include "src/checksum.h"

namespace ds {
namespace {

constexpr uint32_t kPoly = 0x82F63B78u;

struct Tables {
  std::array<std::array<uint32_t, 256>, 8> t{};
  constexpr Tables() {
    for (uint32_t i = 0; i < 256; i++) {
      uint32_t c = i;
      for (int k = 0; k < 8; k++) c = (c & 1) ? (c >> 1) ^ kPoly : c >> 1;
      t[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; i++) {
      for (int s = 1; s < 8; s++) t[s][i] = (t[s - 1][i] >> 8) ^ t[0][t[s - 1][i] & 0xff];
    }
  }
};
constexpr Tables kTables;

// Appending n zero bytes to a raw CRC register is linear over GF(2): ZerosOp(n) tabulates it per
// register byte, so Shift() costs four lookups. Built once by running the register bit by bit.
struct ZerosOp {
  std::array<std::array<uint32_t, 256>, 4> t{};
  explicit ZerosOp(size_t n) {
    uint32_t col[32];
    for (int b = 0; b < 32; b++) {
      uint32_t c = 1u << b;
      for (size_t i = 0; i < n * 8; i++) c = (c & 1) ? (c >> 1) ^ kPoly : c >> 1;
      col[b] = c;
    }
    for (int k = 0; k < 4; k++) {
      for (uint32_t v = 0; v < 256; v++) {
        uint32_t r = 0;
        for (int b = 0; b < 8; b++) {
          if (v & (1u << b)) r ^= col[8 * k + b];
        }
        t[k][v] = r;
      }
    }
  }
  uint32_t Shift(uint32_t c) const {
    return t[0][c & 0xff] ^ t[1][(c >> 8) & 0xff] ^ t[2][(c >> 16) & 0xff] ^ t[3][c >> 24];
  }
};

// The crc32 instruction has a latency of 3 cycles and a throughput of 1: three independent
// streams over adjacent blocks keep it busy, and the block CRCs are combined by shifting (Mark
// Adler's crc32c.c, the scheme of Intel's crc_pcl). About 3x one stream on large buffers.
constexpr size_t kLong = 8192, kShort = 256;
const ZerosOp kLongOp(kLong), kShortOp(kShort);

__attribute__((target("sse4.2"))) inline uint64_t Hw8(uint64_t c, const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return __builtin_ia32_crc32di(c, v);
}

template <size_t kBlock>
__attribute__((target("sse4.2"))) uint64_t HwThreeWay(uint64_t c0, const uint8_t*& p, size_t& n,
                                                      const ZerosOp& op) {
  while (n >= 3 * kBlock) {
    uint64_t c1 = 0, c2 = 0;
    const uint8_t* end = p + kBlock;
    do {
      c0 = Hw8(c0, p);
      c1 = Hw8(c1, p + kBlock);
      c2 = Hw8(c2, p + 2 * kBlock);
      p += 8;
    } while (p < end);
    c0 = op.Shift(static_cast<uint32_t>(c0)) ^ c1;
    c0 = op.Shift(static_cast<uint32_t>(c0)) ^ c2;
    p += 2 * kBlock;
    n -= 3 * kBlock;
  }
  return c0;
}

__attribute__((target("sse4.2"))) uint32_t HwExtend(uint32_t crc, const uint8_t* p, size_t n) {
  uint64_t c = ~crc;
  while (n > 0 && (reinterpret_cast<uintptr_t>(p) & 7) != 0) {
    c = __builtin_ia32_crc32qi(static_cast<uint32_t>(c), *p++);
    n--;
  }
  c = HwThreeWay<kLong>(c, p, n, kLongOp);
  c = HwThreeWay<kShort>(c, p, n, kShortOp);
  while (n >= 8) {
    c = Hw8(c, p);
    p += 8;
    n -= 8;
  }
  while (n > 0) {
    c = __builtin_ia32_crc32qi(static_cast<uint32_t>(c), *p++);
    n--;
  }
  return ~static_cast<uint32_t>(c);
}

const bool kHaveHw = __builtin_cpu_supports("sse4.2");

}  // namespace

uint32_t Crc32cSoftwareExtend(uint32_t crc, const void* data, size_t n) {
  const auto* p = static_cast<const uint8_t*>(data);
  uint32_t c = ~crc;
  const auto& t = kTables.t;
  while (n >= 8) {
    uint32_t lo;
    uint32_t hi;
    std::memcpy(&lo, p, 4);  // little-endian host (x86_64)
    std::memcpy(&hi, p + 4, 4);
    lo ^= c;
    c = t[7][lo & 0xff] ^ t[6][(lo >> 8) & 0xff] ^ t[5][(lo >> 16) & 0xff] ^ t[4][lo >> 24] ^
        t[3][hi & 0xff] ^ t[2][(hi >> 8) & 0xff] ^ t[1][(hi >> 16) & 0xff] ^ t[0][hi >> 24];
    p += 8;
    n -= 8;
  }
  while (n-- > 0) c = (c >> 8) ^ t[0][(c ^ *p++) & 0xff];
  return ~c;
}

bool Crc32cHardwareAvailable() { return kHaveHw; }

uint32_t Crc32cExtend(uint32_t crc, const void* data, size_t n) {
  if (kHaveHw) return HwExtend(crc, static_cast<const uint8_t*>(data), n);
  return Crc32cSoftwareExtend(crc, data, n);
}

uint64_t Xxh3_64(const void* data, size_t n) { return XXH3_64bits(data, n); }

Xxh3Hasher::Xxh3Hasher() : state_(XXH3_createState()) {
  XXH3_64bits_reset(static_cast<XXH3_state_t*>(state_));
}
Xxh3Hasher::~Xxh3Hasher() { XXH3_freeState(static_cast<XXH3_state_t*>(state_)); }
void Xxh3Hasher::Update(const void* data, size_t n) {
  XXH3_64bits_update(static_cast<XXH3_state_t*>(state_), data, n);
}
uint64_t Xxh3Hasher::Digest() const {
  return XXH3_64bits_digest(static_cast<XXH3_state_t*>(state_));
}

void Xxh3Hasher::Reset() { XXH3_64bits_reset(static_cast<XXH3_state_t*>(state_)); }

void Xxh3Hasher::CopyFrom(const Xxh3Hasher& other) {
  XXH3_copyState(static_cast<XXH3_state_t*>(state_),
                 static_cast<const XXH3_state_t*>(other.state_));
}

std::string HexU64(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

}  // namespace ds
