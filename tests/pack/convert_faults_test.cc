// `dspack convert` under injected storage faults (issue 28 §2): the writers of every sharded
// layout reach OUT only through the storage interface, so a FaultStorage under OUT fails their
// writes where a full disk or a power cut would.
#include <catch2/catch.hpp>
#include <filesystem>
#include <string>

#include "datasets/synth.h"
#include "formats/layout.h"
#include "pack/packer.h"
#include "src/storage_decorators.h"
#include "test_util.h"

using namespace ds;
namespace fs = std::filesystem;

namespace {

std::string FaultSynth(const test::TempDir& dir, uint64_t n) {
  SynthOptions so{"tiny-files", dir / "src", n, 7, 2};
  SynthReport r;
  REQUIRE(Synthesize(so, &r).ok());
  return so.dir;
}

ConvertOptions FaultOpts(const std::string& src, const std::string& out, Format f,
                         std::shared_ptr<Storage> storage) {
  ConvertOptions o;
  o.src = src;
  o.out = out;
  o.format = f;
  o.layout.shard_size = 64 << 10;  // many shards, so faults land between and inside them
  o.threads = 2;
  o.out_storage = std::move(storage);
  return o;
}

// Every name under dir, recursively ("" when dir is gone).
std::string Leftovers(const std::string& dir) {
  std::string names;
  if (!fs::exists(dir)) return names;
  for (const auto& e : fs::recursive_directory_iterator(dir)) names += e.path().string() + " ";
  return names;
}

}  // namespace

TEST_CASE("convert: ENOSPC at any write leaves nothing under a final name", "[pack]") {
  test::TempDir dir;
  std::string src = FaultSynth(dir, 300);
  for (Format f : {Format::kNative, Format::kWds, Format::kTfrecord, Format::kRecordio}) {
    CAPTURE(FormatName(f));
    // A clean run through the same decorator counts the writes a convert makes.
    auto clean = std::make_shared<FaultStorage>(LocalStorage());
    std::string ok_out = dir / ("ok-" + std::string(FormatName(f)));
    ConvertReport report;
    REQUIRE(Convert(FaultOpts(src, ok_out, f, clean), &report).ok());
    uint64_t writes = clean->count(StorageOp::kWrite);
    REQUIRE(writes > 10);
    for (uint64_t nth : {uint64_t{1}, writes / 3, writes / 2, writes - 1, writes}) {
      CAPTURE(nth, writes);
      auto fault = std::make_shared<FaultStorage>(LocalStorage());
      fault->FailOp(StorageOp::kWrite, nth, ENOSPC);
      std::string out = dir / "out";
      Status st = Convert(FaultOpts(src, out, f, fault), &report);
      REQUIRE(st.code() == Code::kNoSpace);
      // One line naming the file and the offset, and saying what happened.
      CHECK(st.message().find(out + "/") != std::string::npos);
      CHECK(st.message().find("No space left on device") != std::string::npos);
      CHECK(st.message().find('\n') == std::string::npos);
      // OUT did not exist: the writer made it, and removed it with everything in it.
      CHECK(Leftovers(out).empty());
    }
  }
}

namespace {

// Every sample of the dataset in dir, in order, as "key:field=bytes;..." lines ("" when no
// dataset opens there), read through the local backend as any later reader would.
std::string Contents(const std::string& dir) {
  auto reader = OpenLayout(dir);
  if (!reader.ok()) return "";
  std::string text;
  for (uint64_t i = 0; i < (*reader)->size(); i++) {
    auto s = (*reader)->Get(i);
    if (!s.ok()) return "unreadable: " + s.status().message();
    text += s->key + ":";
    for (const auto& f : s->fields) text += f.name + "=" + f.data + ";";
    text += "\n";
  }
  return text;
}

}  // namespace

// [exhaustive]: hundreds of converts in one loop; under ThreadSanitizer (which leaves the tag
// out, tests/CMakeLists.txt) they took minutes and add nothing one replace does not show.
TEST_CASE("convert --force: a crash before the commit keeps the previous dataset",
          "[pack][exhaustive]") {
  test::TempDir dir;
  std::string old_src = FaultSynth(dir, 150);
  SynthOptions so{"tiny-files", dir / "src-new", 220, 11, 2};
  SynthReport sr;
  REQUIRE(Synthesize(so, &sr).ok());
  const std::string new_src = so.dir;
  for (Format f : {Format::kNative, Format::kWds, Format::kTfrecord}) {
    CAPTURE(FormatName(f));
    const std::string out = dir / ("out-" + std::string(FormatName(f)));
    const std::string stage = out + std::string(".dspack-replace");
    auto convert = [&](const std::string& src, std::shared_ptr<Storage> storage) {
      ConvertOptions o = FaultOpts(src, out, f, std::move(storage));
      o.existing = ExistingOutput::kReplace;
      ConvertReport report;
      return Convert(o, &report);
    };
    REQUIRE(convert(old_src, nullptr).ok());
    const std::string old_data = Contents(out);
    REQUIRE(!old_data.empty());
    // A clean replace through the decorator counts each kind of operation it makes.
    auto clean = std::make_shared<FaultStorage>(LocalStorage());
    REQUIRE(convert(new_src, clean).ok());
    const std::string new_data = Contents(out);
    REQUIRE(!new_data.empty());
    REQUIRE(new_data != old_data);
    CHECK(!fs::exists(stage));  // the previous dataset went with the sibling
    for (StorageOp op : {StorageOp::kCreate, StorageOp::kWrite, StorageOp::kSync,
                         StorageOp::kCommit, StorageOp::kRename, StorageOp::kRemove}) {
      const uint64_t n = clean->count(op);
      REQUIRE(n > 0);
      // Every operation of the kind where there are few; else the first, the last and between.
      std::vector<uint64_t> at;
      for (uint64_t k = 1; k <= n; k += n <= 24 ? 1 : n / 8) at.push_back(k);
      if (at.back() != n) at.push_back(n);
      // The sanitizer pass thins the points as it thins byte flips (test_util.h): the first, every
      // stride-th and the last; the plain pass crashes at every one.
      std::vector<uint64_t> points;
      for (size_t i = 0; i < at.size(); i++) {
        if (test::ExhaustiveVisits(i, at.size())) points.push_back(at[i]);
      }
      for (uint64_t nth : points) {
        CAPTURE(StorageOpName(op), nth, n);
        REQUIRE(convert(old_src, nullptr).ok());  // OUT holds the previous dataset again
        REQUIRE(Contents(out) == old_data);
        auto crash = std::make_shared<FaultStorage>(LocalStorage());
        crash->CrashAt(op, nth);
        Status st = convert(new_src, crash);
        CHECK(crash->crashed());
        const std::string now = Contents(out);
        // The swap is the last rename: a crash at any earlier operation keeps the old dataset.
        bool before_swap = op == StorageOp::kCreate || op == StorageOp::kWrite ||
                           op == StorageOp::kCommit || (op == StorageOp::kRename && nth == n);
        if (before_swap) {
          CHECK(!st.ok());
          CHECK(now == old_data);
        } else {
          CHECK((now == old_data || now == new_data));
        }
      }
    }
    // A replace after a crash empties the crashed one's sibling and publishes whole.
    REQUIRE(convert(new_src, nullptr).ok());
    CHECK(Contents(out) == new_data);
    CHECK(!fs::exists(stage));
  }
}

TEST_CASE("convert --force: a sibling holding foreign files is refused, named", "[pack]") {
  test::TempDir dir;
  std::string src = FaultSynth(dir, 40);
  const std::string out = dir / "out";
  ConvertOptions o = FaultOpts(src, out, Format::kNative, nullptr);
  ConvertReport report;
  REQUIRE(Convert(o, &report).ok());
  fs::create_directory(out + ".dspack-replace");
  test::WriteFile(out + ".dspack-replace/notes.txt", "mine");
  o.existing = ExistingOutput::kReplace;
  Status st = Convert(o, &report);
  REQUIRE(st.code() == Code::kAlreadyExists);
  CHECK(st.message().find(out + ".dspack-replace: holds 'notes.txt'") != std::string::npos);
  CHECK(fs::exists(out + ".dspack-replace/notes.txt"));
  CHECK(!Contents(out).empty());  // the dataset in OUT is untouched
}

TEST_CASE("convert --force through a symlinked OUT replaces in place, keeping the link", "[pack]") {
  test::TempDir dir;
  std::string src = FaultSynth(dir, 40);
  const std::string real = dir / "real", out = dir / "link";
  ConvertOptions o = FaultOpts(src, real, Format::kNative, nullptr);
  ConvertReport report;
  REQUIRE(Convert(o, &report).ok());
  fs::create_directory_symlink(real, out);
  o.out = out;
  o.existing = ExistingOutput::kReplace;
  REQUIRE(Convert(o, &report).ok());
  CHECK(fs::is_symlink(out));  // the link was not swapped away
  CHECK(!Contents(out).empty());
  CHECK(!fs::exists(out + ".dspack-replace"));
}

TEST_CASE("convert --force out of room: the old dataset stays, the error says why", "[pack]") {
  test::TempDir dir;
  std::string src = FaultSynth(dir, 200);
  for (Format f : {Format::kNative, Format::kWds}) {
    CAPTURE(FormatName(f));
    const std::string out = dir / ("out-" + std::string(FormatName(f)));
    ConvertOptions o = FaultOpts(src, out, f, nullptr);
    ConvertReport report;
    REQUIRE(Convert(o, &report).ok());
    const std::string old_data = Contents(out);
    auto fault = std::make_shared<FaultStorage>(LocalStorage());
    fault->FailOp(StorageOp::kWrite, 5, ENOSPC);
    o.out_storage = fault;
    o.existing = ExistingOutput::kReplace;
    Status st = Convert(o, &report);
    REQUIRE(st.code() == Code::kNoSpace);
    CHECK(st.message().find(out + ".dspack-replace/") != std::string::npos);
    CHECK(st.message().find("so both must fit: free room, or remove it first") !=
          std::string::npos);
    CHECK(st.message().find('\n') == std::string::npos);
    CHECK(Contents(out) == old_data);
    CHECK(!fs::exists(out + ".dspack-replace"));  // the failed replacement is gone
  }
}
