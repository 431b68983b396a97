// A subset view: a dataset directory holding all of a dataset's metadata but only some of its
// shards, the ones dssync staged for one rank (rank/world) or within a byte budget. The file
// DIR/dspack-subset.json (docs/formats/subset.md) names the shards present. OpenLayout,
// VerifyLayout and ListDatasetFiles (formats/layout.h) honour it, so every reader above
// formats/ (dspack info/verify/ls/cat/extract, dsbench replay, dssync from it, the Python
// package) sees a smaller dataset, not a broken one:
//   - the samples are those of the present shards, renumbered 0..n-1 in dataset order;
//   - sizes, shard ranges, batched reads, data files and the file list cover only them;
//   - verify checks each present shard's size and XXH3 and each hashed metadata file against
//     the dataset's metadata, then reads every sample with its checksum.
// The metadata files stay byte-identical to the source's, so their recorded hashes still hold.
// A view is written only after the shards it names (dssync writes it last, atomically).
//
// Thread-safety: the reader is as thread-safe as LayoutReader; the functions are pure.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "formats/format.h"
#include "formats/layout.h"
#include "src/status.h"

namespace ds {

// The view's file name (docs/formats/subset.md).
inline constexpr std::string_view kSubsetViewName = "dspack-subset.json";
inline constexpr int kSubsetViewVersion = 1;

struct SubsetView {
  std::vector<std::string> shards;  // present, relative to the dataset directory, dataset order
  uint64_t of_shards = 0;           // the whole dataset's shard and sample counts
  uint64_t of_samples = 0;
  std::string reason;  // what chose them, for info: "rank 1 of 2 (balanced by bytes)"
};

// Whether DIR holds a subset view (a file of that name; LoadSubsetView checks it).
bool HasSubsetView(const std::string& dir);
// The view in DIR; nullopt when DIR has none; kCorruption naming the file when it is malformed.
Result<std::optional<SubsetView>> LoadSubsetView(const std::string& dir);
// The same through a given backend: at.path is DIR inside it.
Result<std::optional<SubsetView>> LoadSubsetView(const StorageRef& at);

// After a copy of the dataset in SRC into DST that staged the shards `staged` (relative names)
// and every metadata file: makes DST a readable dataset. `staged` a strict subset of SRC's
// shards: writes DST's view (atomically). All of them: DST is what SRC is, so a view left in DST
// by an earlier subset staging is removed unless SRC has one of its own (copied as metadata).
// Nothing for a SRC that is not a dataset dspack wrote.
Status RecordStagedShards(const std::string& src, const std::string& dst,
                          std::span<const std::string> staged, std::string_view reason);

// The reader of the dataset at at.path (layout f) through its view, every file read through
// at.storage. kCorruption when the view names a shard the dataset does not list, or one that is
// missing. Called by OpenLayout.
Result<std::unique_ptr<LayoutReader>> OpenSubset(const StorageRef& at, Format f,
                                                 const SubsetView& view);

// `files` (the dataset's metadata listing) with only the view's shards, and the view itself
// among the metadata files.
DatasetFiles FilterToView(DatasetFiles files, const SubsetView& view);

}  // namespace ds
