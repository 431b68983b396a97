// dssync's commands (docs/dssync.md), each parsing its own flags from main's argc/argv:
//   StageCommand    dssync SRC DST [options]: copy, verify against the dataset's hashes, commit
//                   atomically (one rank of an MPI job under mpirun --fanout);
//   VerifyCommand   dssync verify DST: re-hash a staged copy against .dssync-manifest.json.
// Both return main's exit code: 0 ok, 1 bad data, 2 usage or environment.
#pragma once

namespace ds::sync {

int StageCommand(int argc, char** argv);
int VerifyCommand(int argc, char** argv);  // argv[0] is "verify"

}  // namespace ds::sync
