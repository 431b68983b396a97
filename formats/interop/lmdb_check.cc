#include "formats/interop/lmdb_check.h"

#include <fcntl.h>
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <functional>
#include <memory>
#include <vector>

#include "src/endian.h"
#include "src/fd.h"
#include "src/io_engine.h"

namespace ds::lmdb {
namespace {

// liblmdb 0.9's on-disk layout (mdb.c), little-endian, 64-bit pgno_t/size_t.
constexpr uint32_t kMagic = 0xBEEFC0DE;
constexpr uint32_t kDataVersion = 1;
constexpr uint64_t kPageHeader = 16;  // PAGEHDRSZ: pgno u64, pad u16, flags u16, lower, upper
constexpr uint64_t kNodeHeader = 8;   // NODESIZE: lo u16, hi u16, flags u16, ksize u16
constexpr uint64_t kInvalidPage = ~0ull;
// MDB_meta, offsets from the page start (after the page header): the free DB's md_pad holds the
// page size; the main DB's MDB_db follows it.
constexpr size_t kMetaMagic = 16, kMetaVersion = 20, kMetaPageSize = 40, kMainDb = 88;
constexpr size_t kMetaLastPage = 136, kMetaTxnid = 144, kMetaBytes = 152;
// MDB_db fields from its start.
constexpr size_t kDbFlags = 4, kDbDepth = 6, kDbBranch = 8, kDbLeaf = 16, kDbOverflow = 24,
                 kDbEntries = 32, kDbRoot = 40;
// Page and node flags.
constexpr uint16_t kPageBranch = 0x01, kPageLeaf = 0x02, kPageMeta = 0x08;
constexpr uint16_t kPageKinds = 0x01 | 0x02 | 0x04 | 0x08 | 0x20 | 0x40;  // + overflow, leaf2, subp
constexpr uint16_t kNodeBig = 0x01, kNodeSubDb = 0x02, kNodeDup = 0x04;
constexpr uint16_t kDbDupSort = 0x04;
constexpr uint64_t kSubDbBytes = 48;  // sizeof(MDB_db)
constexpr uint32_t kMaxDepth = 64;

Status Bad(const std::string& file, const std::string& why) {
  return Status(Code::kCorruption,
                fmt::format("{}: {}; the LMDB is damaged: restore or reconvert it", file, why));
}

struct Meta {
  uint64_t page_size = 0, last_page = 0, txnid = 0;
  std::array<char, kSubDbBytes> db{};  // the main DB's MDB_db
};

Result<std::vector<Meta>> ReadMetas(int fd, const std::string& file, uint64_t size) {
  std::vector<Meta> metas;
  uint64_t page_size = 0;
  for (int i = 0; i < 2; i++) {
    uint64_t at = i * page_size;
    char m[kMetaBytes];
    if (size < at + sizeof(m)) {
      return Bad(file, fmt::format("only {} bytes: no room for meta page {}", size, i));
    }
    DS_RETURN_IF_ERROR(ReadFullAt(fd, m, sizeof(m), at, file));
    if (LoadLE32(m + kMetaMagic) != kMagic) {
      return Bad(file, fmt::format("no LMDB meta page at offset {} (bad magic)", at));
    }
    if (!(LoadLE16(m + 10) & kPageMeta) || LoadLE32(m + kMetaVersion) != kDataVersion) {
      return Bad(file, fmt::format("meta page {} at offset {}: bad flags or version {}", i, at,
                                   LoadLE32(m + kMetaVersion)));
    }
    Meta meta;
    meta.page_size = LoadLE32(m + kMetaPageSize);
    if (meta.page_size < 512 || meta.page_size > (1u << 16) ||
        (meta.page_size & (meta.page_size - 1)) || (i == 1 && meta.page_size != page_size)) {
      return Bad(file, fmt::format("meta page {}: implausible page size {}", i, meta.page_size));
    }
    page_size = meta.page_size;
    meta.last_page = LoadLE64(m + kMetaLastPage);
    meta.txnid = LoadLE64(m + kMetaTxnid);
    std::memcpy(meta.db.data(), m + kMainDb, kSubDbBytes);
    // Both: liblmdb may pick either, by transaction id.
    if (meta.last_page < 1 || meta.last_page >= size / page_size) {
      return Bad(file, fmt::format("truncated: meta page {} has its last page end at offset {}, "
                                   "the file at {}",
                                   i, (meta.last_page + 1) * page_size, size));
    }
    metas.push_back(std::move(meta));
  }
  return metas;
}

class Walker {
 public:
  Walker(int fd, const std::string& file, const Meta& meta)
      : fd_(fd),
        file_(file),
        psize_(meta.page_size),
        last_(meta.last_page),
        seen_(meta.last_page + 1, false) {
    seen_[0] = seen_[1] = true;  // the meta pages
  }

  Result<LmdbTree> Walk(const Meta& meta) {
    const char* db = meta.db.data();
    LmdbTree t;
    t.txnid = meta.txnid;
    t.page_size = psize_;
    if (LoadLE16(db + kDbFlags) & kDbDupSort) {
      return Status(Code::kUnsupported,
                    file_ +
                        ": the main database has sorted duplicates (MDB_DUPSORT); dspack "
                        "reads one value per key");
    }
    uint32_t depth = LoadLE16(db + kDbDepth);
    uint64_t root = LoadLE64(db + kDbRoot);
    if (root == kInvalidPage) {
      if (depth != 0 || LoadLE64(db + kDbEntries) != 0) {
        return Bad(file_, "the meta page has no root page but a non-empty main database");
      }
      return t;
    }
    if (depth == 0 || depth > kMaxDepth) {
      return Bad(file_, fmt::format("implausible tree depth {}", depth));
    }
    DS_RETURN_IF_ERROR(Claim(root, 1, "the root"));
    std::vector<uint64_t> level = {root}, next;
    for (uint32_t d = 1; d <= depth; d++) {
      std::sort(level.begin(), level.end());
      bool leaf = d == depth;
      DS_RETURN_IF_ERROR(ReadPages(level, [&](uint64_t pgno, const char* page) {
        return CheckPage(pgno, page, leaf, &t, &next);
      }));
      level.swap(next);
      next.clear();
    }
    t.depth = depth;
    auto count = [&](const char* what, uint64_t found, size_t at) -> Status {
      uint64_t said = LoadLE64(db + at);
      if (found == said) return Status::Ok();
      return Bad(file_, fmt::format("the meta page (txn {}) counts {} {}, the tree holds {}",
                                    meta.txnid, said, what, found));
    };
    DS_RETURN_IF_ERROR(count("entries", t.entries, kDbEntries));
    DS_RETURN_IF_ERROR(count("branch pages", t.branch_pages, kDbBranch));
    DS_RETURN_IF_ERROR(count("leaf pages", t.leaf_pages, kDbLeaf));
    DS_RETURN_IF_ERROR(count("overflow pages", t.overflow_pages, kDbOverflow));
    return t;
  }

 private:
  // Reads the pages (sorted page numbers) in runs of consecutive pages, up to kLmdbReadRun bytes
  // each, with up to kLmdbReadsInFlight runs in flight (io_uring, else pread), and calls check
  // on each page as its run lands.
  Status ReadPages(const std::vector<uint64_t>& pages,
                   const std::function<Status(uint64_t, const char*)>& check) {
    struct Run {
      IoRequest req;
      size_t first = 0, count = 0;
      std::string buf;
    };
    std::vector<Run> runs;
    for (size_t i = 0; i < pages.size();) {
      size_t j = i + 1;
      while (j < pages.size() && pages[j] == pages[j - 1] + 1 &&
             (j - i + 1) * psize_ <= kLmdbReadRun) {
        j++;
      }
      runs.push_back({IoRequest{}, i, j - i, {}});
      i = j;
    }
    if (!engine_) {
      auto e = MakeEngine("io_uring", {.depth = kLmdbReadsInFlight});
      if (!e.ok()) e = MakeEngine("psync", {.depth = kLmdbReadsInFlight});
      DS_RETURN_IF_ERROR(e.status());
      engine_ = std::move(e).value();
    }
    IoRequest* done[kLmdbReadsInFlight];
    size_t next = 0, landed = 0;
    while (landed < runs.size()) {
      while (next < runs.size() && engine_->inflight() < engine_->depth()) {
        Run& r = runs[next++];
        r.buf.resize(r.count * psize_);
        r.req = {.fd = fd_,
                 .buf = r.buf.data(),
                 .len = r.buf.size(),
                 .offset = pages[r.first] * psize_,
                 .user = &r};
        DS_RETURN_IF_ERROR(engine_->Queue(&r.req));
      }
      DS_ASSIGN_OR_RETURN(size_t n, engine_->Reap(1, done));
      for (size_t k = 0; k < n; k++) {
        Run& r = *static_cast<Run*>(done[k]->user);
        landed++;
        if (r.req.result < 0) return ErrnoStatus(r.req.result, file_);
        if (static_cast<size_t>(r.req.result) < r.buf.size()) {  // short: finish it in place
          size_t got = r.req.result;
          DS_RETURN_IF_ERROR(
              ReadFullAt(fd_, r.buf.data() + got, r.buf.size() - got, r.req.offset + got, file_));
        }
        for (size_t p = 0; p < r.count; p++) {
          DS_RETURN_IF_ERROR(check(pages[r.first + p], r.buf.data() + p * psize_));
        }
        std::string().swap(r.buf);
      }
    }
    return Status::Ok();
  }

  // Marks pages [pgno, pgno + n) as used: inside the file, not a meta page, not used twice.
  Status Claim(uint64_t pgno, uint64_t n, const char* what) {
    if (pgno < 2 || n == 0 || pgno > last_ || n > last_ - pgno + 1) {
      return Bad(file_, fmt::format("{} points at page {} ({} pages), outside pages 2..{}", what,
                                    pgno, n, last_));
    }
    for (uint64_t p = pgno; p < pgno + n; p++) {
      if (seen_[p]) return Bad(file_, fmt::format("{} reuses page {}", what, p));
      seen_[p] = true;
    }
    return Status::Ok();
  }

  Status CheckPage(uint64_t pgno, const char* p, bool leaf, LmdbTree* t,
                   std::vector<uint64_t>* children) {
    auto bad = [&](const std::string& why) {
      return Bad(file_, fmt::format("page {} (offset {}): {}", pgno, pgno * psize_, why));
    };
    if (LoadLE64(p) != pgno) return bad(fmt::format("it says it is page {}", LoadLE64(p)));
    uint16_t flags = LoadLE16(p + 10) & kPageKinds;
    if (flags != (leaf ? kPageLeaf : kPageBranch)) {
      return bad(fmt::format("flags {:#x}, expected a {} page", flags, leaf ? "leaf" : "branch"));
    }
    uint64_t lower = LoadLE16(p + 12), upper = LoadLE16(p + 14);
    if (lower < kPageHeader + 2 || lower > upper || upper > psize_ || (lower - kPageHeader) % 2) {
      return bad(fmt::format("bad free-space bounds lower {} upper {}", lower, upper));
    }
    (leaf ? t->leaf_pages : t->branch_pages)++;
    uint64_t n = (lower - kPageHeader) / 2;
    for (uint64_t i = 0; i < n; i++) {
      uint64_t off = LoadLE16(p + kPageHeader + 2 * i);
      if (off < upper || off + kNodeHeader > psize_) {
        return bad(fmt::format("node {} at offset {}, outside the page's nodes {}..{}", i, off,
                               upper, psize_));
      }
      const char* node = p + off;
      uint64_t lo = LoadLE16(node), hi = LoadLE16(node + 2), nflags = LoadLE16(node + 4);
      uint64_t ksize = LoadLE16(node + 6);
      uint64_t end = off + kNodeHeader + ksize;
      if (end > psize_)
        return bad(fmt::format("node {}: its {}-byte key ends past the page", i, ksize));
      if (!leaf) {
        uint64_t child = lo | hi << 16 | nflags << 32;
        DS_RETURN_IF_ERROR(Claim(child, 1, "a branch node"));
        children->push_back(child);
        continue;
      }
      uint64_t dsize = lo | hi << 16;
      if (nflags & ~(kNodeBig | kNodeSubDb) || (nflags & kNodeDup)) {
        return bad(fmt::format("node {}: flags {:#x}", i, nflags));
      }
      if (nflags & kNodeBig) {
        if (end + 8 > psize_)
          return bad(fmt::format("node {}: its overflow page number ends past the page", i));
        uint64_t opages = (kPageHeader - 1 + dsize) / psize_ + 1;  // OVPAGES
        DS_RETURN_IF_ERROR(Claim(LoadLE64(p + end), opages, "an overflow value"));
        t->overflow_pages += opages;
      } else {
        if ((nflags & kNodeSubDb) && dsize != kSubDbBytes) {
          return bad(fmt::format("node {}: a sub-database record of {} bytes", i, dsize));
        }
        if (end + dsize > psize_)
          return bad(fmt::format("node {}: its {}-byte value ends past the page", i, dsize));
      }
      t->entries++;
    }
    return Status::Ok();
  }

  int fd_;
  const std::string& file_;
  uint64_t psize_, last_;
  std::vector<bool> seen_;
  std::unique_ptr<IoEngine> engine_;
};

}  // namespace

Status CheckLmdbMetas(const std::string& file) {
  DS_ASSIGN_OR_RETURN(OwnedFd fd, OpenFile(file, O_RDONLY));
  DS_ASSIGN_OR_RETURN(uint64_t size, FileSize(fd.get(), file));
  return ReadMetas(fd.get(), file, size).status();
}

Result<LmdbTree> CheckLmdbTree(const std::string& file, uint64_t txnid) {
  DS_ASSIGN_OR_RETURN(OwnedFd fd, OpenFile(file, O_RDONLY));
  DS_ASSIGN_OR_RETURN(uint64_t size, FileSize(fd.get(), file));
  DS_ASSIGN_OR_RETURN(std::vector<Meta> metas, ReadMetas(fd.get(), file, size));
  const Meta* meta = &metas[metas[1].txnid > metas[0].txnid ? 1 : 0];
  if (txnid != 0) {
    meta = nullptr;
    for (const Meta& m : metas) {
      if (m.txnid == txnid) meta = &m;
    }
    if (!meta) {
      return Status(Code::kNotFound, fmt::format("{}: no meta page of txn {}", file, txnid));
    }
  }
  // Scattered page reads: readahead would read the overflow values between them.
  (void)::posix_fadvise(fd.get(), 0, 0, POSIX_FADV_RANDOM);
  return Walker(fd.get(), file, *meta).Walk(*meta);
}

}  // namespace ds::lmdb
