// POSIX tar headers, as much as WebDataset shards need (docs/formats/wds.md, "Tar"):
// building ustar headers (with a pax 'x' header first when the name is over 100 bytes, has bytes
// >= 0x80, or the size is >= 8 GiB), and reading ustar, pax ('x' per-file, 'g' global, ignored),
// GNU long names ('L') and base-256 sizes. Offsets are absolute file offsets.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "src/status.h"

namespace ds::tar {

inline constexpr uint64_t kBlock = 512;

// Everything that precedes a regular member's data: [pax header + pax data +] ustar header.
std::string MemberHeaders(std::string_view name, uint64_t size);
// Bytes MemberHeaders(name, size) will produce.
uint64_t MemberHeadersSize(std::string_view name, uint64_t size);

struct Member {
  uint64_t header_offset = 0;  // first header block (pax or GNU long-name header included)
  uint64_t data_offset = 0;
  uint64_t size = 0;
  char type = '0';
  std::string name;
  uint64_t next() const;  // offset of the following header
};

// Reads n bytes at offset (short read at EOF: return fewer bytes).
using ReadFn = std::function<Result<std::string>(uint64_t offset, uint64_t n)>;

// Parses the member starting at `offset`. Returns false (and no error) at the end-of-archive
// zero block. `what` names the file in errors (kCorruption, with the offset).
Result<bool> ReadMember(const ReadFn& read, uint64_t offset, uint64_t file_size,
                        std::string_view what, Member* m);

}  // namespace ds::tar
