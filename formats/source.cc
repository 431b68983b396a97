#include "formats/source.h"

#include <fcntl.h>

#include <array>
#include <string_view>

namespace ds {

Result<std::unique_ptr<DirSource>> DirSource::Open(const std::string& root,
                                                   const DirScanOptions& options,
                                                   const ScanErrorFn& on_error,
                                                   uint64_t inline_limit) {
  auto src = std::make_unique<DirSource>();
  DS_ASSIGN_OR_RETURN(src->tree_, FileTree::Scan(root, options, on_error));
  DS_ASSIGN_OR_RETURN(src->root_, OpenFile(root, O_RDONLY | O_DIRECTORY));
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
    auto in = InputFile::Open(root_.get(), path, inline_limit_);
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
