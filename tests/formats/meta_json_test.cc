// Integers in dspack.json and manifest.json (src/json_number.h): a float too large for the field
// (found by tests/fuzz/fuzz_meta.cc: UBSan float-cast-overflow in nlohmann's get<uint32_t>) or a
// negative number is a mistyped field, named, never a cast.
#include <catch2/catch.hpp>

#include "formats/interop/layout_meta.h"
#include "formats/native/manifest.h"
#include "test_util.h"

using namespace ds;

TEST_CASE("metadata integers: huge floats and negatives are mistyped fields", "[formats]") {
  test::TempDir dir;
  for (const char* version : {"1e100", "-1", "1.5", "4294967297"}) {
    INFO(version);
    test::WriteFile(dir / "dspack.json", std::string(R"({"format":"wds","version":)") + version +
                                             R"(,"samples":1,"shards":[]})");
    auto m = LayoutMeta::Load(dir.path());
    REQUIRE_FALSE(m.ok());
    CHECK(m.status().code() == Code::kCorruption);
    CHECK_THAT(m.status().message(), Catch::Contains("version must be an integer in range"));
  }
  auto n = native::Manifest::Parse(R"({"version":1,"samples":1e300})", "manifest.json");
  CHECK_FALSE(n.ok());
}
