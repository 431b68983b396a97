// The --max-bytes prefix (the rank assignment is formats/shard_assignment.h's, tested there) and the rank/world
// environment fallbacks of dssync (docs/dssync.md, "Which shards a rank stages").
#include "sync/plan.h"

#include <catch2/catch.hpp>
#include <map>
#include <string>

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
