// Uploads of the s3:// backend (src/storage_s3.h, docs/s3.md): an object is written once, whole.
//   - NewS3Writable (Storage::Create): appends are buffered; up to kS3PartSize the object goes
//     up in one PUT at Commit, past it as a multipart upload of kS3PartSize parts (each PUT with
//     its Content-MD5, retried by the client; up to kS3PartsInFlight of them at once, each on
//     a thread of its own while the writer fills the next), completed at Commit. Dropped without
//     Commit, a multipart upload is aborted; nothing appears under the key.
//   - NewS3SpoolWrite (Storage::OpenWrite): written at offsets into a local spool file; Sync and
//     Close upload the spool whole (as above) when it changed since the last upload.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

#include "src/fd.h"
#include "src/s3_client.h"
#include "src/storage.h"

namespace ds {

inline constexpr size_t kS3PartSize = 8 << 20;  // S3's minimum part is 5 MiB (but the last)
inline constexpr size_t kS3PartsInFlight = 4;   // parts of one upload going up at once

// "Content-MD5: <base64>" of body, the header S3 checks a PUT's body by.
std::string ContentMd5Header(std::string_view body);

std::unique_ptr<WritableFile> NewS3Writable(S3Client& client, std::string key, std::string uri);
std::unique_ptr<RandomWriteFile> NewS3SpoolWrite(S3Client& client, OwnedFd spool, std::string key,
                                                 std::string uri);

}  // namespace ds
