#include "formats/layout_meta.h"

#include <dirent.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include "src/checksum.h"
#include "src/fd.h"
#include "src/human.h"

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
  j["skipped"] = skipped;
  j["creation_options"] = creation_options;
  for (auto it = extra.begin(); it != extra.end(); ++it) j[it.key()] = it.value();
  return j.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

Result<LayoutMeta> LayoutMeta::Load(const std::string& dir) {
  std::string path = dir + "/" + kLayoutMetaName;
  auto text = ReadWholeFile(path);
  if (!text.ok()) {
    if (text.status().err() == ENOENT) return Status(Code::kNotFound, path + ": not found");
    return text.status();
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
    m.version = j.at("version").get<uint32_t>();
    if (m.version != 1) return bad(fmt::format("version {} is newer than this dspack", m.version));
    m.samples = j.at("samples").get<uint64_t>();
    m.payload_bytes = j.value("payload_bytes", uint64_t{0});
    m.label_field = j.value("label_field", std::string());
    for (const auto& s : j.at("shards")) {
      native::FileMeta fm;
      fm.name = s.at("name").get<std::string>();
      if (fm.name.empty() || fm.name.find('/') != std::string::npos || fm.name[0] == '.') {
        return bad("shard name '" + EscapeBytes(fm.name) + "' is not a plain file name");
      }
      fm.size = s.at("bytes").get<uint64_t>();
      fm.samples = s.at("samples").get<uint64_t>();
      fm.first_sample = s.at("first_sample").get<uint64_t>();
      fm.xxh3 = std::stoull(s.at("xxh3").get<std::string>(), nullptr, 16);
      m.shards.push_back(std::move(fm));
    }
    m.skipped = j.value("skipped", json::array());
    m.creation_options = j.value("creation_options", json::object());
    if (j.contains("lmdb_layout")) m.extra["lmdb_layout"] = j["lmdb_layout"];
    return m;
  } catch (const std::exception& e) {
    return bad(std::string("missing or mistyped field (") + e.what() + ")");
  }
}

namespace {

bool EndsWith(std::string_view s, std::string_view suf) {
  return s.size() >= suf.size() && s.substr(s.size() - suf.size()) == suf;
}

bool IsLayoutFile(std::string_view name) {
  if (EndsWith(name, ".tmp")) name.remove_suffix(4);
  if (name == kLayoutMetaName || name == "classes.txt" || name == "data.mdb" ||
      name == "lock.mdb" || name == "data.mdb-lock") {
    return true;
  }
  if (name.rfind("shard-", 0) != 0) return false;
  for (std::string_view ext : {".tar", ".tfrecord", ".rec", ".idx", ".lst"}) {
    if (EndsWith(name, ext)) return true;
  }
  return false;
}

}  // namespace

Result<bool> PrepareLayoutDir(const std::string& out, bool force, bool resume) {
  if (resume) {
    return Status(Code::kInvalidArgument,
                  "--resume works for --format native only; rerun without --resume (and with "
                  "--force to replace the partial output)");
  }
  struct stat st;
  if (::stat(out.c_str(), &st) != 0) {
    if (errno != ENOENT) return Status::FromErrno(errno, out);
    std::error_code ec;
    std::filesystem::create_directories(out, ec);
    if (ec) return Status::FromErrno(ec.value(), "cannot create output directory " + out);
    return true;
  }
  if (!S_ISDIR(st.st_mode)) {
    return Status(Code::kAlreadyExists,
                  out + ": exists and is not a directory; choose a directory path for the dataset");
  }
  DIR* d = ::opendir(out.c_str());
  if (!d) return Status::FromErrno(errno, out);
  std::vector<std::string> ours;
  std::string foreign;
  while (dirent* e = ::readdir(d)) {
    std::string n = e->d_name;
    if (n == "." || n == "..") continue;
    if (IsLayoutFile(n)) {
      ours.push_back(n);
    } else if (foreign.empty()) {
      foreign = n;
    }
  }
  ::closedir(d);
  if (!foreign.empty()) {
    return Status(Code::kAlreadyExists,
                  fmt::format("{}: not empty (holds '{}', which dspack did not write); choose an "
                              "empty or new directory",
                              out, EscapeBytes(foreign)));
  }
  if (ours.empty()) return false;
  if (!force) {
    return Status(Code::kAlreadyExists,
                  out +
                      ": already holds a dataset (or a failed convert's files); pass --force "
                      "to replace it");
  }
  ::unlink((out + "/" + kLayoutMetaName).c_str());  // first: never claim a half-removed dataset
  for (const auto& n : ours) ::unlink((out + "/" + n).c_str());
  return false;
}

Result<std::vector<std::string>> LoadClasses(const std::string& dir) {
  auto text = ReadWholeFile(dir + "/classes.txt");
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

Status WriteClasses(const std::string& dir, const std::vector<std::string>& names) {
  std::string text;
  for (const auto& n : names) text += n + "\n";
  return WriteFileAtomic(dir + "/classes.txt", text);
}

}  // namespace ds
