#include "formats/layout_options.h"

#include <fmt/format.h>

#include "formats/native/native_format.h"
#include "src/human.h"

namespace ds {

Status ShardingOptions::Validate() const {
  if (shard_size < kMinShardSize) {
    return Status(Code::kInvalidArgument,
                  fmt::format("`shard_size` {}: must be at least {}", FormatBytes(shard_size),
                              FormatBytes(kMinShardSize)));
  }
  return Status::Ok();
}

Status NativeOptions::Validate() const {
  if (align == 0 || align > native::kMaxAlign || (align & (align - 1))) {
    return Status(Code::kInvalidArgument,
                  fmt::format("`align` {}: must be a power of two between 1 and {}", align,
                              FormatBytes(native::kMaxAlign)));
  }
  return ShardingOptions::Validate();
}

Status LmdbOptions::Validate() const {
  if (map_size < kMinLmdbMapSize) {
    return Status(Code::kInvalidArgument,
                  fmt::format("`lmdb_map_size` {}: must be at least {}", FormatBytes(map_size),
                              FormatBytes(kMinLmdbMapSize)));
  }
  return Status::Ok();
}

constexpr std::string_view kLmdbLayoutNames[] = {"field", "sample", "pickle", "caffe"};

std::string_view LmdbLayoutName(LmdbLayout l) { return kLmdbLayoutNames[static_cast<int>(l)]; }

Result<LmdbLayout> ParseLmdbLayout(std::string_view name) {
  for (int i = 0; i < 4; i++) {
    if (name == kLmdbLayoutNames[i]) return static_cast<LmdbLayout>(i);
  }
  return Status(Code::kInvalidArgument,
                fmt::format("`lmdb_layout` '{}': must be 'field', 'sample', 'pickle' or 'caffe'",
                            EscapeBytes(name)));
}

Format FormatOf(const WriterOptions& o) {
  static constexpr Format kByIndex[] = {Format::kNative, Format::kWds, Format::kTfrecord,
                                        Format::kRecordio, Format::kLmdb};
  return kByIndex[o.index()];
}

const CommonWriterOptions& Common(const WriterOptions& o) {
  return std::visit([](const auto& v) -> const CommonWriterOptions& { return v; }, o);
}

Status Validate(const WriterOptions& o) {
  return std::visit(
      [](const auto& v) -> Status {
        if constexpr (requires { v.Validate(); }) {
          return v.Validate();
        } else {
          return Status::Ok();
        }
      },
      o);
}

namespace {

Status NotTaken(Format f, std::string_view knob, std::string_view why) {
  return Status(Code::kInvalidArgument,
                fmt::format("`{}` does not apply to {}: {}", knob, FormatName(f), why));
}

template <class T>
T Sharded(const LayoutKnobs& k, const CommonWriterOptions& common) {
  T o;
  static_cast<CommonWriterOptions&>(o) = common;
  if (k.shard_size) o.shard_size = *k.shard_size;
  return o;
}

}  // namespace

Result<WriterOptions> MakeWriterOptions(Format f, const LayoutKnobs& k,
                                        const CommonWriterOptions& common) {
  if (f != Format::kNative && k.align) {
    return NotTaken(f, "align", "only native shards pad records to an alignment");
  }
  if (f != Format::kLmdb && (k.lmdb_layout || k.lmdb_map_size)) {
    return NotTaken(f, k.lmdb_layout ? "lmdb_layout" : "lmdb_map_size", "it is an LMDB option");
  }
  if (f != Format::kWds && k.dali_index) {
    return NotTaken(f, "dali_index", "DALI's wds2idx index is for WebDataset shards");
  }
  if (f != Format::kWds && k.wds_index_sidecar) {
    return NotTaken(f, "wds_index", "it places WebDataset's sample index");
  }
  WriterOptions out;
  switch (f) {
    case Format::kNative: {
      auto o = Sharded<NativeOptions>(k, common);
      if (k.align) o.align = *k.align;
      out = o;
      break;
    }
    case Format::kWds: {
      auto o = Sharded<WdsOptions>(k, common);
      o.dali_index = k.dali_index;
      o.index_sidecar = k.wds_index_sidecar;
      out = o;
      break;
    }
    case Format::kTfrecord:
      out = Sharded<TfrecordOptions>(k, common);
      break;
    case Format::kRecordio:
      out = Sharded<RecordioOptions>(k, common);
      break;
    case Format::kLmdb: {
      if (k.shard_size) return NotTaken(f, "shard_size", "LMDB writes one file, data.mdb");
      LmdbOptions o;
      static_cast<CommonWriterOptions&>(o) = common;
      if (k.lmdb_layout) o.layout = *k.lmdb_layout;
      if (k.lmdb_map_size) o.map_size = *k.lmdb_map_size;
      out = o;
      break;
    }
  }
  DS_RETURN_IF_ERROR(Validate(out));
  return out;
}

}  // namespace ds
