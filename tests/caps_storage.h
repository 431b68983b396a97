// A backend over another that answers caps() (and, if given, scheme()) as a test says, every
// operation passed through to the one below: a remote backend's answers for a unit test of a
// corner (a storage that cannot be mapped, reads pinned to the version opened), while every
// byte still comes from the files below.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <utility>

#include "src/storage_decorators.h"

namespace ds::test {

class CapsStorage final : public StorageDecorator {
 public:
  CapsStorage(std::shared_ptr<Storage> base, std::function<void(StorageCaps*)> edit,
              std::string scheme = "")
      : StorageDecorator(std::move(base)), edit_(std::move(edit)), scheme_(std::move(scheme)) {}
  std::string_view scheme() const override {
    return scheme_.empty() ? StorageDecorator::scheme() : std::string_view(scheme_);
  }
  StorageCaps caps() const override {
    StorageCaps c = StorageDecorator::caps();
    edit_(&c);
    return c;
  }

 protected:
  Status Before(StorageOp, const std::string&) override { return Status::Ok(); }
  std::unique_ptr<RandomAccessFile> WrapRead(std::unique_ptr<RandomAccessFile> f) override {
    return f;
  }
  std::unique_ptr<WritableFile> WrapWrite(std::unique_ptr<WritableFile> f) override { return f; }

 private:
  std::function<void(StorageCaps*)> edit_;
  std::string scheme_;
};

}  // namespace ds::test
