// One shard of an interop layout read through dspack's reader: the first byte picks the layout
// (wds tar, TFRecord, RecordIO), the rest is the shard file. Every sample is read and the shard
// verified; errors are expected, crashes and sanitizer reports are the findings.
#include <cstdint>
#include <string>

#include "formats/layout.h"
#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  static const char* kNames[] = {"shard.tar", "shard.tfrecord", "shard.rec"};
  std::string path =
      ds::fuzz::WriteScratch(kNames[data[0] % 3], ds::fuzz::Bytes(data + 1, size - 1));
  auto r = ds::OpenLayout(path);
  if (r.ok()) {
    for (uint64_t i = 0; i < (*r)->size() && i < 4096; i++) (void)(*r)->Get(i);
    ds::LayoutVerifyReport rep;
    (void)(*r)->Verify(&rep, nullptr);
  }
  return 0;
}
