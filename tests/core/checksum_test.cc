#include "src/checksum.h"

#include <catch2/catch.hpp>
#include <string>

#include "src/md5.h"
#include "src/random.h"

using namespace ds;

TEST_CASE("crc32c matches RFC 3720 B.4 vectors", "[core]") {
  std::string zeros(32, '\0'), ones(32, '\xff'), inc(32, '\0'), dec(32, '\0');
  for (int i = 0; i < 32; i++) {
    inc[i] = static_cast<char>(i);
    dec[i] = static_cast<char>(31 - i);
  }
  for (auto fn :
       {+[](std::string_view s) { return Crc32c(s); },
        +[](std::string_view s) { return Crc32cSoftwareExtend(0, s.data(), s.size()); }}) {
    CHECK(fn(zeros) == 0x8a9136aau);
    CHECK(fn(ones) == 0x62a8ab43u);
    CHECK(fn(inc) == 0x46dd794eu);
    CHECK(fn(dec) == 0x113fdb5cu);
    CHECK(fn("123456789") == 0xe3069283u);
  }
}

TEST_CASE("crc32c hardware and software agree on every length and alignment", "[core]") {
  Rng rng(7);
  std::string buf(100000 + 16, '\0');
  rng.Fill(buf.data(), buf.size());
  // Past 768 and 24576 bytes the crc32 path runs three interleaved streams; from 256 bytes the
  // VPCLMULQDQ path folds 256 bytes a round, then 64, then finishes with the crc32 instruction.
  bool fold = Crc32cFoldAvailable();
  INFO("VPCLMULQDQ path available: " << fold);
  for (bool use_fold : {false, true}) {
    bool was = Crc32cUseFold(use_fold);
    for (size_t off = 0; off < 9; off++) {
      for (size_t len : {0,    1,    7,    8,     9,     63,    64,    65,    255,   256,
                         257,  319,  320,  383,   511,   512,   513,   767,   768,   769,
                         1000, 1087, 4096, 24575, 24576, 24577, 25000, 49160, 100000}) {
        CAPTURE(use_fold, off, len);
        CHECK(Crc32c(buf.data() + off, len) == Crc32cSoftwareExtend(0, buf.data() + off, len));
        uint32_t seed = 0x12345678u + static_cast<uint32_t>(len);  // a running CRC continues
        CHECK(Crc32cExtend(seed, buf.data() + off, len) ==
              Crc32cSoftwareExtend(seed, buf.data() + off, len));
      }
    }
    Crc32cUseFold(was);
  }
}

TEST_CASE("crc32c extends across pieces", "[core]") {
  std::string s = "the quick brown fox jumps over the lazy dog";
  for (size_t cut = 0; cut <= s.size(); cut++) {
    uint32_t c = Crc32cExtend(Crc32c(s.data(), cut), s.data() + cut, s.size() - cut);
    CHECK(c == Crc32c(s));
  }
}

TEST_CASE("tfrecord crc masking", "[core]") {
  // masked(crc) = ((crc >> 15) | (crc << 17)) + 0xa282ead8
  CHECK(MaskCrc(0) == 0xa282ead8u);
  CHECK(MaskCrc(0x8a9136aau) == (((0x8a9136aau >> 15) | (0x8a9136aau << 17)) + 0xa282ead8u));
}

TEST_CASE("xxh3 streaming equals one-shot and copies roll back", "[core]") {
  std::string s(100000, 'x');
  Rng(3).Fill(s.data(), s.size());
  Xxh3Hasher h;
  h.Update(s.substr(0, 333));
  Xxh3Hasher saved;
  saved.CopyFrom(h);
  h.Update("garbage that will be rolled back");
  h.CopyFrom(saved);
  h.Update(s.substr(333));
  CHECK(h.Digest() == Xxh3_64(s));
  CHECK(HexU64(0x1234) == "0000000000001234");
}

TEST_CASE("rng is deterministic and Below is in range", "[core]") {
  Rng a(42), b(42), c(43);
  CHECK(a.Next() == b.Next());
  CHECK(a.Next() != c.Next());
  Rng r(1);
  for (uint64_t n : {1ull, 2ull, 3ull, 1000ull, (1ull << 63) + 5}) {
    for (int i = 0; i < 100; i++) CHECK(r.Below(n) < n);
  }
  // Golden value: the permutation of --shuffle-seed must never change between builds.
  CHECK(Rng(0).Next() == 0x99EC5F36CB75F2B4ull);
}

TEST_CASE("md5 gives RFC 1321's test suite digests, fed whole or in pieces", "[core]") {
  // RFC 1321, appendix A.5.
  const std::pair<const char*, const char*> kSuite[] = {
      {"", "d41d8cd98f00b204e9800998ecf8427e"},
      {"a", "0cc175b9c0f1b6a831c399e269772661"},
      {"abc", "900150983cd24fb0d6963f7d28e17f72"},
      {"message digest", "f96b697d7cb7938d525a2f31aaf161d0"},
      {"abcdefghijklmnopqrstuvwxyz", "c3fcd3d76192e4007dfb496cca67e13b"},
      {"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789",
       "d174ab98d277d9f5a5611c2c9f419d9f"},
      {"12345678901234567890123456789012345678901234567890123456789012345678901234567890",
       "57edf4a22be3c955ac49da2e2107b67a"}};
  for (const auto& [text, hex] : kSuite) {
    INFO(text);
    CHECK(Md5Hex(text) == hex);
    Md5 m;  // the same bytes in pieces of 1, 2, 3, ... straddling the 64-byte blocks
    std::string_view s = text;
    for (size_t at = 0, k = 1; at < s.size(); at += k, k++) m.Update(s.substr(at, k));
    auto d = m.Digest();
    CHECK(d == Md5Of(text, s.size()));
  }
}
