// SampleSource: where `dspack convert` reads samples from (docs/cli.md#convert).
//
// Every source first lists itself into a FileTree (paths grouped into samples, in output order),
// which gives the sample count, the keys (for labels), and a fingerprint (for --resume). Then
// Load(i) returns sample i's files, either in memory or as streams (InputFile).
//   - Random-access sources (a directory tree) allow Load from many threads, in any order.
//   - Sequential sources (archives) require Load(i) from one thread with i increasing by one
//     from the first call; the first call may start past 0 (resume) and skips what precedes it.
// A LoadedSample with a non-OK status is a bad input (bad_path names it); what the caller does
// with it (stop or skip) is the caller's policy.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "formats/layout.h"
#include "formats/sources/dir_source.h"
#include "src/status.h"

namespace ds {

// What a file was when it was stat'd: two stats that differ in either are different versions.
struct FileVersion {
  uint64_t size = 0;
  int64_t mtime_ns = 0;
  bool operator==(const FileVersion&) const = default;
};

struct LoadedSample {
  uint64_t sample = 0;
  std::vector<InputFile> files;  // one per file of the sample, in FileTree order
  Status status;
  std::string bad_path;
};

class SampleSource {
 public:
  virtual ~SampleSource() = default;
  virtual const FileTree& tree() const = 0;
  virtual bool random_access() const = 0;
  // REQUIRES: i < tree().sample_count(); see the ordering rule above.
  virtual std::unique_ptr<LoadedSample> Load(uint64_t i) = 0;
  // Entries that are not samples and were left out by policy (archive directories, links...),
  // for the summary. Bad inputs are reported through on_error / LoadedSample instead.
  virtual uint64_t ignored_entries() const { return 0; }
  // Labels the source already carries (a native dataset made with --label-from-dir): the label
  // field name and the class names; empty field when none.
  virtual std::pair<std::string, std::vector<std::string>> labels() const { return {}; }
  // The size and modification time of tree() file `file` now, without reading it (a partitioned
  // convert plans its shards from the sizes, and its ranks compare both to prove they see the
  // same SRC, docs/mpi.md#partitioned-packing); kUnsupported where a source cannot. Thread-safe
  // where Load is.
  virtual Result<FileVersion> StatFile(uint64_t /*file*/) const {
    return Status(Code::kUnsupported, tree().root() + ": this source cannot size its files");
  }
};

// A directory tree: FileTree::Scan + InputFile::Open, thread-safe Load. root is a path inside
// storage (null: the local backend).
class DirSource : public SampleSource {
 public:
  static Result<std::unique_ptr<DirSource>> Open(std::shared_ptr<Storage> storage,
                                                 const std::string& root,
                                                 const DirScanOptions& options,
                                                 const ScanErrorFn& on_error,
                                                 uint64_t inline_limit);
  const FileTree& tree() const override { return tree_; }
  bool random_access() const override { return true; }
  std::unique_ptr<LoadedSample> Load(uint64_t i) override;
  Result<FileVersion> StatFile(uint64_t file) const override;  // Stat, following as Load opens

 private:
  FileTree tree_;
  std::shared_ptr<Storage> storage_;
  uint64_t inline_limit_ = 0;
};

namespace native {
class Dataset;
}

// A native dataset (reshard, realign, reshuffle): random access, thread-safe Load. Records up to
// inline_limit are read and checked whole; bigger ones are checked (data CRC) first, then
// streamed from the shard.
class NativeSource : public SampleSource {
 public:
  static Result<std::unique_ptr<NativeSource>> Open(const std::string& dir,
                                                    const DirScanOptions& options,
                                                    uint64_t inline_limit);
  ~NativeSource() override;
  const FileTree& tree() const override { return tree_; }
  bool random_access() const override { return true; }
  std::unique_ptr<LoadedSample> Load(uint64_t i) override;
  std::pair<std::string, std::vector<std::string>> labels() const override { return labels_; }

 private:
  std::unique_ptr<native::Dataset> ds_;
  FileTree tree_;
  std::vector<uint64_t> record_of_sample_;  // tree sample -> dataset sample
  std::vector<uint16_t> field_of_file_;     // tree file -> field index in its record
  uint64_t inline_limit_ = 0;
  std::pair<std::string, std::vector<std::string>> labels_;
};

// Any layout behind LayoutReader (wds, tfrecord, recordio, lmdb): random access, thread-safe
// Load; each sample is read whole into memory (its checks run before any byte is used).
class LayoutSource : public SampleSource {
 public:
  static Result<std::unique_ptr<LayoutSource>> Open(std::unique_ptr<LayoutReader> reader,
                                                    const DirScanOptions& options);
  const FileTree& tree() const override { return tree_; }
  bool random_access() const override { return true; }
  std::unique_ptr<LoadedSample> Load(uint64_t i) override;
  std::pair<std::string, std::vector<std::string>> labels() const override { return labels_; }

 private:
  std::unique_ptr<LayoutReader> reader_;
  FileTree tree_;
  std::vector<uint64_t> record_of_sample_;
  std::vector<uint16_t> field_of_file_;
  std::pair<std::string, std::vector<std::string>> labels_;
};

// Archive file extensions handled by ArchiveSource (.zip, .tar, .tar.gz, .tgz, .tar.zst, ...).
bool LooksLikeArchive(const std::string& path);

}  // namespace ds
