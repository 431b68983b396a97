#include "formats/schema.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <set>

#include "src/human.h"

namespace ds {

std::string_view SchemaName(SchemaKind k) {
  switch (k) {
    case SchemaKind::kRaw:
      return "raw";
    case SchemaKind::kImagenet:
      return "imagenet";
    case SchemaKind::kMap:
      return "map";
  }
  return "raw";
}

Result<SchemaKind> ParseSchemaKind(std::string_view name) {
  for (auto k : {SchemaKind::kRaw, SchemaKind::kImagenet, SchemaKind::kMap}) {
    if (name == SchemaName(k)) return k;
  }
  return Status(
      Code::kInvalidArgument,
      fmt::format("`schema` '{}': must be 'raw', 'imagenet' or 'map'", EscapeBytes(name)));
}

Status Schema::Validate(Format f) const {
  if (kind != SchemaKind::kRaw && f == Format::kNative) {
    return Status(Code::kInvalidArgument,
                  fmt::format("`schema` {} does not apply to native: native shards keep the "
                              "source's field names (schemas are for wds, tfrecord, recordio, "
                              "lmdb)",
                              SchemaName(kind)));
  }
  if (kind == SchemaKind::kMap && rules.empty()) {
    return Status(Code::kInvalidArgument, "`schema` map needs a `field_map`");
  }
  if (kind != SchemaKind::kMap && !rules.empty()) {
    return Status(Code::kInvalidArgument,
                  fmt::format("`field_map` is its own schema; drop `schema` {}", SchemaName(kind)));
  }
  // Several names may map to one (JPEG and png both to image/encoded): a sample holding two of
  // them is refused when it comes.
  std::set<std::string> from;
  for (const auto& r : rules) {
    if (!from.insert(r.from).second) {
      return Status(Code::kInvalidArgument,
                    fmt::format("`field_map`: '{}' is mapped twice; map each name once",
                                EscapeBytes(r.from)));
    }
  }
  if (f == Format::kRecordio || f == Format::kLmdb) {
    for (const auto& r : rules) {
      if (r.type == FieldType::kInt64 && f == Format::kRecordio) {
        return Status(Code::kInvalidArgument,
                      "`field_map`: RecordIO has no typed fields (its label is IRHeader's float)");
      }
    }
  }
  return Status::Ok();
}

Result<std::vector<FieldRule>> ParseFieldMap(std::string_view spec) {
  std::vector<FieldRule> out;
  auto bad = [&](std::string_view item, std::string_view why) {
    return Status(Code::kInvalidArgument,
                  fmt::format("`field_map` '{}': {} (write FROM=TO[:int64], comma-separated, e.g. "
                              "JPEG=image/encoded,cls=image/class/label:int64)",
                              EscapeBytes(item), why));
  };
  size_t pos = 0;
  while (pos <= spec.size()) {
    size_t comma = spec.find(',', pos);
    std::string_view item =
        spec.substr(pos, comma == std::string_view::npos ? spec.npos : comma - pos);
    pos = comma == std::string_view::npos ? spec.size() + 1 : comma + 1;
    size_t eq = item.find('=');
    if (eq == std::string_view::npos) return bad(item, "no '='");
    FieldRule r{std::string(item.substr(0, eq)), std::string(item.substr(eq + 1))};
    if (size_t colon = r.to.rfind(':'); colon != std::string::npos) {
      std::string type = r.to.substr(colon + 1);
      r.to.resize(colon);
      if (type == "int64") {
        r.type = FieldType::kInt64;
      } else if (type != "bytes") {
        return bad(item, fmt::format("type '{}' is not bytes or int64", EscapeBytes(type)));
      }
    }
    if (r.from.empty() || r.to.empty()) return bad(item, "an empty name");
    out.push_back(std::move(r));
  }
  return out;
}

namespace {

// Image file extensions, lower-case, with their normal form.
constexpr std::pair<std::string_view, std::string_view> kImageExts[] = {
    {"jpg", "jpg"},   {"jpeg", "jpg"}, {"png", "png"},  {"gif", "gif"}, {"bmp", "bmp"},
    {"webp", "webp"}, {"tif", "tif"},  {"tiff", "tif"}, {"ppm", "ppm"}, {"pgm", "pgm"}};

}  // namespace

std::optional<int64_t> ParseInt64(std::string_view s) {
  int64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

bool IsImageField(std::string_view name) {
  std::string l = AsciiLower(name);
  return std::any_of(std::begin(kImageExts), std::end(kImageExts),
                     [&](const auto& e) { return e.first == l; });
}

std::string NormalisedImageExt(std::string_view name) {
  std::string l = AsciiLower(name);
  for (const auto& [ext, normal] : kImageExts) {
    if (ext == l) return std::string(normal);
  }
  return l;
}

nlohmann::json SchemaRecord::ToJson() const {
  nlohmann::json j = {{"name", SchemaName(kind)}};
  if (!source_names.empty()) j["source_names"] = source_names;
  if (!derived.empty()) j["derived"] = derived;
  if (!int64_fields.empty()) j["int64"] = int64_fields;
  return j;
}

Result<SchemaRecord> SchemaRecord::FromJson(const nlohmann::json& j) {
  SchemaRecord r;
  try {
    DS_ASSIGN_OR_RETURN(r.kind, ParseSchemaKind(j.at("name").get<std::string>()));
    if (j.contains("source_names")) {
      r.source_names = j["source_names"].get<std::map<std::string, std::string>>();
    }
    if (j.contains("derived")) r.derived = j["derived"].get<std::vector<std::string>>();
    if (j.contains("int64")) r.int64_fields = j["int64"].get<std::vector<std::string>>();
  } catch (const nlohmann::json::exception& e) {
    return Status(Code::kCorruption, fmt::format("schema record: {}", e.what()));
  }
  return r;
}

std::vector<std::optional<std::string>> SourceFieldNames(const SchemaRecord& record,
                                                         std::span<const FieldInfo> fields,
                                                         std::string_view image_filename) {
  std::vector<std::optional<std::string>> out;
  for (const auto& f : fields) {
    if (std::find(record.derived.begin(), record.derived.end(), f.name) != record.derived.end()) {
      out.emplace_back();
    } else if (f.name == kTfImageEncoded && !image_filename.empty() &&
               record.kind == SchemaKind::kImagenet) {
      out.emplace_back(SplitPath(image_filename).field);
    } else if (auto it = record.source_names.find(f.name); it != record.source_names.end()) {
      out.emplace_back(it->second);
    } else {
      out.emplace_back(f.name);
    }
  }
  return out;
}

bool NeedsImageFilename(const SchemaRecord& record) {
  return std::find(record.derived.begin(), record.derived.end(), kTfImageFilename) !=
         record.derived.end();
}

}  // namespace ds
