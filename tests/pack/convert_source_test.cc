// `dspack convert` reads a directory tree through the storage interface (ConvertOptions::
// src_storage): the walk is one List per directory and a file is one open, as the counting
// backend bills it; a read error from the backend stops the convert naming the file, with nothing
// left under OUT.
#include <catch2/catch.hpp>
#include <filesystem>
#include <string>

#include "datasets/synth.h"
#include "pack/packer.h"
#include "src/storage_decorators.h"
#include "test_util.h"

using namespace ds;
namespace fs = std::filesystem;

namespace {

std::string SourceSynth(const test::TempDir& dir, uint64_t n) {
  SynthOptions so{"tiny-files", dir / "src", n, 7, 2};
  SynthReport r;
  REQUIRE(Synthesize(so, &r).ok());
  return so.dir;
}

ConvertOptions SourceOpts(const std::string& src, const std::string& out,
                          std::shared_ptr<Storage> storage) {
  ConvertOptions o;
  o.src = src;
  o.out = out;
  o.threads = 2;
  o.src_storage = std::move(storage);
  return o;
}

}  // namespace

TEST_CASE("convert walks and reads SRC through its storage: a List per directory", "[pack]") {
  test::TempDir dir;
  std::string src = SourceSynth(dir, 120);
  uint64_t dirs = 1, files = 0;
  for (const auto& e : fs::recursive_directory_iterator(src)) {
    dirs += e.is_directory() ? 1 : 0;
    files += e.is_regular_file() ? 1 : 0;
  }
  REQUIRE(dirs > 1);
  auto counted = std::make_shared<CountingStorage>(LocalStorage());
  ConvertReport report;
  REQUIRE(Convert(SourceOpts(src, dir / "out", counted), &report).ok());
  CHECK(report.files == files);
  StorageOps ops = counted->ops();
  CHECK(ops[StorageOp::kList] == dirs);
  CHECK(ops[StorageOp::kOpen] == files);
  CHECK(ops[StorageOp::kRead] == files);  // small files: one read each, whole
  CHECK(ops.write_bytes == 0);            // OUT is not SRC's backend
}

TEST_CASE("convert: EIO reading a source file names it; nothing is left under OUT", "[pack]") {
  test::TempDir dir;
  std::string src = SourceSynth(dir, 120);
  auto fault = std::make_shared<FaultStorage>(LocalStorage());
  fault->FailOp(StorageOp::kRead, 37);
  ConvertReport report;
  std::string out = dir / "out";
  Status st = Convert(SourceOpts(src, out, fault), &report);
  INFO(st.ToString());
  REQUIRE_FALSE(st.ok());
  CHECK(st.code() == Code::kBadInput);  // exit 1: the input's fault
  CHECK(st.message().find(src + "/") != std::string::npos);
  CHECK(st.message().find("Input/output error (injected read #37)") != std::string::npos);
  CHECK(st.message().find('\n') == std::string::npos);
  CHECK_FALSE(fs::exists(out));
}
