// LMDB on damaged bytes (issue 15, docs/formats/lmdb.md "Bad input"): liblmdb follows its file
// without checks, so dspack's reader walks the tree first (formats/interop/lmdb_check.h). These
// cases mutate single bytes of a real data.mdb written through liblmdb and read every mutant in
// this process: a SIGSEGV or SIGBUS here is a failed test run, never a skipped case.
#include <catch2/catch.hpp>
#include <filesystem>
#include <random>

#include "formats/interop/lmdb_check.h"
#include "formats/layout.h"
#include "formats/layout_options.h"
#include "test_util.h"

using namespace ds;

namespace {

// Six small samples (inline values) and two large ones (overflow pages), labelled.
std::vector<Sample> LmdbSamples(int n, size_t big_every = 3) {
  std::vector<Sample> v;
  for (int i = 0; i < n; i++) {
    size_t size = i % big_every == 0 ? 9000 + 13 * i : 40 + i;
    v.push_back({"d/s" + std::to_string(i),
                 {{"bin", std::string(size, static_cast<char>('a' + i % 26))},
                  {"cls", std::to_string(i % 2)}}});
  }
  return v;
}

std::string WriteLmdb(const std::string& out, const std::vector<Sample>& samples) {
  auto o = MakeWriterOptions(Format::kLmdb, {}, {});
  REQUIRE(o.ok());
  auto w = CreateLayoutWriter(out, *o);
  REQUIRE(w.ok());
  (*w)->SetClasses({"a", "b"}, "cls");
  for (const auto& s : samples) REQUIRE((*w)->Add(s).ok());
  LayoutSummary sum;
  REQUIRE((*w)->Finish(&sum).ok());
  return out;
}

// A data error naming data.mdb, as every reader error on a damaged LMDB must be.
std::string Checked(const Status& s) {
  INFO(s.ToString());
  CHECK((s.code() == Code::kCorruption || s.code() == Code::kBadInput));
  CHECK(s.message().find("data.mdb") != std::string::npos);
  return s.message();
}

// Opens, verifies and reads every sample of the (mutated) dataset. Returns "" when all of it
// read and verified, else the first error or verify problem.
std::string LmdbReadAll(const std::string& out) {
  auto r = OpenLayout(out);
  if (!r.ok()) return Checked(r.status());
  std::string first;
  LayoutVerifyReport rep;
  Status s = (*r)->Verify(&rep, nullptr);
  if (!s.ok()) first = Checked(s);
  if (first.empty() && !rep.problems.empty()) first = rep.problems[0];
  for (uint64_t i = 0; i < (*r)->size(); i++) {
    auto g = (*r)->Get(i);
    if (!g.ok() && first.empty()) first = Checked(g.status());
  }
  return first;
}

}  // namespace

TEST_CASE("lmdb walk: a multi-level tree with overflow values passes, with liblmdb's counts",
          "[formats]") {
  test::TempDir dir;
  auto samples = LmdbSamples(3000, 50);
  std::string out = WriteLmdb(dir / "db", samples);
  auto t = lmdb::CheckLmdbTree(out + "/data.mdb");
  REQUIRE(t.ok());
  CHECK(t->depth >= 2);
  CHECK(t->entries == 3000 * 3 + 2);  // __key__, bin, cls per sample; __len__, __meta__
  CHECK(t->overflow_pages >= 60 * 3);
  CHECK(t->branch_pages >= 1);
  CHECK(LmdbReadAll(out).empty());
  auto none = lmdb::CheckLmdbTree(out + "/data.mdb", t->txnid + 2);
  CHECK(none.status().code() == Code::kNotFound);
}

TEST_CASE("lmdb: 0xff at each of 128 offsets on pages 2-3 never crashes a reader", "[formats]") {
  test::TempDir dir;
  std::string out = WriteLmdb(dir / "db", LmdbSamples(6));
  const std::string file = out + "/data.mdb";
  const std::string good = test::ReadFile(file);
  REQUIRE(good.size() >= 4 * 4096);
  int errors = 0;
  for (size_t off = 2 * 4096; off < 4 * 4096; off += 64) {
    INFO("offset " << off);
    std::string bad = good;
    bad[off] = static_cast<char>(0xff);
    test::WriteFile(file, bad);
    errors += !LmdbReadAll(out).empty();
  }
  test::WriteFile(file, good);
  CHECK(LmdbReadAll(out).empty());
  CHECK(errors == 128);  // the whole-file hash in dspack.json sees every change
}

TEST_CASE("lmdb: 500 single-byte mutants never crash a reader, even without dspack.json",
          "[formats]") {
  test::TempDir dir;
  std::string out = WriteLmdb(dir / "db", LmdbSamples(6));
  const std::string file = out + "/data.mdb";
  const std::string good = test::ReadFile(file);
  // Without dspack.json the reader has no file hash: every byte reaches the tree walk and
  // liblmdb (the dataset reads as a foreign LMDB).
  std::filesystem::remove(out + "/dspack.json");
  std::filesystem::remove(out + "/dspack.crc");
  std::mt19937_64 rng(0);
  int walk_errors = 0;
  for (int m = 0; m < 500; m++) {
    size_t off = rng() % good.size();
    char val = static_cast<char>(rng() % 256);
    if (val == good[off]) val = static_cast<char>(~val);
    INFO("offset " << off << " value " << static_cast<int>(static_cast<unsigned char>(val)));
    std::string bad = good;
    bad[off] = val;
    test::WriteFile(file, bad);
    walk_errors += LmdbReadAll(out).find("LMDB is damaged") != std::string::npos;
  }
  CHECK(walk_errors > 0);
}

TEST_CASE("lmdb: a flipped bit in a meta page is an error, never an empty dataset", "[formats]") {
  test::TempDir dir;
  std::string out = WriteLmdb(dir / "db", LmdbSamples(6));
  const std::string file = out + "/data.mdb";
  const std::string good = test::ReadFile(file);
  for (size_t off : {144, 148, 4136, 4240, 4244}) {  // txnids, meta 1's page size
    for (int bit : {0, 7}) {
      INFO("offset " << off << " bit " << bit);
      std::string bad = good;
      bad[off] ^= static_cast<char>(1 << bit);
      test::WriteFile(file, bad);
      auto r = OpenLayout(out);
      if (r.ok()) {
        CHECK((*r)->size() == 6);  // liblmdb picked the same snapshot
      } else {
        CHECK(r.status().code() == Code::kCorruption);
        CHECK(r.status().message().find("data.mdb") != std::string::npos);
      }
    }
  }
}
