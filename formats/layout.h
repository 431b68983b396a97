// One reader and one writer interface for every dataset layout dspack writes and reads:
// native shards (docs/formats/native.md), WebDataset tar (wds.md), TFRecord (tfrecord.md),
// MXNet RecordIO (recordio.md) and LMDB (lmdb.md).
//
// LayoutWriter: samples are added in order, either whole (Add) or streamed (BeginSample with the
// field sizes, AppendData with the payload bytes of all fields in order, EndSample). Finish()
// commits the dataset (its metadata file is written last, by atomic rename); Abandon() or
// destruction without Finish() removes every file the writer created, so a failed run leaves
// nothing under a final name. Single-threaded. Resume (BeginRun/ResumeRun) is native-only; the
// other writers refuse `resume` at creation.
//
// LayoutReader: enumerate (size), random access by sample number (Get/Head; every layout gets an
// in-memory table of where each sample is, from its index or from one scan at open), and
// sequential streaming (Get in increasing order reads each shard front to back). Get and Head are
// thread-safe. Every corruption is a Status of code kCorruption whose message names the file,
// the offset and, when readable, the key; nothing crashes on bad bytes.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "formats/sample.h"
#include "src/status.h"

namespace ds {

enum class Format { kNative, kWds, kTfrecord, kRecordio, kLmdb };

// "native", "wds", "tfrecord", "recordio", "lmdb".
std::string_view FormatName(Format f);
Result<Format> ParseFormat(std::string_view name);

struct LayoutOptions {
  uint64_t shard_size = 256ull << 20;
  uint32_t align = 1;  // native only
  bool force = false;  // replace an existing dataset in OUT (only dspack's own files)
  bool resume = false;
  std::string lmdb_layout = "field";    // "field" or "sample" (docs/formats/lmdb.md)
  bool wds_dali_index = false;          // also write DALI wds2idx sidecars
  uint64_t lmdb_map_size = 1ull << 30;  // first LMDB map size; doubled on MDB_MAP_FULL
  nlohmann::json creation_options = nlohmann::json::object();
};

struct LayoutSummary {
  uint64_t samples = 0;
  uint64_t shards = 0;
  uint64_t payload_bytes = 0;
  uint64_t bytes_written = 0;
};

class LayoutWriter {
 public:
  virtual ~LayoutWriter() = default;

  virtual Status BeginSample(std::string_view key, std::span<const FieldInfo> fields) = 0;
  virtual Status AppendData(std::string_view chunk) = 0;
  virtual Status EndSample() = 0;
  virtual void CancelSample() = 0;  // drops the sample in progress
  Status Add(const Sample& sample);

  virtual void AddSkipped(std::string_view path, std::string_view error) = 0;
  virtual void SetClasses(std::vector<std::string> names, std::string label_field) = 0;
  virtual void ReserveSamples(uint64_t) {}
  virtual uint64_t samples() const = 0;
  virtual uint64_t payload_bytes() const = 0;
  virtual Status Finish(LayoutSummary* summary) = 0;
  virtual void Abandon() = 0;

  // Resume protocol (native only, see formats/native_dataset.h).
  virtual bool already_complete() const { return false; }
  virtual Status BeginRun(const nlohmann::json&) { return Status::Ok(); }
  virtual Result<uint64_t> ResumeRun(const nlohmann::json&);
  virtual void SetSourcePosition(uint64_t) {}
  virtual uint64_t restored_skipped() const { return 0; }
};

// Creates OUT (if missing) and a writer for format f. Refuses an OUT holding a dataset unless
// options.force, and an OUT holding anything else.
Result<std::unique_ptr<LayoutWriter>> CreateLayoutWriter(Format f, const std::string& out,
                                                         const LayoutOptions& options);

// Key and field sizes of one sample, without its bytes.
struct SampleHead {
  std::string key;
  std::vector<FieldInfo> fields;
  uint64_t payload_len() const {
    uint64_t n = 0;
    for (const auto& f : fields) n += f.size;
    return n;
  }
};

// Where a sample is stored, for `ls -l` and error messages.
struct SampleLocation {
  std::string file;  // shard file name (relative to the dataset path)
  uint64_t offset = 0;
};

struct LayoutVerifyReport {
  uint64_t shards = 0;
  uint64_t records = 0;
  uint64_t bytes = 0;
  std::vector<std::string> problems;
  bool ok() const { return problems.empty(); }
};
using LayoutProgress = std::function<void(uint64_t samples, uint64_t bytes)>;

class LayoutReader {
 public:
  virtual ~LayoutReader() = default;
  virtual Format format() const = 0;
  const std::string& path() const { return path_; }
  virtual uint64_t size() const = 0;
  virtual Result<Sample> Get(uint64_t i) const = 0;   // REQUIRES: i < size()
  virtual Result<SampleHead> Head(uint64_t i) const;  // default: from Get
  virtual Result<SampleLocation> Locate(uint64_t i) const = 0;
  // Sample number with this key (a key table is built on first use), or nullopt.
  virtual Result<std::optional<uint64_t>> Find(std::string_view key) const;
  // Label field name ("" when unlabelled) and class names (classes.txt).
  virtual std::string label_field() const { return label_field_; }
  virtual const std::vector<std::string>& classes() const { return classes_; }
  // The files holding the samples (shards, data.mdb), as paths usable from the caller's cwd.
  virtual std::vector<std::string> DataFiles() const = 0;
  // Format-specific facts for `info` (shards, index kind, layout...).
  virtual nlohmann::json Info() const = 0;
  // Sample i's payload as fn(field_index, chunk), in field order; a layout that can stream
  // (native) checks the data checksum after the last chunk: commit nothing before OK.
  virtual Status StreamPayload(uint64_t i,
                               const std::function<Status(size_t, std::string_view)>& fn) const;
  // Checks every byte the layout lets us check; corruption goes to report->problems.
  virtual Status Verify(LayoutVerifyReport* report, const LayoutProgress& progress) const;

 protected:
  std::string path_;
  std::string label_field_;
  std::vector<std::string> classes_;

 private:
  mutable std::mutex keys_mu_;
  mutable std::unique_ptr<std::unordered_map<std::string, uint64_t>> keys_;
};

// Opens the dataset at `path` in whichever layout it is (detection: docs/formats/README.md).
Result<std::unique_ptr<LayoutReader>> OpenLayout(const std::string& path);
// The layout at path when it is one dspack reads as a dataset (not a plain directory tree or a
// plain archive); nullopt otherwise.
std::optional<Format> DetectLayout(const std::string& path);

}  // namespace ds
