// The pieces every binding of dspack._dspack shares (module.cc's file comment states the
// contracts): Status -> Python exception (Raise, Take), the GIL released around a read (NoGil),
// keys and names as str (Str, KeyBytes), and a C++ buffer handed to numpy without a copy
// (OwnedArray, Bytes).
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <string>
#include <string_view>

#include "src/human.h"
#include "src/status.h"

namespace dspack_py {

namespace py = pybind11;
using namespace ds;

// The package's exception types, set at import (module.cc); module-lifetime.
inline py::object g_dataset_error;
inline py::object g_corrupt_error;

// kCorruption/kBadInput while reading a sample are the sample's (or its file's) damage.
enum class Phase { kOpen, kRead };

// The library's option fields as this package's arguments call them (the engine's `iodepth` is
// read_batch's inflight=).
inline constexpr OptionName kPythonNames[] = {{"iodepth", "inflight="}};

[[noreturn]] inline void Raise(const Status& s, Phase phase) {
  std::string msg = RenderOptionNames(s.message(), kPythonNames);
  PyObject* type = PyExc_RuntimeError;
  switch (s.code()) {
    case Code::kNotFound:
      type = PyExc_FileNotFoundError;
      break;
    case Code::kCorruption:
    case Code::kBadInput:
      type = phase == Phase::kRead ? g_corrupt_error.ptr() : g_dataset_error.ptr();
      break;
    case Code::kInvalidArgument:
      type = PyExc_ValueError;
      break;
    case Code::kIOError:
    case Code::kNoSpace:
      type = PyExc_OSError;
      break;
    default:
      msg = RenderOptionNames(s.ToString(), kPythonNames);
  }
  PyErr_SetString(type, msg.c_str());
  throw py::error_already_set();
}

// Runs f with the GIL released. f must not touch Python objects (nor call reader(), which may
// raise): take the reader first.
template <typename F>
auto NoGil(F&& f) {
  py::gil_scoped_release nogil;
  return f();
}

template <typename T>
T Take(Result<T> r, Phase phase) {
  if (!r.ok()) Raise(r.status(), phase);
  return std::move(*r);
}

// Keys and field names may hold any bytes (zip and tar names): decoded as os.fsdecode does.
inline py::str Str(std::string_view s) {
  PyObject* o =
      PyUnicode_DecodeUTF8(s.data(), static_cast<Py_ssize_t>(s.size()), "surrogateescape");
  if (o == nullptr) throw py::error_already_set();
  return py::reinterpret_steal<py::str>(o);
}

// The bytes of a key given as str (encoded as os.fsencode does, the inverse of Str) or bytes;
// TypeError for anything else.
inline std::string KeyBytes(const py::object& o) {
  if (py::isinstance<py::bytes>(o)) return o.cast<std::string>();
  if (!py::isinstance<py::str>(o)) throw py::type_error("a key is a str or bytes");
  PyObject* b = PyUnicode_AsEncodedString(o.ptr(), "utf-8", "surrogateescape");
  if (b == nullptr) throw py::error_already_set();
  return py::reinterpret_steal<py::bytes>(b).cast<std::string>();
}

// A uint8 array over [p, p + size) kept alive by `base`, which owns the bytes; read-only unless
// `writeable` (a packed batch's buffer is the caller's alone: torch.from_numpy takes it as is).
inline py::array OwnedArray(const void* p, size_t size, py::capsule base, bool writeable = false) {
  py::array_t<uint8_t> a({static_cast<py::ssize_t>(size)}, {1}, static_cast<const uint8_t*>(p),
                         std::move(base));
  if (!writeable) {
    py::detail::array_proxy(a.ptr())->flags &= ~py::detail::npy_api::NPY_ARRAY_WRITEABLE_;
  }
  return a;
}

inline py::object Bytes(std::string&& data, bool copy) {
  if (copy) return py::bytes(data.data(), data.size());
  auto* owned = new std::string(std::move(data));
  return OwnedArray(owned->data(), owned->size(),
                    py::capsule(owned, [](void* p) { delete static_cast<std::string*>(p); }));
}

}  // namespace dspack_py
