// Every read verified in every interop layout dspack writes (issue 15; sample_crc.h): a payload
// byte changed in a wds, tfrecord, recordio or lmdb dataset fails Get and ReadBatch with the
// file, offset or LMDB key and the sample key; verify checks every file dspack.json lists
// (sidecars, classes.txt, dspack.crc); a dataset whose dspack.json was deleted is damaged, never
// foreign data.
#include "formats/interop/sample_crc.h"

#include <catch2/catch.hpp>
#include <filesystem>

#include "formats/interop/layout_meta.h"
#include "formats/layout.h"
#include "formats/layout_options.h"
#include "test_util.h"

using namespace ds;
namespace fs = std::filesystem;

namespace {

std::vector<Sample> CrcSamples() {
  std::vector<Sample> v;
  for (int i = 0; i < 8; i++) {
    std::string data = "MARK" + std::to_string(i) + "-" + std::string(2000 + i, 'x');
    v.push_back({"k/" + std::to_string(i), {{"bin", data}, {"cls", std::to_string(i % 2)}}});
  }
  return v;
}

std::string CrcWrite(const std::string& out, Format f, LmdbLayout lmdb = LmdbLayout::kField) {
  LayoutKnobs k;
  if (f == Format::kLmdb) k.lmdb_layout = lmdb;
  auto o = MakeWriterOptions(f, k, {});
  REQUIRE(o.ok());
  auto w = CreateLayoutWriter(out, *o);
  REQUIRE(w.ok());
  (*w)->SetClasses({"even", "odd"}, "cls");
  for (const auto& s : CrcSamples()) REQUIRE((*w)->Add(s).ok());
  LayoutSummary sum;
  REQUIRE((*w)->Finish(&sum).ok());
  return out;
}

// The one data file holding `needle` in dir.
std::string FileWith(const std::string& dir, const std::string& needle) {
  for (const auto& e : fs::directory_iterator(dir)) {
    std::string data = test::ReadFile(e.path());
    if (data.find(needle) != std::string::npos) return e.path();
  }
  FAIL("no file holds " << needle);
  return "";
}

std::vector<std::string> CrcProblems(const std::string& path) {
  LayoutVerifyReport rep;
  REQUIRE(VerifyLayout(path, &rep, nullptr).ok());
  return rep.problems;
}

}  // namespace

TEST_CASE("sample CRC: streamed equals whole, any field order, key and names count", "[formats]") {
  Sample s{"a/b", {{"jpg", "hello world"}, {"cls", "1"}, {"txt", ""}}};
  uint32_t whole = SampleCrc(s);
  std::vector<FieldInfo> infos;
  for (const auto& f : s.fields) infos.push_back({f.name, f.data.size()});
  SampleCrcBuilder b;
  b.Begin(s.key, infos);
  for (char c : std::string("hello world1")) b.Append(std::string_view(&c, 1));
  CHECK(b.End() == whole);
  Sample reordered{s.key, {s.fields[2], s.fields[1], s.fields[0]}};
  CHECK(SampleCrc(reordered) == whole);
  Sample renamed = s;
  renamed.key = "a/c";
  CHECK(SampleCrc(renamed) != whole);
  Sample relabelled = s;
  relabelled.fields[1].data = "2";
  CHECK(SampleCrc(relabelled) != whole);
  Sample moved = s;  // the same bytes in another field
  moved.fields[0].name = "png";
  CHECK(SampleCrc(moved) != whole);
}

TEST_CASE("a changed payload byte fails every read in every interop layout", "[formats]") {
  struct Case {
    Format f;
    LmdbLayout lmdb;
    const char* where;  // named in the error
  };
  for (const Case& c : {Case{Format::kWds, LmdbLayout::kField, "offset"},
                        Case{Format::kTfrecord, LmdbLayout::kField, "offset"},
                        Case{Format::kRecordio, LmdbLayout::kField, "offset"},
                        Case{Format::kLmdb, LmdbLayout::kField, "LMDB key 0000000003"},
                        Case{Format::kLmdb, LmdbLayout::kSample, "LMDB key 0000000003"}}) {
    INFO(FormatName(c.f));
    test::TempDir dir;
    std::string out = CrcWrite(dir / "ds", c.f, c.lmdb);
    auto r = OpenLayout(out);
    REQUIRE(r.ok());
    CHECK((*r)->Info()["reads"].get<std::string>().find("checked") == 0);
    r->reset();
    std::string file = FileWith(out, "MARK3-");
    std::string data = test::ReadFile(file);
    data[data.find("MARK3-") + 10] ^= 0x01;  // an 'x' of sample 3's payload
    test::WriteFile(file, data);
    r = OpenLayout(out);
    REQUIRE(r.ok());
    auto bad = (*r)->Get(3);
    REQUIRE_FALSE(bad.ok());
    CHECK(bad.status().code() == Code::kCorruption);
    const std::string& msg = bad.status().message();
    CHECK_THAT(msg, Catch::Contains(fs::path(file).filename().string()));
    CHECK_THAT(msg, Catch::Contains(c.where));
    if (c.f == Format::kTfrecord) {  // its own record CRC fails first, before the key decodes
      CHECK_THAT(msg, Catch::Contains("record 3: data CRC mismatch"));
    } else {
      CHECK_THAT(msg, Catch::Contains("k/3"));
      CHECK_THAT(msg, Catch::Contains("CRC32C"));
    }
    CHECK((*r)->Get(2).ok());
    std::vector<uint64_t> idx = {1, 3, 5};
    std::vector<Sample> got;
    CHECK((*r)->ReadBatch(idx, {}, &got).code() == Code::kCorruption);
  }
}

TEST_CASE("verify checks every file dspack.json lists: sidecars and classes.txt", "[formats]") {
  struct Case {
    Format f;
    const char* file;
  };
  for (const Case& c :
       {Case{Format::kTfrecord, "shard-000000.idx"}, Case{Format::kRecordio, "shard-000000.idx"},
        Case{Format::kRecordio, "shard-000000.lst"}, Case{Format::kWds, "classes.txt"},
        Case{Format::kTfrecord, "classes.txt"}, Case{Format::kRecordio, "classes.txt"},
        Case{Format::kLmdb, "classes.txt"}, Case{Format::kWds, "dspack.crc"}}) {
    for (const char* how : {"flip", "truncate", "delete"}) {
      INFO(FormatName(c.f) << " " << c.file << " " << how);
      test::TempDir dir;
      std::string out = CrcWrite(dir / "ds", c.f);
      REQUIRE(CrcProblems(out).empty());
      std::string path = out + "/" + c.file;
      REQUIRE(fs::exists(path));
      std::string data = test::ReadFile(path);
      if (std::string(how) == "flip") {
        data[data.size() / 2] ^= 0x04;
        test::WriteFile(path, data);
      } else if (std::string(how) == "truncate") {
        fs::resize_file(path, data.size() - 1);
      } else {
        fs::remove(path);
      }
      auto p = CrcProblems(out);
      REQUIRE_FALSE(p.empty());
      CHECK_THAT(p[0], Catch::Contains(c.file));
    }
  }
}

TEST_CASE("a deleted dspack.json is a damaged dataset, never foreign data", "[formats]") {
  for (Format f : {Format::kWds, Format::kTfrecord, Format::kRecordio, Format::kLmdb}) {
    INFO(FormatName(f));
    test::TempDir dir;
    std::string out = CrcWrite(dir / "ds", f);
    fs::remove(out + "/dspack.json");
    auto r = OpenLayout(out);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == Code::kCorruption);
    CHECK_THAT(r.status().message(), Catch::Contains("dspack.json: missing"));
    auto p = CrcProblems(out);
    REQUIRE(p.size() == 1);
    CHECK_THAT(p[0], Catch::Contains("dspack.json: missing"));
  }
}

TEST_CASE("a dataset without dspack.crc (another writer) reads unchecked and says so",
          "[formats]") {
  test::TempDir dir;
  std::string out = CrcWrite(dir / "ds", Format::kRecordio);
  fs::remove(out + "/dspack.json");
  fs::remove(out + "/dspack.crc");
  auto r = OpenLayout(out);
  REQUIRE(r.ok());
  CHECK((*r)->Info()["reads"].get<std::string>().find("unchecked") == 0);
  CHECK((*r)->Get(3).ok());
}
