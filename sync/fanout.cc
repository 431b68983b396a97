#include "sync/fanout.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include <algorithm>
#include <memory>
#include <string_view>
#include <thread>
#include <vector>

#include "src/fd.h"
#include "src/page_cache.h"
#include "sync/committer.h"

namespace ds::sync {

namespace {

// A file's verdict from rank 0, sent after its last chunk: "ok" + the XXH3-64 of what rank 0
// read (decimal), so that every rank checks what it wrote even without a manifest hash.
constexpr std::string_view kOk = "ok";

int64_t MtimeNs(const struct stat& st) {
  return static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
}

// Rank 0's side of one file: its chunks, then its verdict.
class Reader {
 public:
  Reader(const PlanFile& f, int threads)
      : f_(f), threads_(static_cast<size_t>(std::max(1, threads))) {
    XXH3_64bits_reset(hash_);
    auto fd = OpenFile(f.src_path, O_RDONLY);
    if (!fd.ok()) {
      error_ = fd.status().message();
      return;
    }
    fd_ = std::move(*fd);
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
      error_ = s.message();
      return "V" + Verdict();
    }
    XXH3_64bits_update(hash_, piece.data() + 1, n);
    EvictPages(fd_.get(), off_, n);
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
        if (len > 0) st[k] = ReadFullAt(fd_.get(), buf + a, len, off_ + a, f_.src_path);
      });
    }
    st[0] = ReadFullAt(fd_.get(), buf, std::min(slice, n), off_, f_.src_path);
    for (auto& t : pool) t.join();
    for (auto& s : st) DS_RETURN_IF_ERROR(s);
    return Status::Ok();
  }

  std::string Verdict() {
    if (!error_.empty()) return "E" + error_;
    struct stat st;
    if (::fstat(fd_.get(), &st) != 0) return "E" + Status::FromErrno(errno, f_.src_path).message();
    if (static_cast<uint64_t>(st.st_size) != f_.size || MtimeNs(st) != f_.mtime_ns) {
      return "C" + f_.src_path + ": changed during copy (size or mtime differs from the plan)";
    }
    return std::string(kOk) + std::to_string(XXH3_64bits_digest(hash_));
  }

  static constexpr size_t kMinSlice = 1 << 20;
  const PlanFile& f_;
  size_t threads_;
  OwnedFd fd_;
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
  Committer committer(o.dst, o.journal);
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
    OwnedFd out;
    Status local;  // this rank's own failure (writing DST); it still takes part to the end
    if (mine) {
      auto fd = OpenFile(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
      if (fd.ok()) {
        out = std::move(*fd);
      } else {
        local = fd.status();
      }
    }
    XXH3_state_t* h = XXH3_createState();
    XXH3_64bits_reset(h);
    std::unique_ptr<Reader> reader = job->root() ? std::make_unique<Reader>(f, o.threads) : nullptr;
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
        local = WriteFullAt(out.get(), data, n, off, tmp);
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
    if (st.ok() && ::fchmod(out.get(), f.mode) != 0) st = Status::FromErrno(errno, tmp);
    if (st.ok()) {
      struct timespec ts[2];
      ts[0].tv_sec = ts[1].tv_sec = f.mtime_ns / 1000000000;
      ts[0].tv_nsec = ts[1].tv_nsec = f.mtime_ns % 1000000000;
      if (::futimens(out.get(), ts) != 0) st = Status::FromErrno(errno, tmp + ": futimens");
    }
    out = OwnedFd();
    if (!st.ok()) {
      ::unlink(tmp.c_str());
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
