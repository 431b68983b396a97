// The resume journal's line format: round trip, torn and corrupt lines ignored, path encoding
// of arbitrary bytes (docs/dssync.md, "Journal and resume").
#include "sync/journal.h"

#include <catch2/catch.hpp>
#include <string>

using ds::sync::JournalEntry;

TEST_CASE("journal entries round-trip, any path bytes included", "[sync]") {
  std::string odd("a b/%x\n\xff\x01z", 11);
  std::vector<JournalEntry> in{{'C', 1000, 1700000000123456789, 0, 64, 0xdeadbeefcafef00dull, "x"},
                               {'F', 5, -3, 0, 5, 1, odd}};
  std::string text;
  for (const auto& e : in) text += ds::sync::FormatEntry(e);
  size_t bad = 9;
  CHECK(ds::sync::ParseJournal(text, &bad) == in);
  CHECK(bad == 0);
  std::string decoded;
  REQUIRE(ds::sync::DecodePath(ds::sync::EncodePath(odd), &decoded));
  CHECK(decoded == odd);
  CHECK(ds::sync::EncodePath("a b", false) == "a b");
  CHECK(!ds::sync::DecodePath("a%4", &decoded));
  CHECK(!ds::sync::DecodePath("a%zz", &decoded));
}

TEST_CASE("a torn or corrupted journal line is ignored, the rest kept", "[sync]") {
  JournalEntry a{'C', 10, 20, 0, 4, 7, "f"};
  JournalEntry b{'C', 10, 20, 4, 4, 8, "f"};
  std::string la = ds::sync::FormatEntry(a), lb = ds::sync::FormatEntry(b);
  size_t bad = 0;
  // Torn: the last line lacks its newline and part of its text.
  auto got = ds::sync::ParseJournal(la + lb.substr(0, lb.size() / 2), &bad);
  CHECK(got == std::vector<JournalEntry>{a});
  CHECK(bad == 1);
  // A flipped digit breaks the line's CRC.
  std::string flipped = lb;
  flipped[2] = flipped[2] == '1' ? '2' : '1';
  got = ds::sync::ParseJournal(flipped + la, &bad);
  CHECK(got == std::vector<JournalEntry>{a});
  CHECK(bad == 1);
  CHECK(ds::sync::ParseJournal("garbage\n\nX 1 2 3 4 5 6 00000000\n", &bad).empty());
  CHECK(bad == 3);
}
