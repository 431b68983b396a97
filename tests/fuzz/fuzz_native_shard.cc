// A native shard (docs/formats/native.md): header, records, trailing index. The shard is opened
// (header and index checked), then every record's head and whole record are read.
#include <cstdint>
#include <string>

#include "formats/native/native_shard.h"
#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string path = ds::fuzz::WriteScratch("shard-000000.dsr", ds::fuzz::Bytes(data, size));
  auto r = ds::native::ShardReader::Open(path, "shard-000000.dsr");
  if (r.ok()) {
    for (uint64_t i = 0; i < r->record_count() && i < 4096; i++) {
      (void)r->ReadHead(i);
      (void)r->Read(i);
    }
  }
  return 0;
}
