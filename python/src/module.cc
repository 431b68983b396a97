// dspack._dspack: the Python extension module, a thin pybind11 layer over formats/
// (docs/python.md). It re-implements no format: every read goes through LayoutReader
// (formats/layout.h), opened by OpenAnyReader (any layout, a zip file or a directory tree).
//
// Contracts:
// - The GIL is released for every read (get, read_batch, sizes, keys, verify); Python objects
//   are built after the read, with the GIL held again.
// - Errors map from Status codes to Python exceptions (ToPython below): corruption of a sample or
//   of the data (kCorruption, kBadInput while reading) -> CorruptSampleError, a subclass of
//   DatasetError, a subclass of OSError; a dataset that cannot be opened (damaged, unfinished,
//   not a dataset) -> DatasetError; a missing path or file -> FileNotFoundError; a bad argument
//   -> ValueError; an index out of range -> IndexError. Each is built from one message string
//   (torch re-raises a DataLoader worker's exception as type(message)), and the message names
//   the file, offset and key where the library's Status does.
// - Fork: a Reader belongs to the process that opened it. Used in a child after fork(), it
//   raises DatasetError (open it again in the child; dspack.torch does); destroyed in a child,
//   it is leaked, not closed: an LMDB environment must not be closed by a child (its reader
//   slots in the lock file carry the parent's pid), and the leak is the one safe choice.
// - copy=False hands each field out as a read-only numpy uint8 array that owns the bytes it
//   views (the C++ buffer moves into the array's base capsule): it lives as long as the array
//   does, and no copy is made after the read.
// - read_packed (read_batch(packed=True)) hands each field of a batch out as one writeable uint8
//   array that owns the batch's bytes of that field, with int64 offsets (Reader::ReadPacked).
// - malloc: at import, glibc's malloc is limited to one arena (mallopt M_ARENA_MAX 1), keeps up
//   to 64 MiB of freed memory (M_TRIM_THRESHOLD) and maps only blocks over 16 MiB
//   (M_MMAP_THRESHOLD), unless DSPACK_MALLOC_ARENAS is set (to a number: that many arenas; to
//   "default": malloc untouched). Threads that
//   read samples allocate and free ~100 KB buffers (the C++ read, then the Python bytes) that
//   other threads free; with per-thread arenas every buffer came back as fresh pages, faulted in
//   again: 4 threads calling read_batch read 3,500 samples/s where one read 25,000 (measured,
//   110 KB samples, warm); with one arena, 4 threads read 23,000-26,000 (docs/python.md).
#include <malloc.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "formats/shard_assignment.h"
#include "python/src/py_util.h"
#include "python/src/reader.h"

namespace py = pybind11;
using namespace ds;
using dspack_py::g_corrupt_error;
using dspack_py::g_dataset_error;
using dspack_py::Reader;

PYBIND11_MODULE(_dspack, m) {
  m.doc() = "dspack's readers (formats/layout.h); use the dspack package, not this module";
  const char* arenas = std::getenv("DSPACK_MALLOC_ARENAS");
  std::string a = arenas ? arenas : "1";
  if (a != "default") {
    int n = std::atoi(a.c_str());
    if (n > 0) ::mallopt(M_ARENA_MAX, n);
    // Freed sample buffers stay in the heap for the next batch (up to 64 MiB of free top) instead
    // of going back to the kernel and being faulted in again; fixed thresholds, so glibc's
    // dynamic mmap threshold does not move under a changing batch size.
    ::mallopt(M_TRIM_THRESHOLD, 64 << 20);
    ::mallopt(M_MMAP_THRESHOLD, 16 << 20);
  }
  g_dataset_error = py::reinterpret_steal<py::object>(PyErr_NewExceptionWithDoc(
      "dspack._dspack.DatasetError",
      "A dataset that cannot be read: damaged, unfinished, not a dataset.", PyExc_OSError,
      nullptr));
  g_corrupt_error = py::reinterpret_steal<py::object>(PyErr_NewExceptionWithDoc(
      "dspack._dspack.CorruptSampleError",
      "Stored data failed a check; the message names the file, offset and key.",
      g_dataset_error.ptr(), nullptr));
  m.attr("DatasetError") = g_dataset_error;
  m.attr("CorruptSampleError") = g_corrupt_error;

  py::class_<Reader>(m, "Reader")
      .def(py::init<const std::string&>(), py::arg("path"))
      .def("__len__", &Reader::size)
      .def_property_readonly("kind", &Reader::kind)
      .def_property_readonly("path", &Reader::path)
      .def_property_readonly("label_field", &Reader::label_field)
      .def_property_readonly("classes", &Reader::classes)
      .def_property_readonly("closed", &Reader::closed)
      .def("close", &Reader::close)
      .def("get", &Reader::Get, py::arg("i"), py::arg("copy") = true)
      .def("read_batch", &Reader::ReadBatch, py::arg("indices"), py::arg("inflight") = 32,
           py::arg("copy") = true, py::arg("collate") = false)
      .def("read_packed", &Reader::ReadPacked, py::arg("indices"), py::arg("inflight") = 32)
      .def("last_batch_stats", &Reader::LastStats)
      .def_property_readonly("landed", &Reader::landed)
      .def("sizes", &Reader::Sizes)
      .def("keys", &Reader::Keys)
      .def("index_of", &Reader::IndexOf, py::arg("key"))
      .def("shards", &Reader::Shards, py::arg("whole") = false)
      .def("info", &Reader::Info)
      .def("verify", &Reader::Verify);

  m.def(
      "assign_shards",
      [](const std::vector<uint64_t>& bytes, uint32_t rank, uint32_t world, const std::string& by) {
        if (world == 0 || rank >= world) throw py::value_error("rank must be < world (world >= 1)");
        ShardPolicy p;
        if (by == "bytes") {
          p = ShardPolicy::kBalancedBytes;
        } else if (by == "round-robin") {
          p = ShardPolicy::kRoundRobin;
        } else {
          throw py::value_error("assign must be 'bytes' or 'round-robin', not '" + by + "'");
        }
        return AssignShards(bytes, rank, world, p);
      },
      py::arg("shard_bytes"), py::arg("rank"), py::arg("world"), py::arg("by") = "bytes",
      "Which shards rank `rank` of `world` reads: formats/shard_assignment.h, the function dssync "
      "uses, so a node staged with `dssync --rank r --world w` holds exactly these.");
}
