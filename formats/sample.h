// The unit every layout stores: a sample is a key plus one or more named fields (byte strings).
//
// Files map to samples as in WebDataset (docs/formats/native.md, "Keys and fields"): the key is
// the path up to the first '.' of the last component, the field name is the rest without that
// dot. "n01440764/n01440764_10026.JPEG" -> key "n01440764/n01440764_10026", field "JPEG".
// Names for which that split would lose information keep the whole path as key and an empty
// field name: no dot ("README"), a leading dot (".hidden") or nothing after the dot ("a.").
// JoinKeyField(SplitPath(p)) == p for every path, so extraction restores names byte for byte.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ds {

struct Field {
  std::string name;
  std::string data;
  bool operator==(const Field&) const = default;
};

struct Sample {
  std::string key;
  std::vector<Field> fields;
  uint64_t payload_bytes() const {
    uint64_t n = 0;
    for (const auto& f : fields) n += f.data.size();
    return n;
  }
};

// A field's name and size without its bytes (from a record header).
struct FieldInfo {
  std::string name;
  uint64_t size = 0;
};

struct KeyField {
  std::string_view key;
  std::string_view field;
};

// Splits a relative path into key and field name (see the header comment).
KeyField SplitPath(std::string_view path);
// Inverse of SplitPath: key if field is empty, else key + "." + field.
std::string JoinKeyField(std::string_view key, std::string_view field);

}  // namespace ds
