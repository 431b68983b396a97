// Little-endian load/store helpers for on-disk formats (all dspack formats are little-endian).
#pragma once

#include <cstdint>
#include <cstring>
#include <string>

namespace ds {

inline uint16_t LoadLE16(const void* p) {
  uint16_t v;
  std::memcpy(&v, p, 2);
  return v;
}
inline uint32_t LoadLE32(const void* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
inline uint64_t LoadLE64(const void* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}
inline void StoreLE16(void* p, uint16_t v) { std::memcpy(p, &v, 2); }
inline void StoreLE32(void* p, uint32_t v) { std::memcpy(p, &v, 4); }
inline void StoreLE64(void* p, uint64_t v) { std::memcpy(p, &v, 8); }
inline void PutLE16(std::string* s, uint16_t v) { s->append(reinterpret_cast<const char*>(&v), 2); }
inline void PutLE32(std::string* s, uint32_t v) { s->append(reinterpret_cast<const char*>(&v), 4); }
inline void PutLE64(std::string* s, uint64_t v) { s->append(reinterpret_cast<const char*>(&v), 8); }

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "dspack assumes a little-endian host");

inline uint64_t AlignUp(uint64_t v, uint64_t align) {
  return align <= 1 ? v : (v + align - 1) / align * align;
}

}  // namespace ds
