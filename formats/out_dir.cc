#include "formats/out_dir.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

#include "formats/registry.h"
#include "src/fd.h"
#include "src/human.h"

namespace ds {

bool MatchesLayoutFile(std::string_view name, std::initializer_list<std::string_view> names,
                       std::initializer_list<std::string_view> shard_exts) {
  if (name.ends_with(".tmp")) {
    name.remove_suffix(4);
    // WriteFileAtomic's temp names (src/fd.h TempNameFor): NAME.XXXXXX.tmp.
    size_t n = kTempTagLen + 1;
    if (name.size() > n && name[name.size() - n] == '.' &&
        std::all_of(name.end() - kTempTagLen, name.end(),
                    [](char c) { return std::isalnum(static_cast<unsigned char>(c)); })) {
      name.remove_suffix(n);
      if (name.ends_with(".tmp")) name.remove_suffix(4);  // a sidecar's temp, made atomically
    }
  }
  if (std::find(names.begin(), names.end(), name) != names.end()) return true;
  if (name.rfind("shard-", 0) != 0) return false;
  return std::any_of(shard_exts.begin(), shard_exts.end(),
                     [&](std::string_view ext) { return name.ends_with(ext); });
}

Result<StorageRef> OutputStorage(const std::string& out, const CommonWriterOptions& options) {
  if (options.storage) return StorageRef{options.storage, out};
  return OpenStorage(out);
}

void RemoveCreated(Storage& storage, const std::vector<std::string>& created,
                   const std::string& out, bool remove_dir) {
  for (auto it = created.rbegin(); it != created.rend(); ++it) (void)storage.Remove(*it);
  if (remove_dir) (void)storage.Remove(out);
}

Status CheckJoinedDir(Storage& storage, const std::string& out) {
  auto st = storage.Stat(out, /*follow=*/true);
  if (!st.ok() || st->type != FileType::kDirectory) {
    return Status(Code::kIOError, out +
                                      ": not a directory here, though the job's first process "
                                      "made it; OUT must be on storage every process of the "
                                      "job sees");
  }
  return Status::Ok();
}

Status CheckSeenHere(Storage& storage, const std::string& path, uint64_t size) {
  auto st = storage.Stat(path, /*follow=*/true);
  if (st.ok() && st->size == size) return Status::Ok();
  return Status(Code::kIOError,
                fmt::format("{}: {} here, though the job wrote {} bytes there; OUT must be on "
                            "storage every process of the job sees (a shared file system)",
                            path, st.ok() ? fmt::format("{} bytes", st->size) : "not found", size));
}

namespace {

std::string ParentOf(const std::string& path) {
  size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

// Removes every entry of dir (one level: dspack's layouts are flat), then dir. Best effort.
void RemoveFlatDir(Storage& storage, const std::string& dir) {
  if (auto entries = storage.List(dir); entries.ok()) {
    for (const DirEntry& e : *entries) (void)storage.Remove(dir + "/" + e.name);
  }
  (void)storage.Remove(dir);
}

// The sibling OUT.dspack-replace for a staged replace, made (or emptied, when a crashed replace
// left it) and locked; kUnsupported when OUT cannot be replaced by a swap here (the caller
// replaces in place).
Status PrepareStage(Storage& storage, const OutDirSpec& spec, OutDirState* state) {
  std::string out = state->out;
  while (out.size() > 1 && out.back() == '/') out.pop_back();
  std::string base = out.substr(out.find_last_of('/') + 1);
  auto unsupported = [] { return Status(Code::kUnsupported, "replace in place"); };
  if (!storage.caps().atomic_rename || base.empty() || base == "." || base == "..") {
    return unsupported();
  }
  // A mount point cannot be swapped with a directory of the file system it is mounted on; a
  // symlink would be swapped itself, not the directory it names.
  auto link = storage.Stat(out, /*follow=*/false);
  auto here = storage.Stat(out, /*follow=*/true);
  auto parent = storage.Stat(ParentOf(out), /*follow=*/true);
  if (!link.ok() || link->type == FileType::kSymlink || !here.ok() || !parent.ok() ||
      here->device != parent->device) {
    return unsupported();
  }
  const std::string stage = out + std::string(kStageSuffix);
  auto st = storage.Stat(stage);
  if (st.ok()) {
    if (st->type != FileType::kDirectory) {
      return Status(Code::kAlreadyExists,
                    stage +
                        ": exists and is not a directory; dspack writes a replacement there, "
                        "so move it away");
    }
    DS_ASSIGN_OR_RETURN(state->stage_lock, storage.LockWriter(stage, &state->lock_warning));
    DS_ASSIGN_OR_RETURN(std::vector<DirEntry> entries, storage.List(stage));
    for (const DirEntry& e : entries) {
      if (!spec.is_ours(e.name) && !IsAnyLayoutFile(e.name)) {
        return Status(Code::kAlreadyExists,
                      fmt::format("{}: holds '{}', which dspack did not write; dspack writes a "
                                  "replacement there, so move it away",
                                  stage, EscapeBytes(e.name)));
      }
    }
    for (const DirEntry& e : entries) {
      DS_RETURN_IF_ERROR(storage.Remove(stage + "/" + e.name)
                             .Prefixed("cannot empty a crashed replace's directory"));
    }
  } else if (st.status().code() != Code::kNotFound) {
    return st.status();
  } else {
    Status made = storage.MakeDirs(stage);
    if (!made.ok()) return unsupported();  // OUT's parent is not ours to write: in place
    DS_ASSIGN_OR_RETURN(state->stage_lock, storage.LockWriter(stage, &state->lock_warning));
  }
  state->out = out;  // without a trailing '/': its parent is synced at the swap
  state->dir = stage;
  state->created = true;  // Abandon removes the sibling; OUT keeps the previous dataset
  return Status::Ok();
}

}  // namespace

Status ExplainNoSpace(const OutDirState& state, Status s) {
  if (s.code() != Code::kNoSpace || !state.staged()) return s;
  return Status(Code::kNoSpace,
                s.message() + "; a replace keeps the previous dataset in " + state.out +
                    " until the new one is whole, so both must fit: free room, or remove it first",
                s.err());
}

Status PublishOutput(Storage& storage, OutDirState* state) {
  if (state->staged()) {
    std::string old = state->dir;  // after the swap, the previous dataset is here
    Status s = storage.Exchange(state->dir, state->out);
    if (s.code() == Code::kUnsupported) {
      old = state->out + ".dspack-old";
      RemoveFlatDir(storage, old);  // a crashed fallback's leftover
      DS_RETURN_IF_ERROR(storage.Rename(state->out, old));
      s = storage.Rename(state->dir, state->out);
      if (!s.ok()) (void)storage.Rename(old, state->out);
    }
    DS_RETURN_IF_ERROR(s.Prefixed("cannot publish the replacement dataset"));
    DS_RETURN_IF_ERROR(storage.SyncDir(ParentOf(state->out)));
    state->dir = state->out;
    RemoveFlatDir(storage, old);
  }
  state->stage_lock.reset();
  state->lock.reset();  // committed: readers may open OUT now
  return Status::Ok();
}

Result<OutDirState> PrepareOutputDir(Storage& storage, const std::string& out,
                                     const OutDirSpec& spec, ExistingOutput existing,
                                     bool in_place) {
  if (existing == ExistingOutput::kResume && !spec.can_resume) {
    return Status(Code::kInvalidArgument,
                  fmt::format("{}: {} cannot resume an interrupted write (only native can); "
                              "start over with `existing=replace`",
                              out, spec.layout));
  }
  OutDirState state;
  state.out = state.dir = out;
  auto st = storage.Stat(out, /*follow=*/true);
  if (!st.ok()) {
    if (st.status().code() != Code::kNotFound) return st.status();
    DS_RETURN_IF_ERROR(storage.MakeDirs(out).Prefixed("cannot create output directory"));
    state.created = true;
    DS_ASSIGN_OR_RETURN(state.lock, storage.LockWriter(out, &state.lock_warning));
    return state;
  }
  if (st->type != FileType::kDirectory) {
    return Status(Code::kAlreadyExists,
                  out + ": exists and is not a directory; choose a directory path for the dataset");
  }
  DS_ASSIGN_OR_RETURN(state.lock, storage.LockWriter(out, &state.lock_warning));
  DS_ASSIGN_OR_RETURN(std::vector<DirEntry> entries, storage.List(out));
  std::vector<std::string> ours;
  std::string foreign, other;  // other: a file another dspack layout writes
  bool other_dataset = false;  // ... and another layout's commit point
  for (const DirEntry& e : entries) {
    const std::string& n = e.name;
    if (spec.is_ours(n)) {
      ours.push_back(n);
      if (n == spec.commit_point) state.had_commit_point = true;
    } else if (IsAnyLayoutFile(n)) {
      ours.push_back(n);  // replaced as our own: --force replaces any layout dspack wrote
      if (other.empty()) other = n;
      if (IsCommitPointName(n)) other_dataset = true;
    } else if (foreign.empty()) {
      foreign = n;
    }
  }
  if (!foreign.empty()) {
    return Status(Code::kAlreadyExists,
                  fmt::format("{}: not empty (holds '{}', which dspack did not write); choose an "
                              "empty or new directory",
                              out, EscapeBytes(foreign)));
  }
  state.had_files = !ours.empty();
  if (!other.empty() && existing != ExistingOutput::kReplace) {
    return Status(Code::kAlreadyExists,
                  fmt::format("{}: holds {} of another layout ('{}'); pass `existing=replace` "
                              "to replace it with {}",
                              out, other_dataset ? "a dspack dataset" : "a failed convert's files",
                              EscapeBytes(other), spec.layout));
  }
  if (ours.empty() || existing == ExistingOutput::kResume) return state;
  if (existing == ExistingOutput::kRefuse) {
    if (state.had_commit_point) {
      return Status(Code::kAlreadyExists,
                    out +
                        ": already holds a dspack dataset; pass `existing=replace` to "
                        "replace it");
    }
    return Status(Code::kAlreadyExists,
                  spec.can_resume
                      ? out +
                            ": holds an unfinished convert (interrupted?); pass "
                            "`existing=resume` to finish it, or `existing=replace` to start over"
                      : out +
                            ": holds a failed convert's files; pass `existing=replace` to "
                            "replace them");
  }
  // kReplace: staged beside OUT where it can be; else in place, the commit point first, so OUT
  // never claims a dataset being removed.
  if (!in_place) {
    Status staged = PrepareStage(storage, spec, &state);
    if (staged.ok() || staged.code() != Code::kUnsupported) {
      if (!staged.ok()) return staged;
      return state;
    }
  }
  std::stable_partition(ours.begin(), ours.end(),
                        [&](const std::string& n) { return IsCommitPointName(n); });
  for (const auto& n : ours) {
    Status removed = storage.Remove(out + "/" + n);
    if (!removed.ok() && removed.code() != Code::kNotFound) {
      return removed.Prefixed("cannot remove old dataset file");
    }
  }
  return state;
}

}  // namespace ds
