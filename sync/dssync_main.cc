// dssync: stage a dataset from shared storage onto local disk (docs/dssync.md).
//   dssync SRC DST [options]      copy, verify against the dataset's hashes, commit atomically
//   dssync verify DST             re-hash a staged copy against .dssync-manifest.json
// Parses flags and calls the sync/ library; exit codes: 0 ok, 1 bad data (a corrupt, changed
// or unreadable source file; verify found a problem), 2 usage or environment (bad flags, DST
// inside SRC, not enough space, an IO error on DST).
#include <cstring>

#include "src/cli_args.h"
#include "sync/sync_cli.h"

static int Run(int argc, char** argv) try {
  if (argc > 1 && std::strcmp(argv[1], "verify") == 0) {
    return ds::sync::VerifyCommand(argc - 1, argv + 1);
  }
  return ds::sync::StageCommand(argc, argv);
} catch (...) {
  return ds::ExceptionExit("dssync");
}

int main(int argc, char** argv) { return ds::FinishStdout("dssync", Run(argc, argv)); }
