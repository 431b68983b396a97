// The interop layouts through LayoutWriter/LayoutReader: round trips with awkward samples, shard
// rolling, cancel/abandon, and each bad-input case of issue 4 (truncation, CRC, split records,
// non-adjacent tar members, LMDB map growth). External readers are tested in tests/e2e/formats.sh.
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>

#include "formats/interop/recordio.h"
#include "formats/interop/tar.h"
#include "formats/interop/tfrecord.h"
#include "formats/layout.h"
#include "formats/layout_options.h"
#include "src/endian.h"
#include "test_util.h"

using namespace ds;

namespace {

const Format kAll[] = {Format::kNative, Format::kWds, Format::kTfrecord, Format::kRecordio,
                       Format::kLmdb};

std::string MagicBytes() {
  std::string m;
  PutLE32(&m, recordio::kMagic);
  return m;
}

// Samples that stress each layout: long and non-ASCII keys (pax), an empty field, the RecordIO
// magic inside a payload at aligned and unaligned offsets, several fields, a label field last.
std::vector<Sample> Awkward(int n) {
  std::vector<Sample> v;
  for (int i = 0; i < n; i++) {
    Sample s;
    s.key = "dir/" + std::string(i % 7 == 0 ? 120 : 3, 'k') + "_" + std::to_string(i);
    if (i % 5 == 1) s.key += "_\xc3\xa9t\xc3\xa9";
    std::string data(1000 + 97 * i, static_cast<char>('a' + i % 26));
    if (i % 3 == 0) {
      data.replace(0, 4, MagicBytes());  // aligned, at the record's payload start
      data.replace(8, 4, MagicBytes());
      data.replace(data.size() - 4, 4, MagicBytes());
      data.replace(2 + 16, 4, MagicBytes());  // unaligned (IRHeader is 24 bytes)
    }
    s.fields.push_back({"jpg", data});
    if (i % 4 == 0) s.fields.push_back({"json", "{\"i\":" + std::to_string(i) + "}"});
    if (i % 6 == 0) s.fields.push_back({"txt", ""});
    s.fields.push_back({"cls", std::to_string(i % 3)});
    v.push_back(std::move(s));
  }
  return v;
}

// The options of layout f from these knobs (each layout's defaults otherwise).
WriterOptions Opts(Format f, LayoutKnobs k = {}, CommonWriterOptions common = {}) {
  auto o = MakeWriterOptions(f, k, common);
  REQUIRE(o.ok());
  return *o;
}

std::string Write(const std::string& out, Format f, const std::vector<Sample>& samples,
                  uint64_t shard_size = 16384, const std::string& lmdb_layout = "field") {
  LayoutKnobs k;
  if (f != Format::kLmdb) k.shard_size = shard_size;
  if (f == Format::kLmdb) k.lmdb_layout = *ParseLmdbLayout(lmdb_layout);
  k.dali_index = f == Format::kWds;
  auto w = CreateLayoutWriter(out, Opts(f, k));
  REQUIRE(w.ok());
  (*w)->SetClasses({"a", "b", "c"}, "cls");
  for (const auto& s : samples) REQUIRE((*w)->Add(s).ok());
  LayoutSummary sum;
  REQUIRE((*w)->Finish(&sum).ok());
  CHECK(sum.samples == samples.size());
  return out;
}

std::string FirstShard(const std::string& dir, const std::string& ext) {
  return dir + "/shard-000000" + ext;
}

std::string LastShard(const std::string& dir, const std::string& ext) {
  std::string last;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    std::string n = e.path().filename();
    if (n.size() > ext.size() && n.compare(n.size() - ext.size(), ext.size(), ext) == 0 &&
        n > last) {
      last = n;
    }
  }
  return dir + "/" + last;
}

bool NoTmpLeft(const std::string& dir) {
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().extension() == ".tmp") return false;
  }
  return true;
}

// Verify through the reader; returns the problems (an open failure is one problem).
std::vector<std::string> Problems(const std::string& path) {
  auto r = OpenLayout(path);
  if (!r.ok()) return {r.status().message()};
  LayoutVerifyReport rep;
  REQUIRE((*r)->Verify(&rep, nullptr).ok());
  return rep.problems;
}

}  // namespace

TEST_CASE("every layout round-trips awkward samples byte for byte", "[formats]") {
  test::TempDir dir;
  auto samples = Awkward(40);
  for (Format f : kAll) {
    for (std::string layout : {"field", "sample"}) {
      if (layout == "sample" && f != Format::kLmdb) continue;
      INFO(FormatName(f) << " " << layout);
      std::string out =
          Write(dir / (std::string(FormatName(f)) + layout), f, samples, 16384, layout);
      CHECK(NoTmpLeft(out));
      auto r = OpenLayout(out);
      REQUIRE(r.ok());
      CHECK((*r)->format() == f);
      REQUIRE((*r)->size() == samples.size());
      CHECK((*r)->label_field() == "cls");
      CHECK((*r)->classes() == std::vector<std::string>{"a", "b", "c"});
      for (size_t i = 0; i < samples.size(); i++) {
        auto got = (*r)->Get(i);
        REQUIRE(got.ok());
        CHECK(got->key == samples[i].key);
        // LMDB's field layout returns fields in key (name) order; compare as sets.
        auto want = samples[i].fields, have = got->fields;
        auto by_name = [](const Field& a, const Field& b) { return a.name < b.name; };
        std::sort(want.begin(), want.end(), by_name);
        std::sort(have.begin(), have.end(), by_name);
        REQUIRE(have.size() == want.size());
        for (size_t k = 0; k < want.size(); k++) {
          CHECK(have[k].name == want[k].name);
          CHECK(have[k].data == want[k].data);
        }
      }
      auto found = (*r)->Find(samples[17].key);
      REQUIRE(found.ok());
      CHECK(*found == std::optional<uint64_t>(17));
      CHECK(Problems(out).empty());
    }
  }
}

TEST_CASE("shard layouts roll at --shard-size and never split a sample", "[formats]") {
  test::TempDir dir;
  auto samples = Awkward(40);
  for (Format f : {Format::kWds, Format::kTfrecord, Format::kRecordio}) {
    std::string out = Write(dir / std::string(FormatName(f)), f, samples, 16384);
    auto r = OpenLayout(out);
    REQUIRE(r.ok());
    auto info = (*r)->Info();
    CHECK(info["shards"].get<int>() > 5);
    for (const auto& e : std::filesystem::directory_iterator(out)) {
      std::string n = e.path().filename();
      if (n.rfind("shard-", 0) != 0 || e.path().extension() == ".idx" ||
          e.path().extension() == ".lst") {
        continue;
      }
      // Every shard but one holding a single big sample stays under the target.
      CHECK(std::filesystem::file_size(e.path()) < 16384 + 8000);
    }
  }
}

TEST_CASE("a cancelled sample leaves no trace; Abandon removes everything", "[formats]") {
  test::TempDir dir;
  for (Format f : kAll) {
    INFO(FormatName(f));
    std::string out = dir / std::string(FormatName(f));
    auto w = CreateLayoutWriter(out, Opts(f));
    REQUIRE(w.ok());
    REQUIRE((*w)->Add({"a", {{"bin", "AAAA"}}}).ok());
    std::vector<FieldInfo> fields = {{"bin", 10}};
    REQUIRE((*w)->BeginSample("b", fields).ok());
    REQUIRE((*w)->AppendData("BBBBB").ok());
    (*w)->CancelSample();
    REQUIRE((*w)->Add({"c", {{"bin", "CCCC"}}}).ok());
    REQUIRE((*w)->Finish(nullptr).ok());
    auto r = OpenLayout(out);
    REQUIRE(r.ok());
    REQUIRE((*r)->size() == 2);
    CHECK((*r)->Get(1)->key == "c");
    CHECK((*r)->Get(1)->fields[0].data == "CCCC");

    std::string out2 = dir / (std::string(FormatName(f)) + "-abandoned");
    {
      auto w2 = CreateLayoutWriter(out2, Opts(f));
      REQUIRE(w2.ok());
      REQUIRE((*w2)->Add({"a", {{"bin", std::string(100000, 'x')}}}).ok());
    }  // destroyed without Finish
    CHECK(!std::filesystem::exists(out2));
  }
}

TEST_CASE("a truncated last record is reported with file and offset in every layout", "[formats]") {
  test::TempDir dir;
  auto samples = Awkward(12);
  struct Case {
    Format f;
    std::string ext;
  };
  for (const Case& c : {Case{Format::kWds, ".tar"}, Case{Format::kTfrecord, ".tfrecord"},
                        Case{Format::kRecordio, ".rec"}, Case{Format::kLmdb, ".mdb"}}) {
    INFO(FormatName(c.f));
    std::string out = Write(dir / std::string(FormatName(c.f)), c.f, samples, 1 << 30);
    std::string shard = c.f == Format::kLmdb ? out + "/data.mdb" : LastShard(out, c.ext);
    // With dspack.json: the size check names the file.
    uint64_t size = std::filesystem::file_size(shard);
    std::filesystem::resize_file(shard, size - (c.f == Format::kLmdb ? 4096 : 1500));
    auto p = Problems(out);
    REQUIRE(p.size() >= 1);
    CHECK_THAT(p[0], Catch::Contains(shard));
    CHECK_THAT(p[0], Catch::Contains("truncated"));
    if (c.f == Format::kLmdb) continue;
    // Foreign data (no dspack.json, no index): the scan names the offset of the cut record.
    std::filesystem::remove(out + "/dspack.json");
    std::filesystem::remove(out + "/dspack.crc");
    for (const auto& e : std::filesystem::directory_iterator(out)) {
      if (e.path().extension() == ".idx") std::filesystem::remove(e.path());
    }
    p = Problems(out);
    REQUIRE(p.size() == 1);
    CHECK_THAT(p[0], Catch::Contains(shard));
    CHECK_THAT(p[0], Catch::Contains("offset"));
    CHECK_THAT(p[0], Catch::Contains("truncated"));
  }
}

TEST_CASE("tfrecord: a flipped data byte fails the data CRC, naming the record", "[formats]") {
  test::TempDir dir;
  std::string out = Write(dir / "tf", Format::kTfrecord, Awkward(5), 1 << 30);
  std::string shard = FirstShard(out, ".tfrecord");
  std::string bytes = test::ReadFile(shard);
  bytes[bytes.size() - 40] ^= 0x01;  // inside the last record's data
  test::WriteFile(shard, bytes);
  std::filesystem::remove(out + "/dspack.json");  // the whole-file hash would also catch it
  std::filesystem::remove(out + "/dspack.crc");
  auto p = Problems(out);
  REQUIRE(p.size() == 1);
  CHECK_THAT(p[0], Catch::Contains("data CRC mismatch"));
  CHECK_THAT(p[0], Catch::Contains(shard + " offset"));
  CHECK_THAT(p[0], Catch::Contains("record 4"));
}

TEST_CASE("recordio: magic inside data splits as dmlc does; a missing end part is reported",
          "[formats]") {
  std::string m = MagicBytes();
  // magic at 0 and 8 (aligned: split), at 14 (unaligned: stays); 23 bytes (padded to 24).
  std::string rec = m + "abcd" + m + "xy" + m + "12345";
  std::string framed = recordio::Frame(rec);
  // parts: [cflag1 len0] [cflag2 len4 "abcd"] [cflag3 len11 "xy"+magic+"12345" + 1 pad]
  REQUIRE(framed.size() == 8 + 12 + 8 + 12);
  CHECK(LoadLE32(&framed[4]) == (1u << 29 | 0));
  CHECK(LoadLE32(&framed[12]) == (2u << 29 | 4));
  CHECK(LoadLE32(&framed[24]) == (3u << 29 | 11));
  CHECK(framed.substr(28, 11) == "xy" + m + "12345");
  CHECK(framed.back() == '\0');
  CHECK(recordio::Frame("abcd") == m + std::string("\x04\0\0\0", 4) + "abcd");

  test::TempDir dir;
  // A split record whose end part is missing: start part, then a whole new record.
  std::string header(24, '\0');
  std::string bad =
      recordio::Frame(header + "ok") + framed.substr(0, 20) + recordio::Frame(header + "next");
  test::WriteFile(dir / "bad.rec", bad);
  auto r = OpenLayout(dir / "bad.rec");
  REQUIRE(!r.ok());
  CHECK(r.status().code() == Code::kCorruption);
  CHECK_THAT(r.status().message(), Catch::Contains("missing its end part"));
  CHECK_THAT(r.status().message(), Catch::Contains("bad.rec offset"));
  // ... and one cut off by the end of the file.
  test::WriteFile(dir / "cut.rec", recordio::Frame(header + "ok") + framed.substr(0, 20));
  r = OpenLayout(dir / "cut.rec");
  REQUIRE(!r.ok());
  CHECK_THAT(r.status().message(), Catch::Contains("missing its end part"));
}

TEST_CASE("wds: a sample whose members are not adjacent is refused, naming the key", "[formats]") {
  test::TempDir dir;
  std::string tar;
  for (auto [name, data] : std::vector<std::pair<std::string, std::string>>{
           {"a.jpg", "AAA"}, {"b.jpg", "BBB"}, {"a.cls", "1"}}) {
    tar += tar::MemberHeaders(name, data.size()) + data;
    tar.append(AlignUp(data.size(), 512) - data.size(), '\0');
  }
  tar.append(1024, '\0');
  test::WriteFile(dir / "split.tar", tar);
  auto r = OpenLayout(dir / "split.tar");
  REQUIRE(!r.ok());
  CHECK(r.status().code() == Code::kCorruption);
  CHECK_THAT(r.status().message(), Catch::Contains("key 'a' reappears at offset 2048"));
  CHECK(ExitCode(r.status()) == 1);
}

TEST_CASE("tfrecord: foreign Examples with int64 and float lists decode to text fields",
          "[formats]") {
  // Example{features{feature{"label": int64_list{7, 255} (packed)}}}, built byte by byte: no
  // __key__, so the key is the record number.
  std::string label = std::string("\x0a\x05label", 7) + "\x12\x07" + "\x1a\x05" +
                      std::string("\x0a\x03\x07\xff\x01", 5);
  std::string feat = "\x0a" + std::string(1, static_cast<char>(label.size())) + label;
  std::string ex = "\x0a" + std::string(1, static_cast<char>(feat.size())) + feat;
  auto s = tfrecord::DecodeExample(ex, "0000000009");
  REQUIRE(s.ok());
  CHECK(s->key == "0000000009");
  REQUIRE(s->fields.size() == 1);
  CHECK(s->fields[0].name == "label");
  CHECK(s->fields[0].data == "7 255");
  // Our own encoding decodes back.
  Sample mine{"k", {{"jpg", "abc"}, {"cls", "3"}}};
  auto back = tfrecord::DecodeExample(tfrecord::EncodeExample(mine).value(), "x");
  REQUIRE(back.ok());
  CHECK(back->key == "k");
  CHECK(back->fields.size() == 2);
  CHECK(back->fields[1].data == "3");
  // Garbage is an error, not a crash.
  CHECK(!tfrecord::DecodeExample("\x0a\x7f", "x").ok());
}

TEST_CASE("lmdb: the map grows on MDB_MAP_FULL and every sample reads back", "[formats]") {
  test::TempDir dir;
  std::vector<Sample> big;
  for (int i = 0; i < 100; i++) {
    big.push_back({"s" + std::to_string(i), {{"bin", std::string(1 << 20, 'a' + i % 26)}}});
  }
  LayoutKnobs k;
  k.lmdb_map_size = 8 << 20;
  auto w = CreateLayoutWriter(dir / "db", Opts(Format::kLmdb, k));
  REQUIRE(w.ok());
  for (const auto& s : big) REQUIRE((*w)->Add(s).ok());  // 100 MiB: the 8 MiB map grows 4 times
  REQUIRE((*w)->Finish(nullptr).ok());
  auto r = OpenLayout(dir / "db");
  REQUIRE(r.ok());
  REQUIRE((*r)->size() == 100);
  CHECK((*r)->Get(99)->fields[0].data == big[99].fields[0].data);
}

TEST_CASE("layouts refuse samples they cannot hold, as bad input", "[formats]") {
  test::TempDir dir;
  auto rec = CreateLayoutWriter(dir / "rec", Opts(Format::kRecordio));
  REQUIRE(rec.ok());
  (*rec)->SetClasses({"a"}, "cls");
  Status s = (*rec)->Add({"k", {{"jpg", "x"}, {"cls", "not-a-number"}}});
  CHECK(s.code() == Code::kBadInput);
  CHECK_THAT(s.message(), Catch::Contains("label 'not-a-number' is not a number"));
  REQUIRE((*rec)->Add({"k2", {{"jpg", "x"}, {"cls", "1 2"}}}).ok());  // multi-label
  REQUIRE((*rec)->Finish(nullptr).ok());
  auto r = OpenLayout(dir / "rec");
  REQUIRE(r.ok());
  REQUIRE((*r)->size() == 1);
  CHECK((*r)->Get(0)->fields[1].data == "1 2");

  auto wds = CreateLayoutWriter(dir / "wds", Opts(Format::kWds));
  REQUIRE(wds.ok());
  CHECK((*wds)->Add({"__meta__", {{"", "x"}}}).code() == Code::kBadInput);

  auto bad = CreateLayoutWriter(dir / "tf",
                                Opts(Format::kTfrecord, {}, {.existing = ExistingOutput::kResume}));
  CHECK(bad.status().code() == Code::kInvalidArgument);
}

TEST_CASE("lmdb: a reader opened before fork() works in the child (it reopens itself)",
          "[formats]") {
  test::TempDir dir;
  auto samples = Awkward(6);
  std::string out = Write(dir / "db", Format::kLmdb, samples);
  auto r = OpenLayout(out);
  REQUIRE(r.ok());
  REQUIRE((*r)->Get(0).ok());  // used in the parent first, as a DataLoader's dataset is
  pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    auto s = (*r)->Get(5);
    bool ok = s.ok() && s->key == samples[5].key && s->fields.size() == samples[5].fields.size();
    ::_exit(ok ? 0 : 1);
  }
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  CHECK((*r)->Get(5).ok());  // and the parent's handle still works
}

TEST_CASE("flipping any byte of a wds, tfrecord or recordio shard never crashes a reader",
          "[formats][exhaustive]") {
  test::TempDir dir;
  std::vector<Sample> samples;
  for (int i = 0; i < 4; i++) {
    std::string data = std::string(300 + i * 50, static_cast<char>('a' + i)) + MagicBytes();
    samples.push_back({"k" + std::to_string(i), {{"bin", data}, {"cls", std::to_string(i)}}});
  }
  struct Case {
    Format f;
    std::string ext;
  };
  for (const Case& c : {Case{Format::kWds, ".tar"}, Case{Format::kTfrecord, ".tfrecord"},
                        Case{Format::kRecordio, ".rec"}}) {
    INFO(FormatName(c.f));
    std::string out = Write(dir / std::string(FormatName(c.f)), c.f, samples, 1 << 30);
    std::filesystem::remove(out + "/dspack.json");
    std::filesystem::remove(out + "/dspack.crc");  // exercise the parsers, not the file hash
    std::string shard = FirstShard(out, c.ext);
    const std::string good = test::ReadFile(shard);
    size_t flagged = 0, flipped = 0;
    for (size_t pos = 0; pos < good.size(); pos++) {
      if (!test::ExhaustiveVisits(pos, good.size())) continue;
      flipped++;
      std::string bad = good;
      bad[pos] ^= static_cast<char>(0x5a);
      test::WriteFile(shard, bad);
      auto r = OpenLayout(out);
      if (!r.ok()) {
        flagged++;
        continue;
      }
      LayoutVerifyReport rep;
      REQUIRE((*r)->Verify(&rep, nullptr).ok());
      if (!rep.ok()) flagged++;
    }
    test::WriteFile(shard, good);
    // TFRecord's CRCs cover every byte. Payload bytes of wds (tar has no data checksum) and
    // RecordIO (no checksum at all) change silently; their framing cannot.
    if (c.f == Format::kTfrecord) {
      CHECK(flagged == flipped);
    } else {
      CHECK(flagged > 0);
    }
  }
}
