// Schemas: the field names and types a loader expects in an interop layout
// (docs/formats/schema.md). A sample's fields are named after its files' extensions (`JPEG`,
// `cls`: the raw schema, sample.h); a schema renames and types them as the layout's loaders want:
//
//   imagenet  one image field (IsImageField) and the label, in each layout's convention:
//             TFRecord  image/encoded (bytes), image/class/label (int64), image/format
//                       (jpeg, png, ...), image/filename (the source file's name)
//             wds       extensions lower-cased and normalised (JPEG -> jpg), label `cls` as an
//                       ASCII integer
//             RecordIO  one record per sample, im2rec's IRHeader label + the image bytes
//             LMDB      one key per sample, value = a pickle of (image bytes, label), as the
//                       PyTorch ImageNet-LMDB recipes read it (or Caffe's Datum: lmdb_layout);
//                       readers name the two `image` and `label`
//   map       an explicit field map, `FROM=TO[:int64]`, e.g. JPEG=image/encoded,
//             cls=image/class/label:int64 (TFRecord stores an int64 field as an int64_list;
//             the other layouts store its ASCII digits)
//   raw       names as they are (the default without a label, and the native layout's only one)
//
// Every layout stores the schema's record in its metadata (SchemaRecord): the schema's name and
// which stored name came from which source name, so `extract` restores the source's file names
// (RestoreSourceNames) while readers, the Python package included, see the schema's names.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "formats/format.h"
#include "formats/sample.h"
#include "src/status.h"

namespace ds {

class LayoutWriter;

enum class SchemaKind { kRaw, kImagenet, kMap };
std::string_view SchemaName(SchemaKind k);
Result<SchemaKind> ParseSchemaKind(std::string_view name);

enum class FieldType { kBytes, kInt64 };

struct FieldRule {
  std::string from;  // the source's field name (a file extension, `cls`)
  std::string to;    // the stored name
  FieldType type = FieldType::kBytes;
  bool operator==(const FieldRule&) const = default;
};

struct Schema {
  SchemaKind kind = SchemaKind::kRaw;
  std::vector<FieldRule> rules;  // kMap only
  // kInvalidArgument naming `schema` when layout f does not take this schema (native keeps the
  // source's names) or the map is unusable (two rules for one name).
  Status Validate(Format f) const;
  bool raw() const { return kind == SchemaKind::kRaw; }
};

// `FROM=TO[:TYPE],...` (TYPE bytes or int64) into rules; kInvalidArgument naming `field_map`.
Result<std::vector<FieldRule>> ParseFieldMap(std::string_view spec);

// An int64 field's bytes: ASCII decimal digits with an optional '-', the whole string; nullopt
// for anything else (empty, spaces, overflow).
std::optional<int64_t> ParseInt64(std::string_view digits);

// Whether a field name is an image file extension (jpg, jpeg, png, ..., any case).
bool IsImageField(std::string_view name);
// The normalised, lower-case extension of an image field (JPEG, jpeg -> jpg; PNG -> png).
std::string NormalisedImageExt(std::string_view name);

// TFRecord's imagenet feature names (the tf.data ImageNet parser's feature spec).
inline constexpr const char* kTfImageEncoded = "image/encoded";
inline constexpr const char* kTfImageFormat = "image/format";
inline constexpr const char* kTfImageFilename = "image/filename";
inline constexpr const char* kTfImageLabel = "image/class/label";
// LMDB's imagenet (pickle, caffe): the two values of (image, label), as readers name them.
inline constexpr const char* kLmdbImage = "image";
inline constexpr const char* kLmdbLabel = "label";

// What a layout's metadata records of the schema a dataset was written with.
struct SchemaRecord {
  SchemaKind kind = SchemaKind::kRaw;
  // Stored name -> the source name it came from, where every sample agrees (a stored name that
  // two source names mapped to is left out: extract keeps the stored name there).
  std::map<std::string, std::string> source_names;
  std::vector<std::string> derived;  // stored names the schema adds (image/format, ...)
  std::vector<std::string> int64_fields;
  nlohmann::json ToJson() const;
  static Result<SchemaRecord> FromJson(const nlohmann::json& j);
};

// The source's name of each stored field of a sample, nullopt for a derived one: the image field
// named after image/filename's extension (its value, where the sample has one), the others
// through source_names, else as stored.
std::vector<std::optional<std::string>> SourceFieldNames(const SchemaRecord& record,
                                                         std::span<const FieldInfo> fields,
                                                         std::string_view image_filename);
// Whether SourceFieldNames needs the value of the sample's image/filename.
bool NeedsImageFilename(const SchemaRecord& record);

// Wraps a layout's writer so that it stores samples under `schema` (not raw): renames fields,
// adds the derived ones, checks int64 fields hold integers and a sample fits the schema
// (kBadInput naming the key), and hands the writer the SchemaRecord before it commits.
std::unique_ptr<LayoutWriter> WithSchema(std::unique_ptr<LayoutWriter> writer, Format format,
                                         Schema schema);

}  // namespace ds
