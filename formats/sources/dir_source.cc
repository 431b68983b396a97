#include "formats/sources/dir_source.h"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <fnmatch.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
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

const char* TypeName(mode_t m) {
  if (S_ISFIFO(m)) return "a fifo";
  if (S_ISSOCK(m)) return "a socket";
  if (S_ISCHR(m)) return "a character device";
  if (S_ISBLK(m)) return "a block device";
  return "not a regular file";
}

struct Walker {
  const DirScanOptions& opts;
  const ScanErrorFn& on_error;
  FileTree& tree;
  std::vector<std::pair<dev_t, ino_t>> ancestors;

  // Walks directory `rel` (opened as dfd). Returns non-OK to stop.
  Status Walk(int dfd, const std::string& rel) {
    DIR* d = ::fdopendir(dfd);
    if (!d) {
      ::close(dfd);
      return on_error(rel, Status::FromErrno(errno, rel.empty() ? "." : rel, Code::kBadInput));
    }
    struct Entry {
      std::string name;
      bool is_dir;
    };
    std::vector<Entry> entries;
    int read_err = 0;
    for (;;) {
      errno = 0;  // readdir signals errors only through errno
      dirent* e = ::readdir(d);
      if (!e) {
        read_err = errno;
        break;
      }
      std::string name = e->d_name;
      if (name == "." || name == "..") continue;
      std::string child = Join(rel, name);
      struct stat st;
      if (e->d_type == DT_REG) {
        entries.push_back({name, false});
        continue;
      }
      if (e->d_type == DT_DIR) {
        entries.push_back({name, true});
        continue;
      }
      if (::fstatat(::dirfd(d), name.c_str(), &st, 0) != 0) {
        int err = errno;
        struct stat lst;
        bool is_link = ::fstatat(::dirfd(d), name.c_str(), &lst, AT_SYMLINK_NOFOLLOW) == 0 &&
                       S_ISLNK(lst.st_mode);
        Status s = err == ELOOP ? Status(Code::kBadInput, child + ": symlink loop", err)
                   : is_link && err == ENOENT ? Status(Code::kBadInput,
                                                       child +
                                                           ": broken symlink (its target does not "
                                                           "exist)",
                                                       err)
                                              : Status::FromErrno(err, child, Code::kBadInput);
        if (s.code() == Code::kNotFound) s = Status(Code::kBadInput, s.message(), err);
        Status r = on_error(child, s);
        if (!r.ok()) {
          ::closedir(d);
          return r;
        }
        continue;
      }
      if (S_ISREG(st.st_mode)) {
        entries.push_back({name, false});
      } else if (S_ISDIR(st.st_mode)) {
        entries.push_back({name, true});
      } else {
        Status r = on_error(
            child, Status(Code::kBadInput, child + ": " + TypeName(st.st_mode) +
                                               ", not a regular file: it cannot be packed"));
        if (!r.ok()) {
          ::closedir(d);
          return r;
        }
      }
    }
    if (read_err != 0) {
      ::closedir(d);
      return on_error(rel, Status::FromErrno(read_err, rel + ": readdir", Code::kBadInput));
    }
    auto sort_key = [](const Entry& e) {
      KeyField kf = SplitPath(e.name);
      return std::make_tuple(e.is_dir, e.is_dir ? std::string_view(e.name) : kf.key, kf.field);
    };
    std::sort(entries.begin(), entries.end(),
              [&](const Entry& a, const Entry& b) { return sort_key(a) < sort_key(b); });
    Status result;
    for (const auto& e : entries) {
      std::string child = Join(rel, e.name);
      if (!e.is_dir) {
        if (PathWanted(opts, child)) tree.Append(child);
        continue;
      }
      int cfd = ::openat(::dirfd(d), e.name.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
      if (cfd < 0) {
        result = on_error(child, Status::FromErrno(errno, child, Code::kBadInput));
        if (!result.ok()) break;
        continue;
      }
      struct stat st;
      ::fstat(cfd, &st);
      auto id = std::make_pair(st.st_dev, st.st_ino);
      if (std::find(ancestors.begin(), ancestors.end(), id) != ancestors.end()) {
        ::close(cfd);
        result = on_error(child, Status(Code::kBadInput,
                                        child + ": symlink loop (points back to "
                                                "an enclosing directory)",
                                        ELOOP));
        if (!result.ok()) break;
        continue;
      }
      ancestors.push_back(id);
      result = Walk(cfd, child);
      ancestors.pop_back();
      if (!result.ok()) break;
    }
    ::closedir(d);
    return result;
  }
};

}  // namespace

Result<FileTree> FileTree::Scan(const std::string& root, const DirScanOptions& options,
                                const ScanErrorFn& on_error) {
  int fd = ::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return Status::FromErrno(errno, root);
  struct stat st;
  ::fstat(fd, &st);
  FileTree t(root);
  Walker w{options, on_error, t, {{st.st_dev, st.st_ino}}};
  DS_RETURN_IF_ERROR(w.Walk(fd, ""));
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

Result<InputFile> InputFile::Open(int root_fd, const std::string& rel_path, uint64_t inline_limit) {
  InputFile f;
  f.path_ = rel_path;
  DS_ASSIGN_OR_RETURN(f.fd_, OpenFileAt(root_fd, rel_path, O_RDONLY));
  struct stat st;
  if (::fstat(f.fd_.get(), &st) != 0) return Status::FromErrno(errno, rel_path, Code::kBadInput);
  if (!S_ISREG(st.st_mode)) return Status(Code::kBadInput, rel_path + ": not a regular file");
  f.size_ = static_cast<uint64_t>(st.st_size);
  if (f.size_ > inline_limit) return f;
  // Read one byte more than expected to notice a file that grew since fstat.
  f.data_.reset(new char[f.size_ + 1]);
  DS_ASSIGN_OR_RETURN(size_t n, ReadUpTo(f.fd_.get(), f.data_.get(), f.size_ + 1, rel_path));
  if (n != f.size_) {
    return Status(Code::kBadInput, fmt::format("{}: file changed size while being read ({} bytes "
                                               "at open, {} read); re-run once it is stable",
                                               EscapeBytes(rel_path), f.size_, n));
  }
  f.fd_.reset();
  return f;
}

InputFile InputFile::FromMemory(std::string path, std::unique_ptr<char[]> data, uint64_t size) {
  InputFile f;
  f.path_ = std::move(path);
  f.data_ = std::move(data);
  f.size_ = size;
  return f;
}

InputFile InputFile::FromFd(std::string path, OwnedFd fd, uint64_t size) {
  InputFile f;
  f.path_ = std::move(path);
  f.fd_ = std::move(fd);
  f.size_ = size;
  return f;
}

InputFile InputFile::FromRange(std::string path, OwnedFd fd, uint64_t offset, uint64_t size) {
  InputFile f = FromFd(std::move(path), std::move(fd), size);
  f.range_offset_ = offset;
  return f;
}

Result<size_t> InputFile::ReadChunk(char* buf, size_t cap) {
  uint64_t left = size_ - pos_;
  size_t want = static_cast<size_t>(std::min<uint64_t>(cap, left));
  if (range_offset_) {
    if (want == 0) return size_t{0};
    DS_RETURN_IF_ERROR(ReadFullAt(fd_.get(), buf, want, *range_offset_ + pos_, path_));
    pos_ += want;
    return want;
  }
  if (want == 0) {
    char extra;
    DS_ASSIGN_OR_RETURN(size_t n, ReadUpTo(fd_.get(), &extra, 1, path_));
    if (n != 0) {
      return Status(Code::kBadInput, fmt::format("{}: file grew while being read (was {} bytes); "
                                                 "re-run once it is stable",
                                                 EscapeBytes(path_), size_));
    }
    return size_t{0};
  }
  DS_ASSIGN_OR_RETURN(size_t n, ReadUpTo(fd_.get(), buf, want, path_));
  if (n != want) {
    return Status(Code::kBadInput, fmt::format("{}: file shrank while being read (was {} bytes, "
                                               "ended at {}); re-run once it is stable",
                                               EscapeBytes(path_), size_, pos_ + n));
  }
  pos_ += n;
  return n;
}

}  // namespace ds
