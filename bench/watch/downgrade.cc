#include "bench/watch/downgrade.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <thread>

#include "bench/common/python_child.h"
#include "src/human.h"
#include "src/page_cache.h"
#include "src/stop.h"
#include "src/system_probe.h"

namespace ds::bench {

namespace {

bool IsUrl(const std::string& s) { return s.find("://") != std::string::npos; }

// A dataset worth staging: a URL, or a path on a network file system.
bool Remote(const std::string& dataset) {
  if (IsUrl(dataset)) return true;
  std::string fs = ProbeSystem(dataset).fs_type;
  return fs == "nfs" || fs == "lustre" || fs == "gpfs" || fs == "cifs" || fs == "fuse";
}

// Runs `python3 -m dspack._downgrade JOB` and returns its one line of output.
Result<std::string> RunChild(const nlohmann::json& job) {
  int out[2];
  if (::pipe2(out, O_CLOEXEC) != 0) return Status::FromErrno(errno, "pipe");
  int rc = 0;
  pid_t pid = SpawnDspackPython("dspack._downgrade", job.dump(), -1, out[1], &rc);
  std::string py = DspackPython();
  ::close(out[1]);
  if (rc != 0) {
    ::close(out[0]);
    return Status(Code::kUnsupported,
                  fmt::format("{}: {}; the downgrade needs python3-torch and the dspack Python "
                              "package (docs/python.md)",
                              py, std::strerror(rc)));
  }
  std::string all;
  char buf[65536];
  ssize_t n;
  while ((n = ::read(out[0], buf, sizeof buf)) != 0) {
    if (n < 0 && errno == EINTR) {
      if (StopRequested()) break;  // Ctrl-C: the child's group is ended below
      continue;
    }
    if (n < 0) break;
    all.append(buf, static_cast<size_t>(n));
  }
  if (StopRequested()) ::kill(-pid, SIGINT);
  ::close(out[0]);
  int st = 0;
  ::waitpid(pid, &st, 0);
  ::kill(-pid, SIGKILL);  // any worker left behind
  if (StopRequested()) return Status(Code::kIOError, "stopped (SIGINT/SIGTERM)");
  while (!all.empty() && all.back() == '\n') all.pop_back();
  return all.substr(all.rfind('\n') == std::string::npos ? 0 : all.rfind('\n') + 1);
}

}  // namespace

Status CheckDowngrade(const DowngradeOptions& o) {
  if (o.workers < 1 || o.batch < 1 || o.prefetch < 1 || o.batches < 2) {
    return Status(Code::kInvalidArgument,
                  "`workers`, `batch` and `prefetch` must be at least 1, `batches` at least 2");
  }
  if (o.transform != "none" && o.transform != "decode") {
    return Status(Code::kInvalidArgument,
                  "`transform` " + o.transform + ": none or decode (dspack.torch.decode_image)");
  }
  return Status::Ok();
}

Result<DowngradeResult> RunDowngrade(const DowngradeOptions& o) {
  DS_RETURN_IF_ERROR(CheckDowngrade(o));
  DowngradeResult r;
  const bool root = ::geteuid() == 0;
  if (o.cold && !root) r.notes.push_back("not root: the runs from storage read a warm cache");
  std::string staged;
  if (Remote(o.dataset)) {
    if (o.stage && !o.stage_dir.empty()) {
      if (Status st = o.stage(o.dataset, o.stage_dir); !st.ok()) {
        std::error_code ec;  // a partial stage: the directory this run was to make
        std::filesystem::remove_all(o.stage_dir, ec);
        return st;
      }
      staged = o.stage_dir;
    } else {
      r.notes.push_back(
          "a remote dataset, not staged (no stage directory): no remote_access share");
    }
  }
  nlohmann::json job = {{"path", o.dataset},
                        {"staged", staged.empty() ? nlohmann::json() : nlohmann::json(staged)},
                        {"workers", o.workers},
                        {"batch", o.batch},
                        {"prefetch", o.prefetch},
                        {"transform", o.transform},
                        {"batches", o.batches},
                        {"seed", o.seed},
                        {"cold", o.cold && root}};
  auto line = RunChild(job);
  if (!staged.empty()) {
    std::error_code ec;
    std::filesystem::remove_all(staged, ec);  // the stage this run made (the tool's new dir)
  }
  DS_RETURN_IF_ERROR(line.status());
  nlohmann::json j = nlohmann::json::parse(*line, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    return Status(Code::kUnsupported,
                  fmt::format("{}: the downgrade's loader gave no result ({}); it needs "
                              "python3-torch and the dspack Python package (docs/python.md)",
                              o.dataset, line->empty() ? "no output" : *line));
  }
  if (j.contains("error")) {
    std::string why = j["error"].get<std::string>();
    // A missing dataset is the caller's (exit 2, as everywhere in dspack); a damaged one the
    // data's (exit 1); no torch the environment's (exit 2).
    Code c = why.rfind("ModuleNotFoundError", 0) == 0 ? Code::kUnsupported
             : why.rfind("FileNotFoundError", 0) == 0 ? Code::kNotFound
                                                      : Code::kBadInput;
    return Status(c, fmt::format("{}: {}", o.dataset, why));
  }
  for (auto& [name, run] : j["runs"].items()) {
    DowngradeRun d;
    d.samples = run.value("samples", uint64_t{0});
    d.seconds = run.value("seconds", 0.0);
    d.samples_per_s = run.value("samples_per_s", 0.0);
    r.runs[name] = d;
  }
  for (const auto& n : j.value("notes", nlohmann::json::array())) r.notes.push_back(n);
  Attribute(o, &r);
  return r;
}

void Attribute(const DowngradeOptions& o, DowngradeResult* r) {
  auto per = [&](const char* name) {
    auto it = r->runs.find(name);
    return it == r->runs.end() ? 0.0 : it->second.per_sample();
  };
  double configured = per("configured"), memory = per("memory"), decode_1 = per("memory_w0");
  if (configured <= 0) return;
  // Shares of configured's time: the in-memory run can be the slower of the two (its noise, or
  // samples that cost more to send than to read): then storage is 0, and nothing exceeds 100 %.
  double loader = std::min(memory, configured);
  double storage = configured - loader;
  double decode = std::min(loader, decode_1 / o.workers);
  double ipc = loader - decode;
  r->parts = {{"storage", storage, storage / configured},
              {"decode_transform", decode, decode / configured},
              {"worker_ipc", ipc, ipc / configured}};
  std::sort(r->parts.begin(), r->parts.end(), [](const Attribution& a, const Attribution& b) {
    return a.seconds_per_sample > b.seconds_per_sample;
  });
  r->largest = r->parts.front().name;
  if (r->runs.count("staged")) {
    double remote = std::clamp(configured - per("staged"), 0.0, storage);  // a part of storage
    r->parts.push_back({"remote_access", remote, remote / configured});
  }
  // What would pay off, the largest share first.
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  auto& a = r->advice;
  if (r->largest == "storage") {
    if (r->runs.count("staged") && per("staged") > 0 && per("staged") < 0.5 * configured) {
      a.push_back(
          fmt::format("stage it: from the local copy the loader is {:.1f}x faster "
                      "(dssync)",
                      configured / per("staged")));
    }
    a.push_back(
        "pack it, if it is a tree of small files (dspack convert), or read in batches "
        "(MapDataset(batch_reads=True)): fewer, larger reads");
    if (static_cast<unsigned>(o.workers) < cores) {
      a.push_back(
          fmt::format("more workers: {} of {} cores (the write-up's start: half the "
                      "cores, prefetch 4, persistent workers)",
                      o.workers, cores));
    }
  } else if (r->largest == "decode_transform") {
    a.push_back(fmt::format("more workers, up to the cores ({} of {}), or a cheaper transform",
                            o.workers, cores));
  } else {
    a.push_back(
        "worker IPC: persistent_workers=True, pin_memory=True, larger batches, or "
        "ThreadLoader (no worker processes)");
  }
  if (per("workers0") > 0 && per("workers0") < configured) {
    a.push_back(
        fmt::format("num_workers=0 was faster ({:.0f} against {:.0f} samples/s): the "
                    "workers cost more than they give",
                    r->runs["workers0"].samples_per_s, r->runs["configured"].samples_per_s));
  }
}

nlohmann::json DowngradeJson(const DowngradeOptions& o, const DowngradeResult& r) {
  nlohmann::json runs = nlohmann::json::object();
  for (const auto& [name, d] : r.runs) {
    runs[name] = {
        {"samples", d.samples}, {"seconds", d.seconds}, {"samples_per_s", d.samples_per_s}};
  }
  nlohmann::json parts = nlohmann::json::array();
  for (const Attribution& p : r.parts) {
    parts.push_back(
        {{"name", p.name}, {"seconds_per_sample", p.seconds_per_sample}, {"share", p.share}});
  }
  return {{"dataset", o.dataset},
          {"loader",
           {{"workers", o.workers},
            {"batch", o.batch},
            {"prefetch", o.prefetch},
            {"transform", o.transform},
            {"batches", o.batches}}},
          {"runs", runs},
          {"attribution", parts},
          {"largest", r.largest},
          {"advice", r.advice},
          {"notes", r.notes}};
}

std::string DowngradeText(const DowngradeOptions& o, const DowngradeResult& r) {
  std::string s = fmt::format(
      "the downgrade experiment on {}: the loader alone ({} workers, batch {}, prefetch {}, "
      "transform {}), {} batches a run\n",
      o.dataset, o.workers, o.batch, o.prefetch, o.transform, o.batches);
  for (const char* name : {"configured", "memory", "memory_w0", "workers0", "staged"}) {
    auto it = r.runs.find(name);
    if (it == r.runs.end()) continue;
    s += fmt::format("  {:<11} {:>9.0f} samples/s  ({:.1f} us a sample)\n", name,
                     it->second.samples_per_s, it->second.per_sample() * 1e6);
  }
  s += "  where a sample's time goes:\n";
  for (const Attribution& p : r.parts) {
    s += fmt::format("    {:<17} {:>5.1f} %  ({:.1f} us)\n", p.name, 100 * p.share,
                     p.seconds_per_sample * 1e6);
  }
  if (!r.largest.empty()) s += "  verdict: the largest share is " + r.largest + "\n";
  for (const std::string& a : r.advice) s += "  advice: " + a + "\n";
  for (const std::string& n : r.notes) s += "  note: " + n + "\n";
  return s;
}

}  // namespace ds::bench
