// MXNet RecordIO shards (docs/formats/recordio.md): dmlc-core's framing
//   u32 kMagic | u32 lrec = cflag << 29 | length | data, zero-padded to 4 bytes
// where a record is split (cflag 1 start, 2 middle, 3 end) wherever kMagic occurs at a 4-byte
// aligned offset inside it, exactly as dmlc::RecordIOWriter does. Each data field of a sample is
// one record: IRHeader {u32 flag, f32 label, u64 id, u64 id2} (+ flag f32 labels) + the bytes;
// the label field is not a record but goes into IRHeader. Sidecars per shard: `.idx`
// (`n\toffset`, for MXIndexedRecordIO and DALI) and im2rec's `.lst` (`n\tlabel...\tpath`), which
// maps records back to keys and field names.
//
// The writer holds one sample in memory until it ends (the label comes after the data fields);
// a record is limited to 2^29 bytes by the format.
#pragma once

#include <memory>
#include <set>
#include <string>

#include "formats/layout.h"

namespace ds::recordio {

inline constexpr uint32_t kMagic = 0xced7230a;
inline constexpr uint32_t kMaxLength = (1u << 29) - 1;
inline constexpr size_t kIRHeaderSize = 24;

Result<std::unique_ptr<LayoutWriter>> CreateWriter(const std::string& out,
                                                   const WriterOptions& options);
Result<std::unique_ptr<LayoutReader>> Open(const StorageRef& at,
                                           const std::set<std::string>* present = nullptr);

// dmlc::RecordIOWriter::WriteRecord's output for one record (exposed for tests).
std::string Frame(std::string_view record);

}  // namespace ds::recordio
