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
// Dataset opens a finished dataset for reading: the manifest, the memory-mapped global index,
// and shard files opened lazily. Get/Head/Find are thread-safe.
#pragma once

#include <sys/stat.h>

#include <cstdint>
#include <functional>
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
#include "formats/sample.h"

namespace ds::native {

using DatasetSummary = LayoutSummary;

class DatasetWriter : public LayoutWriter, public ResumableWriter {
 public:
  // Creates OUT (if missing). Refuses an OUT holding a dataset unless options.force, and an OUT
  // holding anything else (kAlreadyExists, message says what to do).
  // With ExistingOutput::kResume, OUT may hold an interrupted run (or a finished dataset: then
  // already_complete() is true and the caller should stop).
  static Result<std::unique_ptr<DatasetWriter>> Create(const std::string& out,
                                                       const NativeOptions& options);
  ~DatasetWriter() override;
  ResumableWriter* resumable() override { return this; }
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

 private:
  DatasetWriter(std::string out, NativeOptions options, bool created_dir);
  Status FinishShard();
  Status OpenShard();
  Status Checkpoint(const FileMeta& shard);
  Status Fail(Status s);

  std::string out_;
  NativeOptions options_;
  bool created_dir_;
  bool resuming_;
  OwnedFd out_lock_;  // OUT's lock (formats/out_dir.h), released at commit or Abandon
  std::unique_ptr<ShardWriter> shard_;
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

class Dataset {
 public:
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
  // Sample i's record for a batched read: its shard's fd (owned by the dataset) and its range.
  Result<std::pair<int, GlobalEntry>> RecordExtent(uint64_t i) const;
  // Decodes sample i from exactly its record's bytes (checked as Get checks them).
  Result<Sample> DecodeRecordBytes(uint64_t i, const GlobalEntry& e, std::string_view bytes) const;
  // Class names from classes.txt (empty when the dataset has no labels).
  Result<std::vector<std::string>> Classes() const;

 private:
  // Opens shard files lazily; checks each one's size against the manifest on first open, so a
  // truncated shard is reported even when the records asked for are intact. Generation check:
  // once the shard is open, manifest.json must still be the file Open read (convert --force
  // removes it before any shard and writes a new one last), else kIOError "replaced since it
  // was opened": a shard of another dataset is never read under this one's index.
  Result<int> ShardFd(uint32_t shard) const;
  Status CheckNotReplaced() const;
  // Entry i of the global index, checked against the manifest's shard sizes.
  Result<GlobalEntry> Entry(uint64_t i) const;
  std::string Where(uint64_t i, const GlobalEntry& e) const;

  std::string dir_;
  Manifest manifest_;
  GlobalIndex index_;
  mutable std::mutex mu_;
  mutable std::vector<OwnedFd> fds_;
  struct stat manifest_stat_ = {};  // manifest.json as Open read it
};

}  // namespace ds::native
