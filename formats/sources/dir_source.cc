#include "formats/sources/dir_source.h"

#include <fmt/format.h>
#include <fnmatch.h>

#include <algorithm>
#include <cerrno>
#include <set>
#include <tuple>

#include "formats/sample.h"
#include "src/checksum.h"
#include "src/human.h"

namespace ds {

bool GlobMatch(const std::string& pattern, std::string_view rel_path) {
  std::string subject(rel_path);
  if (pattern.find('/') == std::string::npos) {
    size_t slash = subject.rfind('/');
    if (slash != std::string::npos) subject = subject.substr(slash + 1);
  }
  return ::fnmatch(pattern.c_str(), subject.c_str(), 0) == 0;
}

bool PathWanted(const DirScanOptions& opts, std::string_view rel) {
  if (!opts.include.empty() &&
      std::none_of(opts.include.begin(), opts.include.end(),
                   [&](const std::string& p) { return GlobMatch(p, rel); })) {
    return false;
  }
  return std::none_of(opts.exclude.begin(), opts.exclude.end(),
                      [&](const std::string& p) { return GlobMatch(p, rel); });
}

void FileTree::Append(std::string_view rel) {
  std::string_view key = SplitPath(rel).key;
  if (sample_begin_.empty() || key != last_key_) {
    sample_begin_.push_back(path_end_.size());
    last_key_.assign(key);
  }
  arena_ += rel;
  path_end_.push_back(arena_.size());
}

void FileTree::ShrinkToFit() {
  arena_.shrink_to_fit();
  path_end_.shrink_to_fit();
  sample_begin_.shrink_to_fit();
  last_key_.clear();
  last_key_.shrink_to_fit();
}

namespace {

std::string Join(const std::string& dir, const std::string& name) {
  return dir.empty() ? name : dir + "/" + name;
}

struct Walker {
  Storage& storage;
  const std::string& root;
  const DirScanOptions& opts;
  const ScanErrorFn& on_error;
  FileTree& tree;
  std::vector<std::pair<uint64_t, uint64_t>> ancestors;  // (device, inode) of the open dirs

  std::string Abs(const std::string& rel) const { return rel.empty() ? root : root + "/" + rel; }

  struct Entry {
    std::string name;
    bool is_dir;
    std::pair<uint64_t, uint64_t> id;  // a directory's (device, inode)
  };

  // What a symlink in the walk points to: its target's info, or the error for on_error.
  Result<FileInfo> Follow(const std::string& child) {
    auto st = storage.Stat(Abs(child), /*follow=*/true);
    if (st.ok()) return st;
    int err = st.status().err();
    if (err == ELOOP) return Status(Code::kBadInput, child + ": symlink loop", err);
    if (err == ENOENT) {
      return Status(Code::kBadInput, child + ": broken symlink (its target does not exist)", err);
    }
    return Status::FromErrno(err, child, Code::kBadInput);
  }

  // Walks directory `rel`. Returns non-OK to stop.
  Status Walk(const std::string& rel) {
    auto listed = storage.List(Abs(rel));
    if (!listed.ok()) {
      return on_error(rel, Status::FromStorage(listed.status(), rel.empty() ? "." : rel));
    }
    std::vector<Entry> entries;
    for (DirEntry& e : *listed) {
      std::string child = Join(rel, e.name);
      FileInfo info = e.info;
      if (info.type == FileType::kSymlink) {  // followed: the walk sees what it points to
        auto target = Follow(child);
        if (!target.ok()) {
          DS_RETURN_IF_ERROR(on_error(child, target.status()));
          continue;
        }
        info = *target;
      }
      if (info.type == FileType::kRegular || info.type == FileType::kDirectory) {
        entries.push_back(
            {std::move(e.name), info.type == FileType::kDirectory, {info.device, info.inode}});
        continue;
      }
      DS_RETURN_IF_ERROR(on_error(
          child, Status(Code::kBadInput, child + ": " + FileTypeName(info.type) +
                                             ", not a regular file: it cannot be packed")));
    }
    auto sort_key = [](const Entry& e) {
      KeyField kf = SplitPath(e.name);
      return std::make_tuple(e.is_dir, e.is_dir ? std::string_view(e.name) : kf.key, kf.field);
    };
    std::sort(entries.begin(), entries.end(),
              [&](const Entry& a, const Entry& b) { return sort_key(a) < sort_key(b); });
    for (const auto& e : entries) {
      std::string child = Join(rel, e.name);
      if (!e.is_dir) {
        if (PathWanted(opts, child)) tree.Append(child);
        continue;
      }
      // (0, 0): a backend that has no inodes (s3://), and no symlinks to loop through.
      const bool known = e.id != std::pair<uint64_t, uint64_t>{0, 0};
      if (known && std::find(ancestors.begin(), ancestors.end(), e.id) != ancestors.end()) {
        DS_RETURN_IF_ERROR(on_error(child, Status(Code::kBadInput,
                                                  child + ": symlink loop (points back to "
                                                          "an enclosing directory)",
                                                  ELOOP)));
        continue;
      }
      ancestors.push_back(e.id);
      Status result = Walk(child);
      ancestors.pop_back();
      DS_RETURN_IF_ERROR(result);
    }
    return Status::Ok();
  }
};

}  // namespace

Result<FileTree> FileTree::Scan(Storage& storage, const std::string& root,
                                const DirScanOptions& options, const ScanErrorFn& on_error) {
  DS_ASSIGN_OR_RETURN(FileInfo info, storage.Stat(root, /*follow=*/true));
  if (info.type != FileType::kDirectory) return Status::FromErrno(ENOTDIR, root);
  FileTree t(root);
  Walker w{storage, root, options, on_error, t, {{info.device, info.inode}}};
  DS_RETURN_IF_ERROR(w.Walk(""));
  t.ShrinkToFit();
  return t;
}

std::string_view FileTree::path(uint64_t file) const {
  uint64_t begin = file == 0 ? 0 : path_end_[file - 1];
  return std::string_view(arena_).substr(begin, path_end_[file] - begin);
}

std::pair<uint64_t, uint64_t> FileTree::files_of(uint64_t s) const {
  uint64_t end = s + 1 < sample_begin_.size() ? sample_begin_[s + 1] : path_end_.size();
  return {sample_begin_[s], end};
}

std::string_view FileTree::key(uint64_t s) const { return SplitPath(path(sample_begin_[s])).key; }
std::string_view FileTree::field(uint64_t file) const { return SplitPath(path(file)).field; }

uint64_t FileTree::Fingerprint() const {
  Xxh3Hasher h;
  h.Update(arena_);
  h.Update(path_end_.data(), path_end_.size() * sizeof(uint64_t));
  h.Update(sample_begin_.data(), sample_begin_.size() * sizeof(uint64_t));
  return h.Digest();
}

uint64_t FileTree::memory_bytes() const {
  return arena_.capacity() + path_end_.capacity() * 8 + sample_begin_.capacity() * 8;
}

namespace {

// A backend's error, which names the file's full path, restated about `rel`: an InputFile's
// errors name the path inside the source, and the caller prefixes the source (as for an
// archive's members). Always kBadInput: the input's fault, exit 1.
Status RelativeError(const Status& s, const std::string& full, std::string_view rel) {
  std::string m = s.message();
  if (m.rfind(full, 0) == 0) m = std::string(rel) + m.substr(full.size());
  return Status(Code::kBadInput, m, s.err());
}

}  // namespace

Result<InputFile> InputFile::Open(Storage& storage, const std::string& root,
                                  const std::string& rel_path, uint64_t inline_limit) {
  InputFile f;
  f.path_ = rel_path;
  const std::string full = root + "/" + rel_path;
  auto file = storage.OpenRead(full);
  if (!file.ok()) return RelativeError(file.status(), full, rel_path);
  f.size_ = (*file)->size();
  if (f.size_ > inline_limit) {
    f.owned_ = std::move(*file);
    f.file_ = f.owned_.get();
    return f;
  }
  // Read one byte more than expected to notice a file that grew since it was opened.
  f.data_.reset(new char[f.size_ + 1]);
  auto n = (*file)->ReadSome(0, f.data_.get(), f.size_ + 1);
  if (!n.ok()) return RelativeError(n.status(), full, rel_path);
  if (*n != f.size_) {
    return Status(Code::kBadInput, fmt::format("{}: file changed size while being read ({} bytes "
                                               "at open, {} read); re-run once it is stable",
                                               EscapeBytes(rel_path), f.size_, *n));
  }
  return f;
}

InputFile InputFile::FromMemory(std::string path, std::unique_ptr<char[]> data, uint64_t size) {
  InputFile f;
  f.path_ = std::move(path);
  f.data_ = std::move(data);
  f.size_ = size;
  return f;
}

InputFile InputFile::FromFile(std::string path, std::unique_ptr<RandomAccessFile> file,
                              uint64_t size) {
  InputFile f;
  f.path_ = std::move(path);
  f.owned_ = std::move(file);
  f.file_ = f.owned_.get();
  f.size_ = size;
  return f;
}

InputFile InputFile::FromRange(std::string path, const RandomAccessFile* file, uint64_t offset,
                               uint64_t size) {
  InputFile f;
  f.path_ = std::move(path);
  f.file_ = file;
  f.size_ = size;
  f.range_offset_ = offset;
  return f;
}

Result<size_t> InputFile::ReadChunk(char* buf, size_t cap) {
  uint64_t left = size_ - pos_;
  size_t want = static_cast<size_t>(std::min<uint64_t>(cap, left));
  if (range_offset_) {
    if (want == 0) return size_t{0};
    DS_RETURN_IF_ERROR(file_->ReadAt(*range_offset_ + pos_, buf, want, path_));
    pos_ += want;
    return want;
  }
  if (want == 0) {
    char extra;
    auto n = file_->ReadSome(size_, &extra, 1);
    if (!n.ok()) return RelativeError(n.status(), file_->name(), path_);
    if (*n != 0) {
      return Status(Code::kBadInput, fmt::format("{}: file grew while being read (was {} bytes); "
                                                 "re-run once it is stable",
                                                 EscapeBytes(path_), size_));
    }
    return size_t{0};
  }
  auto got = file_->ReadSome(pos_, buf, want);
  if (!got.ok()) return RelativeError(got.status(), file_->name(), path_);
  size_t n = *got;
  if (n != want) {
    return Status(Code::kBadInput, fmt::format("{}: file shrank while being read (was {} bytes, "
                                               "ended at {}); re-run once it is stable",
                                               EscapeBytes(path_), size_, pos_ + n));
  }
  pos_ += n;
  return n;
}

}  // namespace ds
