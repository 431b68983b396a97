// formats/sources/zip.h: zips made by Python's zipfile and Info-ZIP read back byte for byte and
// grouped as the tree they came from; WriteZip's output read by zipfile, `unzip -t` and our reader;
// each bad input named (file, member, offset); and every flipped byte or cut of a small zip read
// without a crash (ASan build: no overreads).
#include "formats/sources/zip.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <filesystem>
#include <map>
#include <random>
#include <set>

#include "src/endian.h"
#include "test_util.h"

using namespace ds;
using test::ReadFile;
using test::TempDir;
using test::WriteFile;

namespace {

// Runs a shell command; returns its exit status (stdout in *out when given).
int Sh(const std::string& cmd, std::string* out = nullptr) {
  FILE* p = ::popen((cmd + " 2>&1").c_str(), "r");
  REQUIRE(p);
  std::string text;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) text.append(buf, n);
  int rc = ::pclose(p);
  if (out) *out = text;
  INFO(cmd << "\n" << text);
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

std::string Q(const std::string& s) { return "'" + s + "'"; }

std::string Random(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::string s(n, '\0');
  for (auto& c : s) c = static_cast<char>(rng());
  return s;
}

// A tree with several files per sample, nested directories, an empty file, a non-ASCII name, a
// compressible and an incompressible file.
std::map<std::string, std::string> MakeTree(const std::string& root) {
  std::map<std::string, std::string> files = {
      {"n01/a_1.jpg", Random(3000, 1)},
      {"n01/a_1.cls", "0"},
      {"n01/a_2.jpg", std::string(20000, 'x')},
      {"n01/a_2.json", "{}"},
      {"n01/sub/c.jpg", Random(100, 2)},
      {"n02/b.txt", ""},
      {"n02/b.tar.gz", "z"},
      {"top.json", "{\"k\": 1}"},
      {"README", "no extension"},
      {"\xc3\xa9t\xc3\xa9/\xc3\xbc.txt", "utf-8 name"},
  };
  for (const auto& [name, data] : files) WriteFile(root + "/" + name, data);
  return files;
}

// The grouping must be the tree's: same samples, keys and member names in the same order.
void CheckSameAsTree(const ZipArchive& z, const std::string& root) {
  auto tree = FileTree::Scan(*LocalStorage(), root, {},
                             [](std::string_view, const Status& s) { return s; });
  REQUIRE(tree.ok());
  REQUIRE(z.sample_count() == tree->sample_count());
  REQUIRE(z.member_count() == tree->file_count());
  for (uint64_t s = 0; s < z.sample_count(); s++) {
    CHECK(z.key(s) == tree->key(s));
    CHECK(z.files_of(s) == tree->files_of(s));
  }
  std::string data;
  for (uint64_t m = 0; m < z.member_count(); m++) {
    CHECK(z.member_name(m) == tree->path(m));
    auto n = z.ReadMember(m, &data);
    REQUIRE(n.ok());
    CHECK(data == ReadFile(root + "/" + std::string(tree->path(m))));
    CHECK(*n == data.size());
  }
}

// Writes a zip of root with zipfile, members in reverse order plus directory entries.
void PythonZip(const std::string& root, const std::string& zip, const std::string& method,
               bool force_zip64) {
  std::string py = R"(
import os, sys, zipfile
root, out, method, z64 = sys.argv[1], sys.argv[2], getattr(zipfile, sys.argv[3]), sys.argv[4] == "1"
names = []
for d, dirs, files in os.walk(root):
    for f in files: names.append(os.path.relpath(os.path.join(d, f), root))
with zipfile.ZipFile(out, "w", method) as z:
    z.writestr(zipfile.ZipInfo("n01/"), b"")
    for n in sorted(names, reverse=True):
        with open(os.path.join(root, n), "rb") as f, z.open(n, "w", force_zip64=z64) as w:
            w.write(f.read())
)";
  WriteFile(zip + ".py", py);
  REQUIRE(Sh("/usr/bin/python3 " + Q(zip + ".py") + " " + Q(root) + " " + Q(zip) + " " + method +
             (force_zip64 ? " 1" : " 0")) == 0);
}

// Offset of the n-th occurrence of a 4-byte signature.
size_t ZipFind(const std::string& bytes, uint32_t sig, int nth = 0) {
  std::string s;
  PutLE32(&s, sig);
  size_t pos = bytes.find(s);
  while (nth-- > 0 && pos != std::string::npos) pos = bytes.find(s, pos + 1);
  REQUIRE(pos != std::string::npos);
  return pos;
}

// Opens path and reads every member; the first error, or OK.
Status ZipReadAll(const std::string& path) {
  auto z = ZipArchive::Open(path);
  if (!z.ok()) return z.status();
  for (uint64_t s = 0; s < z->sample_count(); s++) {
    auto r = z->ReadSample(s);
    if (!r.ok()) return r.status();
  }
  return Status::Ok();
}

bool Has(const Status& s, const std::string& text) {
  INFO(s.ToString());
  return s.message().find(text) != std::string::npos;
}

}  // namespace

TEST_CASE("zip: zipfile's stored, deflated and Zip64 zips read back grouped as the tree",
          "[formats]") {
  TempDir t;
  MakeTree(t / "tree");
  for (auto [method, z64] : {std::pair{"ZIP_STORED", false},
                             {"ZIP_DEFLATED", false},
                             {"ZIP_DEFLATED", true},
                             {"ZIP_STORED", true}}) {
    SECTION(std::string(method) + (z64 ? " force_zip64" : "")) {
      PythonZip(t / "tree", t / "py.zip", method, z64);
      auto z = ZipArchive::Open(t / "py.zip");
      REQUIRE(z.ok());
      CHECK(z->member_count() == 10);  // the directory entry is skipped
      CHECK(z->sample_count() == 7);   // n02/b.txt and n02/b.tar.gz: one sample
      CheckSameAsTree(*z, t / "tree");
      auto r = z->ReadSample(0);
      REQUIRE(r.ok());
      CHECK(*r > 0);
    }
  }
}

TEST_CASE("zip: Info-ZIP zips (zip -r, -fz Zip64 extras, a stub prepended) read back",
          "[formats]") {
  TempDir t;
  MakeTree(t / "tree");
  // Info-ZIP on Linux stores a UTF-8 name's bytes without flag bit 11; such a name reads as
  // CP437, as convert and zipfile read it (the test below): the tree check leaves it out.
  std::filesystem::remove_all(t / "tree/\xc3\xa9t\xc3\xa9");
  REQUIRE(Sh("cd " + Q(t / "tree") + " && zip -qr ../a.zip . && zip -qr -fz ../fz.zip .") == 0);
  for (const char* name : {"a.zip", "fz.zip"}) {
    auto z = ZipArchive::Open(t / name);
    REQUIRE(z.ok());
    CheckSameAsTree(*z, t / "tree");
  }
  // A self-extractor stub before the zip: offsets shift, as zipfile allows.
  WriteFile(t / "sfx.zip", std::string(777, '#') + ReadFile(t / "a.zip"));
  auto z = ZipArchive::Open(t / "sfx.zip");
  REQUIRE(z.ok());
  CheckSameAsTree(*z, t / "tree");
}

TEST_CASE("zip: WriteZip output passes zipfile's testzip, unzip -t and our reader", "[formats]") {
  TempDir t;
  auto files = MakeTree(t / "tree");
  for (bool deflate : {true, false}) {
    SECTION(deflate ? "deflate" : "store") {
      ZipWriteOptions o;
      o.deflate = deflate;
      ZipWriteSummary sum;
      REQUIRE(WriteZip(t / "tree", t / "w.zip", o, &sum).ok());
      CHECK(sum.members == files.size());
      CHECK_FALSE(sum.zip64);
      CHECK_FALSE(std::filesystem::exists(t / "w.zip.tmp"));
      std::string py = R"(
import sys, os, zipfile
z = zipfile.ZipFile(sys.argv[1]); root = sys.argv[2]
assert z.testzip() is None
for i in z.infolist():
    assert z.read(i) == open(os.path.join(root, i.filename), "rb").read(), i.filename
print(len(z.infolist()), sorted({i.compress_type for i in z.infolist()}))
)";
      WriteFile(t / "check.py", py);
      std::string out;
      REQUIRE(
          Sh("/usr/bin/python3 " + Q(t / "check.py") + " " + Q(t / "w.zip") + " " + Q(t / "tree"),
             &out) == 0);
      // Empty and incompressible files are stored even with deflate, as zip -r does.
      CHECK(out == (deflate ? "10 [0, 8]\n" : "10 [0]\n"));
      REQUIRE(Sh("unzip -tq " + Q(t / "w.zip")) == 0);
      auto z = ZipArchive::Open(t / "w.zip");
      REQUIRE(z.ok());
      CheckSameAsTree(*z, t / "tree");
      // Deterministic: the same tree gives the same bytes.
      REQUIRE(WriteZip(t / "tree", t / "w2.zip", o).ok());
      CHECK(ReadFile(t / "w.zip") == ReadFile(t / "w2.zip"));
    }
  }
}

TEST_CASE("zip: the worked example of docs/formats/zip.md", "[formats]") {
  TempDir t;
  WriteFile(t / "t/a.txt", "hello");
  REQUIRE(WriteZip(t / "t", t / "t.zip").ok());
  std::string z = ReadFile(t / "t.zip");
  REQUIRE(z.size() == 113);
  CHECK(LoadLE32(&z[14]) == 0x3610a686);
  CHECK(z.substr(35, 5) == "hello");
  CHECK(LoadLE32(&z[z.size() - 10]) == 51);  // central directory size
  CHECK(LoadLE32(&z[z.size() - 6]) == 40);   // and offset
  CHECK(LooksLikeZip(t / "t.zip"));
  std::rename((t / "t.zip").c_str(), (t / "t.bin").c_str());
  CHECK(LooksLikeZip(t / "t.bin"));  // by its magic
  CHECK_FALSE(LooksLikeZip(t / "t/a.txt"));
}

TEST_CASE("zip: more than 65535 members: Zip64 end records both ways", "[formats][.slow]") {
  TempDir t;
  const int n = 70000;
  for (int i = 0; i < n; i++) {
    WriteFile(t / ("tree/d" + std::to_string(i % 7) + "/f" + std::to_string(i) + ".txt"),
              std::to_string(i));
  }
  ZipWriteSummary sum;
  REQUIRE(WriteZip(t / "tree", t / "w.zip", {}, &sum).ok());
  CHECK(sum.zip64);
  CHECK(sum.members == n);
  REQUIRE(Sh("/usr/bin/python3 -c 'import zipfile,sys; z=zipfile.ZipFile(sys.argv[1]); "
             "assert z.testzip() is None and len(z.namelist()) == 70000' " +
             Q(t / "w.zip")) == 0);
  REQUIRE(Sh("unzip -tq " + Q(t / "w.zip")) == 0);
  PythonZip(t / "tree", t / "py.zip", "ZIP_DEFLATED", false);
  for (const char* name : {"w.zip", "py.zip"}) {
    auto z = ZipArchive::Open(t / name);
    REQUIRE(z.ok());
    CHECK(z->member_count() == n);
    CheckSameAsTree(*z, t / "tree");
  }
}

TEST_CASE("zip: bad inputs are one line naming the file, the member and the offset", "[formats]") {
  TempDir t;
  WriteFile(t / "tree/a.txt", std::string(5000, 'a') + "tail");  // deflated
  WriteFile(t / "tree/b.bin", Random(3000, 7));                  // stored
  REQUIRE(WriteZip(t / "tree", t / "ok.zip").ok());
  const std::string good = ReadFile(t / "ok.zip");
  REQUIRE(ZipReadAll(t / "ok.zip").ok());
  const size_t cd = ZipFind(good, zip::kCentralSig), cd_b = ZipFind(good, zip::kCentralSig, 1);
  const size_t local_b = LoadLE32(&good[cd_b + 42]);
  auto patched = [&](const std::string& name, auto&& edit) {
    std::string bytes = good;
    edit(bytes);
    WriteFile(t / name, bytes);
    return t / name;
  };

  SECTION("garbage, empty, or cut before the end record: no end record") {
    for (auto [name, bytes] : {std::pair{"garbage.zip", Random(5000, 3)},
                               {"empty.zip", std::string()},
                               {"cut.zip", good.substr(0, good.size() - 10)},
                               {"cut-in-data.zip", good.substr(0, 2000)}}) {
      WriteFile(t / name, bytes);
      Status s = ZipReadAll(t / name);
      CHECK(s.code() == Code::kBadInput);
      CHECK(Has(s, t / name));
      CHECK(Has(s, "no end of central directory record"));
      CHECK(Has(s, "truncated"));
    }
  }
  SECTION("bytes missing in the middle: the central directory runs past its end record") {
    std::string bytes = good;
    bytes.erase(100, 50);
    WriteFile(t / "hole.zip", bytes);
    Status s = ZipReadAll(t / "hole.zip");
    CHECK(s.code() == Code::kBadInput);
    CHECK(Has(s, "central directory"));
    CHECK(Has(s, "at offset " + std::to_string(LoadLE32(&good[good.size() - 6]))));
  }
  SECTION("member data past the end of the file") {
    auto p = patched("long.zip", [&](std::string& b) { StoreLE32(&b[cd + 20], 1 << 30); });
    Status s = ZipReadAll(p);
    CHECK(s.code() == Code::kBadInput);
    CHECK(Has(s, p + ": member a.txt at offset 0"));
    CHECK(Has(s, "run past the end of the file"));
  }
  SECTION("a flipped byte in deflated data: CRC or inflate error") {
    auto p = patched("flip.zip", [&](std::string& b) { b[30 + 5 + 3] ^= 0x55; });
    Status s = ZipReadAll(p);
    CHECK(s.code() == Code::kCorruption);
    CHECK(Has(s, p + ": member a.txt at offset 0"));
  }
  SECTION("a flipped byte in stored data: CRC mismatch") {
    auto p = patched("crc.zip", [&](std::string& b) { b[local_b + 30 + 5 + 100] ^= 1; });
    Status s = ZipReadAll(p);
    CHECK(s.code() == Code::kCorruption);
    CHECK(Has(s, p + ": member b.bin at offset " + std::to_string(local_b)));
    CHECK(Has(s, "CRC-32 mismatch"));
  }
  SECTION("encrypted members: refused at open (central flag) or read (local flag)") {
    REQUIRE(Sh("cd " + Q(t / "tree") + " && zip -q -P pw ../enc.zip a.txt") == 0);
    Status s = ZipReadAll(t / "enc.zip");
    CHECK(s.code() == Code::kBadInput);
    CHECK(Has(s, t / "enc.zip: encrypted member a.txt (central directory entry at offset"));
    CHECK(Has(s, "decrypt first"));
    auto p = patched("enc-local.zip", [&](std::string& b) { b[local_b + 6] |= 1; });
    s = ZipReadAll(p);
    CHECK(s.code() == Code::kBadInput);
    CHECK(Has(s, "encrypted member b.bin (local header at offset " + std::to_string(local_b)));
  }
  SECTION("unsupported compression method") {
    auto p = patched("bz.zip", [&](std::string& b) {
      StoreLE16(&b[8], 12);
      StoreLE16(&b[cd + 10], 12);
    });
    Status s = ZipReadAll(p);
    CHECK(s.code() == Code::kBadInput);
    CHECK(Has(s, p + ": member a.txt (central directory entry at offset " + std::to_string(cd)));
    CHECK(Has(s, "unsupported compression method 12 (bzip2)"));
  }
  SECTION("no local header where the central directory points") {
    auto p = patched("off.zip", [&](std::string& b) { StoreLE32(&b[cd_b + 42], local_b + 1); });
    Status s = ZipReadAll(p);
    CHECK(s.code() == Code::kBadInput);
    CHECK(Has(s, p + ": member b.bin at offset " + std::to_string(local_b + 1)));
    CHECK(Has(s, "no local file header signature"));
  }
  SECTION("multi-disk archive") {
    auto p = patched("disk.zip", [&](std::string& b) { StoreLE16(&b[b.size() - 22 + 4], 1); });
    Status s = ZipReadAll(p);
    CHECK(s.code() == Code::kBadInput);
    CHECK(Has(s, "multi-disk"));
    CHECK(Has(s, "at offset " + std::to_string(good.size() - 22)));
  }
  SECTION("an empty zip holds no samples") {
    std::string eocd;
    PutLE32(&eocd, zip::kEocdSig);
    eocd.resize(22, '\0');
    WriteFile(t / "none.zip", eocd);
    auto z = ZipArchive::Open(t / "none.zip");
    REQUIRE(z.ok());
    CHECK(z->sample_count() == 0);
  }
}

TEST_CASE("zip: every flipped byte and every cut of a small zip is read without a crash",
          "[formats][exhaustive]") {
  TempDir t;
  WriteFile(t / "tree/n1/a.jpg", std::string(300, 'a'));
  WriteFile(t / "tree/n1/a.cls", "1");
  WriteFile(t / "tree/b.bin", Random(200, 9));
  REQUIRE(Sh("cd " + Q(t / "tree") + " && zip -qr -fz ../fz.zip .") == 0);
  REQUIRE(WriteZip(t / "tree", t / "w.zip").ok());
  for (const char* name : {"w.zip", "fz.zip"}) {
    const std::string good = ReadFile(t / name);
    REQUIRE(ZipReadAll(t / name).ok());
    int errors = 0, flipped = 0;
    for (size_t i = 0; i < good.size(); i++) {
      if (!test::ExhaustiveVisits(i, good.size())) continue;
      flipped++;
      for (uint8_t x : {0x01, 0x80, 0xff}) {
        std::string bad = good;
        bad[i] = static_cast<char>(bad[i] ^ x);
        WriteFile(t / "bad.zip", bad);
        errors += !ZipReadAll(t / "bad.zip").ok();
      }
    }
    for (size_t n = 0; n < good.size(); n++) {
      if (!test::ExhaustiveVisits(n, good.size())) continue;
      WriteFile(t / "bad.zip", good.substr(0, n));
      CHECK_FALSE(ZipReadAll(t / "bad.zip").ok());
    }
    CHECK(errors > flipped);  // most flips are caught (3 masks per offset)
  }
}

TEST_CASE("zip: a member over 4 GiB at an offset over 4 GiB: Zip64 sizes and offsets",
          "[formats][.slow]") {
  TempDir t;
  const uint64_t big = (4ull << 30) + 100;
  WriteFile(t / "tree/a/big.bin", "");
  REQUIRE(::truncate((t / "tree/a/big.bin").c_str(), static_cast<off_t>(big)) == 0);  // sparse
  WriteFile(t / "tree/b/small.txt", "after the big one");
  for (bool deflate : {false, true}) {
    ZipWriteOptions o;
    o.deflate = deflate;
    o.level = 1;
    ZipWriteSummary sum;
    REQUIRE(WriteZip(t / "tree", t / "big.zip", o, &sum).ok());
    CHECK(sum.zip64 == !deflate);  // deflated zeros leave the directory below 4 GiB
    // zipfile reads the directory and the small member; it checks every CRC (testzip) of the
    // stored archive only: on the deflated one that took 14 of this test's 115 s, and unzip -t
    // below checks both.
    const std::string testzip = deflate ? "" : "assert z.testzip() is None; ";
    REQUIRE(Sh("/usr/bin/python3 -c 'import zipfile,sys; z=zipfile.ZipFile(sys.argv[1]); " +
               testzip +
               "assert z.read(\"b/small.txt\") == b\"after the big one\"; "
               "assert z.getinfo(\"a/big.bin\").file_size == " +
               std::to_string(big) + "' " + Q(t / "big.zip")) == 0);
    REQUIRE(Sh("unzip -tq " + Q(t / "big.zip")) == 0);
    auto z = ZipArchive::Open(t / "big.zip");
    REQUIRE(z.ok());
    REQUIRE(z->member_count() == 2);
    CHECK(z->member_size(0) == big);
    std::string data;
    REQUIRE(z->ReadMember(1, &data).ok());
    CHECK(data == "after the big one");
    auto n = z->ReadMember(0, &data);
    REQUIRE(n.ok());
    CHECK(*n == big);
    data = std::string();
  }
}

TEST_CASE("zip: a name without the UTF-8 flag reads as CP437, as zipfile reads it", "[formats]") {
  TempDir t;
  WriteFile(t / "tree/\xc3\xa9t\xc3\xa9/\xc3\xbc.txt", "x");
  WriteFile(t / "tree/plain.txt", "y");
  REQUIRE(Sh("cd " + Q(t / "tree") + " && zip -qr ../a.zip .") == 0);
  // A zip whose CP437 name is not valid UTF-8 (0x91 0x86: "\u00e6", "\u00e5"), flag unset.
  WriteFile(t / "cp.py",
            "import zipfile,sys\n"
            "with zipfile.ZipFile(sys.argv[1], 'w') as z: z.writestr('c1/f_XoX.jpg', b'data')\n"
            "raw = open(sys.argv[1], 'rb').read().replace(b'f_XoX', b'f_\\x91o\\x86')\n"
            "open(sys.argv[1], 'wb').write(raw)\n");
  REQUIRE(Sh("/usr/bin/python3 " + Q(t / "cp.py") + " " + Q(t / "cp.zip")) == 0);
  for (const char* name : {"a.zip", "cp.zip"}) {
    std::string listed;
    REQUIRE(Sh("/usr/bin/python3 -c \"import zipfile,sys; [print(i.filename) for i in "
               "zipfile.ZipFile(sys.argv[1]).infolist() if not i.is_dir()]\" " +
                   Q(t / name),
               &listed) == 0);
    auto z = ZipArchive::Open(t / name);
    REQUIRE(z.ok());
    std::multiset<std::string> theirs, ours;  // our member order is the tree's, not stored
    for (size_t a = 0, b; (b = listed.find('\n', a)) != std::string::npos; a = b + 1) {
      theirs.insert(listed.substr(a, b - a));
    }
    for (uint64_t m = 0; m < z->member_count(); m++) ours.insert(std::string(z->member_name(m)));
    CHECK(ours == theirs);
    std::string data;
    for (uint64_t m = 0; m < z->member_count(); m++) REQUIRE(z->ReadMember(m, &data).ok());
  }
}
