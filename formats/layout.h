// One reader and one writer interface for every dataset layout dspack writes and reads:
// native shards (docs/formats/native.md), WebDataset tar (wds.md), TFRecord (tfrecord.md),
// MXNet RecordIO (recordio.md) and LMDB (lmdb.md). The registry (formats/registry.h) maps a
// Format to its reader and writer; callers above formats/ use only this header, layout_options.h
// and shard_assignment.h, and never name a metadata file.
//
// LayoutWriter: samples are added in order, either whole (Add) or streamed (BeginSample with the
// field sizes, AppendData with the payload bytes of all fields in order, EndSample). Finish()
// commits the dataset (its metadata file is written last, by atomic rename); Abandon() or
// destruction without Finish() removes every file the writer created, so a failed run leaves
// nothing under a final name. Single-threaded. A writer that can continue an interrupted run
// also implements ResumableWriter (native today); resumable() hands it out.
//
// LayoutReader: enumerate (size), random access by sample number (Get/Head; every layout gets an
// in-memory table of where each sample is, from its index or from one scan at open), sequential
// streaming (Get in increasing order reads each shard front to back), and ReadBatch: many samples
// with many reads in flight through an IO engine. Get, Head and ReadBatch are thread-safe. Every
// corruption is a Status of code kCorruption whose message names the file, the offset and, when
// readable, the key; nothing crashes on bad bytes.
#pragma once

#include <atomic>
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

#include "formats/format.h"
#include "formats/layout_options.h"
#include "formats/sample.h"
#include "formats/schema.h"
#include "src/status.h"
#include "src/storage.h"

namespace ds {

class IoEngine;  // src/io_engine.h
class ResumableWriter;
class PartitionedWriter;
class SubsetReader;  // formats/subset.cc

struct LayoutSummary {
  uint64_t samples = 0;
  uint64_t shards = 0;
  uint64_t payload_bytes = 0;
  uint64_t bytes_written = 0;
  // What the caller should tell the user of a run that succeeded: an output the storage could not
  // lock (NFS, S3), unfinished uploads of an interrupted writer that were cleaned (S3).
  std::vector<std::string> warnings;
};

class LayoutWriter {
 public:
  virtual ~LayoutWriter() = default;

  virtual Status BeginSample(std::string_view key, std::span<const FieldInfo> fields) = 0;
  virtual Status AppendData(std::string_view chunk) = 0;
  virtual Status EndSample() = 0;
  virtual void CancelSample() = 0;  // drops the sample in progress
  Status Add(const Sample& sample);
  // Whether this layout can store a sample with this key and fields (its limits: key length,
  // field count, name lengths); checked by the caller before BeginSample, so that a refusal is
  // bad input about that sample, not a broken writer. Default: no limits.
  virtual Status CheckSample(std::string_view, std::span<const FieldInfo>) const {
    return Status::Ok();
  }

  virtual void AddSkipped(std::string_view path, std::string_view error) = 0;
  virtual void SetClasses(std::vector<std::string> names, std::string label_field) = 0;
  // The schema the samples are stored under (formats/schema.h: WithSchema calls it before the
  // first sample and again before Finish), recorded in the metadata. Default: raw only (native).
  virtual void SetSchema(const SchemaRecord&) {}
  virtual void ReserveSamples(uint64_t) {}
  virtual uint64_t samples() const = 0;
  virtual uint64_t payload_bytes() const = 0;
  virtual Status Finish(LayoutSummary* summary) = 0;
  virtual void Abandon() = 0;

  // The resume capability, or null when this layout cannot continue an interrupted run.
  virtual ResumableWriter* resumable() { return nullptr; }
  // The capability of writing one dataset from several processes, or null (PartitionedWriter).
  virtual PartitionedWriter* partitioned() { return nullptr; }
};

// Continuing an interrupted write (docs/formats/native.md#crash-safety-and-resume). The caller
// records its run (everything that determines the output: source fingerprint and options) with
// BeginRun on a fresh write, or checks it against the recorded one with ResumeRun, which returns
// the source position to continue from; it reports that position with SetSourcePosition before
// each source item, so that a checkpoint knows where the source was.
// One writer owns OUT's run record and journal; a partitioned write (PartitionedWriter) journals
// per process and resumes through BeginJob instead.
class ResumableWriter {
 public:
  virtual ~ResumableWriter() = default;
  // Resume found a finished dataset made with the same options: nothing to do.
  virtual bool already_complete() const = 0;
  virtual Status BeginRun(const nlohmann::json& run) = 0;
  virtual Result<uint64_t> ResumeRun(const nlohmann::json& run) = 0;
  virtual void SetSourcePosition(uint64_t pos) = 0;
  // Inputs skipped before the run resumed (restored from the journal).
  virtual uint64_t restored_skipped() const = 0;
};

// One dataset written by the processes of a job (`mpirun dspack convert`,
// docs/mpi.md#partitioned-packing), byte-identical to one writer's output for any process count:
//   1. every process plans the same shards from the samples' shapes (PlanShards: the rule the
//      writer rolls shards by, applied to sizes known before any byte is read);
//   2. one process (the job's root, whose writer prepared OUT) calls BeginJob: a fresh run is
//      recorded, a resumed one checked, and the shards already complete are listed;
//   3. every process writes its own contiguous range of shards (BeginPart, then samples in
//      order through Begin/Append/EndSample with SetSourcePosition(sample) before each;
//      FinishPart returns what the root needs of them); shards listed done are not rewritten;
//   4. the root commits the dataset from every part, in shard order (CommitParts).
// The other processes' writers are created with CommonWriterOptions::join_job (OUT is the
// root's to prepare and lock). A sample whose size differs from the plan's is refused at the
// shard boundary it would move (kBadInput). Abandon removes only what this process made.
class PartitionedWriter {
 public:
  virtual ~PartitionedWriter() = default;
  // The sample numbers at which shards start (ascending, the first 0), then n: shard k holds
  // samples [starts[k], starts[k+1]). shape(s, &key, &fields) gives sample s's key and fields.
  using ShapeFn = std::function<void(uint64_t, std::string*, std::vector<FieldInfo>*)>;
  virtual Result<std::vector<uint64_t>> PlanShards(uint64_t n, const ShapeFn& shape) const = 0;
  // The root only: records `run` (as ResumableWriter::BeginRun) or, when OUT holds an
  // interrupted run (existing=resume), checks it against `run` and returns the shards already
  // complete, encoded for BeginPart.
  virtual Result<std::string> BeginJob(const nlohmann::json& run) = 0;
  // This process writes shards [first, last) of `starts`, except those in `done` (BeginJob's
  // answer); `part` numbers this process in the job. Returns the sample ranges to write, in
  // order.
  virtual Result<std::vector<std::pair<uint64_t, uint64_t>>> BeginPart(std::vector<uint64_t> starts,
                                                                       uint64_t first,
                                                                       uint64_t last,
                                                                       const std::string& done,
                                                                       int part) = 0;
  // Ends this process's part: its shards (written or kept), encoded for CommitParts.
  virtual Result<std::string> FinishPart() = 0;
  // The root, after its own FinishPart: writes the dataset's index and metadata from every
  // part (in part order) and commits it.
  virtual Status CommitParts(const std::vector<std::string>& parts, LayoutSummary* summary) = 0;
};

// The one shard planner of every PartitionedWriter: asks shape() for each sample in order and
// the writer's roll rule whether that sample starts a new shard (the rule keeps its own fill; an
// error stops the plan). Returns PlanShards' starts.
using ShardRoll =
    std::function<Result<bool>(const std::string& key, const std::vector<FieldInfo>& fields)>;
Result<std::vector<uint64_t>> PlanShardStarts(uint64_t n, const PartitionedWriter::ShapeFn& shape,
                                              const ShardRoll& roll);
// A broken invariant of a partitioned write (kInternal, exit 2): "OUT: partitioned write: what
// (a bug in dspack; please report it)".
Status PartitionedWriteBug(const std::string& out, const std::string& what);

// Creates OUT (if missing, PrepareOutputDir in formats/out_dir.h) and a writer for the layout of
// `options` (FormatOf), after Validate(options).
Result<std::unique_ptr<LayoutWriter>> CreateLayoutWriter(const std::string& out,
                                                         const WriterOptions& options);

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

// A file of a dataset as its metadata lists it: what dssync stages and checks while it copies.
struct DatasetFile {
  std::string name;  // relative to the dataset directory
  uint64_t size = 0;
  uint64_t samples = 0;  // shards: how many samples, from which sample number on
  uint64_t first_sample = 0;
  std::optional<uint64_t> xxh3;  // XXH3-64 of the whole file, when the metadata records it
};
struct DatasetFiles {
  std::string commit_point;           // the metadata file written last (the dataset's manifest)
  std::vector<DatasetFile> shards;    // in sample order
  std::vector<DatasetFile> metadata;  // index, classes, ... with hashes where recorded
};

// A shard and the samples it holds: [first_sample, first_sample + samples).
struct ShardRange {
  std::string file;  // relative to the dataset path
  uint64_t bytes = 0;
  uint64_t first_sample = 0;
  uint64_t samples = 0;
};

struct BatchReadOptions {
  unsigned inflight = 32;  // reads outstanding at once (K)
  bool allow_io_uring = true;
  // When set, incremented as each sample lands (decoded and checked), for a watcher on another
  // thread (the Python package's progress counter). Not reset: the caller owns it.
  std::atomic<uint64_t>* landed = nullptr;
};
struct BatchReadStats {
  std::string engine;  // "io_uring", "nfs" (a backend's engine), or "threads"
  uint64_t reads = 0;  // read requests issued (short reads requeued count again)
  // The bytes those requests returned, on an engine's path (io_uring, a backend's engine); 0 for
  // "threads", whose reads go through the storage's files (a CountingStorage counts them there).
  uint64_t bytes = 0;
  unsigned peak_inflight = 0;  // the most reads outstanding at once
};

class LayoutReader {
 public:
  virtual ~LayoutReader() = default;
  // The layout, or nullopt for a source read as a dataset (a zip file, a directory tree:
  // OpenAnyReader); kind() names either ("native", ..., "zip", "tree"). A reader without a
  // format overrides kind(); the default names the format, or "unknown" where there is none.
  virtual std::optional<Format> format() const = 0;
  virtual std::string_view kind() const {
    auto f = format();
    return f ? FormatName(*f) : std::string_view("unknown");
  }
  const std::string& path() const { return path_; }
  // Where the dataset's bytes live (src/storage.h): every file the reader opens, it opens here.
  Storage& storage() const { return *storage_; }
  virtual uint64_t size() const = 0;
  virtual Result<Sample> Get(uint64_t i) const = 0;   // REQUIRES: i < size()
  virtual Result<SampleHead> Head(uint64_t i) const;  // default: from Get
  virtual Result<SampleLocation> Locate(uint64_t i) const = 0;
  // Sample number with this key (a key table is built on first use), or nullopt.
  virtual Result<std::optional<uint64_t>> Find(std::string_view key) const;
  // Label field name ("" when unlabelled) and class names (classes.txt).
  virtual std::string label_field() const { return label_field_; }
  virtual const std::vector<std::string>& classes() const { return classes_; }
  // The schema the dataset was written with (raw for foreign data and native datasets).
  const SchemaRecord& schema() const { return schema_; }
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
  // `info` as aligned "key: value" lines (default: from Info()).
  virtual std::string InfoText() const;
  // The dataset's own files with sizes and hashes (ListDatasetFiles of the directory); an empty
  // list for foreign data that has no dspack metadata.
  virtual Result<DatasetFiles> Files() const;
  // Bytes stored per sample: what reading it costs, for balancing reads across ranks. Its record
  // as it lies in its file, framing included, from the index or the open-time table (native,
  // wds, tfrecord, recordio; a zip: its members' compressed sizes); its payload bytes where there
  // is no record to measure (default: Head of each sample: lmdb, a tree).
  virtual Result<std::vector<uint64_t>> SampleSizes() const;
  // The shards in sample order with the sample range each holds (default: from Locate).
  virtual Result<std::vector<ShardRange>> ShardRanges() const;
  // The whole dataset's shards, numbered as the whole dataset numbers its samples: a subset view
  // (formats/subset.h) holds some of them, and a reader planning a job-wide split (StreamDataset)
  // plans on these, then maps its rank's samples into the view. Default: ShardRanges().
  virtual Result<std::vector<ShardRange>> WholeShardRanges() const { return ShardRanges(); }

  // Reads samples `indices` (any order, repeats allowed): (*out)[j] is sample indices[j]. A layout
  // with sample extents (one contiguous byte range per sample) keeps options.inflight reads
  // outstanding through an io_uring engine (src/io_engine.h) and decodes each as it lands; on a
  // storage without local fds, through the storage's own engine (Storage::NewEngine: nfs://, one
  // connection per thread, kept with its open files from batch to batch). Samples next to each
  // other in a file (at most 4 KiB apart) are read as one request of up to max(1 MiB, the
  // batch's bytes / inflight), at most 8 MiB (formats/batch_read.cc): a stream's batch of
  // consecutive records is a few large reads, not a request per sample. One without extents
  // (LMDB: a memory map), or where neither engine is there (io_uring refused, a FaultStorage),
  // reads with options.inflight threads. Checksums are checked as by Get; the first error is
  // returned and ends the batch.
  // REQUIRES: every index < size().
  Status ReadBatch(std::span<const uint64_t> indices, const BatchReadOptions& options,
                   std::vector<Sample>* out, BatchReadStats* stats = nullptr) const;

 protected:
  struct SampleExtent {
    const RandomAccessFile* file = nullptr;  // owned by the reader; an engine reads its fd()
    uint64_t offset = 0;
    uint64_t length = 0;
  };
  // Whether Extent/DecodeExtent are implemented.
  virtual bool has_extents() const { return false; }
  // Where sample i's bytes lie: one contiguous range holding everything DecodeExtent needs.
  virtual Result<SampleExtent> Extent(uint64_t i) const;
  // Sample i from exactly the bytes of its extent (checksums checked, as Get does).
  virtual Result<Sample> DecodeExtent(uint64_t i, const SampleExtent& e,
                                      std::string_view bytes) const;

 protected:
  // `j` as aligned "key: value" lines (what InfoText shows of Info()).
  std::string InfoLines(const nlohmann::json& j) const;

  std::string path_;
  std::shared_ptr<Storage> storage_ = LocalStorage();
  std::string label_field_;
  std::vector<std::string> classes_;
  SchemaRecord schema_;

 private:
  friend class SubsetReader;  // forwards Extent/DecodeExtent of the samples it shows
  // The handle a request on file carries: its fd for io_uring, one the engine opened (OpenPath)
  // for a remote backend's own engine.
  using FileHandle = std::function<Result<int>(const RandomAccessFile& file)>;
  Status ReadBatchEngine(IoEngine& engine, const FileHandle& handle,
                         std::span<const uint64_t> indices, std::atomic<uint64_t>* landed,
                         std::vector<Sample>* out, BatchReadStats* stats) const;
  Status ReadBatchThreads(std::span<const uint64_t> indices, unsigned threads,
                          std::atomic<uint64_t>* landed, std::vector<Sample>* out,
                          BatchReadStats* stats) const;

  mutable std::mutex keys_mu_;
  mutable std::unique_ptr<std::unordered_map<std::string, uint64_t>> keys_;
};

// The files a dataset directory's metadata lists, read without opening the data (a damaged
// index or shard is dssync's to find, by hash); nullopt for a directory without dspack metadata
// (foreign shards, a plain tree). kCorruption when the metadata is unreadable.
Result<std::optional<DatasetFiles>> ListDatasetFiles(const std::string& dir);
Result<std::optional<DatasetFiles>> ListDatasetFiles(const StorageRef& at);
// Whether a file name is one of the layouts' metadata files (commit points, index, classes,
// sidecars *.idx and *.lst) rather than data.
bool IsLayoutMetadataName(std::string_view name);

// Every check `dspack verify` makes, for any layout. A dataset too damaged to open is one
// problem in the report (not an error); errors are for what is not a dataset at all.
Status VerifyLayout(const std::string& path, LayoutVerifyReport* report,
                    const LayoutProgress& progress);

// Opens the dataset at `path` in whichever layout it is (detection: docs/formats/README.md).
// A plain path is local; a URI names its backend (OpenStorage).
Result<std::unique_ptr<LayoutReader>> OpenLayout(const std::string& path);
// The same through a given backend (a decorator: CountingStorage for the bill, FaultStorage in
// tests); at.path is the dataset's path inside it.
Result<std::unique_ptr<LayoutReader>> OpenLayout(const StorageRef& at);
// Anything dspack reads as samples: a layout (OpenLayout), else a zip file, else a directory tree
// (formats/sources/source_readers.h), never a damaged native dataset (CheckNotDamagedDataset).
// A missing path is kNotFound; anything else (a tar, a plain file) is kBadInput.
Result<std::unique_ptr<LayoutReader>> OpenAnyReader(const std::string& path);
// The same through a given backend (OpenLayout(StorageRef)). The one dispatch on layout, zip or
// tree: the Python package, dsbench replay and compare all open their input here.
Result<std::unique_ptr<LayoutReader>> OpenAnyReader(const StorageRef& at);
// kCorruption when DIR holds a native dataset's data (its index or shards) without its
// manifest: a damaged or unfinished dataset, which must not be read as a plain tree. Reads
// through `storage` (its names, then dspack.json's), so it holds on every backend.
Status CheckNotDamagedDataset(Storage& storage, const std::string& dir);

// The layout at path when it is one dspack reads as a dataset (not a plain directory tree or a
// plain archive); nullopt otherwise.
std::optional<Format> DetectLayout(const std::string& path);

}  // namespace ds
