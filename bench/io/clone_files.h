// A `dsbench io` clone's files (fio's nrfiles): how each is opened and which one each IO goes to
// (fio's file_service_type). Used by the clone's loop, bench/io/io_worker.cc.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "bench/io/io_job.h"
#include "bench/io/io_pattern.h"
#include "bench/io/io_verify.h"
#include "src/fd.h"
#include "src/random.h"
#include "src/status.h"

namespace ds::bench {

// The clone's files (fio's nrfiles): each with its fd, its own offsets and what it was written.
struct CloneFile {
  std::string path;
  OwnedFd fd;
  IoPattern pattern;
  WrittenBlocks written;
  uint64_t issued = 0;  // bytes issued to it
  int io_fd = -1;       // what its requests carry: fd, or a remote engine's handle (OpenPath)
};

// Opens a test file for the job's direction (O_RDWR to write or trim, O_DIRECT when direct):
// a trim job needs a block device; a file system that refuses O_DIRECT is named with the fix.
Result<OwnedFd> OpenTestFile(const IoJobOptions& o, const std::string& file);

// fio's file_service_type: which file each IO goes to. roundrobin:N and random:N move on after
// N IOs; sequential stays on a file until a pass over it is issued.
class FilePicker {
 public:
  FilePicker(const IoJobOptions& o, size_t files, uint64_t pass) : o_(o), n_(files), pass_(pass) {}
  size_t Next(Rng& rng, const std::vector<CloneFile>& files) {
    if (n_ == 1) return 0;
    switch (o_.file_service) {
      case FileService::kRoundRobin:
        if (ios_++ % o_.file_service_n == 0 && ios_ > 1) cur_ = (cur_ + 1) % n_;
        break;
      case FileService::kRandom:
        if (ios_++ % o_.file_service_n == 0) cur_ = rng.Below(n_);
        break;
      case FileService::kSequential:
        if (files[cur_].issued >= pass_ * (laps_ + 1)) {
          if (++cur_ == n_) {
            cur_ = 0;
            laps_++;
          }
        }
        break;
    }
    return cur_;
  }

 private:
  const IoJobOptions& o_;
  size_t n_;
  uint64_t pass_;
  size_t cur_ = 0;
  uint64_t ios_ = 0, laps_ = 0;
};

}  // namespace ds::bench
