#include "formats/native/native_format.h"

#include <fmt/format.h>

#include <cstring>
#include <unordered_set>

#include "src/checksum.h"
#include "src/endian.h"
#include "src/human.h"

namespace ds::native {

std::string EncodeShardHeader(const ShardHeader& h) {
  std::string out(kShardHeaderSize, '\0');
  auto* p = reinterpret_cast<uint8_t*>(out.data());
  std::memcpy(p, kShardMagic, 8);
  StoreLE32(p + 8, h.version);
  StoreLE32(p + 12, h.align);
  StoreLE64(p + 16, h.shard_number);
  StoreLE64(p + 24, h.first_sample);
  StoreLE32(p + 60, Crc32c(p, 60));
  return out;
}

Result<ShardHeader> DecodeShardHeader(const uint8_t* p, std::string_view what) {
  if (std::memcmp(p, kShardMagic, 8) != 0) {
    return Status(Code::kCorruption, fmt::format("{}: offset 0: bad shard magic (not a dspack "
                                                 "shard, or its header is damaged)",
                                                 what));
  }
  if (LoadLE32(p + 60) != Crc32c(p, 60)) {
    return Status(Code::kCorruption,
                  fmt::format("{}: offset 0: shard header checksum mismatch", what));
  }
  ShardHeader h;
  h.version = LoadLE32(p + 8);
  h.align = LoadLE32(p + 12);
  h.shard_number = LoadLE64(p + 16);
  h.first_sample = LoadLE64(p + 24);
  if (h.version != kFormatVersion) {
    return Status(Code::kUnsupported, fmt::format("{}: shard format version {} (this dspack reads "
                                                  "version {}); upgrade dspack",
                                                  what, h.version, kFormatVersion));
  }
  if (h.align == 0 || h.align > kMaxAlign || (h.align & (h.align - 1)) != 0) {
    return Status(Code::kCorruption, fmt::format("{}: offset 12: invalid align {}", what, h.align));
  }
  for (int i = 32; i < 60; i++) {
    if (p[i] != 0) {
      return Status(Code::kCorruption,
                    fmt::format("{}: offset {}: reserved header byte is not zero", what, i));
    }
  }
  return h;
}

std::string EncodeFooter(const Footer& f) {
  std::string out(kFooterSize, '\0');
  auto* p = reinterpret_cast<uint8_t*>(out.data());
  StoreLE64(p, f.index_offset);
  StoreLE64(p + 8, f.record_count);
  StoreLE32(p + 16, f.index_crc);
  StoreLE32(p + 20, Crc32c(p, 20));
  std::memcpy(p + 24, kFooterMagic, 8);
  return out;
}

Result<Footer> DecodeFooter(const uint8_t* p, std::string_view what) {
  if (std::memcmp(p + 24, kFooterMagic, 8) != 0 || LoadLE32(p + 20) != Crc32c(p, 20)) {
    return Status(Code::kCorruption,
                  fmt::format("{}: footer damaged (bad magic or checksum in the last {} bytes); "
                              "the shard is truncated or corrupt",
                              what, kFooterSize));
  }
  Footer f;
  f.index_offset = LoadLE64(p);
  f.record_count = LoadLE64(p + 8);
  f.index_crc = LoadLE32(p + 16);
  return f;
}

Status CheckRecordShape(std::string_view key, std::span<const FieldInfo> fields) {
  if (key.empty() || key.size() > kMaxKeyLen) {
    return Status(Code::kInvalidArgument,
                  fmt::format("key '{}': length {} outside 1..{}", EscapeBytes(key.substr(0, 200)),
                              key.size(), kMaxKeyLen));
  }
  if (fields.empty() || fields.size() > kMaxFields) {
    return Status(Code::kInvalidArgument, fmt::format("key '{}': {} fields (need 1..{})",
                                                      EscapeBytes(key), fields.size(), kMaxFields));
  }
  for (size_t i = 0; i < fields.size(); i++) {
    if (fields[i].name.size() > kMaxFieldNameLen) {
      return Status(Code::kInvalidArgument, fmt::format("key '{}': field name longer than {} bytes",
                                                        EscapeBytes(key), kMaxFieldNameLen));
    }
    for (size_t j = 0; j < i; j++) {
      if (fields[j].name == fields[i].name) {
        return Status(Code::kInvalidArgument,
                      fmt::format("key '{}': duplicate field '{}'", EscapeBytes(key),
                                  EscapeBytes(fields[i].name)));
      }
    }
  }
  return Status::Ok();
}

static uint32_t MetaLen(std::string_view key, std::span<const FieldInfo> fields) {
  size_t n = key.size();
  for (const auto& f : fields) n += 1 + f.name.size() + 8;
  return static_cast<uint32_t>(n);
}

uint64_t RecordLength(std::string_view key, std::span<const FieldInfo> fields) {
  uint64_t n = kRecordFixedSize + MetaLen(key, fields) + kRecordTrailerSize;
  for (const auto& f : fields) n += f.size;
  return n;
}

std::string EncodeRecordHead(std::string_view key, std::span<const FieldInfo> fields) {
  uint32_t meta_len = MetaLen(key, fields);
  std::string out;
  out.reserve(kRecordFixedSize + meta_len);
  PutLE32(&out, kRecordMagic);
  PutLE32(&out, 0);  // header_crc, filled below
  PutLE64(&out, RecordLength(key, fields));
  PutLE32(&out, meta_len);
  PutLE16(&out, static_cast<uint16_t>(key.size()));
  PutLE16(&out, static_cast<uint16_t>(fields.size()));
  out.append(key);
  for (const auto& f : fields) {
    out.push_back(static_cast<char>(f.name.size()));
    out.append(f.name);
    PutLE64(&out, f.size);
  }
  StoreLE32(out.data() + 4, Crc32c(out.data() + 8, out.size() - 8));
  return out;
}

Result<uint32_t> PeekMetaLen(const uint8_t* p, std::string_view where) {
  if (LoadLE32(p) != kRecordMagic) {
    return Status(Code::kCorruption, fmt::format("{}: bad record magic {:08x} (expected {:08x})",
                                                 where, LoadLE32(p), kRecordMagic));
  }
  return LoadLE32(p + 16);
}

Result<RecordHead> DecodeRecordHead(const uint8_t* p, size_t n, std::string_view where) {
  DS_ASSIGN_OR_RETURN(uint32_t meta_len, PeekMetaLen(p, where));
  if (n < kRecordFixedSize + meta_len) {
    return Status(Code::kCorruption, fmt::format("{}: record header of {} bytes runs past the "
                                                 "record",
                                                 where, kRecordFixedSize + meta_len));
  }
  if (LoadLE32(p + 4) != Crc32c(p + 8, kRecordFixedSize - 8 + meta_len)) {
    return Status(Code::kCorruption, fmt::format("{}: record header checksum mismatch", where));
  }
  RecordHead h;
  h.meta_len = meta_len;
  h.record_len = LoadLE64(p + 8);
  uint16_t key_len = LoadLE16(p + 20);
  uint16_t nfields = LoadLE16(p + 22);
  const uint8_t* m = p + kRecordFixedSize;
  const uint8_t* end = m + meta_len;
  auto bad = [&](std::string_view why) {
    return Status(Code::kCorruption, fmt::format("{}: malformed record header: {}", where, why));
  };
  if (key_len == 0 || key_len > meta_len) return bad("key length");
  h.key.assign(reinterpret_cast<const char*>(m), key_len);
  m += key_len;
  uint64_t payload = 0;
  h.fields.reserve(nfields);
  for (uint32_t i = 0; i < nfields; i++) {
    if (m >= end) return bad("field table runs past meta_len");
    uint8_t name_len = *m++;
    if (m + name_len + 8 > end) return bad("field table runs past meta_len");
    FieldInfo f;
    f.name.assign(reinterpret_cast<const char*>(m), name_len);
    m += name_len;
    f.size = LoadLE64(m);
    m += 8;
    if (f.size > (1ull << 62) || payload + f.size < payload) return bad("field size");
    payload += f.size;
    h.fields.push_back(std::move(f));
  }
  if (m != end || nfields == 0) return bad("field table does not fill meta_len");
  if (h.record_len != kRecordFixedSize + meta_len + payload + kRecordTrailerSize) {
    return bad("record_len does not match the field sizes");
  }
  return h;
}

}  // namespace ds::native
