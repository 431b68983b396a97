// Zip files as a dataset (docs/formats/zip.md): a reader that reads the way Python's `zipfile`
// does, for `dsbench replay`, and a writer that stores a directory tree as `zip -r` would.
//
// ZipArchive::Open reads the End Of Central Directory record (searched in the last 64 KiB + 22
// bytes), the Zip64 end records when present, and the whole central directory, once. Member
// names are used as stored, UTF-8 (a name without the UTF-8 flag is CP437, decoded to UTF-8 as
// convert and zipfile do; no other normalisation; directory entries, names ending in '/', are
// skipped) and grouped into samples exactly as a directory tree is (formats/sources/dir_source.h):
// the names are sorted in FileTree::Scan order (per directory: files by (key, field), then
// sub-directories by name; names stored twice stay in central-directory order) and appended to a
// FileTree. Member m is file m of that tree. Encrypted members, unsupported compression methods
// and multi-disk archives are refused at Open, so a replay fails before its first epoch.
//
// ReadMember reads like zipfile.ZipFile.read: the 30-byte local header at the member's offset
// (one pread), then name + extra + compressed data (one pread), then inflates (method 8, raw
// deflate) or copies (method 0) and checks the size and the CRC-32 against the central
// directory. Errors are one line naming the zip file, the member and the byte offset:
// kBadInput for structure (no EOCD, truncation, bad signatures, unsupported features),
// kCorruption for the data (CRC mismatch, invalid deflate stream, size mismatch). No input
// crashes the reader: every length is checked against the file before it is read or allocated.
//
// Thread-safety: a ZipArchive is immutable after Open; ReadMember/ReadSample may be called from
// many threads at once (positioned reads of one file, per-thread inflate state and buffers).
// Move-only.
//
// WriteZip stores the regular files under SRC_DIR (FileTree::Scan order, names relative to
// SRC_DIR) as ZIP_PATH: every member streamed through a bounded buffer, its local header patched
// in place once its CRC and compressed size are known (no data descriptors), Zip64 records only
// where a count, size or offset needs them. The file is written as ZIP_PATH.tmp, fsync'd and
// renamed: nothing partial is ever left under ZIP_PATH.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "formats/sources/dir_source.h"
#include "src/fd.h"
#include "src/status.h"
#include "src/storage.h"

namespace ds {

namespace zip {
// Signatures and fixed sizes: docs/formats/zip.md has the byte layout of each record.
constexpr uint32_t kLocalSig = 0x04034b50;      // "PK\3\4", local file header
constexpr uint32_t kCentralSig = 0x02014b50;    // "PK\1\2", central directory file header
constexpr uint32_t kEocdSig = 0x06054b50;       // "PK\5\6", end of central directory record
constexpr uint32_t kEocd64Sig = 0x06064b50;     // "PK\6\6", Zip64 end of central directory record
constexpr uint32_t kLocator64Sig = 0x07064b50;  // "PK\6\7", Zip64 end of central dir locator
constexpr size_t kLocalSize = 30;
constexpr size_t kCentralSize = 46;
constexpr size_t kEocdSize = 22;
constexpr size_t kEocd64Size = 56;
constexpr size_t kLocator64Size = 20;
constexpr size_t kMaxComment = 0xFFFF;  // the EOCD is in the last kEocdSize + kMaxComment bytes
constexpr uint16_t kZip64ExtraId = 0x0001;
constexpr uint16_t kMethodStore = 0;
constexpr uint16_t kMethodDeflate = 8;
constexpr uint16_t kFlagEncrypted = 1 << 0;
constexpr uint16_t kFlagDescriptor = 1 << 3;
constexpr uint16_t kFlagPatched = 1 << 5;
constexpr uint16_t kFlagStrongEncryption = 1 << 6;
constexpr uint16_t kFlagUtf8 = 1 << 11;
constexpr uint32_t kMax32 = 0xFFFFFFFF;  // a 32-bit field holding this defers to Zip64
constexpr uint16_t kMax16 = 0xFFFF;

// A member's name as UTF-8: as stored when flagged UTF-8 (kFlagUtf8) or pure ASCII, else decoded
// from CP437, as libarchive and Python's zipfile read it, into *storage (which the result then
// views).
std::string_view ZipName(std::string_view stored, uint16_t flags, std::string* storage);
}  // namespace zip

class ZipArchive {
 public:
  struct Member {
    uint64_t local_offset = 0;  // of the local header, prepended bytes included
    uint64_t compressed_size = 0;
    uint64_t size = 0;  // uncompressed
    uint32_t crc32 = 0;
    uint16_t method = 0;
    uint16_t flags = 0;
  };

  // kRead: every member must be one this reader can inflate (stored, deflate; not encrypted).
  // kStructure: the central directory only (for libarchive's path, which reads more methods).
  // Either way, members whose local entries overlap (two names for one entry's bytes, a zip bomb
  // trick) are refused, naming both: kBadInput.
  enum class OpenMode { kRead, kStructure };
  static Result<ZipArchive> Open(const std::string& path, OpenMode mode = OpenMode::kRead);
  // The same through storage (path inside it).
  static Result<ZipArchive> Open(Storage& storage, const std::string& path,
                                 OpenMode mode = OpenMode::kRead);

  ZipArchive() = default;
  ZipArchive(ZipArchive&&) noexcept = default;
  ZipArchive& operator=(ZipArchive&&) noexcept = default;

  const std::string& path() const { return path_; }
  uint64_t file_size() const { return file_size_; }
  uint64_t sample_count() const { return tree_.sample_count(); }
  uint64_t member_count() const { return tree_.file_count(); }
  // Members [first, second) of sample s. REQUIRES: s < sample_count().
  std::pair<uint64_t, uint64_t> files_of(uint64_t s) const { return tree_.files_of(s); }
  std::string_view key(uint64_t s) const { return tree_.key(s); }
  // REQUIRES: m < member_count().
  std::string_view member_name(uint64_t m) const { return tree_.path(m); }
  const Member& member(uint64_t m) const { return members_[m]; }
  uint64_t member_size(uint64_t m) const { return members_[m].size; }
  // The grouping, for callers that want keys and fields (FileTree::field).
  const FileTree& tree() const { return tree_; }
  // Payload bytes of every member (the sum of uncompressed sizes).
  uint64_t payload_bytes() const { return payload_bytes_; }

  // Replaces *out with member m's uncompressed bytes; returns their count.
  // REQUIRES: m < member_count().
  Result<uint64_t> ReadMember(uint64_t m, std::string* out) const;
  // Reads every member of sample s (into a per-thread buffer); returns the payload bytes.
  // REQUIRES: s < sample_count().
  Result<uint64_t> ReadSample(uint64_t s) const;

 private:
  struct Eocd;
  Result<Eocd> ReadEocd() const;
  Status ReadCentralDirectory(const Eocd& eocd);
  // Refuses encryption, unsupported methods and impossible sizes; `header` names where m's
  // fields were read ("central directory entry" or "local header"), at `offset`.
  Status CheckSupported(std::string_view name, const Member& m, std::string_view header,
                        uint64_t offset) const;
  Status Inflate(uint64_t m, std::string_view in, std::string* out) const;
  std::string Where(uint64_t m) const;  // "ZIP: member NAME at offset N"

  std::string path_;
  std::unique_ptr<RandomAccessFile> file_;
  uint64_t file_size_ = 0;
  FileTree tree_;
  bool check_supported_ = true;  // OpenMode::kRead
  std::vector<Member> members_;  // in tree order
  uint64_t payload_bytes_ = 0;
};

struct ZipWriteOptions {
  static constexpr int kDefaultLevel = 6;  // what zlib's Z_DEFAULT_COMPRESSION means; zip's
  bool deflate = true;                     // false: every member stored (method 0)
  int level = kDefaultLevel;               // 0..9, with deflate
};

struct ZipWriteSummary {
  uint64_t members = 0;
  uint64_t payload_bytes = 0;
  uint64_t zip_bytes = 0;
  bool zip64 = false;
};

// Writes the tree under src_dir as zip_path (see the header comment). A file that changes size
// while it is read, or a walk problem (unreadable directory, broken symlink...), is a kBadInput
// error; zip_path.tmp is then removed.
Status WriteZip(const std::string& src_dir, const std::string& zip_path,
                const ZipWriteOptions& options = {}, ZipWriteSummary* summary = nullptr);

// True when the file at path in storage is a zip by name (".zip", any case) or by its first four
// bytes (a local header, or the end record of an empty zip). The one-argument form is local.
bool LooksLikeZip(Storage& storage, const std::string& path);
inline bool LooksLikeZip(const std::string& path) { return LooksLikeZip(*LocalStorage(), path); }

}  // namespace ds
