// The names and parsers of a replay's choices (bench/replay/replay.h): one table per enum, so the
// word a report prints and the word a flag takes are the same.
#include <fmt/format.h>

#include <array>
#include <string>
#include <utility>

#include "bench/replay/replay.h"

namespace ds::bench {

namespace {

template <typename E, size_t N>
using Table = std::array<std::pair<E, const char*>, N>;

constexpr Table<ReplayMode, 2> kModes{{{ReplayMode::kMap, "map"}, {ReplayMode::kStream, "stream"}}};
constexpr Table<CacheState, 2> kCaches{{{CacheState::kCold, "cold"}, {CacheState::kWarm, "warm"}}};
constexpr Table<OnError, 2> kOnErrors{{{OnError::kStop, "stop"}, {OnError::kSkip, "skip"}}};
constexpr Table<Loader, 2> kLoaders{{{Loader::kModel, "model"}, {Loader::kTorch, "torch"}}};

template <typename E, size_t N>
const char* NameIn(const Table<E, N>& t, E e) {
  for (const auto& [v, name] : t) {
    if (v == e) return name;
  }
  return "?";
}

// "`field`: a or b" when s is none of the table's names.
template <typename E, size_t N>
Result<E> ParseIn(const Table<E, N>& t, std::string_view field, std::string_view s) {
  std::string choices;
  for (size_t i = 0; i < N; ++i) {
    if (t[i].second == s) return t[i].first;
    choices += i == 0 ? "" : i + 1 == N ? " or " : ", ";
    choices += t[i].second;
  }
  return Status(Code::kInvalidArgument, fmt::format("`{}`: {} (not '{}')", field, choices, s));
}

}  // namespace

const char* Name(ReplayMode m) { return NameIn(kModes, m); }
const char* Name(CacheState c) { return NameIn(kCaches, c); }
const char* Name(OnError e) { return NameIn(kOnErrors, e); }
const char* Name(Loader l) { return NameIn(kLoaders, l); }
Result<ReplayMode> ParseReplayMode(std::string_view s) { return ParseIn(kModes, "mode", s); }
Result<CacheState> ParseCacheState(std::string_view s) { return ParseIn(kCaches, "cache", s); }
Result<OnError> ParseOnError(std::string_view s) { return ParseIn(kOnErrors, "on_error", s); }
Result<Loader> ParseLoader(std::string_view s) { return ParseIn(kLoaders, "loader", s); }

}  // namespace ds::bench
