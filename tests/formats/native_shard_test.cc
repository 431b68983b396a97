#include "formats/native/native_shard.h"

#include <catch2/catch.hpp>

#include "formats/native/native_format.h"
#include "src/checksum.h"
#include "src/storage.h"
#include "test_util.h"

using namespace ds;
using namespace ds::native;

namespace {
Sample MakeSample(std::string key, std::vector<std::pair<std::string, std::string>> fields) {
  Sample s{std::move(key), {}};
  for (auto& [n, d] : fields) s.fields.push_back({n, d});
  return s;
}
}  // namespace

TEST_CASE("record head encodes and decodes", "[formats]") {
  std::vector<FieldInfo> fields = {{"JPEG", 1000}, {"cls", 3}, {"", 0}};
  REQUIRE(CheckRecordShape("n01/x_1", fields).ok());
  std::string head = EncodeRecordHead("n01/x_1", fields);
  CHECK(head.size() == kRecordFixedSize + 7 + (1 + 4 + 8) + (1 + 3 + 8) + (1 + 0 + 8));
  auto h = DecodeRecordHead(reinterpret_cast<const uint8_t*>(head.data()), head.size(), "t");
  REQUIRE(h.ok());
  CHECK(h->key == "n01/x_1");
  REQUIRE(h->fields.size() == 3);
  CHECK(h->fields[0].name == "JPEG");
  CHECK(h->fields[0].size == 1000);
  CHECK(h->record_len == RecordLength("n01/x_1", fields));
  CHECK(h->payload_len() == 1003);
}

TEST_CASE("record shape limits are enforced", "[formats]") {
  CHECK_FALSE(CheckRecordShape("", std::vector<FieldInfo>{{"a", 1}}).ok());
  CHECK_FALSE(CheckRecordShape("k", std::vector<FieldInfo>{}).ok());
  CHECK_FALSE(CheckRecordShape("k", std::vector<FieldInfo>{{"a", 1}, {"a", 2}}).ok());
  CHECK_FALSE(CheckRecordShape("k", std::vector<FieldInfo>{{std::string(256, 'n'), 1}}).ok());
  CHECK(CheckRecordShape(std::string(65535, 'k'), std::vector<FieldInfo>{{"a", 1}}).ok());
  CHECK_FALSE(CheckRecordShape(std::string(65536, 'k'), std::vector<FieldInfo>{{"a", 1}}).ok());
}

TEST_CASE("shard writer and reader round-trip with alignment", "[formats]") {
  for (uint32_t align : {1u, 8u, 4096u}) {
    test::TempDir dir;
    std::string path = dir / "s.dsr";
    auto w = ShardWriter::Create(*LocalStorage(), path, ShardHeader{kFormatVersion, align, 3, 100});
    REQUIRE(w.ok());
    std::vector<Sample> samples = {
        MakeSample("a", {{"txt", "hello"}}),
        MakeSample("b", {{"bin", std::string(10000, 'z')}, {"cls", "7"}}),
        MakeSample("c", {{"", ""}})};
    for (const auto& s : samples) REQUIRE((*w)->AddRecord(s).ok());
    ShardSummary sum;
    REQUIRE((*w)->Finish(&sum).ok());
    CHECK(sum.records == 3);
    CHECK(sum.xxh3 == Xxh3_64(test::ReadFile(path)));
    CHECK(sum.size == test::ReadFile(path).size());

    auto r = ShardReader::Open(path, "s.dsr");
    REQUIRE(r.ok());
    CHECK(r->header().shard_number == 3);
    CHECK(r->header().first_sample == 100);
    REQUIRE(r->record_count() == 3);
    for (uint64_t i = 0; i < 3; i++) {
      CHECK(r->index()[i].offset % align == 0);
      auto s = r->Read(i);
      REQUIRE(s.ok());
      CHECK(s->key == samples[i].key);
      REQUIRE(s->fields.size() == samples[i].fields.size());
      for (size_t f = 0; f < s->fields.size(); f++) {
        CHECK(s->fields[f].name == samples[i].fields[f].name);
        CHECK(s->fields[f].data == samples[i].fields[f].data);
      }
    }
  }
}

TEST_CASE("a cancelled record leaves the shard as if it was never begun", "[formats]") {
  test::TempDir dir;
  auto write = [&](const std::string& name, bool with_cancel) {
    auto w =
        ShardWriter::Create(*LocalStorage(), dir / name, ShardHeader{kFormatVersion, 64, 0, 0});
    REQUIRE(w.ok());
    REQUIRE((*w)->AddRecord(MakeSample("a", {{"x", "1"}})).ok());
    if (with_cancel) {
      std::vector<FieldInfo> f = {{"big", 5000}};
      REQUIRE((*w)->BeginRecord("cancelled", f).ok());
      REQUIRE((*w)->AppendData(std::string(3000, 'q')).ok());
      (*w)->CancelRecord();
    }
    REQUIRE((*w)->AddRecord(MakeSample("b", {{"y", "22"}})).ok());
    ShardSummary sum;
    REQUIRE((*w)->Finish(&sum).ok());
    return sum.xxh3;
  };
  uint64_t h1 = write("plain.dsr", false);
  uint64_t h2 = write("cancel.dsr", true);
  CHECK(test::ReadFile(dir / "plain.dsr") == test::ReadFile(dir / "cancel.dsr"));
  CHECK(h1 == h2);
}

TEST_CASE("a writer that declares more than it appends fails, abandon removes the file",
          "[formats]") {
  test::TempDir dir;
  auto w = ShardWriter::Create(*LocalStorage(), dir / "s.dsr", ShardHeader{});
  REQUIRE(w.ok());
  std::vector<FieldInfo> f = {{"x", 10}};
  REQUIRE((*w)->BeginRecord("k", f).ok());
  REQUIRE((*w)->AppendData("12345").ok());
  CHECK_FALSE((*w)->EndRecord().ok());
  CHECK_FALSE((*w)->status().ok());
  (*w)->Abandon();
  CHECK(access((dir / "s.dsr").c_str(), F_OK) != 0);
}
