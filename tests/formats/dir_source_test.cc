#include "formats/sources/dir_source.h"

#include <fcntl.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>

#include "test_util.h"

using namespace ds;

namespace {
Status Stop(std::string_view, const Status& s) { return s; }
}  // namespace

TEST_CASE("scan groups files by key in a deterministic order", "[formats]") {
  test::TempDir dir;
  for (const char* f :
       {"b/x.jpg", "b/x.cls", "a/z.JPEG", "a/y.JPEG", "a/y.json", "top", "a-b.c", "a/y-1.JPEG"}) {
    test::WriteFile(dir / f, f);
  }
  auto t = FileTree::Scan(*LocalStorage(), dir.path(), {}, Stop);
  REQUIRE(t.ok());
  std::vector<std::string> keys;
  for (uint64_t s = 0; s < t->sample_count(); s++) keys.emplace_back(t->key(s));
  // Files of a directory first (by key, then field), then sub-directories in byte order.
  CHECK(keys == std::vector<std::string>{"a-b", "top", "a/y", "a/y-1", "a/z", "b/x"});
  auto [b, e] = t->files_of(2);
  REQUIRE(e - b == 2);
  CHECK(t->field(b) == "JPEG");
  CHECK(t->field(b + 1) == "json");
  CHECK(t->file_count() == 8);
}

TEST_CASE("include and exclude globs", "[formats]") {
  test::TempDir dir;
  for (const char* f : {"a/1.jpg", "a/1.txt", "b/2.jpg", "b/sub/3.jpg"})
    test::WriteFile(dir / f, "x");
  DirScanOptions o;
  o.include = {"*.jpg"};
  o.exclude = {"b/sub/*"};
  auto t = FileTree::Scan(*LocalStorage(), dir.path(), o, Stop);
  REQUIRE(t.ok());
  REQUIRE(t->file_count() == 2);
  CHECK(t->path(0) == "a/1.jpg");
  CHECK(t->path(1) == "b/2.jpg");
}

TEST_CASE("broken symlinks and symlink loops are reported by path", "[formats]") {
  test::TempDir dir;
  test::WriteFile(dir / "ok/a.txt", "a");
  REQUIRE(symlink("missing-target", (dir / "ok/broken.txt").c_str()) == 0);
  auto t = FileTree::Scan(*LocalStorage(), dir.path(), {}, Stop);
  REQUIRE_FALSE(t.ok());
  CHECK(t.status().code() == Code::kBadInput);
  CHECK(t.status().message().find("ok/broken.txt: broken symlink") != std::string::npos);

  std::filesystem::remove(dir / "ok/broken.txt");
  REQUIRE(symlink("self", (dir / "ok/self").c_str()) == 0);
  t = FileTree::Scan(*LocalStorage(), dir.path(), {}, Stop);
  REQUIRE_FALSE(t.ok());
  CHECK(t.status().message().find("ok/self: symlink loop") != std::string::npos);

  std::filesystem::remove(dir / "ok/self");
  REQUIRE(symlink("..", (dir / "ok/up").c_str()) == 0);
  t = FileTree::Scan(*LocalStorage(), dir.path(), {}, Stop);
  REQUIRE_FALSE(t.ok());
  CHECK(t.status().message().find("ok/up: symlink loop") != std::string::npos);

  // Skipping instead of stopping: the rest of the tree is still listed.
  std::vector<std::string> skipped;
  t = FileTree::Scan(*LocalStorage(), dir.path(), {}, [&](std::string_view p, const Status&) {
    skipped.emplace_back(p);
    return Status::Ok();
  });
  REQUIRE(t.ok());
  CHECK(t->file_count() == 1);
  CHECK(skipped == std::vector<std::string>{"ok/up"});
}

TEST_CASE("a file vanishing after the scan is a bad input naming it", "[formats]") {
  test::TempDir dir;
  test::WriteFile(dir / "d/gone.bin", "data");
  auto t = FileTree::Scan(*LocalStorage(), dir.path(), {}, Stop);
  REQUIRE(t.ok());
  std::filesystem::remove(dir / "d/gone.bin");
  auto in = InputFile::Open(*LocalStorage(), dir.path(), std::string(t->path(0)), 1 << 20);
  REQUIRE_FALSE(in.ok());
  CHECK(in.status().message().find("d/gone.bin") != std::string::npos);
}

TEST_CASE("a file changing size while streamed is reported", "[formats]") {
  test::TempDir dir;
  test::WriteFile(dir / "grow.bin", std::string(1000, 'g'));
  test::WriteFile(dir / "shrink.bin", std::string(1000, 's'));
  auto grow = InputFile::Open(*LocalStorage(), dir.path(), "grow.bin", 10);
  auto shrink = InputFile::Open(*LocalStorage(), dir.path(), "shrink.bin", 10);
  REQUIRE(grow.ok());
  REQUIRE(shrink.ok());
  test::WriteFile(dir / "grow.bin", std::string(2000, 'g'));  // same inode, truncated + rewritten
  REQUIRE(truncate((dir / "shrink.bin").c_str(), 500) == 0);
  char buf[4096];
  auto n = grow->ReadChunk(buf, sizeof buf);
  REQUIRE(n.ok());
  auto end = grow->ReadChunk(buf, sizeof buf);
  REQUIRE_FALSE(end.ok());
  CHECK(end.status().message().find("grow.bin: file grew") != std::string::npos);
  auto s = shrink->ReadChunk(buf, sizeof buf);
  REQUIRE_FALSE(s.ok());
  CHECK(s.status().message().find("shrink.bin: file shrank") != std::string::npos);
}
