// bench/meta/meta.h: phase and count parsing, the plan's refusals, and small real runs in a temp
// directory: ops per phase, the tree's layout when kept, and nothing of ours left otherwise.
#include "bench/meta/meta.h"

#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <string>
#include <vector>

#include "test_util.h"

using namespace ds;
using namespace ds::bench;

namespace {

using P = MetaPhase;

std::vector<MetaPhase> Phases(const char* text) {
  auto p = ParsePhases(text);
  REQUIRE(p.ok());
  return *p;
}

size_t MetaEntries(const std::string& dir) {
  size_t n = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::recursive_directory_iterator(dir)) n++;
  return n;
}

MetaOptions Small(const std::string& path) {
  MetaOptions o;
  o.path = path;
  o.files = 10;
  o.threads = 2;
  o.files_per_dir = 4;  // d0, d1 full, d2 with the last 2 files
  o.file_size = 100;
  return o;
}

}  // namespace

TEST_CASE("ParsePhases: any subset that includes create, returned in the fixed order", "[bench]") {
  CHECK(Phases("create,stat,read,readdir,remove") ==
        std::vector<P>{P::kCreate, P::kStat, P::kRead, P::kReaddir, P::kRemove});
  CHECK(Phases("create") == std::vector<P>{P::kCreate});
  CHECK(Phases("remove,readdir,create") == std::vector<P>{P::kCreate, P::kReaddir, P::kRemove});
  CHECK(Phases("stat,create,stat") == std::vector<P>{P::kCreate, P::kStat});
  for (P p : kAllMetaPhases) {
    auto one = Phases((std::string("create,") + MetaPhaseName(p)).c_str());
    CHECK(one.back() == p);
    CHECK(one.size() == (p == P::kCreate ? 1u : 2u));
  }
  struct Bad {
    const char* text;
    const char* says;
  };
  for (Bad b :
       {Bad{"stat,read", "include create"}, Bad{"create,bogus", "'bogus'"}, Bad{"create,", "''"},
        Bad{"", "''"}, Bad{"Create", "'Create'"}, Bad{"create stat", "'create stat'"}}) {
    INFO(b.text);
    auto p = ParsePhases(b.text);
    REQUIRE_FALSE(p.ok());
    CHECK(p.status().code() == Code::kInvalidArgument);
    CHECK_THAT(p.status().message(), Catch::Contains(b.says));
  }
}

TEST_CASE("ParseCount: digits with an optional k, m or g; anything else names the option",
          "[bench]") {
  struct Good {
    const char* text;
    uint64_t value;
  };
  for (Good g :
       {Good{"0", 0}, Good{"2000", 2000}, Good{"100k", 100000}, Good{"1m", 1000000},
        Good{"3G", 3000000000}, Good{"7K", 7000}, Good{"18446744073709551", 18446744073709551ull},
        Good{"18446744073709551k", 18446744073709551000ull}}) {
    INFO(g.text);
    auto n = ParseCount(g.text, "--files");
    REQUIRE(n.ok());
    CHECK(*n == g.value);
  }
  for (const char* bad : {"", "k", "1.5k", "-1", "12x", "12kk", "1 k", " 1", "0x10",
                          "99999999999999999999", "18446744073709552k", "20000000000g"}) {
    INFO(bad);
    auto n = ParseCount(bad, "--files-per-dir");
    REQUIRE_FALSE(n.ok());
    CHECK(n.status().code() == Code::kInvalidArgument);
    CHECK_THAT(n.status().message(), Catch::StartsWith("--files-per-dir '" + std::string(bad)));
  }
}

TEST_CASE("CheckMetaPlan refuses bad counts, a PATH that is no directory, a plan too big",
          "[bench]") {
  test::TempDir dir;
  CHECK(CheckMetaPlan(Small(dir.path())).ok());
  auto refused = [](const MetaOptions& o, Code code, const char* says) {
    INFO(says);
    Status s = CheckMetaPlan(o);
    CHECK(s.code() == code);
    CHECK_THAT(s.message(), Catch::Contains(says));
    auto run = RunMeta(o);  // RunMeta checks the same first
    REQUIRE_FALSE(run.ok());
    CHECK(run.status().code() == code);
  };
  MetaOptions o = Small(dir.path());
  o.files = 0;
  refused(o, Code::kInvalidArgument, "must be positive");
  o = Small(dir.path());
  o.threads = 0;
  refused(o, Code::kInvalidArgument, "must be positive");
  o = Small(dir.path());
  o.files_per_dir = 0;
  refused(o, Code::kInvalidArgument, "must be positive");
  o = Small(dir.path());
  o.threads = 4097;
  refused(o, Code::kInvalidArgument, "at most 4096 threads");
  o = Small(dir.path());
  o.files = (uint64_t{1} << 39) + 1;  // x 2 threads: over 2^40 files
  refused(o, Code::kInvalidArgument, "2^40 files");
  o = Small(dir / "missing");
  refused(o, Code::kNotFound, "missing: give an existing directory");
  test::WriteFile(dir / "file", "x");
  o = Small(dir / "file");
  refused(o, Code::kInvalidArgument, "not a directory");
  o = Small(dir.path());
  o.file_size = uint64_t{1} << 52;  // 4 PiB a file
  refused(o, Code::kNoSpace, "not enough free space");
  CHECK(MetaEntries(dir.path()) == 1);  // only "file": no run made anything

  // More files than free inodes, where the file system counts them and the space would do.
  struct statvfs vfs;
  REQUIRE(::statvfs(dir.path().c_str(), &vfs) == 0);
  if (vfs.f_files > 0) {
    o = Small(dir.path());
    o.threads = 1;
    o.file_size = 0;
    o.files = static_cast<uint64_t>(vfs.f_favail) + 1;
    o.files_per_dir = o.files;
    Status s = CheckMetaPlan(o);
    CHECK(s.code() == Code::kNoSpace);
    if (o.files * 64 * 4 < static_cast<uint64_t>(vfs.f_bavail) * vfs.f_frsize) {
      CHECK_THAT(s.message(), Catch::Contains("not enough free inodes"));
    }
  }
}

TEST_CASE("RunMeta: each phase does one op per file on every thread, then the tree is gone",
          "[bench]") {
  test::TempDir dir;
  MetaOptions o = Small(dir.path());
  auto r = RunMeta(o);
  REQUIRE(r.ok());
  CHECK(r->root == MetaRoot(o));
  CHECK(r->root == dir.path() + "/dsbench-meta." + std::to_string(::getpid()));
  CHECK(r->dirs_per_thread == 3);
  CHECK(MetaDirsPerThread(o) == 3);
  CHECK_FALSE(r->interrupted);
  CHECK_FALSE(r->kept);
  CHECK(r->cleanup_note.empty());
  REQUIRE(r->phases.size() == 5);
  for (size_t i = 0; i < 5; i++) {
    const MetaPhaseResult& p = r->phases[i];
    INFO(MetaPhaseName(p.phase));
    CHECK(p.phase == kAllMetaPhases[i]);
    CHECK(p.ops == 20);                                           // readdir: entries listed
    CHECK(p.lat.count() == (p.phase == P::kReaddir ? 6u : 20u));  // readdir: per directory
    CHECK_FALSE(p.interrupted);
  }
  auto j = MetaJson(o, *r);
  CHECK(j["phases"][3]["name"] == "readdir");
  CHECK(j["phases"][3]["ops"] == 20);
  CHECK(j["dirs_per_thread"] == 3);
  CHECK(MetaEntries(dir.path()) == 0);

  // Without the remove phase the cleanup removes the files; readdir still counts them all.
  o.phases = Phases("readdir,create");
  r = RunMeta(o);
  REQUIRE(r.ok());
  REQUIRE(r->phases.size() == 2);
  CHECK(r->phases[1].phase == P::kReaddir);
  CHECK(r->phases[1].ops == 20);
  CHECK(MetaEntries(dir.path()) == 0);
}

TEST_CASE("RunMeta with keep leaves its tree as documented; a second run refuses the root",
          "[bench]") {
  test::TempDir dir;
  MetaOptions o = Small(dir.path());
  o.files = 5;
  o.files_per_dir = 2;
  o.file_size = (1 << 20) + 4096;  // written and read back in more than one piece
  o.phases = Phases("create,stat,read");
  o.keep = true;
  auto r = RunMeta(o);
  REQUIRE(r.ok());
  CHECK(r->kept);
  REQUIRE(r->phases.size() == 3);
  for (const auto& p : r->phases) CHECK(p.ops == 10);
  size_t files = 0;
  for (const auto& e : std::filesystem::recursive_directory_iterator(r->root)) {
    if (!e.is_regular_file()) continue;
    files++;
    CHECK(e.file_size() == o.file_size);
  }
  CHECK(files == 10);
  for (const char* f : {"/t0/d0/f0", "/t0/d0/f1", "/t0/d1/f3", "/t1/d2/f4"}) {
    CHECK(std::filesystem::exists(r->root + f));
  }
  CHECK_FALSE(std::filesystem::exists(r->root + "/t0/d0/f2"));  // f2 is in d1
  auto again = RunMeta(o);
  REQUIRE_FALSE(again.ok());
  CHECK(again.status().code() == Code::kAlreadyExists);
  CHECK(std::filesystem::exists(r->root + "/t1/d2/f4"));  // the refused run touched nothing
}
