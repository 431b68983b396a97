#include "formats/native/manifest.h"

#include <fmt/format.h>

#include "formats/native/native_format.h"
#include "src/checksum.h"
#include "src/fd.h"
#include "src/json_number.h"

namespace ds::native {

using nlohmann::json;

std::string ShardName(uint64_t n) { return fmt::format("shard-{:06d}.dsr", n); }

static json FileJson(const FileMeta& f, bool with_samples) {
  json j = {{"name", f.name}, {"size", f.size}, {"xxh3", HexU64(f.xxh3)}};
  if (with_samples) {
    j["samples"] = f.samples;
    j["first_sample"] = f.first_sample;
  }
  return j;
}

std::string Manifest::ToJson() const {
  json j;
  j["format"] = kFormatName;
  j["version"] = version;
  j["created_by"] = created_by;
  j["options"] = options;
  j["align"] = align;
  j["shard_size"] = shard_size;
  j["samples"] = samples;
  j["payload_bytes"] = payload_bytes;
  j["shards"] = json::array();
  for (const auto& s : shards) j["shards"].push_back(FileJson(s, true));
  j["index"] = FileJson(index, false);
  j["labels"] = label_field.empty() ? json(nullptr)
                                    : json{{"field", label_field},
                                           {"classes", class_count},
                                           {"file", kClassesName},
                                           {"xxh3", HexU64(classes_xxh3)}};
  j["skipped"] = skipped;
  // Paths in "skipped" may not be UTF-8: replace invalid bytes rather than fail.
  return j.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

static Result<FileMeta> ParseFile(const json& j, bool with_samples) {
  FileMeta f;
  f.name = j.at("name").get<std::string>();
  f.size = JsonIntAt<uint64_t>(j, "size");
  f.xxh3 = std::stoull(j.at("xxh3").get<std::string>(), nullptr, 16);
  if (with_samples) {
    f.samples = JsonIntAt<uint64_t>(j, "samples");
    f.first_sample = JsonIntAt<uint64_t>(j, "first_sample");
  }
  if (f.name.empty() || f.name.find('/') != std::string::npos || f.name[0] == '.') {
    return Status(Code::kCorruption, "invalid file name '" + f.name + "'");
  }
  return f;
}

Result<Manifest> Manifest::Parse(const std::string& text, const std::string& what) {
  Manifest m;
  try {
    json j = json::parse(text);
    if (j.at("format").get<std::string>() != kFormatName) {
      return Status(Code::kCorruption, what + ": not a dspack-native manifest");
    }
    m.version = JsonIntAt<uint32_t>(j, "version");
    if (m.version != kFormatVersion) {
      return Status(Code::kUnsupported, fmt::format("{}: format version {}; this dspack reads "
                                                    "version {}",
                                                    what, m.version, kFormatVersion));
    }
    m.created_by = j.value("created_by", "");
    m.options = j.value("options", json::object());
    m.align = JsonIntAt<uint32_t>(j, "align");
    m.shard_size = JsonIntAt<uint64_t>(j, "shard_size");
    m.samples = JsonIntAt<uint64_t>(j, "samples");
    m.payload_bytes = JsonIntAt<uint64_t>(j, "payload_bytes");
    uint64_t next = 0;
    for (const auto& s : j.at("shards")) {
      DS_ASSIGN_OR_RETURN(FileMeta f, ParseFile(s, true));
      if (f.first_sample != next) {
        return Status(Code::kCorruption, fmt::format("{}: shard {} first_sample {} (expected {})",
                                                     what, f.name, f.first_sample, next));
      }
      next += f.samples;
      m.shards.push_back(std::move(f));
    }
    if (next != m.samples) {
      return Status(Code::kCorruption, fmt::format("{}: shards hold {} samples, manifest says {}",
                                                   what, next, m.samples));
    }
    DS_ASSIGN_OR_RETURN(m.index, ParseFile(j.at("index"), false));
    if (j.contains("labels") && !j["labels"].is_null()) {
      m.label_field = j["labels"].at("field").get<std::string>();
      m.class_count = JsonIntAt<uint64_t>(j["labels"], "classes");
      m.classes_xxh3 = std::stoull(j["labels"].at("xxh3").get<std::string>(), nullptr, 16);
    }
    m.skipped = j.value("skipped", json::array());
  } catch (const std::exception& e) {
    return Status(Code::kCorruption, what + ": malformed manifest: " + e.what());
  }
  return m;
}

Result<Manifest> Manifest::Load(const std::string& dir) { return Load(*LocalStorage(), dir); }

Result<Manifest> Manifest::Load(Storage& storage, const std::string& dir) {
  std::string path = dir + "/" + kManifestName;
  auto text = ReadAll(storage, path);
  if (!text.ok()) {
    if (text.status().code() == Code::kNotFound) {
      return Status(Code::kNotFound,
                    path + ": no manifest; " + dir + " is not a finished dspack dataset");
    }
    return text.status();
  }
  return Parse(*text, path);
}

}  // namespace ds::native
