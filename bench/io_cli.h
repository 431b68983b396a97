// `dsbench io` after its arguments are parsed (bench/fio_options.h): part of the dsbench
// executable. Runs the jobs (as one rank of an MPI job under mpirun), prints the report in each
// --output-format asked for (normal, json, json+) to stdout or --output, and returns main's exit
// code (0; 2 for a usage or IO error, printed as "dsbench: ...").
#pragma once

#include "bench/fio_options.h"
#include "bench/mpi_cli.h"

namespace ds::bench {

// The library's option fields (src/status.h, RenderOptionNames) as dsbench's flags.
inline constexpr OptionName kDsbenchFlags[] = {{"ioengine=io_uring", "--ioengine io_uring"},
                                               {"iodepth", "--iodepth"}};

int RunIoCommand(const FioSpec& spec, MpiIoFlags mpi_io, double mpi_timeout, int* argc,
                 char*** argv);

}  // namespace ds::bench
