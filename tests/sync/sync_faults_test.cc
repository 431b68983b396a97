// dssync through the storage interface's fault injection (src/storage_decorators.h), as the
// writers' crash tests do for convert (tests/pack/convert_faults_test.cc):
//   - ENOSPC on DST mid-copy: the run stops with kNoSpace naming the file; nothing partial is
//     under a final name, no tmp file is left, no .dssync-ready; a second run completes;
//   - EIO in the middle of a source read names the file and the offset, and the file is not
//     staged while the others are;
//   - a crash (power cut) at any write: every file under its final name is whole, and the next
//     run stages the rest;
//   - short reads from a source without a local fd are continued: the copy is byte-identical.
#include <catch2/catch.hpp>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "src/random.h"
#include "src/storage_decorators.h"
#include "sync/syncer.h"
#include "test_util.h"

using namespace ds;
using namespace ds::sync;

namespace {

constexpr uint64_t kFaultChunk = 64 << 10;

// A source tree: files of several sizes (one of many chunks), in two directories.
struct FaultTree {
  test::TempDir src, dst;
  std::vector<std::pair<std::string, std::string>> files;  // rel, bytes
  FaultTree() {
    const size_t sizes[] = {0, 100, 5000, 70000, 3 * kFaultChunk + 17, 300000};
    for (size_t i = 0; i < std::size(sizes); i++) {
      std::string bytes(sizes[i], '\0');
      Rng(i + 1).Fill(bytes.data(), bytes.size());
      std::string rel = (i % 2 ? "a/" : "b/c/") + std::to_string(i) + ".bin";
      test::WriteFile(src / rel, bytes);
      files.emplace_back(rel, bytes);
    }
  }
  SyncOptions Options(std::shared_ptr<Storage> src_storage, std::shared_ptr<Storage> dst_storage,
                      int threads = 4) const {
    SyncOptions o;
    o.src = src.path();
    o.dst = dst.path();
    o.threads = threads;
    o.chunk_size = kFaultChunk;
    o.src_storage = std::move(src_storage);
    o.dst_storage = std::move(dst_storage);
    return o;
  }
  // Every file under its final name in DST holds exactly the source's bytes; returns how many.
  size_t WholeStaged() const {
    size_t n = 0;
    for (const auto& [rel, bytes] : files) {
      if (!std::filesystem::exists(dst / rel)) continue;
      INFO(rel);
      CHECK(test::ReadFile(dst / rel) == bytes);
      n++;
    }
    return n;
  }
  bool HasTmpFiles() const {
    for (const auto& e : std::filesystem::recursive_directory_iterator(dst.path())) {
      if (e.path().filename().string().rfind(kTmpPrefix, 0) == 0) return true;
    }
    return false;
  }
  bool Ready() const { return std::filesystem::exists(dst / ".dssync-ready"); }
};

}  // namespace

TEST_CASE("dssync: ENOSPC on DST mid-copy stops the run, nothing partial under a final name",
          "[sync]") {
  FaultTree t;
  auto fault = std::make_shared<FaultStorage>(LocalStorage());
  fault->FailOp(StorageOp::kWrite, 4, ENOSPC);
  auto r = Sync(t.Options(LocalStorage(), fault));
  REQUIRE(r.ok());  // a per-file failure is in the report, not the status
  REQUIRE_FALSE(r->errors.empty());
  bool no_space = false;
  for (const Status& e : r->errors) {
    INFO(e.ToString());
    no_space = no_space || (e.code() == Code::kNoSpace &&
                            e.message().find("No space left on device") != std::string::npos &&
                            e.message().find(t.dst.path()) != std::string::npos);
  }
  CHECK(no_space);  // names the file in DST it was writing
  CHECK(t.WholeStaged() < t.files.size());
  CHECK_FALSE(t.HasTmpFiles());
  CHECK_FALSE(t.Ready());
  // Room again: the next run stages everything.
  auto again = Sync(t.Options(LocalStorage(), LocalStorage()));
  REQUIRE(again.ok());
  CHECK(again->errors.empty());
  CHECK(t.WholeStaged() == t.files.size());
  CHECK(t.Ready());
}

TEST_CASE("dssync: EIO in the middle of a source read names the file and the offset", "[sync]") {
  FaultTree t;
  auto fault = std::make_shared<FaultStorage>(LocalStorage());
  fault->ShortReads(kFaultChunk / 2);  // the big file takes several reads: fail one midway
  fault->FailOp(StorageOp::kRead, 9);
  auto r = Sync(t.Options(fault, LocalStorage(), /*threads=*/1));
  REQUIRE(r.ok());
  REQUIRE(r->errors.size() == 1);
  const std::string msg = r->errors[0].message();
  INFO(msg);
  CHECK(msg.find("read at offset ") != std::string::npos);
  CHECK(msg.find("read at offset 0") == std::string::npos);  // midway, not at the start
  CHECK(msg.find("Input/output error (injected read") != std::string::npos);
  // The file it names is not staged; the others are, whole.
  size_t named = 0;
  for (const auto& [rel, bytes] : t.files) {
    if (msg.find(rel) == std::string::npos) continue;
    named++;
    CHECK_FALSE(std::filesystem::exists(t.dst / rel));
  }
  CHECK(named == 1);
  CHECK(t.WholeStaged() == t.files.size() - 1);
  CHECK_FALSE(t.HasTmpFiles());
  CHECK_FALSE(t.Ready());
}

TEST_CASE("dssync: a crash at any write leaves only whole files under final names", "[sync]") {
  // How many writes a whole run makes through the fault layer (its files sync one by one).
  uint64_t writes = 0;
  {
    FaultTree t;
    auto count = std::make_shared<FaultStorage>(LocalStorage());
    auto r = Sync(t.Options(LocalStorage(), count));
    REQUIRE(r.ok());
    REQUIRE(r->errors.empty());
    writes = count->count(StorageOp::kWrite);
    REQUIRE(writes > 6);
  }
  for (uint64_t nth = 1; nth <= writes; nth += test::ExhaustiveStride()) {
    INFO("crash at write " << nth << " of " << writes);
    FaultTree t;
    auto fault = std::make_shared<FaultStorage>(LocalStorage());
    fault->CrashAt(StorageOp::kWrite, nth);
    (void)Sync(t.Options(LocalStorage(), fault, /*threads=*/2));
    REQUIRE(fault->crashed());
    CHECK_FALSE(t.Ready());
    t.WholeStaged();  // whatever is under a final name is whole
    // After the "reboot", the next run stages what is missing and reaches ready.
    auto again = Sync(t.Options(LocalStorage(), LocalStorage()));
    REQUIRE(again.ok());
    CHECK(again->errors.empty());
    CHECK(t.WholeStaged() == t.files.size());
    CHECK_FALSE(t.HasTmpFiles());
    CHECK(t.Ready());
  }
}

TEST_CASE("dssync: a source without a local fd is read through its own short reads", "[sync]") {
  FaultTree t;
  auto src = std::make_shared<FaultStorage>(LocalStorage());
  src->ShortReads(777);
  auto counted = std::make_shared<CountingStorage>(LocalStorage());
  auto r = Sync(t.Options(src, counted));
  REQUIRE(r.ok());
  CHECK(r->errors.empty());
  CHECK(t.WholeStaged() == t.files.size());
  CHECK(t.Ready());
  // DST's writes went through the storage interface too.
  uint64_t total = 0;
  for (const auto& [rel, bytes] : t.files) total += bytes.size();
  CHECK(counted->ops().write_bytes >= total);
  CHECK(counted->ops()[StorageOp::kRename] >= t.files.size());
}
