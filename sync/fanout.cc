#include "sync/fanout.h"

#include <xxhash.h>

#include <algorithm>
#include <cerrno>
#include <memory>
#include <string_view>
#include <thread>
#include <vector>

#include "src/storage.h"
#include "sync/committer.h"

namespace ds::sync {

namespace {

// A file's verdict from rank 0, sent after its last chunk: "ok" + the XXH3-64 of what rank 0
// read (decimal), so that every rank checks what it wrote even without a manifest hash.
constexpr std::string_view kOk = "ok";

// Rank 0's side of one file: its chunks, then its verdict.
class Reader {
 public:
  Reader(const PlanFile& f, int threads, Storage* storage)
      : f_(f), threads_(static_cast<size_t>(std::max(1, threads))), storage_(storage) {
    XXH3_64bits_reset(hash_);
    auto file = storage->OpenListed(f.src_path, ListedInfo(f));
    if (!file.ok()) {
      error_ = file.status().message();
      return;
    }
    file_ = std::move(*file);
  }
  ~Reader() { XXH3_freeState(hash_); }
  Reader(const Reader&) = delete;
  Reader& operator=(const Reader&) = delete;

  // The next piece into *piece: 'D' + data, or 'V' + the verdict when the file is done.
  // (Reading the next chunk in the background meanwhile measured no gain on the 2-core test
  // machine, where the ranks' writes are the limit: tools/peers/mpi_fanout.sh.)
  void Next(uint64_t chunk_size, std::string* piece) { *piece = Read(chunk_size); }

 private:
  std::string Read(uint64_t chunk_size) {
    if (!error_.empty() || off_ >= f_.size) return "V" + Verdict();
    size_t n = static_cast<size_t>(std::min<uint64_t>(chunk_size, f_.size - off_));
    std::string piece(n + 1, 'D');
    Status s = ReadParallel(piece.data() + 1, n);
    if (!s.ok()) {
      changed_ = s.err() == ESTALE;  // a pinned read: the file is no longer the listed one
      error_ = s.message();
      return "V" + Verdict();
    }
    XXH3_64bits_update(hash_, piece.data() + 1, n);
    file_->Advise(RandomAccessFile::Advice::kDontNeed, off_, n);
    off_ += n;
    return piece;
  }

  // The chunk in `threads_` slices read at once: through NFS (or the slow file system) one
  // stream waits a round trip per read; many in flight are what a shared store serves well.
  Status ReadParallel(char* buf, size_t n) {
    size_t parts = std::clamp<size_t>(n / kMinSlice, 1, threads_);
    size_t slice = (n + parts - 1) / parts;
    std::vector<Status> st(parts);
    std::vector<std::thread> pool;
    for (size_t k = 1; k < parts; k++) {
      pool.emplace_back([&, k] {
        size_t a = k * slice, len = std::min(slice, n - std::min(n, a));
        if (len > 0) st[k] = file_->ReadAt(off_ + a, buf + a, len);
      });
    }
    st[0] = file_->ReadAt(off_, buf, std::min(slice, n));
    for (auto& t : pool) t.join();
    for (auto& s : st) DS_RETURN_IF_ERROR(s);
    return Status::Ok();
  }

  // Changed since the plan: a read pinned to the listed version refused (ESTALE), or, where
  // reads are not pinned (StorageCaps::pinned_reads), a stat after the copy differs.
  std::string Verdict() {
    const std::string changed =
        "C" + f_.src_path +
        ": changed during copy (not the size, mtime or version the plan listed)";
    if (changed_ || (file_ && file_->size() != f_.size)) return changed;
    if (!error_.empty()) return "E" + error_;
    if (!storage_->caps().pinned_reads) {
      auto st = storage_->Stat(f_.src_path, /*follow=*/true);
      if (!st.ok()) return "E" + st.status().message();
      if (st->size != f_.size || st->mtime_ns != f_.mtime_ns) return changed;
    }
    return std::string(kOk) + std::to_string(XXH3_64bits_digest(hash_));
  }

  static constexpr size_t kMinSlice = 1 << 20;
  const PlanFile& f_;
  bool changed_ = false;
  size_t threads_;
  Storage* storage_;
  std::unique_ptr<RandomAccessFile> file_;
  uint64_t off_ = 0;
  std::string error_;
  XXH3_state_t* hash_ = XXH3_createState();
};

}  // namespace

std::vector<CopyResult> FanoutCopy(const std::vector<PlanFile>& files,
                                   const std::vector<bool>& needed, const CopyOptions& o,
                                   Job* job) {
  std::vector<CopyResult> results;
  // Every rank planned SRC on its own: the lists must be the same, or the collectives below
  // would pair different files. Rank 0's fingerprint against each rank's.
  XXH3_state_t* fp = XXH3_createState();
  XXH3_64bits_reset(fp);
  for (const auto& f : files) {
    XXH3_64bits_update(fp, f.rel.data(), f.rel.size() + 1);  // with its NUL
    XXH3_64bits_update(fp, &f.size, sizeof f.size);
  }
  std::string mine = std::to_string(XXH3_64bits_digest(fp)), root = mine;
  XXH3_freeState(fp);
  Status shared = job->Broadcast(&root, "rank 0's list of files");
  auto differ = job->Sum(!shared.ok() || root != mine ? 1 : 0, "the ranks whose list differs");
  if (!differ.ok() || *differ > 0) {
    Status st(Code::kBadInput,
              "the ranks planned different files from SRC (did it change while they started?); "
              "run again");
    for (size_t i = 0; i < files.size(); i++) {
      if (needed[i]) results.push_back(CopyResult{files[i].rel, 0, 0, 0, false, false, 0, st});
    }
    return results;
  }
  std::shared_ptr<Storage> src = o.src_storage ? o.src_storage : LocalStorage();
  std::shared_ptr<Storage> dst = o.dst_storage ? o.dst_storage : LocalStorage();
  Committer committer(o.dst, o.journal, dst);
  for (size_t i = 0; i < files.size(); i++) {
    const PlanFile& f = files[i];
    auto wanted = job->Sum(needed[i] ? 1 : 0, "the ranks that need a file");
    if (!wanted.ok()) {
      if (needed[i])
        results.push_back(CopyResult{f.rel, 0, 0, 0, false, false, 0, wanted.status()});
      continue;
    }
    if (*wanted == 0) continue;  // every rank has it: nobody reads it
    const bool mine = needed[i];
    size_t index = results.size();
    if (mine) results.push_back(CopyResult{f.rel, f.size, f.mtime_ns, 0, false, false, 0, {}});
    std::string tmp = o.dst + "/" + TmpRel(f.rel);
    std::unique_ptr<RandomWriteFile> out;
    Status local;  // this rank's own failure (writing DST); it still takes part to the end
    if (mine) {
      auto file = dst->OpenWrite(tmp, WriteMode::kTruncate);
      if (file.ok()) {
        out = std::move(*file);
      } else {
        local = file.status();
      }
    }
    XXH3_state_t* h = XXH3_createState();
    XXH3_64bits_reset(h);
    std::unique_ptr<Reader> reader =
        job->root() ? std::make_unique<Reader>(f, o.threads, src.get()) : nullptr;
    uint64_t off = 0;
    std::string verdict, piece;
    while (true) {
      // Each piece: 'D' + data, or 'V' + the verdict (last).
      if (reader) {
        reader->Next(o.chunk_size, &piece);
        // --bwlimit bounds the one read of SRC; every rank receives at that pace.
        if (o.bucket != nullptr && piece.size() > 1 && piece[0] == 'D') {
          o.bucket->Acquire(piece.size() - 1);
        }
      }
      if (Status s = job->Broadcast(&piece, "a chunk from rank 0"); !s.ok() || piece.empty()) {
        verdict = "E" + (s.ok() ? std::string("empty message from rank 0") : s.message());
        break;
      }
      if (piece[0] == 'V') {
        verdict = piece.substr(1);
        break;
      }
      if (mine && local.ok()) {
        const char* data = piece.data() + 1;
        size_t n = piece.size() - 1;
        XXH3_64bits_update(h, data, n);
        local = out->WriteAt(off, data, n);
      }
      off += piece.size() - 1;
    }
    uint64_t hash = XXH3_64bits_digest(h);
    XXH3_freeState(h);
    if (!mine) continue;
    CopyResult& r = results[index];
    r.xxh3 = hash;
    Status st = local;
    if (st.ok() && verdict.rfind(kOk, 0) != 0) st = Status(Code::kBadInput, verdict.substr(1));
    if (st.ok() && verdict.substr(kOk.size()) != std::to_string(hash)) {
      st = Status(Code::kCorruption, tmp +
                                         ": the bytes written hash differently from what rank 0 "
                                         "read (a transfer or write error); run again");
    }
    if (st.ok() && off != f.size) {
      st = Status(Code::kBadInput, f.src_path + ": read " + std::to_string(off) + " bytes of " +
                                       std::to_string(f.size));
    }
    if (st.ok() && f.expected_xxh3 && *f.expected_xxh3 != hash) {
      st = Status(Code::kCorruption, f.src_path + ": xxh3 mismatch against the dataset's manifest");
    }
    if (st.ok()) r.verified = f.expected_xxh3.has_value();
    if (st.ok()) st = out->SetAttributes(f.mode, f.mtime_ns);
    // Durable before its final name: here, where DST's storage cannot sync a batch at once.
    if (st.ok() && !dst->caps().sync_all) st = out->Sync();
    if (out) {
      Status closed = out->Close();
      if (st.ok()) st = closed;
      out.reset();
    }
    if (!st.ok()) {
      (void)dst->Remove(tmp);
      r.status = st;
      continue;
    }
    if (o.files_done != nullptr) ++*o.files_done;
    if (o.bytes_done != nullptr) *o.bytes_done += f.size;
    JournalEntry e{'F', f.size, f.mtime_ns, 0, f.size, hash, f.rel};
    committer.Add(index, tmp, o.dst + "/" + f.rel, e, f.size, &results);
  }
  committer.Flush(&results);
  return results;
}

}  // namespace ds::sync
