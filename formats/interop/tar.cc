#include "formats/interop/tar.h"

#include <fmt/format.h>

#include <cstring>
#include <optional>

#include "src/endian.h"
#include "src/human.h"

namespace ds::tar {

namespace {

constexpr uint64_t kMaxOctalSize = 077777777777ull;  // 11 octal digits: 8 GiB - 1

void PutOctal(char* field, size_t width, uint64_t v) {
  // width-1 digits, then NUL (as GNU tar writes ustar numbers).
  std::string s = fmt::format("{:0{}o}", v, width - 1);
  std::memcpy(field, s.data(), width - 1);
  field[width - 1] = '\0';
}

std::string Ustar(std::string_view name, uint64_t size, char type) {
  std::string h(kBlock, '\0');
  std::memcpy(h.data(), name.data(), std::min<size_t>(name.size(), 100));
  PutOctal(&h[100], 8, 0644);
  PutOctal(&h[108], 8, 0);
  PutOctal(&h[116], 8, 0);
  PutOctal(&h[124], 12, size > kMaxOctalSize ? 0 : size);
  PutOctal(&h[136], 12, 0);
  h[156] = type;
  std::memcpy(&h[257],
              "ustar\0"
              "00",
              8);
  std::memset(&h[148], ' ', 8);
  unsigned sum = 0;
  for (unsigned char c : h) sum += c;
  std::string cs = fmt::format("{:06o}", sum);
  std::memcpy(&h[148], cs.data(), 6);
  h[154] = '\0';
  h[155] = ' ';
  return h;
}

// One pax record "LEN key=value\n", LEN counting the whole record including its own digits.
std::string PaxRecord(std::string_view key, std::string_view value) {
  size_t body = key.size() + value.size() + 3;  // ' ', '=', '\n'
  size_t len = body + 1;
  while (std::to_string(len).size() + body != len) len = std::to_string(len).size() + body;
  return fmt::format("{} {}={}\n", len, key, value);
}

bool NameNeedsPax(std::string_view name) {
  if (name.size() > 100) return true;
  for (unsigned char c : name) {
    if (c >= 0x80) return true;
  }
  return false;
}

bool NeedsPax(std::string_view name, uint64_t size) {
  return NameNeedsPax(name) || size > kMaxOctalSize;
}

std::string PaxData(std::string_view name, uint64_t size) {
  std::string d;
  if (NameNeedsPax(name)) d += PaxRecord("path", name);
  if (size > kMaxOctalSize) d += PaxRecord("size", std::to_string(size));
  return d;
}

Result<uint64_t> ParseNumber(const char* f, size_t width, std::string_view what, uint64_t off) {
  if (static_cast<unsigned char>(f[0]) & 0x80) {  // GNU base-256
    uint64_t v = 0;
    for (size_t i = 1; i < width; i++) v = (v << 8) | static_cast<unsigned char>(f[i]);
    return v;
  }
  uint64_t v = 0;
  size_t i = 0;
  while (i < width && f[i] == ' ') i++;
  for (; i < width && f[i] >= '0' && f[i] <= '7'; i++) v = v * 8 + (f[i] - '0');
  if (i < width && f[i] != '\0' && f[i] != ' ') {
    return Status(Code::kCorruption,
                  fmt::format("{} offset {}: bad number in a tar header", what, off));
  }
  return v;
}

// Applies pax records (path, size) from data.
Status ParsePax(std::string_view data, std::string* path, std::optional<uint64_t>* size,
                std::string_view what, uint64_t off) {
  while (!data.empty()) {
    size_t sp = data.find(' ');
    uint64_t len = 0;
    if (sp == std::string_view::npos || sp == 0) goto bad;
    for (size_t i = 0; i < sp; i++) {
      if (data[i] < '0' || data[i] > '9') goto bad;
      len = len * 10 + (data[i] - '0');
    }
    if (len > data.size() || len < sp + 3 || data[len - 1] != '\n') goto bad;
    {
      std::string_view rec = data.substr(sp + 1, len - sp - 2);
      size_t eq = rec.find('=');
      if (eq == std::string_view::npos) goto bad;
      std::string_view k = rec.substr(0, eq), v = rec.substr(eq + 1);
      if (k == "path") path->assign(v);
      if (k == "size") *size = std::stoull(std::string(v));
    }
    data.remove_prefix(len);
  }
  return Status::Ok();
bad:
  return Status(Code::kCorruption,
                fmt::format("{} offset {}: malformed pax extended header", what, off));
}

}  // namespace

uint64_t Member::next() const { return data_offset + AlignUp(size, kBlock); }

std::string MemberHeaders(std::string_view name, uint64_t size) {
  std::string out;
  if (NeedsPax(name, size)) {
    std::string pax = PaxData(name, size);
    out += Ustar("././@PaxHeader", pax.size(), 'x');
    out += pax;
    out.append(AlignUp(pax.size(), kBlock) - pax.size(), '\0');
  }
  out += Ustar(name, size, '0');
  return out;
}

uint64_t MemberHeadersSize(std::string_view name, uint64_t size) {
  if (!NeedsPax(name, size)) return kBlock;
  return 2 * kBlock + AlignUp(PaxData(name, size).size(), kBlock);
}

Result<bool> ReadMember(const ReadFn& read, uint64_t offset, uint64_t file_size,
                        std::string_view what, Member* m) {
  m->header_offset = offset;
  std::string long_name;
  std::optional<uint64_t> pax_size;
  bool have_long = false;
  for (;;) {
    if (offset + kBlock > file_size) {
      return Status(Code::kCorruption,
                    fmt::format("{} offset {}: truncated (the file ends inside a tar header; the "
                                "end-of-archive blocks are missing)",
                                what, offset));
    }
    DS_ASSIGN_OR_RETURN(std::string h, read(offset, kBlock));
    if (h.size() < kBlock) {
      return Status(Code::kCorruption,
                    fmt::format("{} offset {}: truncated tar header", what, offset));
    }
    if (h.find_first_not_of('\0') == std::string::npos) return false;  // end of archive
    unsigned sum = 0;
    for (size_t i = 0; i < kBlock; i++) {
      sum += (i >= 148 && i < 156) ? ' ' : static_cast<unsigned char>(h[i]);
    }
    DS_ASSIGN_OR_RETURN(uint64_t stored, ParseNumber(&h[148], 8, what, offset));
    if (stored != sum) {
      return Status(Code::kCorruption,
                    fmt::format("{} offset {}: tar header checksum {} != {} (not a tar, or "
                                "damaged)",
                                what, offset, stored, sum));
    }
    DS_ASSIGN_OR_RETURN(uint64_t size, ParseNumber(&h[124], 12, what, offset));
    char type = h[156];
    uint64_t data_off = offset + kBlock;
    if (data_off + AlignUp(size, kBlock) > file_size && !(type == '0' || type == '\0')) {
      return Status(Code::kCorruption,
                    fmt::format("{} offset {}: truncated (a {}-byte tar extension header runs "
                                "past the end of the file at {})",
                                what, offset, size, file_size));
    }
    if (type == 'x' || type == 'g' || type == 'L') {
      DS_ASSIGN_OR_RETURN(std::string data, read(data_off, size));
      if (type == 'x') DS_RETURN_IF_ERROR(ParsePax(data, &long_name, &pax_size, what, offset));
      if (type == 'x' && !long_name.empty()) have_long = true;
      if (type == 'L') {
        long_name = data.substr(0, data.find('\0'));
        have_long = true;
      }
      offset = data_off + AlignUp(size, kBlock);
      continue;
    }
    if (have_long) {
      m->name = long_name;
    } else {
      std::string name(h.data(), strnlen(h.data(), 100));
      std::string prefix(&h[345], strnlen(&h[345], 155));
      bool ustar = std::memcmp(&h[257], "ustar", 5) == 0;
      m->name = ustar && !prefix.empty() ? prefix + "/" + name : name;
    }
    m->size = pax_size ? *pax_size : size;
    m->type = type == '\0' ? '0' : type;
    m->data_offset = data_off;
    if (m->type == '5' || m->type == '1' || m->type == '2') m->size = m->type == '5' ? 0 : m->size;
    if (m->next() > file_size) {
      return Status(Code::kCorruption,
                    fmt::format("{} offset {}: truncated: member '{}' needs {} bytes of data but "
                                "the file ends at {}",
                                what, m->header_offset, EscapeBytes(m->name), m->size, file_size));
    }
    return true;
  }
}

}  // namespace ds::tar
