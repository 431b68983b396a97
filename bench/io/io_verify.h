// fio's verify=crc32c|md5 for `dsbench io` write jobs (docs/dsbench.md, "Verify"). Every block
// a job writes carries a header and pseudo-random content; when the job's IO is done (after
// end_fsync), every block it wrote is read back and checked, as fio's do_verify=1 does. A
// block's bytes depend only on the seed and its file offset, so clones sharing a file, and a
// random write repeated on one block, leave the same bytes.
//
// Block layout (little-endian; the block is `bs` bytes, at least kVerifyMinBlock):
//   0  u32  magic kVerifyMagic ("dsbv")
//   4  u32  header length (kVerifyHeader)
//   8  u64  the block's offset in the file
//   16 u32  the block's length
//   20 u32  the checksum: 1 crc32c, 2 md5
//   24 16 B the checksum (crc32c: 4 bytes, then zeros) of bytes [0, 24) and [40, length)
//   40 ...  pseudo-random payload: Rng(seed, offset)
//
// Thread-safety: pure functions; a verify pass belongs to one job thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "src/status.h"

namespace ds::bench {

enum class VerifyKind { kNone, kCrc32c, kMd5 };
Result<VerifyKind> ParseVerify(const std::string& text);  // crc32c, crc32c-intel, md5, 0
const char* VerifyName(VerifyKind k);

inline constexpr uint32_t kVerifyMagic = 0x76627364;  // "dsbv"
inline constexpr size_t kVerifyHeader = 40;
inline constexpr size_t kVerifyMinBlock = 512;

// Fills the block at file offset `offset` (len bytes at buf) with its verifiable content.
void FillVerifiable(VerifyKind kind, uint64_t seed, uint64_t offset, char* buf, size_t len);
// The block at `offset` as read back: kCorruption naming file, offset and what differs.
Status CheckVerifiable(VerifyKind kind, uint64_t offset, const char* buf, size_t len,
                       std::string_view file);

// Which blocks (of `bs` bytes from the region's start) a job wrote.
class WrittenBlocks {
 public:
  WrittenBlocks() = default;
  WrittenBlocks(uint64_t region, uint64_t bs) : bs_(bs), marks_(region / bs, false) {}
  void Mark(uint64_t region_offset) { marks_[region_offset / bs_] = true; }
  uint64_t bs() const { return bs_; }
  const std::vector<bool>& marks() const { return marks_; }

 private:
  uint64_t bs_ = 0;
  std::vector<bool> marks_;
};

struct VerifyResult {
  uint64_t blocks = 0;  // read back and checked
  uint64_t bad = 0;
};
// Reads back every marked block of fd (region starts at file offset `base`) through `buf`
// (REQUIRES: at least bs bytes, aligned for O_DIRECT when fd is), checking each. Read errors
// end the pass; bad blocks are counted and the first is the returned Status (kCorruption).
Status VerifyWritten(VerifyKind kind, int fd, uint64_t base, const WrittenBlocks& written,
                     char* buf, std::string_view file, VerifyResult* result);

}  // namespace ds::bench
