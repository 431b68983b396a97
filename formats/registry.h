// The table of layouts: one row per Format, in detection order. OpenLayout, DetectLayout,
// CreateLayoutWriter, ListDatasetFiles and VerifyLayout (formats/layout.h) go through it, so
// adding a layout is adding a row (and its room: native/, interop/). Only registry.cc names the
// layouts' own headers.
#pragma once

#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>

#include "formats/layout.h"

namespace ds {

// What detection looks at, gathered once per path.
struct PathFacts {
  Storage* storage = nullptr;  // where path is (never null once gathered)
  std::string path;
  bool is_dir = false;
  bool is_file = false;
  bool has_dspack_meta = false;          // DIR/dspack.json exists
  std::optional<Format> meta_format;     // ... and names this layout (unreadable: nullopt)
  std::optional<Format> foreign_shards;  // DIR holds only one layout's shard files + sidecars
};

struct LayoutEntry {
  Format format;
  std::string_view name;
  // Whether the path holds this layout. Rows are asked in table order; the first yes wins.
  bool (*detect)(const PathFacts& facts);
  // present: null for the whole dataset; else the shards a subset view holds (formats/subset.h):
  // the others are absent and never opened, their samples hidden by the SubsetReader.
  Result<std::unique_ptr<LayoutReader>> (*open)(const StorageRef& at,
                                                const std::set<std::string>* present);
  Result<std::unique_ptr<LayoutWriter>> (*create)(const std::string& out,
                                                  const WriterOptions& options);
  // The dataset's files from its metadata alone; nullopt when the directory has none.
  Result<std::optional<DatasetFiles>> (*files)(const StorageRef& at);
  // Verify without a reader (a dataset too damaged to open still gets every check it can);
  // null: open, then LayoutReader::Verify.
  Status (*verify)(const StorageRef& at, LayoutVerifyReport* report,
                   const LayoutProgress& progress);
  // A file this layout writes into its directory (its .tmp forms too): what replacing may remove.
  bool (*owns)(std::string_view name);
  // The file written last, whose presence means a finished dataset.
  std::string_view commit_point;
};

std::span<const LayoutEntry> LayoutTable();
const LayoutEntry& LayoutFor(Format f);
PathFacts GatherPathFacts(Storage& storage, const std::string& path);

// Whether some layout of the table writes a file of this name (formats/out_dir.h: `--force`
// replaces a dataset of any layout dspack wrote), and whether it is a layout's commit point.
bool IsAnyLayoutFile(std::string_view name);
bool IsCommitPointName(std::string_view name);

}  // namespace ds
