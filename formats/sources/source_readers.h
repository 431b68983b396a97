// A zip file or a directory tree read as a dataset through LayoutReader (formats/layout.h), so
// that every reader above formats/ (the Python package first) takes any input with one call,
// OpenAnyReader. Samples are grouped exactly as `dspack convert` groups them
// (formats/sources/dir_source.h: key = path up to the first '.' of the last component, one field
// per file), in the same order, so sample i here is sample i of the converted dataset.
//
//   tree  Get(i) opens, reads whole and closes every file of sample i, as torchvision's
//         ImageFolder does; the file list is scanned once, at open (a file that vanished since
//         is kNotFound naming it). Locate: the sample's first file, offset 0.
//   zip   the central directory is read once at open (ZipArchive); Get(i) reads each member
//         (local header, data, inflate, CRC-32 check). Locate: the first member's local header.
//
// Neither has a label field (a tree's classes are what `dspack convert --label-from-dir`
// derives; read the converted dataset for labels), nor dspack metadata (Files() is empty).
// Verify reads every sample: the zip's CRCs are its only check, a tree has none.
// Thread-safety: Get, Head and ReadBatch are thread-safe, as for every LayoutReader.
#pragma once

#include <memory>
#include <string>

#include "formats/layout.h"

namespace ds {

// The tree is scanned on the local disk (the packer's walker); its files are opened and read
// through at.storage, as the zip is.
Result<std::unique_ptr<LayoutReader>> OpenTreeReader(const StorageRef& at);
Result<std::unique_ptr<LayoutReader>> OpenZipReader(const StorageRef& at);

}  // namespace ds
