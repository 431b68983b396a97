// The layouts dspack writes and reads, by name. The registry (formats/registry.h) holds one row
// per Format.
#pragma once

#include <string_view>

#include "src/status.h"

namespace ds {

enum class Format { kNative, kWds, kTfrecord, kRecordio, kLmdb };

// "native", "wds", "tfrecord", "recordio", "lmdb".
std::string_view FormatName(Format f);
// Also takes the aliases "webdataset", "tar" (wds) and "dspack-native".
Result<Format> ParseFormat(std::string_view name);

}  // namespace ds
