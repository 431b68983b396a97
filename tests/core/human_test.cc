#include "src/human.h"

#include <catch2/catch.hpp>

using namespace ds;

TEST_CASE("ParseSize follows fio's letters and SI/IEC words", "[core]") {
  CHECK(*ParseSize("4096") == 4096);
  CHECK(*ParseSize("4k") == 4096);
  CHECK(*ParseSize("4K") == 4096);
  CHECK(*ParseSize("1MiB") == 1048576);
  CHECK(*ParseSize("1m") == 1048576);
  CHECK(*ParseSize("256MiB") == 256ull << 20);
  CHECK(*ParseSize("1GB") == 1000000000);
  CHECK(*ParseSize("1.5GB") == 1500000000);
  CHECK(*ParseSize("500MB/s") == 500000000);
  CHECK(*ParseSize("500MBps") == 500000000);  // rate spellings (issue 16 #5)
  CHECK(*ParseSize("1GiBps") == 1ull << 30);
  CHECK(*ParseSize("4Gbit/s") == 500000000);  // bits are SI, 8 a byte
  CHECK(*ParseSize("4Gbps") == 500000000);    // lower-case b before ps: bits
  CHECK(*ParseSize("100Mbit") == 12500000);
  CHECK(*ParseSize("2TiB") == 2ull << 40);
  CHECK(*ParseSize("0") == 0);
}

TEST_CASE("ParseSize rejects bad text with a message naming it", "[core]") {
  for (const char* bad :
       {"", "k", "12q", "1.3", "abc", "99999999999P", "-1", "1..2k", "4Qbit/s", "5ps", "3xps"}) {
    auto r = ParseSize(bad);
    INFO(bad);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == Code::kInvalidArgument);
    CHECK(r.status().message().find(std::string("'") + bad + "'") != std::string::npos);
  }
}

TEST_CASE("ParseDuration takes fio-style time units", "[core]") {
  CHECK(*ParseDuration("1ms") == Approx(0.001));
  CHECK(*ParseDuration("0.2ms") == Approx(0.0002));
  CHECK(*ParseDuration("50us") == Approx(50e-6));
  CHECK(*ParseDuration("3\u00b5s") == Approx(3e-6));
  CHECK(*ParseDuration("2") == 2);
  CHECK(*ParseDuration("2s") == 2);
  CHECK(*ParseDuration("1m") == 60);
  auto r = ParseDuration("5 parsecs");
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().message().find("invalid duration '5 parsecs'") != std::string::npos);
  CHECK_FALSE(ParseDuration("ms").ok());
  CHECK_FALSE(ParseDuration("1hr").ok());
}

TEST_CASE("formatting helpers", "[core]") {
  CHECK(FormatBytes(512) == "512 B");
  CHECK(FormatBytes(1536) == "1.5 KiB");
  CHECK(FormatBytes(3ull << 30) == "3.0 GiB");
  CHECK(FormatRate(523.4e6) == "523.4 MB/s");
  CHECK(FormatDuration(0.25) == "250 ms");
  CHECK(FormatDuration(0.0025) == "2.5 ms");
  CHECK(FormatDuration(85e-6) == "85 us");
  CHECK(FormatDuration(185) == "3m05s");
}

TEST_CASE("EscapeBytes makes any key one printable line", "[core]") {
  CHECK(EscapeBytes("plain/key_1") == "plain/key_1");
  CHECK(EscapeBytes("a\nb") == "a\\x0ab");
  CHECK(EscapeBytes("tab\there") == "tab\\x09here");
  CHECK(EscapeBytes("caf\xc3\xa9") == "caf\xc3\xa9");  // valid UTF-8 kept
  CHECK(EscapeBytes("bad\xff") == "bad\\xff");
  CHECK(EscapeBytes("back\\slash") == "back\\\\slash");
}
