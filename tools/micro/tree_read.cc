// dspack_tree_read: reads every file of a directory tree whole, the packer's small-file read
// (issue 12 §3: "use the engine for the packer's small-file reads, or show with a side-by-side
// measurement why plain threads are better"), in one of two ways, and prints one JSON line:
// mode, files, bytes, seconds, cpu_seconds (the process's user+sys, io_uring's io-wq workers
// included: they are threads of this process), inflight, peak_inflight.
//
//   threads  K threads, each: InputFile::Open (open, fstat, read whole, close: the local
//            storage backend), the call the
//            packer's reader threads make (formats/sources/dir_source.h), with kInlineLimit.
//   uring    one thread and one io_uring with K files in flight, each a linked chain
//            openat (into a registered file slot) -> read (up to kInlineLimit + 1 bytes from the
//            slot) -> close (the slot): three operations and no syscall of its own per file.
//            The size comes from the read, so no statx; a file over kInlineLimit is an error
//            here (the packer streams those separately).
//
//   dspack_tree_read TREE --mode threads|uring --inflight K
// tools/peers/tree_read_engines.sh runs both, local and through the slow file system. This is
// a measurement harness: it talks to liburing directly because the IO engine (src/io_engine.h)
// has no open/close operations; the packer would need them if io_uring measured better.
#include <fcntl.h>
#include <liburing.h>
#include <sys/resource.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <thread>
#include <vector>

#include "formats/sources/dir_source.h"
#include "src/cli_args.h"
#include "src/fd.h"
#include "src/io_engine.h"

namespace {

constexpr uint64_t kInlineLimit = 1 << 20;  // pack/packer.h's kInlineLimit

struct Totals {
  std::atomic<uint64_t> bytes{0};
  std::atomic<unsigned> inflight{0};
  std::atomic<unsigned> peak{0};
};

void NotePeak(Totals& t, unsigned now) {
  unsigned p = t.peak.load();
  while (now > p && !t.peak.compare_exchange_weak(p, now)) {
  }
}

ds::Status ReadThreads(const ds::FileTree& tree, unsigned k, Totals& t) {
  std::atomic<uint64_t> next{0};
  std::vector<ds::Status> errors(k);
  std::vector<std::thread> pool;
  for (unsigned w = 0; w < k; ++w) {
    pool.emplace_back([&, w] {
      for (uint64_t f; (f = next.fetch_add(1)) < tree.file_count();) {
        NotePeak(t, t.inflight.fetch_add(1) + 1);
        auto in = ds::InputFile::Open(*ds::LocalStorage(), tree.root(), std::string(tree.path(f)),
                                      kInlineLimit);
        t.inflight.fetch_sub(1);
        if (!in.ok()) {
          errors[w] = in.status();
          return;
        }
        if (!in->is_inline()) {
          errors[w] = ds::Status(ds::Code::kBadInput, "over 1 MiB: small files only");
          return;
        }
        t.bytes += in->size();
      }
    });
  }
  for (auto& th : pool) th.join();
  for (auto& e : errors) {
    if (!e.ok()) return e;
  }
  return ds::Status::Ok();
}

// user_data: slot << 2 | stage (0 openat, 1 read, 2 close).
ds::Status ReadUring(const ds::FileTree& tree, int root_fd, unsigned k, Totals& t) {
  io_uring ring;
  if (int rc = io_uring_queue_init(4 * k, &ring, 0); rc < 0) {
    return ds::ErrnoStatus(rc, "io_uring_queue_init");
  }
  struct RingGuard {
    io_uring* r;
    ~RingGuard() { io_uring_queue_exit(r); }
  } guard{&ring};
  // A blocking open or read (FUSE, NFS) is punted to io-wq, whose bounded workers default to
  // 4 per CPU (8 here): allow K, so K files are really in flight.
  unsigned workers[2] = {k, k};
  if (int rc = io_uring_register_iowq_max_workers(&ring, workers); rc < 0) {
    return ds::ErrnoStatus(rc, "io_uring_register_iowq_max_workers");
  }
  if (int rc = io_uring_register_files_sparse(&ring, k); rc < 0) {
    return ds::ErrnoStatus(rc, "io_uring_register_files_sparse");
  }
  struct Slot {
    std::string path;
    std::unique_ptr<char[]> buf{new char[kInlineLimit + 1]};
    int pending = 0;  // completions still to come for this file
    ssize_t got = 0;
    ds::Status error;
  };
  std::vector<Slot> slots(k);
  uint64_t next = 0, done = 0;
  unsigned live = 0;
  auto start = [&](unsigned s) {
    Slot& sl = slots[s];
    sl.path = tree.path(next++);
    sl.pending = 3;
    sl.got = 0;
    io_uring_sqe* sqe = io_uring_get_sqe(&ring);
    io_uring_prep_openat_direct(sqe, root_fd, sl.path.c_str(), O_RDONLY, 0, s);
    sqe->flags |= IOSQE_IO_LINK;
    sqe->user_data = uint64_t{s} << 2 | 0;
    sqe = io_uring_get_sqe(&ring);
    io_uring_prep_read(sqe, static_cast<int>(s), sl.buf.get(), kInlineLimit + 1, 0);
    sqe->flags |= IOSQE_FIXED_FILE | IOSQE_IO_LINK;
    sqe->user_data = uint64_t{s} << 2 | 1;
    sqe = io_uring_get_sqe(&ring);
    io_uring_prep_close_direct(sqe, s);
    sqe->user_data = uint64_t{s} << 2 | 2;
    NotePeak(t, ++live);
  };
  for (unsigned s = 0; s < k && next < tree.file_count(); ++s) start(s);
  while (done < tree.file_count()) {
    if (int rc = io_uring_submit_and_wait(&ring, 1); rc < 0 && rc != -EINTR) {
      return ds::ErrnoStatus(rc, "io_uring_submit_and_wait");
    }
    io_uring_cqe* cqe;
    unsigned head, seen = 0;
    std::vector<unsigned> finished;
    io_uring_for_each_cqe(&ring, head, cqe) {
      seen++;
      unsigned s = static_cast<unsigned>(cqe->user_data >> 2), stage = cqe->user_data & 3;
      Slot& sl = slots[s];
      if (cqe->res < 0 && sl.error.ok() && cqe->res != -ECANCELED) {
        sl.error = ds::ErrnoStatus(cqe->res, sl.path + (stage == 0 ? ": openat" : ": read"));
      }
      if (stage == 1 && cqe->res >= 0) sl.got = cqe->res;
      if (--sl.pending == 0) finished.push_back(s);
    }
    io_uring_cq_advance(&ring, seen);
    for (unsigned s : finished) {
      Slot& sl = slots[s];
      if (!sl.error.ok()) return sl.error;
      if (sl.got > static_cast<ssize_t>(kInlineLimit)) {
        return ds::Status(ds::Code::kBadInput, sl.path + ": over 1 MiB: small files only");
      }
      t.bytes += static_cast<uint64_t>(sl.got);
      done++;
      live--;
      if (next < tree.file_count()) start(s);
    }
  }
  return ds::Status::Ok();
}

double CpuSeconds() {
  rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec +
         (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

}  // namespace

int main(int argc, char** argv) try {
  CLI::App app{
      "dspack_tree_read: every file of a tree, K threads or one io_uring with K in flight"};
  std::string root, mode = "threads";
  unsigned k = 16;
  app.add_option("TREE", root)->required();
  app.add_option("--mode", mode, "threads or uring")
      ->check(CLI::IsMember({"threads", "uring"}))
      ->capture_default_str();
  app.add_option("--inflight", k, "Files in flight")
      ->check(CLI::Range(1u, 4096u))
      ->capture_default_str();
  if (int rc = ds::ParseArgs("dspack_tree_read", app, argc, argv); rc >= 0) return rc;

  auto tree = ds::FileTree::Scan(*ds::LocalStorage(), root, {},
                                 [](std::string_view, const ds::Status& e) { return e; });
  if (!tree.ok()) return ds::Fail("dspack_tree_read", tree.status());
  auto dir = ds::OpenFileAt(AT_FDCWD, root, O_RDONLY | O_DIRECTORY);
  if (!dir.ok()) return ds::Fail("dspack_tree_read", dir.status());

  Totals t;
  double cpu0 = CpuSeconds();
  auto t0 = std::chrono::steady_clock::now();
  ds::Status s = mode == "threads" ? ReadThreads(*tree, k, t) : ReadUring(*tree, dir->get(), k, t);
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  double cpu = CpuSeconds() - cpu0;
  if (!s.ok()) return ds::Fail("dspack_tree_read", s);
  nlohmann::json j = {{"mode", mode},
                      {"files", tree->file_count()},
                      {"bytes", t.bytes.load()},
                      {"seconds", secs},
                      {"cpu_seconds", cpu},
                      {"inflight", k},
                      {"peak_inflight", t.peak.load()}};
  std::printf("%s\n", j.dump().c_str());
  return 0;
} catch (...) {
  return ds::ExceptionExit("dspack_tree_read");
}
