#include "formats/out_dir.h"

#include <dirent.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <filesystem>

#include "formats/registry.h"
#include "src/dir_lock.h"
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

Status CheckJoinedDir(const std::string& out) {
  struct stat st;
  if (::stat(out.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    return Status(Code::kIOError, out +
                                      ": not a directory here, though the job's first process "
                                      "made it; OUT must be on storage every process of the "
                                      "job sees");
  }
  return Status::Ok();
}

Status CheckSeenHere(const std::string& path, uint64_t size) {
  struct stat st;
  if (::stat(path.c_str(), &st) == 0 && static_cast<uint64_t>(st.st_size) == size) {
    return Status::Ok();
  }
  bool found = ::access(path.c_str(), F_OK) == 0;
  return Status(Code::kIOError,
                fmt::format("{}: {} here, though the job wrote {} bytes there; OUT must be on "
                            "storage every process of the job sees (a shared file system)",
                            path, found ? fmt::format("{} bytes", st.st_size) : "not found", size));
}

Result<OutDirState> PrepareOutputDir(const std::string& out, const OutDirSpec& spec,
                                     ExistingOutput existing) {
  if (existing == ExistingOutput::kResume && !spec.can_resume) {
    return Status(Code::kInvalidArgument,
                  fmt::format("{}: {} cannot resume an interrupted write (only native can); "
                              "start over with `existing=replace`",
                              out, spec.layout));
  }
  OutDirState state;
  struct stat st;
  if (::stat(out.c_str(), &st) != 0) {
    if (errno != ENOENT) return Status::FromErrno(errno, out);
    std::error_code ec;
    std::filesystem::create_directories(out, ec);
    if (ec) return Status::FromErrno(ec.value(), "cannot create output directory " + out);
    state.created = true;
    DS_ASSIGN_OR_RETURN(state.lock, LockDirectory(out, &state.lock_warning));
    return state;
  }
  if (!S_ISDIR(st.st_mode)) {
    return Status(Code::kAlreadyExists,
                  out + ": exists and is not a directory; choose a directory path for the dataset");
  }
  DS_ASSIGN_OR_RETURN(state.lock, LockDirectory(out, &state.lock_warning));
  DIR* d = ::opendir(out.c_str());
  if (!d) return Status::FromErrno(errno, out);
  std::vector<std::string> ours;
  std::string foreign, other;  // other: a file another dspack layout writes
  bool other_dataset = false;  // ... and another layout's commit point
  while (dirent* e = ::readdir(d)) {
    std::string n = e->d_name;
    if (n == "." || n == "..") continue;
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
  ::closedir(d);
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
    std::string path = out + "/" + n;
    if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
      return Status::FromErrno(errno, "cannot remove old dataset file " + path);
    }
  }
  return state;
}

}  // namespace ds
