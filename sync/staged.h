// What a finished staging directory holds (docs/dssync.md, "Files dssync writes"):
//   .dssync-manifest.json  every staged file: path (percent-encoded, EncodePath without spaces),
//                          size, mtime_ns, xxh3 (16 hex digits, XXH3-64 of the whole file);
//                          written atomically after the copy, whether or not SRC had a manifest
//   .dssync-ready          written last, only by a run without errors: its JSON summary
// and the helpers that read it back: `dssync verify` (VerifyStaged) re-hashes every listed file.
//
// Thread-safety: pure functions; ParallelFor runs fn on its own threads.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "src/status.h"

namespace ds::sync {

inline constexpr const char* kStagedManifestName = ".dssync-manifest.json";
inline constexpr const char* kReadyName = ".dssync-ready";
inline constexpr const char* kCurrentName = "current";

struct StagedFile {
  uint64_t size = 0;
  int64_t mtime_ns = 0;
  uint64_t xxh3 = 0;
};
using StagedManifest = std::map<std::string, StagedFile>;  // by relative path

std::string StagedManifestJson(const StagedManifest& m, const std::string& source);
// kNotFound when DIR has none; kCorruption when malformed.
Result<StagedManifest> LoadStagedManifest(const std::string& dir);

// Calls fn(i) for i in [0, n) on up to `threads` threads.
void ParallelFor(size_t n, int threads, const std::function<void(size_t)>& fn);

struct VerifyReport {
  std::string dir;  // the directory checked (DST, or what DST/current points to)
  uint64_t files = 0;
  uint64_t bytes = 0;
  std::vector<Status> problems;  // one per bad file: missing, size or xxh3 mismatch
};
// Checks DIR (or DIR/current when DIR holds no staged manifest) against its manifest.
Result<VerifyReport> VerifyStaged(const std::string& dir, int threads);

}  // namespace ds::sync
