// sync/committer.h on real files: a file gets its final name only when its batch commits (full
// by files or bytes, or on Flush), the journal gets its 'F' entry then, and a failed rename is
// reported on that file alone.
#include "sync/committer.h"

#include <unistd.h>

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "sync/copier.h"
#include "test_util.h"

using namespace ds;
using namespace ds::sync;

namespace {

bool CommitExists(const std::string& p) { return ::access(p.c_str(), F_OK) == 0; }

std::vector<JournalEntry> FileEntries(const std::string& dst, const std::string& rel) {
  std::vector<JournalEntry> v;
  for (auto& e : ParseJournal(test::ReadFile(dst + "/" + kJournalName))) {
    if (e.path == rel && e.kind == 'F') v.push_back(e);
  }
  return v;
}

}  // namespace

TEST_CASE("Committer: final names appear only when a batch commits or on Flush", "[sync]") {
  test::TempDir dst;
  std::vector<JournalEntry> existing;
  auto j = Journal::Open(dst.path(), &existing);
  REQUIRE(j.ok());
  Committer c(dst.path(), &*j);
  std::vector<CopyResult> results(Committer::kBatchFiles + 3);
  auto add = [&](size_t i, uint64_t bytes, bool make_tmp = true) {
    std::string rel = "f" + std::to_string(i);
    if (make_tmp) test::WriteFile(dst / TmpRel(rel), rel);
    c.Add(i, dst / TmpRel(rel), dst / rel, JournalEntry{'F', 2, 3, 0, rel.size(), i, rel}, bytes,
          &results);
  };
  auto committed = [&](size_t i) {
    std::string rel = "f" + std::to_string(i);
    return CommitExists(dst / rel) && !CommitExists(dst / TmpRel(rel)) &&
           FileEntries(dst.path(), rel).size() == 1;
  };
  add(0, 10);
  add(1, 10, /*make_tmp=*/false);  // its rename fails; the batch's other files still commit
  CHECK_FALSE(CommitExists(dst / "f0"));
  CHECK(CommitExists(dst / TmpRel("f0")));
  CHECK(ParseJournal(test::ReadFile(dst / kJournalName)).empty());
  c.Flush(&results);
  CHECK(committed(0));
  CHECK(test::ReadFile(dst / "f0") == "f0");
  CHECK(results[0].status.ok());
  CHECK(results[1].status.code() == Code::kNotFound);
  CHECK_THAT(results[1].status.message(), Catch::Contains("f1: rename"));
  CHECK(FileEntries(dst.path(), "f1").empty());
  // A batch full by bytes commits on the Add that fills it.
  add(2, Committer::kBatchBytes);
  CHECK(committed(2));
  // A batch full by files: nothing until the kBatchFiles-th Add.
  for (size_t i = 3; i < Committer::kBatchFiles + 2; i++) add(i, 1);
  CHECK_FALSE(CommitExists(dst / "f3"));
  add(Committer::kBatchFiles + 2, 1);
  for (size_t i : {size_t{3}, Committer::kBatchFiles + 2}) CHECK(committed(i));
  CHECK(FileEntries(dst.path(), "f3").at(0) == JournalEntry{'F', 2, 3, 0, 2, 3, "f3"});
  c.Flush(&results);  // nothing left: no error, nothing new
  for (size_t i = 2; i < results.size(); i++) CHECK(results[i].status.ok());
  CHECK(ParseJournal(test::ReadFile(dst / kJournalName)).size() == Committer::kBatchFiles + 2);
}

TEST_CASE("Committer: a batch that cannot be made durable fails its files, tmp files removed",
          "[sync]") {
  test::TempDir dir;
  std::vector<JournalEntry> existing;
  auto j = Journal::Open(dir.path(), &existing);
  REQUIRE(j.ok());
  Committer c(dir / "gone", &*j);  // DST cannot be opened: no syncfs, so no rename either
  std::vector<CopyResult> results(2);
  for (size_t i = 0; i < 2; i++) {
    std::string rel = "f" + std::to_string(i);
    test::WriteFile(dir / TmpRel(rel), rel);
    c.Add(i, dir / TmpRel(rel), dir / rel, JournalEntry{'F', 2, 3, 0, 2, i, rel}, 1, &results);
  }
  c.Flush(&results);
  for (size_t i = 0; i < 2; i++) {
    std::string rel = "f" + std::to_string(i);
    INFO(rel);
    CHECK_FALSE(results[i].status.ok());
    CHECK_THAT(results[i].status.message(), Catch::Contains("gone: syncfs"));
    CHECK_FALSE(CommitExists(dir / rel));
    CHECK_FALSE(CommitExists(dir / TmpRel(rel)));
  }
  CHECK(ParseJournal(test::ReadFile(dir / kJournalName)).empty());
}
