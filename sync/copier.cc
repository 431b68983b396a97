#include "sync/copier.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <future>
#include <memory>
#include <mutex>
#include <system_error>
#include <thread>

#include "src/aligned_buffer.h"
#include "src/checksum.h"
#include "src/io_engine.h"
#include "sync/committer.h"

namespace ds::sync {

std::string TmpRel(const std::string& rel) {
  size_t slash = rel.rfind('/');
  if (slash == std::string::npos) return kTmpPrefix + rel;
  return rel.substr(0, slash + 1) + kTmpPrefix + rel.substr(slash + 1);
}

namespace {

// A worker's IO: its engine (io_uring, or psync where refused) and two buffers, so that the read
// of a file's next piece is in flight while the current one is hashed and written.
struct WorkerIo {
  std::unique_ptr<IoEngine> engine;
  AlignedBuffer buf[2];
  WorkerIo() : buf{AlignedBuffer(kBufferSize), AlignedBuffer(kBufferSize)} {
    auto e = MakeEngine("io_uring", {2, false});
    engine = e.ok() ? std::move(*e) : std::move(MakeEngine("psync", {2, false})).value();
  }
  char* scratch() { return buf[0].data(); }
  // Waits for every request in flight (their buffers are reused after).
  void Drain() {
    IoRequest* out[2];
    while (engine->inflight() > 0) {
      if (!engine->Reap(1, out).ok()) return;
    }
  }
};

constexpr size_t kAllChunks = ~size_t{0};  // a task copying every chunk of a file in order

struct FileState {
  const PlanFile* f = nullptr;
  std::string tmp;
  size_t nchunks = 1;
  std::atomic<size_t> left{0};
  std::mutex mu;
  bool opened = false;
  int attempt = 0;
  uint64_t size = 0;  // the source's size and mtime when this attempt opened it
  int64_t mtime_ns = 0;
  std::unique_ptr<RandomAccessFile> src;
  std::unique_ptr<RandomWriteFile> dst, dst_direct;
  std::vector<uint64_t> chunk_hash;
  Xxh3Hasher whole;  // one task copying all chunks in order hashes the whole file inline
  bool whole_valid = false;
  std::vector<const JournalEntry*> prev;  // valid-looking chunk entries, by chunk
  std::atomic<uint64_t> resumed{0};
  Status error;  // the first error of this attempt, guarded by mu
};

class Engine {
 public:
  Engine(const std::vector<PlanFile>& files, const CopyOptions& o)
      : o_(o),
        src_(o.src_storage ? o.src_storage : LocalStorage()),
        dst_(o.dst_storage ? o.dst_storage : LocalStorage()),
        sync_all_(dst_->caps().sync_all),
        states_(files.size()),
        results_(files.size()),
        committer_(o.dst, o.journal, dst_) {
    for (size_t i = 0; i < files.size(); ++i) {
      FileState& s = states_[i];
      s.f = &files[i];
      s.tmp = o.dst + "/" + TmpRel(files[i].rel);
      s.size = files[i].size;
      s.mtime_ns = files[i].mtime_ns;
      s.nchunks = std::max<uint64_t>(1, (s.size + o.chunk_size - 1) / o.chunk_size);
      s.left = s.nchunks;
      s.chunk_hash.assign(s.nchunks, 0);
      s.prev.assign(s.nchunks, nullptr);
      if (s.nchunks > 1 && o.previous != nullptr) FindPrevious(&s);
      if (s.nchunks > 1 && files.size() < static_cast<size_t>(o.threads)) {
        for (size_t k = 0; k < s.nchunks; ++k) tasks_.push_back({i, k});
      } else {
        s.left = 1;
        tasks_.push_back({i, kAllChunks});
      }
      results_[i].rel = files[i].rel;
    }
  }

  std::vector<CopyResult> Run() {
    int n = std::max(1, std::min<int>(o_.threads, static_cast<int>(tasks_.size())));
    std::vector<std::thread> threads;
    for (int t = 0; t < n; ++t) threads.emplace_back([this] { Work(); });
    for (auto& t : threads) t.join();
    committer_.Flush(&results_);
    return std::move(results_);
  }

 private:
  void FindPrevious(FileState* s) {
    auto it = o_.previous->find(s->f->rel);
    if (it == o_.previous->end()) return;
    for (const auto& e : it->second) {
      if (e.kind != 'C' || e.src_size != s->size || e.src_mtime_ns != s->mtime_ns) continue;
      if (e.offset % o_.chunk_size != 0) continue;
      size_t k = e.offset / o_.chunk_size;
      if (k < s->nchunks && e.length == std::min(o_.chunk_size, s->size - e.offset)) {
        s->prev[k] = &e;
      }
    }
  }

  void Work() {
    WorkerIo io;
    for (;;) {
      size_t t = next_.fetch_add(1);
      if (t >= tasks_.size()) return;
      auto [i, k] = tasks_[t];
      FileState& s = states_[i];
      Status st = abort_ ? Status(Code::kIOError, s.f->rel +
                                                      ": not copied (the run stopped "
                                                      "after an earlier error)")
                         : Chunk(&s, k, &io);
      if (!st.ok()) {
        std::lock_guard<std::mutex> lock(s.mu);
        if (s.error.ok()) s.error = st;
      }
      if (s.left.fetch_sub(1) == 1) Finish(i, &io);
    }
  }

  // Opens the source and the tmp file for an attempt. REQUIRES: s->mu held.
  Status Open(FileState* s) {
    const std::string& rel = s->f->rel;
    // The first attempt opens what the plan listed (no request where the listing says enough:
    // Storage::OpenListed); a retry opens what is there now.
    auto src = s->attempt == 0 ? src_->OpenListed(s->f->src_path, ListedInfo(*s->f))
                               : src_->OpenRead(s->f->src_path);
    if (!src.ok()) {
      if (src.status().code() == Code::kNotFound) {
        return Status(Code::kBadInput, rel + ": vanished during the copy (not staged)");
      }
      // The storage itself failed (a server gone, a timeout, a dead disk), not this file: the
      // run stops there (exit 2) instead of listing every file after it as unreadable.
      if (src.status().code() == Code::kIOError) return src.status();
      return Status(Code::kBadInput, rel + ": unreadable: " + src.status().message());
    }
    s->src = std::move(*src);
    if (s->attempt > 0) {
      auto st = src_->Stat(s->f->src_path, /*follow=*/true);
      if (!st.ok()) return Status(Code::kBadInput, st.status().message(), st.status().err());
      s->size = st->size;
      s->mtime_ns = st->mtime_ns;
    }
    s->src->Advise(RandomAccessFile::Advice::kSequential);
    bool reuse = s->attempt == 0 && std::any_of(s->prev.begin(), s->prev.end(),
                                                [](const JournalEntry* e) { return e; });
    DS_ASSIGN_OR_RETURN(s->dst,
                        dst_->OpenWrite(s->tmp, reuse ? WriteMode::kKeep : WriteMode::kTruncate));
    if (reuse) {
      auto size = s->dst->Size();
      if (!size.ok() || *size != s->size) std::fill(s->prev.begin(), s->prev.end(), nullptr);
    }
    DS_RETURN_IF_ERROR(s->dst->Truncate(s->size));
    DS_RETURN_IF_ERROR(s->dst->Allocate(s->size));
    if (o_.direct) {
      auto d = dst_->OpenDirect(s->tmp);
      if (d.ok()) s->dst_direct = std::move(*d);  // refused (tmpfs): stay buffered
    }
    return Status::Ok();
  }

  // Hashes [off, off+len) of the tmp file as written so far.
  Status HashRange(RandomWriteFile* file, uint64_t off, uint64_t len, char* buf, Xxh3Hasher* h,
                   Xxh3Hasher* whole) {
    for (uint64_t done = 0; done < len;) {
      size_t n = static_cast<size_t>(std::min<uint64_t>(kBufferSize, len - done));
      DS_ASSIGN_OR_RETURN(size_t got, file->ReadSome(off + done, buf, n));
      if (got < n) {
        return Status(Code::kCorruption,
                      fmt::format("{}: truncated at offset {}", file->name(), off + done + got));
      }
      h->Update(buf, n);
      if (whole != nullptr) whole->Update(buf, n);
      done += n;
    }
    return Status::Ok();
  }

  // Copies [off, off+len) of the source into the tmp file, hashing it on the way. Reads go
  // through the worker's engine one piece ahead of the hash and the write.
  Status CopyRange(FileState* s, uint64_t off, uint64_t len, WorkerIo* io, Xxh3Hasher* h,
                   Xxh3Hasher* whole = nullptr) {
    Status st = CopyPieces(s, off, len, io, h, whole);
    io->Drain();
    if (st.ok()) s->src->Advise(RandomAccessFile::Advice::kDontNeed, off, len);
    return st;
  }

  // A failed read of the source fails that file alone (kBadInput); DST's errors stop the run.
  static Status SourceError(Status st) {
    if (st.ok() || st.code() == Code::kBadInput) return st;
    return Status(Code::kBadInput, st.message(), st.err());
  }

  // Reads the rest of a piece from the source (a short read from the engine, or the whole piece
  // where the source has no local fd). EOF first means the file shrank during the copy; ESTALE,
  // that a read pinned to the version listed or opened found a newer one (Storage::OpenListed:
  // Finish copies it again); a file gone since its open (s3://: no HEAD before the first GET)
  // vanished, as at the open.
  Status ReadRest(FileState* s, char* buf, size_t n, uint64_t at) {
    Status st = s->src->ReadAt(at, buf, n, s->f->rel);
    if (st.err() == ESTALE) {
      return Status(Code::kBadInput,
                    s->f->rel + ": changed during copy (not the version listed or opened)", ESTALE);
    }
    if (st.code() == Code::kNotFound) {
      return Status(Code::kBadInput, s->f->rel + ": vanished during the copy (not staged)");
    }
    if (st.code() == Code::kCorruption) {
      return Status(Code::kBadInput, s->f->rel + ": changed during copy (it shrank)");
    }
    return SourceError(std::move(st));
  }

  // Hashes a piece that was read and writes it into the tmp file.
  Status Land(FileState* s, const char* buf, size_t n, uint64_t at, Xxh3Hasher* h,
              Xxh3Hasher* whole) {
    h->Update(buf, n);
    if (whole != nullptr) whole->Update(buf, n);
    if (o_.bucket != nullptr) o_.bucket->Acquire(n);
    size_t direct = s->dst_direct ? (n & ~(kDirectAlign - 1)) : 0;
    if (direct > 0) DS_RETURN_IF_ERROR(s->dst_direct->WriteAt(at, buf, direct));
    if (n > direct) DS_RETURN_IF_ERROR(s->dst->WriteAt(at + direct, buf + direct, n - direct));
    if (o_.bytes_done != nullptr) *o_.bytes_done += n;
    return Status::Ok();
  }

  Status CopyPieces(FileState* s, uint64_t off, uint64_t len, WorkerIo* io, Xxh3Hasher* h,
                    Xxh3Hasher* whole) {
    const uint64_t pieces = (len + kBufferSize - 1) / kBufferSize;
    auto piece_len = [&](uint64_t p) {
      return static_cast<size_t>(std::min<uint64_t>(kBufferSize, len - p * kBufferSize));
    };
    if (s->src->fd() < 0) {  // a remote or decorated source: its own reads, one piece ahead
      // The next piece is read on a helper thread while this one is hashed and written: a remote
      // read is a round trip plus the transfer, and overlapped the copy runs at the slower of
      // the two, not at their sum. Where no thread can start, the read runs here. The first
      // piece is read here, beside the helper's second: a file of one piece (a tree's small
      // files) starts no thread (2,000 files from s3:// started 2,047 threads).
      auto read = [&](uint64_t p) {
        return ReadRest(s, io->buf[p % 2].data(), piece_len(p), off + p * kBufferSize);
      };
      auto ahead = [&](uint64_t p) -> std::future<Status> {
        try {
          return std::async(std::launch::async, read, p);
        } catch (const std::system_error&) {
          std::promise<Status> now;
          now.set_value(read(p));
          return now.get_future();
        }
      };
      std::future<Status> next;  // waited for by its destructor on every way out
      for (uint64_t p = 0; p < pieces; p++) {
        Status got;
        if (p == 0) {
          if (pieces > 1) next = ahead(1);
          got = read(0);
        } else {
          got = next.get();
          if (p + 1 < pieces && got.ok()) next = ahead(p + 1);
        }
        DS_RETURN_IF_ERROR(got);
        DS_RETURN_IF_ERROR(
            Land(s, io->buf[p % 2].data(), piece_len(p), off + p * kBufferSize, h, whole));
      }
      return Status::Ok();
    }
    IoRequest req[2];
    auto start = [&](uint64_t p) -> Status {
      IoRequest& r = req[p % 2];
      r = IoRequest{IoRequest::Op::kRead,
                    s->src->fd(),
                    io->buf[p % 2].data(),
                    piece_len(p),
                    off + p * kBufferSize,
                    0,
                    &r};
      DS_RETURN_IF_ERROR(io->engine->Queue(&r));
      return io->engine->Submit().status();
    };
    if (pieces > 0) DS_RETURN_IF_ERROR(start(0));
    for (uint64_t p = 0; p < pieces; p++) {
      IoRequest& r = req[p % 2];
      IoRequest* out[2];
      while (r.user == &r) {  // not reaped yet: Reap clears user on the way out (below)
        DS_ASSIGN_OR_RETURN(size_t n, io->engine->Reap(1, out));
        for (size_t c = 0; c < n; c++) out[c]->user = nullptr;
      }
      if (p + 1 < pieces) DS_RETURN_IF_ERROR(start(p + 1));
      const size_t n = piece_len(p);
      const uint64_t at = off + p * kBufferSize;
      char* buf = io->buf[p % 2].data();
      if (r.result < 0) {
        return SourceError(
            ErrnoStatus(r.result, fmt::format("{}: read at offset {}", s->f->rel, at)));
      }
      auto got = static_cast<size_t>(r.result);
      if (got < n) DS_RETURN_IF_ERROR(ReadRest(s, buf + got, n - got, at + got));
      DS_RETURN_IF_ERROR(Land(s, buf, n, at, h, whole));
    }
    return Status::Ok();
  }

  Status Chunk(FileState* s, size_t k, WorkerIo* io) {
    {
      std::lock_guard<std::mutex> lock(s->mu);
      if (!s->opened) {
        s->opened = true;
        s->error = Open(s);
      }
      if (!s->error.ok()) return Status::Ok();  // already recorded
    }
    if (k != kAllChunks) return OneChunk(s, k, io, nullptr);
    for (size_t c = 0; c < s->nchunks; ++c) DS_RETURN_IF_ERROR(OneChunk(s, c, io, &s->whole));
    s->whole_valid = true;
    return Status::Ok();
  }

  // Copies (or reuses from the journal) chunk k; feeds `whole` when not null.
  Status OneChunk(FileState* s, size_t k, WorkerIo* io, Xxh3Hasher* whole) {
    uint64_t off = k * o_.chunk_size;
    uint64_t len = std::min(o_.chunk_size, s->size - std::min(off, s->size));
    Xxh3Hasher h, before;
    if (const JournalEntry* e = s->prev[k]) {
      if (whole != nullptr) before.CopyFrom(*whole);
      if (HashRange(s->dst.get(), off, len, io->scratch(), &h, whole).ok() &&
          h.Digest() == e->xxh3) {
        s->chunk_hash[k] = e->xxh3;
        s->resumed += len;
        if (o_.bytes_done != nullptr) *o_.bytes_done += len;
        return Status::Ok();
      }
      h.Reset();
      if (whole != nullptr) whole->CopyFrom(before);
    }
    Status st = CopyRange(s, off, len, io, &h, whole);
    if (!st.ok()) {
      if (st.code() == Code::kNoSpace || st.code() == Code::kIOError) abort_ = true;
      return st;
    }
    s->chunk_hash[k] = h.Digest();
    if (s->nchunks == 1) return Status::Ok();
    JournalEntry e{'C', s->size, s->mtime_ns, off, len, s->chunk_hash[k], s->f->rel};
    return o_.journal->Append({e}, true);
  }

  // Whole-file checks after the last chunk; returns a status of kind "retry" via *retry.
  Status Check(FileState* s, char* buf, uint64_t* hash, bool* retry) {
    *retry = false;
    if (s->nchunks == 1) {
      *hash = s->chunk_hash[0];
    } else if (s->whole_valid) {
      *hash = s->whole.Digest();
    } else {
      Xxh3Hasher h;
      DS_RETURN_IF_ERROR(HashRange(s->dst.get(), 0, s->size, buf, &h, nullptr));
      *hash = h.Digest();
    }
    // Changed since the plan or during the copy: stat it again, unless its reads were pinned to
    // what the open found (StorageCaps::pinned_reads: a request less per file), where only a
    // size other than the plan's can be wrong.
    bool same;
    if (src_->caps().pinned_reads) {
      same = s->src->size() == s->size;
    } else {
      auto st = src_->Stat(s->f->src_path, /*follow=*/true);
      same = st.ok() && st->size == s->size && st->mtime_ns == s->mtime_ns;
    }
    if (!same) {
      *retry = true;
      return Status(Code::kBadInput, s->f->rel +
                                         ": changed during copy (size or mtime differ "
                                         "before and after; copied twice, not staged)");
    }
    if (s->f->expected_xxh3 && *hash != *s->f->expected_xxh3) {
      *retry = true;
      return Status(Code::kCorruption,
                    fmt::format("{}: xxh3 {} but the manifest says {}: the source is corrupt "
                                "(copied twice, not staged)",
                                s->f->rel, HexU64(*hash), HexU64(*s->f->expected_xxh3)));
    }
    return Status::Ok();
  }

  void Finish(size_t i, WorkerIo* io) {
    FileState& s = states_[i];
    CopyResult& r = results_[i];
    uint64_t hash = 0;
    // Changed since the plan listed it (ESTALE: a pinned read's 412, Storage::OpenListed) or
    // during the copy: copied again, once, from what is there now.
    bool retry = s.error.err() == ESTALE ||
                 s.error.message().find("changed during copy") != std::string::npos;
    Status st = s.error;
    if (st.ok()) st = Check(&s, io->scratch(), &hash, &retry);
    if (!st.ok() && retry && !abort_) {
      r.recopied = true;
      s.attempt = 1;
      (void)Close(&s);
      Xxh3Hasher h;
      st = Open(&s);
      if (st.ok()) st = CopyRange(&s, 0, s.size, io, &h);
      if (st.ok()) {
        s.nchunks = 1;
        s.chunk_hash.assign(1, h.Digest());
        st = Check(&s, io->scratch(), &hash, &retry);
      }
    }
    if (st.ok()) st = Seal(&s);
    Status closed = Close(&s);
    if (st.ok()) st = closed;
    r.size = s.size;
    r.mtime_ns = s.mtime_ns;
    r.xxh3 = hash;
    r.resumed_bytes = s.resumed;
    r.verified = s.f->expected_xxh3.has_value();
    if (!st.ok()) {
      if (st.code() == Code::kNoSpace || st.code() == Code::kIOError) abort_ = true;
      (void)dst_->Remove(s.tmp);
      r.status = st;
      return;
    }
    if (o_.files_done != nullptr) ++*o_.files_done;
    JournalEntry e{'F', s.size, s.mtime_ns, 0, s.size, hash, s.f->rel};
    committer_.Add(i, s.tmp, o_.dst + "/" + s.f->rel, e, s.size, &results_);
  }

  // The source's mode and mtime on the tmp file; where the destination cannot sync a batch at
  // once (Committer), the file is made durable here, before it can get its final name.
  Status Seal(FileState* s) {
    DS_RETURN_IF_ERROR(s->dst->SetAttributes(s->f->mode, s->mtime_ns));
    if (!sync_all_) DS_RETURN_IF_ERROR(s->dst->Sync());
    return Status::Ok();
  }

  // Closes an attempt's files; reports what closing the tmp file finds (a delayed write error).
  static Status Close(FileState* s) {
    Status st;
    s->src.reset();
    for (auto* f : {&s->dst_direct, &s->dst}) {
      if (*f) {
        Status c = (*f)->Close();
        if (st.ok()) st = c;
        f->reset();
      }
    }
    return st;
  }

  const CopyOptions& o_;
  std::shared_ptr<Storage> src_, dst_;
  bool sync_all_;
  std::vector<FileState> states_;
  std::vector<CopyResult> results_;
  std::vector<std::pair<size_t, size_t>> tasks_;
  std::atomic<size_t> next_{0};
  std::atomic<bool> abort_{false};
  Committer committer_;
};

}  // namespace

Status ValidateChunkSize(uint64_t chunk_size) {
  if (chunk_size > 0 && chunk_size % kChunkAlign == 0) return Status::Ok();
  return Status(Code::kInvalidArgument,
                fmt::format("chunk_size {}: must be a positive multiple of {} bytes", chunk_size,
                            kChunkAlign));
}

std::vector<CopyResult> CopyFiles(const std::vector<PlanFile>& files, const CopyOptions& options) {
  Status bad = ValidateChunkSize(options.chunk_size);
  if (bad.ok() && options.threads < 1) {
    bad = Status(Code::kInvalidArgument,
                 fmt::format("threads {}: must be at least 1", options.threads));
  }
  if (!bad.ok()) {
    std::vector<CopyResult> results(files.size());
    for (size_t i = 0; i < files.size(); ++i) results[i] = {.rel = files[i].rel, .status = bad};
    return results;
  }
  Engine engine(files, options);
  return engine.Run();
}

}  // namespace ds::sync
