// A native dataset: a directory of shards + index.dsi + manifest.json (+ classes.txt).
//
// DatasetWriter appends samples in order, rolling to a new shard when the next record would push
// the current one past `shard_size` (a record larger than shard_size gets a shard of its own).
// Crash-safety contract: shards are written as "shard-NNNNNN.dsr.tmp", fsync'd and renamed when
// full; index.dsi and classes.txt are written next; manifest.json is written last by atomic
// rename and is the commit point. Abandon() (or destruction without Finish) removes every file
// the writer created. Single-threaded: one producer calls it.
//
// Resume (docs/formats/native.md#crash-safety-and-resume): BeginRun() records the run (creation
// options + a fingerprint of the source) in OUT/.dspack-run.json; after each shard is renamed, a
// checkpoint line (shard, sizes, hash, source position, skipped inputs so far) is appended to
// OUT/.dspack-journal and fsync'd. After a crash, a writer created with `resume` and
// ResumeRun() keeps the checkpointed shards, deletes everything after them, and returns the
// source position to continue from; the finished dataset is byte-identical to an uninterrupted
// run. The caller reports its position with SetSourcePosition(i) before each source item.
//
// Partitioned (formats/layout.h, PartitionedWriter; native_part_writer.cc): the processes of a
// job each write a contiguous range of the planned shards and journal them in their own
// OUT/.dspack-journal.<part>; the root commits. A resumed job (any number of processes) keeps
// every journaled shard that is in place and matches the plan, whichever process wrote it.
//
// Dataset opens a finished dataset for reading: the manifest, the memory-mapped global index,
// and shard files opened lazily. Get/Head/Find are thread-safe.
#pragma once

#include <sys/stat.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "formats/layout.h"
#include "formats/native/global_index.h"
#include "formats/native/manifest.h"
#include "formats/native/native_format.h"
#include "formats/native/native_shard.h"
#include "formats/out_dir.h"
#include "formats/sample.h"

namespace ds::native {

using DatasetSummary = LayoutSummary;

// The shard roll rule: a record of `len` bytes starts a new shard when the shard holds records
// and would then pass shard_size (with its index and footer). next_offset is where it would
// start (ShardWriter::next_offset).
inline bool ShardIsFull(uint64_t next_offset, uint64_t records, uint64_t len, uint64_t shard_size) {
  return records > 0 &&
         next_offset + len + (records + 1) * kIndexEntrySize + kFooterSize > shard_size;
}

class DatasetWriter : public LayoutWriter, public ResumableWriter, public PartitionedWriter {
 public:
  // Creates OUT (if missing). Refuses an OUT holding a dataset unless options.force, and an OUT
  // holding anything else (kAlreadyExists, message says what to do).
  // With ExistingOutput::kResume, OUT may hold an interrupted run (or a finished dataset: then
  // already_complete() is true and the caller should stop).
  static Result<std::unique_ptr<DatasetWriter>> Create(const std::string& out,
                                                       const NativeOptions& options);
  ~DatasetWriter() override;
  ResumableWriter* resumable() override { return this; }
  PartitionedWriter* partitioned() override { return this; }
  bool already_complete() const override { return already_complete_; }

  // Fresh run: records `run` (must include everything that determines the output) for resume.
  Status BeginRun(const nlohmann::json& run) override;
  // Resumed run: checks `run` equals the recorded one, restores the checkpointed state and
  // returns the source position to continue from (0 when nothing was checkpointed).
  Result<uint64_t> ResumeRun(const nlohmann::json& run) override;
  void SetSourcePosition(uint64_t pos) override { source_pos_ = pos; }
  // Expected number of samples (memory for the index is reserved once).
  void ReserveSamples(uint64_t n) override { index_.Reserve(n); }
  // Inputs skipped before this run resumed are restored from the journal; the count is here.
  uint64_t restored_skipped() const override { return restored_skipped_; }

  Status BeginSample(std::string_view key, std::span<const FieldInfo> fields) override;
  Status AppendData(std::string_view chunk) override;
  Status EndSample() override;
  void CancelSample() override;
  Status CheckSample(std::string_view key, std::span<const FieldInfo> fields) const override {
    return CheckRecordShape(key, fields);
  }  // drops the sample in progress (e.g. its input changed while read)

  void AddSkipped(std::string_view path, std::string_view error) override;
  uint64_t skipped_count() const { return skipped_.size(); }
  // Class names in label order; written to classes.txt.
  void SetClasses(std::vector<std::string> names, std::string label_field) override;

  uint64_t samples() const override { return index_.size(); }
  uint64_t payload_bytes() const override { return payload_bytes_; }
  Status Finish(DatasetSummary* summary) override;
  void Abandon() override;

  // PartitionedWriter (native_part_writer.cc).
  Result<std::vector<uint64_t>> PlanShards(uint64_t n, const ShapeFn& shape) const override;
  Result<std::string> BeginJob(const nlohmann::json& run) override;
  Result<std::vector<std::pair<uint64_t, uint64_t>>> BeginPart(std::vector<uint64_t> starts,
                                                               uint64_t first, uint64_t last,
                                                               const std::string& done,
                                                               int part) override;
  Result<std::string> FinishPart() override;
  Status CommitParts(const std::vector<std::string>& parts, LayoutSummary* summary) override;

 private:
  struct Part;  // a partitioned write's state (native_part_writer.cc)

  DatasetWriter(StorageRef out, NativeOptions options, bool created_dir);
  Status FinishShard();
  // Opens shard number n, whose first sample is `first` (sequential: the next of each).
  Status OpenShard(uint64_t n, uint64_t first);
  Status OpenShard() { return OpenShard(manifest_.shards.size(), index_.size()); }
  Status Checkpoint(const FileMeta& shard);
  Status Fail(Status s);
  // Partitioned: finishes the shard in progress at a planned start, opens the one `len` begins.
  Status PartRoll(uint64_t len);
  void PartRecord(const IndexEntry& e);
  void PartShardDone(const FileMeta& meta);
  // Writes index.dsi, classes.txt and, last, manifest.json from manifest_.shards and index_.
  Status Commit(DatasetSummary* summary);

  std::shared_ptr<Storage> storage_;  // where OUT lives (formats/out_dir.h, OutputStorage)
  std::string out_;                   // OUT's path inside storage_
  NativeOptions options_;
  bool created_dir_;
  bool resuming_;
  OutDirState out_dir_;  // OUT's lock, and a staged replace (formats/out_dir.h): PublishOutput
  std::unique_ptr<ShardWriter> shard_;
  uint64_t shard_no_ = 0, shard_first_ = 0;  // the open shard's number and first sample
  std::string journal_;                      // this writer's journal: OUT/.dspack-journal[.<part>]
  std::unique_ptr<Part> part_;
  bool part_finished_ = false;  // FinishPart returned: the part's files stay until Abandon
  std::string pending_key_;
  uint64_t pending_payload_ = 0;
  Manifest manifest_;
  GlobalIndexBuilder index_;
  uint64_t payload_bytes_ = 0;
  uint64_t bytes_written_ = 0;
  nlohmann::json skipped_ = nlohmann::json::array();
  std::vector<std::string> classes_;
  std::vector<std::string> created_;  // final names created, removed by Abandon
  Status status_;
  bool done_ = false;
  bool already_complete_ = false;
  bool run_recorded_ = false;
  uint64_t source_pos_ = 0;
  uint64_t restored_skipped_ = 0;
};

// A partitioned write's state (native_part_writer.cc).
struct DatasetWriter::Part {
  std::vector<uint64_t> starts;
  uint64_t first = 0, last = 0;
  struct Shard {
    FileMeta meta;
    uint64_t payload = 0;
    std::string entries;  // per record: offset, length, key hash (LE u64 each)
  };
  std::map<uint64_t, Shard> shards;  // by number: the kept ones and each one finished
  Shard current;                     // the shard being written
};

class Dataset {
 public:
  // dir inside storage; the path-only form is local.
  static Result<std::unique_ptr<Dataset>> Open(std::shared_ptr<Storage> storage,
                                               const std::string& dir);
  static Result<std::unique_ptr<Dataset>> Open(const std::string& dir);
  const Manifest& manifest() const { return manifest_; }
  const std::string& dir() const { return dir_; }
  uint64_t size() const { return index_.size(); }
  const GlobalIndex& index() const { return index_; }

  Result<Sample> Get(uint64_t i) const;       // REQUIRES: i < size()
  Result<RecordHead> Head(uint64_t i) const;  // REQUIRES: i < size()
  // Streams sample i's payload: fn(field_index, chunk) in field order, in chunks of at most
  // 1 MiB, then checks the data checksum (kCorruption if it fails, after all chunks were given:
  // callers must not commit what they received until this returns OK).
  Status StreamPayload(uint64_t i, const RecordHead& head,
                       const std::function<Status(size_t, std::string_view)>& fn) const;
  // Sample number with this key, or nullopt.
  Result<std::optional<uint64_t>> Find(std::string_view key) const;
  // Where sample i's record is (checked against the manifest's shard sizes).
  Result<GlobalEntry> Locate(uint64_t i) const { return Entry(i); }
  std::string ShardPath(uint32_t shard) const { return dir_ + "/" + manifest_.shards[shard].name; }
  // Sample i's record for a batched read: its shard's file (owned by the dataset) and its range.
  Result<std::pair<const RandomAccessFile*, GlobalEntry>> RecordExtent(uint64_t i) const;
  // Decodes sample i from exactly its record's bytes (checked as Get checks them).
  Result<Sample> DecodeRecordBytes(uint64_t i, const GlobalEntry& e, std::string_view bytes) const;
  // Class names from classes.txt (empty when the dataset has no labels).
  Result<std::vector<std::string>> Classes() const;

 private:
  // Open opens every shard (up to half the open-file limit), so a dataset replaced (convert
  // --force) or removed later keeps being read from the files of the one opened, as the interop
  // layouts are. A shard not opened then (missing, of the wrong size, past the budget) is opened
  // here on first use, its size checked against the manifest, so a truncated shard is reported
  // even when the records asked for are intact. Generation check: once the shard is open,
  // manifest.json must still be the file Open read (convert --force removes it before any shard
  // and writes a new one last), else kIOError "replaced or removed since it was opened": a shard
  // of another dataset is never read under this one's index.
  Result<const RandomAccessFile*> ShardFile(uint32_t shard) const;
  Status CheckNotReplaced() const;
  void OpenShards();  // at Open: every shard it can, of the right size (see ShardFile)
  // Entry i of the global index, checked against the manifest's shard sizes.
  Result<GlobalEntry> Entry(uint64_t i) const;
  std::string Where(uint64_t i, const GlobalEntry& e) const;

  std::string dir_;
  Manifest manifest_;
  GlobalIndex index_;
  mutable std::mutex mu_;
  std::shared_ptr<Storage> storage_;
  mutable std::vector<std::unique_ptr<RandomAccessFile>> files_;
  FileInfo manifest_stat_;  // manifest.json as Open read it
};

}  // namespace ds::native
