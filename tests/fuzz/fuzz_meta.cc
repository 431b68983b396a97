// The JSON metadata: the first byte picks dspack.json (interop layouts, read by
// LayoutMeta::Load) or manifest.json (native, Manifest::Parse); the rest is the file.
#include <cstdint>
#include <string>

#include "formats/interop/layout_meta.h"
#include "formats/native/manifest.h"
#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  std::string_view text = ds::fuzz::Bytes(data + 1, size - 1);
  if (data[0] % 2 == 0) {
    ds::fuzz::WriteScratch("dspack.json", text);
    (void)ds::LayoutMeta::Load(ds::fuzz::ScratchDir());
  } else {
    (void)ds::native::Manifest::Parse(std::string(text), "manifest.json");
  }
  return 0;
}
