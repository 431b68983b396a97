#include "bench/replay/torch_loader.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <thread>
#include <vector>

#include "bench/common/python_child.h"

namespace ds::bench {

using nlohmann::json;

namespace {

// What the child raised ("TypeName: message") as a Code: the data's fault (exit 1) for the
// dataset's own errors and missing files, the environment's (exit 2) for a missing module, else
// an IO error (exit 2).
Code ErrorCode(std::string_view why) {
  for (std::string_view bad : {"CorruptSampleError", "DatasetError", "FileNotFoundError",
                               "IsADirectoryError", "RuntimeError: Found no valid file"}) {
    if (why.rfind(bad, 0) == 0)
      return bad == "CorruptSampleError" ? Code::kCorruption : Code::kBadInput;
  }
  if (why.rfind("ModuleNotFoundError", 0) == 0 || why.rfind("ImportError", 0) == 0) {
    return Code::kUnsupported;
  }
  return Code::kIOError;
}

std::string Fix() {
  return "dsbench replay `loader=torch` needs Debian's python3-torch and python3-torchvision and "
         "the dspack Python package (built with the project, DSPACK_PYTHON=ON; docs/python.md)";
}

}  // namespace

Result<std::unique_ptr<TorchLoader>> TorchLoader::Start(const ReplayOptions& o,
                                                        const std::string& path,
                                                        const std::string& kind, uint64_t samples) {
  json job = {{"path", path},
              {"kind", kind},
              {"mode", Name(o.mode)},
              {"workers", o.workers},
              {"batch", o.batch},
              {"prefetch", o.prefetch},
              {"seed", o.seed},
              {"samples", samples},
              {"compute_time", o.compute_time},
              {"batch_reads", o.batch_reads}};
  // A child that died must be an error on write (EPIPE), not SIGPIPE ending dsbench.
  ::signal(SIGPIPE, SIG_IGN);
  int in[2], out[2];
  if (::pipe2(in, O_CLOEXEC) != 0 || ::pipe2(out, O_CLOEXEC) != 0) {
    return Status::FromErrno(errno, "pipe");
  }
  auto t = std::unique_ptr<TorchLoader>(new TorchLoader());
  t->to_child_ = OwnedFd(in[1]);
  t->from_child_ = OwnedFd(out[0]);
  OwnedFd child_in(in[0]), child_out(out[1]);

  // A process group of its own: the DataLoader's workers are in it too, and the destructor ends
  // them all (a worker orphaned by a failed epoch would otherwise hold dsbench's stderr open).
  int rc = 0;
  t->pid_ = SpawnDspackPython("dspack._replay", job.dump(), child_in.get(), child_out.get(), &rc);
  std::string py = DspackPython();
  if (rc != 0) {
    t->pid_ = -1;
    return Status(Code::kUnsupported, fmt::format("{}: {}; {}", py, std::strerror(rc), Fix()));
  }
  DS_ASSIGN_OR_RETURN(std::string line, t->ReadLine());
  json ready = json::parse(line, nullptr, false);
  if (ready.is_discarded() || !ready.contains("ready")) {
    std::string why =
        ready.is_object() && ready.contains("error") ? ready["error"].get<std::string>() : line;
    return Status(ErrorCode(why),
                  fmt::format("{}: the DataLoader did not start: {}{}", path, why,
                              ErrorCode(why) == Code::kUnsupported ? "; " + Fix() : std::string()));
  }
  return t;
}

TorchLoader::~TorchLoader() {
  if (pid_ <= 0) return;
  to_child_.reset();  // end of input: the child returns
  int st = 0;
  bool exited = false;
  for (int waited = 0; waited < 10000 && !exited; waited += 10) {
    exited = ::waitpid(pid_, &st, WNOHANG) == pid_;
    if (!exited) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ::kill(-pid_, SIGKILL);  // the group: the child if it hung, and any worker it left behind
  if (!exited) ::waitpid(pid_, &st, 0);
}

Result<std::string> TorchLoader::ReadLine() {
  for (;;) {
    size_t nl = buf_.find('\n');
    if (nl != std::string::npos) {
      std::string line = buf_.substr(0, nl);
      buf_.erase(0, nl + 1);
      return line;
    }
    char chunk[65536];
    ssize_t n = ::read(from_child_.get(), chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Status::FromErrno(errno, "reading the DataLoader's results");
    if (n == 0) {
      return Status(Code::kUnsupported,
                    fmt::format("the DataLoader process ({} -m dspack._replay) ended without a "
                                "result; its error is above",
                                DspackPython()));
    }
    buf_.append(chunk, static_cast<size_t>(n));
  }
}

Result<EpochResult> TorchLoader::RunEpoch(int epoch, double files_per_sample) {
  std::string cmd = fmt::format("epoch {}\n", epoch);
  DS_RETURN_IF_ERROR(WriteFull(to_child_.get(), cmd.data(), cmd.size(), "the DataLoader process"));
  DS_ASSIGN_OR_RETURN(std::string line, ReadLine());
  json r = json::parse(line, nullptr, false);
  if (r.is_discarded() || !r.is_object()) {
    return Status(Code::kInternal, "the DataLoader process answered: " + line);
  }
  if (r.contains("error")) {
    std::string why = r["error"].get<std::string>();
    return Status(ErrorCode(why), "the DataLoader failed: " + why);
  }
  EpochResult e;
  e.epoch = epoch;
  e.seconds = r.value("seconds", 0.0);
  e.samples = r.value("samples", uint64_t{0});
  e.bytes = r.value("bytes", uint64_t{0});
  e.opens = static_cast<uint64_t>(static_cast<double>(e.samples) * files_per_sample + 0.5);
  e.first_batch_seconds = r.value("first_batch_seconds", 0.0);
  e.au = r.value("au", 0.0);
  e.cpu_seconds = r.value("cpu_seconds", 0.0);
  for (const auto& w : r["waits_ns"]) e.wait_lat.Add(w.get<uint64_t>());
  // The real loader's capacity is what it delivered: nothing says how long its workers idled.
  e.capacity_samples_per_sec = e.seconds > 0 ? e.samples / e.seconds : 0;
  return e;
}

}  // namespace ds::bench
