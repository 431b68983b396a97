#include <immintrin.h>
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
// register byte, so Shift() costs four lookups. Built once, at every process's start: register
// bit b stands for x^(31-b), and one step of the register multiplies by x, so the image of bit
// 31 (8n steps) gives every other bit's image in 31 - b more steps. (Running all 32 bits 8n
// steps each took about 2 ms of every dspack process's start.)
struct ZerosOp {
  std::array<std::array<uint32_t, 256>, 4> t{};
  explicit ZerosOp(size_t n) {
    uint32_t col[32];
    uint32_t c = 1u << 31;
    for (size_t i = 0; i < n * 8; i++) c = (c & 1) ? (c >> 1) ^ kPoly : c >> 1;
    for (int b = 31; b >= 0; b--) {
      col[b] = c;
      c = (c & 1) ? (c >> 1) ^ kPoly : c >> 1;
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

// Folding by carry-less multiplication (Intel, "Fast CRC Computation for Generic Polynomials
// Using PCLMULQDQ", 2009), 64 bytes per VPCLMULQDQ: four 512-bit accumulators take 256 bytes a
// round, and the crc32 instruction finishes the last 16 bytes. CRC32C is linear, so a 128-bit
// lane A that lies D bits before lane B may be replaced by A.lo * x^(D+32) + A.hi * x^(D-32)
// (mod P, bit-reflected, shifted left by one) xored into B without changing the CRC: FoldK(D)
// holds those two constants, computed here from the polynomial rather than tabulated.
struct FoldK {
  uint64_t lo, hi;
};
uint64_t XPowModP(int e) {  // x^e mod P, reflected (x^0 is bit 31), then << 1
  uint32_t r = 0x80000000u;
  for (int i = 0; i < e; i++) r = (r & 1) ? (r >> 1) ^ kPoly : r >> 1;
  return uint64_t{r} << 1;
}
FoldK MakeFoldK(int d_bits) { return {XPowModP(d_bits + 32), XPowModP(d_bits - 32)}; }
const FoldK kFold2048 = MakeFoldK(2048), kFold1536 = MakeFoldK(1536), kFold1024 = MakeFoldK(1024),
            kFold512 = MakeFoldK(512), kFold384 = MakeFoldK(384), kFold256 = MakeFoldK(256),
            kFold128 = MakeFoldK(128);
constexpr size_t kFoldMin = 256;  // below this the crc32 instruction alone is as fast

// The maskz_ forms of broadcast and extract (all lanes selected) are the plain ones without
// _mm512_undefined_epi32, which GCC 12 reports as used uninitialized under -Werror.
#define DS_FOLD_TARGET __attribute__((target("avx512f,avx512vl,vpclmulqdq,pclmul,sse4.2")))

DS_FOLD_TARGET inline __m512i Load512(const uint8_t* q) { return _mm512_loadu_si512(q); }

DS_FOLD_TARGET inline __m512i Fold512(__m512i x, const FoldK& k, __m512i next) {
  __m512i kk = _mm512_maskz_broadcast_i32x4(
      0xFFFF, _mm_set_epi64x(static_cast<long long>(k.hi), static_cast<long long>(k.lo)));
  return _mm512_ternarylogic_epi64(_mm512_clmulepi64_epi128(x, kk, 0x00),
                                   _mm512_clmulepi64_epi128(x, kk, 0x11), next, 0x96);
}

DS_FOLD_TARGET inline __m128i Fold128(__m128i x, const FoldK& k, __m128i next) {
  __m128i kk = _mm_set_epi64x(static_cast<long long>(k.hi), static_cast<long long>(k.lo));
  return _mm_ternarylogic_epi64(_mm_clmulepi64_si128(x, kk, 0x00),
                                _mm_clmulepi64_si128(x, kk, 0x11), next, 0x96);
}

// The raw register c after the longest prefix of [p, p + n) that is a multiple of 64 bytes;
// advances p and n past it. REQUIRES: n >= kFoldMin.
DS_FOLD_TARGET uint64_t FoldExtend(uint64_t c, const uint8_t*& p, size_t& n) {
  __m512i init =
      _mm512_inserti32x4(_mm512_setzero_si512(), _mm_cvtsi32_si128(static_cast<int>(c)), 0);
  __m512i x0 = _mm512_xor_si512(Load512(p), init), x1 = Load512(p + 64), x2 = Load512(p + 128),
          x3 = Load512(p + 192);
  p += 256;
  n -= 256;
  while (n >= 256) {
    x0 = Fold512(x0, kFold2048, Load512(p));
    x1 = Fold512(x1, kFold2048, Load512(p + 64));
    x2 = Fold512(x2, kFold2048, Load512(p + 128));
    x3 = Fold512(x3, kFold2048, Load512(p + 192));
    p += 256;
    n -= 256;
  }
  __m512i x = Fold512(x0, kFold1536, Fold512(x1, kFold1024, Fold512(x2, kFold512, x3)));
  while (n >= 64) {
    x = Fold512(x, kFold512, Load512(p));
    p += 64;
    n -= 64;
  }
  __m128i r = Fold128(_mm512_maskz_extracti32x4_epi32(0xF, x, 0), kFold384,
                      Fold128(_mm512_maskz_extracti32x4_epi32(0xF, x, 1), kFold256,
                              Fold128(_mm512_maskz_extracti32x4_epi32(0xF, x, 2), kFold128,
                                      _mm512_maskz_extracti32x4_epi32(0xF, x, 3))));
  uint64_t out = _mm_crc32_u64(0, static_cast<uint64_t>(_mm_cvtsi128_si64(r)));
  return _mm_crc32_u64(out, static_cast<uint64_t>(_mm_extract_epi64(r, 1)));
}

const bool kHaveFold = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
                       __builtin_cpu_supports("vpclmulqdq") && __builtin_cpu_supports("pclmul") &&
                       __builtin_cpu_supports("sse4.2");
bool g_fold_enabled = kHaveFold;

__attribute__((target("sse4.2"))) uint32_t HwExtend(uint32_t crc, const uint8_t* p, size_t n) {
  uint64_t c = ~crc;
  while (n > 0 && (reinterpret_cast<uintptr_t>(p) & 7) != 0) {
    c = __builtin_ia32_crc32qi(static_cast<uint32_t>(c), *p++);
    n--;
  }
  if (g_fold_enabled && n >= kFoldMin) c = FoldExtend(c, p, n);
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

bool Crc32cFoldAvailable() { return kHaveHw && kHaveFold; }

bool Crc32cUseFold(bool on) {
  bool was = g_fold_enabled;
  g_fold_enabled = on && kHaveFold;
  return was;
}

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
