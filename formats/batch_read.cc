// LayoutReader::ReadBatch: many samples, many reads in flight (formats/layout.h).
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <memory>
#include <mutex>
#include <new>
#include <system_error>
#include <thread>
#include <unordered_map>

#include "formats/layout.h"
#include "src/io_engine.h"

namespace ds {

namespace {

// One read in flight: the sample's extent and the buffer it lands in.
struct Slot {
  IoRequest req;
  size_t j = 0;  // the run it reads
  // Grown, never shrunk, and not zero-filled: every byte DecodeExtent sees was just read.
  std::unique_ptr<char[]> buf;
  uint64_t cap = 0;
  void Reserve(uint64_t n) {
    if (n <= cap) return;
    buf.reset(new char[n]);
    cap = n;
  }
  uint64_t done = 0;
};

// Samples that lie next to each other in one file (a stream's batch: consecutive records of a
// shard) are read as one request, a run: over a network store a request is a round trip (a GET,
// a READ RPC), and on a local disk a syscall. Samples at most kRunGap bytes apart join a run
// (the bytes between are read and dropped: cheaper than another request). A run stops growing at
// the batch's bytes / depth, kept within [kRunMin, kRunMax], so that a large batch still has
// `depth` requests in flight and a run's buffer stays bounded.
constexpr uint64_t kRunGap = 4096;
constexpr uint64_t kRunMin = 1 << 20;
constexpr uint64_t kRunMax = 8 << 20;

// What a thread keeps of its batch buffers between batches, at most.
constexpr uint64_t kKeptBufferBytes = 64 << 20;

struct Run {
  const RandomAccessFile* file = nullptr;
  uint64_t offset = 0, length = 0;
  size_t first = 0, count = 0;  // its samples: order[first, first + count)
};

// The runs that read every extent, in file and offset order; a repeated sample reads once.
// *order: the batch positions sorted by file and offset, which the runs index.
template <typename Extent>
std::vector<Run> PlanRunsOf(const std::vector<Extent>& extents, unsigned depth,
                            std::vector<size_t>* order) {
  order->resize(extents.size());
  uint64_t total = 0;
  for (size_t j = 0; j < extents.size(); j++) {
    (*order)[j] = j;
    total += extents[j].length;
  }
  std::sort(order->begin(), order->end(), [&](size_t a, size_t b) {
    const Extent &x = extents[a], &y = extents[b];
    return x.file != y.file ? std::less<>()(x.file, y.file) : x.offset < y.offset;
  });
  const uint64_t cap = std::clamp<uint64_t>(total / std::max(1u, depth), kRunMin, kRunMax);
  std::vector<Run> runs;
  for (size_t m = 0; m < order->size(); m++) {
    const Extent& e = extents[(*order)[m]];
    const uint64_t end = e.offset + e.length;
    if (!runs.empty()) {
      Run& r = runs.back();
      const uint64_t r_end = r.offset + r.length;
      if (r.file == e.file && e.offset <= r_end + kRunGap &&
          std::max(end, r_end) - r.offset <= std::max(cap, r.length)) {
        r.length = std::max(end, r_end) - r.offset;
        r.count++;
        continue;
      }
    }
    runs.push_back(Run{e.file, e.offset, e.length, m, 1});
  }
  return runs;
}

// One io_uring per thread, kept from batch to batch (and per process: a ring inherited across
// fork() shares its queues with the parent, so the child makes its own). A ring made per batch
// pays its setup, and on FUSE or NFS the io-wq worker threads the kernel starts for each ring,
// every batch; kept, a thread pays them once. In tools/peers/torch_loader.sh the difference was
// within the noise: there the io-wq hand-off of each read is the larger cost.
struct CachedEngine {
  pid_t pid = 0;
  unsigned depth = 0;
  std::unique_ptr<IoEngine> engine;
};

Result<IoEngine*> ThreadEngine(CachedEngine& c, unsigned depth) {
  pid_t pid = ::getpid();
  if (c.engine && (c.pid != pid || c.depth != depth)) c.engine.reset();
  if (!c.engine) {
    DS_ASSIGN_OR_RETURN(c.engine, MakeEngine("io_uring", {depth, false}));
    c.pid = pid;
    c.depth = depth;
  }
  c.engine->ResetCounters();
  return c.engine.get();
}

// One engine of the storage's own (Storage::NewEngine: nfs, with its own connection) per thread,
// with the handles it opened, by file name, kept from batch to batch: mounting a connection and
// opening a file are round trips that a batch would otherwise pay every time. The engine holds
// its storage alive, so the storage's address names it for as long as it is cached.
struct CachedRemote {
  pid_t pid = 0;
  const Storage* storage = nullptr;
  unsigned depth = 0;
  std::unique_ptr<IoEngine> engine;
  std::unordered_map<std::string, int> handles;

  void Reset() {
    if (pid != ::getpid()) {
      // Inherited across fork(): the connection's socket is the parent's. Left alone, not torn
      // down from here (a teardown would speak on the parent's connection).
      (void)engine.release();
    } else if (engine) {
      for (const auto& [name, h] : handles) engine->CloseFile(h);
    }
    engine.reset();
    handles.clear();
  }
};

// A handle per shard the thread has read: past this many (a dataset of many small shards), a
// batch starts by closing the ones the last batches opened, so that what a reader holds open on
// the server stays bounded.
constexpr size_t kMaxRemoteHandles = 4096;

Result<IoEngine*> RemoteEngine(CachedRemote& c, Storage& storage, unsigned depth) {
  if (c.engine && (c.pid != ::getpid() || c.storage != &storage || c.depth != depth)) c.Reset();
  if (c.engine && c.handles.size() > kMaxRemoteHandles) c.Reset();
  if (!c.engine) {
    DS_ASSIGN_OR_RETURN(c.engine, storage.NewEngine({depth, false}));
    c.pid = ::getpid();
    c.storage = &storage;
    c.depth = depth;
  }
  c.engine->ResetCounters();
  return c.engine.get();
}

}  // namespace

Status LayoutReader::ReadBatch(std::span<const uint64_t> indices, const BatchReadOptions& o,
                               std::vector<Sample>* out, BatchReadStats* stats) const {
  out->clear();
  out->resize(indices.size());
  BatchReadStats local;
  BatchReadStats& st = stats ? *stats : local;
  st = {};
  const unsigned k = std::max(1u, o.inflight);
  if (indices.empty()) return Status::Ok();
  if (has_extents() && o.allow_io_uring && storage_->caps().local_fd) {
    thread_local CachedEngine cached;
    auto engine = ThreadEngine(cached, k);
    if (engine.ok()) {
      st.engine = "io_uring";
      Status s = ReadBatchEngine(
          **engine, [](const RandomAccessFile& f) -> Result<int> { return f.fd(); }, indices,
          o.landed, out, &st);
      if ((*engine)->inflight() != 0) cached.engine.reset();  // left mid-batch: not reusable
      return s;
    }
    if (engine.status().code() != Code::kUnsupported) return engine.status();
  }
  if (has_extents() && !storage_->caps().local_fd) {
    thread_local CachedRemote cached;
    auto engine = RemoteEngine(cached, *storage_, k);
    if (engine.ok()) {
      IoEngine& e = **engine;
      st.engine = std::string(e.name());
      auto handle = [&](const RandomAccessFile& f) -> Result<int> {
        auto it = cached.handles.find(f.name());
        if (it != cached.handles.end()) return it->second;
        DS_ASSIGN_OR_RETURN(int h, e.OpenPath(f.name(), false));
        cached.handles.emplace(f.name(), h);
        return h;
      };
      Status s = ReadBatchEngine(e, handle, indices, o.landed, out, &st);
      if (e.inflight() != 0) cached.Reset();  // left mid-batch: not reusable
      return s;
    }
    if (engine.status().code() != Code::kUnsupported) return engine.status();
  }
  st.engine = "threads";
  return ReadBatchThreads(indices, k, o.landed, out, &st);
}

Status LayoutReader::ReadBatchEngine(IoEngine& engine, const FileHandle& handle,
                                     std::span<const uint64_t> indices,
                                     std::atomic<uint64_t>* landed, std::vector<Sample>* out,
                                     BatchReadStats* st) const {
  // Where every sample lies, then the runs to read.
  std::vector<SampleExtent> extents;
  extents.reserve(indices.size());
  for (uint64_t i : indices) {
    DS_ASSIGN_OR_RETURN(SampleExtent e, Extent(i));
    extents.push_back(e);
  }
  std::vector<size_t> order;
  const std::vector<Run> runs = PlanRunsOf(extents, engine.depth(), &order);
  // The thread's slots, their buffers kept from batch to batch: a buffer allocated per batch is
  // memory the kernel faults in again every time (measured: page faults and the copies into
  // fresh pages were over half of a batch's CPU over s3://). Past kKeptBufferBytes they go.
  thread_local std::vector<Slot> kept;
  kept.resize(std::max(kept.size(), std::min<size_t>(engine.depth(), runs.size())));
  struct Trim {
    ~Trim() {
      uint64_t held = 0;
      for (const Slot& s : kept) held += s.cap;
      if (held > kKeptBufferBytes) kept.clear();
    }
  } trim;
  std::span<Slot> slots(kept.data(), std::min<size_t>(engine.depth(), runs.size()));
  std::vector<Slot*> free_slots;
  for (auto& s : slots) free_slots.push_back(&s);
  std::vector<IoRequest*> done(slots.size());
  Status first;  // the first error; no new reads once set, the ones in flight are drained
  size_t next = 0;

  auto queue = [&](Slot* s) -> Status {
    const Run& run = runs[s->j];
    DS_ASSIGN_OR_RETURN(int fd, handle(*run.file));
    s->req = IoRequest{IoRequest::Op::kRead,
                       fd,
                       s->buf.get() + s->done,
                       run.length - s->done,
                       run.offset + s->done,
                       0,
                       s};
    st->reads++;
    return engine.Queue(&s->req);
  };
  auto where = [&](size_t j) {
    auto loc = Locate(indices[j]);
    // By the storage's URI (nfs://server/export/...; a local path as it is), as Get names it.
    return loc.ok() ? fmt::format("{}: sample {} at offset {}",
                                  storage_->Uri(path_ + "/" + loc->file), indices[j], loc->offset)
                    : fmt::format("{}: sample {}", storage_->Uri(path_), indices[j]);
  };
  // Run s->j is in (whole, or up to an EOF inside it): each of its samples decoded from its bytes.
  auto decode = [&](Slot* s) {
    const Run& run = runs[s->j];
    for (size_t m = run.first; m < run.first + run.count && first.ok(); m++) {
      const size_t j = order[m];
      const SampleExtent& e = extents[j];
      const uint64_t at = e.offset - run.offset;
      const uint64_t have = s->done > at ? std::min(e.length, s->done - at) : 0;
      auto sample = DecodeExtent(indices[j], e, std::string_view(s->buf.get() + at, have));
      if (!sample.ok()) {
        first = sample.status();
        break;
      }
      (*out)[j] = std::move(*sample);
      if (landed) landed->fetch_add(1, std::memory_order_relaxed);
    }
  };

  while (first.ok() || engine.inflight() > 0) {
    while (first.ok() && next < runs.size() && !free_slots.empty()) {
      Slot* s = free_slots.back();
      free_slots.pop_back();
      s->j = next++;
      s->done = 0;
      s->Reserve(runs[s->j].length);
      Status q = queue(s);
      if (!q.ok()) {
        first = q;
        free_slots.push_back(s);
      }
    }
    if (engine.inflight() == 0) break;  // all read, or an error with nothing left to drain
    DS_RETURN_IF_ERROR(engine.Submit().status());
    DS_ASSIGN_OR_RETURN(size_t n, engine.Reap(1, done));
    for (size_t c = 0; c < n; c++) {
      Slot* s = static_cast<Slot*>(done[c]->user);
      const Run& run = runs[s->j];
      ssize_t r = s->req.result;
      bool retry = r == -EINTR || r == -EAGAIN;
      if (r < 0 && !retry) {
        if (first.ok()) first = engine.RequestError(s->req, where(order[run.first]));
        free_slots.push_back(s);
        continue;
      }
      if (r > 0) {
        s->done += static_cast<uint64_t>(r);
        st->bytes += static_cast<uint64_t>(r);
      }
      if (first.ok() && s->done < run.length && (r > 0 || retry)) {
        Status q = queue(s);  // a short read: the rest of the run
        if (q.ok()) continue;
        first = q;
      } else if (first.ok()) {  // complete, or EOF inside it (DecodeExtent names the truncation)
        decode(s);
      }
      free_slots.push_back(s);
    }
    if (first.ok() && next == runs.size() && engine.inflight() == 0) break;
  }
  st->peak_inflight = engine.counters().peak_inflight;
  return first;
}

namespace {
// The most threads one threaded batch read starts, however large `inflight` is: each costs a
// stack (8 MiB of address space), and a caller's inflight=100000 must not start 100000.
constexpr size_t kMaxBatchThreads = 64;
}  // namespace

Status LayoutReader::ReadBatchThreads(std::span<const uint64_t> indices, unsigned k,
                                      std::atomic<uint64_t>* landed, std::vector<Sample>* out,
                                      BatchReadStats* st) const {
  std::atomic<size_t> next{0};
  std::atomic<bool> failed{false};
  std::mutex mu;
  Status first;
  std::vector<size_t> retry;      // samples a worker could not allocate for: read again below
  retry.reserve(indices.size());  // so that pushing to it, in a bad_alloc handler, cannot throw
  auto record = [&](size_t j, Result<Sample> s) {
    if (s.ok()) {
      (*out)[j] = std::move(*s);
      if (landed) landed->fetch_add(1, std::memory_order_relaxed);
      return;
    }
    std::lock_guard<std::mutex> lock(mu);
    if (first.ok()) first = s.status();
    failed = true;
  };
  auto work = [&] {
    for (size_t j; !failed && (j = next.fetch_add(1)) < indices.size();) {
      try {
        record(j, Get(indices[j]));
      } catch (const std::bad_alloc&) {
        // Out of memory (an address-space limit: each thread costs a stack and an arena). This
        // worker stops; the calling thread reads its sample once the others are joined.
        std::lock_guard<std::mutex> lock(mu);
        retry.push_back(j);
        return;
      }
    }
  };
  unsigned n = static_cast<unsigned>(std::min<size_t>({k, indices.size(), kMaxBatchThreads}));
  std::vector<std::thread> threads;
  threads.reserve(n);
  for (unsigned t = 0; t + 1 < n; t++) {
    // A thread that cannot start (address space or task limits) caps the batch at the ones that
    // did; the calling thread always works, so the batch is read, only with fewer in flight.
    try {
      threads.emplace_back(work);
    } catch (const std::system_error&) {
      break;
    }
  }
  work();
  for (auto& t : threads) t.join();
  const auto started = static_cast<unsigned>(threads.size() + 1);
  threads.clear();
  // The samples of workers that ran out of memory, then any no thread claimed (every worker,
  // the caller's too, may have stopped), one at a time with the other threads gone.
  for (size_t j; !failed && (j = next.fetch_add(1)) < indices.size();) retry.push_back(j);
  for (size_t j : retry) {
    if (failed) break;
    try {
      record(j, Get(indices[j]));
    } catch (const std::bad_alloc&) {
      return Status(Code::kIOError,
                    fmt::format("reading sample {}: out of memory (ENOMEM) even on one thread: "
                                "raise the memory limit or read smaller batches",
                                indices[j]),
                    ENOMEM);
    }
  }
  st->reads = std::min<uint64_t>(next.load(), indices.size());
  st->peak_inflight = started;
  return first;
}

}  // namespace ds
