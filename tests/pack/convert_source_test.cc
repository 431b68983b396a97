// `dspack convert` reads a directory tree or an archive through the storage interface
// (ConvertOptions::src_storage): the walk is one List per directory and a file is one open, as
// the counting backend bills it; an archive is one open, read in order by libarchive; a read
// error from the backend stops the convert naming the file (and the offset), with nothing left
// under OUT.
#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "datasets/synth.h"
#include "formats/sources/archive_source.h"
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

TEST_CASE("convert reads an archive through SRC's storage; EIO names it and the offset", "[pack]") {
  test::TempDir dir;
  std::string src = SourceSynth(dir, 200);
  test::WriteFile(src + "/zz/big.bin", std::string(3 << 20, 'b'));  // several 1 MiB reads
  std::string tar = dir / "src.tar";
  REQUIRE(std::system(("tar -C " + src + " -cf " + tar + " .").c_str()) == 0);
  const auto tar_size = fs::file_size(tar);

  auto counted = std::make_shared<CountingStorage>(LocalStorage());
  ConvertReport report;
  REQUIRE(Convert(SourceOpts(tar, dir / "out", counted), &report).ok());
  CHECK(report.samples == 201);
  StorageOps ops = counted->ops();
  CHECK(ops[StorageOp::kOpen] == 3);  // its magic (a zip?), then listed and read: once each
  CHECK(ops.read_bytes > tar_size);   // the second pass reads every byte; the listing
  CHECK(ops.read_bytes < 2 * tar_size - (2 << 20));  // skips big.bin's data (skip callback)

  // The listing's third read (after the magic and the first MiB) fails.
  auto fault = std::make_shared<FaultStorage>(LocalStorage());
  fault->FailOp(StorageOp::kRead, 3);
  std::string out = dir / "out2";
  Status st = Convert(SourceOpts(tar, out, fault), &report);
  INFO(st.ToString());
  REQUIRE_FALSE(st.ok());
  CHECK(st.code() == Code::kBadInput);  // exit 1: the input's fault
  CHECK(st.message().rfind(tar + ": read at offset ", 0) == 0);
  CHECK(st.message().find(": Input/output error (injected read #3) (entry #") != std::string::npos);
  CHECK(st.message().find('\n') == std::string::npos);
  CHECK_FALSE(fs::exists(out));

  // The second pass (the samples' bytes): a read error ends it, named, for every later sample.
  ArchiveOptions ao;
  ao.spool_dir = dir.path();
  auto skip = [](std::string_view, const Status& s) { return s; };
  auto source = ArchiveSource::Open(fault, tar, ao, skip);
  REQUIRE(source.ok());
  fault->FailOp(StorageOp::kRead, 2);
  Status failed;
  for (uint64_t i = 0; i < (*source)->tree().sample_count() && failed.ok(); i++) {
    failed = (*source)->Load(i)->status;
  }
  CHECK(failed.code() == Code::kBadInput);
  CHECK(failed.message().rfind(tar + ": read at offset ", 0) == 0);
  CHECK(failed.message().find("(injected read #") != std::string::npos);
}
