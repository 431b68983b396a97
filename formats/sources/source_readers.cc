#include "formats/sources/source_readers.h"

#include "formats/sources/dir_source.h"
#include "formats/sources/zip.h"

namespace ds {

namespace {

// Fields of sample s of a grouped file list (a tree's files or a zip's members): their names and
// sizes, in order.
template <typename SizeOf>
SampleHead HeadOf(const FileTree& tree, uint64_t s, SizeOf size_of) {
  SampleHead h{std::string(tree.key(s)), {}};
  auto [begin, end] = tree.files_of(s);
  for (uint64_t f = begin; f < end; f++)
    h.fields.push_back({std::string(tree.field(f)), size_of(f)});
  return h;
}

class TreeReader final : public LayoutReader {
 public:
  static Result<std::unique_ptr<LayoutReader>> Open(const StorageRef& at) {
    const std::string& dir = at.path;
    auto r = std::unique_ptr<TreeReader>(new TreeReader());
    r->path_ = dir;
    r->storage_ = at.storage;
    DS_ASSIGN_OR_RETURN(
        r->tree_, FileTree::Scan(*at.storage, dir, {}, [&](std::string_view, const Status& s) {
          return s.Prefixed(dir);
        }));
    return std::unique_ptr<LayoutReader>(std::move(r));
  }

  std::optional<Format> format() const override { return std::nullopt; }
  std::string_view kind() const override { return "tree"; }
  uint64_t size() const override { return tree_.sample_count(); }

  Result<Sample> Get(uint64_t i) const override {
    Sample s{std::string(tree_.key(i)), {}};
    auto [begin, end] = tree_.files_of(i);
    for (uint64_t f = begin; f < end; f++) {
      DS_ASSIGN_OR_RETURN(auto file, storage_->OpenRead(File(f)));
      uint64_t size = file->size();
      Field field{std::string(tree_.field(f)), std::string(size, '\0')};
      DS_ASSIGN_OR_RETURN(size_t n, file->ReadSome(0, field.data.data(), size));
      field.data.resize(n);  // a file that shrank since fstat: what it holds now
      s.fields.push_back(std::move(field));
    }
    return s;
  }

  Result<SampleHead> Head(uint64_t i) const override {
    std::optional<Status> err;
    SampleHead h = HeadOf(tree_, i, [&](uint64_t f) -> uint64_t {
      auto st = storage_->Stat(File(f), true);
      if (st.ok()) return st->size;
      if (!err) err = Status::FromStorage(st.status(), File(f));
      return 0;
    });
    if (err) return *err;
    return h;
  }

  Result<SampleLocation> Locate(uint64_t i) const override {
    return SampleLocation{std::string(tree_.path(tree_.files_of(i).first)), 0};
  }

  std::vector<std::string> DataFiles() const override {
    std::vector<std::string> v;
    v.reserve(tree_.file_count());
    for (uint64_t f = 0; f < tree_.file_count(); f++) v.push_back(File(f));
    return v;
  }

  nlohmann::json Info() const override {
    return {{"format", "tree"}, {"samples", size()}, {"files", tree_.file_count()}};
  }
  Result<DatasetFiles> Files() const override { return DatasetFiles{}; }

 private:
  std::string File(uint64_t f) const { return path_ + "/" + std::string(tree_.path(f)); }
  FileTree tree_;
};

class ZipReader final : public LayoutReader {
 public:
  static Result<std::unique_ptr<LayoutReader>> Open(const StorageRef& at) {
    DS_ASSIGN_OR_RETURN(ZipArchive zip, ZipArchive::Open(*at.storage, at.path));
    auto r = std::unique_ptr<ZipReader>(new ZipReader(std::move(zip)));
    r->path_ = at.path;
    r->storage_ = at.storage;
    return std::unique_ptr<LayoutReader>(std::move(r));
  }

  std::optional<Format> format() const override { return std::nullopt; }
  std::string_view kind() const override { return "zip"; }
  uint64_t size() const override { return zip_.sample_count(); }

  Result<Sample> Get(uint64_t i) const override {
    Sample s{std::string(zip_.key(i)), {}};
    auto [begin, end] = zip_.files_of(i);
    for (uint64_t m = begin; m < end; m++) {
      Field field{std::string(zip_.tree().field(m)), {}};
      DS_RETURN_IF_ERROR(zip_.ReadMember(m, &field.data).status());
      s.fields.push_back(std::move(field));
    }
    return s;
  }

  Result<SampleHead> Head(uint64_t i) const override {
    return HeadOf(zip_.tree(), i, [&](uint64_t m) { return zip_.member_size(m); });
  }

  Result<SampleLocation> Locate(uint64_t i) const override {
    return SampleLocation{path_, zip_.member(zip_.files_of(i).first).local_offset};
  }

  std::vector<std::string> DataFiles() const override { return {path_}; }
  Result<std::vector<uint64_t>> SampleSizes() const override {
    std::vector<uint64_t> v(size());
    for (uint64_t s = 0; s < v.size(); s++) {
      auto [begin, end] = zip_.files_of(s);
      for (uint64_t m = begin; m < end; m++) v[s] += zip_.member(m).compressed_size;
    }
    return v;
  }

  nlohmann::json Info() const override {
    return {{"format", "zip"},
            {"samples", size()},
            {"members", zip_.member_count()},
            {"payload_bytes", zip_.payload_bytes()}};
  }
  Result<DatasetFiles> Files() const override { return DatasetFiles{}; }
  // One "shard": the zip itself.
  Result<std::vector<ShardRange>> ShardRanges() const override {
    return std::vector<ShardRange>{{path_, zip_.file_size(), 0, size()}};
  }

 private:
  explicit ZipReader(ZipArchive zip) : zip_(std::move(zip)) {}
  ZipArchive zip_;
};

}  // namespace

Result<std::unique_ptr<LayoutReader>> OpenTreeReader(const StorageRef& at) {
  return TreeReader::Open(at);
}

Result<std::unique_ptr<LayoutReader>> OpenZipReader(const StorageRef& at) {
  return ZipReader::Open(at);
}

}  // namespace ds
