// Packer::RunPartitioned: `mpirun -n N dspack convert SRC OUT` (pack/partition.h has the
// contract, docs/mpi.md#partitioned-packing the user's view).
//
// Steps, each agreed on by every process before the next (Job::Agree, src/job.h), so a failure on
// one rank is every rank's failure and nobody waits on a rank that gave up:
//   1. what partitions (the same verdict everywhere, no collective needed);
//   2. rank 0 creates the writer (prepares and locks OUT), then the others join OUT;
//   3. every rank scans SRC; all must list the same files;
//   4. labels, shuffle, the files' sizes (sized in slices, shared), the shard plan, the ranges;
//   5. rank 0 records the run, or on --resume lists the shards already in place;
//   6. every rank writes its range; rank 0 gathers the parts and commits.

#include "pack/packer_impl.h"
#include "pack/partition.h"
#include "src/checksum.h"

namespace ds::internal {

Status Packer::PartCheck() const {
  auto st = src_.storage->Stat(src_.path, /*follow=*/true);
  if (!st.ok()) return Status::FromStorage(st.status(), o_.src);
  if (st->type != FileType::kDirectory || DetectLayout(o_.src)) {
    return Status(Code::kInvalidArgument,
                  o_.src +
                      ": a partitioned convert (several ranks) reads a directory tree; an "
                      "archive is read in one order and a dataset through its own index, "
                      "so convert it with one process");
  }
  if (o_.format == Format::kLmdb) {
    return Status(Code::kInvalidArgument,
                  "a partitioned convert (several ranks) writes shards, and an LMDB is one "
                  "B-tree file that one process writes; convert with one process, or write the "
                  "native, wds, tfrecord or recordio `format` with several");
  }
  if (o_.on_error == OnError::kSkip) {
    return Status(Code::kInvalidArgument,
                  "`on_error=skip` with several ranks: a skipped sample would move every later "
                  "shard boundary, and the output would differ from a one-process convert; fix "
                  "the inputs, or convert with one process");
  }
  return CheckSchemaOptions();
}

Status Packer::PartCreateWriter() {
  DS_ASSIGN_OR_RETURN(wopt_, MakeWriterOptions(o_.format, o_.layout, WriterCommon()));
  std::visit(
      [&](auto& w) {
        w.creation_options = CreationOptions();
        w.join_job = o_.job->rank() != 0;
        // The other ranks write into OUT itself: a replace cannot be staged beside it.
        w.replace_in_place = true;
      },
      wopt_);
  DS_ASSIGN_OR_RETURN(writer_, CreateLayoutWriter(o_.out, wopt_));
  resumable_ = writer_->resumable();  // native only: interop layouts refuse existing=resume
  if (!writer_->partitioned()) {
    return Status(Code::kInternal, fmt::format("the {} writer cannot be partitioned (a bug in "
                                               "dspack)",
                                               FormatName(o_.format)));
  }
  return Status::Ok();
}

Status Packer::PartScan() {
  DS_RETURN_IF_ERROR(CheckOutsideSource());
  auto on_scan_error = [&](std::string_view, const Status& s) { return s.Prefixed(o_.src); };
  DS_ASSIGN_OR_RETURN(source_, DirSource::Open(src_.storage, src_.path, {o_.include, o_.exclude},
                                               on_scan_error, kInlineLimit));
  return Status::Ok();
}

Status Packer::PartWrite(const std::vector<uint64_t>& starts, uint64_t first, uint64_t last,
                         const std::string& done, std::string* part) {
  DS_ASSIGN_OR_RETURN(auto todo, parted_->BeginPart(starts, first, last, done, o_.job->rank()));
  const FileTree& tree = source_->tree();
  uint64_t files = 0;
  for (const auto& [b, e] : todo) {
    for (uint64_t i = b; i < e; i++) {
      auto [fb, fe] = tree.files_of(perm_.empty() ? i : perm_[i]);
      files += fe - fb;
    }
  }
  progress_ = std::make_unique<Progress>(o_.progress && o_.job->rank() == 0, "files", files);
  RunPipeline(todo);
  progress_->Finish();
  DS_RETURN_IF_ERROR(error_);
  DS_ASSIGN_OR_RETURN(*part, parted_->FinishPart());
  return Status::Ok();
}

Status Packer::RunPartitioned(Clock::time_point t0) {
  Job& job = *o_.job;
  const bool root = job.rank() == 0;
  r_->ranks = job.size();
  DS_RETURN_IF_ERROR(PartCheck());
  // Every rank has `s` (agreed): each removes what it made, rank 0 last (it may remove OUT).
  auto failed = [&](Status s) {
    if (!root && writer_) writer_->Abandon();
    (void)job.AllGather("", "the ranks' clean-up");
    if (root && writer_) writer_->Abandon();
    return s;
  };
  Status s = job.Agree(root ? PartCreateWriter() : Status::Ok(), "rank 0 preparing OUT");
  if (s.ok()) s = job.Agree(root ? Status::Ok() : PartCreateWriter(), "joining OUT");
  if (!s.ok()) return failed(s);
  bool complete = root && resumable_ && resumable_->already_complete();
  std::string finished = complete ? "yes" : "";
  DS_RETURN_IF_ERROR(job.Broadcast(&finished, "a resume"));
  if (finished == "yes") {
    r_->already_complete = true;
    return Status::Ok();
  }

  s = job.Agree(PartScan(), "scanning SRC");
  if (!s.ok()) return failed(s);
  const FileTree& tree = source_->tree();
  std::string listed = fmt::format("{} files in {} samples (fingerprint {})", tree.file_count(),
                                   tree.sample_count(), HexU64(tree.Fingerprint()));
  DS_ASSIGN_OR_RETURN(auto lists, job.AllGather(listed, "the ranks' file lists"));
  s = job.Agree(lists[0] == listed
                    ? Status::Ok()
                    : Status(Code::kBadInput,
                             fmt::format("{}: this rank lists {}, rank 0 {}; every rank must "
                                         "see the same SRC, and nothing may write to it",
                                         o_.src, listed, lists[0])),
                "comparing the file lists");
  if (!s.ok()) return failed(s);
  r_->scan_seconds = Since(t0);

  // The same labels, order and sizes on every rank, hence the same plan.
  s = PrepareSamples();
  parted_ = writer_->partitioned();  // under the schema, which maps the shapes of the plan
  for (uint64_t i = 0; s.ok() && o_.label_from_dir && i < tree.sample_count(); i++) {
    s = labels_.Of(tree.key(i)).status().Prefixed(o_.src);
  }
  s = job.Agree(s, "labelling the samples");
  if (!s.ok()) return failed(s);
  auto sizes = SizeFiles(job, *source_, o_.threads);
  if (!sizes.ok()) return failed(sizes.status());
  planned_sizes_ = std::move(sizes).value();
  std::vector<uint64_t> sample_bytes(tree.sample_count());
  auto shape = [&](uint64_t i, std::string* key, std::vector<FieldInfo>* fields) {
    uint64_t sample = perm_.empty() ? i : perm_[i];
    auto [b, e] = tree.files_of(sample);
    key->assign(tree.key(sample));
    for (uint64_t f = b; f < e; f++) {
      fields->push_back({std::string(tree.field(f)), planned_sizes_[f]});
      sample_bytes[i] += planned_sizes_[f];
    }
    if (o_.label_from_dir) fields->push_back({"cls", labels_.Of(*key)->size()});
  };
  auto starts = parted_->PlanShards(tree.sample_count(), shape);
  if (!starts.ok()) {
    return failed(
        Status(Code::kBadInput, fmt::format("{}: {}", o_.src, starts.status().message())));
  }
  std::vector<uint64_t> shard_bytes(starts->size() - 1);
  for (size_t k = 0; k + 1 < starts->size(); k++) {
    for (uint64_t i = (*starts)[k]; i < (*starts)[k + 1]; i++) shard_bytes[k] += sample_bytes[i];
  }
  std::vector<uint64_t> first = AssignShardRanges(shard_bytes, job.size());

  Result<std::string> done = root ? parted_->BeginJob(RunRecord()) : std::string();
  s = job.Agree(done.status(), "rank 0 recording the run");
  if (!s.ok()) return failed(s);
  std::string done_all = *done;
  DS_RETURN_IF_ERROR(job.Broadcast(&done_all, "the shards already written"));

  std::string part;
  s = PartWrite(*starts, first[job.rank()], first[job.rank() + 1], done_all, &part);
  s = job.Agree(s, "writing the shards");
  if (!s.ok()) return failed(s);
  DS_ASSIGN_OR_RETURN(auto parts, job.Gather(part, "the ranks' shards"));
  LayoutSummary sum;
  s = job.Agree(root ? parted_->CommitParts(parts, &sum) : Status::Ok(), "rank 0 committing OUT");
  if (!s.ok()) return failed(s);
  r_->samples = tree.sample_count();
  r_->files = tree.file_count();
  r_->shards = starts->size() - 1;
  r_->payload_bytes = sum.payload_bytes;
  r_->bytes_written = sum.bytes_written;
  r_->classes = labels_.names.size();
  r_->total_seconds = Since(t0);
  return Status::Ok();
}

}  // namespace ds::internal
