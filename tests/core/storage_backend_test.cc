// The storage interface (src/storage.h) over the local backend, its URI dispatch, and the two
// decorators (src/storage_decorators.h): the bill counts what was done; injected EIO names the
// file and offset; ENOSPC and a crash before Commit leave nothing under the final name and the
// previous file intact.
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/vfs.h>

#include <catch2/catch.hpp>
#include <cerrno>
#include <filesystem>
#include <string>

#include "src/storage.h"
#include "src/storage_decorators.h"
#include "test_util.h"

using ds::Code;
using ds::StorageOp;
using ds::test::TempDir;

namespace {

size_t EntriesIn(const std::string& dir) {
  size_t n = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir)) ++n;
  return n;
}

}  // namespace

TEST_CASE("ParseStorageUri: plain paths are local, schemes are lower-cased", "[core]") {
  auto p = ds::ParseStorageUri("data/train");
  REQUIRE(p.ok());
  CHECK(p->scheme == "file");
  CHECK(p->path == "data/train");
  auto f = ds::ParseStorageUri("file:///srv/data");
  REQUIRE(f.ok());
  CHECK(f->scheme == "file");
  CHECK(f->path == "/srv/data");
  auto n = ds::ParseStorageUri("NFS://server:2049/export/set");
  REQUIRE(n.ok());
  CHECK(n->scheme == "nfs");
  CHECK(n->authority == "server:2049");
  CHECK(n->path == "/export/set");
  CHECK(n->query.empty());
  auto q = ds::ParseStorageUri("nfs://srv/export/set?nfsport=2049&mountport=20048");
  REQUIRE(q.ok());
  CHECK(q->authority == "srv");
  CHECK(q->path == "/export/set");
  CHECK(q->query == "nfsport=2049&mountport=20048");
  auto bare = ds::ParseStorageUri("nfs://srv?version=3");  // no path: the root
  REQUIRE(bare.ok());
  CHECK(bare->authority == "srv");
  CHECK(bare->path == "/");
  CHECK(bare->query == "version=3");
  auto local_q = ds::ParseStorageUri("file:///a?b");  // a local name may hold '?'
  REQUIRE(local_q.ok());
  CHECK(local_q->path == "/a?b");
  auto odd = ds::ParseStorageUri("./a://b");  // not a scheme: a local path
  REQUIRE(odd.ok());
  CHECK(odd->scheme == "file");
  CHECK(odd->path == "./a://b");
  CHECK(ds::ParseStorageUri("file://host/x").status().code() == Code::kInvalidArgument);
  CHECK(ds::ParseStorageUri("").status().code() == Code::kInvalidArgument);
}

TEST_CASE("OpenStorage: an unknown scheme names the URI and the schemes known", "[core]") {
  auto r = ds::OpenStorage("gopher://h/x");
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == Code::kBadInput);
  CHECK_THAT(r.status().message(),
             Catch::StartsWith("gopher://h/x: no storage backend for `gopher://`") &&
                 Catch::Contains("it knows: file, nfs"));
  ds::RegisterStorage("gopher",
                      [](const ds::StorageUri& u) -> ds::Result<std::shared_ptr<ds::Storage>> {
                        if (u.authority.empty())
                          return ds::Status(Code::kInvalidArgument, "no host");
                        return ds::LocalStorage();
                      });
  auto ok = ds::OpenStorage("gopher://h/x");
  REQUIRE(ok.ok());
  CHECK(ok->path == "/x");
  auto bad = ds::OpenStorage("gopher:///x");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().message() == "gopher:///x: no host");
  auto local = ds::OpenStorage("some/dir");
  REQUIRE(local.ok());
  CHECK(local->storage->scheme() == "file");
  CHECK(local->storage->caps().mmap);
}

TEST_CASE("OpenStorage nfs://: its arguments are checked before any server is asked", "[core]") {
  auto no_server = ds::OpenStorage("nfs:///export/x");
  REQUIRE_FALSE(no_server.ok());
  CHECK(no_server.status().code() == Code::kInvalidArgument);
  CHECK_THAT(no_server.status().message(), Catch::Contains("nfs://SERVER/EXPORT/PATH"));
  auto zero = ds::OpenStorage("nfs://h/export/x?connections=0");
  REQUIRE_FALSE(zero.ok());
  CHECK(zero.status().message() ==
        "nfs://h/export/x?connections=0: connections=0: give a whole number from 1 to 64");
  auto slow = ds::OpenStorage("nfs://h/export/x?timeout=soon");
  REQUIRE_FALSE(slow.ok());
  CHECK(slow.status().code() == Code::kInvalidArgument);
  auto v4 = ds::OpenStorage("nfs://h/export/x?version=4");
  REQUIRE_FALSE(v4.ok());
  CHECK(v4.status().code() == Code::kUnsupported);
  CHECK_THAT(v4.status().message(), Catch::Contains("use version=3"));
}

TEST_CASE("LocalStorage: create, commit, read, list, stat, rename, remove", "[core]") {
  TempDir t;
  auto s = ds::LocalStorage();
  std::string path = t.path() + "/a.bin";
  auto w = s->Create(path);
  REQUIRE(w.ok());
  REQUIRE((*w)->Append("hello ").ok());
  REQUIRE((*w)->Append(std::string(3 << 20, 'x')).ok());  // past the write buffer
  CHECK((*w)->size() == 6 + (3u << 20));
  CHECK_FALSE(std::filesystem::exists(path));  // invisible until Commit
  CHECK(EntriesIn(t.path()) == 1);             // the temp
  REQUIRE((*w)->Commit().ok());
  CHECK(std::filesystem::file_size(path) == 6 + (3u << 20));

  auto r = s->OpenRead(path);
  REQUIRE(r.ok());
  CHECK((*r)->size() == 6 + (3u << 20));
  CHECK((*r)->fd() >= 0);
  char buf[6];
  REQUIRE((*r)->ReadAt(0, buf, 6).ok());
  CHECK(std::string(buf, 6) == "hello ");
  auto past = (*r)->ReadAt((3u << 20) + 2, buf, 6);
  REQUIRE_FALSE(past.ok());
  CHECK(past.code() == Code::kCorruption);
  CHECK_THAT(past.message(), Catch::Contains(path + ": truncated: wanted 6 bytes at offset"));

  REQUIRE(s->MakeDirs(t.path() + "/d/e").ok());
  REQUIRE(s->MakeDirs(t.path() + "/d/e").ok());
  auto list = s->List(t.path());
  REQUIRE(list.ok());
  REQUIRE(list->size() == 2);
  for (const auto& e : *list) {
    if (e.name == "a.bin") {
      CHECK(e.info.type == ds::FileType::kRegular);
      CHECK(e.info.size == 6 + (3u << 20));
      CHECK(e.info.mtime_ns > 0);
    } else {
      CHECK(e.name == "d");
      CHECK(e.info.type == ds::FileType::kDirectory);
    }
  }
  REQUIRE(s->Rename(path, t.path() + "/d/b.bin").ok());
  auto st = s->Stat(t.path() + "/d/b.bin");
  REQUIRE(st.ok());
  CHECK(st->size == 6 + (3u << 20));
  CHECK(s->Stat(path).status().code() == Code::kNotFound);
  REQUIRE(s->Remove(t.path() + "/d/b.bin").ok());
  CHECK(s->Remove(t.path() + "/d/b.bin").code() == Code::kNotFound);
  CHECK(s->OpenRead(t.path() + "/d").status().code() == Code::kBadInput);
  CHECK(ds::ReadAll(*s, t.path() + "/none").status().code() == Code::kNotFound);
}

TEST_CASE("LocalStorage: a file dropped before Commit leaves nothing", "[core]") {
  TempDir t;
  auto s = ds::LocalStorage();
  REQUIRE(ds::WriteAll(*s, t.path() + "/keep", "old").ok());
  {
    auto w = s->Create(t.path() + "/keep");
    REQUIRE(w.ok());
    REQUIRE((*w)->Append("new, half").ok());
  }
  CHECK(EntriesIn(t.path()) == 1);
  CHECK(*ds::ReadAll(*s, t.path() + "/keep") == "old");
}

TEST_CASE("LocalStorage: LockWriter excludes a second writer", "[core]") {
  TempDir t;
  auto s = ds::LocalStorage();
  std::string warning;
  auto first = s->LockWriter(t.path(), &warning);
  REQUIRE(first.ok());
  auto second = s->LockWriter(t.path(), &warning);
  REQUIRE_FALSE(second.ok());
  CHECK(second.status().code() == Code::kAlreadyExists);
  first->reset();
  CHECK(s->LockWriter(t.path(), &warning).ok());
}

TEST_CASE("RequireMmap: the local backend can be mapped", "[core]") {
  CHECK(ds::RequireMmap(*ds::LocalStorage(), "x", "LMDB needs a local file").ok());
}

TEST_CASE("CountingStorage: the bill counts every operation and byte", "[core]") {
  TempDir t;
  auto counting = std::make_shared<ds::CountingStorage>(ds::LocalStorage());
  REQUIRE(ds::WriteAll(*counting, t.path() + "/f", std::string(100, 'a')).ok());
  for (int i = 0; i < 3; ++i) {
    auto f = counting->OpenRead(t.path() + "/f");
    REQUIRE(f.ok());
    char b[10];
    REQUIRE((*f)->ReadAt(10, b, sizeof b).ok());
    REQUIRE(counting->Stat(t.path() + "/f").ok());
  }
  REQUIRE(counting->List(t.path()).ok());
  ds::StorageOps ops = counting->ops();
  CHECK(ops[StorageOp::kCreate] == 1);
  CHECK(ops[StorageOp::kWrite] == 1);
  CHECK(ops[StorageOp::kCommit] == 1);
  CHECK(ops[StorageOp::kOpen] == 3);
  CHECK(ops[StorageOp::kRead] == 3);
  CHECK(ops[StorageOp::kStat] == 3);
  CHECK(ops[StorageOp::kList] == 1);
  CHECK(ops.read_bytes == 30);
  CHECK(ops.write_bytes == 100);
  counting->Reset();
  counting->Count(StorageOp::kOpen);
  counting->Count(StorageOp::kRead, 4);
  counting->Count(StorageOp::kRead, 4);
  counting->Count(StorageOp::kStat);
  CHECK(ds::FormatStorageBill(counting->ops(), 2) ==
        "2 ops per sample (open 0.5, stat 0.5, read 1)");
  CHECK(ds::FormatStorageBill(ds::StorageOps{}, 0) == "0 ops per run (none)");
}

TEST_CASE("FaultStorage: EIO in the middle of a read names the file and offset", "[core]") {
  TempDir t;
  auto fault = std::make_shared<ds::FaultStorage>(ds::LocalStorage());
  std::string path = t.path() + "/shard-000001.dsr";
  REQUIRE(ds::WriteAll(*ds::LocalStorage(), path, std::string(1 << 16, 's')).ok());
  auto f = fault->OpenRead(path);
  REQUIRE(f.ok());
  CHECK((*f)->fd() == -1);  // no way around the faults
  fault->FailOp(StorageOp::kRead, 2);
  std::string buf(4096, '\0');
  REQUIRE((*f)->ReadAt(0, buf.data(), buf.size()).ok());
  auto st = (*f)->ReadAt(40960, buf.data(), buf.size());
  REQUIRE_FALSE(st.ok());
  CHECK(st.code() == Code::kIOError);
  CHECK(st.err() == EIO);
  CHECK(st.message() == path + ": read at offset 40960: Input/output error (injected read #2)");
  CHECK((*f)->ReadAt(40960, buf.data(), buf.size()).ok());  // one fault, then well again
}

TEST_CASE("FaultStorage: short reads are continued by ReadAt", "[core]") {
  TempDir t;
  auto fault = std::make_shared<ds::FaultStorage>(ds::LocalStorage());
  std::string data;
  for (int i = 0; i < 1000; ++i) data += static_cast<char>('a' + i % 26);
  REQUIRE(ds::WriteAll(*ds::LocalStorage(), t.path() + "/f", data).ok());
  fault->ShortReads(7);
  auto all = ds::ReadAll(*fault, t.path() + "/f");
  REQUIRE(all.ok());
  CHECK(*all == data);
  CHECK(fault->count(StorageOp::kRead) == (1000 + 6) / 7);
}

TEST_CASE("FaultStorage: ENOSPC on write N leaves nothing under the final name", "[core]") {
  TempDir t;
  auto fault = std::make_shared<ds::FaultStorage>(ds::LocalStorage());
  std::string path = t.path() + "/out.tar";
  fault->FailOp(StorageOp::kWrite, 3, ENOSPC);
  auto w = fault->Create(path);
  REQUIRE(w.ok());
  REQUIRE((*w)->Append("one").ok());
  REQUIRE((*w)->Append("two").ok());
  ds::Status st = (*w)->Append("three");
  REQUIRE_FALSE(st.ok());
  CHECK(st.code() == Code::kNoSpace);
  CHECK_THAT(st.message(), Catch::StartsWith(path + ": write at offset 6: No space left"));
  w->reset();
  CHECK(EntriesIn(t.path()) == 0);
}

TEST_CASE("FaultStorage: a crash before Commit keeps the previous file", "[core]") {
  TempDir t;
  auto fault = std::make_shared<ds::FaultStorage>(ds::LocalStorage());
  std::string path = t.path() + "/dspack.json";
  REQUIRE(ds::WriteAll(*fault, path, "previous").ok());
  auto w = fault->Create(path);
  REQUIRE(w.ok());
  REQUIRE((*w)->Append("next, synced").ok());
  REQUIRE((*w)->Sync().ok());
  REQUIRE((*w)->Append(" and not synced").ok());
  fault->Crash();
  CHECK((*w)->Commit().code() == Code::kIOError);
  CHECK(fault->Stat(path).status().message() ==
        path + ": stat: Input/output error (after a simulated crash)");
  w->reset();
  CHECK(*ds::ReadAll(*ds::LocalStorage(), path) == "previous");
  CHECK(EntriesIn(t.path()) == 1);
}

// Page-cache control through the storage interface (src/page_cache.h): the local backend counts
// and drops a file's cached pages; a backend without a page cache says so.
TEST_CASE("LocalStorage: CachedPages and EvictCache", "[core]") {
  TempDir t;
  auto s = ds::LocalStorage();
  std::string path = t.path() + "/f";
  REQUIRE(ds::WriteAll(*s, path, std::string(10 * 4096 + 1, 'p')).ok());
  REQUIRE(ds::ReadAll(*s, path).ok());
  auto before = s->CachedPages(path);
  REQUIRE(before.ok());
  CHECK(before->pages == 11);
  CHECK(before->resident <= 11);
  REQUIRE(s->EvictCache(path).ok());
  auto after = s->CachedPages(path);
  REQUIRE(after.ok());
  struct statfs fs;
  // tmpfs keeps its pages whatever the advice; a disk file system drops them.
  if (::statfs(t.path().c_str(), &fs) == 0 && fs.f_type != TMPFS_MAGIC) CHECK(after->resident == 0);
  CHECK(s->EvictCache(t.path() + "/none").code() == Code::kNotFound);
  CHECK(s->CachedPages(t.path() + "/none").status().code() == Code::kNotFound);
  // Decorators forward it: cache control is not dataset IO.
  ds::FaultStorage fault(s);
  fault.Crash();
  CHECK(fault.EvictCache(path).ok());
}

namespace {

// A backend with no page cache: only what the test calls is real.
class NoCacheStorage final : public ds::Storage {
 public:
  std::string_view scheme() const override { return "nocache"; }
  ds::StorageCaps caps() const override { return {}; }
  ds::Result<std::unique_ptr<ds::RandomAccessFile>> OpenRead(const std::string&) override {
    return Unsupported();
  }
  ds::Result<std::unique_ptr<ds::WritableFile>> Create(const std::string&) override {
    return Unsupported();
  }
  ds::Result<std::unique_ptr<ds::RandomWriteFile>> OpenWrite(const std::string&,
                                                             ds::WriteMode) override {
    return Unsupported();
  }
  ds::Status SyncDir(const std::string&) override { return Unsupported(); }
  ds::Result<ds::FileInfo> Stat(const std::string&, bool) override { return Unsupported(); }
  ds::Result<std::vector<ds::DirEntry>> List(const std::string&) override { return Unsupported(); }
  ds::Status MakeDirs(const std::string&) override { return Unsupported(); }
  ds::Status Remove(const std::string&) override { return Unsupported(); }
  ds::Status Rename(const std::string&, const std::string&) override { return Unsupported(); }
  ds::Result<std::unique_ptr<ds::StorageLock>> LockWriter(const std::string&,
                                                          std::string*) override {
    return Unsupported();
  }

 private:
  static ds::Status Unsupported() { return ds::Status(Code::kUnsupported, "not in this test"); }
};

}  // namespace

TEST_CASE("Storage: a backend without a page cache refuses cache control", "[core]") {
  NoCacheStorage s;
  CHECK(s.EvictCache("x/shard-0.tar").message() ==
        "x/shard-0.tar: nocache storage has no page "
        "cache here");
  CHECK(s.CachedPages("x").status().code() == Code::kUnsupported);
  CHECK(ds::RequireMmap(s, "nocache://h/x", "LMDB needs a local file: liblmdb maps it").message() ==
        "nocache://h/x: LMDB needs a local file: liblmdb maps it; stage it with dssync or read it "
        "through a mount");
}
