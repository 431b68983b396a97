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

std::string Synth(const test::TempDir& dir, uint64_t n) {
  SynthOptions so{"tiny-files", dir / "src", n, 7, 2};
  SynthReport r;
  REQUIRE(Synthesize(so, &r).ok());
  return so.dir;
}

ConvertOptions Opts(const std::string& src, const std::string& out, Format f,
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
  std::string src = Synth(dir, 300);
  for (Format f : {Format::kNative, Format::kWds, Format::kTfrecord, Format::kRecordio}) {
    CAPTURE(FormatName(f));
    // A clean run through the same decorator counts the writes a convert makes.
    auto clean = std::make_shared<FaultStorage>(LocalStorage());
    std::string ok_out = dir / ("ok-" + std::string(FormatName(f)));
    ConvertReport report;
    REQUIRE(Convert(Opts(src, ok_out, f, clean), &report).ok());
    uint64_t writes = clean->count(StorageOp::kWrite);
    REQUIRE(writes > 10);
    for (uint64_t nth : {uint64_t{1}, writes / 3, writes / 2, writes - 1, writes}) {
      CAPTURE(nth, writes);
      auto fault = std::make_shared<FaultStorage>(LocalStorage());
      fault->FailOp(StorageOp::kWrite, nth, ENOSPC);
      std::string out = dir / "out";
      Status st = Convert(Opts(src, out, f, fault), &report);
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
