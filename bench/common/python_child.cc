#include "bench/common/python_child.h"

#include <spawn.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string_view>

extern char** environ;

namespace ds::bench {

namespace {

// Where the dspack Python package is, for the child's PYTHONPATH: build/python when this
// binary runs from a build tree (build/bench/dsbench); P/lib/python3.X/dist-packages when it was
// installed into the prefix P (cmake --install); else "" (Python's own path, e.g. /usr/local).
std::string DspackPackageDir() {
  char exe[4096];
  ssize_t n = ::readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) return "";
  std::string dir(exe, static_cast<size_t>(n));
  dir = dir.substr(0, dir.rfind('/'));
  // The Python package's own files, not a dataset's.
  auto has = [&](const std::string& pkg) {
    std::error_code ec;
    return std::filesystem::exists(pkg + "/dspack/__init__.py", ec);
  };
  if (has(dir + "/../python")) return dir + "/../python";
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir + "/../lib", ec)) {
    std::string name = e.path().filename().string();
    if (name.rfind("python3", 0) == 0 && has(e.path().string() + "/dist-packages")) {
      return e.path().string() + "/dist-packages";
    }
  }
  return "";
}

}  // namespace

std::string DspackPython() {
  const char* env = std::getenv("DSPACK_PYTHON");
  return env && *env ? env : "/usr/bin/python3";
}

std::vector<std::string> DspackPythonEnv() {
  std::vector<std::string> env;
  std::string pkg = DspackPackageDir();
  for (char** e = environ; *e; e++) {
    if (!pkg.empty() && std::string_view(*e).rfind("PYTHONPATH=", 0) == 0) continue;
    env.emplace_back(*e);
  }
  if (!pkg.empty()) {
    const char* old = std::getenv("PYTHONPATH");
    env.push_back("PYTHONPATH=" + pkg + (old && *old ? std::string(":") + old : ""));
  }
  return env;
}

pid_t SpawnDspackPython(const std::string& module, const std::string& arg, int in_fd, int out_fd,
                        int* error) {
  std::vector<std::string> env = DspackPythonEnv();
  std::vector<char*> envp;
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::vector<std::string> argv = {DspackPython(), "-m", module, arg};
  std::vector<char*> args;
  for (auto& a : argv) args.push_back(a.data());
  args.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  if (in_fd >= 0) posix_spawn_file_actions_adddup2(&fa, in_fd, 0);
  if (out_fd >= 0) posix_spawn_file_actions_adddup2(&fa, out_fd, 1);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attr, 0);
  pid_t pid = -1;
  *error = ::posix_spawn(&pid, argv[0].c_str(), &fa, &attr, args.data(), envp.data());
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  return *error ? -1 : pid;
}

}  // namespace ds::bench
