#include "datasets/synth.h"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <tbb/global_control.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include <atomic>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <mutex>

#include "src/fd.h"
#include "src/random.h"

namespace ds {
namespace {

uint64_t LogNormal(Rng& r, double median, double sigma, uint64_t lo, uint64_t hi) {
  double v = median * std::exp(sigma * r.Normal());
  return std::clamp<uint64_t>(static_cast<uint64_t>(v), lo, hi);
}

std::string JpegLike(Rng& r, uint64_t size) {
  static const unsigned char kHead[] = {0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x10, 'J',  'F',  'I',  'F',
                                        0x00, 0x01, 0x01, 0x00, 0x00, 0x48, 0x00, 0x48, 0x00, 0x00};
  std::string s(size, '\0');
  r.Fill(s.data(), size);
  std::memcpy(s.data(), kHead, sizeof kHead);
  s[size - 2] = static_cast<char>(0xFF);
  s[size - 1] = static_cast<char>(0xD9);
  return s;
}

struct File {
  std::string path;
  std::string data;  // empty + big_size for streamed large files
  uint64_t big_size = 0;
};

using Generator = std::vector<File> (*)(uint64_t seed, uint64_t i, uint64_t n);

std::string ClassName(uint64_t c) { return fmt::format("n{:08d}", 1440764 + c * 7919); }

std::vector<File> ImagenetSample(uint64_t seed, uint64_t i, uint64_t n) {
  uint64_t classes = std::clamp<uint64_t>(n / 100, 2, 1000);
  Rng r(seed, i);
  std::string cls = ClassName(i % classes);
  uint64_t size = LogNormal(r, 95e3, 0.55, 2048, 4 << 20);
  return {{fmt::format("{}/{}_{}.JPEG", cls, cls, 10000 + i / classes), JpegLike(r, size), 0}};
}

std::vector<File> CocoSample(uint64_t seed, uint64_t i, uint64_t) {
  Rng r(seed, i);
  uint64_t id = 139 + i * 37;
  uint64_t size = LogNormal(r, 160e3, 0.5, 4096, 4 << 20);
  std::string json = fmt::format(
      "{{\"image_id\": {}, \"width\": {}, \"height\": {}, "
      "\"annotations\": [",
      id, 320 + r.Range(0, 320), 240 + r.Range(0, 240));
  uint64_t objs = r.Range(1, 12);
  for (uint64_t k = 0; k < objs; k++) {
    json += fmt::format("{}{{\"category_id\": {}, \"bbox\": [{}, {}, {}, {}], \"area\": {}}}",
                        k ? ", " : "", r.Range(1, 90), r.Range(0, 300), r.Range(0, 200),
                        r.Range(5, 300), r.Range(5, 200), r.Range(25, 60000));
  }
  json += "]}\n";
  std::string stem = fmt::format("images/{:012d}", id);
  return {{stem + ".jpg", JpegLike(r, size), 0}, {stem + ".json", json, 0}};
}

std::vector<File> TinySample(uint64_t seed, uint64_t i, uint64_t) {
  Rng r(seed, i);
  std::string data(r.Range(1024, 8192), '\0');
  r.Fill(data.data(), data.size());
  return {{fmt::format("d{:04d}/f{:08d}.bin", i / 1000, i), std::move(data), 0}};
}

std::vector<File> LargeSample(uint64_t seed, uint64_t i, uint64_t) {
  Rng r(seed, i);
  return {{fmt::format("file-{:06d}.bin", i), "", r.Range(10'000'000, 100'000'000)}};
}

struct Profile {
  SynthProfileInfo info;
  Generator gen;
};

const std::vector<Profile>& Profiles() {
  static const std::vector<Profile> kProfiles = {
      {{"imagenet-like", "class folders of JPEG-like files, log-normal sizes around 110 KB"},
       ImagenetSample},
      {{"coco-like", "image + JSON annotation pairs sharing a key"}, CocoSample},
      {{"tiny-files", "1-8 KiB files in folders of 1000"}, TinySample},
      {{"large-files", "10-100 MB files"}, LargeSample},
  };
  return kProfiles;
}

Status WriteOne(const std::string& dir, const File& f, uint64_t seed, uint64_t i,
                std::mutex& mkdir_mu) {
  std::string path = dir + "/" + f.path;
  auto slash = path.rfind('/');
  {
    std::lock_guard<std::mutex> lock(mkdir_mu);
    std::error_code ec;
    std::filesystem::create_directories(path.substr(0, slash), ec);
    if (ec) return Status::FromErrno(ec.value(), "mkdir " + path.substr(0, slash));
  }
  DS_ASSIGN_OR_RETURN(OwnedFd fd, OpenFile(path, O_WRONLY | O_CREAT | O_TRUNC, 0644));
  if (f.big_size == 0) return WriteFull(fd.get(), f.data.data(), f.data.size(), path);
  Rng r(seed ^ 0x5bd1e995, i);
  std::string buf(4 << 20, '\0');
  for (uint64_t left = f.big_size; left > 0;) {
    size_t k = static_cast<size_t>(std::min<uint64_t>(left, buf.size()));
    r.Fill(buf.data(), k);
    DS_RETURN_IF_ERROR(WriteFull(fd.get(), buf.data(), k, path));
    left -= k;
  }
  return Status::Ok();
}

}  // namespace

const std::vector<SynthProfileInfo>& SynthProfiles() {
  static const std::vector<SynthProfileInfo> kInfos = [] {
    std::vector<SynthProfileInfo> v;
    for (const auto& p : Profiles()) v.push_back(p.info);
    return v;
  }();
  return kInfos;
}

Status Synthesize(const SynthOptions& o, SynthReport* report) {
  const Profile* profile = nullptr;
  std::string names;
  for (const auto& p : Profiles()) {
    if (p.info.name == o.profile) profile = &p;
    names += (names.empty() ? "" : ", ") + p.info.name;
  }
  if (!profile) {
    return Status(Code::kInvalidArgument,
                  fmt::format("unknown profile '{}'; choose one of: {}", o.profile, names));
  }
  std::error_code ec;
  if (std::filesystem::exists(o.dir, ec) && !std::filesystem::is_empty(o.dir, ec)) {
    return Status(Code::kAlreadyExists, o.dir +
                                            ": not empty; synth writes into a new or empty "
                                            "directory");
  }
  std::filesystem::create_directories(o.dir, ec);
  if (ec) return Status::FromErrno(ec.value(), "cannot create " + o.dir);
  std::atomic<uint64_t> files{0}, bytes{0};
  std::mutex mkdir_mu, err_mu;
  Status first_error;
  int threads = std::max(1, o.threads);
  tbb::global_control gc(tbb::global_control::max_allowed_parallelism, threads);
  tbb::task_arena arena(threads);
  arena.execute([&] {
    tbb::parallel_for(uint64_t{0}, o.samples, [&](uint64_t i) {
      for (const File& f : profile->gen(o.seed, i, o.samples)) {
        Status s = WriteOne(o.dir, f, o.seed, i, mkdir_mu);
        if (!s.ok()) {
          std::lock_guard<std::mutex> lock(err_mu);
          if (first_error.ok()) first_error = s;
          return;
        }
        files++;
        bytes += f.big_size ? f.big_size : f.data.size();
      }
    });
  });
  DS_RETURN_IF_ERROR(first_error);
  report->samples = o.samples;
  report->files = files;
  report->bytes = bytes;
  return Status::Ok();
}

}  // namespace ds
