// dsbench-slowfs: the slow file system's daemon (docs/dsbench.md#slowfs). Serves SRC read-only
// at MNT through FUSE, sleeping before each request as an NFS client waits for round trips
// (ops.h). `dsbench slowfs`, `--meta-latency` and `--read-latency` run it (slowfs/mount.h);
// tests run it directly (tests/fixtures/fuse_mount.sh).
//
//   dsbench-slowfs SRC MNT [--meta-latency 1ms] [--read-latency 0] [--max-threads 128]
//                  [--cache-timeout 1s] [--no-kernel-cache] [-o OPT[,OPT...]]... [-f] [-d]
//
// Exit codes as every dspack tool's: 0 clean unmount (fusermount3 -u, SIGTERM, SIGINT),
// 2 usage error, or the mount or its session failed.
#include <fcntl.h>
#include <fmt/format.h>
#include <fuse.h>
#include <fuse_lowlevel.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>

#include <CLI/CLI.hpp>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "slowfs/init_fixup.h"
#include "slowfs/ops.h"
#include "src/cli_args.h"
#include "src/fd.h"

namespace {

constexpr std::string_view kTool = "dsbench-slowfs";
constexpr double kMaxLatency = 60;          // seconds
constexpr double kMaxCacheTimeout = 86400;  // seconds

int Fail(const ds::Status& s) { return ds::Fail(kTool, s); }

ds::Status Usage(const std::string& message) {
  return ds::Status(ds::Code::kInvalidArgument, message);
}

struct Flags {
  std::string src, mnt;
  std::string meta_latency = "1ms", read_latency = "0", cache_timeout = "1s";
  unsigned max_threads = 128;
  bool no_kernel_cache = false, foreground = false, debug = false;
  std::vector<std::string> mount_options;  // -o values, passed to libfuse as given
};

// A duration flag, in seconds, from 0 to `max`.
ds::Status Latency(const std::string& text, const char* flag, double max, double* seconds) {
  DS_RETURN_IF_ERROR(ds::DurationFlag(text, flag, seconds));
  if (!std::isfinite(*seconds) || *seconds < 0 || *seconds > max) {
    return Usage(fmt::format("{} '{}': from 0 to {} s", flag, text, max));
  }
  return ds::Status::Ok();
}

ds::Result<std::string> RealDir(const char* what, const std::string& p) {
  char real[PATH_MAX];
  if (!::realpath(p.c_str(), real)) {
    return ds::Status::FromErrno(errno, fmt::format("{} '{}'", what, p),
                                 ds::Code::kInvalidArgument);
  }
  struct stat st;
  if (::stat(real, &st) != 0 || !S_ISDIR(st.st_mode)) {
    return Usage(fmt::format("{} '{}' is not a directory", what, p));
  }
  return std::string(real);
}

// The state the operations share, from the flags: the source opened, the latencies resolved.
ds::Status MakeState(const Flags& f, const std::string& src, ds::slowfs::State* st) {
  double meta = 0, read = 0;
  DS_RETURN_IF_ERROR(Latency(f.meta_latency, "--meta-latency", kMaxLatency, &meta));
  DS_RETURN_IF_ERROR(Latency(f.read_latency, "--read-latency", kMaxLatency, &read));
  DS_RETURN_IF_ERROR(
      Latency(f.cache_timeout, "--cache-timeout", kMaxCacheTimeout, &st->cache_timeout));
  DS_ASSIGN_OR_RETURN(st->root, ds::OpenFile(src, O_RDONLY | O_DIRECTORY));
  st->root_proc = "/proc/self/fd/" + std::to_string(st->root.get());
  st->meta_latency_ns = std::llround(meta * 1e9);
  st->read_latency_ns = std::llround(read * 1e9);
  st->max_threads = f.max_threads;
  st->kernel_cache = !f.no_kernel_cache;
  st->debug = f.debug;
  return ds::Status::Ok();
}

// libfuse's arguments: read-only, permissions checked by the kernel against SRC's modes and
// owners, the source as fsname, then the -o options as given.
ds::Status MountArgs(const Flags& f, const std::string& src, const char* argv0, fuse_args* args) {
  char* opts = nullptr;
  std::string fsname = "fsname=" + src;
  bool ok = fuse_opt_add_opt(&opts, "ro,default_permissions,subtype=dsbench-slowfs") == 0 &&
            fuse_opt_add_opt_escaped(&opts, fsname.c_str()) == 0;
  ok = ok && fuse_opt_add_arg(args, argv0) == 0 && fuse_opt_add_arg(args, "-o") == 0 &&
       fuse_opt_add_arg(args, opts) == 0;
  std::free(opts);
  for (const std::string& o : f.mount_options) {
    ok = ok && fuse_opt_add_arg(args, "-o") == 0 && fuse_opt_add_arg(args, o.c_str()) == 0;
  }
  if (f.debug) ok = ok && fuse_opt_add_arg(args, "-d") == 0;
  return ok ? ds::Status::Ok() : ds::Status(ds::Code::kInternal, "out of memory");
}

// Mounts and serves until unmounted or signalled.
ds::Status Serve(const Flags& f, const std::string& src, const std::string& mnt, const char* argv0,
                 ds::slowfs::State* state) {
  fuse_args args = FUSE_ARGS_INIT(0, nullptr);
  ds::Status s = MountArgs(f, src, argv0, &args);
  fuse_operations ops = ds::slowfs::MakeOps();
  fuse* fs = s.ok() ? fuse_new(&args, &ops, sizeof ops, state) : nullptr;
  fuse_opt_free_args(&args);
  if (!s.ok()) return s;
  // libfuse printed why: in practice an unknown -o option.
  if (fs == nullptr) return Usage("could not set up the file system (bad -o option?)");
  if (fuse_mount(fs, mnt.c_str()) != 0) {
    fuse_destroy(fs);
    return ds::Status(ds::Code::kIOError, "could not mount on '" + mnt + "'");
  }
  fuse_session* se = fuse_get_session(fs);
  auto finish = [&](ds::Status st) {
    fuse_unmount(fs);  // no-op when already unmounted; lazy unmount as root otherwise
    fuse_destroy(fs);
    return st;
  };
  if (ds::Status st = ds::slowfs::InstallInitFixup(se, f.debug); !st.ok()) return finish(st);
  if (fuse_daemonize(f.foreground ? 1 : 0) != 0) {
    return finish(ds::Status(ds::Code::kIOError, "could not daemonize"));
  }
  // A shell starts background commands with SIGINT ignored, and libfuse only installs its
  // handlers over SIG_DFL: restore the default so SIGINT unmounts cleanly too. (SIGHUP is left
  // alone so nohup keeps working.)
  ::signal(SIGINT, SIG_DFL);
  ::signal(SIGTERM, SIG_DFL);
  if (fuse_set_signal_handlers(se) != 0) {
    return finish(ds::Status(ds::Code::kIOError, "could not install the signal handlers"));
  }
  // Sleep precision: the default 50 us timer slack is inherited by the worker threads.
  ::prctl(PR_SET_TIMERSLACK, 1000UL, 0UL, 0UL, 0UL);
  fuse_loop_config* loop = fuse_loop_cfg_create();
  if (loop == nullptr) {
    fuse_remove_signal_handlers(se);
    return finish(ds::Status(ds::Code::kInternal, "out of memory"));
  }
  fuse_loop_cfg_set_clone_fd(loop, 0);
  fuse_loop_cfg_set_max_threads(loop, f.max_threads);
  // Idle threads are kept (libfuse's default max_idle_threads is "unlimited").
  int res = fuse_loop_mt(fs, loop);
  // res: 0 after `fusermount3 -u`, the signal number after SIGTERM/SIGINT/SIGHUP (newer
  // libfuse), negative errno on failure.
  fuse_loop_cfg_destroy(loop);
  fuse_remove_signal_handlers(se);
  if (res < 0) return finish(ds::Status::FromErrno(-res, "session loop failed"));
  return finish(ds::Status::Ok());
}

}  // namespace

int main(int argc, char** argv) try {
  CLI::App app{
      "dsbench-slowfs: the slow file system. A read-only FUSE passthrough of SRC at MNT that "
      "delays requests, emulating NFS round trips; each request sleeps on its own thread, so "
      "concurrent requests overlap. Usually run by `dsbench slowfs` or --meta-latency."};
  app.set_version_flag("--version", std::string("dsbench-slowfs ") + DSPACK_VERSION);
  app.footer(
      "Unmount with `fusermount3 -u MNT`, or send SIGTERM/SIGINT to the daemon.\n"
      "Exit codes: 0 clean unmount, 2 usage error or a failed mount.\n"
      "Docs: docs/dsbench.md#slowfs");
  Flags f;
  app.add_option("SRC", f.src, "The directory to serve")->required();
  app.add_option("MNT", f.mnt, "An existing directory to mount on")->required();
  app.add_option("--meta-latency", f.meta_latency,
                 "Delay of each LOOKUP/GETATTR, OPEN, OPENDIR, READDIR, READLINK, e.g. 1ms")
      ->capture_default_str();
  app.add_option("--read-latency", f.read_latency, "Delay of each READ request, e.g. 0.2ms")
      ->capture_default_str();
  app.add_option("--max-threads", f.max_threads, "Worker threads = requests in flight")
      ->check(CLI::Range(1u, 10000u))
      ->capture_default_str();
  app.add_option("--cache-timeout", f.cache_timeout,
                 "Kernel entry/attribute/negative cache timeout")
      ->capture_default_str();
  app.add_flag("--no-kernel-cache", f.no_kernel_cache,
               "Drop a file's page cache on every open (for sources that change while mounted)");
  app.add_option("-o", f.mount_options, "Extra libfuse/mount options (e.g. allow_other)");
  app.add_flag("-f", f.foreground, "Stay in the foreground");
  app.add_flag("-d", f.debug, "Debug: log every request to stderr (implies -f)");
  if (int rc = ds::ParseArgs(kTool, app, argc, argv); rc >= 0) return rc;
  if (f.debug) f.foreground = true;

  auto src = RealDir("SRC", f.src);
  if (!src.ok()) return Fail(src.status());
  auto mnt = RealDir("MNT", f.mnt);
  if (!mnt.ok()) return Fail(mnt.status());
  if (*mnt == *src || (mnt->size() > src->size() && mnt->compare(0, src->size(), *src) == 0 &&
                       (*src == "/" || (*mnt)[src->size()] == '/'))) {
    // The daemon would look itself up through its own mount.
    return Fail(Usage("MNT '" + f.mnt + "' must not be SRC or inside it"));
  }
  ds::slowfs::State state;
  if (ds::Status s = MakeState(f, *src, &state); !s.ok()) return Fail(s);
  if (ds::Status s = Serve(f, *src, *mnt, argv[0], &state); !s.ok()) return Fail(s);
  std::fprintf(stderr, "dsbench-slowfs: unmounted; %s\n",
               ds::slowfs::StatsText(state.stats).c_str());
  return 0;
} catch (...) {
  return ds::ExceptionExit(kTool);
}
