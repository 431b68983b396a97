// The zip reader, opening: the end records and the central directory (docs/formats/zip.md).
// Reading members is in zip_read.cc, the writer in zip_writer.cc.
#include "formats/sources/zip.h"

#include <fmt/format.h>

#include <algorithm>
#include <deque>
#include <limits>
#include <string>
#include <tuple>

#include "formats/sample.h"
#include "src/endian.h"
#include "src/human.h"

namespace ds {

namespace {

using namespace zip;

// Deflate cannot expand by more than 1032:1 (258-byte matches coded in 2 bits), so a member
// declaring more is corrupt; this also bounds what a garbage header can make us allocate.
constexpr uint64_t kMaxDeflateRatio = 1032;

std::string_view MethodName(uint16_t method) {
  switch (method) {
    case 1:
      return "shrink";
    case 6:
      return "implode";
    case 9:
      return "deflate64";
    case 12:
      return "bzip2";
    case 14:
      return "lzma";
    case 93:
      return "zstd";
    case 95:
      return "xz";
    case 98:
      return "ppmd";
    default:
      return "unknown";
  }
}

// FileTree::Scan order (formats/sources/dir_source.cc): in each directory its files by (key,
// field), then its sub-directories by name, bytewise.
bool ScanOrderLess(std::string_view a, std::string_view b) {
  for (;;) {
    size_t sa = a.find('/'), sb = b.find('/');
    bool a_dir = sa != std::string_view::npos, b_dir = sb != std::string_view::npos;
    if (a_dir != b_dir) return b_dir;  // files before sub-directories
    if (!a_dir) {
      KeyField ka = SplitPath(a), kb = SplitPath(b);
      return std::tie(ka.key, ka.field) < std::tie(kb.key, kb.field);
    }
    std::string_view da = a.substr(0, sa), db = b.substr(0, sb);
    if (da != db) return da < db;
    a.remove_prefix(sa + 1);
    b.remove_prefix(sb + 1);
  }
}

// Reads a 64-bit Zip64 value in place of a 32-bit (or 16-bit disk) field holding all ones.
bool TakeZip64(std::string_view* data, uint64_t* v, size_t width) {
  if (data->size() < width) return false;
  *v = width == 8 ? LoadLE64(data->data()) : LoadLE32(data->data());
  data->remove_prefix(width);
  return true;
}

}  // namespace

struct ZipArchive::Eocd {
  uint64_t entries = 0;
  uint64_t cd_size = 0;
  uint64_t cd_start = 0;  // where the central directory really is (prepended bytes included)
  uint64_t prepended = 0;
};

std::string ZipArchive::Where(uint64_t m) const {
  return fmt::format("{}: member {} at offset {}", path_, EscapeBytes(member_name(m)),
                     members_[m].local_offset);
}

Result<ZipArchive> ZipArchive::Open(const std::string& path, OpenMode mode) {
  return Open(*LocalStorage(), path, mode);
}

Result<ZipArchive> ZipArchive::Open(Storage& storage, const std::string& path, OpenMode mode) {
  ZipArchive z;
  z.path_ = path;
  z.check_supported_ = mode == OpenMode::kRead;
  DS_ASSIGN_OR_RETURN(z.file_, storage.OpenRead(path));
  z.file_size_ = z.file_->size();
  DS_ASSIGN_OR_RETURN(Eocd eocd, z.ReadEocd());
  DS_RETURN_IF_ERROR(z.ReadCentralDirectory(eocd));
  return z;
}

Result<ZipArchive::Eocd> ZipArchive::ReadEocd() const {
  const RandomAccessFile& file = *file_;
  uint64_t tail = std::min<uint64_t>(file_size_, kEocdSize + kMaxComment);
  std::string buf(tail, '\0');
  DS_RETURN_IF_ERROR(file.ReadAt(file_size_ - tail, buf.data(), tail, path_));
  uint64_t eocd_pos = file_size_;
  for (size_t i = tail >= kEocdSize ? tail - kEocdSize + 1 : 0; i-- > 0;) {
    if (LoadLE32(&buf[i]) == kEocdSig && i + kEocdSize + LoadLE16(&buf[i + 20]) <= tail) {
      eocd_pos = file_size_ - tail + i;
      break;
    }
  }
  if (eocd_pos == file_size_) {
    return Status(Code::kBadInput,
                  fmt::format("{}: no end of central directory record in its last {} bytes (of "
                              "{}): not a zip file, or truncated (copy it again)",
                              path_, tail, file_size_));
  }
  const char* e = &buf[eocd_pos - (file_size_ - tail)];
  uint64_t disk = LoadLE16(e + 4), cd_disk = LoadLE16(e + 6);
  uint64_t disk_entries = LoadLE16(e + 8);
  Eocd r;
  r.entries = LoadLE16(e + 10);
  r.cd_size = LoadLE32(e + 12);
  uint64_t cd_offset = LoadLE32(e + 16);
  uint64_t cd_end = eocd_pos;  // the central directory ends where the end records begin
  uint64_t disks = 1;

  if (eocd_pos >= kLocator64Size) {
    char loc[kLocator64Size];
    uint64_t loc_pos = eocd_pos - kLocator64Size;
    DS_RETURN_IF_ERROR(file.ReadAt(loc_pos, loc, sizeof loc, path_));
    if (LoadLE32(loc) == kLocator64Sig) {
      disks = LoadLE32(loc + 16);
      // The locator's offset ignores prepended bytes; zipfile looks right before the locator.
      uint64_t candidates[] = {LoadLE64(loc + 8),
                               loc_pos >= kEocd64Size ? loc_pos - kEocd64Size : loc_pos};
      char rec[kEocd64Size];
      uint64_t rec_pos = loc_pos;
      for (uint64_t c : candidates) {
        if (c > loc_pos || loc_pos - c < kEocd64Size) continue;
        DS_RETURN_IF_ERROR(file.ReadAt(c, rec, sizeof rec, path_));
        if (LoadLE32(rec) == kEocd64Sig) {
          rec_pos = c;
          break;
        }
      }
      if (rec_pos == loc_pos) {
        return Status(Code::kBadInput,
                      fmt::format("{}: Zip64 end of central directory locator at offset {} points "
                                  "to offset {}, which holds no Zip64 end record: corrupt zip",
                                  path_, loc_pos, LoadLE64(loc + 8)));
      }
      disk = LoadLE32(rec + 16);
      cd_disk = LoadLE32(rec + 20);
      disk_entries = LoadLE64(rec + 24);
      r.entries = LoadLE64(rec + 32);
      r.cd_size = LoadLE64(rec + 40);
      cd_offset = LoadLE64(rec + 48);
      cd_end = rec_pos;
    }
  }
  if (disk != 0 || cd_disk != 0 || disks > 1 || disk_entries != r.entries) {
    return Status(
        Code::kBadInput,
        fmt::format("{}: end record at offset {}: a multi-disk (split or spanned) "
                    "archive; join the parts first (Info-ZIP: zip -s 0 SPLIT.zip -O WHOLE.zip)",
                    path_, eocd_pos));
  }
  if (r.cd_size > cd_end || cd_offset > cd_end - r.cd_size) {
    return Status(Code::kBadInput,
                  fmt::format("{}: central directory ({} bytes at offset {}) runs past its end "
                              "record at offset {} (file size {}): truncated or corrupt zip (copy "
                              "it again)",
                              path_, r.cd_size, cd_offset, cd_end, file_size_));
  }
  // As zipfile: bytes before the zip (a self-extractor stub) shift every offset by this much.
  r.prepended = cd_end - r.cd_size - cd_offset;
  r.cd_start = cd_offset + r.prepended;
  return r;
}

Status ZipArchive::CheckSupported(std::string_view name, const Member& m, std::string_view header,
                                  uint64_t offset) const {
  auto where = [&] {
    return fmt::format("{}: member {} ({} at offset {})", path_, EscapeBytes(name), header, offset);
  };
  if (m.flags & (kFlagEncrypted | kFlagStrongEncryption)) {
    return Status(Code::kBadInput,
                  fmt::format("{}: encrypted member {} ({} at offset {}): decrypt first (unzip "
                              "-P PASSWORD, then zip again without -e/-P)",
                              path_, EscapeBytes(name), header, offset));
  }
  if (m.flags & kFlagPatched) {
    return Status(Code::kBadInput, where() +
                                       ": compressed patched data (flag bit 5) is not "
                                       "supported; re-create the zip");
  }
  if (m.method != kMethodStore && m.method != kMethodDeflate) {
    return Status(Code::kBadInput,
                  fmt::format("{}: unsupported compression method {} ({}); dspack reads stored "
                              "(0) and deflated (8) members: re-create the zip with zip -r (or "
                              "zipfile.ZIP_DEFLATED)",
                              where(), m.method, MethodName(m.method)));
  }
  if (m.method == kMethodStore && m.compressed_size != m.size) {
    return Status(Code::kBadInput,
                  fmt::format("{}: stored, yet its compressed size {} differs from its size {}: "
                              "corrupt zip",
                              where(), m.compressed_size, m.size));
  }
  if (m.method == kMethodDeflate && m.size / kMaxDeflateRatio > m.compressed_size) {
    return Status(Code::kBadInput,
                  fmt::format("{}: declares {} bytes from {} deflated bytes, more than deflate "
                              "expands to (1032:1): corrupt zip",
                              where(), m.size, m.compressed_size));
  }
  return Status::Ok();
}

Status ZipArchive::ReadCentralDirectory(const Eocd& eocd) {
  if (eocd.cd_size >= 4) {  // a garbage end record must not make us read a huge directory
    char sig[4];
    DS_RETURN_IF_ERROR(file_->ReadAt(eocd.cd_start, sig, sizeof sig, path_));
    if (LoadLE32(sig) != kCentralSig) {
      return Status(Code::kBadInput,
                    fmt::format("{}: offset {}: no central directory entry signature where the "
                                "end record puts the central directory: corrupt zip",
                                path_, eocd.cd_start));
    }
  }
  std::string cd(eocd.cd_size, '\0');  // cd_size <= file size, checked in ReadEocd
  DS_RETURN_IF_ERROR(file_->ReadAt(eocd.cd_start, cd.data(), cd.size(), path_));
  struct Entry {
    std::string_view name;
    Member m;
  };
  std::vector<Entry> entries;
  std::deque<std::string> decoded_names;  // CP437 names as UTF-8 (a deque: stable addresses)
  std::string decoded;
  entries.reserve(std::min<uint64_t>(eocd.entries, cd.size() / kCentralSize));
  // As zipfile, the entries are read until the directory's size is used up (the count in the
  // end record is only a hint: old writers wrap it at 65536).
  for (size_t pos = 0; pos < cd.size();) {
    const uint64_t at = eocd.cd_start + pos;
    const char* p = cd.data() + pos;
    size_t left = cd.size() - pos;
    if (left < kCentralSize || LoadLE32(p) != kCentralSig) {
      return Status(Code::kBadInput,
                    fmt::format("{}: offset {}: {} (entry {} of the central directory, which "
                                "ends at offset {}): corrupt zip",
                                path_, at,
                                left < kCentralSize ? "truncated central directory entry"
                                                    : "no central directory entry signature",
                                entries.size(), eocd.cd_start + cd.size()));
    }
    uint64_t name_len = LoadLE16(p + 28), extra_len = LoadLE16(p + 30);
    uint64_t comment_len = LoadLE16(p + 32);
    if (kCentralSize + name_len + extra_len + comment_len > left) {
      return Status(Code::kBadInput,
                    fmt::format("{}: offset {}: central directory entry {} runs past the end of "
                                "the central directory (offset {}): corrupt zip",
                                path_, at, entries.size(), eocd.cd_start + cd.size()));
    }
    Entry e;
    e.m.flags = LoadLE16(p + 8);
    e.name = ZipName(std::string_view(p + kCentralSize, name_len), e.m.flags, &decoded);
    if (e.name.data() == decoded.data()) {  // keep the decoded bytes alive beside the CD's
      decoded_names.push_back(std::move(decoded));
      e.name = decoded_names.back();
    }
    e.m.method = LoadLE16(p + 10);
    e.m.crc32 = LoadLE32(p + 16);
    e.m.compressed_size = LoadLE32(p + 20);
    e.m.size = LoadLE32(p + 24);
    uint64_t disk = LoadLE16(p + 34);
    uint64_t offset = LoadLE32(p + 42);
    pos += kCentralSize + name_len + extra_len + comment_len;

    // Zip64 extended information (0x0001): the 64-bit values of the fields holding all ones,
    // in this order. Without it, all ones is taken literally, as zipfile does.
    std::string_view extra(p + kCentralSize + name_len, extra_len);
    while (extra.size() >= 4) {
      uint16_t id = LoadLE16(extra.data()), len = LoadLE16(extra.data() + 2);
      if (len > extra.size() - 4) break;
      std::string_view data = extra.substr(4, len);
      extra.remove_prefix(4 + len);
      if (id != kZip64ExtraId) continue;
      if ((e.m.size == kMax32 && !TakeZip64(&data, &e.m.size, 8)) ||
          (e.m.compressed_size == kMax32 && !TakeZip64(&data, &e.m.compressed_size, 8)) ||
          (offset == kMax32 && !TakeZip64(&data, &offset, 8)) ||
          (disk == kMax16 && !TakeZip64(&data, &disk, 4))) {
        return Status(Code::kBadInput,
                      fmt::format("{}: member {} (central directory entry at offset {}): its "
                                  "Zip64 extra field ({} bytes) lacks a size or offset that the "
                                  "entry defers to it: corrupt zip",
                                  path_, EscapeBytes(e.name), at, len));
      }
      break;
    }
    e.m.local_offset = offset > std::numeric_limits<uint64_t>::max() - eocd.prepended
                           ? std::numeric_limits<uint64_t>::max()
                           : offset + eocd.prepended;
    if (name_len == 0 || e.name.back() == '/') continue;  // a directory entry
    if (check_supported_) {
      DS_RETURN_IF_ERROR(CheckSupported(e.name, e.m, "central directory entry", at));
    }
    entries.push_back(e);
  }
  // Overlapping local entries: each member's bytes start at its local header and run at least
  // kLocalSize + compressed_size on (its name and extra field come on top), so a member that
  // starts before the previous one's end shares its bytes. unzip refuses these ("overlapped
  // components (possible zip bomb)"); libarchive silently keeps one of the names.
  std::vector<const Entry*> by_offset;
  by_offset.reserve(entries.size());
  for (const auto& e : entries) by_offset.push_back(&e);
  std::stable_sort(by_offset.begin(), by_offset.end(), [](const Entry* a, const Entry* b) {
    return a->m.local_offset < b->m.local_offset;
  });
  for (size_t i = 1; i < by_offset.size(); i++) {
    const Entry& prev = *by_offset[i - 1];
    const Entry& cur = *by_offset[i];
    const uint64_t prev_end = prev.m.local_offset + kLocalSize + prev.m.compressed_size;
    // A member running past the end of the file is its own error (reported when it is read).
    if (prev_end > file_size_ || prev_end < prev.m.local_offset) continue;
    if (cur.m.local_offset < prev_end) {
      return Status(Code::kBadInput,
                    fmt::format("{}: members {} and {} overlap (local entries at offsets {} and "
                                "{}): one entry's bytes under two names, as in a zip bomb; "
                                "refused",
                                path_, EscapeBytes(prev.name), EscapeBytes(cur.name),
                                prev.m.local_offset, cur.m.local_offset));
    }
  }
  std::stable_sort(entries.begin(), entries.end(),
                   [](const Entry& a, const Entry& b) { return ScanOrderLess(a.name, b.name); });
  tree_ = FileTree(path_);
  members_.reserve(entries.size());
  for (const auto& e : entries) {
    tree_.Append(e.name);
    members_.push_back(e.m);
    payload_bytes_ += e.m.size;
  }
  tree_.ShrinkToFit();
  return Status::Ok();
}

namespace zip {

// CP437's upper half (0x80-0xFF) as Unicode code points: zip names without the UTF-8 flag (bit
// 11) are CP437 (APPNOTE.TXT appendix D), as libarchive reads them for convert and Python's
// zipfile does, so every reader gives the same keys (docs/formats/zip.md).
constexpr uint16_t kCp437High[128] = {
    0x00C7, 0x00FC, 0x00E9, 0x00E2, 0x00E4, 0x00E0, 0x00E5, 0x00E7, 0x00EA, 0x00EB, 0x00E8, 0x00EF,
    0x00EE, 0x00EC, 0x00C4, 0x00C5, 0x00C9, 0x00E6, 0x00C6, 0x00F4, 0x00F6, 0x00F2, 0x00FB, 0x00F9,
    0x00FF, 0x00D6, 0x00DC, 0x00A2, 0x00A3, 0x00A5, 0x20A7, 0x0192, 0x00E1, 0x00ED, 0x00F3, 0x00FA,
    0x00F1, 0x00D1, 0x00AA, 0x00BA, 0x00BF, 0x2310, 0x00AC, 0x00BD, 0x00BC, 0x00A1, 0x00AB, 0x00BB,
    0x2591, 0x2592, 0x2593, 0x2502, 0x2524, 0x2561, 0x2562, 0x2556, 0x2555, 0x2563, 0x2551, 0x2557,
    0x255D, 0x255C, 0x255B, 0x2510, 0x2514, 0x2534, 0x252C, 0x251C, 0x2500, 0x253C, 0x255E, 0x255F,
    0x255A, 0x2554, 0x2569, 0x2566, 0x2560, 0x2550, 0x256C, 0x2567, 0x2568, 0x2564, 0x2565, 0x2559,
    0x2558, 0x2552, 0x2553, 0x256B, 0x256A, 0x2518, 0x250C, 0x2588, 0x2584, 0x258C, 0x2590, 0x2580,
    0x03B1, 0x00DF, 0x0393, 0x03C0, 0x03A3, 0x03C3, 0x00B5, 0x03C4, 0x03A6, 0x0398, 0x03A9, 0x03B4,
    0x221E, 0x03C6, 0x03B5, 0x2229, 0x2261, 0x00B1, 0x2265, 0x2264, 0x2320, 0x2321, 0x00F7, 0x2248,
    0x00B0, 0x2219, 0x00B7, 0x221A, 0x207F, 0x00B2, 0x25A0, 0x00A0};

// The name as UTF-8: as stored when flagged UTF-8 or pure ASCII, else decoded from CP437 into
// *storage (which the result then views).
std::string_view ZipName(std::string_view stored, uint16_t flags, std::string* storage) {
  if ((flags & kFlagUtf8) ||
      std::all_of(stored.begin(), stored.end(), [](char c) { return (c & 0x80) == 0; })) {
    return stored;
  }
  storage->clear();
  for (char ch : stored) {
    auto c = static_cast<unsigned char>(ch);
    uint32_t u = c < 0x80 ? c : kCp437High[c - 0x80];
    if (u < 0x80) {
      *storage += static_cast<char>(u);
    } else if (u < 0x800) {
      *storage += static_cast<char>(0xC0 | (u >> 6));
      *storage += static_cast<char>(0x80 | (u & 0x3F));
    } else {
      *storage += static_cast<char>(0xE0 | (u >> 12));
      *storage += static_cast<char>(0x80 | ((u >> 6) & 0x3F));
      *storage += static_cast<char>(0x80 | (u & 0x3F));
    }
  }
  return *storage;
}

}  // namespace zip

}  // namespace ds
