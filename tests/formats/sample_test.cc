#include "formats/sample.h"

#include <catch2/catch.hpp>

using namespace ds;

TEST_CASE("SplitPath follows WebDataset and keeps awkward names whole", "[formats]") {
  struct Case {
    const char* path;
    const char* key;
    const char* field;
  } cases[] = {
      {"n01440764/n01440764_10026.JPEG", "n01440764/n01440764_10026", "JPEG"},
      {"n01440764/n01440764_10026.cls", "n01440764/n01440764_10026", "cls"},
      {"a/b/n01_1.seg.png", "a/b/n01_1", "seg.png"},
      {"dir.with.dots/file.txt", "dir.with.dots/file", "txt"},
      {"README", "README", ""},
      {"sub/.hidden", "sub/.hidden", ""},
      {"a.", "a.", ""},
      {"a..b", "a", ".b"},
      {"x/with space.jpg", "x/with space", "jpg"},
      {"new\nline.bin", "new\nline", "bin"},
  };
  for (const auto& c : cases) {
    INFO(c.path);
    KeyField kf = SplitPath(c.path);
    CHECK(kf.key == c.key);
    CHECK(kf.field == c.field);
    CHECK(JoinKeyField(kf.key, kf.field) == c.path);
  }
}
