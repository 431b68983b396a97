// Constants and record codec of the native dspack shard format.
// The byte-exact specification is docs/formats/native.md; every constant below is named there.
//
//   shard file
//   +----------------------+ 0
//   | shard header (64 B)  |  magic "DSPKSHRD", version, align, shard no., first sample, crc
//   +----------------------+ 64
//   | zero padding         |  up to AlignUp(64, align)
//   +----------------------+
//   | record 0 | pad       |  each record starts at a multiple of `align`
//   | record 1 | pad       |
//   | ...                  |
//   +----------------------+ index_offset = AlignUp(end of last record, align)
//   | index: N x 16 B      |  {u64 offset, u64 length} per record
//   +----------------------+
//   | footer (32 B)        |  index_offset, N, index crc, footer crc, magic "DSPKEND1"
//   +----------------------+ EOF
//
//   record
//   0  u32 magic 0x01525344 ("DSR\1")   4 u32 header_crc = crc32c(bytes [8, 24+meta_len))
//   8  u64 record_len (0 .. end of data_crc, padding excluded)
//   16 u32 meta_len  20 u16 key_len  22 u16 field_count
//   24 key, then field_count x {u8 name_len, name, u64 size}       (meta_len bytes in all)
//   24+meta_len  payloads of all fields in order
//   record_len-4 u32 data_crc = crc32c(payloads)
//
// All integers are little-endian. Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "formats/sample.h"
#include "src/status.h"

namespace ds::native {

inline constexpr char kShardMagic[8] = {'D', 'S', 'P', 'K', 'S', 'H', 'R', 'D'};
inline constexpr char kFooterMagic[8] = {'D', 'S', 'P', 'K', 'E', 'N', 'D', '1'};
inline constexpr uint32_t kFormatVersion = 1;
inline constexpr uint32_t kRecordMagic = 0x01525344;  // bytes 'D' 'S' 'R' 0x01
inline constexpr size_t kShardHeaderSize = 64;
inline constexpr size_t kFooterSize = 32;
inline constexpr size_t kIndexEntrySize = 16;
inline constexpr size_t kRecordFixedSize = 24;   // magic..field_count
inline constexpr size_t kRecordTrailerSize = 4;  // data_crc
inline constexpr size_t kMaxKeyLen = 65535;
inline constexpr size_t kMaxFieldNameLen = 255;
inline constexpr size_t kMaxFields = 65535;
inline constexpr uint32_t kMaxAlign = 1u << 30;

struct ShardHeader {
  uint32_t version = kFormatVersion;
  uint32_t align = 1;
  uint64_t shard_number = 0;
  uint64_t first_sample = 0;
};
std::string EncodeShardHeader(const ShardHeader& h);
// `what` names the shard in errors. Checks magic, crc and version.
Result<ShardHeader> DecodeShardHeader(const uint8_t* p, std::string_view what);

struct Footer {
  uint64_t index_offset = 0;
  uint64_t record_count = 0;
  uint32_t index_crc = 0;
};
std::string EncodeFooter(const Footer& f);
Result<Footer> DecodeFooter(const uint8_t* p, std::string_view what);

struct IndexEntry {
  uint64_t offset = 0;
  uint64_t length = 0;  // record_len, padding excluded
};

// A record's key, fields and layout, parsed from its first 24+meta_len bytes.
struct RecordHead {
  std::string key;
  std::vector<FieldInfo> fields;
  uint64_t record_len = 0;
  uint32_t meta_len = 0;
  uint64_t payload_offset() const { return kRecordFixedSize + meta_len; }
  uint64_t payload_len() const {
    return record_len - kRecordFixedSize - meta_len - kRecordTrailerSize;
  }
};

// Validates key/field limits (REQUIRES nothing; returns kInvalidArgument naming the key).
Status CheckRecordShape(std::string_view key, std::span<const FieldInfo> fields);
// Encodes bytes [0, 24+meta_len) of a record. REQUIRES: CheckRecordShape(...).ok().
std::string EncodeRecordHead(std::string_view key, std::span<const FieldInfo> fields);
// Total record_len for this key and fields.
uint64_t RecordLength(std::string_view key, std::span<const FieldInfo> fields);

// Reads the fixed part: returns meta_len, or kCorruption on a bad magic. p has >= 24 bytes.
Result<uint32_t> PeekMetaLen(const uint8_t* p, std::string_view where);
// Parses and checks the head (magic, header crc, lengths, field table). p has >= 24+meta_len bytes.
// `where` names shard and offset for messages.
Result<RecordHead> DecodeRecordHead(const uint8_t* p, size_t n, std::string_view where);

}  // namespace ds::native
