// The readers in formats/ through the storage interface (src/storage.h): every byte they read
// comes from the Storage they were opened on, so the decorators over it see every read
// (CountingStorage: the bill) and can fail any of them (FaultStorage: EIO, short reads).
#include <catch2/catch.hpp>
#include <filesystem>
#include <memory>
#include <numeric>

#include "caps_storage.h"
#include "formats/layout.h"
#include "formats/layout_options.h"
#include "formats/subset.h"
#include "src/storage_decorators.h"
#include "test_util.h"

using namespace ds;

namespace {

const Format kSharded[] = {Format::kNative, Format::kWds, Format::kTfrecord, Format::kRecordio};

std::vector<Sample> ReaderSamples(int n) {
  std::vector<Sample> v;
  for (int i = 0; i < n; i++) {
    Sample s;
    s.key = "k" + std::to_string(1000 + i);
    s.fields.push_back({"jpg", std::string(3000 + 131 * i, static_cast<char>('a' + i % 26))});
    s.fields.push_back({"cls", std::to_string(i % 3)});
    v.push_back(std::move(s));
  }
  return v;
}

// Writes samples as layout f in shards of about 16 KiB (several samples each, several shards).
std::string WriteLayout(const std::string& out, Format f, const std::vector<Sample>& samples) {
  LayoutKnobs k;
  if (f != Format::kLmdb) k.shard_size = 16384;
  auto o = MakeWriterOptions(f, k, {});
  REQUIRE(o.ok());
  auto w = CreateLayoutWriter(out, *o);
  REQUIRE(w.ok());
  for (const auto& s : samples) REQUIRE((*w)->Add(s).ok());
  LayoutSummary sum;
  REQUIRE((*w)->Finish(&sum).ok());
  return out;
}

std::vector<uint64_t> All(uint64_t n) {
  std::vector<uint64_t> v(n);
  std::iota(v.begin(), v.end(), 0);
  return v;
}

}  // namespace

TEST_CASE("readers: an EIO in the middle of a shard read names the file and the offset",
          "[formats]") {
  test::TempDir dir;
  auto samples = ReaderSamples(30);
  for (Format f : kSharded) {
    INFO(FormatName(f));
    std::string out = WriteLayout(dir / std::string(FormatName(f)), f, samples);
    auto fault = std::make_shared<FaultStorage>(LocalStorage());
    auto r = OpenLayout(StorageRef{fault, out});
    REQUIRE(r.ok());
    auto loc = (*r)->Locate(17);
    REQUIRE(loc.ok());

    fault->FailOp(StorageOp::kRead, 1);
    auto bad = (*r)->Get(17);
    REQUIRE_FALSE(bad.ok());
    CHECK(bad.status().code() == Code::kIOError);
    CHECK(bad.status().err() == EIO);
    CHECK_THAT(bad.status().message(),
               Catch::Contains(out + "/" + loc->file + ": read at offset "));
    CHECK_THAT(bad.status().message(), Catch::Contains("injected read"));
    auto good = (*r)->Get(17);  // one fault, then well again
    REQUIRE(good.ok());
    CHECK(good->key == samples[17].key);

    // A batched read over a backend without local fds goes through threads, and stops at the
    // fault with the same message.
    fault->FailOp(StorageOp::kRead, 5);
    std::vector<Sample> got;
    BatchReadStats st;
    auto batch = (*r)->ReadBatch(All(samples.size()), {}, &got, &st);
    CHECK(st.engine == "threads");
    REQUIRE_FALSE(batch.ok());
    CHECK_THAT(batch.message(), Catch::Contains(": read at offset "));
    CHECK_THAT(batch.message(), Catch::Contains("injected read"));
  }
}

TEST_CASE("readers: short reads from the backend are continued, never returned", "[formats]") {
  test::TempDir dir;
  auto samples = ReaderSamples(12);
  for (Format f : kSharded) {
    INFO(FormatName(f));
    std::string out = WriteLayout(dir / std::string(FormatName(f)), f, samples);
    auto fault = std::make_shared<FaultStorage>(LocalStorage());
    fault->ShortReads(7);
    auto r = OpenLayout(StorageRef{fault, out});
    REQUIRE(r.ok());
    for (uint64_t i = 0; i < samples.size(); i++) {
      auto s = (*r)->Get(i);
      REQUIRE(s.ok());
      CHECK(s->key == samples[i].key);
      CHECK(s->fields[0].data == samples[i].fields[0].data);
    }
  }
}

TEST_CASE("readers: the counting backend's bill of a layout", "[formats]") {
  test::TempDir dir;
  auto samples = ReaderSamples(30);
  for (Format f : kSharded) {
    INFO(FormatName(f));
    std::string out = WriteLayout(dir / std::string(FormatName(f)), f, samples);
    auto counting = std::make_shared<CountingStorage>(LocalStorage());
    auto r = OpenLayout(StorageRef{counting, out});
    REQUIRE(r.ok());
    CHECK(counting->ops()[StorageOp::kOpen] >= 2);  // its metadata and its shards, at open
    counting->Reset();
    uint64_t bytes = 0;
    for (uint64_t i = 0; i < samples.size(); i++) {
      auto s = (*r)->Get(i);
      REQUIRE(s.ok());
      bytes += s->payload_bytes();
    }
    StorageOps ops = counting->ops();
    // Shards stay open: reading opens and stats nothing; a sample is one or two reads (native:
    // its head, then its fields in one gathered read).
    CHECK(ops[StorageOp::kOpen] == 0);
    CHECK(ops[StorageOp::kStat] == 0);
    CHECK(ops[StorageOp::kRead] >= samples.size());
    CHECK(ops[StorageOp::kRead] <= 2 * samples.size());
    CHECK(ops.read_bytes >= bytes);
    CHECK_THAT(FormatStorageBill(ops, samples.size()), Catch::Contains("ops per sample (read "));
  }
}

namespace {
// A local backend that says it cannot be mapped and is not "file", as a remote one says (a mock
// of those answers; every byte still comes from the local files).
std::shared_ptr<Storage> NoMmapStorage() {
  return std::make_shared<test::CapsStorage>(
      LocalStorage(),
      [](StorageCaps* c) {
        c->mmap = false;
        c->local_fd = false;
      },
      "remote");
}
}  // namespace

TEST_CASE("readers: what needs a mapped file asks the backend, and says why it refuses",
          "[formats]") {
  test::TempDir dir;
  auto samples = ReaderSamples(10);
  auto nomap = NoMmapStorage();
  std::string lmdb = WriteLayout(dir / "lmdb", Format::kLmdb, samples);
  auto refused = OpenLayout(StorageRef{nomap, lmdb});
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().code() == Code::kUnsupported);
  CHECK_THAT(refused.status().message(),
             Catch::Contains(lmdb + ": LMDB needs a local file: liblmdb maps it; stage it with "
                                    "dssync or read it through a mount"));
  // The native global index is mapped where it can be, and read whole where it cannot.
  std::string native = WriteLayout(dir / "native", Format::kNative, samples);
  auto r = OpenLayout(StorageRef{nomap, native});
  REQUIRE(r.ok());
  for (uint64_t i = 0; i < samples.size(); i++) {
    auto s = (*r)->Get(i);
    REQUIRE(s.ok());
    CHECK(s->key == samples[i].key);
  }
  auto found = (*r)->Find(samples[7].key);
  REQUIRE(found.ok());
  CHECK(found->value_or(99) == 7);
}

TEST_CASE("readers: a damaged dataset is refused as a tree on any backend", "[formats]") {
  // A native dataset whose manifest is gone must not be read as a plain tree of its shard files;
  // the check reads the names through the backend, so it holds on a remote one too.
  test::TempDir dir;
  auto samples = ReaderSamples(10);
  auto remote = NoMmapStorage();
  std::string native = WriteLayout(dir / "native", Format::kNative, samples);
  REQUIRE(std::filesystem::remove(native + "/manifest.json"));
  auto r = OpenAnyReader(StorageRef{remote, native});
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == Code::kCorruption);
  CHECK_THAT(r.status().message(), Catch::Contains("but no manifest.json"));
  // A plain tree through the same backend is read as one.
  test::WriteFile(dir / "tree/a/x.bin", "abc");
  auto tree = OpenAnyReader(StorageRef{remote, dir / "tree"});
  REQUIRE(tree.ok());
  CHECK((*tree)->size() == 1);
}

TEST_CASE("readers: a subset view reads and verifies through its backend", "[formats]") {
  test::TempDir dir;
  auto samples = ReaderSamples(30);
  std::string out = WriteLayout(dir / "native", Format::kNative, samples);
  auto files = ListDatasetFiles(out);
  REQUIRE(files.ok());
  REQUIRE(*files);
  REQUIRE((*files)->shards.size() > 2);
  const std::string first = (*files)->shards[0].name;
  const std::vector<std::string> staged{first};
  REQUIRE(RecordStagedShards(out, out, staged, "test: the first shard").ok());
  for (size_t k = 1; k < (*files)->shards.size(); k++) {
    REQUIRE(std::filesystem::remove(out + "/" + (*files)->shards[k].name));
  }
  auto counting = std::make_shared<CountingStorage>(LocalStorage());
  auto r = OpenLayout(StorageRef{counting, out});
  REQUIRE(r.ok());
  CHECK((*r)->size() == (*files)->shards[0].samples);
  CHECK((*r)->Info()["subset"]["of_shards"] == (*files)->shards.size());
  counting->Reset();
  LayoutVerifyReport report;
  REQUIRE((*r)->Verify(&report, {}).ok());
  CHECK(report.ok());
  CHECK(counting->ops()[StorageOp::kStat] >= 1);  // the present files, through the backend
  CHECK(counting->ops().read_bytes >= (*files)->shards[0].size);
}
