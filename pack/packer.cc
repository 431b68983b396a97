#include "pack/packer.h"

#include <fcntl.h>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <memory>

#include "formats/sources/archive_source.h"
#include "formats/sources/source.h"
#include "formats/subset.h"
#include "pack/packer_impl.h"
#include "src/checksum.h"
#include "src/fd.h"
#include "src/human.h"
#include "src/ordered_workers.h"
#include "src/progress.h"
#include "src/random.h"

namespace ds {

using nlohmann::json;

std::vector<uint64_t> ShufflePermutation(uint64_t n, uint64_t seed) {
  std::vector<uint64_t> perm(n);
  for (uint64_t i = 0; i < n; i++) perm[i] = i;
  Rng rng(seed, 0x5348554646ull);  // "SHUFF"
  for (uint64_t i = n; i > 1; i--) std::swap(perm[i - 1], perm[rng.Below(i)]);
  return perm;
}

json ConvertReport::ToJson() const {
  return {{"samples", samples},
          {"files", files},
          {"from_dataset", from_dataset},
          {"payload_bytes", payload_bytes},
          {"shards", shards},
          {"bytes_written", bytes_written},
          {"skipped", skipped},
          {"classes", classes},
          {"schema", SchemaName(schema)},
          {"ranks", ranks},
          {"warnings", warnings},
          {"scan_seconds", scan_seconds},
          {"seconds", total_seconds},
          {"files_per_sec", total_seconds > 0 ? files / total_seconds : 0},
          {"bytes_per_sec", total_seconds > 0 ? payload_bytes / total_seconds : 0}};
}

namespace internal {

Status Packer::ResolveSrc() {
  if (o_.src_storage) {
    src_ = StorageRef{o_.src_storage, o_.src};
    return Status::Ok();
  }
  DS_ASSIGN_OR_RETURN(src_, OpenStorage(o_.src));
  return Status::Ok();
}

Status Packer::Run() {
  auto t0 = Clock::now();
  DS_RETURN_IF_ERROR(ResolveSrc());
  if (o_.job && o_.job->size() > 1) return RunPartitioned(t0);
  auto st = src_.storage->Stat(src_.path, /*follow=*/true);
  if (!st.ok()) return Status::FromStorage(st.status(), o_.src);
  bool is_archive = st->type == FileType::kRegular && LooksLikeArchive(o_.src);
  std::optional<Format> layout = is_archive ? std::nullopt : DetectLayout(o_.src);
  // A native subset view reads through its LayoutReader (formats/subset.h), not NativeSource,
  // which reads the whole dataset's index.
  bool is_native = layout == Format::kNative && !HasSubsetView(o_.src);
  if (st->type != FileType::kDirectory && !is_archive && !layout) {
    return Status(Code::kInvalidArgument,
                  o_.src +
                      ": not a directory, an archive (.zip, .tar, .tar.gz, .tgz, .tar.zst, "
                      ".tar.xz, .tar.bz2) or a dataset file (.tfrecord, .rec, .mdb)");
  }
  if (is_archive && o_.shuffle_seed) {
    return Status(Code::kInvalidArgument,
                  "`shuffle_seed` needs random access, which an archive does not give; convert " +
                      o_.src + " first, then convert the result with `shuffle_seed`");
  }
  DS_RETURN_IF_ERROR(CheckSchemaOptions());
  DS_ASSIGN_OR_RETURN(wopt_, MakeWriterOptions(o_.format, o_.layout, WriterCommon()));
  std::visit([&](auto& w) { w.creation_options = CreationOptions(); }, wopt_);
  DS_ASSIGN_OR_RETURN(writer_, CreateLayoutWriter(o_.out, wopt_));
  resumable_ = writer_->resumable();
  if (resumable_ && resumable_->already_complete()) {
    r_->already_complete = true;
    return Status::Ok();
  }
  DS_RETURN_IF_ERROR(CheckOutsideSource());

  std::vector<std::pair<std::string, Status>> scan_skips;
  auto on_scan_error = [&](std::string_view path, const Status& s) -> Status {
    if (o_.on_error == OnError::kFail) return is_archive ? s : s.Prefixed(o_.src);
    scan_skips.emplace_back(std::string(path), s);
    return Status::Ok();
  };
  if (is_archive) {
    ArchiveOptions ao;
    ao.filter = {o_.include, o_.exclude};
    ao.max_expansion = o_.max_expansion;
    ao.raw_names = o_.raw_names;
    ao.spool_dir = o_.out;
    ao.inline_limit = kInlineLimit;
    DS_ASSIGN_OR_RETURN(auto src, ArchiveSource::Open(src_.storage, src_.path, ao, on_scan_error));
    for (const auto& [path, why] : src->ignored()) {
      scan_skips.emplace_back(path, Status(Code::kBadInput, why));
    }
    source_ = std::move(src);
  } else if (is_native) {
    r_->from_dataset = true;
    DS_ASSIGN_OR_RETURN(source_,
                        NativeSource::Open(o_.src, {o_.include, o_.exclude}, kInlineLimit));
  } else if (layout) {
    r_->from_dataset = true;
    DS_ASSIGN_OR_RETURN(auto reader, OpenLayout(o_.src));
    DS_ASSIGN_OR_RETURN(source_, LayoutSource::Open(std::move(reader), {o_.include, o_.exclude}));
  } else {
    DS_ASSIGN_OR_RETURN(source_, DirSource::Open(src_.storage, src_.path, {o_.include, o_.exclude},
                                                 on_scan_error, kInlineLimit));
  }
  const FileTree& tree = source_->tree();
  r_->ignored_entries = source_->ignored_entries();
  r_->scan_seconds = Since(t0);
  json run = RunRecord();
  uint64_t start = 0;
  if (resumable_ && o_.existing == ExistingOutput::kResume) {
    DS_ASSIGN_OR_RETURN(start, resumable_->ResumeRun(run));
  } else if (resumable_) {
    DS_RETURN_IF_ERROR(resumable_->BeginRun(run));
  }
  uint64_t restored = resumable_ ? resumable_->restored_skipped() : 0;
  r_->resumed_at = start;
  r_->skipped = restored;
  // Scan-time skips come first in the manifest; a resumed run restored them with the journal.
  if (restored == 0) {
    for (const auto& [path, st] : scan_skips) Skip(path, st);
  }
  DS_RETURN_IF_ERROR(PrepareSamples());

  progress_ = std::make_unique<Progress>(o_.progress, "files", tree.file_count());
  RunPipeline({{start, tree.sample_count()}});
  progress_->Finish();
  if (!error_.ok()) return error_;
  if (resumable_) resumable_->SetSourcePosition(tree.sample_count());
  LayoutSummary sum;
  DS_RETURN_IF_ERROR(writer_->Finish(&sum));
  r_->samples = sum.samples;
  r_->shards = sum.shards;
  r_->payload_bytes = sum.payload_bytes;
  r_->bytes_written = sum.bytes_written;
  r_->warnings = std::move(sum.warnings);
  r_->total_seconds = Since(t0);
  return Status::Ok();
}

Status Packer::CheckSchemaOptions() const {
  if (o_.label_base != 0 && !o_.label_from_dir) {
    return Status(Code::kInvalidArgument,
                  "`label_base` numbers the classes of `label_from_dir`; add it or drop "
                  "`label_base`");
  }
  Schema s{o_.schema.value_or(o_.field_map.empty() ? SchemaKind::kRaw : SchemaKind::kMap),
           o_.field_map};
  DS_RETURN_IF_ERROR(s.Validate(o_.format));
  return CheckLmdbLayout(o_.schema ? std::optional(s.kind) : std::nullopt);
}

Status Packer::CheckLmdbLayout(std::optional<SchemaKind> schema) const {
  if (o_.format != Format::kLmdb || !o_.layout.lmdb_layout || !schema) return Status::Ok();
  bool image_label = IsImageLabelLayout(*o_.layout.lmdb_layout);
  if (image_label && *schema != SchemaKind::kImagenet) {
    return Status(Code::kInvalidArgument,
                  fmt::format("`lmdb_layout` {} stores (image, label) pairs: it needs "
                              "`label_from_dir` over one image per sample (schema imagenet, "
                              "here {})",
                              LmdbLayoutName(*o_.layout.lmdb_layout), SchemaName(*schema)));
  }
  if (!image_label && *schema == SchemaKind::kImagenet) {
    return Status(Code::kInvalidArgument,
                  fmt::format("`lmdb_layout` {} stores raw fields; the imagenet schema is "
                              "`lmdb_layout` pickle (the default) or caffe",
                              LmdbLayoutName(*o_.layout.lmdb_layout)));
  }
  return Status::Ok();
}

Schema Packer::ResolveSchema(const FileTree& tree) const {
  if (o_.schema || !o_.field_map.empty()) {
    return {o_.schema.value_or(SchemaKind::kMap), o_.field_map};
  }
  // An LMDB layout asked for by name that stores raw fields (field, sample) keeps them.
  bool raw_lmdb = o_.format == Format::kLmdb && o_.layout.lmdb_layout &&
                  !IsImageLabelLayout(*o_.layout.lmdb_layout);
  if (!o_.label_from_dir || o_.format == Format::kNative || raw_lmdb || tree.sample_count() == 0) {
    return {};
  }
  for (uint64_t s = 0; s < tree.sample_count(); s++) {
    auto [begin, end] = tree.files_of(s);
    if (end - begin != 1 || !IsImageField(tree.field(begin))) return {};
  }
  return {SchemaKind::kImagenet, {}};
}

Status Packer::CheckOutsideSource() const {
  char src[PATH_MAX], out[PATH_MAX];
  if (!::realpath(o_.src.c_str(), src) || !::realpath(o_.out.c_str(), out)) return Status::Ok();
  std::string s(src), d(out);
  if (d == s || d.rfind(s + "/", 0) == 0) {
    return Status(Code::kInvalidArgument,
                  fmt::format("OUT {} is inside SRC {}; choose an output directory outside the "
                              "source tree",
                              o_.out, o_.src));
  }
  return Status::Ok();
}

json Packer::CreationOptions() const {
  // What determines the output, with each knob's effective value (a resume must match it).
  json j = {{"source", o_.src}};
  std::visit(
      [&](const auto& w) {
        if constexpr (requires { w.shard_size; }) j["shard_size"] = w.shard_size;
      },
      wopt_);
  const auto* native = std::get_if<NativeOptions>(&wopt_);
  j.update(json{{"align", native ? native->align : kDefaultAlign},
                {"label_from_dir", o_.label_from_dir},
                {"label_base", o_.label_base},
                {"include", o_.include},
                {"exclude", o_.exclude},
                {"on_error", o_.on_error == OnError::kFail ? "fail" : "skip"}});
  j["shuffle_seed"] = o_.shuffle_seed ? json(*o_.shuffle_seed) : json(nullptr);
  if (o_.format != Format::kNative) j["format"] = FormatName(o_.format);
  if (const auto* lmdb = std::get_if<LmdbOptions>(&wopt_)) {
    j["lmdb_layout"] = lmdb->layout ? LmdbLayoutName(*lmdb->layout) : "default";
  }
  if (const auto* wds = std::get_if<WdsOptions>(&wopt_)) {
    if (wds->dali_index) j["wds_dali_index"] = true;
    if (wds->index_sidecar) j["wds_index"] = "sidecar";
  }
  return j;
}

json Packer::RunRecord() const {
  const FileTree& tree = source_->tree();
  return {{"options", CreationOptions()},
          {"source",
           {{"files", tree.file_count()},
            {"samples", tree.sample_count()},
            {"fingerprint", HexU64(tree.Fingerprint())}}}};
}

void Packer::Skip(std::string_view path, const Status& s) {
  writer_->AddSkipped(path, s.message());
  r_->skipped++;
  if (r_->skipped_examples.size() < 10) r_->skipped_examples.push_back(s.message());
}

Status Packer::Write(LoadedSample& l) {
  const FileTree& tree = source_->tree();
  DS_RETURN_IF_ERROR(l.status);
  auto [begin, end] = tree.files_of(l.sample);
  std::string_view key = tree.key(l.sample);
  std::vector<FieldInfo> fields;
  fields.reserve(end - begin + 1);
  for (uint64_t f = begin; f < end; f++) {
    fields.push_back({std::string(tree.field(f)), l.files[f - begin].size()});
  }
  for (uint64_t f = begin; f < end && !planned_sizes_.empty(); f++) {
    if (l.files[f - begin].size() != planned_sizes_[f]) {
      l.bad_path = std::string(tree.path(f));
      return Status(Code::kBadInput,
                    fmt::format("{}/{}: changed size since the shards were planned ({} bytes "
                                "then, {} now); re-run once SRC is stable",
                                o_.src, EscapeBytes(tree.path(f)), planned_sizes_[f],
                                l.files[f - begin].size()));
    }
  }
  std::string label;
  if (o_.label_from_dir) {
    DS_ASSIGN_OR_RETURN(label, labels_.Of(key));
    fields.push_back({"cls", label.size()});
  }
  Status shape = writer_->CheckSample(key, fields);
  if (!shape.ok()) {
    l.bad_path = std::string(key);
    return Status(Code::kBadInput, fmt::format("{}: {}", o_.src, shape.message()));
  }
  DS_RETURN_IF_ERROR(OutputOrRefused(writer_->BeginSample(key, fields), key, &l));
  for (uint64_t f = begin; f < end; f++) {
    InputFile& in = l.files[f - begin];
    if (in.is_inline()) {
      DS_RETURN_IF_ERROR(Output(writer_->AppendData(in.data())));
      continue;
    }
    if (chunk_.empty()) chunk_.resize(kInlineLimit);
    for (;;) {
      auto n = in.ReadChunk(chunk_.data(), chunk_.size());
      if (!n.ok()) {
        writer_->CancelSample();
        l.bad_path = std::string(tree.path(f));
        return Status(Code::kBadInput, o_.src + "/" + n.status().message(), n.status().err());
      }
      if (*n == 0) break;
      DS_RETURN_IF_ERROR(Output(writer_->AppendData(std::string_view(chunk_.data(), *n))));
    }
  }
  if (o_.label_from_dir) DS_RETURN_IF_ERROR(Output(writer_->AppendData(label)));
  DS_RETURN_IF_ERROR(OutputOrRefused(writer_->EndSample(), key, &l));
  r_->files += end - begin;
  files_done_ += end - begin;
  progress_->Update(files_done_, writer_->payload_bytes());
  return Status::Ok();
}

Status Packer::OutputOrRefused(Status s, std::string_view key, LoadedSample* l) {
  if (!s.ok() && s.code() == Code::kBadInput) {
    l->bad_path = std::string(key);
    return Status(Code::kBadInput, fmt::format("{}: {}", o_.src, s.message()));
  }
  return Output(std::move(s));
}

Status Packer::Output(Status s) {
  if (!s.ok() && error_.ok()) error_ = s;
  return s;
}

Status Packer::PrepareSamples() {
  const FileTree& tree = source_->tree();
  Schema schema = ResolveSchema(tree);
  DS_RETURN_IF_ERROR(CheckLmdbLayout(schema.kind));
  r_->schema = schema.kind;
  writer_ = WithSchema(std::move(writer_), o_.format, std::move(schema));
  auto carried = source_->labels();
  if (!carried.first.empty()) {
    if (o_.label_from_dir) {
      return Status(Code::kInvalidArgument,
                    fmt::format("{} already carries labels (field '{}'); drop `label_from_dir`",
                                o_.src, carried.first));
    }
    writer_->SetClasses(carried.second, carried.first);  // kept as they are, with classes.txt
    r_->classes = carried.second.size();
  }
  if (o_.label_from_dir) {
    labels_.base = o_.label_base;
    DS_RETURN_IF_ERROR(labels_.Build(tree));
    writer_->SetClasses(labels_.names, "cls");
    r_->classes = labels_.names.size();
  }
  if (!(o_.job && o_.job->size() > 1)) writer_->ReserveSamples(tree.sample_count());  // not a part
  if (o_.shuffle_seed) perm_ = ShufflePermutation(tree.sample_count(), *o_.shuffle_seed);
  return Status::Ok();
}

void Packer::RunPipeline(const std::vector<std::pair<uint64_t, uint64_t>>& ranges) {
  // A sequential source (archive) is read by one thread, which runs ahead of the writer.
  int threads = source_->random_access() ? std::max(1, o_.threads) : 1;
  // The i-th sample of the ranges, in order (a partitioned part skips the shards kept).
  std::vector<uint64_t> before{0};
  for (const auto& [b, e] : ranges) before.push_back(before.back() + (e - b));
  auto position = [&](uint64_t i) {
    size_t r = std::upper_bound(before.begin(), before.end(), i) - before.begin() - 1;
    return ranges[r].first + (i - before[r]);
  };
  RunOrdered<std::unique_ptr<LoadedSample>>(
      before.back(), threads, static_cast<size_t>(std::max(threads, 2)) * 4,
      [&](uint64_t i) {
        uint64_t s = position(i);
        return source_->Load(perm_.empty() ? s : perm_[s]);
      },
      [&](uint64_t i, std::unique_ptr<LoadedSample>& l) {
        if (resumable_) resumable_->SetSourcePosition(position(i));
        Status s = Write(*l);
        if (s.ok()) return true;
        if (!error_.ok()) return false;  // output error: always fatal
        if (o_.on_error == OnError::kFail) {
          error_ = s;
          return false;
        }
        Skip(l->bad_path, s);
        return true;
      });
}

}  // namespace internal

Status Convert(const ConvertOptions& options, ConvertReport* report) {
  return internal::Packer(options, report).Run();
}

}  // namespace ds
