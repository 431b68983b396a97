#include "formats/native/native_run.h"

#include <fmt/format.h>

#include "formats/native/native_shard.h"

namespace ds::native {

using nlohmann::json;

Result<std::vector<std::string>> ListDir(Storage& storage, const std::string& dir) {
  DS_ASSIGN_OR_RETURN(std::vector<DirEntry> entries, storage.List(dir));
  std::vector<std::string> names;
  names.reserve(entries.size());
  for (auto& e : entries) names.push_back(std::move(e.name));
  return names;
}

json MetaJson(const FileMeta& m) {
  return {{"name", m.name},
          {"size", m.size},
          {"xxh3", m.xxh3},
          {"samples", m.samples},
          {"first_sample", m.first_sample}};
}

FileMeta MetaFromJson(const json& j) {
  return {j.at("name"), j.at("size"), j.at("samples"), j.at("first_sample"), j.at("xxh3")};
}

Result<bool> CheckRunRecord(Storage& storage, const std::string& out, const json& run) {
  auto recorded = ReadAll(storage, out + "/" + kRunName);
  if (!recorded.ok()) return false;
  json old;
  try {
    old = json::parse(*recorded);
  } catch (const std::exception&) {
    return false;  // torn write of the run file itself: nothing was checkpointed yet
  }
  if (old == run) return true;
  std::string what = old.value("options", json()) != run.value("options", json())
                         ? "the options differ"
                         : "the source changed (its file list differs)";
  return Status(Code::kInvalidArgument,
                fmt::format("{}: cannot resume: {} from the interrupted run; rerun with the "
                            "same SRC and options, or pass `existing=replace` to start over",
                            out, what));
}

std::vector<json> ReadJournal(Storage& storage, const std::string& path) {
  std::vector<json> lines;
  auto text = ReadAll(storage, path);
  if (!text.ok()) return lines;
  size_t pos = 0;
  while (pos < text->size()) {
    size_t nl = text->find('\n', pos);
    if (nl == std::string::npos) break;
    try {
      lines.push_back(json::parse(text->substr(pos, nl - pos)));
    } catch (const std::exception&) {
      break;
    }
    pos = nl + 1;
  }
  return lines;
}

bool ShardInPlace(Storage& storage, const std::string& out, const FileMeta& meta) {
  auto st = storage.Stat(out + "/" + meta.name, /*follow=*/true);
  return st.ok() && st->size == meta.size;
}

Status ReadShardRecords(Storage& storage, const std::string& out, const FileMeta& meta,
                        const std::function<Status(uint64_t, uint64_t, const RecordHead&)>& fn) {
  DS_ASSIGN_OR_RETURN(ShardReader r, ShardReader::Open(storage, out + "/" + meta.name, meta.name));
  if (r.record_count() != meta.samples || r.header().first_sample != meta.first_sample) {
    return Status(Code::kCorruption, fmt::format("{}: does not match its checkpoint; use "
                                                 "`existing=replace` to start over",
                                                 meta.name));
  }
  for (uint64_t k = 0; k < r.record_count(); k++) {
    DS_ASSIGN_OR_RETURN(RecordHead h, r.ReadHead(k));
    DS_RETURN_IF_ERROR(fn(r.index()[k].offset, r.index()[k].length, h));
  }
  return Status::Ok();
}

}  // namespace ds::native
