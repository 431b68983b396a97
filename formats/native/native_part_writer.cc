// DatasetWriter as a PartitionedWriter (formats/layout.h): one native dataset written by the
// processes of a job (`mpirun dspack convert`, docs/mpi.md#partitioned-packing), byte-identical
// to one writer's output.
//
// The plan replays BeginSample's roll rule (ShardIsFull) over the record lengths the samples'
// shapes give, so shard k's samples, its header (number, first sample) and therefore its bytes
// are those of a single writer. While a part is written, each sample's place is checked against
// the plan: a shard the rule would cut elsewhere is a broken invariant (kInternal), never a
// silently different dataset. A part's description for the root is, per shard, six LE u64
// (number, size, xxh3, samples, first_sample, payload bytes) and three per record (offset,
// length, XXH3-64 of the key): what the global index and manifest need, in shard order.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "formats/native/native_dataset.h"
#include "formats/native/native_run.h"
#include "formats/out_dir.h"
#include "src/checksum.h"
#include "src/endian.h"

namespace ds::native {

using nlohmann::json;

namespace {

constexpr size_t kShardWords = 6, kEntryWords = 3;

Status Broken(const std::string& out, const std::string& what) {
  return PartitionedWriteBug(out, what);
}

}  // namespace

// AddRecord's roll rule (ShardIsFull over the aligned records) on the planned shapes.
Result<std::vector<uint64_t>> DatasetWriter::PlanShards(uint64_t n, const ShapeFn& shape) const {
  uint64_t size = kShardHeaderSize, records = 0;  // the shard being planned
  return PlanShardStarts(
      n, shape, [&](const std::string& key, const std::vector<FieldInfo>& fields) -> Result<bool> {
        DS_RETURN_IF_ERROR(CheckRecordShape(key, fields));
        uint64_t len = RecordLength(key, fields);
        bool roll = ShardIsFull(AlignUp(size, options_.align), records, len, options_.shard_size);
        if (roll) {
          size = kShardHeaderSize;
          records = 0;
        }
        size = AlignUp(size, options_.align) + len;
        records++;
        return roll;
      });
}

Result<std::string> DatasetWriter::BeginJob(const json& run) {
  bool have_run = false;
  if (resuming_) {
    DS_ASSIGN_OR_RETURN(have_run, CheckRunRecord(*storage_, out_, run));
  }
  // Every shard journaled by any process of an earlier run (or by a single writer), in place.
  json done = json::array();
  std::set<std::string> keep;
  if (have_run) {
    DS_ASSIGN_OR_RETURN(auto names, ListDir(*storage_, out_));
    std::sort(names.begin(), names.end());
    for (const auto& n : names) {
      if (n.rfind(kJournalName, 0) != 0) continue;
      for (const json& line : ReadJournal(*storage_, out_ + "/" + n)) {
        FileMeta m;
        try {
          m = MetaFromJson(line.at("shard"));
        } catch (const std::exception&) {
          continue;  // not a checkpoint line this version wrote
        }
        if (ShardInPlace(*storage_, out_, m) && keep.insert(m.name).second)
          done.push_back(MetaJson(m));
      }
    }
  }
  if (resuming_) {
    // As ResumeRun: keep the run record, the journals and the journaled shards; remove the rest
    // (temporary files, shards renamed before their checkpoint, a half-written commit).
    DS_ASSIGN_OR_RETURN(auto names, ListDir(*storage_, out_));
    for (const auto& n : names) {
      if (keep.count(n) || (have_run && (n == kRunName || n.rfind(kJournalName, 0) == 0))) {
        continue;
      }
      (void)storage_->Remove(out_ + "/" + n);
    }
  }
  if (!have_run) DS_RETURN_IF_ERROR(BeginRun(run));
  return done.dump();
}

Result<std::vector<std::pair<uint64_t, uint64_t>>> DatasetWriter::BeginPart(
    std::vector<uint64_t> starts, uint64_t first, uint64_t last, const std::string& done,
    int part) {
  if (shard_) {  // the shard Create opened to prove OUT writable; the plan numbers them now
    shard_->Abandon();
    shard_.reset();
  }
  if (starts.size() < 2 || first > last || last >= starts.size()) {
    return Broken(out_,
                  fmt::format("shards [{}, {}) of a plan of {}", first, last, starts.size() - 1));
  }
  part_ = std::make_unique<Part>();
  part_->starts = std::move(starts);
  part_->first = first;
  part_->last = last;
  journal_ = fmt::format("{}/{}.{}", out_, kJournalName, part);
  run_recorded_ = true;
  std::map<std::string, FileMeta> journaled;
  try {
    for (const json& m : json::parse(done)) journaled[m.at("name")] = MetaFromJson(m);
  } catch (const std::exception& e) {
    return Broken(out_, std::string("the list of shards done: ") + e.what());
  }
  const auto& st = part_->starts;
  std::vector<std::pair<uint64_t, uint64_t>> todo;
  for (uint64_t k = first; k < last; k++) {
    auto it = journaled.find(ShardName(k));
    if (it != journaled.end() && it->second.first_sample == st[k] &&
        it->second.samples == st[k + 1] - st[k]) {
      Part::Shard kept{it->second, 0, {}};
      DS_RETURN_IF_ERROR(ReadShardRecords(
          *storage_, out_, kept.meta, [&](uint64_t offset, uint64_t length, const RecordHead& h) {
            for (uint64_t w : {offset, length, Xxh3_64(h.key)}) PutLE64(&kept.entries, w);
            kept.payload += h.payload_len();
            return Status::Ok();
          }));
      bytes_written_ += kept.meta.size;
      payload_bytes_ += kept.payload;
      part_->shards[k] = std::move(kept);
      continue;
    }
    if (st[k] == st[k + 1]) continue;  // the one empty shard of an empty dataset: FinishPart
    if (!todo.empty() && todo.back().second == st[k]) {
      todo.back().second = st[k + 1];
    } else {
      todo.emplace_back(st[k], st[k + 1]);
    }
  }
  return todo;
}

Status DatasetWriter::PartRoll(uint64_t len) {
  const auto& st = part_->starts;
  uint64_t pos = source_pos_;
  if (pos < st[part_->first] || pos >= st[part_->last]) {
    return Fail(Broken(out_, fmt::format("sample {} is outside this part's samples [{}, {})", pos,
                                         st[part_->first], st[part_->last])));
  }
  // The shard holding pos: the last whose start is <= pos (empty shards have none).
  uint64_t k = std::upper_bound(st.begin(), st.end() - 1, pos) - st.begin() - 1;
  if (shard_) {
    bool full = ShardIsFull(shard_->next_offset(), shard_->records(), len, options_.shard_size);
    bool next = k == shard_no_ + 1;
    if ((k == shard_no_ && full) || (next && !full)) {
      return Fail(Broken(out_, fmt::format("sample {}: the shard plan {} shard {} here, the "
                                           "writer's rule does not",
                                           pos, next ? "starts" : "continues", k)));
    }
    if (k != shard_no_) DS_RETURN_IF_ERROR(FinishShard());
  }
  if (!shard_) {
    if (st[k] != pos) {
      return Fail(Broken(out_, fmt::format("sample {} is not the first of shard {}", pos, k)));
    }
    DS_RETURN_IF_ERROR(OpenShard(k, pos));
  }
  return Status::Ok();
}

void DatasetWriter::PartRecord(const IndexEntry& e) {
  for (uint64_t w : {e.offset, e.length, Xxh3_64(pending_key_)}) {
    PutLE64(&part_->current.entries, w);
  }
  part_->current.payload += pending_payload_;
  payload_bytes_ += pending_payload_;
}

void DatasetWriter::PartShardDone(const FileMeta& meta) {
  part_->current.meta = meta;
  part_->shards[shard_no_] = std::move(part_->current);
  part_->current = {};
}

Result<std::string> DatasetWriter::FinishPart() {
  DS_RETURN_IF_ERROR(status_);
  if (!part_) return Broken(out_, "FinishPart without BeginPart");
  if (shard_) DS_RETURN_IF_ERROR(FinishShard());
  const auto& st = part_->starts;
  std::string out;
  for (uint64_t k = part_->first; k < part_->last; k++) {
    if (!part_->shards.count(k)) {
      if (st[k] != st[k + 1]) return Broken(out_, fmt::format("shard {} was not written", k));
      DS_RETURN_IF_ERROR(OpenShard(k, st[k]));  // an empty dataset's one shard
      DS_RETURN_IF_ERROR(FinishShard());
    }
    const Part::Shard& s = part_->shards[k];
    for (uint64_t w :
         {k, s.meta.size, s.meta.xxh3, s.meta.samples, s.meta.first_sample, s.payload}) {
      PutLE64(&out, w);
    }
    out += s.entries;
  }
  part_finished_ = true;
  return out;
}

Status DatasetWriter::CommitParts(const std::vector<std::string>& parts, LayoutSummary* summary) {
  DS_RETURN_IF_ERROR(status_);
  if (!part_) return Broken(out_, "CommitParts without BeginPart");
  manifest_.shards.clear();
  index_ = GlobalIndexBuilder();
  index_.Reserve(part_->starts.back());
  payload_bytes_ = bytes_written_ = 0;
  uint64_t next = 0;
  for (size_t p = 0; p < parts.size(); p++) {
    const std::string& b = parts[p];
    size_t at = 0;
    auto word = [&](size_t i) { return LoadLE64(b.data() + at + 8 * i); };
    while (at < b.size()) {
      if (b.size() - at < 8 * kShardWords || word(0) != next) {
        return Broken(out_, fmt::format("part {} does not continue at shard {}", p, next));
      }
      FileMeta m{ShardName(next), word(1), word(3), word(4), word(2)};
      uint64_t payload = word(5);
      at += 8 * kShardWords;
      if ((b.size() - at) / (8 * kEntryWords) < m.samples) {
        return Broken(out_, fmt::format("part {}: shard {} is cut short", p, next));
      }
      for (uint64_t r = 0; r < m.samples; r++, at += 8 * kEntryWords) {
        DS_RETURN_IF_ERROR(
            Fail(index_.AddHashed(static_cast<uint32_t>(next), word(0), word(1), word(2))));
      }
      manifest_.shards.push_back(m);
      payload_bytes_ += payload;
      bytes_written_ += m.size;
      next++;
    }
  }
  if (next + 1 != part_->starts.size() || index_.size() != part_->starts.back()) {
    return Broken(out_,
                  fmt::format("the parts hold {} shards and {} samples, the plan {} and {}", next,
                              index_.size(), part_->starts.size() - 1, part_->starts.back()));
  }
  // The root commits only shards it sees, each with the size its writer reported: on OUT that
  // is not shared storage, another node's shards are not here (or are stale files).
  for (const auto& m : manifest_.shards) {
    DS_RETURN_IF_ERROR(Fail(CheckSeenHere(*storage_, out_ + "/" + m.name, m.size)));
  }
  return Commit(summary);
}

}  // namespace ds::native
