// Flips every byte and truncates at every length of a small dataset, and checks that verify
// reports each and that readers return errors instead of crashing (ASan build: no overreads).
#include <catch2/catch.hpp>
#include <filesystem>

#include "formats/native/native_dataset.h"
#include "formats/native/native_verify.h"
#include "src/checksum.h"
#include "test_util.h"

using namespace ds;
using namespace ds::native;

namespace {

void MakeDataset(const std::string& out, uint32_t align) {
  NativeOptions o;
  o.align = align;
  o.shard_size = 4096;
  auto w = DatasetWriter::Create(out, o);
  REQUIRE(w.ok());
  REQUIRE((*w)->Add(Sample{"n01/a_1", {{"JPEG", "jpegbytes"}, {"cls", "0"}}}).ok());
  REQUIRE((*w)->Add(Sample{"n01/a_2", {{"JPEG", std::string(300, 'j')}}}).ok());
  REQUIRE((*w)->Add(Sample{"n02/b 3", {{"", "no extension"}}}).ok());
  REQUIRE((*w)->Finish(nullptr).ok());
}

// Reads everything through the public reader; must never crash. Returns true if all reads pass.
bool ReadsWhole(const std::string& out) {
  auto d = Dataset::Open(out);
  if (!d.ok()) return false;
  bool ok = true;
  for (uint64_t i = 0; i < (*d)->size(); i++) {
    ok = (*d)->Get(i).ok() && ok;
    ok = (*d)->Head(i).ok() && ok;
  }
  return ok;
}

// leveldb's FixChecksum: makes the manifest agree with the damaged file, so that only the
// structural checks inside the file can find the damage.
void FixManifestHash(const std::string& out, const std::string& name) {
  auto m = Manifest::Load(out);
  REQUIRE(m.ok());
  std::string data = test::ReadFile(out + "/" + name);
  if (name == m->index.name) m->index.xxh3 = Xxh3_64(data);
  for (auto& s : m->shards) {
    if (s.name == name) s.xxh3 = Xxh3_64(data);
  }
  test::WriteFile(out + "/manifest.json", m->ToJson());
}

}  // namespace

TEST_CASE("verify detects a flipped byte anywhere in any shard or the index",
          "[formats][exhaustive]") {
  for (uint32_t align : {1u, 64u}) {
    test::TempDir dir;
    std::string out = dir / "ds";
    MakeDataset(out, align);
    VerifyReport clean;
    REQUIRE(VerifyDataset(out, &clean).ok());
    REQUIRE(clean.ok());
    std::vector<std::string> files;
    for (const auto& e : std::filesystem::directory_iterator(out)) {
      std::string n = e.path().filename();
      if (n.rfind("shard-", 0) == 0 || n == "index.dsi") files.push_back(n);
    }
    for (const auto& name : files) {
      std::string path = out + "/" + name;
      std::string orig = test::ReadFile(path);
      for (size_t off = 0; off < orig.size(); off++) {
        if (!test::ExhaustiveVisits(off, orig.size())) continue;
        for (int mask : {0x01, 0x80}) {
          std::string bad = orig;
          bad[off] = static_cast<char>(bad[off] ^ mask);
          test::WriteFile(path, bad);
          std::string manifest = test::ReadFile(out + "/manifest.json");
          for (bool fix_hash : {false, true}) {
            if (fix_hash) FixManifestHash(out, name);
            VerifyReport r;
            REQUIRE(VerifyDataset(out, &r).ok());
            INFO(name << " offset " << off << " mask " << mask << " hash fixed " << fix_hash);
            REQUIRE_FALSE(r.ok());
            if (name != "index.dsi") CHECK(r.problems[0].find(name) != std::string::npos);
            (void)ReadsWhole(out);
          }
          test::WriteFile(out + "/manifest.json", manifest);
        }
      }
      test::WriteFile(path, orig);
    }
  }
}

TEST_CASE("verify and readers report a truncated shard at every length", "[formats][exhaustive]") {
  test::TempDir dir;
  std::string out = dir / "ds";
  MakeDataset(out, 64);
  std::string path = out + "/shard-000000.dsr";
  std::string orig = test::ReadFile(path);
  for (size_t len = 0; len < orig.size(); len++) {
    if (!test::ExhaustiveVisits(len, orig.size())) continue;
    test::WriteFile(path, orig.substr(0, len));
    VerifyReport r;
    REQUIRE(VerifyDataset(out, &r).ok());
    INFO("length " << len);
    REQUIRE_FALSE(r.ok());
    CHECK_FALSE(ReadsWhole(out));
  }
}

TEST_CASE("verify names shard, offset and key of a damaged payload", "[formats]") {
  test::TempDir dir;
  std::string out = dir / "ds";
  MakeDataset(out, 1);
  std::string path = out + "/shard-000000.dsr";
  std::string data = test::ReadFile(path);
  size_t pos = data.find("jpegbytes");
  REQUIRE(pos != std::string::npos);
  data[pos] = 'J';
  test::WriteFile(path, data);
  VerifyReport r;
  REQUIRE(VerifyDataset(out, &r).ok());
  bool found = false;
  for (const auto& p : r.problems) {
    if (p.find("shard-000000.dsr: offset 64 (key n01/a_1): data checksum mismatch") !=
        std::string::npos) {
      found = true;
    }
  }
  CHECK(found);
  auto d = Dataset::Open(out);
  REQUIRE(d.ok());
  auto s = (*d)->Get(0);
  REQUIRE_FALSE(s.ok());
  CHECK(s.status().code() == Code::kCorruption);
  CHECK(s.status().message().find("n01/a_1") != std::string::npos);
}

TEST_CASE("a missing shard or manifest is reported", "[formats]") {
  test::TempDir dir;
  std::string out = dir / "ds";
  MakeDataset(out, 1);
  std::filesystem::remove(out + "/shard-000000.dsr");
  VerifyReport r;
  REQUIRE(VerifyDataset(out, &r).ok());
  REQUIRE_FALSE(r.ok());
  CHECK(r.problems[0].find("shard-000000.dsr") != std::string::npos);
  // Without its manifest the directory is a damaged dataset: a problem (exit 1), as a missing
  // shard is; a directory that does not exist is kNotFound (exit 2).
  std::filesystem::remove(out + "/manifest.json");
  VerifyReport no_manifest;
  REQUIRE(VerifyDataset(out, &no_manifest).ok());
  REQUIRE(no_manifest.problems.size() == 1);
  CHECK(no_manifest.problems[0].find("no manifest") != std::string::npos);
  CHECK(VerifyDataset(dir / "nope", &no_manifest).code() == Code::kNotFound);
}
