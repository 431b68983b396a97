// A directory tree as a sample source (docs/formats/dir.md).
//
// FileTree::Scan walks ROOT once, through the storage interface (src/storage.h: one List per
// directory, a Stat of each symlink's target), and keeps the list of files compactly (one byte
// arena of relative paths + 8 bytes per file + 8 bytes per sample), grouped into samples by
// SplitPath. Order is deterministic: in each directory, files sorted bytewise by (key, field), then
// sub-directories sorted bytewise. Symlinks are followed; a symlink to an ancestor directory
// is reported as a loop. Walk problems (unreadable directory, broken symlink, symlink loop,
// special file) go to `on_error`, which returns OK to skip the path or an error to stop.
// --include/--exclude globs (fnmatch) apply to files: a pattern with a '/' matches the whole
// relative path ('*' crosses '/'), one without matches the file name.
//
// InputFile::Open reads one file of the tree through the storage: small files (<= inline_limit)
// are read whole into memory, bigger ones are left open for streaming with ReadChunk. Either way
// a size that changes while reading is an error (kBadInput) naming the file.
//
// Thread-safety: a FileTree is immutable after Scan and may be read from many threads.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "src/status.h"
#include "src/storage.h"

namespace ds {

struct DirScanOptions {
  std::vector<std::string> include;
  std::vector<std::string> exclude;
};

using ScanErrorFn = std::function<Status(std::string_view rel_path, const Status& error)>;

class FileTree {
 public:
  // root is a path inside storage. Errors given to on_error name the path relative to root.
  static Result<FileTree> Scan(Storage& storage, const std::string& root,
                               const DirScanOptions& options, const ScanErrorFn& on_error);

  FileTree() = default;
  explicit FileTree(std::string root) : root_(std::move(root)) {}
  // Adds a file after the last one; it joins the last sample when its key is the same.
  void Append(std::string_view rel_path);
  void ShrinkToFit();

  const std::string& root() const { return root_; }
  uint64_t sample_count() const { return sample_begin_.size(); }
  uint64_t file_count() const { return path_end_.size(); }
  std::string_view path(uint64_t file) const;
  // Files [first, second) of sample s.
  std::pair<uint64_t, uint64_t> files_of(uint64_t s) const;
  std::string_view key(uint64_t s) const;
  std::string_view field(uint64_t file) const;
  // XXH3-64 of the file list (paths and grouping), to recognise the same source on --resume.
  uint64_t Fingerprint() const;
  // Bytes held by the compact list (for the memory-bound docs and tests).
  uint64_t memory_bytes() const;

 private:
  std::string root_;
  std::string arena_;
  std::vector<uint64_t> path_end_;
  std::vector<uint64_t> sample_begin_;
  std::string last_key_;
};

class InputFile {
 public:
  // root/rel_path in storage; errors name rel_path.
  static Result<InputFile> Open(Storage& storage, const std::string& root,
                                const std::string& rel_path, uint64_t inline_limit);
  // Content already in memory (e.g. read from an archive).
  static InputFile FromMemory(std::string path, std::unique_ptr<char[]> data, uint64_t size);
  // A whole file to stream from its start (e.g. an archive entry spooled to a temp file).
  static InputFile FromFile(std::string path, std::unique_ptr<RandomAccessFile> file,
                            uint64_t size);
  // Bytes [offset, offset+size) of a file that holds more (a field inside a shard), owned by the
  // caller and outliving this: no check that the file ends there.
  static InputFile FromRange(std::string path, const RandomAccessFile* file, uint64_t offset,
                             uint64_t size);
  uint64_t size() const { return size_; }
  bool is_inline() const { return file_ == nullptr; }
  std::string_view data() const { return {data_.get(), is_inline() ? size_ : 0}; }  // inline
  // Streams the next chunk of a non-inline file into buf (up to cap); returns bytes read, 0 at
  // the declared end. A file that ends early or grows is kBadInput.
  Result<size_t> ReadChunk(char* buf, size_t cap);

 private:
  std::string path_;
  std::unique_ptr<RandomAccessFile> owned_;
  const RandomAccessFile* file_ = nullptr;  // owned_, or the caller's (FromRange); null: inline
  uint64_t size_ = 0;
  uint64_t pos_ = 0;
  std::optional<uint64_t> range_offset_;  // set by FromRange
  std::unique_ptr<char[]> data_;          // not zero-filled: it is read into at once
};

bool GlobMatch(const std::string& pattern, std::string_view rel_path);
// --include/--exclude as documented above.
bool PathWanted(const DirScanOptions& options, std::string_view rel_path);

}  // namespace ds
