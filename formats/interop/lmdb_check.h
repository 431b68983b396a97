// A bounds-checked walk of an LMDB file's main B-tree, run before liblmdb follows it
// (docs/formats/lmdb.md, "Bad input").
//
// liblmdb maps data.mdb and trusts every byte: a node offset, key size or page number changed
// by one byte sends it outside its page or past the end of the file (SIGSEGV, SIGBUS). So the
// reader checks, with pread and nothing mapped, everything liblmdb will dereference while it
// reads the main database: the meta pages (magic, version, page size, last page inside the
// file), then every branch and leaf page reachable from the chosen meta's root (page number,
// flags, lower/upper bounds, each node's offset, key and inline data inside its page, each
// child page number inside the file and visited once, leaves at the tree's depth, each
// overflow run inside the file), and the totals against the meta's counts. This is a partial
// re-implementation of LMDB's on-disk format (lmdb.h and mdb.c of liblmdb 0.9: MDB_meta,
// MDB_page, MDB_node), read-only and for the main database only; values are not read (their
// bytes cannot misdirect liblmdb; dspack's per-sample checks cover them).
//
// Cost: one read per run of consecutive tree pages (up to kLmdbReadRun bytes), with up to
// kLmdbReadsInFlight in flight through io_uring (psync where it is refused): a tree's leaves are
// scattered among the overflow pages of large values. Overflow pages are never read. Memory:
// one bit per page of the file, the page numbers of one tree level, and the reads in flight.
//
// Thread-safety: pure functions of the file's bytes.
#pragma once

#include <cstdint>
#include <string>

#include "src/status.h"

namespace ds::lmdb {

inline constexpr uint64_t kLmdbReadRun = 128 << 10;
inline constexpr unsigned kLmdbReadsInFlight = 32;

// What the walk found in the main database, and where.
struct LmdbTree {
  uint64_t txnid = 0;  // of the meta page walked
  uint64_t page_size = 0;
  uint64_t entries = 0;
  uint64_t branch_pages = 0, leaf_pages = 0, overflow_pages = 0;
  uint32_t depth = 0;
};

// Checks both meta pages of `file` (magic, version, page size, each one's last page inside the
// file). Errors: kCorruption naming the file and what is wrong; IO errors as they come.
Status CheckLmdbMetas(const std::string& file);

// Walks the main database of the meta page whose transaction id is `txnid` (0: the newer of
// the two, the one liblmdb picks). kCorruption names the file, the page and its offset; a main
// database with sorted duplicates (MDB_DUPSORT) is kUnsupported. kNotFound when no meta page
// holds `txnid` (a writer has committed twice since: take a new snapshot and retry).
Result<LmdbTree> CheckLmdbTree(const std::string& file, uint64_t txnid = 0);

}  // namespace ds::lmdb
