// dspack._dspack.Reader: one dataset opened with OpenAnyReader (formats/layout.h) and read with
// the GIL released (module.cc's file comment states the contracts: errors, fork, copy=False,
// packed batches). Bound in module.cc; only module.cc includes it.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "formats/layout.h"
#include "formats/schema.h"
#include "python/src/py_util.h"

namespace dspack_py {

class Reader {
 public:
  explicit Reader(const std::string& path) : pid_(::getpid()) {
    r_ = Take(NoGil([&] { return OpenAnyReader(path); }), Phase::kOpen);
    label_ = r_->label_field();
  }
  ~Reader() {
    if (::getpid() != pid_) (void)r_.release();  // a child's inherited copy: leaked (header)
  }

  uint64_t size() const { return reader().size(); }
  std::string kind() const { return std::string(reader().kind()); }
  std::string path() const { return reader().path(); }
  std::string label_field() const { return reader().label_field(); }
  py::list classes() const {  // class folder names may hold any bytes: decoded as keys are
    py::list l;
    for (const auto& c : reader().classes()) l.append(Str(c));
    return l;
  }
  void close() {
    if (::getpid() != pid_) (void)r_.release();
    r_.reset();
  }
  bool closed() const { return r_ == nullptr; }

  py::dict Get(int64_t i, bool copy) const {
    uint64_t n = CheckIndex(i);
    const LayoutReader& rd = reader();
    return ToDict(Take(NoGil([&] { return rd.Get(n); }), Phase::kRead), copy);
  }

  // Samples `indices` through LayoutReader::ReadBatch, as a list of dicts (collate=False) or one
  // dict of lists (collate=True: the default_collate shape, without tensors).
  py::object ReadBatch(const std::vector<int64_t>& indices, unsigned inflight, bool copy,
                       bool collate) {
    std::vector<Sample> out = ReadSamples(indices, inflight, nullptr);
    if (!collate) {
      py::list l;
      for (auto& s : out) l.append(ToDict(std::move(s), copy));
      return l;
    }
    py::dict d;
    py::list keys;
    for (auto& s : out) {
      keys.append(Str(s.key));
      for (auto& f : s.fields) {
        py::str name = Str(f.name);
        if (!d.contains(name)) d[name] = py::list();
        d[name].cast<py::list>().append(Value(f, copy));
      }
    }
    d["__key__"] = keys;
    return d;
  }

  // The batch packed (read_batch(packed=True); docs/python.md, "Packed batches"): per field one
  // writeable uint8 array (the caller's alone) holding every sample's bytes back to back, and int64
  // offsets (n + 1): sample j's bytes are data[offsets[j]:offsets[j+1]], empty where sample j lacks
  // the field. The label field, when every sample's parses as an integer, is one int64 array
  // instead. The samples are concatenated with the GIL released; under the GIL a batch costs one
  // str per key and a few objects per field, not one object per sample and field.
  py::dict ReadPacked(const std::vector<int64_t>& indices, unsigned inflight) {
    std::vector<PackedColumn> cols;
    std::vector<Sample> out = ReadSamples(indices, inflight, &cols);
    py::dict d;
    py::list keys;
    for (const auto& s : out) keys.append(Str(s.key));
    d["__key__"] = keys;
    for (auto& c : cols) {
      if (c.is_int) {
        py::array_t<int64_t> a(static_cast<py::ssize_t>(c.ints.size()));
        std::copy(c.ints.begin(), c.ints.end(), a.mutable_data());
        d[Str(c.name)] = a;
        continue;
      }
      py::array_t<int64_t> off(static_cast<py::ssize_t>(c.offsets.size()));
      std::copy(c.offsets.begin(), c.offsets.end(), off.mutable_data());
      char* p = c.data.release();  // owned by the array's base from here (freed with its last view)
      py::capsule base(p, [](void* q) { delete[] static_cast<char*>(q); });
      d[Str(c.name)] = py::make_tuple(OwnedArray(p, size_t(c.offsets.back()), base, true), off);
    }
    return d;
  }

  py::dict LastStats() const {
    py::dict d;
    d["engine"] = last_stats_.engine;
    d["reads"] = last_stats_.reads;
    d["peak_inflight"] = last_stats_.peak_inflight;
    return d;
  }
  uint64_t landed() const { return landed_.load(std::memory_order_relaxed); }

  py::array_t<uint64_t> Sizes() const {
    const LayoutReader& rd = reader();
    std::vector<uint64_t> sizes = Take(NoGil([&] { return rd.SampleSizes(); }), Phase::kRead);
    py::array_t<uint64_t> a(static_cast<py::ssize_t>(sizes.size()));
    std::copy(sizes.begin(), sizes.end(), a.mutable_data());
    return a;
  }

  py::list Keys() const {
    const LayoutReader& rd = reader();
    std::vector<std::string> keys(rd.size());
    Status st = NoGil([&] {
      for (uint64_t i = 0; i < keys.size(); i++) {
        auto h = rd.Head(i);
        if (!h.ok()) return h.status();
        keys[i] = std::move(h->key);
      }
      return Status::Ok();
    });
    if (!st.ok()) Raise(st, Phase::kRead);
    py::list l;
    for (const auto& k : keys) l.append(Str(k));
    return l;
  }

  // key: a str as keys() gives it (surrogateescape, as os.fsencode), or bytes.
  int64_t IndexOf(const py::object& key_obj) const {
    std::string key = KeyBytes(key_obj);
    const LayoutReader& rd = reader();
    auto found = Take(NoGil([&] { return rd.Find(key); }), Phase::kRead);
    if (!found) {
      PyErr_SetString(
          PyExc_KeyError,
          (reader().path() + ": no sample with key '" + EscapeBytes(key) + "'").c_str());
      throw py::error_already_set();
    }
    return static_cast<int64_t>(*found);
  }

  // (file, bytes, first_sample, samples) per shard, in sample order. whole: the whole dataset's
  // shards in its numbering, where this is a subset view (LayoutReader::WholeShardRanges).
  std::vector<std::tuple<std::string, uint64_t, uint64_t, uint64_t>> Shards(bool whole) const {
    const LayoutReader& rd = reader();
    std::vector<std::tuple<std::string, uint64_t, uint64_t, uint64_t>> v;
    auto ranges = NoGil([&] { return whole ? rd.WholeShardRanges() : rd.ShardRanges(); });
    for (const auto& s : Take(std::move(ranges), Phase::kRead)) {
      v.emplace_back(s.file, s.bytes, s.first_sample, s.samples);
    }
    return v;
  }

  std::string Info() const { return reader().Info().dump(); }

  // Every check `dspack verify` makes: the list of problems (empty: clean).
  std::vector<std::string> Verify() const {
    LayoutVerifyReport rep;
    const LayoutReader& rd = reader();
    Status st = NoGil([&] { return rd.Verify(&rep, nullptr); });
    if (!st.ok()) Raise(st, Phase::kRead);
    return rep.problems;
  }

 private:
  const LayoutReader& reader() const {
    if (!r_) {
      PyErr_SetString(PyExc_ValueError, "I/O operation on a closed dspack dataset");
      throw py::error_already_set();
    }
    if (::getpid() != pid_) {
      std::string msg = r_->path() + ": this dataset was opened in process " +
                        std::to_string(pid_) + " and is used after fork() in " +
                        std::to_string(::getpid()) + "; open it again in this process";
      PyErr_SetString(g_dataset_error.ptr(), msg.c_str());
      throw py::error_already_set();
    }
    return *r_;
  }

  uint64_t CheckIndex(int64_t i) const {
    int64_t n = static_cast<int64_t>(size());
    if (i < 0) i += n;
    if (i < 0 || i >= n) {
      PyErr_SetString(PyExc_IndexError, (reader().path() + ": sample index out of range (" +
                                         std::to_string(n) + " samples)")
                                            .c_str());
      throw py::error_already_set();
    }
    return static_cast<uint64_t>(i);
  }

  struct PackedColumn {
    std::string name;
    std::vector<int64_t> offsets;  // n + 1
    std::unique_ptr<char[]> data;
    bool is_int = false;  // the label field, every sample's an integer: ints instead
    std::vector<int64_t> ints;
  };

  // Reads `indices` with the GIL released; with cols set, also packs them there (ReadPacked).
  std::vector<Sample> ReadSamples(const std::vector<int64_t>& indices, unsigned inflight,
                                  std::vector<PackedColumn>* cols) {
    std::vector<uint64_t> idx;
    idx.reserve(indices.size());
    for (int64_t i : indices) idx.push_back(CheckIndex(i));
    std::vector<Sample> out;
    BatchReadStats stats;
    const LayoutReader& rd = reader();
    Status st = NoGil([&] {
      BatchReadOptions o;
      o.inflight = inflight;
      o.landed = &landed_;
      Status s = rd.ReadBatch(idx, o, &out, &stats);
      if (s.ok() && cols) Pack(out, cols);
      return s;
    });
    last_stats_ = stats;
    if (!st.ok()) Raise(st, Phase::kRead);
    return out;
  }

  // Without the GIL: the columns of ReadPacked, in the order fields first appear.
  void Pack(std::vector<Sample>& samples, std::vector<PackedColumn>* cols) const {
    const size_t n = samples.size();
    auto column = [&](const std::string& name) -> PackedColumn& {
      for (auto& c : *cols) {
        if (c.name == name) return c;
      }
      PackedColumn& c = cols->emplace_back();
      c.name = name;
      c.offsets.assign(n + 1, 0);
      return c;
    };
    for (size_t j = 0; j < n; j++) {  // sizes first: offsets[j + 1] holds sample j's
      for (const auto& f : samples[j].fields)
        column(f.name).offsets[j + 1] = int64_t(f.data.size());
    }
    for (auto& c : *cols) {
      for (size_t j = 0; j < n; j++) c.offsets[j + 1] += c.offsets[j];
      c.data.reset(new char[std::max<int64_t>(1, c.offsets[n])]);
      c.is_int = !label_.empty() && c.name == label_;
      if (c.is_int) c.ints.assign(n, 0);
    }
    for (size_t j = 0; j < n; j++) {
      for (auto& f : samples[j].fields) {
        PackedColumn& c = column(f.name);
        std::memcpy(c.data.get() + c.offsets[j], f.data.data(), f.data.size());
        if (c.is_int) {
          std::optional<int64_t> v = ParseInt64(f.data);
          c.is_int = v.has_value();
          c.ints[j] = v.value_or(0);
        }
        std::string().swap(f.data);  // freed as packed: the batch is held once, not twice
      }
    }
    for (auto& c : *cols) {  // an integer label needs every sample to have one
      for (size_t j = 0; c.is_int && j < n; j++) c.is_int = c.offsets[j + 1] > c.offsets[j];
    }
  }

  // The label field's ASCII decimal becomes an int; other fields stay bytes.
  py::object Value(Field& f, bool copy) const {
    if (!label_.empty() && f.name == label_) {
      if (std::optional<int64_t> v = ParseInt64(f.data)) return py::int_(*v);
    }
    return Bytes(std::move(f.data), copy);
  }

  py::dict ToDict(Sample s, bool copy) const {
    py::dict d;
    d["__key__"] = Str(s.key);
    for (auto& f : s.fields) d[Str(f.name)] = Value(f, copy);
    return d;
  }

  std::unique_ptr<LayoutReader> r_;
  pid_t pid_;
  std::string label_;
  BatchReadStats last_stats_;
  std::atomic<uint64_t> landed_{0};
};

}  // namespace dspack_py
