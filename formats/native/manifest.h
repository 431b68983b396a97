// `manifest.json` of a native dataset (docs/formats/native.md, "Manifest"): format version,
// creation options, per-shard size / sample count / XXH3-64 of the whole file, the global index's
// size and hash, labels, and the inputs skipped under --on-error skip. It is the commit point of
// a dataset: written last, atomically (tmp + fsync + rename), so a directory without it is not a
// finished dataset.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "src/status.h"
#include "src/storage.h"

namespace ds::native {

inline constexpr const char* kManifestName = "manifest.json";
inline constexpr const char* kIndexName = "index.dsi";
inline constexpr const char* kClassesName = "classes.txt";
inline constexpr const char* kFormatName = "dspack-native";

struct FileMeta {
  std::string name;
  uint64_t size = 0;
  uint64_t samples = 0;
  uint64_t first_sample = 0;
  uint64_t xxh3 = 0;
};

struct Manifest {
  uint32_t version = 1;
  std::string created_by;
  nlohmann::json options = nlohmann::json::object();  // creation options, for the record
  uint32_t align = 1;
  uint64_t shard_size = 0;
  uint64_t samples = 0;
  uint64_t payload_bytes = 0;
  std::vector<FileMeta> shards;
  FileMeta index;
  std::string label_field;    // "cls" when labels were added from class folders
  uint64_t class_count = 0;   // names, one per line, in classes.txt
  uint64_t classes_xxh3 = 0;  // of classes.txt
  nlohmann::json skipped = nlohmann::json::array();  // [{"path":..., "error":...}]

  std::string ToJson() const;
  static Result<Manifest> Parse(const std::string& text, const std::string& what);
  // Loads DIR/manifest.json. kNotFound when absent.
  static Result<Manifest> Load(const std::string& dir);
  // The same through storage (dir inside it).
  static Result<Manifest> Load(Storage& storage, const std::string& dir);
};

// Shard file name for shard number n: "shard-000042.dsr".
std::string ShardName(uint64_t n);

}  // namespace ds::native
