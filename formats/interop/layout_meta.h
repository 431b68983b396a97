// `dspack.json`: the metadata file of a dataset dspack wrote in an interop layout (wds, tfrecord,
// recordio, lmdb). It is the commit point: written last, atomically, so a directory without it
// holds no finished dataset. Readers use it when present (shard list, hashes, label field) and
// cope without it for foreign data. Layout: docs/formats/README.md.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "formats/layout.h"
#include "formats/native/manifest.h"
#include "formats/out_dir.h"
#include "src/status.h"
#include "src/storage.h"

namespace ds {

inline constexpr const char* kLayoutMetaName = "dspack.json";
// The per-sample CRC table (formats/interop/sample_crc.h), listed in dspack.json's files.
inline constexpr const char* kSampleCrcName = "dspack.crc";

struct LayoutMeta {
  Format format = Format::kWds;
  uint32_t version = 1;
  uint64_t samples = 0;
  uint64_t payload_bytes = 0;
  std::string label_field;
  std::vector<native::FileMeta> shards;  // name, size, samples, first_sample, xxh3
  // Every other file of the dataset (shard sidecars, classes.txt, dspack.crc): name, size,
  // xxh3. Empty in datasets of dspack before the per-sample checksums.
  std::vector<native::FileMeta> files;
  nlohmann::json skipped = nlohmann::json::array();
  nlohmann::json creation_options = nlohmann::json::object();
  nlohmann::json extra = nlohmann::json::object();  // format-specific ("lmdb_layout", ...)

  std::string ToJson() const;
  // Loads DIR/dspack.json; kNotFound when absent, kCorruption when unreadable, or absent while
  // DIR/dspack.crc, which only dspack writes, is present (a deleted commit point, or a convert
  // killed before it: never read as foreign data).
  static Result<LayoutMeta> Load(const std::string& dir, Storage& storage = *LocalStorage());
};

// PrepareOutputDir (formats/out_dir.h) for an interop layout: its own files are the shards
// shard-* with their sidecars, data.mdb, dspack.json (the commit point), classes.txt, and their
// .tmp forms. Interop writers cannot resume.
// Files an interop layout's directory may hold, their .tmp forms included.
bool IsInteropFile(std::string_view name);

Result<OutDirState> PrepareInteropDir(Storage& storage, const std::string& out, Format format,
                                      const CommonWriterOptions& options);

// The files DIR/dspack.json lists (ListDatasetFiles for the interop layouts); nullopt without it.
Result<std::optional<DatasetFiles>> ListInteropFiles(const StorageRef& at);

// Lists DIR/NAME (written by this writer) in meta->files with its size and XXH3.
void ListMetaFile(LayoutMeta* meta, const std::string& name, std::string_view content);
// Checks every file meta.files lists against DIR in storage: one problem per missing or changed
// file, named by its URI.
void VerifyMetaFiles(const std::string& dir, const LayoutMeta& meta, Storage& storage,
                     std::vector<std::string>* problems);
// Reads DIR/classes.txt (one name per line); empty when absent.
Result<std::vector<std::string>> LoadClasses(const std::string& dir,
                                             Storage& storage = *LocalStorage());
// The end of an interop writer's Finish: DIR/classes.txt (when labelled) and DIR/dspack.crc
// (the per-sample CRCs), each listed in meta->files, then dspack.json (the commit point), then an
// fsync of DIR. Each file written is appended to *created (for Abandon).
Status CommitLayoutMeta(Storage& storage, const std::string& dir,
                        const std::vector<std::string>& classes, const std::vector<uint32_t>& crcs,
                        LayoutMeta* meta, std::vector<std::string>* created);

}  // namespace ds
