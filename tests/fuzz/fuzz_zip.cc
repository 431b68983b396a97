// dspack's own zip reader (formats/sources/zip.h): the central directory and every member.
#include <cstdint>
#include <string>

#include "formats/sources/zip.h"
#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string path = ds::fuzz::WriteScratch("in.zip", ds::fuzz::Bytes(data, size));
  auto z = ds::ZipArchive::Open(path);
  if (z.ok()) {
    std::string out;
    for (uint64_t m = 0; m < z->member_count() && m < 4096; m++) {
      if (z->member_size(m) <= (16u << 20)) (void)z->ReadMember(m, &out);  // libFuzzer's rss cap
    }
  }
  return 0;
}
