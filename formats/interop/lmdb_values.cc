#include "formats/interop/lmdb_values.h"

#include <fmt/format.h>

#include "src/endian.h"

namespace ds::lmdb {

namespace {

// Pickle opcodes (CPython Lib/pickletools.py).
constexpr char kProto = '\x80', kStop = '.', kTuple2 = '\x86', kEmptyList = ']', kMark = '(',
               kAppends = 'e', kShortBinBytes = 'C', kBinBytes = 'B', kBinBytes8 = '\x8e',
               kBinInt1 = 'K', kBinInt2 = 'M', kBinInt = 'J', kLong1 = '\x8a', kBinPut = 'q',
               kLongBinPut = 'r', kMemoize = '\x94', kFrame = '\x95';
constexpr int kProtocol = 3;
constexpr size_t kAppendsBatch = 1000;  // as pickle batches list items

void PutBytes(std::string* out, std::string_view b) {
  if (b.size() < 256) {
    out->push_back(kShortBinBytes);
    out->push_back(static_cast<char>(b.size()));
  } else {
    out->push_back(kBinBytes);
    PutLE32(out, static_cast<uint32_t>(b.size()));  // LMDB values are far below 4 GiB
  }
  out->append(b);
}

void PutInt(std::string* out, int64_t v) {
  if (v >= 0 && v < 256) {
    out->push_back(kBinInt1);
    out->push_back(static_cast<char>(v));
  } else if (v >= 0 && v < 65536) {
    out->push_back(kBinInt2);
    out->push_back(static_cast<char>(v & 0xff));
    out->push_back(static_cast<char>(v >> 8));
  } else if (v >= INT32_MIN && v <= INT32_MAX) {
    out->push_back(kBinInt);
    PutLE32(out, static_cast<uint32_t>(static_cast<int32_t>(v)));
  } else {  // LONG1: little-endian two's complement, 8 bytes
    out->push_back(kLong1);
    out->push_back(8);
    PutLE64(out, static_cast<uint64_t>(v));
  }
}

std::string Head() { return {kProto, static_cast<char>(kProtocol)}; }

// A cursor over a pickle that skips the opcodes that do not change the value (memo, frames).
struct Unpickler {
  std::string_view d;
  bool Byte(char* c) {
    if (d.empty()) return false;
    *c = d[0];
    d.remove_prefix(1);
    return true;
  }
  bool Take(size_t n, std::string_view* out) {
    if (n > d.size()) return false;
    *out = d.substr(0, n);
    d.remove_prefix(n);
    return true;
  }
  // The next opcode that matters.
  bool Op(char* op) {
    for (;;) {
      if (!Byte(op)) return false;
      std::string_view skip;
      if (*op == kBinPut) {
        if (!Take(1, &skip)) return false;
      } else if (*op == kLongBinPut) {
        if (!Take(4, &skip)) return false;
      } else if (*op == kFrame) {
        if (!Take(8, &skip)) return false;
      } else if (*op != kMemoize) {
        return true;
      }
    }
  }
  bool Proto() {
    char op, v;
    return Byte(&op) && op == kProto && Byte(&v) && v >= 2 && v <= 5;
  }
  bool Bytes(char op, std::string_view* out) {
    std::string_view n;
    if (op == kShortBinBytes) return Take(1, &n) && Take(static_cast<uint8_t>(n[0]), out);
    if (op == kBinBytes) return Take(4, &n) && Take(LoadLE32(n.data()), out);
    if (op == kBinBytes8) return Take(8, &n) && Take(LoadLE64(n.data()), out);
    return false;
  }
  bool Int(char op, int64_t* v) {
    std::string_view n;
    if (op == kBinInt1 && Take(1, &n)) {
      *v = static_cast<uint8_t>(n[0]);
    } else if (op == kBinInt2 && Take(2, &n)) {
      *v = static_cast<uint8_t>(n[0]) | static_cast<uint8_t>(n[1]) << 8;
    } else if (op == kBinInt && Take(4, &n)) {
      *v = static_cast<int32_t>(LoadLE32(n.data()));
    } else if (op == kLong1 && Take(1, &n) && static_cast<uint8_t>(n[0]) <= 8 &&
               Take(static_cast<uint8_t>(n[0]), &n)) {
      uint64_t u = 0;
      for (size_t i = 0; i < n.size(); i++) u |= uint64_t{static_cast<uint8_t>(n[i])} << (8 * i);
      if (!n.empty() && n.size() < 8 && (n.back() & 0x80)) u |= ~uint64_t{0} << (8 * n.size());
      *v = static_cast<int64_t>(u);
    } else {
      return false;
    }
    return true;
  }
  bool Stop() {
    char op;
    return Op(&op) && op == kStop && d.empty();
  }
};

Status NotOurs(std::string_view what) {
  return Status(Code::kCorruption, fmt::format("not a pickle of {}", what));
}

// Protobuf varint (Caffe's Datum).
void PutVarint(std::string* s, uint64_t v) {
  while (v >= 0x80) {
    s->push_back(static_cast<char>(v | 0x80));
    v >>= 7;
  }
  s->push_back(static_cast<char>(v));
}
bool Varint(std::string_view* d, uint64_t* v) {
  *v = 0;
  for (int shift = 0; shift < 64 && !d->empty(); shift += 7) {
    auto b = static_cast<uint8_t>((*d)[0]);
    d->remove_prefix(1);
    *v |= uint64_t{b & 0x7fu} << shift;
    if (!(b & 0x80)) return true;
  }
  return false;
}

}  // namespace

std::string PickleImageLabel(std::string_view image, int64_t label) {
  std::string out = Head();
  PutBytes(&out, image);
  PutInt(&out, label);
  out.push_back(kTuple2);
  out.push_back(kStop);
  return out;
}

std::string PickleInt(int64_t v) {
  std::string out = Head();
  PutInt(&out, v);
  out.push_back(kStop);
  return out;
}

std::string PickleBytesList(std::span<const std::string> items) {
  std::string out = Head();
  out.push_back(kEmptyList);
  for (size_t i = 0; i < items.size(); i += kAppendsBatch) {
    out.push_back(kMark);
    for (size_t j = i; j < items.size() && j < i + kAppendsBatch; j++) PutBytes(&out, items[j]);
    out.push_back(kAppends);
  }
  out.push_back(kStop);
  return out;
}

Result<ImageLabel> UnpickleImageLabel(std::string_view value) {
  Unpickler u{value};
  ImageLabel r;
  char op;
  if (!u.Proto() || !u.Op(&op) || !u.Bytes(op, &r.image) || !u.Op(&op) || !u.Int(op, &r.label) ||
      !u.Op(&op) || op != kTuple2 || !u.Stop()) {
    return NotOurs("(bytes, int)");
  }
  return r;
}

Result<int64_t> UnpickleInt(std::string_view value) {
  Unpickler u{value};
  int64_t v = 0;
  char op;
  if (!u.Proto() || !u.Op(&op) || !u.Int(op, &v) || !u.Stop()) return NotOurs("an int");
  return v;
}

std::string EncodeDatum(std::string_view image, int32_t label) {
  std::string out;
  out.push_back(0x22);  // data = 4, length-delimited
  PutVarint(&out, image.size());
  out.append(image);
  out.push_back(0x28);  // label = 5, varint (a negative int32 sign-extends to 10 bytes)
  PutVarint(&out, static_cast<uint64_t>(static_cast<int64_t>(label)));
  out.push_back(0x38);  // encoded = 7, varint
  out.push_back(1);
  return out;
}

Result<ImageLabel> DecodeDatum(std::string_view d) {
  ImageLabel r;
  bool data = false, encoded = false;
  while (!d.empty()) {
    uint64_t tag, v;
    if (!Varint(&d, &tag)) return Status(Code::kCorruption, "Datum: truncated tag");
    int wire = tag & 7;
    if (wire == 0) {
      if (!Varint(&d, &v)) return Status(Code::kCorruption, "Datum: truncated varint");
      if (tag >> 3 == 5) r.label = static_cast<int32_t>(v);
      if (tag >> 3 == 7) encoded = v != 0;
    } else if (wire == 2) {
      if (!Varint(&d, &v) || v > d.size())
        return Status(Code::kCorruption, "Datum: truncated field");
      if (tag >> 3 == 4) {
        r.image = d.substr(0, v);
        data = true;
      }
      d.remove_prefix(v);
    } else if (wire == 5 && d.size() >= 4) {
      d.remove_prefix(4);
    } else {
      return Status(Code::kCorruption, fmt::format("Datum: wire type {} unexpected", wire));
    }
  }
  if (!data || !encoded) {
    return Status(Code::kCorruption, "Datum: not an encoded image (data and encoded=true)");
  }
  return r;
}

}  // namespace ds::lmdb
