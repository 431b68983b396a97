#include "formats/sources/source.h"

#include <fmt/format.h>

#include <array>
#include <cstring>
#include <functional>
#include <string_view>

#include "formats/native/native_dataset.h"
#include "formats/sample.h"
#include "src/human.h"

namespace ds {

Result<std::unique_ptr<DirSource>> DirSource::Open(std::shared_ptr<Storage> storage,
                                                   const std::string& root,
                                                   const DirScanOptions& options,
                                                   const ScanErrorFn& on_error,
                                                   uint64_t inline_limit) {
  auto src = std::make_unique<DirSource>();
  src->storage_ = storage ? std::move(storage) : LocalStorage();
  DS_ASSIGN_OR_RETURN(src->tree_, FileTree::Scan(*src->storage_, root, options, on_error));
  src->inline_limit_ = inline_limit;
  return src;
}

std::unique_ptr<LoadedSample> DirSource::Load(uint64_t i) {
  auto l = std::make_unique<LoadedSample>();
  l->sample = i;
  auto [begin, end] = tree_.files_of(i);
  l->files.reserve(end - begin);
  for (uint64_t f = begin; f < end; f++) {
    std::string path(tree_.path(f));
    auto in = InputFile::Open(*storage_, tree_.root(), path, inline_limit_);
    if (!in.ok()) {
      l->status =
          Status(Code::kBadInput, tree_.root() + "/" + in.status().message(), in.status().err());
      l->bad_path = path;
      break;
    }
    l->files.push_back(std::move(in).value());
  }
  return l;
}

Result<FileVersion> DirSource::StatFile(uint64_t file) const {
  std::string path(tree_.path(file));
  auto st = storage_->Stat(tree_.root() + "/" + path, /*follow=*/true);
  if (!st.ok()) {
    return Status::FromStorage(st.status(), tree_.root() + "/" + path);
  }
  if (st->type != FileType::kRegular) {
    return Status(Code::kBadInput, tree_.root() + "/" + path + ": not a regular file");
  }
  return FileVersion{st->size, st->mtime_ns};
}

static Status BuildTree(const std::string& what, uint64_t samples,
                        const std::function<Result<SampleHead>(uint64_t)>& head,
                        const DirScanOptions& options, FileTree* tree,
                        std::vector<uint64_t>* record_of_sample,
                        std::vector<uint16_t>* field_of_file, bool skip_unnamed = false) {
  for (uint64_t i = 0; i < samples; i++) {
    DS_ASSIGN_OR_RETURN(SampleHead h, head(i));
    uint64_t before = tree->sample_count();
    for (size_t f = 0; f < h.fields.size(); f++) {
      if (h.fields[f].name.empty() && skip_unnamed) continue;  // a schema's derived field
      std::string path = JoinKeyField(h.key, h.fields[f].name);
      KeyField kf = SplitPath(path);
      if (kf.key != h.key || kf.field != h.fields[f].name) {
        return Status(Code::kUnsupported,
                      fmt::format("{}: sample {} (key '{}', field '{}') has no file-name form, so "
                                  "it cannot be regrouped",
                                  what, i, EscapeBytes(h.key), EscapeBytes(h.fields[f].name)));
      }
      if (!PathWanted(options, path)) continue;
      tree->Append(path);
      field_of_file->push_back(static_cast<uint16_t>(f));
    }
    if (tree->sample_count() > before) record_of_sample->push_back(i);
  }
  tree->ShrinkToFit();
  return Status::Ok();
}

NativeSource::~NativeSource() = default;

Result<std::unique_ptr<NativeSource>> NativeSource::Open(const std::string& dir,
                                                         const DirScanOptions& options,
                                                         uint64_t inline_limit) {
  auto src = std::make_unique<NativeSource>();
  DS_ASSIGN_OR_RETURN(src->ds_, native::Dataset::Open(dir));
  src->tree_ = FileTree(dir);
  src->inline_limit_ = inline_limit;
  const auto& m = src->ds_->manifest();
  if (!m.label_field.empty()) {
    DS_ASSIGN_OR_RETURN(auto classes, src->ds_->Classes());
    src->labels_ = {m.label_field, std::move(classes)};
  }
  DS_RETURN_IF_ERROR(BuildTree(
      dir, src->ds_->size(),
      [&](uint64_t i) -> Result<SampleHead> {
        DS_ASSIGN_OR_RETURN(native::RecordHead h, src->ds_->Head(i));
        return SampleHead{std::move(h.key), std::move(h.fields)};
      },
      options, &src->tree_, &src->record_of_sample_, &src->field_of_file_));
  return src;
}

std::unique_ptr<LoadedSample> NativeSource::Load(uint64_t i) {
  auto l = std::make_unique<LoadedSample>();
  l->sample = i;
  uint64_t rec = record_of_sample_[i];
  const auto [begin, end] = tree_.files_of(i);
  const uint64_t first = begin;  // a lambda cannot capture a structured binding (clang 14)
  auto fail = [&](const Status& s) {
    l->status = Status(Code::kBadInput, s.message(), s.err());
    l->bad_path = std::string(tree_.path(first));
    l->files.clear();
    return std::move(l);
  };
  auto head = ds_->Head(rec);
  if (!head.ok()) return fail(head.status());
  if (head->payload_len() <= inline_limit_) {
    auto sample = ds_->Get(rec);
    if (!sample.ok()) return fail(sample.status());
    for (uint64_t f = begin; f < end; f++) {
      std::string& d = sample->fields[field_of_file_[f]].data;
      std::unique_ptr<char[]> buf(new char[d.size() + 1]);
      std::memcpy(buf.get(), d.data(), d.size());
      l->files.push_back(
          InputFile::FromMemory(std::string(tree_.path(f)), std::move(buf), d.size()));
    }
    return l;
  }
  // Big record: check its data CRC in one streaming pass, then stream the fields from the shard.
  Status crc =
      ds_->StreamPayload(rec, *head, [](size_t, std::string_view) { return Status::Ok(); });
  if (!crc.ok()) return fail(crc);
  // The shard's file is the dataset's own, open for as long as this source.
  auto where = ds_->RecordExtent(rec);
  if (!where.ok()) return fail(where.status());
  const auto& [shard, entry] = *where;
  for (uint64_t f = begin; f < end; f++) {
    uint64_t off = entry.offset + head->payload_offset();
    for (uint16_t k = 0; k < field_of_file_[f]; k++) off += head->fields[k].size;
    l->files.push_back(InputFile::FromRange(std::string(tree_.path(f)), shard, off,
                                            head->fields[field_of_file_[f]].size));
  }
  return l;
}

bool LooksLikeArchive(const std::string& path) {
  static constexpr std::array<std::string_view, 12> kExt = {
      ".zip",    ".tar", ".tar.gz",  ".tgz",  ".tar.zst", ".tzst",
      ".tar.xz", ".txz", ".tar.bz2", ".tbz2", ".tar.lz4", ".tar.zstd"};
  for (auto e : kExt) {
    if (path.size() > e.size() && path.compare(path.size() - e.size(), e.size(), e) == 0) {
      return true;
    }
  }
  return false;
}

}  // namespace ds

namespace ds {

Result<std::unique_ptr<LayoutSource>> LayoutSource::Open(std::unique_ptr<LayoutReader> reader,
                                                         const DirScanOptions& options) {
  auto src = std::make_unique<LayoutSource>();
  src->reader_ = std::move(reader);
  const LayoutReader& r = *src->reader_;
  src->tree_ = FileTree(r.path());
  // A dataset written with a schema regroups under its source's names (formats/schema.h):
  // derived fields are left out, the others renamed back, so that a schema survives a round trip.
  const SchemaRecord& schema = r.schema();
  bool by_filename = NeedsImageFilename(schema) && !schema.source_names.count(kTfImageEncoded);
  auto names = [&](uint64_t i,
                   const SampleHead& h) -> Result<std::vector<std::optional<std::string>>> {
    std::string filename;
    if (by_filename) {  // several image types: image/filename names each
      DS_ASSIGN_OR_RETURN(Sample s, r.Get(i));
      for (const auto& f : s.fields) {
        if (f.name == kTfImageFilename) filename = f.data;
      }
    }
    return SourceFieldNames(schema, h.fields, filename);
  };
  if (!r.label_field().empty()) {
    SampleHead label{"", {{r.label_field(), 0}}};
    auto restored = SourceFieldNames(schema, label.fields, "");
    src->labels_ = {restored[0].value_or(r.label_field()), r.classes()};
  }
  DS_RETURN_IF_ERROR(BuildTree(
      r.path(), r.size(),
      [&](uint64_t i) -> Result<SampleHead> {
        DS_ASSIGN_OR_RETURN(SampleHead h, r.Head(i));
        if (schema.kind == SchemaKind::kRaw) return h;
        DS_ASSIGN_OR_RETURN(auto restored, names(i, h));
        for (size_t f = 0; f < h.fields.size(); f++) {
          // A derived field gets a name that no path yields: BuildTree leaves it out.
          h.fields[f].name = restored[f] ? *restored[f] : std::string();
        }
        return h;
      },
      options, &src->tree_, &src->record_of_sample_, &src->field_of_file_,
      !schema.derived.empty()));
  return src;
}

std::unique_ptr<LoadedSample> LayoutSource::Load(uint64_t i) {
  auto l = std::make_unique<LoadedSample>();
  l->sample = i;
  auto [begin, end] = tree_.files_of(i);
  auto sample = reader_->Get(record_of_sample_[i]);
  if (!sample.ok()) {
    l->status = Status(Code::kBadInput, sample.status().message(), sample.status().err());
    l->bad_path = std::string(tree_.path(begin));
    return l;
  }
  for (uint64_t f = begin; f < end; f++) {
    std::string& d = sample->fields[field_of_file_[f]].data;
    std::unique_ptr<char[]> buf(new char[d.size() + 1]);
    std::memcpy(buf.get(), d.data(), d.size());
    l->files.push_back(InputFile::FromMemory(std::string(tree_.path(f)), std::move(buf), d.size()));
  }
  return l;
}

}  // namespace ds
