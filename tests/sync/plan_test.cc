// The --max-bytes prefix (the rank assignment is formats/shard_assignment.h's, tested there) and
// the rank/world environment fallbacks of dssync (docs/dssync.md, "Which shards a rank stages").
#include "sync/plan.h"

#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "src/storage_decorators.h"
#include "test_util.h"

using ds::sync::PrefixSubset;
using ds::sync::ResolveRank;

TEST_CASE("the --max-bytes subset is the longest prefix that fits", "[sync]") {
  std::vector<uint64_t> sizes{100, 200, 50, 10};
  CHECK(PrefixSubset(sizes, 0).shards == 0);
  CHECK(PrefixSubset(sizes, 299).shards == 1);
  auto s = PrefixSubset(sizes, 300);
  CHECK(s.shards == 2);
  CHECK(s.bytes == 300);
  CHECK(PrefixSubset(sizes, 355).shards == 3);  // a prefix: the 10-byte shard after it waits
  CHECK(PrefixSubset(sizes, 1000).bytes == 360);
}

TEST_CASE("rank and world come from flags, then SLURM, Open MPI, torchrun", "[sync]") {
  std::map<std::string, std::string> env;
  auto get = [&](const char* n) -> const char* {
    auto it = env.find(n);
    return it == env.end() ? nullptr : it->second.c_str();
  };
  auto r = ResolveRank(std::nullopt, std::nullopt, get);
  REQUIRE(r.ok());
  CHECK((r->rank == 0 && r->world == 1));
  env["RANK"] = "3";
  env["WORLD_SIZE"] = "8";
  r = ResolveRank(std::nullopt, std::nullopt, get);
  CHECK((r->rank == 3 && r->world == 8 && r->source == "RANK/WORLD_SIZE"));
  env["OMPI_COMM_WORLD_RANK"] = "1";
  env["OMPI_COMM_WORLD_SIZE"] = "2";
  CHECK(ResolveRank(std::nullopt, std::nullopt, get)->rank == 1);
  env["SLURM_PROCID"] = "5";
  env["SLURM_NTASKS"] = "6";
  CHECK(ResolveRank(std::nullopt, std::nullopt, get)->rank == 5);
  CHECK(ResolveRank(2u, 4u, get)->rank == 2);  // flags win
  CHECK(ResolveRank(4u, 4u, get).status().code() == ds::Code::kInvalidArgument);
  env["SLURM_PROCID"] = "x";
  CHECK(!ResolveRank(std::nullopt, std::nullopt, get).ok());
}

TEST_CASE("metadata names are always staged", "[sync]") {
  CHECK(ds::sync::IsMetadataName("manifest.json"));
  CHECK(ds::sync::IsMetadataName("sub/train.idx"));
  CHECK(ds::sync::IsMetadataName("x.lst"));
  CHECK(ds::sync::IsMetadataName("classes.txt"));
  CHECK(!ds::sync::IsMetadataName("shard-000000.dsr"));
  CHECK(!ds::sync::IsMetadataName("a/idx"));
}

// The planner walks SRC through the storage interface (src/storage.h): one List per directory
// and no stat per file, and a directory that fails to list is reported while the rest is planned.
TEST_CASE("BuildPlan: one List per directory, no stat per file", "[sync]") {
  ds::test::TempDir t;
  for (int i = 0; i < 150; ++i) ds::test::WriteFile(t / fmt::format("a/b/f{:03}.bin", i), "x");
  ds::test::WriteFile(t / "top.bin", "hello");
  auto counting = std::make_shared<ds::CountingStorage>(ds::LocalStorage());
  ds::sync::PlanOptions options;
  options.storage = counting;
  auto plan = ds::sync::BuildPlan(t.path(), options);
  REQUIRE(plan.ok());
  REQUIRE(plan->shards.size() == 151);
  CHECK(plan->shards.back().rel == "top.bin");
  CHECK(plan->shards.back().size == 5);
  CHECK(plan->dirs == std::vector<std::string>{"a", "a/b"});
  ds::StorageOps ops = counting->ops();
  CHECK(ops[ds::StorageOp::kList] == 3);
  CHECK(ops[ds::StorageOp::kStat] == 1);  // SRC itself
  CHECK(ops.total() == 4);
}

TEST_CASE("BuildPlan: a directory that cannot be listed is an entry error", "[sync]") {
  ds::test::TempDir t;
  ds::test::WriteFile(t / "a/one.bin", "1");
  ds::test::WriteFile(t / "b/two.bin", "2");
  auto fault = std::make_shared<ds::FaultStorage>(ds::LocalStorage());
  fault->FailOp(ds::StorageOp::kList, 2);  // the root is the first listing; "a" the second
  ds::sync::PlanOptions options;
  options.storage = fault;
  options.threads = 1;
  auto plan = ds::sync::BuildPlan(t.path(), options);
  REQUIRE(plan.ok());
  REQUIRE(plan->errors.size() == 1);
  CHECK(plan->errors[0].code() == ds::Code::kBadInput);
  CHECK(plan->errors[0].message() == t.path() + "/a: list: Input/output error (injected list #2)");
  REQUIRE(plan->shards.size() == 1);
  CHECK(plan->shards[0].rel == "b/two.bin");

  auto root_fails = std::make_shared<ds::FaultStorage>(ds::LocalStorage());
  root_fails->FailOp(ds::StorageOp::kList, 1);
  options.storage = root_fails;
  CHECK(ds::sync::BuildPlan(t.path(), options).status().code() == ds::Code::kBadInput);
}
