// ShardedWriter: what the shard-file layouts (wds, tfrecord, recordio) share as writers.
//
// It owns OUT and the shard files `shard-NNNNNN.<ext>`: opens a shard lazily, rolls to a new one
// when the next sample would push the current one past shard_size (a sample never spans shards;
// the rule, RollsBefore, adds up the samples' PlannedSize, which their shapes give before any
// byte is read, so a partitioned write plans the same shards: PartitionedWriter below), writes each
// shard as `<name>.tmp` and fsyncs it once closed, writes each shard's sidecars (index files) as
// `<name>.tmp` too, and at the commit renames them all to their final names (Publish: checking
// each is here with the size written, so a root that does not see a part's shards refuses to
// commit), then writes classes.txt, dspack.crc (per-sample CRC32C,
// formats/interop/sample_crc.h) and dspack.json (the commit point, listing every file with its
// XXH3; formats/interop/layout_meta.h). It hashes every byte written (XXH3-64 per shard, for the
// metadata), splits the streamed payload into per-field chunks for the format's hooks, and rolls a
// cancelled sample back (truncate + hash state restore). Abandon() removes every file it created.
//
// A format implements the hooks; they write through Write()/WriteZeros().
//
// As a PartitionedWriter (formats/layout.h; `mpirun dspack convert`, docs/mpi.md): every process
// writes its range of shards, numbered and with sample numbers as in the plan; the root commits
// dspack.crc and dspack.json from every part. There is no resume (interop writers cannot resume),
// so BeginJob records nothing and lists no shard done. A part's description is JSON: its shards,
// their sidecars (name, size, xxh3), the per-sample CRC32Cs, its payload and bytes written.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "formats/interop/layout_meta.h"
#include "formats/interop/sample_crc.h"
#include "formats/layout.h"
#include "src/checksum.h"
#include "src/file_writer.h"

namespace ds {

class ShardedWriter : public LayoutWriter, public PartitionedWriter {
 public:
  ~ShardedWriter() override;

  Status BeginSample(std::string_view key, std::span<const FieldInfo> fields) final;
  Status AppendData(std::string_view chunk) final;
  Status EndSample() final;
  void CancelSample() final;
  void AddSkipped(std::string_view path, std::string_view error) final;
  void SetClasses(std::vector<std::string> names, std::string label_field) final;
  void SetSchema(const SchemaRecord& record) final;
  uint64_t samples() const final { return samples_; }
  uint64_t payload_bytes() const final { return payload_bytes_; }
  Status Finish(LayoutSummary* summary) final;
  void Abandon() final;
  // Writes OUT through storage (local until called) and keeps OUT's state (formats/out_dir.h:
  // its lock, none in a process that joined a partitioned write; a staged replace) until this
  // writer commits or is destroyed.
  void Attach(std::shared_ptr<Storage> storage, OutDirState dir) {
    storage_ = std::move(storage);
    out_dir_ = std::move(dir);
  }

  PartitionedWriter* partitioned() final { return this; }
  Result<std::vector<uint64_t>> PlanShards(uint64_t n, const ShapeFn& shape) const final;
  Result<std::string> BeginJob(const nlohmann::json& run) final;
  Result<std::vector<std::pair<uint64_t, uint64_t>>> BeginPart(std::vector<uint64_t> starts,
                                                               uint64_t first, uint64_t last,
                                                               const std::string& done,
                                                               int part) final;
  Result<std::string> FinishPart() final;
  Status CommitParts(const std::vector<std::string>& parts, LayoutSummary* summary) final;

 protected:
  // Sidecar files of a closed shard: (suffix replacing ".<ext>", content), e.g. (".idx", "...").
  using Sidecars = std::vector<std::pair<std::string, std::string>>;

  ShardedWriter(Format format, std::string out, ShardingOptions options, bool created_dir,
                std::string ext);

  // Bytes the sample will add to a shard, from its shape alone: exact where the encoding allows,
  // an estimate where it depends on the bytes (an int64 feature's value, RecordIO's split
  // records). Shards are cut on these, so it must not depend on anything but its arguments.
  virtual uint64_t PlannedSize(std::string_view key, std::span<const FieldInfo> fields) const = 0;
  // Bytes a shard of `samples` samples ends with after its last sample (a trailer), at most.
  virtual uint64_t TrailerSize(uint64_t /*samples*/) const { return 0; }
  // A sample starts (after any roll). Fields are announced here with their sizes.
  virtual Status SampleBegin(std::string_view key, std::span<const FieldInfo> fields) = 0;
  // Consecutive payload bytes of field f (fields with no bytes get no call).
  virtual Status FieldData(size_t f, std::string_view chunk) = 0;
  // All fields were given.
  virtual Status SampleEnd() = 0;
  // The sample in progress was dropped (its bytes are already truncated away).
  virtual void SampleCancelled() {}
  // A new shard was opened (reset per-shard state).
  virtual void ShardBegin() {}
  // The shard is complete: write its trailer and return its sidecars.
  virtual Status ShardEnd(Sidecars* sidecars) = 0;

  Status Write(std::string_view bytes);
  Status WriteZeros(uint64_t n);
  uint64_t shard_offset() const { return shard_->size(); }
  // The global number of the sample in progress (in a partitioned write too).
  uint64_t sample_number() const { return samples_; }
  uint64_t shard_samples() const { return shard_samples_; }
  const std::string& shard_name() const { return shard_name_; }
  const std::string& label_field() const { return meta_.label_field; }
  const std::vector<std::string>& classes() const { return classes_; }
  const SchemaRecord& schema() const { return schema_; }
  void SetExtra(const std::string& k, nlohmann::json v) { meta_.extra[k] = std::move(v); }

 private:
  // Whether a shard holding `samples` samples of planned `fill` bytes ends before a sample of
  // planned size `next` (the one roll rule of the writer and of PlanShards).
  bool RollsBefore(uint64_t fill, uint64_t samples, uint64_t next) const;
  Status OpenShard();
  Status CloseShard();
  Status Fail(Status s);
  Status Broken(const std::string& what);
  // Writes the one (empty) shard of an empty dataset.
  Status EmptyShard();
  // Renames every shard and sidecar in meta_ from `<name>.tmp` to its final name, after checking
  // that each is here with its listed size (kIOError naming the file and OUT's sharing if not).
  Status Publish();
  // Publish, then classes.txt, dspack.crc and dspack.json (CommitLayoutMeta), then a staged
  // replace swapped in (PublishOutput): the end of Finish and of CommitParts.
  Status CommitDataset(LayoutSummary* summary);
  LayoutSummary Summary() const;

  std::shared_ptr<Storage> storage_;  // where OUT lives (Attach)
  std::string out_;                   // OUT's path inside storage_
  ShardingOptions options_;
  bool created_dir_;
  OutDirState out_dir_;  // OUT's lock and a staged replace (formats/out_dir.h): CommitDataset
  std::string ext_;
  LayoutMeta meta_;
  std::vector<std::string> classes_;
  SchemaRecord schema_;
  std::unique_ptr<FileWriter> shard_;
  std::string shard_name_;
  std::string shard_tmp_;
  Xxh3Hasher hash_;
  Xxh3Hasher hash_at_sample_;
  uint64_t sample_start_ = 0;
  uint64_t fill_ = 0;            // the planned bytes of the shard's samples (RollsBefore)
  uint64_t fill_at_sample_ = 0;  // ... before the sample in progress
  uint64_t shard_samples_ = 0;
  uint64_t shard_first_ = 0;
  // The sample in progress: field sizes and where AppendData is.
  std::vector<uint64_t> field_sizes_;
  size_t field_ = 0;
  uint64_t field_left_ = 0;
  bool in_sample_ = false;
  SampleCrcBuilder crc_;        // of the sample in progress
  std::vector<uint32_t> crcs_;  // per sample, for dspack.crc
  uint64_t samples_ = 0;
  uint64_t payload_bytes_ = 0;
  uint64_t bytes_written_ = 0;
  std::vector<std::string> created_;  // final names, removed by Abandon
  Status status_;
  bool done_ = false;
  // A partitioned write (BeginPart): the plan's shard starts and this part's shards [first, last).
  struct Part {
    std::vector<uint64_t> starts;
    uint64_t first = 0, last = 0;
  };
  std::unique_ptr<Part> part_;
};

// Prepares OUT (PrepareInteropDir) and creates a writer W(out, options, created_dir), where
// Options is the layout's options struct (a ShardingOptions).
template <class W, class Options>
Result<std::unique_ptr<LayoutWriter>> CreateShardedWriter(const std::string& out,
                                                          const WriterOptions& options) {
  const auto& o = std::get<Options>(options);
  DS_RETURN_IF_ERROR(o.Validate());
  DS_ASSIGN_OR_RETURN(StorageRef ref, OutputStorage(out, o));
  OutDirState dir;
  if (o.join_job) {  // OUT is the job's root's to prepare and lock
    DS_RETURN_IF_ERROR(CheckJoinedDir(*ref.storage, ref.path));
  } else {
    DS_ASSIGN_OR_RETURN(dir, PrepareInteropDir(*ref.storage, ref.path, FormatOf(options), o));
  }
  std::unique_ptr<W> w(new W(o.join_job ? ref.path : dir.dir, o, dir.created));
  w->Attach(std::move(ref.storage), std::move(dir));
  return std::unique_ptr<LayoutWriter>(std::move(w));
}

}  // namespace ds
