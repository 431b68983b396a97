#include "sync/staged.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>

#include <atomic>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "src/checksum.h"
#include "src/fd.h"
#include "src/json_number.h"
#include "src/storage.h"
#include "sync/journal.h"

namespace ds::sync {

std::string StagedManifestJson(const StagedManifest& m, const std::string& source) {
  nlohmann::json files = nlohmann::json::array();
  for (const auto& [rel, f] : m) {
    files.push_back({{"path", EncodePath(rel, false)},
                     {"size", f.size},
                     {"mtime_ns", f.mtime_ns},
                     {"xxh3", HexU64(f.xxh3)}});
  }
  nlohmann::json j{{"format", "dssync-manifest"},
                   {"version", 1},
                   {"source", EncodePath(source, false)},
                   {"files", files}};
  return j.dump(1) + "\n";
}

Result<StagedManifest> LoadStagedManifest(const std::string& dir) {
  std::string path = dir + "/" + kStagedManifestName;
  DS_ASSIGN_OR_RETURN(std::string text, ReadWholeFile(path));
  StagedManifest m;
  try {
    auto j = nlohmann::json::parse(text);
    for (const auto& f : j.at("files")) {
      std::string rel;
      if (!DecodePath(f.at("path").get<std::string>(), &rel) || rel.empty()) {
        return Status(Code::kCorruption, path + ": bad path " + f.at("path").dump());
      }
      m[rel] = StagedFile{JsonIntAt<uint64_t>(f, "size"), JsonIntAt<int64_t>(f, "mtime_ns"),
                          std::stoull(f.at("xxh3").get<std::string>(), nullptr, 16)};
    }
  } catch (const std::exception& e) {
    return Status(Code::kCorruption, path + ": malformed: " + e.what());
  }
  return m;
}

void ParallelFor(size_t n, int threads, const std::function<void(size_t)>& fn) {
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i; (i = next.fetch_add(1)) < n;) fn(i);
  };
  std::vector<std::thread> pool;
  int t = static_cast<int>(std::min<size_t>(n, static_cast<size_t>(std::max(1, threads))));
  for (int k = 1; k < t; ++k) pool.emplace_back(work);
  work();
  for (auto& th : pool) th.join();
}

Result<VerifyReport> VerifyStaged(const std::string& dir, int threads) {
  VerifyReport r;
  r.dir = dir;
  auto m = LoadStagedManifest(dir);
  struct stat st;
  if (!m.ok() && m.status().code() == Code::kNotFound &&
      ::stat((dir + "/" + kCurrentName + "/" + kStagedManifestName).c_str(), &st) == 0) {
    r.dir = dir + "/" + kCurrentName;
    m = LoadStagedManifest(r.dir);
  }
  if (!m.ok()) {
    if (m.status().code() == Code::kNotFound) {
      return Status(Code::kInvalidArgument,
                    dir + ": no " + kStagedManifestName + ": not a directory staged by dssync");
    }
    return m.status();
  }
  std::vector<std::pair<std::string, StagedFile>> files(m->begin(), m->end());
  std::vector<Status> problems(files.size());
  ParallelFor(files.size(), threads, [&](size_t i) {
    const auto& [rel, f] = files[i];
    std::string path = r.dir + "/" + rel;
    struct stat fst;
    if (::lstat(path.c_str(), &fst) != 0 || !S_ISREG(fst.st_mode)) {
      problems[i] = Status(Code::kCorruption, rel + ": missing from the staged copy");
      return;
    }
    if (static_cast<uint64_t>(fst.st_size) != f.size) {
      problems[i] = Status(Code::kCorruption, fmt::format("{}: size {} but the manifest says {}",
                                                          rel, fst.st_size, f.size));
      return;
    }
    auto h = HashFile(*LocalStorage(), path);
    if (!h.ok()) {
      problems[i] = Status(Code::kCorruption, rel + ": " + h.status().message());
    } else if (*h != f.xxh3) {
      problems[i] = Status(Code::kCorruption, fmt::format("{}: xxh3 {} but the manifest says {}",
                                                          rel, HexU64(*h), HexU64(f.xxh3)));
    }
  });
  for (size_t i = 0; i < files.size(); ++i) {
    ++r.files;
    r.bytes += files[i].second.size;
    if (!problems[i].ok()) r.problems.push_back(problems[i]);
  }
  return r;
}

}  // namespace ds::sync
