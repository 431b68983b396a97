// Writer options, one struct per layout (riegeli's Options shape): a common part, each layout's
// own knobs with named defaults, and Validate() at the formats/ boundary, so every caller (the
// packer, dsbench compare, the Python package) gets the same checks and the same defaults.
//
// Messages name an option by its field in backticks (`shard_size`); a CLI renders those as its
// own flags (RenderOptionNames in src/status.h), a library caller reads them as field names.
//
// MakeWriterOptions is how a caller that holds "what the user asked for" (every knob optional)
// gets a layout's options: a knob the layout does not take is refused by name, never ignored.
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <variant>

#include "formats/format.h"
#include "src/status.h"

namespace ds {

class Storage;

// docs/formats/native.md#shard-size: a shard closes before the sample that would take it past
// this size (a larger sample gets a shard of its own).
inline constexpr uint64_t kDefaultShardSize = 256ull << 20;
inline constexpr uint64_t kMinShardSize = 4096;
inline constexpr uint32_t kDefaultAlign = 1;  // native records are packed
inline constexpr uint64_t kDefaultLmdbMapSize = 1ull
                                                << 30;  // address space only; doubled when full
inline constexpr uint64_t kMinLmdbMapSize = 1ull << 20;

// What to do with an OUT that already holds a dataset (or an unfinished run's files).
enum class ExistingOutput {
  kRefuse,   // default: refuse, and say which choice would proceed
  kReplace,  // remove dspack's own files (the commit point first), then write afresh
  kResume,   // keep an interrupted run's checkpointed files (writers with ResumableWriter only)
};

struct CommonWriterOptions {
  ExistingOutput existing = ExistingOutput::kRefuse;
  nlohmann::json creation_options = nlohmann::json::object();  // recorded in the metadata file
  // A process of a partitioned write that is not its root (formats/layout.h, PartitionedWriter):
  // OUT has been prepared and is locked by the root; write into it as it is.
  bool join_job = false;
  // existing=replace removes the old files in OUT at once, rather than writing the new dataset
  // beside it and swapping it in at the commit (formats/out_dir.h): a partitioned write, whose
  // other processes write into OUT itself.
  bool replace_in_place = false;
  // The backend OUT lives on (src/storage.h); null: OpenStorage(out), a path or a registered
  // URI. Tests hand a FaultStorage here to fail the writer's operations.
  std::shared_ptr<Storage> storage = nullptr;
};

struct ShardingOptions : CommonWriterOptions {
  uint64_t shard_size = kDefaultShardSize;
  Status Validate() const;
};

struct NativeOptions : ShardingOptions {
  uint32_t align = kDefaultAlign;  // record alignment: a power of two <= native::kMaxAlign
  Status Validate() const;
};

struct WdsOptions : ShardingOptions {
  bool dali_index = false;  // also write DALI's wds2idx sidecar per shard
  // The sample index in shard-N.dsidx next to the shard, not as the tar's last member (for
  // readers that would take the member for a sample: DALI without an index; docs/formats/wds.md).
  bool index_sidecar = false;
};
struct TfrecordOptions : ShardingOptions {};
struct RecordioOptions : ShardingOptions {};

// docs/formats/lmdb.md: a key per field, a value per sample, or (image, label) per sample as the
// PyTorch ImageNet-LMDB recipes (pickle) or Caffe (Datum) store it.
enum class LmdbLayout { kField, kSample, kPickle, kCaffe };
std::string_view LmdbLayoutName(LmdbLayout l);
inline bool IsImageLabelLayout(LmdbLayout l) {
  return l == LmdbLayout::kPickle || l == LmdbLayout::kCaffe;
}
Result<LmdbLayout> ParseLmdbLayout(std::string_view name);

struct LmdbOptions : CommonWriterOptions {
  // Unset: field, or pickle when the samples come under the imagenet schema (formats/schema.h).
  std::optional<LmdbLayout> layout;
  uint64_t map_size = kDefaultLmdbMapSize;  // the first map size
  Status Validate() const;
};

using WriterOptions =
    std::variant<NativeOptions, WdsOptions, TfrecordOptions, RecordioOptions, LmdbOptions>;

Format FormatOf(const WriterOptions& o);
const CommonWriterOptions& Common(const WriterOptions& o);
Status Validate(const WriterOptions& o);

// Knobs as a user gave them: unset means "the layout's default".
struct LayoutKnobs {
  std::optional<uint64_t> shard_size;
  std::optional<uint32_t> align;
  std::optional<LmdbLayout> lmdb_layout;
  std::optional<uint64_t> lmdb_map_size;
  bool dali_index = false;
  bool wds_index_sidecar = false;
};

// The options of layout f from the knobs; kInvalidArgument naming the knob when f does not take
// one that is set (LMDB writes one data.mdb: `shard_size` does not apply), or when Validate fails.
Result<WriterOptions> MakeWriterOptions(Format f, const LayoutKnobs& knobs,
                                        const CommonWriterOptions& common);

}  // namespace ds
