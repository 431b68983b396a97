// The packer's pipeline object (pack/packer.h has the contract): internal to pack/, shared by
// packer.cc (the one-process convert) and packer_part.cc (a partitioned one, pack/partition.h).
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "formats/sources/source.h"
#include "pack/packer.h"
#include "src/human.h"
#include "src/progress.h"

namespace ds::internal {

using nlohmann::json;

using Clock = std::chrono::steady_clock;
inline double Since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// Labels from the first path component of each key (ImageNet layout ROOT/class/file).
struct Labels {
  std::vector<std::string> names;  // sorted
  Status Build(const FileTree& tree) {
    std::string prev;
    for (uint64_t s = 0; s < tree.sample_count(); s++) {
      std::string_view key = tree.key(s);
      auto slash = key.find('/');
      if (slash == std::string_view::npos) continue;  // reported per sample in Of()
      std::string_view cls = key.substr(0, slash);
      if (cls != prev) {
        names.emplace_back(cls);
        prev.assign(cls);
      }
    }
    std::sort(names.begin(), names.end());
    names.erase(std::unique(names.begin(), names.end()), names.end());
    for (const auto& n : names) {
      if (n.find('\n') != std::string::npos) {
        return Status(Code::kBadInput, fmt::format("class folder '{}' has a newline in its name; "
                                                   "rename it or drop `label_from_dir`",
                                                   EscapeBytes(n)));
      }
    }
    return Status::Ok();
  }
  Result<std::string> Of(std::string_view key) const {
    auto slash = key.find('/');
    if (slash == std::string_view::npos) {
      return Status(Code::kBadInput, fmt::format("{}: not inside a class folder, so "
                                                 "`label_from_dir` cannot label it; move it into "
                                                 "one or `exclude` it",
                                                 EscapeBytes(key)));
    }
    auto it = std::lower_bound(names.begin(), names.end(), key.substr(0, slash));
    return std::to_string(it - names.begin() + base);
  }
  int64_t base = 0;  // the first class's number
};

class Packer {
 public:
  Packer(const ConvertOptions& o, ConvertReport* r) : o_(o), r_(r) {}

  Status Run();

 private:
  Status CheckSchemaOptions() const;

  // LMDB's pickle and caffe layouts store (image, label): the imagenet schema, and only it.
  // `schema` is the schema when known (asked for, or resolved after the scan).
  Status CheckLmdbLayout(std::optional<SchemaKind> schema) const;

  // The schema asked for, or the default: imagenet for a labelled tree of single images written
  // to an interop layout (what its loaders expect), raw otherwise.
  Schema ResolveSchema(const FileTree& tree) const;

  // OUT inside SRC would pack the dataset into itself.
  Status CheckOutsideSource() const;

  // SRC's backend and the path inside it: src_storage and src as given, or OpenStorage(src)
  // (a plain path, nfs://...). Set once by Run / RunPartitioned before anything reads SRC.
  Status ResolveSrc();
  const StorageRef& Src() const { return src_; }

  json CreationOptions() const;
  // What every layout's writer takes from ConvertOptions (existing, OUT's storage).
  CommonWriterOptions WriterCommon() const {
    CommonWriterOptions c;
    c.existing = o_.existing;
    c.storage = o_.out_storage;
    return c;
  }
  // What a resume must find unchanged: the creation options and the source's file list.
  json RunRecord() const;

  void Skip(std::string_view path, const Status& s);

  // Writes one loaded sample. Returns non-OK for a bad input (the caller decides skip or stop);
  // output errors are stored in error_.
  Status Write(LoadedSample& l);

  // A layout may refuse a sample it cannot represent (kBadInput: a non-numeric RecordIO label, a
  // field name too long for an LMDB key...): that is a bad input, under --on-error's policy.
  // Anything else from the writer is an output failure.
  Status OutputOrRefused(Status s, std::string_view key, LoadedSample* l);

  // Marks an output-side failure: always fatal.
  Status Output(Status s);

  // After the scan: the schema, the labels, the shuffle, for the writer and Write.
  Status PrepareSamples();

  // Loads and writes the samples of `ranges` ([begin, end) output positions), in order.
  void RunPipeline(const std::vector<std::pair<uint64_t, uint64_t>>& ranges);

  // `mpirun dspack convert` (packer_part.cc, pack/partition.h).
  Status RunPartitioned(Clock::time_point t0);
  // The steps of RunPartitioned; each is agreed on by every process before the next.
  Status PartCheck() const;
  Status PartCreateWriter();
  Status PartScan();
  Status PartWrite(const std::vector<uint64_t>& starts, uint64_t first, uint64_t last,
                   const std::string& done, std::string* part);
  // Files whose size the plan used (a partitioned convert): Write refuses another size.
  std::vector<uint64_t> planned_sizes_;

  const ConvertOptions& o_;
  StorageRef src_;
  ConvertReport* r_;
  WriterOptions wopt_;
  std::unique_ptr<LayoutWriter> writer_;
  ResumableWriter* resumable_ = nullptr;  // writer_'s resume capability, or null
  PartitionedWriter* parted_ = nullptr;   // its partitioned-write capability (RunPartitioned)
  std::unique_ptr<SampleSource> source_;
  Labels labels_;
  std::vector<uint64_t> perm_;
  std::unique_ptr<Progress> progress_;
  std::string chunk_;
  uint64_t files_done_ = 0;
  Status error_;
};

}  // namespace ds::internal
