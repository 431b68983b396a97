// Pieces the LMDB writer (lmdb_writer.cc) and reader (lmdb_reader.cc) share: liblmdb's error
// codes as a Status, the sample key, the image/label sample of the pickle and caffe layouts, and
// MDB_val views. Internal to formats/interop (the layout's interface is lmdb_layout.h).
#pragma once

#include <lmdb.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "formats/sample.h"
#include "src/status.h"

namespace ds::lmdb {

// kCorruption for liblmdb's corruption codes, kIOError otherwise; "<what>: <mdb_strerror>".
Status MdbError(int rc, const std::string& what);

// "%010d": sample i's key in every layout (docs/formats/lmdb.md).
std::string SampleKey(uint64_t i);

// A pickle or caffe sample as readers see it (and as its CRC covers it): image, then label.
Sample ImageLabelSample(std::string key, std::string_view image, int64_t label);

inline MDB_val Val(std::string_view s) { return {s.size(), const_cast<char*>(s.data())}; }
inline std::string_view View(const MDB_val& v) {
  return {static_cast<const char*>(v.mv_data), v.mv_size};
}

// Size and XXH3-64 of a whole file (dspack.json records them for data.mdb).
Status HashFile(const std::string& path, uint64_t* size, uint64_t* hash);

}  // namespace ds::lmdb
