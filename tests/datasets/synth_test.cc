#include "datasets/synth.h"

#include <catch2/catch.hpp>
#include <filesystem>
#include <map>

#include "src/checksum.h"
#include "test_util.h"

using namespace ds;

namespace {
std::map<std::string, uint64_t> TreeHashes(const std::string& root) {
  std::map<std::string, uint64_t> m;
  for (const auto& e : std::filesystem::recursive_directory_iterator(root)) {
    if (e.is_regular_file()) {
      m[std::filesystem::relative(e.path(), root)] = Xxh3_64(test::ReadFile(e.path()));
    }
  }
  return m;
}
}  // namespace

TEST_CASE("synth is deterministic across runs and thread counts", "[datasets]") {
  for (const auto& p : SynthProfiles()) {
    if (p.name == "large-files") continue;  // 10-100 MB per file: exercised by the e2e demo
    test::TempDir dir;
    SynthReport r1, r2, r3;
    REQUIRE(Synthesize({p.name, dir / "a", 120, 9, 1}, &r1).ok());
    REQUIRE(Synthesize({p.name, dir / "b", 120, 9, 4}, &r2).ok());
    REQUIRE(Synthesize({p.name, dir / "c", 120, 10, 4}, &r3).ok());
    INFO(p.name);
    CHECK(TreeHashes(dir / "a") == TreeHashes(dir / "b"));
    CHECK(TreeHashes(dir / "a") != TreeHashes(dir / "c"));
    CHECK(r1.samples == 120);
  }
}

TEST_CASE("imagenet-like sizes are log-normal around 110 KB with JPEG markers", "[datasets]") {
  test::TempDir dir;
  SynthReport r;
  REQUIRE(Synthesize({"imagenet-like", dir / "i", 2000, 1, 2}, &r).ok());
  double mean = static_cast<double>(r.bytes) / static_cast<double>(r.files);
  CHECK(mean > 95e3);
  CHECK(mean < 125e3);
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir / "i")) {
    if (!e.is_regular_file()) continue;
    std::string d = test::ReadFile(e.path());
    CHECK(static_cast<unsigned char>(d[0]) == 0xFF);
    CHECK(static_cast<unsigned char>(d[1]) == 0xD8);
    CHECK(static_cast<unsigned char>(d[d.size() - 1]) == 0xD9);
    break;
  }
}

TEST_CASE("synth refuses an unknown profile and a non-empty directory", "[datasets]") {
  test::TempDir dir;
  SynthReport r;
  Status s = Synthesize({"nope", dir / "x", 1, 0, 1}, &r);
  CHECK(s.code() == Code::kInvalidArgument);
  CHECK(s.message().find("imagenet-like") != std::string::npos);
  test::WriteFile(dir / "full/f", "x");
  CHECK(Synthesize({"tiny-files", dir / "full", 1, 0, 1}, &r).code() == Code::kAlreadyExists);
}
