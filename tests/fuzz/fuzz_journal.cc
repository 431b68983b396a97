// dssync's resume journal (sync/journal.h): every line parsed, torn or not, and paths decoded.
#include <cstdint>
#include <string>

#include "fuzz_util.h"
#include "sync/journal.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text = ds::fuzz::Bytes(data, size);
  size_t bad = 0;
  for (const auto& e : ds::sync::ParseJournal(text, &bad)) {
    std::string again = ds::sync::FormatEntry(e);
    if (ds::sync::ParseJournal(again).size() != 1) __builtin_trap();  // a round trip must hold
  }
  std::string decoded;
  (void)ds::sync::DecodePath(text, &decoded);
  return 0;
}
