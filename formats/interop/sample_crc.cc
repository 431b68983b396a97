#include "formats/interop/sample_crc.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <numeric>

#include "src/checksum.h"
#include "src/endian.h"
#include "src/fd.h"
#include "src/human.h"

namespace ds {
namespace {

// The canonical bytes after the data CRCs are known: key, 0, then per field by name.
uint32_t Combine(std::string_view key, const std::vector<std::string_view>& names,
                 const std::vector<uint64_t>& sizes, const std::vector<uint32_t>& data_crcs) {
  std::vector<size_t> order(names.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return names[a] < names[b]; });
  static const char kZero = 0;
  uint32_t crc = Crc32cExtend(Crc32c(key), &kZero, 1);
  for (size_t f : order) {
    std::string tail;
    PutLE64(&tail, sizes[f]);
    PutLE32(&tail, data_crcs[f]);
    crc = Crc32cExtend(crc, names[f].data(), names[f].size());
    crc = Crc32cExtend(crc, &kZero, 1);
    crc = Crc32cExtend(crc, tail.data(), tail.size());
  }
  return crc;
}

}  // namespace

uint32_t SampleCrc(const Sample& s) {
  std::vector<std::string_view> names;
  std::vector<uint64_t> sizes;
  std::vector<uint32_t> crcs;
  for (const auto& f : s.fields) {
    names.push_back(f.name);
    sizes.push_back(f.data.size());
    crcs.push_back(Crc32c(f.data));
  }
  return Combine(s.key, names, sizes, crcs);
}

void SampleCrcBuilder::Begin(std::string_view key, std::span<const FieldInfo> fields) {
  key_.assign(key);
  fields_.assign(fields.begin(), fields.end());
  crcs_.assign(fields_.size(), 0);
  field_ = 0;
  left_ = fields_.empty() ? 0 : fields_[0].size;
}

void SampleCrcBuilder::Append(std::string_view chunk) {
  while (!chunk.empty()) {
    while (field_ < fields_.size() && left_ == 0) {
      field_++;
      left_ = field_ < fields_.size() ? fields_[field_].size : 0;
    }
    if (field_ >= fields_.size()) return;  // more bytes than announced: the writer refuses it
    size_t n = static_cast<size_t>(std::min<uint64_t>(left_, chunk.size()));
    crcs_[field_] = Crc32cExtend(crcs_[field_], chunk.data(), n);
    left_ -= n;
    chunk.remove_prefix(n);
  }
}

uint32_t SampleCrcBuilder::End() const {
  std::vector<std::string_view> names;
  std::vector<uint64_t> sizes;
  for (const auto& f : fields_) {
    names.push_back(f.name);
    sizes.push_back(f.size);
  }
  return Combine(key_, names, sizes, crcs_);
}

const char* ReadsCheckedText(bool checked) {
  return checked ? "checked: per-sample CRC32C (dspack.crc)"
                 : "unchecked by dspack: no per-sample checksums (not written by this dspack)";
}

std::string EncodeSampleCrcs(const std::vector<uint32_t>& crcs) {
  std::string out(kSampleCrcMagic, sizeof(kSampleCrcMagic));
  PutLE64(&out, crcs.size());
  out.reserve(out.size() + 4 * crcs.size());
  for (uint32_t c : crcs) PutLE32(&out, c);
  return out;
}

Result<std::optional<SampleCrcTable>> SampleCrcTable::Load(const std::string& dir,
                                                           const LayoutMeta& meta,
                                                           Storage& storage) {
  const native::FileMeta* listed = nullptr;
  for (const auto& f : meta.files) {
    if (f.name == kSampleCrcName) listed = &f;
  }
  if (!listed) return std::optional<SampleCrcTable>();
  SampleCrcTable t;
  t.path_ = dir + "/" + kSampleCrcName;
  auto bad = [&](const std::string& why) {
    return Status(Code::kCorruption,
                  fmt::format("{}: {}; restore it or reconvert the dataset", t.path_, why));
  };
  auto text = ReadAll(storage, t.path_);
  if (!text.ok()) {
    if (text.status().err() == ENOENT) return bad("missing (dspack.json lists it)");
    return text.status();
  }
  if (text->size() != listed->size || Xxh3_64(*text) != listed->xxh3) {
    return bad(fmt::format("{} bytes, XXH3 {}; dspack.json says {} bytes, {}", text->size(),
                           HexU64(Xxh3_64(*text)), listed->size, HexU64(listed->xxh3)));
  }
  if (text->size() < kSampleCrcHeader ||
      std::memcmp(text->data(), kSampleCrcMagic, sizeof(kSampleCrcMagic)) != 0 ||
      LoadLE64(text->data() + 8) != meta.samples ||
      text->size() != kSampleCrcHeader + 4 * meta.samples) {
    return bad(fmt::format("not a table of {} sample CRCs", meta.samples));
  }
  t.crcs_.resize(meta.samples);
  for (uint64_t i = 0; i < meta.samples; i++) {
    t.crcs_[i] = LoadLE32(text->data() + kSampleCrcHeader + 4 * i);
  }
  return std::optional<SampleCrcTable>(std::move(t));
}

Status SampleCrcTable::Check(uint64_t i, const Sample& s, std::string_view where) const {
  if (i >= crcs_.size()) {
    return Status(Code::kCorruption, fmt::format("{}: sample {} is past the {} samples of {}",
                                                 where, i, crcs_.size(), path_));
  }
  uint32_t got = SampleCrc(s);
  if (got == crcs_[i]) return Status::Ok();
  return Status(Code::kCorruption,
                fmt::format("{}: sample {} (key '{}'): CRC32C {:08x} differs from {:08x} in {}: "
                            "the data changed after it was written; restore or reconvert",
                            where, i, EscapeBytes(s.key), got, crcs_[i], path_));
}

}  // namespace ds
