// ShardedWriter as a PartitionedWriter (formats/interop/sharded_writer.h has the contract,
// docs/mpi.md#partitioned-packing the user's view): wds, tfrecord and recordio written by the
// processes of a job, byte-identical to one writer's output.
//
// The plan replays BeginSample's roll rule (RollsBefore over PlannedSize), and a part numbers
// its shards and samples as the plan does, so every shard, sidecar and record id is what one
// writer would write. The root lists every part's shards and sidecars in dspack.json in shard
// order, and concatenates their per-sample CRC32Cs into dspack.crc.
#include <fmt/format.h>
#include <unistd.h>

#include "formats/interop/sharded_writer.h"

namespace ds {

using nlohmann::json;

namespace {

json FileJson(const native::FileMeta& m) {
  return {{"name", m.name},
          {"size", m.size},
          {"samples", m.samples},
          {"first", m.first_sample},
          {"xxh3", m.xxh3}};
}

native::FileMeta FileFromJson(const json& j) {
  native::FileMeta m;
  m.name = j.at("name").get<std::string>();
  m.size = j.at("size").get<uint64_t>();
  m.samples = j.at("samples").get<uint64_t>();
  m.first_sample = j.at("first").get<uint64_t>();
  m.xxh3 = j.at("xxh3").get<uint64_t>();
  return m;
}

}  // namespace

Status ShardedWriter::Broken(const std::string& what) { return PartitionedWriteBug(out_, what); }

// BeginSample's roll rule (RollsBefore over PlannedSize) on the planned shapes.
Result<std::vector<uint64_t>> ShardedWriter::PlanShards(uint64_t n, const ShapeFn& shape) const {
  uint64_t fill = 0, samples = 0;  // the shard being planned
  return PlanShardStarts(
      n, shape, [&](const std::string& key, const std::vector<FieldInfo>& fields) -> Result<bool> {
        uint64_t planned = PlannedSize(key, fields);
        bool roll = RollsBefore(fill, samples, planned);
        if (roll) fill = samples = 0;
        fill += planned;
        samples++;
        return roll;
      });
}

Result<std::string> ShardedWriter::BeginJob(const json&) {
  // Nothing to record and nothing to resume: PrepareInteropDir refused existing=resume.
  return std::string();
}

Result<std::vector<std::pair<uint64_t, uint64_t>>> ShardedWriter::BeginPart(
    std::vector<uint64_t> starts, uint64_t first, uint64_t last, const std::string&, int) {
  if (samples_ > 0 || shard_ || !meta_.shards.empty()) {
    return Fail(Broken("BeginPart after samples were written"));
  }
  if (starts.size() < 2 || first > last || last >= starts.size()) {
    return Fail(
        Broken(fmt::format("shards [{}, {}) of a plan of {}", first, last, starts.size() - 1)));
  }
  part_ = std::make_unique<Part>(Part{std::move(starts), first, last});
  samples_ = part_->starts[first];  // sample numbers are the job's (RecordIO's ids)
  std::vector<std::pair<uint64_t, uint64_t>> todo;
  if (part_->starts[first] < part_->starts[last]) {
    todo.emplace_back(part_->starts[first], part_->starts[last]);
  }
  return todo;
}

Result<std::string> ShardedWriter::FinishPart() {
  DS_RETURN_IF_ERROR(status_);
  if (!part_) return Fail(Broken("FinishPart without BeginPart"));
  if (part_->first < part_->last) DS_RETURN_IF_ERROR(Fail(EmptyShard()));
  const auto& st = part_->starts;
  if (meta_.shards.size() != part_->last - part_->first || samples_ != st[part_->last]) {
    return Fail(Broken(
        fmt::format("this part wrote {} shards up to sample {}, the plan {} up to {}",
                    meta_.shards.size(), samples_, part_->last - part_->first, st[part_->last])));
  }
  json shards = json::array(), files = json::array();
  for (const auto& m : meta_.shards) shards.push_back(FileJson(m));
  for (const auto& m : meta_.files) files.push_back(FileJson(m));
  json part = {{"shards", shards},
               {"files", files},
               {"crcs", crcs_},
               {"payload", payload_bytes_},
               {"bytes", bytes_written_}};
  done_ = true;  // the root commits it; Abandon (a failed job) still removes it
  return part.dump();
}

Status ShardedWriter::CommitParts(const std::vector<std::string>& parts, LayoutSummary* summary) {
  DS_RETURN_IF_ERROR(status_);
  if (!part_) return Fail(Broken("CommitParts without BeginPart"));
  meta_.shards.clear();
  meta_.files.clear();
  crcs_.clear();
  payload_bytes_ = bytes_written_ = 0;
  try {
    for (size_t p = 0; p < parts.size(); p++) {
      json j = json::parse(parts[p]);
      for (const json& m : j.at("shards")) meta_.shards.push_back(FileFromJson(m));
      for (const json& m : j.at("files")) meta_.files.push_back(FileFromJson(m));
      for (const json& c : j.at("crcs")) crcs_.push_back(c.get<uint32_t>());
      payload_bytes_ += j.at("payload").get<uint64_t>();
      bytes_written_ += j.at("bytes").get<uint64_t>();
    }
  } catch (const std::exception& e) {
    return Fail(Broken(std::string("a part's description: ") + e.what()));
  }
  const auto& st = part_->starts;
  uint64_t next = 0;
  for (const auto& m : meta_.shards) {
    if (m.name != fmt::format("shard-{:06d}{}", next, ext_) || m.first_sample != st[next] ||
        m.samples != st[next + 1] - st[next]) {
      return Fail(Broken(fmt::format("the parts' shard {} is not the plan's", next)));
    }
    next++;
  }
  if (next + 1 != st.size() || crcs_.size() != st.back()) {
    return Fail(Broken(fmt::format("the parts hold {} shards and {} samples, the plan {} and {}",
                                   next, crcs_.size(), st.size() - 1, st.back())));
  }
  meta_.samples = st.back();
  meta_.payload_bytes = payload_bytes_;
  // Every part's shard, seen here with its size, or the commit is refused (OUT not shared).
  return CommitDataset(summary);
}

}  // namespace ds
