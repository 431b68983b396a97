#include "bench/io/io_verify.h"

#include <fmt/format.h>

#include <cstring>

#include "src/checksum.h"
#include "src/endian.h"
#include "src/fd.h"
#include "src/md5.h"
#include "src/random.h"

namespace ds::bench {

namespace {

constexpr size_t kSumAt = 24, kSumLen = 16;

// The checksum of bytes [0, kSumAt) and [kVerifyHeader, len), into out (kSumLen bytes).
void Sum(VerifyKind kind, const char* buf, size_t len, uint8_t* out) {
  std::memset(out, 0, kSumLen);
  if (kind == VerifyKind::kCrc32c) {
    uint32_t c = Crc32cExtend(Crc32c(buf, kSumAt), buf + kVerifyHeader, len - kVerifyHeader);
    std::memcpy(out, &c, 4);  // host order is little-endian on every target we build for
    return;
  }
  Md5 m;
  m.Update(buf, kSumAt);
  m.Update(buf + kVerifyHeader, len - kVerifyHeader);
  auto d = m.Digest();
  std::memcpy(out, d.data(), d.size());
}

std::string Hex(const char* p, size_t n) {
  std::string s;
  for (size_t i = 0; i < n; i++) s += fmt::format("{:02x}", static_cast<uint8_t>(p[i]));
  return s;
}

}  // namespace

Result<VerifyKind> ParseVerify(const std::string& text) {
  if (text == "crc32c" || text == "crc32c-intel") return VerifyKind::kCrc32c;
  if (text == "md5") return VerifyKind::kMd5;
  if (text == "0" || text == "null" || text.empty()) return VerifyKind::kNone;
  return Status(
      Code::kInvalidArgument,
      fmt::format("verify={}: choose crc32c or md5 (fio's others are not supported)", text));
}

const char* VerifyName(VerifyKind k) {
  return k == VerifyKind::kMd5 ? "md5" : k == VerifyKind::kCrc32c ? "crc32c" : "0";
}

void FillVerifiable(VerifyKind kind, uint64_t seed, uint64_t offset, char* buf, size_t len) {
  Rng(seed, offset).Fill(buf + kVerifyHeader, len - kVerifyHeader);
  StoreLE32(buf, kVerifyMagic);
  StoreLE32(buf + 4, kVerifyHeader);
  StoreLE64(buf + 8, offset);
  StoreLE32(buf + 16, static_cast<uint32_t>(len));
  StoreLE32(buf + 20, kind == VerifyKind::kMd5 ? 2 : 1);
  Sum(kind, buf, len, reinterpret_cast<uint8_t*>(buf + kSumAt));
}

Status CheckVerifiable(VerifyKind kind, uint64_t offset, const char* buf, size_t len,
                       std::string_view file) {
  auto bad = [&](std::string what) {
    return Status(Code::kCorruption, fmt::format("{}: verify ({}) of the block at offset {}: {}",
                                                 file, VerifyName(kind), offset, what));
  };
  if (LoadLE32(buf) != kVerifyMagic) {
    return bad(fmt::format("bad magic {:08x} (want {:08x}): not what this job wrote", LoadLE32(buf),
                           kVerifyMagic));
  }
  if (LoadLE64(buf + 8) != offset) {
    return bad(fmt::format("the header says offset {}: a misdirected write", LoadLE64(buf + 8)));
  }
  if (LoadLE32(buf + 16) != len || LoadLE32(buf + 4) != kVerifyHeader) {
    return bad(fmt::format("the header says {} bytes", LoadLE32(buf + 16)));
  }
  uint8_t want[kSumLen];
  Sum(kind, buf, len, want);
  if (std::memcmp(want, buf + kSumAt, kSumLen) != 0) {
    size_t n = kind == VerifyKind::kMd5 ? 16 : 4;
    return bad(fmt::format("checksum {} but the bytes give {}", Hex(buf + kSumAt, n),
                           Hex(reinterpret_cast<const char*>(want), n)));
  }
  return Status::Ok();
}

Status VerifyWritten(VerifyKind kind, int fd, uint64_t base, const WrittenBlocks& written,
                     char* buf, std::string_view file, VerifyResult* result) {
  Status first = Status::Ok();
  const uint64_t bs = written.bs();
  const auto& marks = written.marks();
  for (uint64_t b = 0; b < marks.size(); b++) {
    if (!marks[b]) continue;
    uint64_t off = base + b * bs;
    DS_RETURN_IF_ERROR(ReadFullAt(fd, buf, bs, off, file));
    result->blocks++;
    Status s = CheckVerifiable(kind, off, buf, bs, file);
    if (!s.ok()) {
      result->bad++;
      if (first.ok()) first = s;
    }
  }
  if (result->bad > 1) {
    return Status(Code::kCorruption, fmt::format("{} (and {} more of the {} blocks read back)",
                                                 first.message(), result->bad - 1, result->blocks));
  }
  return first;
}

}  // namespace ds::bench
