// A fix-up of the FUSE protocol for the slow file system: parallel directory operations.
//
// Without FUSE_PARALLEL_DIROPS in the INIT reply, the kernel serializes LOOKUP and READDIR per
// directory, so N threads stat-ing N files of one directory wait N x latency: the slow file
// system itself, not the emulated server, would be measured. libfuse before 3.16 never sends
// that flag even when the file system asks for it (libfuse PR #861). InstallInitFixup installs
// session I/O hooks (public API, fuse_session_custom_io) that pass all traffic through
// unchanged, except that they add the flag to the INIT reply when the kernel offered it. With a
// libfuse that sends it already, this is a no-op.
//
// One session per process (the hooks keep the INIT exchange in process-wide atomics).
#pragma once

#include <fuse_lowlevel.h>

#include "src/status.h"

namespace ds::slowfs {

// REQUIRES: se is mounted and its loop has not started. debug: log the INIT reply's flags.
Status InstallInitFixup(fuse_session* se, bool debug);

}  // namespace ds::slowfs
