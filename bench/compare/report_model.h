// What the compare report (bench/compare/report_html.h) is drawn from: compare's JSON read as a
// Model (layouts in ranking order, the (storage, cache) combinations in display order), the
// JSON accessors that tolerate a missing field, and the attributes every number carries.
// Internal to report_html.cc and report_charts.cc. Pure; no state.
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "bench/compare/svg.h"

namespace ds::bench::report {

using nlohmann::json;

inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
inline constexpr double kWide = 1140;  // full-width charts; the page is at most 1200 px

// The page's style sheet (report_css.cc).
const char* Css();

double Num(const json& j, const char* key);       // NaN when absent
std::string Str(const json& j, const char* key);  // "" when absent
const json& Arr(const json& j, const char* key);  // [] when absent
// A percentile from fio's block {"percentile": {"99.000000": ns, ...}}.
double Pct(const json& lat, double p);
std::string Seconds(double s);
std::string Percent(double f);
std::string PerSec(double v);

struct Combo {
  std::string storage, cache;
  std::string Label() const { return storage + " · " + cache; }
  bool Of(const json& j) const { return Str(j, "storage") == storage && Str(j, "cache") == cache; }
};

// The runs indexed by layout and (storage, cache), in display order.
struct Model {
  const json& c;
  std::vector<std::string> layouts;  // ranking order of the first combo, then first appearance
  std::vector<Combo> combos;         // local, slowfs, nfs; cold before warm

  explicit Model(const json& compare) : c(compare) {
    for (const json& r : Arr(c, "runs")) {
      Combo k{Str(r, "storage"), Str(r, "cache")};
      auto same = [&](const Combo& o) { return o.storage == k.storage && o.cache == k.cache; };
      if (std::none_of(combos.begin(), combos.end(), same)) combos.push_back(k);
    }
    auto rank = [](const Combo& k) {
      static const std::string kOrder[] = {"local/cold",  "local/warm", "slowfs/cold",
                                           "slowfs/warm", "nfs/cold",   "nfs/warm"};
      return std::find(std::begin(kOrder), std::end(kOrder), k.storage + "/" + k.cache) - kOrder;
    };
    std::stable_sort(combos.begin(), combos.end(),
                     [&](const Combo& a, const Combo& b) { return rank(a) < rank(b); });
    if (!combos.empty()) {
      for (const json& e : Arr(Ranking(combos[0]), "order")) AddLayout(Str(e, "layout"));
    }
    for (const json& r : Arr(c, "runs")) AddLayout(Str(r, "layout"));
  }
  void AddLayout(const std::string& l) {
    if (std::find(layouts.begin(), layouts.end(), l) == layouts.end()) layouts.push_back(l);
  }
  // The run at the most workers (the one ranked; the others are sweep points).
  const json* Run(const std::string& layout, const Combo& k) const {
    const json* best = nullptr;
    for (const json& r : Arr(c, "runs")) {
      if (Str(r, "layout") == layout && k.Of(r) &&
          (!best || Num(r, "workers") > Num(*best, "workers"))) {
        best = &r;
      }
    }
    return best;
  }
  const json& Ranking(const Combo& k) const {
    static const json kNone = json::object();
    for (const json& e : Arr(c, "ranking")) {
      if (k.Of(e)) return e;
    }
    return kNone;
  }
  std::string Colour(const std::string& layout) const {
    auto it = std::find(layouts.begin(), layouts.end(), layout);
    return svg::LayoutColour(layout, it - layouts.begin());
  }
};

// A number's data-key: layout/storage/cache/field.
std::string Key(const std::string& layout, const Combo& k, const char* field);

// Numeric attributes: the key always, the exact value when there is one.
std::string DataAttrs(const std::string& key, double v);

}  // namespace ds::bench::report
