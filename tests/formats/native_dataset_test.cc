#include "formats/native/native_dataset.h"

#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>

#include "formats/native/native_verify.h"
#include "test_util.h"

using namespace ds;
using namespace ds::native;

namespace {
Sample S(const std::string& key, size_t size, char fill) {
  return Sample{key, {{"bin", std::string(size, fill)}}};
}
std::vector<std::string> Names(const std::string& dir) {
  std::vector<std::string> v;
  for (const auto& e : std::filesystem::directory_iterator(dir)) v.push_back(e.path().filename());
  std::sort(v.begin(), v.end());
  return v;
}
}  // namespace

TEST_CASE("dataset writer rolls shards, commits manifest last, reader finds keys", "[formats]") {
  test::TempDir dir;
  std::string out = dir / "out";
  NativeOptions o;
  o.shard_size = 8192;
  auto w = DatasetWriter::Create(out, o);
  REQUIRE(w.ok());
  for (int i = 0; i < 20; i++) REQUIRE((*w)->Add(S("k" + std::to_string(i), 3000, 'a' + i)).ok());
  // Before Finish: no manifest, no final index.
  CHECK(access((out + "/manifest.json").c_str(), F_OK) != 0);
  DatasetSummary sum;
  REQUIRE((*w)->Finish(&sum).ok());
  CHECK(sum.samples == 20);
  CHECK(sum.shards >= 8);  // ~2 records of 3 KB per 8 KiB shard
  for (const auto& n : Names(out)) CHECK(n.find(".tmp") == std::string::npos);

  auto d = Dataset::Open(out);
  REQUIRE(d.ok());
  CHECK((*d)->size() == 20);
  for (int i : {0, 7, 19}) {
    auto s = (*d)->Get(i);
    REQUIRE(s.ok());
    CHECK(s->key == "k" + std::to_string(i));
    CHECK(s->fields[0].data == std::string(3000, 'a' + i));
    auto f = (*d)->Find("k" + std::to_string(i));
    REQUIRE(f.ok());
    REQUIRE(f->has_value());
    CHECK(**f == static_cast<uint64_t>(i));
  }
  auto missing = (*d)->Find("nope");
  REQUIRE(missing.ok());
  CHECK_FALSE(missing->has_value());
  VerifyReport rep;
  REQUIRE(VerifyDataset(out, &rep).ok());
  CHECK(rep.ok());
  CHECK(rep.records == 20);
}

TEST_CASE("a record bigger than the shard size gets a shard of its own", "[formats]") {
  test::TempDir dir;
  NativeOptions o;
  o.shard_size = 4096;
  auto w = DatasetWriter::Create(dir / "out", o);
  REQUIRE(w.ok());
  REQUIRE((*w)->Add(S("small", 10, 's')).ok());
  REQUIRE((*w)->Add(S("huge", 100000, 'h')).ok());
  REQUIRE((*w)->Add(S("small2", 10, 's')).ok());
  DatasetSummary sum;
  REQUIRE((*w)->Finish(&sum).ok());
  CHECK(sum.shards == 3);
}

TEST_CASE("OUT holding a dataset or foreign files is refused; --force replaces a dataset",
          "[formats]") {
  test::TempDir dir;
  std::string out = dir / "out";
  {
    auto w = DatasetWriter::Create(out, {});
    REQUIRE(w.ok());
    REQUIRE((*w)->Add(S("a", 1, 'x')).ok());
    REQUIRE((*w)->Finish(nullptr).ok());
  }
  auto again = DatasetWriter::Create(out, {});
  REQUIRE_FALSE(again.ok());
  CHECK(again.status().code() == Code::kAlreadyExists);
  CHECK(again.status().message().find("`existing=replace`") != std::string::npos);

  NativeOptions force;
  force.existing = ExistingOutput::kReplace;
  {
    auto w = DatasetWriter::Create(out, force);
    REQUIRE(w.ok());
    REQUIRE((*w)->Add(S("b", 2, 'y')).ok());
    REQUIRE((*w)->Finish(nullptr).ok());
  }
  auto d = Dataset::Open(out);
  REQUIRE(d.ok());
  CHECK((*d)->Get(0)->key == "b");

  test::WriteFile(dir / "foreign/user_notes.txt", "mine");
  auto foreign = DatasetWriter::Create(dir / "foreign", force);
  REQUIRE_FALSE(foreign.ok());
  CHECK(foreign.status().message().find("user_notes.txt") != std::string::npos);
  CHECK(test::ReadFile(dir / "foreign/user_notes.txt") == "mine");
}

TEST_CASE("an interrupted dataset (no manifest) is refused without --force", "[formats]") {
  test::TempDir dir;
  std::string out = dir / "out";
  std::filesystem::create_directories(out);
  test::WriteFile(out + "/shard-000000.dsr.tmp", "partial");
  auto w = DatasetWriter::Create(out, {});
  REQUIRE_FALSE(w.ok());
  CHECK(w.status().message().find("unfinished") != std::string::npos);
}

TEST_CASE("abandon removes everything the writer created, including OUT", "[formats]") {
  test::TempDir dir;
  std::string out = dir / "new/out";
  NativeOptions o;
  o.shard_size = 4096;
  {
    auto w = DatasetWriter::Create(out, o);
    REQUIRE(w.ok());
    for (int i = 0; i < 10; i++) REQUIRE((*w)->Add(S("k" + std::to_string(i), 3000, 'q')).ok());
    (*w)->Abandon();
  }
  CHECK_FALSE(std::filesystem::exists(out));
}
