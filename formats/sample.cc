#include "formats/sample.h"

namespace ds {

KeyField SplitPath(std::string_view path) {
  size_t base = path.rfind('/');
  base = base == std::string_view::npos ? 0 : base + 1;
  size_t dot = path.find('.', base);
  // No dot, a leading dot, or nothing after the first dot: the whole path is the key.
  if (dot == std::string_view::npos || dot == base || dot + 1 == path.size()) {
    return {path, std::string_view()};
  }
  return {path.substr(0, dot), path.substr(dot + 1)};
}

std::string JoinKeyField(std::string_view key, std::string_view field) {
  std::string out(key);
  if (!field.empty()) {
    out += '.';
    out += field;
  }
  return out;
}

}  // namespace ds
