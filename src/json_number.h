// Integers read from untrusted JSON (dspack.json, manifest.json, dssync's manifest).
//
// nlohmann's get<uint32_t>() of a number parsed as a float (1e30, or an integer too long for
// 64 bits) is a float-to-integer cast, undefined behaviour when out of range (found by
// tests/fuzz/fuzz_meta.cc, UBSan: "float-cast-overflow"); of a negative number it wraps. These
// accept only an integer that fits T and throw nlohmann's type_error otherwise, which the
// loaders already turn into "missing or mistyped field".
#pragma once

#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <type_traits>

namespace ds {

template <class T>
T JsonInt(const nlohmann::json& v, const char* what) {
  static_assert(std::is_integral_v<T>);
  bool fits = false;
  if (v.is_number_unsigned()) {
    fits = v.get<uint64_t>() <= static_cast<uint64_t>(std::numeric_limits<T>::max());
  } else if (v.is_number_integer()) {  // negative
    fits = std::is_signed_v<T> &&
           v.get<int64_t>() >= static_cast<int64_t>(std::numeric_limits<T>::min());
  }
  if (!fits) {
    throw nlohmann::json::type_error::create(
        302, std::string(what) + " must be an integer in range, not " + v.dump(), &v);
  }
  return v.get<T>();
}

// j[key], which must exist.
template <class T>
T JsonIntAt(const nlohmann::json& j, const char* key) {
  return JsonInt<T>(j.at(key), key);
}
// j[key] when present, else fallback.
template <class T>
T JsonIntOr(const nlohmann::json& j, const char* key, T fallback) {
  return j.contains(key) ? JsonInt<T>(j.at(key), key) : fallback;
}

}  // namespace ds
