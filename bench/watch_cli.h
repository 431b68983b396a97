// `dsbench watch` and `dsbench probe` (docs/watch.md): flags in, bench/watch's run, the report
// out. Kept apart from the other families of commands, as each is.
//
// Exit codes: watch -- CMD: the command's own (128+N when a signal N ended it); watch --pid: 0;
// 2 usage or IO error (no command or PID, a PID that does not exist, --interval 0, a log that
// cannot be written, a command that cannot be run). probe: 0, or 2.
#pragma once

#include <CLI/CLI.hpp>
#include <memory>

namespace ds::bench {

class WatchCommands {
 public:
  explicit WatchCommands(CLI::App& app);
  ~WatchCommands();
  int Run();  // -1 when neither command was given, else the exit code

  struct Flags;  // defined in the .cc

 private:
  std::unique_ptr<Flags> f_;
};

}  // namespace ds::bench
