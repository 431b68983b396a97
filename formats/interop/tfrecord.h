// TFRecord shards (docs/formats/tfrecord.md): TensorFlow's framing
//   u64 length | u32 masked_crc32c(length) | data | u32 masked_crc32c(data)
// with data a tf.train.Example holding a "__key__" feature and one bytes_list feature per field,
// plus DALI's tfrecord2idx index (`<offset> <size>` per record) next to each shard.
//
// The Example is encoded by hand: three nested length-delimited messages whose sizes are known
// from the field sizes before any payload byte is seen, so a record streams straight to disk;
// a libprotobuf dependency would buy nothing here and would force whole-record buffering.
// The reader decodes any Example (bytes_list, float_list, int64_list; packed or not; unknown
// fields skipped) and checks both CRCs of every record it reads.
#pragma once

#include <memory>
#include <set>
#include <span>
#include <string>

#include "formats/layout.h"

namespace ds::tfrecord {

inline constexpr const char* kKeyFeature = "__key__";
inline constexpr uint64_t kFrameOverhead = 16;  // length + its CRC + data CRC

Result<std::unique_ptr<LayoutWriter>> CreateWriter(const std::string& out,
                                                   const WriterOptions& options);
Result<std::unique_ptr<LayoutReader>> Open(const StorageRef& at,
                                           const std::set<std::string>* present = nullptr);

// Decodes a serialized tf.train.Example into key (from "__key__", else default_key) and fields.
// Exposed for tests.
Result<Sample> DecodeExample(std::string_view data, const std::string& default_key);
// Encodes one (as the writer does; the whole record's data): bytes_list features, and an
// int64_list for each field named in int64_fields (its bytes: ASCII digits; kBadInput if not).
// Exposed for tests.
Result<std::string> EncodeExample(const Sample& sample,
                                  std::span<const std::string> int64_fields = {});

}  // namespace ds::tfrecord
