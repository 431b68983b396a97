// The one codec of the results a rank sends to the job's root under mpirun (docs/mpi.md): io's
// RankIo, meta's RankMeta, replay's RankReplay. A struct names each field it sends once, in a
// specialisation of Wire<T>:
//
//   template <> struct Wire<RankMeta> {
//     static constexpr auto fields = std::make_tuple(WireField{"rank", &RankMeta::rank}, ...);
//   };
//
// and EncodeWire and DecodeWire both walk that list, so the two ends cannot drift apart. A field
// is a number, a bool, a string, an enum (sent as its integer), a LatencyHistogram (the one
// histogram codec, HistogramWire), a std::vector of fields, or a struct with a Wire of its own.
// Decoding wants every listed field, with its type: otherwise kCorruption "a rank's WHAT
// results: ..." naming the field. Lossless for what is listed; what is not listed is not sent.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <vector>

#include "bench/common/latency_report.h"
#include "src/status.h"

namespace ds::bench {

template <class T, class M>
struct WireField {
  const char* name;
  M T::*member;
};

template <class T>
struct Wire;  // specialised by each struct sent: static constexpr auto fields

namespace wire_detail {

template <class T, class = void>
struct HasWire : std::false_type {};
template <class T>
struct HasWire<T, std::void_t<decltype(Wire<T>::fields)>> : std::true_type {};

template <class T>
nlohmann::json To(const T& v);
template <class T>
Status From(const nlohmann::json& j, T* v, const std::string& field);

template <class T>
nlohmann::json To(const std::vector<T>& v) {
  nlohmann::json a = nlohmann::json::array();
  for (const T& x : v) a.push_back(To(x));
  return a;
}

template <class T>
Status From(const nlohmann::json& j, std::vector<T>* v, const std::string& field) {
  if (!j.is_array()) return Status(Code::kCorruption, field + ": not a list");
  v->clear();
  for (size_t i = 0; i < j.size(); i++) {
    T x{};
    DS_RETURN_IF_ERROR(From(j[i], &x, field + "[" + std::to_string(i) + "]"));
    v->push_back(std::move(x));
  }
  return Status::Ok();
}

template <class T>
nlohmann::json To(const T& v) {
  if constexpr (std::is_same_v<T, LatencyHistogram>) {
    return HistogramWire(v);
  } else if constexpr (HasWire<T>::value) {
    nlohmann::json j = nlohmann::json::object();
    std::apply([&](const auto&... f) { ((j[f.name] = To(v.*(f.member))), ...); }, Wire<T>::fields);
    return j;
  } else if constexpr (std::is_enum_v<T>) {
    return static_cast<std::underlying_type_t<T>>(v);
  } else {
    return nlohmann::json(v);
  }
}

template <class T>
Status From(const nlohmann::json& j, T* v, const std::string& field) {
  if constexpr (std::is_same_v<T, LatencyHistogram>) {
    return HistogramFromWire(j, v).Prefixed(field);
  } else if constexpr (HasWire<T>::value) {
    if (!j.is_object()) return Status(Code::kCorruption, field + ": not an object");
    Status s;
    std::apply(
        [&](const auto&... f) {
          auto one = [&](const auto& fld) {
            if (!s.ok()) return;
            std::string name = field.empty() ? fld.name : field + "." + fld.name;
            auto it = j.find(fld.name);
            s = it == j.end() ? Status(Code::kCorruption, name + ": missing")
                              : From(*it, &(v->*(fld.member)), name);
          };
          (one(f), ...);
        },
        Wire<T>::fields);
    return s;
  } else {
    try {
      if constexpr (std::is_enum_v<T>) {
        *v = static_cast<T>(j.get<std::underlying_type_t<T>>());
      } else {
        *v = j.get<T>();
      }
    } catch (const nlohmann::json::exception&) {
      return Status(Code::kCorruption, field + ": of the wrong type");
    }
    return Status::Ok();
  }
}

}  // namespace wire_detail

template <class T>
std::string EncodeWire(const T& v) {
  return wire_detail::To(v).dump();
}

// `what` names the results in messages: "io", "meta", "replay".
template <class T>
Result<T> DecodeWire(std::string_view text, std::string_view what) {
  std::string prefix = "a rank's " + std::string(what) + " results";
  nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return Status(Code::kCorruption, prefix + ": not JSON");
  T v{};
  DS_RETURN_IF_ERROR(wire_detail::From(j, &v, std::string()).Prefixed(prefix));
  return v;
}

}  // namespace ds::bench
