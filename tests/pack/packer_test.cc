#include "pack/packer.h"

#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <set>

#include "datasets/synth.h"
#include "formats/native/native_dataset.h"
#include "formats/native/native_verify.h"
#include "test_util.h"

using namespace ds;

namespace {

std::string Synth(const test::TempDir& dir, const std::string& profile, uint64_t n) {
  SynthOptions so{profile, dir / "src", n, 11, 2};
  SynthReport r;
  REQUIRE(Synthesize(so, &r).ok());
  return so.dir;
}

ConvertOptions Opts(const std::string& src, const std::string& out) {
  ConvertOptions o;
  o.src = src;
  o.out = out;
  o.layout.shard_size = 1 << 20;
  return o;
}

}  // namespace

TEST_CASE("output is byte-identical for any thread count", "[pack]") {
  test::TempDir dir;
  std::string src = Synth(dir, "coco-like", 60);
  std::string first;
  for (int threads : {1, 3, 16}) {
    ConvertOptions o = Opts(src, dir / ("out" + std::to_string(threads)));
    o.threads = threads;
    o.layout.align = 4096;
    o.shuffle_seed = 5;
    ConvertReport r;
    REQUIRE(Convert(o, &r).ok());
    CHECK(r.samples == 60);
    CHECK(r.files == 120);
    std::string bytes = test::DirBytes(dir / ("out" + std::to_string(threads)));
    if (first.empty()) first = bytes;
    CHECK(bytes == first);
  }
}

TEST_CASE("shuffle permutation is a deterministic permutation", "[pack]") {
  auto p = ShufflePermutation(1000, 42);
  CHECK(p == ShufflePermutation(1000, 42));
  CHECK(p != ShufflePermutation(1000, 43));
  std::set<uint64_t> seen(p.begin(), p.end());
  CHECK(seen.size() == 1000);
  CHECK(*seen.rbegin() == 999);
  // Pinned: changing the permutation would silently change every shuffled dataset.
  CHECK(ShufflePermutation(8, 1) == std::vector<uint64_t>{1, 2, 5, 0, 3, 6, 4, 7});
}

TEST_CASE("label-from-dir adds a cls field with the class index", "[pack]") {
  test::TempDir dir;
  std::string src = Synth(dir, "imagenet-like", 300);
  ConvertOptions o = Opts(src, dir / "out");
  o.label_from_dir = true;
  ConvertReport r;
  REQUIRE(Convert(o, &r).ok());
  CHECK(r.classes == 3);
  auto d = native::Dataset::Open(dir / "out");
  REQUIRE(d.ok());
  auto classes = (*d)->Classes();
  REQUIRE(classes.ok());
  REQUIRE(classes->size() == 3);
  for (uint64_t i = 0; i < (*d)->size(); i++) {
    auto s = (*d)->Get(i);
    REQUIRE(s.ok());
    REQUIRE(s->fields.size() == 2);
    CHECK(s->fields[1].name == "cls");
    std::string cls = s->key.substr(0, s->key.find('/'));
    CHECK((*classes)[std::stoul(s->fields[1].data)] == cls);
  }
}

TEST_CASE("label-from-dir refuses a file outside any class folder", "[pack]") {
  test::TempDir dir;
  test::WriteFile(dir / "src/cat/1.jpg", "c");
  test::WriteFile(dir / "src/stray.jpg", "s");
  ConvertOptions o = Opts(dir / "src", dir / "out");
  o.label_from_dir = true;
  ConvertReport r;
  Status s = Convert(o, &r);
  REQUIRE_FALSE(s.ok());
  CHECK(s.code() == Code::kBadInput);
  CHECK(s.message().find("stray: not inside a class folder") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(dir / "out"));
}

TEST_CASE("on-error skip counts and lists bad inputs; fail leaves nothing", "[pack]") {
  test::TempDir dir;
  test::WriteFile(dir / "src/a/1.jpg", "one");
  test::WriteFile(dir / "src/a/2.jpg", "two");
  REQUIRE(symlink("nowhere", (dir / "src/a/3.jpg").c_str()) == 0);

  ConvertOptions o = Opts(dir / "src", dir / "fail");
  ConvertReport r;
  Status s = Convert(o, &r);
  REQUIRE_FALSE(s.ok());
  CHECK(ExitCode(s) == 1);
  CHECK(s.message().find("a/3.jpg: broken symlink") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(dir / "fail"));

  o = Opts(dir / "src", dir / "skip");
  o.on_error = OnError::kSkip;
  ConvertReport r2;
  REQUIRE(Convert(o, &r2).ok());
  CHECK(r2.samples == 2);
  CHECK(r2.skipped == 1);
  auto m = native::Manifest::Load(dir / "skip");
  REQUIRE(m.ok());
  REQUIRE(m->skipped.size() == 1);
  CHECK(m->skipped[0]["path"] == "a/3.jpg");
}

TEST_CASE("large files are streamed and round-trip", "[pack]") {
  test::TempDir dir;
  std::string big(3 * kInlineLimit + 123, '\0');
  for (size_t i = 0; i < big.size(); i++) big[i] = static_cast<char>(i * 7 + i / 4096);
  test::WriteFile(dir / "src/big.bin", big);
  test::WriteFile(dir / "src/small.bin", "s");
  ConvertOptions o = Opts(dir / "src", dir / "out");
  ConvertReport r;
  REQUIRE(Convert(o, &r).ok());
  auto d = native::Dataset::Open(dir / "out");
  REQUIRE(d.ok());
  auto s = (*d)->Get(0);
  REQUIRE(s.ok());
  CHECK(s->key == "big");
  CHECK(s->fields[0].data == big);
  native::VerifyReport vr;
  REQUIRE(native::VerifyDataset(dir / "out", &vr).ok());
  CHECK(vr.ok());
}
