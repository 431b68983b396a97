// Per-sample CRC32C of the interop layouts dspack writes (docs/formats/README.md, "Per-sample
// checksums"): every read of wds, tfrecord, recordio and lmdb is checked, as native reads are.
//
// A sample's CRC is CRC32C over: the key, a 0x00 byte, then for each field in byte order of the
// field names: the name, a 0x00 byte, the size as u64 LE and the CRC32C of the field's bytes as
// u32 LE. The field order of a layout (LMDB returns fields sorted by name) does not matter, and a
// renamed sample (a damaged RecordIO .lst) or a changed label fails as surely as changed bytes.
//
// The table lives in OUT/dspack.crc, listed with its size and XXH3 in dspack.json (the commit
// point): 16-byte header "DSPKCRC1" + u64 LE count, then count x u32 LE, in sample order. The
// writer streams a sample (SampleCrcBuilder); a reader loads the table once and checks each
// sample it decodes (SampleCrcTable::Check).
//
// Thread-safety: SampleCrcTable is immutable after Load; the builder is one writer's.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "formats/interop/layout_meta.h"
#include "formats/sample.h"
#include "src/status.h"

namespace ds {

inline constexpr char kSampleCrcMagic[8] = {'D', 'S', 'P', 'K', 'C', 'R', 'C', '1'};
inline constexpr uint64_t kSampleCrcHeader = 16;

uint32_t SampleCrc(const Sample& s);

// The CRC of a streamed sample: Begin with the fields' names and sizes, Append the payload of
// all fields in order (any chunking), End.
class SampleCrcBuilder {
 public:
  void Begin(std::string_view key, std::span<const FieldInfo> fields);
  void Append(std::string_view chunk);
  uint32_t End() const;

 private:
  std::string key_;
  std::vector<FieldInfo> fields_;
  std::vector<uint32_t> crcs_;
  size_t field_ = 0;
  uint64_t left_ = 0;
};

// What `info` says about reads: checked against dspack.crc, or unchecked.
const char* ReadsCheckedText(bool checked);

// The file's bytes for these CRCs.
std::string EncodeSampleCrcs(const std::vector<uint32_t>& crcs);

class SampleCrcTable {
 public:
  // DIR/dspack.crc as dspack.json lists it: nullopt when dspack.json lists none (a dataset of
  // another writer or an older dspack: reads are unchecked). kCorruption when it is missing,
  // differs from the listing, or counts other than meta.samples samples.
  static Result<std::optional<SampleCrcTable>> Load(const std::string& dir, const LayoutMeta& meta,
                                                    Storage& storage = *LocalStorage());
  // kCorruption "<where>: sample i (key '...'): CRC32C ... differs from dspack.crc's ...".
  Status Check(uint64_t i, const Sample& s, std::string_view where) const;

 private:
  std::string path_;
  std::vector<uint32_t> crcs_;
};

}  // namespace ds
