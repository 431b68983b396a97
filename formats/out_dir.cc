#include "formats/out_dir.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

#include "formats/registry.h"
#include "src/fd.h"
#include "src/human.h"

namespace ds {

namespace {

bool EndsWith(std::string_view s, std::string_view suf) {
  return s.size() >= suf.size() && s.substr(s.size() - suf.size()) == suf;
}

}  // namespace

bool MatchesLayoutFile(std::string_view name, std::initializer_list<std::string_view> names,
                       std::initializer_list<std::string_view> shard_exts) {
  if (EndsWith(name, ".tmp")) {
    name.remove_suffix(4);
    // WriteFileAtomic's temp names (src/fd.h TempNameFor): NAME.XXXXXX.tmp.
    size_t n = kTempTagLen + 1;
    if (name.size() > n && name[name.size() - n] == '.' &&
        std::all_of(name.end() - kTempTagLen, name.end(),
                    [](char c) { return std::isalnum(static_cast<unsigned char>(c)); })) {
      name.remove_suffix(n);
      if (EndsWith(name, ".tmp")) name.remove_suffix(4);  // a sidecar's temp, made atomically
    }
  }
  if (std::find(names.begin(), names.end(), name) != names.end()) return true;
  if (name.rfind("shard-", 0) != 0) return false;
  return std::any_of(shard_exts.begin(), shard_exts.end(),
                     [&](std::string_view ext) { return EndsWith(name, ext); });
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

Result<OutDirState> PrepareOutputDir(Storage& storage, const std::string& out,
                                     const OutDirSpec& spec, ExistingOutput existing) {
  if (existing == ExistingOutput::kResume && !spec.can_resume) {
    return Status(Code::kInvalidArgument,
                  fmt::format("{}: {} cannot resume an interrupted write (only native can); "
                              "start over with `existing=replace`",
                              out, spec.layout));
  }
  OutDirState state;
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
  // kReplace: the commit point first, so OUT never claims a dataset being removed.
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
