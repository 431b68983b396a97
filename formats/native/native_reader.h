// The native layout's row in the registry (formats/registry.h): its reader through the common
// LayoutReader interface (random access from the global index, extents for batched reads, the
// manifest's facts for info and files), its writer (DatasetWriter, which is resumable), its
// metadata-only file list and its verify (native_verify.h, which runs even when the index is too
// damaged to open a reader).
#pragma once

#include <memory>
#include <optional>
#include <set>
#include <string>

#include "formats/layout.h"

namespace ds::native {

// `present` (a subset view's shards) needs nothing here: shards are opened lazily.
Result<std::unique_ptr<LayoutReader>> OpenReader(const StorageRef& at,
                                                 const std::set<std::string>* present = nullptr);
Result<std::unique_ptr<LayoutWriter>> CreateWriter(const std::string& out,
                                                   const WriterOptions& options);
// nullopt when at.path holds no manifest.
Result<std::optional<DatasetFiles>> ListFiles(const StorageRef& at);
Status Verify(const StorageRef& at, LayoutVerifyReport* report, const LayoutProgress& progress);
// Files a native dataset directory may hold, their .tmp forms included (what replacing it may
// remove).
bool IsDatasetFile(std::string_view name);

}  // namespace ds::native
