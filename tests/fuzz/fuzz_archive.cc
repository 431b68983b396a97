// The libarchive source path (formats/sources/archive_source.h): tar and its compressed forms,
// cpio, 7z... as `dspack convert ARCHIVE` reads them: listing, then every sample loaded.
// libarchive is not instrumented: its own faults show as crashes.
#include <cstdint>
#include <string>

#include "formats/sources/archive_source.h"
#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string path = ds::fuzz::WriteScratch("in.archive", ds::fuzz::Bytes(data, size));
  ds::ArchiveOptions options;
  options.spool_dir = ds::fuzz::ScratchDir();
  auto skip = [](std::string_view, const ds::Status&) { return ds::Status::Ok(); };
  auto s = ds::ArchiveSource::Open(ds::LocalStorage(), path, options, skip);
  if (s.ok()) {
    for (uint64_t i = 0; i < (*s)->tree().sample_count() && i < 4096; i++) (void)(*s)->Load(i);
  }
  return 0;
}
