// An LMDB data.mdb (docs/formats/lmdb.md) read through dspack's reader: the bounds-checked walk
// (formats/interop/lmdb_check.h) and then liblmdb. Without dspack.json, so every byte reaches
// both. liblmdb is not instrumented: a fault inside it shows as a crash, not a sanitizer report.
#include <cstdint>
#include <string>

#include "formats/layout.h"
#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ds::fuzz::WriteScratch("data.mdb", ds::fuzz::Bytes(data, size));
  auto r = ds::OpenLayout(ds::fuzz::ScratchDir());
  if (r.ok()) {
    for (uint64_t i = 0; i < (*r)->size() && i < 4096; i++) (void)(*r)->Get(i);
  }
  return 0;
}
