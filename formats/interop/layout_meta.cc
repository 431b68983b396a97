#include "formats/interop/layout_meta.h"

#include <dirent.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include "formats/interop/sample_crc.h"
#include "formats/out_dir.h"
#include "src/checksum.h"
#include "src/fd.h"
#include "src/human.h"
#include "src/json_number.h"

namespace ds {

using nlohmann::json;

std::string LayoutMeta::ToJson() const {
  json j;
  j["format"] = FormatName(format);
  j["version"] = version;
  j["created_by"] = std::string("dspack ") + DSPACK_VERSION;
  j["samples"] = samples;
  j["payload_bytes"] = payload_bytes;
  j["label_field"] = label_field;
  j["shards"] = json::array();
  for (const auto& s : shards) {
    j["shards"].push_back({{"name", s.name},
                           {"bytes", s.size},
                           {"samples", s.samples},
                           {"first_sample", s.first_sample},
                           {"xxh3", HexU64(s.xxh3)}});
  }
  if (!files.empty()) {
    j["files"] = json::array();
    for (const auto& f : files) {
      j["files"].push_back({{"name", f.name}, {"bytes", f.size}, {"xxh3", HexU64(f.xxh3)}});
    }
  }
  j["skipped"] = skipped;
  j["creation_options"] = creation_options;
  for (auto it = extra.begin(); it != extra.end(); ++it) j[it.key()] = it.value();
  return j.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

Result<LayoutMeta> LayoutMeta::Load(const std::string& dir, Storage& storage) {
  std::string path = dir + "/" + kLayoutMetaName;
  auto text = ReadAll(storage, path);
  if (!text.ok()) {
    if (text.status().err() != ENOENT) return text.status();
    if (storage.Stat(dir + "/" + kSampleCrcName).ok()) {
      return Status(Code::kCorruption,
                    fmt::format("{}: missing, but {} is here: dspack wrote this dataset and its "
                                "commit point was deleted, or the convert was killed before "
                                "it; restore it or reconvert",
                                path, kSampleCrcName));
    }
    return Status(Code::kNotFound, path + ": not found");
  }
  auto bad = [&](const std::string& why) {
    return Status(Code::kCorruption, fmt::format("{}: {}; the dataset metadata is damaged, "
                                                 "reconvert the dataset",
                                                 path, why));
  };
  json j = json::parse(*text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return bad("not valid JSON");
  try {
    LayoutMeta m;
    auto f = ParseFormat(j.at("format").get<std::string>());
    if (!f.ok() || *f == Format::kNative) return bad("unknown format");
    m.format = *f;
    m.version = JsonIntAt<uint32_t>(j, "version");
    if (m.version != 1) return bad(fmt::format("version {} is newer than this dspack", m.version));
    m.samples = JsonIntAt<uint64_t>(j, "samples");
    m.payload_bytes = JsonIntOr<uint64_t>(j, "payload_bytes", 0);
    m.label_field = j.value("label_field", std::string());
    for (const auto& s : j.at("shards")) {
      native::FileMeta fm;
      fm.name = s.at("name").get<std::string>();
      if (fm.name.empty() || fm.name.find('/') != std::string::npos || fm.name[0] == '.') {
        return bad("shard name '" + EscapeBytes(fm.name) + "' is not a plain file name");
      }
      fm.size = JsonIntAt<uint64_t>(s, "bytes");
      fm.samples = JsonIntAt<uint64_t>(s, "samples");
      fm.first_sample = JsonIntAt<uint64_t>(s, "first_sample");
      fm.xxh3 = std::stoull(s.at("xxh3").get<std::string>(), nullptr, 16);
      m.shards.push_back(std::move(fm));
    }
    for (const auto& s : j.value("files", json::array())) {
      native::FileMeta fm;
      fm.name = s.at("name").get<std::string>();
      if (fm.name.empty() || fm.name.find('/') != std::string::npos || fm.name[0] == '.') {
        return bad("file name '" + EscapeBytes(fm.name) + "' is not a plain file name");
      }
      fm.size = JsonIntAt<uint64_t>(s, "bytes");
      fm.xxh3 = std::stoull(s.at("xxh3").get<std::string>(), nullptr, 16);
      m.files.push_back(std::move(fm));
    }
    m.skipped = j.value("skipped", json::array());
    m.creation_options = j.value("creation_options", json::object());
    for (const char* k : {"lmdb_layout", "schema"}) {
      if (j.contains(k)) m.extra[k] = j[k];
    }
    return m;
  } catch (const std::exception& e) {
    return bad(std::string("missing or mistyped field (") + e.what() + ")");
  }
}

bool IsInteropFile(std::string_view name) {
  return MatchesLayoutFile(
      name,
      {kLayoutMetaName, kSampleCrcName, "classes.txt", "data.mdb", "lock.mdb", "data.mdb-lock"},
      {".tar", ".tfrecord", ".rec", ".idx", ".lst", ".dsidx"});
}

Result<OutDirState> PrepareInteropDir(Storage& storage, const std::string& out, Format format,
                                      const CommonWriterOptions& options) {
  const OutDirSpec spec{FormatName(format), kLayoutMetaName, IsInteropFile, /*can_resume=*/false};
  return PrepareOutputDir(storage, out, spec, options.existing, options.replace_in_place);
}

Result<std::optional<DatasetFiles>> ListInteropFiles(const StorageRef& at) {
  if (!at.storage->Stat(at.path + "/" + kLayoutMetaName, true).ok()) {
    return std::optional<DatasetFiles>();
  }
  DS_ASSIGN_OR_RETURN(LayoutMeta m, LayoutMeta::Load(at.path, *at.storage));
  DatasetFiles files;
  files.commit_point = kLayoutMetaName;
  for (const auto& f : m.shards) {
    files.shards.push_back({f.name, f.size, f.samples, f.first_sample, f.xxh3});
  }
  return std::optional<DatasetFiles>(std::move(files));
}

void ListMetaFile(LayoutMeta* meta, const std::string& name, std::string_view content) {
  native::FileMeta f;
  f.name = name;
  f.size = content.size();
  f.xxh3 = Xxh3_64(content);
  meta->files.push_back(std::move(f));
}

void VerifyMetaFiles(const std::string& dir, const LayoutMeta& meta, Storage& storage,
                     std::vector<std::string>* problems) {
  for (const auto& f : meta.files) {
    std::string path = storage.Uri(dir + "/" + f.name);
    auto text = ReadAll(storage, dir + "/" + f.name);
    if (!text.ok()) {
      problems->push_back(text.status().err() == ENOENT
                              ? fmt::format("{}: missing ({} lists it); restore it or reconvert",
                                            path, kLayoutMetaName)
                              : text.status().message());
    } else if (text->size() != f.size || Xxh3_64(*text) != f.xxh3) {
      problems->push_back(fmt::format(
          "{}: {} bytes, XXH3 {}; {} says {} bytes, {}: the file "
          "changed after it was written",
          path, text->size(), HexU64(Xxh3_64(*text)), kLayoutMetaName, f.size, HexU64(f.xxh3)));
    }
  }
}

Result<std::vector<std::string>> LoadClasses(const std::string& dir, Storage& storage) {
  auto text = ReadAll(storage, dir + "/classes.txt");
  if (!text.ok()) {
    if (text.status().err() == ENOENT) return std::vector<std::string>{};
    return text.status();
  }
  std::vector<std::string> names;
  size_t pos = 0;
  while (pos < text->size()) {
    size_t nl = text->find('\n', pos);
    if (nl == std::string::npos) nl = text->size();
    names.push_back(text->substr(pos, nl - pos));
    pos = nl + 1;
  }
  return names;
}

Status CommitLayoutMeta(Storage& storage, const std::string& dir,
                        const std::vector<std::string>& classes, const std::vector<uint32_t>& crcs,
                        LayoutMeta* meta, std::vector<std::string>* created) {
  auto write = [&](const std::string& name, const std::string& content) -> Status {
    std::string path = dir + "/" + name;
    DS_RETURN_IF_ERROR(WriteAll(storage, path, content));
    created->push_back(path);
    if (name != kLayoutMetaName) ListMetaFile(meta, name, content);
    return Status::Ok();
  };
  if (!classes.empty()) {
    std::string text;
    for (const auto& n : classes) text += n + "\n";
    DS_RETURN_IF_ERROR(write("classes.txt", text));
  }
  DS_RETURN_IF_ERROR(write(kSampleCrcName, EncodeSampleCrcs(crcs)));
  DS_RETURN_IF_ERROR(write(kLayoutMetaName, meta->ToJson()));
  return storage.SyncDir(dir);
}

}  // namespace ds
