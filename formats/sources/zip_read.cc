// The zip reader, reading: members inflated (raw deflate) or stored, checked against their CRC-32
// (docs/formats/zip.md). Opening an archive is in zip.cc.
#include <fmt/format.h>
#include <zlib.h>

#include <algorithm>
#include <string>

#include "formats/sources/zip.h"
#include "src/endian.h"
#include "src/fd.h"
#include "src/human.h"

namespace ds {

namespace {

using namespace zip;

// zlib counts in 32-bit uInt: feed it at most this much at a time.
constexpr uint64_t kZlibChunk = 1u << 30;

// Per-thread raw inflate state, reset per member (zipfile makes a decompressobj(-15) each time).
struct Inflater {
  z_stream z{};
  bool ok = false;
  Inflater() { ok = inflateInit2(&z, -MAX_WBITS) == Z_OK; }
  ~Inflater() {
    if (ok) inflateEnd(&z);
  }
};

uint32_t Crc32(std::string_view data) {
  return static_cast<uint32_t>(
      crc32_z(0, reinterpret_cast<const Bytef*>(data.data()), data.size()));
}

}  // namespace

using zip::ZipName;

Status ZipArchive::Inflate(uint64_t mi, std::string_view in, std::string* out) const {
  const Member& m = members_[mi];
  thread_local Inflater inf;
  if (!inf.ok) return Status(Code::kInternal, Where(mi) + ": inflateInit2 failed (out of memory)");
  z_stream& z = inf.z;
  inflateReset(&z);
  out->resize(m.size);  // bounded: m.size <= 1032 * compressed size, checked at Open
  auto* next_in = reinterpret_cast<const Bytef*>(in.data());
  auto* next_out = reinterpret_cast<Bytef*>(out->data());
  uint64_t in_left = in.size(), out_left = m.size;
  z.avail_in = z.avail_out = 0;
  int rc;
  for (;;) {
    if (z.avail_in == 0 && in_left > 0) {
      z.next_in = const_cast<Bytef*>(next_in);
      z.avail_in = static_cast<uInt>(std::min(in_left, kZlibChunk));
      next_in += z.avail_in;
      in_left -= z.avail_in;
    }
    if (z.avail_out == 0 && out_left > 0) {
      z.next_out = next_out;
      z.avail_out = static_cast<uInt>(std::min(out_left, kZlibChunk));
      next_out += z.avail_out;
      out_left -= z.avail_out;
    }
    rc = inflate(&z, Z_NO_FLUSH);
    if (rc != Z_OK) break;
  }
  uint64_t consumed = in.size() - in_left - z.avail_in;
  uint64_t produced = m.size - out_left - z.avail_out;
  if (rc == Z_STREAM_END && produced == m.size && consumed == m.compressed_size) {
    return Status::Ok();
  }
  std::string what;
  if (rc == Z_STREAM_END && produced != m.size) {
    what = fmt::format("inflates to {} bytes, the central directory says {}", produced, m.size);
  } else if (rc == Z_STREAM_END) {
    what = fmt::format("the deflate stream ends after {} of its {} compressed bytes", consumed,
                       m.compressed_size);
  } else if (rc == Z_BUF_ERROR && produced == m.size) {
    what = fmt::format("inflates to more than the {} bytes the central directory says", m.size);
  } else if (rc == Z_BUF_ERROR) {
    what = fmt::format("the deflate stream is cut short after {} compressed bytes", consumed);
  } else {
    what = fmt::format("invalid deflate data after {} of {} compressed bytes ({})", consumed,
                       m.compressed_size, z.msg ? z.msg : "zlib error " + std::to_string(rc));
  }
  return Status(Code::kCorruption,
                fmt::format("{}: {}: corrupt data (fetch the zip again)", Where(mi), what));
}

Result<uint64_t> ZipArchive::ReadMember(uint64_t mi, std::string* out) const {
  thread_local std::string raw;
  const Member& m = members_[mi];
  std::string_view name = member_name(mi);
  if (m.local_offset >= file_size_ || file_size_ - m.local_offset < kLocalSize) {
    return Status(Code::kBadInput,
                  fmt::format("{}: the local header lies past the end of the file ({} bytes): "
                              "truncated or corrupt zip (copy it again)",
                              Where(mi), file_size_));
  }
  char h[kLocalSize];
  DS_RETURN_IF_ERROR(file_->ReadAt(m.local_offset, h, sizeof h, path_));
  if (LoadLE32(h) != kLocalSig) {
    return Status(Code::kBadInput,
                  fmt::format("{}: no local file header signature there (found {:08x}, want "
                              "{:08x}): corrupt zip, or a wrong offset in the central directory",
                              Where(mi), LoadLE32(h), kLocalSig));
  }
  uint16_t flags = LoadLE16(h + 6);
  if (flags & (kFlagEncrypted | kFlagStrongEncryption | kFlagPatched)) {
    Member local = m;
    local.flags = flags;
    DS_RETURN_IF_ERROR(CheckSupported(name, local, "local header", m.local_offset));
  }
  uint64_t head = LoadLE16(h + 26) + uint64_t{LoadLE16(h + 28)};  // name + extra
  uint64_t avail = file_size_ - m.local_offset - kLocalSize;
  if (head > avail || m.compressed_size > avail - head) {
    return Status(
        Code::kBadInput,
        fmt::format("{}: its {} bytes of data at offset {} run past the end of the file "
                    "({} bytes): truncated zip (copy it again)",
                    Where(mi), m.compressed_size, m.local_offset + kLocalSize + head, file_size_));
  }
  raw.resize(head + m.compressed_size);
  DS_RETURN_IF_ERROR(file_->ReadAt(m.local_offset + kLocalSize, raw.data(), raw.size(), path_));
  std::string local_decoded;
  std::string_view local_name =
      ZipName(std::string_view(raw.data(), LoadLE16(h + 26)), flags, &local_decoded);
  if (local_name != name) {
    return Status(Code::kBadInput,
                  fmt::format("{}: the local header names it {}: corrupt zip (central directory "
                              "and local header disagree)",
                              Where(mi), EscapeBytes(local_name)));
  }
  std::string_view data = std::string_view(raw).substr(head);
  if (m.method == kMethodDeflate) {
    DS_RETURN_IF_ERROR(Inflate(mi, data, out));
  } else {
    out->assign(data);
  }
  uint32_t crc = Crc32(*out);
  if (crc != m.crc32) {
    return Status(Code::kCorruption,
                  fmt::format("{}: CRC-32 mismatch (computed {:08x}, the central directory says "
                              "{:08x}): corrupt data (fetch the zip again)",
                              Where(mi), crc, m.crc32));
  }
  return static_cast<uint64_t>(out->size());
}

Result<uint64_t> ZipArchive::ReadSample(uint64_t s) const {
  thread_local std::string buf;
  uint64_t bytes = 0;
  auto [begin, end] = files_of(s);
  for (uint64_t m = begin; m < end; m++) {
    DS_ASSIGN_OR_RETURN(uint64_t n, ReadMember(m, &buf));
    bytes += n;
  }
  return bytes;
}

bool LooksLikeZip(Storage& storage, const std::string& path) {
  std::string base = path.substr(path.rfind('/') + 1);  // npos + 1 == 0
  if (base.size() > 4) {
    if (AsciiLower(base.substr(base.size() - 4)) == ".zip") return true;
  }
  auto file = storage.OpenRead(path);
  if (!file.ok()) return false;
  char magic[4];
  auto n = (*file)->ReadSome(0, magic, sizeof magic);
  if (!n.ok() || *n != sizeof magic) return false;
  uint32_t sig = LoadLE32(magic);
  return sig == kLocalSig || sig == kEocdSig;
}

}  // namespace ds
