// PrepareOutputDir: the one place where a writer claims its output directory OUT. Every layout's
// writer calls it before writing a byte (docs/formats/README.md#output-directory). OUT is a path
// inside a storage backend (src/storage.h): the writers create, list, rename and remove through it.
//
//   OUT missing               created (with its parents); state.created
//   (then, in every case)     OUT is locked for this writer (src/dir_lock.h); held: kAlreadyExists
//   OUT not a directory       kAlreadyExists
//   a name not ours in OUT    kAlreadyExists naming it: we never delete what dspack did not write
//   another layout's files    (IsAnyLayoutFile, formats/registry.h) kReplace removes them with
//                             ours; otherwise kAlreadyExists naming one
//   our files in OUT          kRefuse:  kAlreadyExists; the message says which choice proceeds
//                                       (`existing=replace`, or `existing=resume` for a
//                                       layout that can resume and an unfinished run)
//                             kReplace: the new dataset is written beside OUT, in
//                             OUT.dspack-replace
//                                       (kStageSuffix), and PublishOutput swaps it in whole at
//                                       the writer's commit: until then OUT keeps the previous
//                                       dataset, so a crash or an error leaves it intact
//                                       (docs/formats/README.md#replacing-a-dataset). In place
//                                       where the sibling cannot be made or swapped (a partitioned
//                                       job, an OUT that is a mount point, a symlink or ".", a
//                                       backend without atomic rename): the commit point is removed
//                                       first (the directory never claims a half-removed dataset),
//                                       then every other file of ours; a failed unlink is an error
//                             kResume:  kept as they are (the writer decides what to reuse);
//                                       kInvalidArgument for a layout that cannot resume
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "formats/layout_options.h"
#include "src/status.h"
#include "src/storage.h"

namespace ds {

struct OutDirSpec {
  std::string_view layout;                 // for messages: "native", "wds", ...
  std::string_view commit_point;           // manifest.json or dspack.json: written last
  bool (*is_ours)(std::string_view name);  // a file this layout writes (its .tmp forms too)
  bool can_resume = false;
};

// The sibling a replace is written in ("OUT.dspack-replace"); a stale one (a crashed replace)
// holds only dspack's files and is emptied by the next replace.
inline constexpr std::string_view kStageSuffix = ".dspack-replace";

struct OutDirState {
  // The exclusive lock on OUT (src/dir_lock.h), taken before OUT is looked at: the writer holds
  // it until it is destroyed, so a second writer gets "OUT: is being written by PID N" (exit 2)
  // and never the advice meant for an interrupted run.
  std::unique_ptr<StorageLock> lock;
  std::string lock_warning;       // flock refused here (NFS): the run goes on unlocked
  bool created = false;           // OUT did not exist: Abandon may remove the directory too
  bool had_commit_point = false;  // a finished dataset was there (kResume keeps it)
  bool had_files = false;         // any file of ours was there
  std::string out;                // OUT, as the writer was given it
  // Where the writer writes its files: OUT, or for a staged replace its sibling OUT.dspack-replace
  // (then `created` is true: Abandon removes the sibling, and OUT is never touched).
  std::string dir;
  std::unique_ptr<StorageLock> stage_lock;  // the sibling's, for a staged replace
  bool staged() const { return dir != out; }
};

// Where a writer's OUT lives: options.storage when a caller handed one (a test's FaultStorage),
// else OpenStorage(out) (a path, or a URI of a registered backend).
Result<StorageRef> OutputStorage(const std::string& out, const CommonWriterOptions& options);

// in_place: a kReplace removes the old files in OUT at once (a partitioned job, whose other
// processes write into OUT itself).
Result<OutDirState> PrepareOutputDir(Storage& storage, const std::string& out,
                                     const OutDirSpec& spec, ExistingOutput existing,
                                     bool in_place = false);

// The writer's last step, once its commit point is durable in state->dir: for a staged replace,
// swaps state->dir with OUT (Storage::Exchange; where that is unsupported, OUT is renamed to
// OUT.dspack-old and the sibling to OUT), syncs OUT's parent and removes the previous dataset,
// now under the sibling's name (best effort: a replace that finds it empties it). Then releases
// the locks: readers may open OUT. On error OUT still holds the previous dataset.
Status PublishOutput(Storage& storage, OutDirState* state);

// A writer's error, with a hint when a staged replace ran out of room (kNoSpace): the disk holds
// both datasets until the swap, so free room or remove OUT first. Any other status as it is.
Status ExplainNoSpace(const OutDirState& state, Status s);

// Removes what a failed writer created under OUT, newest first (so a crash mid-cleanup never
// leaves a commit point over missing files), then OUT itself when the writer created it. Best
// effort: a file already gone is fine, and nothing else is reported (the writer's own error is
// the one to show).
void RemoveCreated(Storage& storage, const std::vector<std::string>& created,
                   const std::string& out, bool remove_dir);

// For a process of a partitioned write that is not its root (CommonWriterOptions::join_job):
// OUT, which the root prepared and holds the lock on, is a directory this process sees
// (kIOError saying OUT must be on storage every process of the job sees).
Status CheckJoinedDir(Storage& storage, const std::string& out);

// For the root of a partitioned write, before it commits: the file another process wrote is here
// with the size that process reported (kIOError naming the file and saying OUT must be shared
// storage, if not).
Status CheckSeenHere(Storage& storage, const std::string& path, uint64_t size);

// Whether name (after dropping a ".tmp" or WriteFileAtomic's ".XXXXXX.tmp" suffix) has one of these
// exact names, or is a shard: "shard-" followed by anything ending in one of shard_exts.
bool MatchesLayoutFile(std::string_view name, std::initializer_list<std::string_view> names,
                       std::initializer_list<std::string_view> shard_exts);

}  // namespace ds
