// A process-wide stop request for benchmarks (SIGINT/SIGTERM): set from a signal handler, read by
// the job loops, which stop issuing, drain what is in flight and report what they measured.
#pragma once

namespace ds {
void RequestStop();  // async-signal-safe
bool StopRequested();
void InstallStopHandlers();  // SIGINT and SIGTERM call RequestStop()
}  // namespace ds
