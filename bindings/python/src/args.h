// Checked conversions of call arguments: every bad value raises TypeError,
// ValueError or OverflowError naming the argument (never pybind11's
// "Unable to cast" RuntimeError), before anything reaches the C ABI.
#pragma once

#include <pybind11/pybind11.h>

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace py = pybind11;

namespace auxpy {

class State;

// An integer argument of a call, converted (and refused with the argument's
// name) by the call itself: ToU32 / ToU64 below. Its caster takes any object,
// so a bad value reaches the checked conversion instead of pybind11's
// "incompatible function arguments"; signatures still say `int`.
struct IntArg {
  py::object obj;
};

// The largest byte size a call takes (PTRDIFF_MAX): above it no allocation
// can succeed, and size arithmetic could wrap.
constexpr uint64_t kMaxBytes = static_cast<uint64_t>(INT64_MAX);

// An integer in [0, max]: TypeError for a non-integer (None, str, float),
// ValueError for a negative one, OverflowError above max.
uint64_t ToUnsigned(py::handle obj, const std::string& what, uint64_t max);
inline uint32_t ToU32(py::handle obj, const std::string& what) {
  return static_cast<uint32_t>(ToUnsigned(obj, what, UINT32_MAX));
}
inline uint64_t ToU64(py::handle obj, const std::string& what) {
  return ToUnsigned(obj, what, UINT64_MAX);
}
inline uint32_t ToU32(const IntArg& a, const std::string& what) { return ToU32(a.obj, what); }
inline uint64_t ToU64(const IntArg& a, const std::string& what) { return ToU64(a.obj, what); }
// A byte size: at most kMaxBytes.
inline size_t ToBytes(py::handle obj, const std::string& what) {
  return static_cast<size_t>(ToUnsigned(obj, what, kMaxBytes));
}
// Throws OverflowError naming `what` when a byte size is above kMaxBytes.
void CheckBytes(uint64_t v, const std::string& what);

// A signed int (a device index, a log level, a code).
int ToInt(py::handle obj, const std::string& what);

// A str with no NUL character (C strings end at the first one).
std::string ToCString(py::handle obj, const std::string& what);
// Throws ValueError when `s` holds a NUL character.
void CheckNoNul(const std::string& s, const std::string& what);

// A tuple or list of exactly n items (TypeError / ValueError naming it).
std::vector<py::object> ToItems(py::handle obj, size_t n, const std::string& what);

// An auxstore.State (TypeError for None or anything else).
std::shared_ptr<State> ToState(py::handle obj, const std::string& what);

// The (layer, value) pairs of a dict {layer: value} or an iterable of pairs.
std::vector<std::pair<uint32_t, py::object>> ToLayerPairs(py::handle obj, const char* what);

}  // namespace auxpy

namespace pybind11::detail {
template <>
struct type_caster<auxpy::IntArg> {
  PYBIND11_TYPE_CASTER(auxpy::IntArg, const_name("int"));
  bool load(handle src, bool) {
    value.obj = reinterpret_borrow<object>(src);
    return true;
  }
  static handle cast(const auxpy::IntArg& a, return_value_policy, handle) {
    return a.obj.inc_ref();
  }
};
}  // namespace pybind11::detail
