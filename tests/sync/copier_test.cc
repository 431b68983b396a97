// sync/copier.h on real files: byte-identical copies (one task per file, and the chunks of a file
// in parallel), their XXH3-64, the manifest hash check, a source that changed since the plan or
// keeps changing, and resume from an interrupted run's journaled chunks; FanoutCopy (sync/fanout.h)
// with a one-rank channel: needed files only, verified, a changed source reported.
#include "sync/copier.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <cerrno>
#include <chrono>
#include <filesystem>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "caps_storage.h"
#include "src/checksum.h"
#include "src/random.h"
#include "sync/fanout.h"
#include "sync/syncer.h"
#include "test_util.h"

using namespace ds;
using namespace ds::sync;

namespace {

constexpr uint64_t kChunk = 64 << 10;

std::string Content(size_t n, uint64_t seed) {
  std::string s(n, '\0');
  Rng(seed).Fill(s.data(), n);
  return s;
}

// What BuildPlan would say about SRC/rel now.
PlanFile PlanOf(const std::string& src, const std::string& rel) {
  struct stat st;
  REQUIRE(::stat((src + "/" + rel).c_str(), &st) == 0);
  PlanFile f;
  f.rel = rel;
  f.src_path = src + "/" + rel;
  f.size = static_cast<uint64_t>(st.st_size);
  f.mtime_ns = MtimeNs(st);
  f.mode = st.st_mode & 07777;
  return f;
}

bool Exists(const std::string& p) { return ::access(p.c_str(), F_OK) == 0; }

// Every dssync tmp file left anywhere under dir.
std::vector<std::string> TmpFiles(const std::string& dir) {
  std::vector<std::string> v;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir)) {
    if (e.path().filename().string().rfind(kTmpPrefix, 0) == 0) v.push_back(e.path());
  }
  return v;
}

std::vector<JournalEntry> JournalOf(const std::string& dst, const std::string& rel, char kind) {
  std::vector<JournalEntry> v;
  for (auto& e : ParseJournal(test::ReadFile(dst + "/" + kJournalName))) {
    if (e.path == rel && e.kind == kind) v.push_back(e);
  }
  return v;
}

CopyOptions MakeOptions(const std::string& dst, Journal* journal, int threads) {
  CopyOptions o;
  o.dst = dst;
  o.threads = threads;
  o.chunk_size = kChunk;
  o.journal = journal;
  return o;
}

// Local files with a version, as s3:// objects have their ETag: a file's version is its mtime in
// nanoseconds. A file opened by its listing (OpenListed) reads that version or fails as a pinned
// S3 read answers 412 (kCorruption, ESTALE); OpenRead opens what is there now. Counts both.
class VersionedStorage final : public StorageDecorator {
 public:
  explicit VersionedStorage(std::shared_ptr<Storage> base) : StorageDecorator(std::move(base)) {}
  static std::string Version(const std::string& path) {
    struct stat st;
    return ::stat(path.c_str(), &st) == 0 ? std::to_string(MtimeNs(st)) : "";
  }
  Result<std::unique_ptr<RandomAccessFile>> OpenListed(const std::string& path,
                                                       const FileInfo& listed) override {
    ++by_listing;
    DS_ASSIGN_OR_RETURN(auto f, base().OpenRead(path));
    return std::unique_ptr<RandomAccessFile>(new Pinned(std::move(f), path, listed));
  }
  std::atomic<int> by_listing{0}, reopened{0};

 protected:
  Status Before(StorageOp op, const std::string&) override {
    if (op == StorageOp::kOpen) ++reopened;
    return Status::Ok();
  }
  std::unique_ptr<RandomAccessFile> WrapRead(std::unique_ptr<RandomAccessFile> f) override {
    return f;
  }
  std::unique_ptr<WritableFile> WrapWrite(std::unique_ptr<WritableFile> f) override { return f; }

 private:
  class Pinned final : public RandomAccessFile {
   public:
    Pinned(std::unique_ptr<RandomAccessFile> f, std::string path, FileInfo listed)
        : f_(std::move(f)), path_(std::move(path)), listed_(std::move(listed)) {}
    const std::string& name() const override { return f_->name(); }
    uint64_t size() const override { return listed_.size; }
    Result<size_t> ReadSome(uint64_t offset, void* buf, size_t n) const override {
      if (Version(path_) != listed_.version) {
        return Status(Code::kCorruption, path_ + ": changed since it was listed", ESTALE);
      }
      return f_->ReadSome(offset, buf, n);
    }

   private:
    std::unique_ptr<RandomAccessFile> f_;
    std::string path_;
    FileInfo listed_;
  };
};

// A source, a staging directory and its journal.
struct Stage {
  test::TempDir src, dst;
  std::vector<JournalEntry> existing;
  Journal journal = std::move(Journal::Open(dst.path(), &existing)).value();
  CopyOptions Options(int threads) { return MakeOptions(dst.path(), &journal, threads); }
};

}  // namespace

TEST_CASE("CopyFiles copies files byte-identically with their xxh3, mode and mtime", "[sync]") {
  // 2 threads for 3 files: one task per file (hash inline); 8: the big file's chunks in parallel.
  const int threads = GENERATE(2, 8);
  INFO("threads " << threads);
  Stage s;
  const std::string big = Content(5 * kChunk + 123, 1), small = Content(1000, 2);
  test::WriteFile(s.src / "empty", "");
  test::WriteFile(s.src / "small.bin", small);
  test::WriteFile(s.src / "sub/big.bin", big);
  REQUIRE(::chmod((s.src / "small.bin").c_str(), 0640) == 0);
  std::filesystem::create_directories(s.dst / "sub");
  std::vector<PlanFile> files{PlanOf(s.src.path(), "empty"), PlanOf(s.src.path(), "small.bin"),
                              PlanOf(s.src.path(), "sub/big.bin")};
  std::atomic<uint64_t> files_done{0}, bytes_done{0};
  CopyOptions o = s.Options(threads);
  o.files_done = &files_done;
  o.bytes_done = &bytes_done;
  auto results = CopyFiles(files, o);
  REQUIRE(results.size() == 3);
  const std::string contents[] = {"", small, big};
  for (size_t i = 0; i < 3; i++) {
    INFO(files[i].rel);
    const CopyResult& r = results[i];
    REQUIRE(r.status.ok());
    CHECK(r.rel == files[i].rel);
    CHECK(r.size == contents[i].size());
    CHECK(r.xxh3 == Xxh3_64(contents[i]));
    CHECK_FALSE(r.recopied);
    CHECK_FALSE(r.verified);  // no manifest hash was given
    CHECK(r.resumed_bytes == 0);
    CHECK(test::ReadFile(s.dst / files[i].rel) == contents[i]);
    struct stat st;
    REQUIRE(::stat((s.dst / files[i].rel).c_str(), &st) == 0);
    CHECK((st.st_mode & 07777) == files[i].mode);
    CHECK(MtimeNs(st) == files[i].mtime_ns);
    // The committed file is in the journal with its whole-file hash.
    auto f = JournalOf(s.dst.path(), files[i].rel, 'F');
    REQUIRE(f.size() == 1);
    CHECK(f[0] == JournalEntry{'F', r.size, files[i].mtime_ns, 0, r.size, r.xxh3, files[i].rel});
  }
  CHECK(files[1].mode == 0640);
  CHECK(TmpFiles(s.dst.path()).empty());
  CHECK(files_done == 3);
  CHECK(bytes_done == big.size() + small.size());
  // Each chunk of the big file was journaled with its own hash; single-chunk files never are.
  auto chunks = JournalOf(s.dst.path(), "sub/big.bin", 'C');
  std::sort(chunks.begin(), chunks.end(),
            [](const JournalEntry& a, const JournalEntry& b) { return a.offset < b.offset; });
  REQUIRE(chunks.size() == 6);
  for (size_t k = 0; k < chunks.size(); k++) {
    CHECK(chunks[k].offset == k * kChunk);
    CHECK(chunks[k].length == (k < 5 ? kChunk : 123));
    CHECK(chunks[k].xxh3 == Xxh3_64(std::string_view(big).substr(k * kChunk, chunks[k].length)));
    CHECK(chunks[k].src_size == big.size());
  }
  CHECK(JournalOf(s.dst.path(), "small.bin", 'C').empty());
}

TEST_CASE("CopyFiles checks the manifest's xxh3: a mismatch is kCorruption, nothing staged",
          "[sync]") {
  const int threads = GENERATE(1, 8);
  INFO("threads " << threads);
  Stage s;
  const std::string good = Content(3000, 3), bad = Content(3 * kChunk + 7, 4);
  test::WriteFile(s.src / "good", good);
  test::WriteFile(s.src / "bad", bad);
  std::vector<PlanFile> files{PlanOf(s.src.path(), "good"), PlanOf(s.src.path(), "bad")};
  files[0].expected_xxh3 = Xxh3_64(good);
  files[1].expected_xxh3 = Xxh3_64(bad) ^ 1;
  auto results = CopyFiles(files, s.Options(threads));
  REQUIRE(results.size() == 2);
  REQUIRE(results[0].status.ok());
  CHECK(results[0].verified);
  CHECK(test::ReadFile(s.dst / "good") == good);
  CHECK(results[1].status.code() == Code::kCorruption);
  CHECK_THAT(results[1].status.message(),
             Catch::Contains("bad: xxh3") && Catch::Contains(HexU64(Xxh3_64(bad) ^ 1)));
  CHECK(results[1].recopied);  // copied once more before giving up
  CHECK_FALSE(Exists(s.dst / "bad"));
  CHECK(TmpFiles(s.dst.path()).empty());
  CHECK(JournalOf(s.dst.path(), "bad", 'F').empty());
}

TEST_CASE("CopyFiles copies a source that changed since the plan again, as it is now", "[sync]") {
  const int threads = GENERATE(1, 8);
  // Pinned reads: no stat after the copy (the bill counts none); the open's size decides.
  const bool pinned = GENERATE(false, true);
  INFO("threads " << threads << " pinned " << pinned);
  Stage s;
  auto counted = std::make_shared<CountingStorage>(
      pinned ? std::make_shared<test::CapsStorage>(LocalStorage(),
                                                   [](StorageCaps* c) { c->pinned_reads = true; })
             : LocalStorage());
  test::WriteFile(s.src / "same", Content(kChunk + 3, 4));
  test::WriteFile(s.src / "grew", Content(2 * kChunk, 5));
  test::WriteFile(s.src / "shrank", Content(4 * kChunk, 6));
  test::WriteFile(s.src / "vanished", "x");
  std::vector<PlanFile> files{PlanOf(s.src.path(), "grew"), PlanOf(s.src.path(), "shrank"),
                              PlanOf(s.src.path(), "vanished"), PlanOf(s.src.path(), "same")};
  const std::string grew = Content(3 * kChunk + 1, 7), shrank = Content(kChunk + 9, 8);
  test::WriteFile(s.src / "grew", grew);
  test::WriteFile(s.src / "shrank", shrank);
  REQUIRE(::unlink((s.src / "vanished").c_str()) == 0);
  CopyOptions o = s.Options(threads);
  o.src_storage = counted;
  auto results = CopyFiles(files, o);
  REQUIRE(results.size() == 4);
  REQUIRE(results[3].status.ok());
  CHECK_FALSE(results[3].recopied);
  CHECK(test::ReadFile(s.dst / "same") == Content(kChunk + 3, 4));
  // Unpinned: a stat after each copy (the recopies too); pinned: only the recopies' own.
  const uint64_t stats = counted->ops()[StorageOp::kStat];
  if (pinned) {
    CHECK(stats == 2);  // grew and shrank, reopened
  } else {
    CHECK(stats >= 5);
  }
  for (size_t i : {0, 1}) {
    INFO(files[i].rel);
    const std::string& now = i == 0 ? grew : shrank;
    REQUIRE(results[i].status.ok());
    CHECK(results[i].recopied);
    CHECK(results[i].size == now.size());  // what was committed, not what was planned
    CHECK(results[i].mtime_ns == PlanOf(s.src.path(), files[i].rel).mtime_ns);
    CHECK(results[i].xxh3 == Xxh3_64(now));
    CHECK(test::ReadFile(s.dst / files[i].rel) == now);
  }
  CHECK(results[2].status.code() == Code::kBadInput);
  CHECK_THAT(results[2].status.message(), Catch::Contains("vanished: vanished during the copy"));
  CHECK_FALSE(Exists(s.dst / "vanished"));
  CHECK(TmpFiles(s.dst.path()).empty());
}

TEST_CASE("CopyFiles opens what the plan listed; a version changed since is copied again",
          "[sync]") {
  // As dssync from s3://: the open is the listing's ETag (no HEAD), and a same-size object
  // replaced after the listing fails its first pinned read (412): reopened, copied as it is now.
  const int threads = GENERATE(1, 8);
  INFO("threads " << threads);
  Stage s;
  auto versioned = std::make_shared<VersionedStorage>(std::make_shared<test::CapsStorage>(
      LocalStorage(), [](StorageCaps* c) { c->pinned_reads = true; }));
  test::WriteFile(s.src / "kept", Content(3 * kChunk, 10));
  test::WriteFile(s.src / "replaced", Content(3 * kChunk, 11));
  std::vector<PlanFile> files{PlanOf(s.src.path(), "kept"), PlanOf(s.src.path(), "replaced")};
  for (PlanFile& f : files) f.version = VersionedStorage::Version(f.src_path);
  const std::string now = Content(3 * kChunk, 12);  // the same size, other bytes, a new mtime
  test::WriteFile(s.src / "replaced", now);
  struct timespec ts[2] = {{2000000000, 0}, {2000000000, 0}};
  REQUIRE(::utimensat(AT_FDCWD, files[1].src_path.c_str(), ts, 0) == 0);
  CopyOptions o = s.Options(threads);
  o.src_storage = versioned;
  auto results = CopyFiles(files, o);
  REQUIRE(results.size() == 2);
  REQUIRE(results[0].status.ok());
  CHECK_FALSE(results[0].recopied);
  CHECK(test::ReadFile(s.dst / "kept") == Content(3 * kChunk, 10));
  REQUIRE(results[1].status.ok());
  CHECK(results[1].recopied);
  CHECK(results[1].xxh3 == Xxh3_64(now));
  CHECK(results[1].mtime_ns == 2000000000LL * 1000000000LL);
  CHECK(test::ReadFile(s.dst / "replaced") == now);
  CHECK(versioned->by_listing == 2);
  CHECK(versioned->reopened == 1);  // only the replaced file was opened again
  CHECK(TmpFiles(s.dst.path()).empty());
}

TEST_CASE("CopyFiles reports a source that keeps changing as 'changed during copy'", "[sync]") {
  Stage s;
  const std::string data = Content(128 << 10, 9);
  test::WriteFile(s.src / "busy", data);
  std::vector<PlanFile> files{PlanOf(s.src.path(), "busy")};
  // The bucket makes each attempt wait ~30 ms after its read, while another thread keeps moving
  // the source's mtime: both attempts see it change between their open and their final stat.
  TokenBucket bucket(2 << 20, 64 << 10);
  std::atomic<bool> stop{false};
  std::thread toucher([&] {
    for (int64_t i = 1; !stop; i++) {
      struct timespec ts[2] = {{2000000000 + i, 0}, {2000000000 + i, 0}};
      ::utimensat(AT_FDCWD, files[0].src_path.c_str(), ts, 0);
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  });
  CopyOptions o = s.Options(4);
  o.bucket = &bucket;
  auto results = CopyFiles(files, o);
  stop = true;
  toucher.join();
  REQUIRE(results.size() == 1);
  CHECK(results[0].status.code() == Code::kBadInput);
  CHECK_THAT(results[0].status.message(), Catch::Contains("busy: changed during copy"));
  CHECK(results[0].recopied);
  CHECK_FALSE(Exists(s.dst / "busy"));
  CHECK(TmpFiles(s.dst.path()).empty());
}

TEST_CASE("CopyFiles resumes from an interrupted run's journaled chunks in its tmp file",
          "[sync]") {
  const int threads = GENERATE(1, 8);  // one task for the file (hash inline), or per chunk
  INFO("threads " << threads);
  test::TempDir src, dst;
  const std::string data = Content(5 * kChunk + 500, 10);
  test::WriteFile(src / "f", data);
  std::vector<PlanFile> files{PlanOf(src.path(), "f")};
  std::vector<JournalEntry> existing;
  {
    auto j = Journal::Open(dst.path(), &existing);
    REQUIRE(j.ok());
    REQUIRE(CopyFiles(files, MakeOptions(dst.path(), &*j, threads))[0].status.ok());
  }
  // An interrupted run: the journal's chunk entries, and a tmp file that holds their bytes.
  auto j = Journal::Open(dst.path(), &existing);
  REQUIRE(j.ok());
  std::map<std::string, std::vector<JournalEntry>> previous;
  for (const auto& e : existing) previous[e.path].push_back(e);
  REQUIRE(previous["f"].size() == 7);  // 6 chunks and the file
  CopyOptions o = MakeOptions(dst.path(), &*j, threads);
  o.previous = &previous;
  auto resumed = [&] {
    auto r = CopyFiles(files, o);
    REQUIRE(r[0].status.ok());
    CHECK(r[0].xxh3 == Xxh3_64(data));
    CHECK(test::ReadFile(dst / "f") == data);
    CHECK(TmpFiles(dst.path()).empty());
    return r[0].resumed_bytes;
  };
  // Chunks reused, but one whose tmp bytes no longer hash to its entry is copied again.
  std::string tmp = test::ReadFile(dst / "f");
  tmp[2 * kChunk + 17] ^= 0x40;
  test::WriteFile(dst / TmpRel("f"), tmp);
  CHECK(resumed() == data.size() - kChunk);
  if (threads == 1) return;  // the rest does not depend on how the chunks are scheduled
  // No tmp file: nothing to reuse.
  CHECK(resumed() == 0);
  // A source modified since the entries were written: they no longer apply.
  REQUIRE(::rename((dst / "f").c_str(), (dst / TmpRel("f")).c_str()) == 0);
  struct timespec ts[2] = {{1000000000, 0}, {1000000000, 0}};
  REQUIRE(::utimensat(AT_FDCWD, (src / "f").c_str(), ts, 0) == 0);
  files = {PlanOf(src.path(), "f")};
  CHECK(resumed() == 0);
}

namespace {

// A job of one rank (the root): the collectives are trivial, so the fan-out's own logic shows.
struct SoloJob : Job {
  int rank() const override { return 0; }
  int size() const override { return 1; }
  Result<std::vector<std::string>> AllGather(const std::string& mine, std::string_view) override {
    calls++;
    return std::vector<std::string>{mine};
  }
  Status Broadcast(std::string* bytes, std::string_view) override {
    calls++;
    shared += bytes->size();
    return Status::Ok();
  }
  int calls = 0;
  uint64_t shared = 0;
};

}  // namespace

TEST_CASE("FanoutCopy stages what is needed, verified, and reads nothing else", "[sync]") {
  Stage s;
  const std::string big = Content(3 * kChunk + 77, 5), small = Content(1000, 6);
  test::WriteFile(s.src / "big.bin", big);
  test::WriteFile(s.src / "small.bin", small);
  test::WriteFile(s.src / "bad.bin", "not what the manifest says");
  test::WriteFile(s.src / "skip.bin", Content(5000, 7));
  std::vector<PlanFile> files{PlanOf(s.src.path(), "big.bin"), PlanOf(s.src.path(), "small.bin"),
                              PlanOf(s.src.path(), "bad.bin"), PlanOf(s.src.path(), "skip.bin")};
  files[0].expected_xxh3 = Xxh3_64(big.data(), big.size());
  files[2].expected_xxh3 = 12345;
  SoloJob ch;
  auto results = FanoutCopy(files, {true, true, true, false}, s.Options(4), &ch);
  REQUIRE(results.size() == 3);  // the needed files only
  CHECK(results[0].status.ok());
  CHECK(results[0].verified);
  CHECK(test::ReadFile(s.dst / "big.bin") == big);
  CHECK(results[1].status.ok());
  CHECK(test::ReadFile(s.dst / "small.bin") == small);
  CHECK(results[2].status.code() == Code::kCorruption);
  CHECK_FALSE(Exists(s.dst / "bad.bin"));
  CHECK_FALSE(Exists(s.dst / "skip.bin"));
  CHECK(TmpFiles(s.dst.path()).empty());
  // the plan fingerprint, then per file: who needs it, its chunks and its verdict; skip.bin
  // was needed by nobody, so none of its bytes went out.
  CHECK(ch.shared < big.size() + small.size() + 200);
  CHECK(JournalOf(s.dst.path(), "big.bin", 'F').size() == 1);

  // A file that changed since the plan: every rank reports it, nothing under its final name.
  test::WriteFile(s.src / "small.bin", small + "more");
  SoloJob ch2;
  auto again = FanoutCopy({files[1]}, {true}, s.Options(4), &ch2);
  REQUIRE(again.size() == 1);
  CHECK(again[0].status.code() == Code::kBadInput);
  CHECK(again[0].status.message().find("changed during copy") != std::string::npos);

  // Over a backend whose reads are pinned to the listed version (s3://): opened by the plan's
  // listing, no stat after the copy, and a same-size replacement is still a changed file.
  auto versioned = std::make_shared<VersionedStorage>(std::make_shared<test::CapsStorage>(
      LocalStorage(), [](StorageCaps* c) { c->pinned_reads = true; }));
  auto counted = std::make_shared<CountingStorage>(versioned);
  PlanFile listed = PlanOf(s.src.path(), "big.bin");
  listed.version = VersionedStorage::Version(listed.src_path);
  CopyOptions o = s.Options(4);
  o.src_storage = counted;
  SoloJob ch3;
  auto pinned = FanoutCopy({listed}, {true}, o, &ch3);
  REQUIRE(pinned.size() == 1);
  CHECK(pinned[0].status.ok());
  CHECK(counted->ops()[StorageOp::kStat] == 0);
  CHECK(versioned->by_listing == 1);
  test::WriteFile(s.src / "big.bin", Content(big.size(), 9));
  struct timespec ts[2] = {{2000000000, 0}, {2000000000, 0}};
  REQUIRE(::utimensat(AT_FDCWD, listed.src_path.c_str(), ts, 0) == 0);
  SoloJob ch4;
  auto replaced = FanoutCopy({listed}, {true}, o, &ch4);
  REQUIRE(replaced.size() == 1);
  CHECK(replaced[0].status.code() == Code::kBadInput);
  CHECK_THAT(replaced[0].status.message(), Catch::Contains("big.bin: changed during copy"));
}

TEST_CASE("CopyFiles and Sync refuse a chunk size of 0 or off 4 KiB, naming the field", "[sync]") {
  // Checked once only in dssync's main: a library caller passing 0 divided by zero in the
  // copier's chunk count.
  Stage s;
  test::WriteFile(s.src / "f", Content(10000, 3));
  std::vector<PlanFile> files{PlanOf(s.src.path(), "f")};
  for (uint64_t bad : {uint64_t{0}, uint64_t{1000}}) {
    INFO("chunk_size " << bad);
    CopyOptions o = s.Options(2);
    o.chunk_size = bad;
    auto results = CopyFiles(files, o);
    REQUIRE(results.size() == 1);
    CHECK(results[0].rel == "f");
    CHECK(results[0].status.code() == Code::kInvalidArgument);
    CHECK(results[0].status.message().find("chunk_size") != std::string::npos);
    CHECK_FALSE(std::filesystem::exists(s.dst / "f"));
    CHECK(TmpFiles(s.dst.path()).empty());

    SyncOptions so;
    so.src = s.src.path();
    so.dst = s.dst.path() + "/staged";
    so.chunk_size = bad;
    auto r = Sync(so);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == Code::kInvalidArgument);
    CHECK(r.status().message().find("chunk_size") != std::string::npos);
    CHECK_FALSE(std::filesystem::exists(so.dst));
  }
  CopyOptions o = s.Options(0);
  CHECK(CopyFiles(files, o)[0].status.code() == Code::kInvalidArgument);
}
