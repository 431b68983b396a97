// LMDB values in the encodings other tools read (docs/formats/lmdb.md#imagenet-pickle-and-caffe):
//
//   pickle  what the PyTorch ImageNet-LMDB recipes store per key (`pickle.loads(v)` ->
//           (image_bytes, label)), and their `__len__` (a pickled int) and `__keys__` (a pickled
//           list of the sample keys, as bytes). Pickle protocol 3: protocol 2 has no bytes opcode,
//           and Python 3 pickles bytes there as `_codecs.encode(latin-1 text)`, about 1.5x the
//           size of a JPEG; protocol 3 (BINBYTES) reads in every Python 3.
//   Datum   Caffe's `caffe.Datum` (caffe.proto) as `convert_imageset --encoded` writes it:
//           data = the file's bytes (field 4), label (5), encoded = true (7).
//
// The decoders take what these encoders write and what Python's pickle.dumps of the same tuple
// writes (protocols 3 to 5: memo and frame opcodes skipped); anything else is kCorruption.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "src/status.h"

namespace ds::lmdb {

// (image, label) as a protocol-3 pickle.
std::string PickleImageLabel(std::string_view image, int64_t label);
std::string PickleInt(int64_t v);
// A list of byte strings (the recipes' `__keys__`).
std::string PickleBytesList(std::span<const std::string> items);

struct ImageLabel {
  std::string_view image;  // into the decoded value
  int64_t label = 0;
};
Result<ImageLabel> UnpickleImageLabel(std::string_view value);
Result<int64_t> UnpickleInt(std::string_view value);

std::string EncodeDatum(std::string_view image, int32_t label);
Result<ImageLabel> DecodeDatum(std::string_view value);

}  // namespace ds::lmdb
