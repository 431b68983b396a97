// What `dsbench replay` reads, and how a real loader reads it (docs/dsbench.md#replay):
//   a directory tree   open + fstat + read + close of every file of a sample, as torchvision's
//                      ImageFolder does (one open per file, every epoch);
//   any layout         through formats/ (LayoutReader::Get: shards and LMDB stay open, one
//                      positioned read per sample), as a WebDataset, tf.data, MXNet or
//                      python-lmdb loader does.
// It also knows the files that hold the dataset, to evict them from the page cache (fadvise
// DONTNEED, as fio's invalidate=1) and to measure how much of them is resident (mincore), so a
// "cold" epoch is proved, not assumed.
//
// Read(i) is thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "formats/dir_source.h"
#include "formats/layout.h"
#include "src/status.h"

namespace ds::bench {

struct SampleRead {
  uint64_t bytes = 0;
  uint64_t opens = 0;  // files opened for this sample
};

class ReplaySource {
 public:
  // A dataset in any layout dspack reads, or else a directory tree of files.
  static Result<std::unique_ptr<ReplaySource>> Open(const std::string& path);
  ~ReplaySource();

  const std::string& kind() const { return kind_; }  // "tree" or the layout's name
  uint64_t size() const { return samples_; }
  // Reads sample i whole (bytes are discarded: a loader would decode them).
  Result<SampleRead> Read(uint64_t i) const;
  // The files holding the dataset (tree files, or shards / data.mdb), absolute or relative to
  // the dataset path, with their total size.
  const std::vector<std::string>& files() const { return files_; }
  uint64_t total_bytes() const { return total_bytes_; }

  // fdatasync + posix_fadvise(DONTNEED) on every file: the kernel drops their cached pages
  // (dirty ones, e.g. of a dataset just written, are written back first, or they would stay).
  // Call it with the source closed: pages a reader maps (LMDB) cannot be dropped while mapped.
  static Status Evict(const std::vector<std::string>& files);
  // Fraction of the dataset's pages in the page cache (mincore on a mapping of each file).
  Result<double> Residency() const;

 private:
  std::string path_;
  std::string kind_;
  uint64_t samples_ = 0;
  std::unique_ptr<LayoutReader> layout_;
  FileTree tree_;
  std::vector<std::string> files_;
  uint64_t total_bytes_ = 0;
};

}  // namespace ds::bench
