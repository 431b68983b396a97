// Schemas (formats/schema.h): the field-map parser, the checks, and WithSchema over the real
// layout writers, read back through the real readers. Loader-side proof (protoc's Example,
// webdataset's grouping, MXNet's unpack) is tests/e2e/schema.sh.
#include "formats/schema.h"

#include <catch2/catch.hpp>

#include "formats/interop/lmdb_values.h"
#include "formats/interop/tfrecord.h"
#include "formats/layout.h"
#include "test_util.h"

using namespace ds;
using ds::test::TempDir;

namespace {

std::unique_ptr<LayoutWriter> Writer(const std::string& out, Format f, Schema schema) {
  auto o = MakeWriterOptions(f, {}, {});
  REQUIRE(o.ok());
  auto w = CreateLayoutWriter(out, *o);
  REQUIRE(w.ok());
  return WithSchema(std::move(w).value(), f, std::move(schema));
}

// A byte string literal with its NULs.
template <size_t N>
std::string Bytes(const char (&s)[N]) {
  return std::string(s, N - 1);
}

Sample Image(const std::string& key, const std::string& ext, const std::string& label) {
  return {key, {{ext, "\xff\xd8 image bytes of " + key}, {"cls", label}}};
}

}  // namespace

TEST_CASE("field maps parse FROM=TO[:TYPE] and refuse what they cannot mean", "[formats]") {
  auto r = ParseFieldMap("JPEG=image/encoded,cls=image/class/label:int64");
  REQUIRE(r.ok());
  REQUIRE(r->size() == 2);
  CHECK((*r)[0] == FieldRule{"JPEG", "image/encoded", FieldType::kBytes});
  CHECK((*r)[1] == FieldRule{"cls", "image/class/label", FieldType::kInt64});
  CHECK(ParseFieldMap("a=b:bytes")->at(0).type == FieldType::kBytes);
  for (const char* bad : {"", "a", "=b", "a=", "a=b:float", "a=b,,c=d"}) {
    INFO(bad);
    auto e = ParseFieldMap(bad);
    REQUIRE_FALSE(e.ok());
    CHECK(e.status().code() == Code::kInvalidArgument);
    CHECK_THAT(e.status().message(), Catch::Contains("`field_map`"));
  }
  Schema twice{SchemaKind::kMap, *ParseFieldMap("a=x,a=y")};
  CHECK_THAT(twice.Validate(Format::kWds).message(), Catch::Contains("'a' is mapped twice"));
  Schema two_to_one{SchemaKind::kMap, *ParseFieldMap("JPEG=image/encoded,png=image/encoded")};
  CHECK(two_to_one.Validate(Format::kTfrecord).ok());
}

TEST_CASE("schemas name the layouts they apply to", "[formats]") {
  const Schema raw, imagenet{SchemaKind::kImagenet, {}}, empty_map{SchemaKind::kMap, {}};
  const Schema int64_map{SchemaKind::kMap, *ParseFieldMap("cls=l:int64")};
  CHECK(raw.Validate(Format::kNative).ok());
  CHECK_THAT(imagenet.Validate(Format::kNative).message(),
             Catch::Contains("does not apply to native"));
  CHECK(imagenet.Validate(Format::kLmdb).ok());
  CHECK_THAT(empty_map.Validate(Format::kWds).message(), Catch::Contains("needs a `field_map`"));
  CHECK_FALSE(int64_map.Validate(Format::kRecordio).ok());
  CHECK(int64_map.Validate(Format::kTfrecord).ok());
  CHECK(ParseSchemaKind("imagenet").value() == SchemaKind::kImagenet);
  CHECK_FALSE(ParseSchemaKind("ImageNet").ok());
}

TEST_CASE("image fields and their normal names", "[formats]") {
  for (const char* n : {"jpg", "JPEG", "jpeg", "png", "PNG", "webp", "TIFF"})
    CHECK(IsImageField(n));
  for (const char* n : {"cls", "txt", "json", "", "jpgx"}) CHECK_FALSE(IsImageField(n));
  CHECK(NormalisedImageExt("JPEG") == "jpg");
  CHECK(NormalisedImageExt("jpeg") == "jpg");
  CHECK(NormalisedImageExt("PNG") == "png");
  CHECK(NormalisedImageExt("tiff") == "tif");
}

namespace {
// A writer that can resume (as native can) and stores nothing: the capability is what is tested.
class ResumableStub : public LayoutWriter, public ResumableWriter {
 public:
  Status BeginSample(std::string_view, std::span<const FieldInfo>) override { return {}; }
  Status AppendData(std::string_view) override { return {}; }
  Status EndSample() override { return {}; }
  void CancelSample() override {}
  void AddSkipped(std::string_view, std::string_view) override {}
  void SetClasses(std::vector<std::string>, std::string) override {}
  uint64_t samples() const override { return 0; }
  uint64_t payload_bytes() const override { return 0; }
  Status Finish(LayoutSummary*) override { return {}; }
  void Abandon() override {}
  ResumableWriter* resumable() override { return this; }
  bool already_complete() const override { return false; }
  Status BeginRun(const nlohmann::json&) override { return {}; }
  Result<uint64_t> ResumeRun(const nlohmann::json&) override { return uint64_t{0}; }
  void SetSourcePosition(uint64_t) override {}
  uint64_t restored_skipped() const override { return 0; }
};
}  // namespace

TEST_CASE("a schema over a resumable writer hands out its resume capability", "[formats]") {
  // SchemaWriter forwarded partitioned() but not resumable(): a caller asking the wrapped writer
  // could not resume.
  auto stub = std::make_unique<ResumableStub>();
  ResumableWriter* inner = stub.get();
  auto rules = ParseFieldMap("jpg=image");
  REQUIRE(rules.ok());
  auto w = WithSchema(std::move(stub), Format::kTfrecord, {SchemaKind::kMap, *rules});
  CHECK(w->resumable() == inner);
  CHECK(w->partitioned() == nullptr);
}

TEST_CASE("imagenet in TFRecord: image/encoded, int64 label, derived fields; names restored",
          "[formats]") {
  TempDir t;
  std::string out = t.path() + "/tf";
  {
    auto w = Writer(out, Format::kTfrecord, {SchemaKind::kImagenet, {}});
    w->SetClasses({"a", "b"}, "cls");
    REQUIRE(w->Add(Image("a/x_1", "JPEG", "0")).ok());
    REQUIRE(w->Add(Image("b/y_2", "png", "1")).ok());
    REQUIRE(w->Finish(nullptr).ok());
  }
  auto r = OpenLayout(out);
  REQUIRE(r.ok());
  CHECK((*r)->label_field() == kTfImageLabel);
  CHECK((*r)->schema().kind == SchemaKind::kImagenet);
  auto s = (*r)->Get(1);
  REQUIRE(s.ok());
  std::map<std::string, std::string> f;
  for (const auto& x : s->fields) f[x.name] = x.data;
  CHECK(f.at(kTfImageEncoded) == "\xff\xd8 image bytes of b/y_2");
  CHECK(f.at(kTfImageLabel) == "1");  // int64_list, read back as its digits
  CHECK(f.at(kTfImageFormat) == "png");
  CHECK(f.at(kTfImageFilename) == "y_2.png");
  std::vector<FieldInfo> infos;
  for (const auto& x : s->fields) infos.push_back({x.name, x.data.size()});
  auto names = SourceFieldNames((*r)->schema(), infos, f.at(kTfImageFilename));
  std::vector<std::string> restored;
  for (const auto& n : names) {
    if (n) restored.push_back(*n);
  }
  std::sort(restored.begin(), restored.end());
  CHECK(restored == std::vector<std::string>{"cls", "png"});
  LayoutVerifyReport v;
  REQUIRE(VerifyLayout(out, &v, {}).ok());
  CHECK(v.ok());
}

TEST_CASE("imagenet refuses unfit samples by key; maps refuse non-integers for int64",
          "[formats]") {
  TempDir t;
  {
    auto w = Writer(t.path() + "/rec", Format::kRecordio, {SchemaKind::kImagenet, {}});
    w->SetClasses({"a"}, "cls");
    Sample two{"a/k", {{"jpg", "img"}, {"txt", "caption"}, {"cls", "0"}}};
    Status s = w->Add(two);
    CHECK(s.code() == Code::kBadInput);
    CHECK_THAT(s.message(), Catch::Contains("key 'a/k'") && Catch::Contains("'jpg', 'txt'"));
    Sample twice{"a/j", {{"jpg", "1"}, {"JPEG", "2"}, {"cls", "0"}}};
    CHECK(w->Add(twice).code() == Code::kBadInput);
    REQUIRE(w->Add(Image("a/ok", "jpg", "0")).ok());  // the writer goes on after a refusal
    REQUIRE(w->Finish(nullptr).ok());
  }
  auto r = OpenLayout(t.path() + "/rec");
  REQUIRE(r.ok());
  CHECK((*r)->size() == 1);

  auto w = Writer(t.path() + "/map", Format::kWds,
                  {SchemaKind::kMap, *ParseFieldMap("jpg=image,cls=label:int64")});
  w->SetClasses({"a"}, "cls");
  Status s = w->Add(Image("a/bad", "jpg", "seven"));
  CHECK(s.code() == Code::kBadInput);
  CHECK_THAT(s.message(), Catch::Contains("field 'cls' ('label' in the schema) holds 'seven'"));
  REQUIRE(w->Add(Image("a/good", "jpg", "-7")).ok());
  REQUIRE(w->Finish(nullptr).ok());
  auto m = OpenLayout(t.path() + "/map");
  REQUIRE(m.ok());
  REQUIRE((*m)->size() == 1);
  auto got = (*m)->Get(0);
  REQUIRE(got.ok());
  CHECK(got->fields ==
        std::vector<Field>{{"image", "\xff\xd8 image bytes of a/good"}, {"label", "-7"}});
}

TEST_CASE("an int64 feature is an int64_list that the decoder reads back", "[formats]") {
  Sample s{"k", {{"image/class/label", "-3"}, {"b", "x"}}};
  std::vector<std::string> int64 = {"image/class/label"};
  auto enc = tfrecord::EncodeExample(s, int64);
  REQUIRE(enc.ok());
  // Feature{int64_list (3){value (1), packed: 10 varint bytes for -3}}
  CHECK(enc->find(std::string("\x1a\x0c\x0a\x0a", 4)) != std::string::npos);
  auto back = tfrecord::DecodeExample(*enc, "x");
  REQUIRE(back.ok());
  CHECK(back->fields == s.fields);
  Sample bad{"k", {{"image/class/label", "3x"}}};
  CHECK(tfrecord::EncodeExample(bad, int64).status().code() == Code::kBadInput);
}

TEST_CASE("LMDB values: pickles as Python writes and reads them, Caffe's Datum", "[formats]") {
  using namespace ds::lmdb;
  // pickle.dumps((b'ab', 3), protocol=P) from CPython 3.11, for P = 3, 4, 5: memo and frame
  // opcodes are skipped.
  for (const std::string& py : {Bytes("\x80\x03"
                                      "C\x02"
                                      "abq\x00K\x03\x86q\x01."),
                                Bytes("\x80\x04\x95\x0a\x00\x00\x00\x00\x00\x00\x00"
                                      "C\x02"
                                      "ab\x94K\x03\x86\x94."),
                                Bytes("\x80\x05\x95\x0a\x00\x00\x00\x00\x00\x00\x00"
                                      "C\x02"
                                      "ab\x94K\x03\x86\x94.")}) {
    auto il = UnpickleImageLabel(py);
    REQUIRE(il.ok());
    CHECK(il->image == "ab");
    CHECK(il->label == 3);
  }
  // Ours is Python's protocol 3 without the memo: the same opcodes.
  CHECK(PickleImageLabel("ab", 3) == Bytes("\x80\x03"
                                           "C\x02"
                                           "abK\x03\x86."));
  CHECK(PickleBytesList({{"0000000000", "0000000001"}}) == Bytes("\x80\x03]("
                                                                 "C\x0a"
                                                                 "0000000000"
                                                                 "C\x0a"
                                                                 "0000000001"
                                                                 "e."));
  for (int64_t label : {int64_t{0}, int64_t{255}, int64_t{256}, int64_t{65535}, int64_t{65536},
                        int64_t{-1}, int64_t{INT32_MIN}, int64_t{1} << 40, -(int64_t{1} << 40)}) {
    for (size_t size : {size_t{0}, size_t{255}, size_t{256}, size_t{70000}}) {
      std::string image(size, 'x');
      std::string pickled = PickleImageLabel(image, label);  // il views into it
      auto il = UnpickleImageLabel(pickled);
      REQUIRE(il.ok());
      CHECK(il->image == image);
      CHECK(il->label == label);
    }
    CHECK(UnpickleInt(PickleInt(label)).value() == label);
  }
  std::string good = PickleImageLabel("abc", 7);
  for (size_t cut = 0; cut < good.size(); cut++) {
    CHECK(UnpickleImageLabel(good.substr(0, cut)).status().code() == Code::kCorruption);
  }
  CHECK_FALSE(UnpickleImageLabel(good + "x").ok());  // bytes after STOP

  std::string datum = EncodeDatum("img", -2);
  auto d = DecodeDatum(datum);
  REQUIRE(d.ok());
  CHECK(d->image == "img");
  CHECK(d->label == -2);
  CHECK_FALSE(DecodeDatum(datum.substr(0, datum.size() - 2)).ok());  // no encoded = true
  CHECK_FALSE(DecodeDatum(datum.substr(0, 3)).ok());                 // data cut short
}
