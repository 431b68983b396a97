// The corners of the s3:// client that need no server: the AWS configuration chain, AWS's URI
// encoding and the XML of S3's answers. The requests themselves are tested against a real
// RADOS Gateway (tests/e2e/s3.sh).
#include "src/s3_client.h"

#include <stdlib.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <map>
#include <optional>
#include <string>

#include "src/storage.h"
#include "test_util.h"

using namespace ds;

namespace {

// Sets (or unsets, for nullopt) environment variables for its lifetime.
class EnvGuard {
 public:
  explicit EnvGuard(std::map<std::string, std::optional<std::string>> vars) {
    for (const auto& [name, value] : vars) {
      const char* old = getenv(name.c_str());
      saved_[name] = old ? std::optional<std::string>(old) : std::nullopt;
      if (value) {
        setenv(name.c_str(), value->c_str(), 1);
      } else {
        unsetenv(name.c_str());
      }
    }
  }
  ~EnvGuard() {
    for (const auto& [name, value] : saved_) {
      if (value) {
        setenv(name.c_str(), value->c_str(), 1);
      } else {
        unsetenv(name.c_str());
      }
    }
  }

 private:
  std::map<std::string, std::optional<std::string>> saved_;
};

const std::map<std::string, std::optional<std::string>> kNoAws = {
    {"AWS_ENDPOINT_URL", std::nullopt},  {"AWS_ENDPOINT_URL_S3", std::nullopt},
    {"AWS_REGION", std::nullopt},        {"AWS_DEFAULT_REGION", std::nullopt},
    {"AWS_ACCESS_KEY_ID", std::nullopt}, {"AWS_SECRET_ACCESS_KEY", std::nullopt},
    {"AWS_SESSION_TOKEN", std::nullopt}, {"AWS_PROFILE", std::nullopt},
    {"AWS_CONFIG_FILE", std::nullopt},   {"AWS_SHARED_CREDENTIALS_FILE", std::nullopt},
};

}  // namespace

TEST_CASE("s3 config: the environment's keys, endpoint and region", "[core]") {
  auto vars = kNoAws;
  vars["AWS_ACCESS_KEY_ID"] = "AKID";
  vars["AWS_SECRET_ACCESS_KEY"] = "secret";
  vars["AWS_ENDPOINT_URL"] = "http://127.0.0.1:7480/";
  vars["AWS_DEFAULT_REGION"] = "eu-west-3";
  EnvGuard env(vars);
  auto c = LoadS3Config("");
  REQUIRE(c.ok());
  CHECK(c->endpoint == "http://127.0.0.1:7480");
  CHECK(c->region == "eu-west-3");
  CHECK(c->access_key == "AKID");
  CHECK(c->path_style);  // an endpoint of one's own: path-style
  CHECK(c->retries == 4);

  // An IP endpoint has no BUCKET. subdomain: virtual-host addressing is refused, named.
  auto ip = LoadS3Config("addressing=virtual");
  REQUIRE_FALSE(ip.ok());
  CHECK(ip.status().code() == Code::kInvalidArgument);
  CHECK_THAT(ip.status().message(), Catch::Contains("http://127.0.0.1:7480 is an IP address"));
  vars["AWS_ENDPOINT_URL"] = "http://[::1]:7480";
  {
    EnvGuard v6(vars);
    CHECK(LoadS3Config("addressing=virtual").status().code() == Code::kInvalidArgument);
  }
  vars["AWS_ENDPOINT_URL"] = "http://localhost:7480";
  EnvGuard named(vars);
  auto v = LoadS3Config("addressing=virtual&retries=0&timeout=5");
  REQUIRE(v.ok());
  CHECK_FALSE(v->path_style);
  CHECK(v->retries == 0);
  CHECK(v->stall_timeout_s == 5);
  CHECK(v->readahead_max == (8u << 20));  // the default window
  auto ra = LoadS3Config("readahead=0");
  REQUIRE(ra.ok());
  CHECK(ra->readahead_max == 0);
  CHECK_THAT(LoadS3Config("readahead=65").status().message(), Catch::Contains("readahead=0..64"));

  auto bad = LoadS3Config("retries=99");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().code() == Code::kInvalidArgument);
  CHECK_THAT(bad.status().message(), Catch::Contains("retries=0..20"));
}

TEST_CASE("s3 config: a profile's keys and region from the AWS CLI's files", "[core]") {
  TempDir dir;
  const std::string cred = dir.path() + "/credentials", conf = dir.path() + "/config";
  std::ofstream(cred) << "[default]\naws_access_key_id = DEF\naws_secret_access_key = d\n\n"
                         "[train]\n# the job's keys\naws_access_key_id = TRAINKEY\n"
                         "aws_secret_access_key = t0p\naws_session_token = tok\n";
  std::ofstream(conf) << "[default]\nregion = us-west-2\n[profile train]\nregion = ap-south-1\n"
                         "endpoint_url = https://objects.example\n";
  auto vars = kNoAws;
  vars["AWS_SHARED_CREDENTIALS_FILE"] = cred;
  vars["AWS_CONFIG_FILE"] = conf;
  {
    EnvGuard env(vars);
    auto c = LoadS3Config("");
    REQUIRE(c.ok());
    CHECK(c->access_key == "DEF");
    CHECK(c->region == "us-west-2");
    CHECK(c->endpoint == "https://s3.us-west-2.amazonaws.com");  // AWS itself
    CHECK_FALSE(c->path_style);                                  // virtual-host there
  }
  vars["AWS_PROFILE"] = "train";
  {
    EnvGuard env(vars);
    auto c = LoadS3Config("");
    REQUIRE(c.ok());
    CHECK(c->access_key == "TRAINKEY");
    CHECK(c->secret_key == "t0p");
    CHECK(c->session_token == "tok");
    CHECK(c->region == "ap-south-1");
    CHECK(c->endpoint == "https://objects.example");
    CHECK_THAT(c->key_source, Catch::Contains("profile train"));
  }
  vars["AWS_PROFILE"] = "absent";
  {
    EnvGuard env(vars);
    auto c = LoadS3Config("");
    REQUIRE_FALSE(c.ok());
    CHECK(c.status().code() == Code::kInvalidArgument);
    CHECK_THAT(c.status().message(), Catch::Contains("no S3 credentials"));
    CHECK_THAT(c.status().message(), Catch::Contains("profile absent"));
  }
}

TEST_CASE("s3 config: an endpoint without its scheme is refused with the fix", "[core]") {
  auto vars = kNoAws;
  vars["AWS_ACCESS_KEY_ID"] = "a";
  vars["AWS_SECRET_ACCESS_KEY"] = "b";
  vars["AWS_ENDPOINT_URL"] = "rgw:7480";
  EnvGuard env(vars);
  auto c = LoadS3Config("");
  REQUIRE_FALSE(c.ok());
  CHECK_THAT(c.status().message(), Catch::Contains("AWS_ENDPOINT_URL=http://rgw:7480"));
}

TEST_CASE("s3: AWS's URI encoding of keys and query values", "[core]") {
  CHECK(AwsEncode("a/b c+d~e_f.g-h", true) == "a/b%20c%2Bd~e_f.g-h");
  CHECK(AwsEncode("a/b", false) == "a%2Fb");
  CHECK(AwsEncode("\xc3\xa9", true) == "%C3%A9");  // UTF-8 bytes, upper-case hex
  CHECK(AwsEncode("", true).empty());
}

TEST_CASE("s3: the XML of ListObjectsV2 and of an error", "[core]") {
  const std::string list =
      "<ListBucketResult><IsTruncated>true</IsTruncated>"
      "<Contents><Key>ds/a&amp;b.txt</Key><Size>3</Size></Contents>"
      "<Contents><Key>ds/&#233;t&#xE9;</Key><Size>12</Size></Contents>"
      "<CommonPrefixes><Prefix>ds/sub/</Prefix></CommonPrefixes>"
      "<NextContinuationToken>tok/+=</NextContinuationToken></ListBucketResult>";
  auto contents = XmlBlocks(list, "Contents");
  REQUIRE(contents.size() == 2);
  CHECK(XmlText(contents[0], "Key") == "ds/a&b.txt");
  CHECK(XmlText(contents[1], "Key") == "ds/\xc3\xa9t\xc3\xa9");
  CHECK(XmlText(contents[1], "Size") == "12");
  CHECK(XmlText(list, "NextContinuationToken") == "tok/+=");
  CHECK(XmlText(list, "Missing").empty());
  S3Response r;
  r.status = 404;
  r.body = "<?xml version=\"1.0\"?><Error><Code>NoSuchKey</Code><Message>gone</Message></Error>";
  CHECK(r.ErrorCode() == "NoSuchKey");
}

TEST_CASE("s3: an error names the object, never the secret", "[core]") {
  S3Config c;
  c.endpoint = "http://127.0.0.1:1";
  c.access_key = "AKID";
  c.secret_key = "very-secret-value";
  c.key_source = "AWS_ACCESS_KEY_ID in the environment";
  S3Client client(c, "bkt");
  S3Response r;
  r.status = 403;
  r.body = "<Error><Code>SignatureDoesNotMatch</Code></Error>";
  Status s = client.Fail(r, "s3://bkt/ds/x");
  CHECK(s.code() == Code::kInvalidArgument);
  CHECK(ExitCode(s) == 2);
  CHECK_THAT(s.message(), Catch::Contains("s3://bkt/ds/x: access denied"));
  CHECK_THAT(s.message(), !Catch::Contains("very-secret-value"));
  r.status = 404;
  r.body = "<Error><Code>NoSuchBucket</Code></Error>";
  CHECK_THAT(client.Fail(r, "s3://bkt/ds").message(), Catch::Contains("no bucket bkt"));
  r.body = "<Error><Code>NoSuchKey</Code></Error>";
  CHECK(client.Fail(r, "s3://bkt/ds").err() == ENOENT);
  r.status = 412;
  r.body = "";
  CHECK(client.Fail(r, "s3://bkt/ds").code() == Code::kCorruption);
  // Nothing listens on port 1: a connect error after the retries, naming the endpoint.
  c.retries = 1;
  S3Client down(c, "bkt");
  auto got = down.Perform(S3Request("GET", "k"), "s3://bkt/k");
  REQUIRE_FALSE(got.ok());
  CHECK_THAT(got.status().message(), Catch::Contains("cannot reach http://127.0.0.1:1"));
  CHECK_THAT(got.status().message(), Catch::Contains("after 2 tries"));
  CHECK(down.counters().requests == 2);
}
