// The interpreter and environment of a child that runs the dspack Python package
// (`python3 -m dspack._replay`, `-m dspack._downgrade`): $DSPACK_PYTHON, else /usr/bin/python3
// (Debian's, which has torch); the package is found next to this binary in a build tree
// (<exe>/../python, i.e. build/python, put first on PYTHONPATH), else in the prefix it was
// installed into (P/lib/python3.X/dist-packages), else on Python's own path.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace ds::bench {

std::string DspackPython();
// This process's environment, PYTHONPATH led by the package's directory where one was found.
std::vector<std::string> DspackPythonEnv();

// Starts `DspackPython() -m MODULE ARG` with DspackPythonEnv(), in a process group of its own
// (its DataLoader workers join it: kill(-pid) ends them all), stdin and stdout from in_fd and
// out_fd (-1: this process's). Returns the pid, or the posix_spawn error number (> 0) as
// *error with -1.
pid_t SpawnDspackPython(const std::string& module, const std::string& arg, int in_fd, int out_fd,
                        int* error);

}  // namespace ds::bench
