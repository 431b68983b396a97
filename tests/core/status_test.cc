#include "src/status.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cerrno>
#include <filesystem>

#include "src/cli_args.h"
#include "src/fd.h"
#include "src/file_writer.h"
#include "src/storage.h"
#include "test_util.h"

using namespace ds;

TEST_CASE("Status maps errno and exit codes", "[core]") {
  CHECK(Status::FromErrno(ENOSPC, "x").code() == Code::kNoSpace);
  CHECK(Status::FromErrno(ENOENT, "x").code() == Code::kNotFound);
  CHECK(Status::FromErrno(EACCES, "f", Code::kBadInput).code() == Code::kBadInput);
  CHECK(Status::FromErrno(EACCES, "some/file").message() == "some/file: Permission denied");
  CHECK(ExitCode(Status()) == 0);
  CHECK(ExitCode(Status(Code::kCorruption, "")) == 1);
  CHECK(ExitCode(Status(Code::kBadInput, "")) == 1);
  CHECK(ExitCode(Status(Code::kInvalidArgument, "")) == 2);
  CHECK(ExitCode(Status(Code::kNoSpace, "")) == 2);
  CHECK(Status(Code::kIOError, "b").Prefixed("a").message() == "a: b");
}

TEST_CASE("Result holds a value or a status", "[core]") {
  Result<int> ok = 5;
  Result<int> bad = Status(Code::kNotFound, "nope");
  CHECK(ok.ok());
  CHECK(*ok == 5);
  CHECK_FALSE(bad.ok());
  CHECK(bad.status().message() == "nope");
}

TEST_CASE("ReadFullAt reports truncation as corruption with the offset", "[core]") {
  test::TempDir dir;
  test::WriteFile(dir / "f", "0123456789");
  auto fd = OpenFile(dir / "f", O_RDONLY);
  REQUIRE(fd.ok());
  char buf[8];
  CHECK(ReadFullAt(fd->get(), buf, 4, 6, "f").ok());
  Status s = ReadFullAt(fd->get(), buf, 8, 6, "f");
  CHECK(s.code() == Code::kCorruption);
  CHECK(s.message().find("truncated") != std::string::npos);
  CHECK(s.message().find("offset 6") != std::string::npos);
}

TEST_CASE("FileWriter buffers, truncates back and writes atomically", "[core]") {
  test::TempDir dir;
  for (bool direct : {false, true}) {
    std::string path = dir / (direct ? "direct" : "buffered");
    auto file = LocalStorage()->OpenWrite(path, WriteMode::kCreateNew);
    REQUIRE(file.ok());
    FileWriter w(std::move(file).value(), 4096);
    if (direct) w.EnableDirect();  // may stay buffered on tmpfs; the contract is the same
    std::string expect;
    auto append = [&](const std::string& s) {
      REQUIRE(w.Append(s).ok());
      expect += s;
    };
    append("hello ");
    append(std::string(10000, 'x'));   // spills past the 4 KiB buffer twice
    REQUIRE(w.TruncateTo(5000).ok());  // cut inside bytes already written
    expect.resize(5000);
    append(std::string(3000, 'y'));
    REQUIRE(w.TruncateTo(7000).ok());  // cut inside the buffer
    expect.resize(7000);
    REQUIRE(w.AppendZeros(123).ok());
    expect += std::string(123, '\0');
    append("tail");
    CHECK(w.size() == expect.size());
    REQUIRE(w.Close(true).ok());
    CHECK(test::ReadFile(path) == expect);
  }

  REQUIRE(WriteFileAtomic(dir / "a", "content").ok());
  CHECK(test::ReadFile(dir / "a") == "content");
  CHECK(access((dir / "a.tmp").c_str(), F_OK) != 0);
}

TEST_CASE("WriteFileAtomic never follows a planted temp path and keeps special files", "[core]") {
  test::TempDir td;
  std::filesystem::path dir = td.path();
  auto is_reg = [](const std::filesystem::path& p) {
    struct stat st;
    return ::lstat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode);
  };
  SECTION("a link planted at the old temp name is not written through") {
    test::WriteFile(dir / "victim", "precious");
    std::filesystem::create_symlink(dir / "victim", dir / "rep.json.tmp");
    REQUIRE(WriteFileAtomic(dir / "rep.json", "report").ok());
    CHECK(test::ReadFile(dir / "victim") == "precious");
    CHECK(test::ReadFile(dir / "rep.json") == "report");
    CHECK(std::filesystem::is_symlink(dir / "rep.json.tmp"));
  }
  SECTION("a FIFO is written into, not replaced") {
    std::string fifo = dir / "pipe";
    REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
    int rd = ::open(fifo.c_str(), O_RDONLY | O_NONBLOCK);
    REQUIRE(rd >= 0);
    REQUIRE(WriteFileAtomic(fifo, "through").ok());
    char buf[16] = {};
    CHECK(::read(rd, buf, sizeof buf) == 7);
    ::close(rd);
    CHECK(std::string(buf) == "through");
    struct stat st;
    REQUIRE(::lstat(fifo.c_str(), &st) == 0);
    CHECK(S_ISFIFO(st.st_mode));
  }
  SECTION("a device reports its error and stays a device") {
    Status s = WriteFileAtomic("/dev/full", "x");
    CHECK(s.code() == Code::kNoSpace);
    CHECK(s.message().find("/dev/full") != std::string::npos);
    struct stat st;
    REQUIRE(::stat("/dev/full", &st) == 0);
    CHECK(S_ISCHR(st.st_mode));
    CHECK(WriteFileAtomic("/dev/null", "x").ok());
    REQUIRE(::stat("/dev/null", &st) == 0);
    CHECK(S_ISCHR(st.st_mode));
  }
  SECTION("a link to a regular file replaces the target and keeps the link") {
    test::WriteFile(dir / "real", "old");
    std::filesystem::create_symlink(dir / "real", dir / "link");
    REQUIRE(WriteFileAtomic(dir / "link", "new").ok());
    CHECK(std::filesystem::is_symlink(dir / "link"));
    CHECK(test::ReadFile(dir / "real") == "new");
    CHECK(is_reg(dir / "real"));
  }
  SECTION("a dangling link and a directory are refused") {
    std::filesystem::create_symlink(dir / "nowhere" / "x", dir / "dangling");
    CHECK_FALSE(WriteFileAtomic(dir / "dangling", "x").ok());
    CHECK_FALSE(WriteFileAtomic(dir.string(), "x").ok());
  }
  // No temp file is left behind in any case.
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    std::string n = e.path().filename();
    CHECK((n == "rep.json.tmp" || n.size() < 4 || n.substr(n.size() - 4) != ".tmp"));
  }
}

// A CLI whose flags come from its own tables (dsbench: fio's names, then CLI11's) renders a
// library's fields through a resolver; AppFlagResolver reads CLI11's long options.
TEST_CASE("RenderOptionNames: a resolver and a CLI11 app's own flags", "[core]") {
  ds::FlagResolver upper = [](std::string_view f) -> std::optional<std::string> {
    if (f == "bs") return std::string("--bs");
    return std::nullopt;
  };
  CHECK(ds::RenderOptionNames("`bs` 100 and `other`", upper) == "--bs 100 and `other`");

  CLI::App app{"t"};
  std::string cache, on_error;
  bool quick = false;
  CLI::App* sub = app.add_subcommand("replay", "r");
  sub->add_option("--cache", cache, "c");
  sub->add_option("--on-error", on_error, "e");
  sub->add_flag("--quick", quick, "q");
  ds::FlagResolver flags = ds::AppFlagResolver(app);
  CHECK(ds::RenderOptionNames("`on_error=skip` is the model's; `cache`: cold or warm", flags) ==
        "--on-error skip is the model's; --cache: cold or warm");
  CHECK(ds::RenderOptionNames("(`quick`: a first look; `nope` stays)", flags) ==
        "(--quick: a first look; `nope` stays)");
}

TEST_CASE("FromStorage: errno's text where there is one, the backend's own error else", "[core]") {
  ds::Status local = ds::Status::FromErrno(EACCES, "/data/x");
  ds::Status as_input = ds::Status::FromStorage(local, "/data/x");
  CHECK(as_input.code() == ds::Code::kBadInput);
  CHECK(as_input.message() == "/data/x: Permission denied");
  // An S3 error has no errno: never "Success" (strerror(0)); the error as the backend said it.
  ds::Status http(ds::Code::kInvalidArgument, "s3://b/x: access denied (HTTP 403)");
  ds::Status kept = ds::Status::FromStorage(http, "s3://b/x");
  CHECK(kept.code() == ds::Code::kInvalidArgument);
  CHECK(kept.message() == "s3://b/x: access denied (HTTP 403)");
}
