// DatasetWriter: shards, index, manifest, and the run journal that makes resume possible.
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <system_error>

#include "formats/native/native_dataset.h"
#include "formats/native/native_run.h"
#include "formats/out_dir.h"
#include "src/checksum.h"
#include "src/human.h"

namespace ds::native {

using nlohmann::json;

bool IsDatasetFile(std::string_view name) {
  // A partitioned write's journals: .dspack-journal.<part> (native_part_writer.cc).
  // (No std::string temporary here: GCC 12's -Warray-bounds misfires on it under TSan's -O2.)
  const std::string_view journal = kJournalName;
  if (name.size() > journal.size() && name.substr(0, journal.size()) == journal &&
      name[journal.size()] == '.') {
    return true;
  }
  return MatchesLayoutFile(name, {kManifestName, kIndexName, kClassesName, kRunName, kJournalName},
                           {".dsr"});
}

DatasetWriter::DatasetWriter(StorageRef out, NativeOptions options, bool created_dir)
    : storage_(std::move(out.storage)),
      out_(std::move(out.path)),
      options_(std::move(options)),
      created_dir_(created_dir),
      resuming_(options_.existing == ExistingOutput::kResume),
      journal_(out_ + "/" + kJournalName) {}

DatasetWriter::~DatasetWriter() {
  if (!done_ && !part_finished_) Abandon();
}

Result<std::unique_ptr<DatasetWriter>> DatasetWriter::Create(const std::string& out,
                                                             const NativeOptions& options) {
  DS_RETURN_IF_ERROR(options.Validate());
  DS_ASSIGN_OR_RETURN(StorageRef ref, OutputStorage(out, options));
  Storage& storage = *ref.storage;
  if (options.join_job) {
    // OUT is the job's root's to prepare and lock; this process only adds its shards.
    DS_RETURN_IF_ERROR(CheckJoinedDir(storage, ref.path));
    std::unique_ptr<DatasetWriter> w(new DatasetWriter(std::move(ref), options, false));
    w->manifest_.align = options.align;
    w->manifest_.shard_size = options.shard_size;
    return w;
  }
  const OutDirSpec spec{"native", kManifestName, IsDatasetFile, /*can_resume=*/true};
  DS_ASSIGN_OR_RETURN(OutDirState dir, PrepareOutputDir(storage, ref.path, spec, options.existing,
                                                        options.replace_in_place));
  bool created = dir.created, has_manifest = dir.had_commit_point;
  const bool resuming = options.existing == ExistingOutput::kResume;
  const std::string path = ref.path;
  ref.path = dir.dir;  // OUT, or the sibling a replace is staged in
  std::unique_ptr<DatasetWriter> w(new DatasetWriter(std::move(ref), options, created));
  w->out_dir_ = std::move(dir);
  w->manifest_.created_by = std::string("dspack ") + DSPACK_VERSION;
  w->manifest_.options = options.creation_options;
  w->manifest_.align = options.align;
  w->manifest_.shard_size = options.shard_size;
  if (resuming && has_manifest) {
    auto done = Manifest::Load(storage, path);
    if (!done.ok() || done->options != options.creation_options) {
      w->done_ = true;
      return Status(Code::kAlreadyExists,
                    out +
                        ": already holds a finished dataset made with other options (or an "
                        "unreadable manifest); pass `existing=replace` to replace it");
    }
    w->already_complete_ = true;
    w->done_ = true;  // nothing to write, nothing to clean up
    (void)storage.Remove(path + "/" + kRunName);
    (void)storage.Remove(path + "/" + kJournalName);
    return w;
  }
  if (resuming) {
    w->created_dir_ = false;  // an interrupted run's OUT is kept on error: it can be resumed again
    return w;
  }
  // Open the first shard now so that an unwritable OUT fails before any input is read.
  Status s = w->OpenShard();
  if (!s.ok()) {
    w->Abandon();
    return s.Prefixed("cannot write to output directory");
  }
  return w;
}

Status DatasetWriter::Fail(Status s) {
  s = ExplainNoSpace(out_dir_, std::move(s));
  if (status_.ok()) status_ = s;
  return s;
}

Status DatasetWriter::OpenShard(uint64_t n, uint64_t first) {
  auto shard = ShardWriter::Create(*storage_, out_ + "/" + ShardName(n) + ".tmp",
                                   ShardHeader{kFormatVersion, options_.align, n, first});
  if (!shard.ok()) return Fail(shard.status());
  shard_ = std::move(shard).value();
  shard_no_ = n;
  shard_first_ = first;
  return Status::Ok();
}

Status DatasetWriter::BeginRun(const json& run) {
  DS_RETURN_IF_ERROR(Fail(WriteAll(*storage_, out_ + "/" + kRunName, run.dump() + "\n")));
  created_.push_back(out_ + "/" + kRunName);
  run_recorded_ = true;
  return Status::Ok();
}

Status DatasetWriter::Checkpoint(const FileMeta& shard) {
  if (!run_recorded_) return Status::Ok();
  json line = {{"shard", MetaJson(shard)},
               {"source_pos", source_pos_},
               {"payload_bytes", payload_bytes_},
               {"skipped", skipped_}};
  std::string text = line.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
  const std::string& path = journal_;
  DS_ASSIGN_OR_RETURN(auto file, storage_->OpenWrite(path, WriteMode::kKeep));
  DS_ASSIGN_OR_RETURN(uint64_t end, file->Size());
  DS_RETURN_IF_ERROR(file->WriteAt(end, text.data(), text.size()));
  DS_RETURN_IF_ERROR(file->Sync());
  DS_RETURN_IF_ERROR(file->Close());
  if (created_.empty() || created_.back() != path) created_.push_back(path);
  return storage_->SyncDir(out_);
}

Result<uint64_t> DatasetWriter::ResumeRun(const json& run) {
  DS_ASSIGN_OR_RETURN(bool have_run, CheckRunRecord(*storage_, out_, run));
  // The last complete checkpoint whose shard is in place wins; a torn last line is ignored.
  std::vector<json> checkpoints;
  if (have_run) checkpoints = ReadJournal(*storage_, journal_);
  while (!checkpoints.empty()) {
    if (ShardInPlace(*storage_, out_, MetaFromJson(checkpoints.back()["shard"]))) break;
    checkpoints.pop_back();
  }
  // Keep checkpointed shards; remove everything else that is not the run record.
  std::vector<std::string> keep;
  for (size_t i = 0; i < checkpoints.size(); i++) {
    keep.push_back(checkpoints[i]["shard"]["name"].get<std::string>());
    if (keep.back() != ShardName(i)) {
      return Status(Code::kCorruption, fmt::format("{}/{}: checkpoint {} names {}; the journal is "
                                                   "damaged, pass `existing=replace` to start over",
                                                   out_, kJournalName, i, keep.back()));
    }
  }
  DS_ASSIGN_OR_RETURN(auto names, ListDir(*storage_, out_));
  for (const auto& n : names) {
    if (std::find(keep.begin(), keep.end(), n) != keep.end()) continue;
    if (have_run && (n == kRunName || n == kJournalName)) continue;
    (void)storage_->Remove(out_ + "/" + n);
  }
  if (!have_run) {
    DS_RETURN_IF_ERROR(BeginRun(run));
    DS_RETURN_IF_ERROR(OpenShard());
    return uint64_t{0};
  }
  run_recorded_ = true;
  // Rebuild the global index from the kept shards' own indexes and record heads.
  for (size_t i = 0; i < checkpoints.size(); i++) {
    FileMeta meta = MetaFromJson(checkpoints[i]["shard"]);
    if (meta.first_sample != index_.size()) {
      return Status(Code::kCorruption, fmt::format("{}: does not match its checkpoint; use "
                                                   "`existing=replace` to start over",
                                                   meta.name));
    }
    DS_RETURN_IF_ERROR(ReadShardRecords(
        *storage_, out_, meta, [&](uint64_t offset, uint64_t length, const RecordHead& h) {
          return index_.Add(static_cast<uint32_t>(i), offset, length, h.key);
        }));
    manifest_.shards.push_back(meta);
    bytes_written_ += meta.size;
  }
  uint64_t pos = 0;
  if (!checkpoints.empty()) {
    const json& last = checkpoints.back();
    pos = last["source_pos"].get<uint64_t>();
    payload_bytes_ = last["payload_bytes"].get<uint64_t>();
    skipped_ = last["skipped"];
    restored_skipped_ = skipped_.size();
  }
  source_pos_ = pos;
  DS_RETURN_IF_ERROR(OpenShard());
  return pos;
}

Status DatasetWriter::FinishShard() {
  uint64_t n = shard_no_;
  std::string tmp = out_ + "/" + ShardName(n) + ".tmp";
  std::string final_name = out_ + "/" + ShardName(n);
  ShardSummary sum;
  DS_RETURN_IF_ERROR(Fail(shard_->Finish(&sum)));
  shard_.reset();
  if (Status renamed = storage_->Rename(tmp, final_name); !renamed.ok()) {
    (void)storage_->Remove(tmp);
    return Fail(renamed);
  }
  created_.push_back(final_name);
  FileMeta meta;
  meta.name = ShardName(n);
  meta.size = sum.size;
  meta.samples = sum.records;
  meta.first_sample = shard_first_;
  meta.xxh3 = sum.xxh3;
  if (part_) {
    PartShardDone(meta);
  } else {
    manifest_.shards.push_back(meta);
  }
  bytes_written_ += sum.size;
  return Fail(Checkpoint(meta));
}

Status DatasetWriter::BeginSample(std::string_view key, std::span<const FieldInfo> fields) {
  DS_RETURN_IF_ERROR(status_);
  DS_RETURN_IF_ERROR(CheckRecordShape(key, fields));
  uint64_t len = RecordLength(key, fields);
  if (part_) {
    DS_RETURN_IF_ERROR(PartRoll(len));
  } else if (ShardIsFull(shard_->next_offset(), shard_->records(), len, options_.shard_size)) {
    DS_RETURN_IF_ERROR(FinishShard());
    DS_RETURN_IF_ERROR(OpenShard());
  }
  pending_key_.assign(key);
  pending_payload_ = 0;
  for (const auto& f : fields) pending_payload_ += f.size;
  return Fail(shard_->BeginRecord(key, fields));
}

Status DatasetWriter::AppendData(std::string_view chunk) {
  DS_RETURN_IF_ERROR(status_);
  return Fail(shard_->AppendData(chunk));
}

Status DatasetWriter::EndSample() {
  DS_RETURN_IF_ERROR(status_);
  DS_RETURN_IF_ERROR(Fail(shard_->EndRecord()));
  const IndexEntry& e = shard_->index().back();
  if (part_) {
    PartRecord(e);
    return Status::Ok();
  }
  DS_RETURN_IF_ERROR(Fail(index_.Add(static_cast<uint32_t>(manifest_.shards.size()), e.offset,
                                     e.length, pending_key_)));
  payload_bytes_ += pending_payload_;
  return Status::Ok();
}

void DatasetWriter::CancelSample() {
  if (shard_) shard_->CancelRecord();
}

void DatasetWriter::AddSkipped(std::string_view path, std::string_view error) {
  skipped_.push_back({{"path", std::string(path)}, {"error", std::string(error)}});
}

void DatasetWriter::SetClasses(std::vector<std::string> names, std::string label_field) {
  classes_ = std::move(names);
  manifest_.label_field = std::move(label_field);
}

Status DatasetWriter::Finish(DatasetSummary* summary) {
  DS_RETURN_IF_ERROR(status_);
  // A trailing shard with no records (opened by a roll whose sample was then cancelled, or by a
  // resume after the last shard was already complete) is dropped, so a resumed run ends exactly
  // like an uninterrupted one. Only an empty dataset keeps its one empty shard.
  if (shard_->records() == 0 && !manifest_.shards.empty()) {
    shard_->Abandon();
    shard_.reset();
  } else {
    DS_RETURN_IF_ERROR(FinishShard());
  }
  return Commit(summary);
}

Status DatasetWriter::Commit(DatasetSummary* summary) {
  if (summary && !out_dir_.lock_warning.empty()) summary->warnings.push_back(out_dir_.lock_warning);
  std::string idx_tmp = out_ + "/" + kIndexName + ".tmp";
  FileMeta& im = manifest_.index;
  im.name = kIndexName;
  Status s = index_.Write(*storage_, idx_tmp, static_cast<uint32_t>(manifest_.shards.size()),
                          &im.size, &im.xxh3);
  if (s.ok()) s = storage_->Rename(idx_tmp, out_ + "/" + kIndexName);
  if (!s.ok()) {
    (void)storage_->Remove(idx_tmp);
    return Fail(s);
  }
  created_.push_back(out_ + "/" + kIndexName);
  if (!manifest_.label_field.empty()) {
    std::string text;
    for (const auto& c : classes_) text += c + "\n";
    created_.push_back(out_ + "/" + kClassesName);
    DS_RETURN_IF_ERROR(Fail(WriteAll(*storage_, out_ + "/" + kClassesName, text)));
    manifest_.class_count = classes_.size();
    manifest_.classes_xxh3 = Xxh3_64(text);
  }
  manifest_.samples = index_.size();
  manifest_.payload_bytes = payload_bytes_;
  manifest_.skipped = skipped_;
  created_.push_back(out_ + "/" + kManifestName);
  DS_RETURN_IF_ERROR(Fail(WriteAll(*storage_, out_ + "/" + kManifestName, manifest_.ToJson())));
  // The dataset is committed; the run record and every journal are no longer needed.
  if (auto names = ListDir(*storage_, out_); names.ok()) {
    for (const auto& n : *names) {
      if (n.rfind(kJournalName, 0) == 0) (void)storage_->Remove(out_ + "/" + n);
    }
  }
  (void)storage_->Remove(out_ + "/" + kRunName);
  // A staged replace is swapped in now; then readers may open OUT.
  DS_RETURN_IF_ERROR(Fail(PublishOutput(*storage_, &out_dir_)));
  out_ = out_dir_.dir;
  done_ = true;
  if (summary) {
    summary->samples = index_.size();
    summary->shards = manifest_.shards.size();
    summary->payload_bytes = payload_bytes_;
    summary->bytes_written = bytes_written_ + im.size;
  }
  return Status::Ok();
}

void DatasetWriter::Abandon() {
  if (done_) return;
  done_ = true;
  if (shard_) shard_->Abandon();
  shard_.reset();
  if (resuming_) return;  // keep an interrupted run resumable
  (void)storage_->Remove(out_ + "/" + kIndexName + ".tmp");
  RemoveCreated(*storage_, created_, out_, created_dir_);
}

}  // namespace ds::native
