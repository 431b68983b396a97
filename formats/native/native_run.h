// The native writer's run record and journals (docs/formats/native.md#crash-safety-and-resume),
// shared by the sequential writer (native_dataset_writer.cc) and the partitioned one
// (native_part_writer.cc). Internal to formats/native.
//
// OUT/.dspack-run.json holds the run (creation options + source fingerprint) as one JSON line;
// OUT/.dspack-journal (one writer) or OUT/.dspack-journal.<part> (a partitioned job) hold a
// checkpoint line per shard renamed into place: {"shard": {name, size, xxh3, samples,
// first_sample}, ...}. A torn last line is ignored.
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "formats/native/manifest.h"
#include "formats/native/native_format.h"
#include "src/status.h"
#include "src/storage.h"

namespace ds::native {

inline constexpr const char* kRunName = ".dspack-run.json";
inline constexpr const char* kJournalName = ".dspack-journal";

// The names in dir (through storage), without "." and "..".
Result<std::vector<std::string>> ListDir(Storage& storage, const std::string& dir);

nlohmann::json MetaJson(const FileMeta& m);
FileMeta MetaFromJson(const nlohmann::json& j);

// Whether OUT records this run: true when its run record equals `run`, false when there is
// none (or a torn one: nothing was checkpointed under it); kInvalidArgument naming what differs
// (options, or the source's file list) when another run is recorded.
Result<bool> CheckRunRecord(Storage& storage, const std::string& out, const nlohmann::json& run);

// The complete checkpoint lines of a journal file, in order (none when it is missing).
std::vector<nlohmann::json> ReadJournal(Storage& storage, const std::string& path);

// Whether OUT/<meta.name> is in place with the size its checkpoint recorded.
bool ShardInPlace(Storage& storage, const std::string& out, const FileMeta& meta);

// Reads back a finished shard's records for the global index: fn(offset, length, head) per
// record, after checking the file is the checkpointed one (record count, first sample).
Status ReadShardRecords(Storage& storage, const std::string& out, const FileMeta& meta,
                        const std::function<Status(uint64_t, uint64_t, const RecordHead&)>& fn);

}  // namespace ds::native
