#include "sync/plan.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <map>

#include "formats/layout.h"
#include "src/fd.h"
#include "src/storage.h"
#include "sync/staged.h"

namespace ds::sync {

int64_t MtimeNs(const struct stat& st) {
  return static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
}

namespace {

bool Inside(const std::string& path, const std::string& root) {
  return path == root || (path.size() > root.size() && path.compare(0, root.size(), root) == 0 &&
                          (root.back() == '/' || path[root.size()] == '/'));
}

struct Walker {
  std::string root;       // SRC as given
  std::string real_root;  // realpath(SRC)
  PlanOptions options;
  Storage& storage;
  std::vector<PlanFile> files;
  Plan* plan;

  void Add(const std::string& rel, const std::string& path, const FileInfo& info) {
    PlanFile f;
    f.rel = rel;
    f.src_path = path;
    f.size = info.size;
    f.mtime_ns = info.mtime_ns;
    f.mode = info.mode;
    f.version = info.version;
    files.push_back(std::move(f));
  }

  // A symlink is local-path semantics (canonical() resolves it): only the local backend lists
  // them.
  void Symlink(const std::string& rel, const std::string& path) {
    auto st = storage.Stat(path, /*follow=*/true);
    if (!st.ok()) {
      plan->errors.push_back(Status(
          Code::kBadInput, fmt::format("{}: unreadable: dangling symlink (not staged)", rel)));
      return;
    }
    std::error_code ec;
    std::string target = std::filesystem::canonical(path, ec).string();
    bool inside = !ec && Inside(target, real_root);
    if (st->type == FileType::kDirectory) {
      plan->warnings.push_back(rel + ": symlink to a directory, skipped");
    } else if (st->type != FileType::kRegular) {
      plan->errors.push_back(Status(Code::kBadInput, fmt::format("{}: unreadable: symlink to {}",
                                                                 rel, FileTypeName(st->type))));
    } else if (inside || options.follow_symlinks) {
      Add(rel, ec ? path : target, *st);
    } else {
      plan->warnings.push_back(fmt::format(
          "{}: symlink to {} outside SRC, skipped (`follow_symlinks` copies it)", rel, target));
    }
  }

  // Breadth first, one level at a time, with the directory listings of a level spread over
  // `threads` threads; each listing comes with every entry's type, size and mtime (the
  // backend's READDIRPLUS): no stat per file.
  Status Walk() {
    std::vector<std::string> level{""};
    while (!level.empty()) {
      std::vector<Result<std::vector<DirEntry>>> listed(level.size(), std::vector<DirEntry>{});
      ParallelFor(level.size(), options.threads, [&](size_t i) {
        const std::string& rel = level[i];
        listed[i] = storage.List(rel.empty() ? root : root + "/" + rel);
      });
      std::vector<std::string> next;
      for (size_t i = 0; i < level.size(); ++i) {
        if (!listed[i].ok()) {
          Status st = listed[i].status();
          if (st.code() == Code::kIOError) {
            st = Status(Code::kBadInput, st.message(), st.err());
          }
          if (level[i].empty()) return st;
          plan->errors.push_back(st);
          continue;
        }
        std::sort(listed[i]->begin(), listed[i]->end(),
                  [](const DirEntry& a, const DirEntry& b) { return a.name < b.name; });
        for (const DirEntry& e : *listed[i]) {
          // Names starting with ".dssync-" are dssync's own and left out.
          if (e.name.compare(0, 8, ".dssync-") == 0) continue;
          std::string rel = level[i].empty() ? e.name : level[i] + "/" + e.name;
          plan->all.insert(rel);
          switch (e.info.type) {
            case FileType::kDirectory:
              plan->dirs.push_back(rel);
              next.push_back(rel);
              break;
            case FileType::kSymlink:
              Symlink(rel, root + "/" + rel);
              break;
            case FileType::kRegular:
              Add(rel, root + "/" + rel, e.info);
              break;
            default:
              plan->errors.push_back(Status(
                  Code::kBadInput,
                  fmt::format("{}: unreadable: {} (not staged)", rel, FileTypeName(e.info.type))));
          }
        }
      }
      level = std::move(next);
    }
    auto by_rel = [](const PlanFile& a, const PlanFile& b) { return a.rel < b.rel; };
    std::sort(files.begin(), files.end(), by_rel);
    std::sort(plan->dirs.begin(), plan->dirs.end());
    return Status::Ok();
  }
};

// The dataset's own shard list, and the hashes of its metadata files keyed by name; empty for a
// plain tree.
Status LoadListed(const std::string& src, Plan* plan, std::vector<DatasetFile>* shards,
                  std::map<std::string, uint64_t>* meta_hashes) {
  DS_ASSIGN_OR_RETURN(auto files, ListDatasetFiles(src));
  if (!files) return Status::Ok();
  plan->manifest = files->commit_point;
  *shards = std::move(files->shards);
  for (const auto& m : files->metadata) {
    if (m.xxh3) (*meta_hashes)[m.name] = *m.xxh3;
  }
  return Status::Ok();
}

}  // namespace

FileInfo ListedInfo(const PlanFile& f) {
  FileInfo info;
  info.type = FileType::kRegular;
  info.size = f.size;
  info.mtime_ns = f.mtime_ns;
  info.mode = f.mode;
  info.version = f.version;
  return info;
}

bool IsMetadataName(std::string_view rel) { return IsLayoutMetadataName(rel); }

Result<Plan> BuildPlan(const std::string& src, const PlanOptions& options) {
  Plan plan;
  std::shared_ptr<Storage> storage = options.storage ? options.storage : LocalStorage();
  auto st = storage->Stat(src, /*follow=*/true);
  if (!st.ok()) {
    Code code = st.status().code() == Code::kNotFound ? Code::kNotFound : Code::kInvalidArgument;
    return Status(code, st.status().message(), st.status().err());
  }
  if (st->type != FileType::kDirectory) {
    return Status(Code::kInvalidArgument, src + ": not a directory");
  }
  std::error_code ec;
  Walker w{src, std::filesystem::canonical(src, ec).string(), options, *storage, {}, &plan};
  DS_RETURN_IF_ERROR(w.Walk());

  std::vector<DatasetFile> listed;
  std::map<std::string, uint64_t> meta_hashes;
  DS_RETURN_IF_ERROR(LoadListed(src, &plan, &listed, &meta_hashes).Prefixed("dssync"));
  std::map<std::string, size_t> by_rel;
  for (size_t i = 0; i < w.files.size(); ++i) by_rel[w.files[i].rel] = i;
  std::vector<bool> is_shard(w.files.size(), false);
  for (const auto& s : listed) {
    auto it = by_rel.find(s.name);
    if (it == by_rel.end()) {
      plan.errors.push_back(Status(
          Code::kBadInput,
          fmt::format("{}: listed in {} but missing or unreadable in SRC", s.name, plan.manifest)));
      continue;
    }
    PlanFile f = w.files[it->second];
    f.expected_xxh3 = s.xxh3;
    is_shard[it->second] = true;
    plan.shards.push_back(std::move(f));
  }
  for (size_t i = 0; i < w.files.size(); ++i) {
    if (is_shard[i]) continue;
    PlanFile& f = w.files[i];
    if (!plan.manifest.empty() || IsMetadataName(f.rel)) {
      f.meta = true;
      auto h = meta_hashes.find(f.rel);
      if (h != meta_hashes.end()) f.expected_xxh3 = h->second;
      plan.meta.push_back(std::move(f));
    } else {
      plan.shards.push_back(std::move(f));
    }
  }
  return plan;
}

Subset PrefixSubset(const std::vector<uint64_t>& sizes, uint64_t max_bytes) {
  Subset s;
  for (uint64_t b : sizes) {
    if (s.bytes + b > max_bytes) break;
    s.bytes += b;
    ++s.shards;
  }
  return s;
}

Result<RankWorld> ResolveRank(std::optional<uint32_t> rank, std::optional<uint32_t> world,
                              const std::function<const char*(const char*)>& getenv) {
  RankWorld rw;
  auto num = [](const char* name, const char* v, uint32_t* out) -> Status {
    std::string_view s(v);
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
    if (s.empty() || ec != std::errc() || p != s.data() + s.size()) {
      return Status(Code::kInvalidArgument, fmt::format("{}={}: not a rank number", name, s));
    }
    return Status::Ok();
  };
  if (rank || world) {
    rw.rank = rank.value_or(0);
    rw.world = world.value_or(1);
    rw.source = "--rank/--world";
  } else {
    static const char* kPairs[][2] = {{"SLURM_PROCID", "SLURM_NTASKS"},
                                      {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"},
                                      {"RANK", "WORLD_SIZE"}};
    rw.source = "default";
    for (const auto& p : kPairs) {
      const char* r = getenv(p[0]);
      const char* w = getenv(p[1]);
      if (r == nullptr || w == nullptr) continue;
      DS_RETURN_IF_ERROR(num(p[0], r, &rw.rank));
      DS_RETURN_IF_ERROR(num(p[1], w, &rw.world));
      rw.source = fmt::format("{}/{}", p[0], p[1]);
      break;
    }
  }
  if (rw.world == 0 || rw.rank >= rw.world) {
    return Status(Code::kInvalidArgument,
                  fmt::format("rank {} of world {} ({}): need 0 <= rank < world", rw.rank, rw.world,
                              rw.source));
  }
  return rw;
}

Status CheckDisjoint(const std::string& src, const std::string& dst) {
  std::error_code ec;
  std::string s = std::filesystem::weakly_canonical(src, ec).string();
  std::string d = std::filesystem::weakly_canonical(dst, ec).string();
  if (Inside(d, s)) {
    return Status(
        Code::kInvalidArgument,
        fmt::format("DST {} is inside SRC {}: refusing (choose a DST outside SRC)", dst, src));
  }
  if (Inside(s, d)) {
    return Status(
        Code::kInvalidArgument,
        fmt::format("SRC {} is inside DST {}: refusing (`delete` could remove it)", src, dst));
  }
  return Status::Ok();
}

}  // namespace ds::sync
