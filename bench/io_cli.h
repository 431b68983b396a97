// `dsbench io` after its arguments are parsed (bench/io/fio_options.h): part of the dsbench
// executable. Runs the jobs (as one rank of an MPI job under mpirun), prints the report in each
// --output-format asked for (normal, json, json+) to stdout or --output, and returns main's exit
// code (0; 2 for a usage or IO error, printed as "dsbench: ...").
#pragma once

#include <string>
#include <string_view>

#include "bench/io/fio_options.h"
#include "bench/mpi_cli.h"

namespace CLI {
class App;
}

namespace ds::bench {

inline constexpr std::string_view kDsbench = "dsbench";  // the tool's name, in its messages

// The library's option fields (src/status.h, RenderOptionNames) as dsbench's flags: fio's
// options as fio spells them (`bs` -> --bs, `direct=1` -> --direct=1), then the subcommands'
// own flags (`on_error` -> --on-error, `cache=cold` -> --cache cold). main hands its CLI11 app
// to SetDsbenchFlags before anything renders. Call from main's thread.
void SetDsbenchFlags(const CLI::App* app);
// A library's text (an error, a report) with its option fields as dsbench's flags.
std::string RenderDsbenchFlags(std::string_view text);
// ds::Fail (src/cli_args.h) as "dsbench: ...", with RenderDsbenchFlags.
int DsbenchFail(const Status& s);
// Stages a remote dataset (URL) into the local directory `dir` with dssync's library: the
// stager `compare --stage-dir` and `watch --downgrade --stage-dir` are handed (bench/ does not
// link sync/; the tool does).
Status StageWithDssync(const std::string& url, const std::string& dir);
// A flag that only means something for the ranks of an MPI job, given to a plain run.
Status NeedsMpi(std::string_view flag);

int RunIoCommand(const FioSpec& spec, MpiIoFlags mpi_io, double mpi_timeout, int* argc,
                 char*** argv);

}  // namespace ds::bench
