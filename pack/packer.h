// The packer: `dspack convert SRC OUT` (docs/cli.md#convert). SRC is a directory tree, an archive,
// or a dataset in any layout (native, wds, tfrecord, recordio, lmdb); OUT is written in any layout
// through LayoutWriter (formats/layout.h).
//
// Pipeline (RunOrdered, src/ordered_workers.h: `threads` readers, 4 samples in flight each):
//   1. scan (serial, before the pipeline): FileTree::Scan lists and groups the files;
//      --shuffle-seed permutes the sample order (Fisher-Yates on xoshiro, platform-independent).
//   2. read (parallel): open + fstat + read each file of a sample; files larger than
//      kInlineLimit stay open and are streamed by stage 3 instead of being held in memory.
//   3. write (serial, in order): DatasetWriter computes CRCs and hashes and writes shards.
// Output depends only on the input and options, never on `threads` (stage 3 is in order).
// Memory is bounded by 4 x threads x kInlineLimit plus the compact file list, whatever the data
// size.
//
// Partitioned (`mpirun -n N dspack convert`, pack/partition.h): every process writes a range of
// the planned shards and rank 0 commits; the output is byte-identical to this one-process run.
//
// Resume: `--resume` continues an interrupted run from its last shard checkpoint (see
// DatasetWriter); the output is byte-identical to an uninterrupted run.
// Errors: under OnError::kFail the first bad input stops the run, the writer is abandoned and
// nothing is left under a final name. Under kSkip, a sample with any unreadable file is left out,
// counted, and listed in the manifest's "skipped". Output-side errors always stop the run.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "formats/layout.h"
#include "pack/partition.h"
#include "src/status.h"

namespace ds {

enum class OnError { kFail, kSkip };

// Files read in parallel by default: enough operations in flight to hide NFS-like latency
// (docs/benchmarks.md); `dspack convert --threads` shows it as its default.
inline constexpr int kDefaultThreads = 64;

struct ConvertOptions {
  std::string src;
  std::string out;
  // The backend OUT is written through (src/storage.h); null: OpenStorage(out). A test hands a
  // FaultStorage here to fail the writer's operations (ENOSPC, a crash).
  std::shared_ptr<Storage> out_storage;
  // The backend SRC is walked and read through, src then being the path inside it; null:
  // OpenStorage(src) (a plain path is local, nfs://... remote).
  std::shared_ptr<Storage> src_storage;
  Format format = Format::kNative;  // layout of OUT (docs/formats/)
  // The layout's knobs as the user gave them (shard size, alignment, LMDB layout, DALI index):
  // unset means the layout's default; one the layout does not take is refused.
  LayoutKnobs layout;
  int threads = kDefaultThreads;
  bool label_from_dir = false;
  // Field names and types for the layout's loaders (formats/schema.h, docs/formats/schema.md).
  // Unset: imagenet when label_from_dir, an interop layout and every sample one image; else raw.
  // A field_map is schema map.
  std::optional<SchemaKind> schema;
  std::vector<FieldRule> field_map;
  int64_t label_base = 0;  // label_from_dir's number for the first class (TF's ImageNet: 1)
  std::vector<std::string> include;
  std::vector<std::string> exclude;
  std::optional<uint64_t> shuffle_seed;
  OnError on_error = OnError::kFail;
  double max_expansion = 1000;  // archives: decompressed : compressed limit (zip bombs)
  bool raw_names = false;       // archives: keep zip names without flag bit 11 as stored bytes
  // An OUT holding a dataset: refuse, replace it, or finish the interrupted convert there (same
  // SRC and options; layouts whose writer is resumable).
  ExistingOutput existing = ExistingOutput::kRefuse;
  bool progress = false;  // draw a progress bar (only if stderr is a terminal)
  // The job this process is one of (`mpirun dspack convert`, pack/partition.h), or null. With
  // more than one process the convert is partitioned: every process must call Convert with the
  // same options and its own job.
  Job* job = nullptr;
};

inline constexpr uint64_t kInlineLimit = 1 << 20;

struct ConvertReport {
  uint64_t samples = 0;
  uint64_t files = 0;         // inputs read: files, archive members, or a dataset's fields
  bool from_dataset = false;  // the source was a dataset: `files` counts its fields
  uint64_t payload_bytes = 0;
  uint64_t shards = 0;
  uint64_t bytes_written = 0;
  uint64_t skipped = 0;
  uint64_t classes = 0;
  SchemaKind schema = SchemaKind::kRaw;  // the schema the samples were stored under
  uint64_t ignored_entries = 0;          // archive directories, links, special entries (by policy)
  uint64_t resumed_at = 0;               // source sample the run continued from (0: fresh run)
  bool already_complete = false;         // --resume on a finished dataset: nothing was done
  int ranks = 1;                         // processes that wrote it (a partitioned convert)
  double scan_seconds = 0;
  double total_seconds = 0;
  std::vector<std::string> skipped_examples;  // first few "path: error"
  std::vector<std::string> warnings;          // the writer's (LayoutSummary::warnings)
  nlohmann::json ToJson() const;
};

Status Convert(const ConvertOptions& options, ConvertReport* report);

// The pack-time permutation used by --shuffle-seed: perm[i] is the input sample written i-th.
std::vector<uint64_t> ShufflePermutation(uint64_t n, uint64_t seed);

}  // namespace ds
