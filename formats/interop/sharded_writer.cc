#include "formats/interop/sharded_writer.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include "formats/out_dir.h"
#include "src/fd.h"

namespace ds {

ShardedWriter::ShardedWriter(Format format, std::string out, ShardingOptions options,
                             bool created_dir, std::string ext)
    : storage_(LocalStorage()),
      out_(std::move(out)),
      options_(std::move(options)),
      created_dir_(created_dir),
      ext_(std::move(ext)) {
  meta_.format = format;
  meta_.creation_options = options_.creation_options;
}

ShardedWriter::~ShardedWriter() {
  if (!done_) Abandon();
}

Status ShardedWriter::Fail(Status s) {
  s = ExplainNoSpace(out_dir_, std::move(s));
  if (!s.ok() && status_.ok()) status_ = s;
  return s;
}

Status ShardedWriter::Write(std::string_view bytes) {
  hash_.Update(bytes);
  return shard_->Append(bytes);
}

Status ShardedWriter::WriteZeros(uint64_t n) {
  static const char kZeros[4096] = {};
  while (n > 0) {
    uint64_t k = std::min<uint64_t>(n, sizeof(kZeros));
    DS_RETURN_IF_ERROR(Write(std::string_view(kZeros, k)));
    n -= k;
  }
  return Status::Ok();
}

bool ShardedWriter::RollsBefore(uint64_t fill, uint64_t samples, uint64_t next) const {
  return samples > 0 && fill + next + TrailerSize(samples + 1) > options_.shard_size;
}

Status ShardedWriter::OpenShard() {
  // A part's shards are numbered as in the plan: this part's first, then on.
  uint64_t number = (part_ ? part_->first : 0) + meta_.shards.size();
  if (part_ && (number >= part_->last || part_->starts[number] != samples_)) {
    return Broken(
        fmt::format("sample {} would start shard {}, which the plan does not", samples_, number));
  }
  shard_name_ = fmt::format("shard-{:06d}{}", number, ext_);
  shard_tmp_ = out_ + "/" + shard_name_ + ".tmp";
  DS_ASSIGN_OR_RETURN(auto file, storage_->OpenWrite(shard_tmp_, WriteMode::kTruncate));
  shard_ = std::make_unique<FileWriter>(std::move(file));
  // As the native shards: O_DIRECT skips the page-cache copy (and leaves the reader's cache
  // alone); where the file system refuses it, buffered with early writeback.
  if (!shard_->EnableDirect()) shard_->EnableWriteback();
  hash_.Reset();
  fill_ = 0;
  shard_samples_ = 0;
  shard_first_ = samples_;
  ShardBegin();
  return Status::Ok();
}

Status ShardedWriter::CloseShard() {
  Sidecars sidecars;
  DS_RETURN_IF_ERROR(ShardEnd(&sidecars));
  native::FileMeta m;
  m.name = shard_name_;
  m.size = shard_->size();
  m.samples = shard_samples_;
  m.first_sample = shard_first_;
  m.xxh3 = hash_.Digest();
  Status s = shard_->Close(/*sync=*/true);
  shard_.reset();
  // The shard stays under its temp name until the commit (Publish): a loader that globs
  // shard-*.tar never sees a shard of an unfinished dataset.
  if (!s.ok()) {
    (void)storage_->Remove(shard_tmp_);
    return s;
  }
  created_.push_back(shard_tmp_);
  std::string stem = shard_name_.substr(0, shard_name_.size() - ext_.size());
  for (const auto& [suffix, content] : sidecars) {
    std::string path = out_ + "/" + stem + suffix + ".tmp";
    DS_RETURN_IF_ERROR(WriteAll(*storage_, path, content));
    created_.push_back(path);
    ListMetaFile(&meta_, stem + suffix, content);
    bytes_written_ += content.size();
  }
  bytes_written_ += m.size;
  meta_.shards.push_back(std::move(m));
  return Status::Ok();
}

Status ShardedWriter::BeginSample(std::string_view key, std::span<const FieldInfo> fields) {
  DS_RETURN_IF_ERROR(status_);
  uint64_t planned = PlannedSize(key, fields);
  if (!shard_) {
    DS_RETURN_IF_ERROR(Fail(OpenShard()));
  } else if (RollsBefore(fill_, shard_samples_, planned)) {
    DS_RETURN_IF_ERROR(Fail(CloseShard()));
    DS_RETURN_IF_ERROR(Fail(OpenShard()));
  } else if (part_ && std::binary_search(part_->starts.begin(), part_->starts.end(), samples_)) {
    return Fail(
        Broken(fmt::format("the plan starts a shard at sample {}, the writer's rule "
                           "does not",
                           samples_)));
  }
  sample_start_ = shard_offset();
  fill_at_sample_ = fill_;
  fill_ += planned;
  hash_at_sample_.CopyFrom(hash_);
  field_sizes_.clear();
  for (const auto& f : fields) field_sizes_.push_back(f.size);
  field_ = 0;
  field_left_ = field_sizes_.empty() ? 0 : field_sizes_[0];
  in_sample_ = true;
  crc_.Begin(key, fields);
  Status s = SampleBegin(key, fields);
  if (!s.ok()) {
    // A refused sample (bad shape for this layout) is a bad input, not an output failure.
    CancelSample();
    return s;
  }
  return Status::Ok();
}

Status ShardedWriter::AppendData(std::string_view chunk) {
  DS_RETURN_IF_ERROR(status_);
  while (!chunk.empty()) {
    while (field_ < field_sizes_.size() && field_left_ == 0) {
      field_++;
      field_left_ = field_ < field_sizes_.size() ? field_sizes_[field_] : 0;
    }
    if (field_ >= field_sizes_.size()) {
      return Fail(Status(Code::kInternal, "AppendData: more bytes than the fields announced"));
    }
    size_t n = static_cast<size_t>(std::min<uint64_t>(field_left_, chunk.size()));
    DS_RETURN_IF_ERROR(Fail(FieldData(field_, chunk.substr(0, n))));
    crc_.Append(chunk.substr(0, n));
    field_left_ -= n;
    chunk.remove_prefix(n);
  }
  return Status::Ok();
}

Status ShardedWriter::EndSample() {
  DS_RETURN_IF_ERROR(status_);
  uint64_t total = 0;
  for (uint64_t s : field_sizes_) total += s;
  uint64_t given = 0;
  for (size_t f = 0; f < field_; f++) given += field_sizes_[f];
  if (field_ < field_sizes_.size()) given += field_sizes_[field_] - field_left_;
  if (given != total) {
    return Fail(Status(Code::kInternal, "EndSample: fewer bytes than the fields announced"));
  }
  Status end = SampleEnd();
  if (!end.ok() && end.code() == Code::kBadInput) {  // refused by the layout: drop the sample
    CancelSample();
    return end;
  }
  DS_RETURN_IF_ERROR(Fail(end));
  in_sample_ = false;
  crcs_.push_back(crc_.End());
  samples_++;
  shard_samples_++;
  payload_bytes_ += total;
  return Status::Ok();
}

void ShardedWriter::CancelSample() {
  if (!in_sample_ || !shard_) return;
  in_sample_ = false;
  (void)Fail(shard_->TruncateTo(sample_start_));
  hash_.CopyFrom(hash_at_sample_);
  fill_ = fill_at_sample_;
  SampleCancelled();
}

void ShardedWriter::AddSkipped(std::string_view path, std::string_view error) {
  meta_.skipped.push_back({{"path", std::string(path)}, {"error", std::string(error)}});
}

void ShardedWriter::SetSchema(const SchemaRecord& record) {
  schema_ = record;
  if (record.kind == SchemaKind::kRaw) {
    meta_.extra.erase("schema");
  } else {
    meta_.extra["schema"] = record.ToJson();
  }
}

void ShardedWriter::SetClasses(std::vector<std::string> names, std::string label_field) {
  classes_ = std::move(names);
  meta_.label_field = std::move(label_field);
}

Status ShardedWriter::Finish(LayoutSummary* summary) {
  DS_RETURN_IF_ERROR(status_);
  if (part_) return Fail(Broken("Finish in a partitioned write (FinishPart, CommitParts)"));
  DS_RETURN_IF_ERROR(Fail(EmptyShard()));
  meta_.samples = samples_;
  meta_.payload_bytes = payload_bytes_;
  return CommitDataset(summary);
}

Status ShardedWriter::CommitDataset(LayoutSummary* summary) {
  if (summary && !out_dir_.lock_warning.empty()) summary->warnings.push_back(out_dir_.lock_warning);
  DS_RETURN_IF_ERROR(Fail(Publish()));
  DS_RETURN_IF_ERROR(Fail(CommitLayoutMeta(*storage_, out_, classes_, crcs_, &meta_, &created_)));
  // A staged replace is swapped in now; then readers may open OUT.
  DS_RETURN_IF_ERROR(Fail(PublishOutput(*storage_, &out_dir_)));
  out_ = out_dir_.dir;
  done_ = true;
  if (summary) *summary = Summary();
  return Status::Ok();
}

Status ShardedWriter::Publish() {
  auto publish = [&](const native::FileMeta& m) -> Status {
    std::string final_path = out_ + "/" + m.name, tmp = final_path + ".tmp";
    DS_RETURN_IF_ERROR(CheckSeenHere(*storage_, tmp, m.size));
    DS_RETURN_IF_ERROR(storage_->Rename(tmp, final_path));
    created_.push_back(final_path);
    return Status::Ok();
  };
  for (const auto& m : meta_.shards) DS_RETURN_IF_ERROR(publish(m));
  for (const auto& m : meta_.files) DS_RETURN_IF_ERROR(publish(m));
  return storage_->SyncDir(out_);
}

Status ShardedWriter::EmptyShard() {
  // An empty dataset still gets one (empty) shard, so readers find a well-formed layout.
  if (!shard_ && meta_.shards.empty()) DS_RETURN_IF_ERROR(OpenShard());
  if (shard_) {
    if (shard_samples_ == 0 && !meta_.shards.empty()) {
      shard_.reset();
      (void)storage_->Remove(shard_tmp_);
    } else {
      DS_RETURN_IF_ERROR(CloseShard());
    }
  }
  return Status::Ok();
}

LayoutSummary ShardedWriter::Summary() const {
  LayoutSummary s;
  s.samples = meta_.samples;
  s.shards = meta_.shards.size();
  s.payload_bytes = payload_bytes_;
  s.bytes_written = bytes_written_;
  return s;
}

void ShardedWriter::Abandon() {
  done_ = true;
  if (shard_) {
    shard_.reset();
    (void)storage_->Remove(shard_tmp_);
  }
  // The metadata file goes first, so the directory never claims a dataset being removed.
  RemoveCreated(*storage_, created_, out_, created_dir_);
  created_.clear();
}

}  // namespace ds
