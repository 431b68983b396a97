#include "bench/meta/meta_fs.h"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace ds::bench {
namespace {

// A system call, again while a signal (a stop request) interrupts it; the loops check the stop.
template <typename F>
auto NoIntr(F f) {
  decltype(f()) r;
  do {
    r = f();
  } while (r < 0 && errno == EINTR);
  return r;
}

std::string In(const MetaFs::Dir& d, const char* name) { return d.path + "/" + name; }

class PosixMetaFs final : public MetaFs {
 public:
  bool local() const override { return true; }

  Status CheckDir(const std::string& path) override {
    struct stat st;
    if (::stat(path.c_str(), &st) != 0) {
      return Status::FromErrno(errno, path + ": give an existing directory",
                               Code::kInvalidArgument);
    }
    if (!S_ISDIR(st.st_mode)) {
      return Status(Code::kInvalidArgument,
                    path + ": not a directory; dsbench meta makes its files in a directory");
    }
    return Status::Ok();
  }

  Status MakeDir(const std::string& path) override {
    if (::mkdir(path.c_str(), 0755) != 0) return Status::FromErrno(errno, path + ": mkdir");
    return Status::Ok();
  }

  Result<Dir> OpenDir(const std::string& path) override {
    int fd = NoIntr([&] { return ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC); });
    if (fd < 0) return Status::FromErrno(errno, path + ": open");
    return Dir{path, OwnedFd(fd)};
  }

  Status Create(const Dir& d, const char* name, const char* buf, size_t chunk,
                uint64_t size) override {
    int fd = NoIntr(
        [&] { return ::openat(d.fd.get(), name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644); });
    if (fd < 0) return Status::FromErrno(errno, In(d, name) + ": create");
    OwnedFd owned(fd);
    for (uint64_t done = 0; done < size;) {
      size_t n = static_cast<size_t>(std::min<uint64_t>(chunk, size - done));
      ssize_t got = NoIntr([&] { return ::write(fd, buf, n); });
      if (got < 0) return Status::FromErrno(errno, In(d, name) + ": write");
      done += static_cast<uint64_t>(got);
    }
    // EINTR from close: the fd is closed all the same (Linux).
    if (::close(owned.release()) != 0 && errno != EINTR) {
      return Status::FromErrno(errno, In(d, name) + ": close");
    }
    return Status::Ok();
  }

  Result<uint64_t> StatSize(const Dir& d, const char* name) override {
    struct stat st;
    if (NoIntr([&] { return ::fstatat(d.fd.get(), name, &st, 0); }) != 0) {
      return Status::FromErrno(errno, In(d, name) + ": stat");
    }
    return static_cast<uint64_t>(st.st_size);
  }

  Result<uint64_t> Read(const Dir& d, const char* name, char* buf, size_t chunk,
                        uint64_t size) override {
    int fd = NoIntr([&] { return ::openat(d.fd.get(), name, O_RDONLY | O_CLOEXEC); });
    if (fd < 0) return Status::FromErrno(errno, In(d, name) + ": open");
    OwnedFd owned(fd);
    uint64_t done = 0;
    while (done < size) {
      size_t n = static_cast<size_t>(std::min<uint64_t>(chunk, size - done));
      ssize_t got = NoIntr([&] { return ::read(fd, buf, n); });
      if (got < 0) return Status::FromErrno(errno, In(d, name) + ": read");
      if (got == 0) break;
      done += static_cast<uint64_t>(got);
    }
    return done;
  }

  Result<uint64_t> CountEntries(const Dir& d) override {
    int fd = NoIntr([&] { return ::openat(d.fd.get(), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC); });
    if (fd < 0) return Status::FromErrno(errno, d.path + ": open");
    DIR* dir = ::fdopendir(fd);
    if (!dir) {
      ::close(fd);
      return Status::FromErrno(errno, d.path + ": opendir");
    }
    uint64_t entries = 0;
    errno = 0;
    while (const dirent* e = ::readdir(dir)) {
      if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0) entries++;
    }
    int err = errno;
    ::closedir(dir);
    if (err != 0) return Status::FromErrno(err, d.path + ": readdir");
    return entries;
  }

  Status Unlink(const Dir& d, const char* name) override {
    if (NoIntr([&] { return ::unlinkat(d.fd.get(), name, 0); }) != 0) {
      return Status::FromErrno(errno, In(d, name) + ": unlink");
    }
    return Status::Ok();
  }

  Status RemoveDir(const std::string& path) override {
    if (::rmdir(path.c_str()) != 0) return Status::FromErrno(errno, path + ": rmdir");
    return Status::Ok();
  }
};

// Through the storage interface: every call by path, as libnfs's own calls go.
class StorageMetaFs final : public MetaFs {
 public:
  explicit StorageMetaFs(std::shared_ptr<Storage> s) : s_(std::move(s)) {}
  bool local() const override { return false; }
  std::string Uri(const std::string& path) const override { return s_->Uri(path); }
  const Storage* storage() const override { return s_.get(); }

  Status CheckDir(const std::string& path) override {
    auto info = s_->Stat(path, true);
    if (!info.ok()) {
      return Status(Code::kInvalidArgument,
                    info.status().message() + ": give an existing directory", info.status().err());
    }
    if (info->type != FileType::kDirectory) {
      return Status(Code::kInvalidArgument, s_->Uri(path) +
                                                ": not a directory; dsbench meta makes its "
                                                "files in a directory");
    }
    return Status::Ok();
  }

  Status MakeDir(const std::string& path) override {
    // MakeDirs accepts an existing directory; a run's own names must be new.
    if (s_->Stat(path, false).ok()) {
      return Status(Code::kAlreadyExists, s_->Uri(path) + ": mkdir: File exists", EEXIST);
    }
    return s_->MakeDirs(path);
  }

  Result<Dir> OpenDir(const std::string& path) override { return Dir{path, OwnedFd()}; }

  Status Create(const Dir& d, const char* name, const char* buf, size_t chunk,
                uint64_t size) override {
    DS_ASSIGN_OR_RETURN(auto f, s_->OpenWrite(In(d, name), WriteMode::kCreateNew));
    for (uint64_t done = 0; done < size;) {
      size_t n = static_cast<size_t>(std::min<uint64_t>(chunk, size - done));
      DS_RETURN_IF_ERROR(f->WriteAt(done, buf, n));
      done += n;
    }
    return f->Close();
  }

  Result<uint64_t> StatSize(const Dir& d, const char* name) override {
    DS_ASSIGN_OR_RETURN(FileInfo info, s_->Stat(In(d, name), false));
    return info.size;
  }

  Result<uint64_t> Read(const Dir& d, const char* name, char* buf, size_t chunk,
                        uint64_t size) override {
    DS_ASSIGN_OR_RETURN(auto f, s_->OpenRead(In(d, name)));
    uint64_t done = 0;
    while (done < size) {
      size_t n = static_cast<size_t>(std::min<uint64_t>(chunk, size - done));
      DS_ASSIGN_OR_RETURN(size_t got, f->ReadSome(done, buf, n));
      if (got == 0) break;
      done += got;
    }
    return done;
  }

  Result<uint64_t> CountEntries(const Dir& d) override {
    DS_ASSIGN_OR_RETURN(auto entries, s_->List(d.path));
    return entries.size();
  }

  Status Unlink(const Dir& d, const char* name) override { return s_->Remove(In(d, name)); }
  Status RemoveDir(const std::string& path) override { return s_->Remove(path); }

 private:
  std::shared_ptr<Storage> s_;
};

}  // namespace

Result<std::unique_ptr<MetaFs>> MetaFs::For(const std::string& path, std::string* inside) {
  DS_ASSIGN_OR_RETURN(StorageRef ref, OpenStorage(path));
  if (ref.storage->scheme() == "file") {
    *inside = path;  // as given: errors name it as typed
    return std::unique_ptr<MetaFs>(new PosixMetaFs());
  }
  *inside = ref.path;
  return std::unique_ptr<MetaFs>(new StorageMetaFs(ref.storage));
}

}  // namespace ds::bench
