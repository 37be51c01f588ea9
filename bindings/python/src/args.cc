// Checked conversions of call arguments (args.h).
#include "args.h"

#include <string>

#include "common.h"

namespace auxpy {

namespace {

std::string TypeName(py::handle obj) { return Py_TYPE(obj.ptr())->tp_name; }

}  // namespace

uint64_t ToUnsigned(py::handle obj, const std::string& what, uint64_t max) {
  // Integers and anything with __index__ (numpy integers); not float, str, None.
  if (!PyIndex_Check(obj.ptr())) {
    throw py::type_error(what + " must be an int, not " + TypeName(obj));
  }
  py::object i = py::reinterpret_steal<py::object>(PyNumber_Index(obj.ptr()));
  if (!i) throw py::error_already_set();
  const int sign = PyObject_RichCompareBool(i.ptr(), py::int_(0).ptr(), Py_LT);
  if (sign < 0) throw py::error_already_set();
  const std::string shown = py::repr(i).cast<std::string>();
  if (sign == 1) throw py::value_error(what + " is " + shown + ", must not be negative");
  py::int_ limit(static_cast<unsigned long long>(max));
  const int above = PyObject_RichCompareBool(i.ptr(), limit.ptr(), Py_GT);
  if (above < 0) throw py::error_already_set();
  if (above == 1) {
    PyErr_SetString(
        PyExc_OverflowError,
        (what + " is " + shown + ", more than its maximum " + std::to_string(max)).c_str());
    throw py::error_already_set();
  }
  const unsigned long long v = PyLong_AsUnsignedLongLong(i.ptr());
  if (PyErr_Occurred()) throw py::error_already_set();
  return v;
}

void CheckBytes(uint64_t v, const std::string& what) {
  if (v > kMaxBytes) {
    PyErr_SetString(PyExc_OverflowError,
                    (what + " is " + std::to_string(v) + ", more than the largest size " +
                     std::to_string(kMaxBytes))
                        .c_str());
    throw py::error_already_set();
  }
}

int ToInt(py::handle obj, const std::string& what) {
  if (!PyIndex_Check(obj.ptr())) {
    throw py::type_error(what + " must be an int, not " + TypeName(obj));
  }
  py::object i = py::reinterpret_steal<py::object>(PyNumber_Index(obj.ptr()));
  if (!i) throw py::error_already_set();
  int overflow = 0;
  const long long v = PyLong_AsLongLongAndOverflow(i.ptr(), &overflow);
  if (overflow != 0 || v < INT32_MIN || v > INT32_MAX) {
    PyErr_SetString(
        PyExc_OverflowError,
        (what + " is " + py::repr(i).cast<std::string>() + ", outside the C int range").c_str());
    throw py::error_already_set();
  }
  return static_cast<int>(v);
}

void CheckNoNul(const std::string& s, const std::string& what) {
  if (s.find('\0') != std::string::npos) {
    throw py::value_error(what + " contains a NUL character (a C string would end there)");
  }
}

std::string ToCString(py::handle obj, const std::string& what) {
  if (!py::isinstance<py::str>(obj)) {
    throw py::type_error(what + " must be a str, not " + TypeName(obj));
  }
  std::string s = obj.cast<std::string>();
  CheckNoNul(s, what);
  return s;
}

std::vector<py::object> ToItems(py::handle obj, size_t n, const std::string& what) {
  if (!py::isinstance<py::tuple>(obj) && !py::isinstance<py::list>(obj)) {
    throw py::type_error(what + " must be a tuple of " + std::to_string(n) + ", not " +
                         TypeName(obj));
  }
  py::sequence seq = py::reinterpret_borrow<py::sequence>(obj);
  if (seq.size() != n) {
    throw py::value_error(what + " has " + std::to_string(seq.size()) + " items, must have " +
                          std::to_string(n));
  }
  std::vector<py::object> out;
  for (size_t i = 0; i < n; ++i) out.push_back(seq[i]);
  return out;
}

std::shared_ptr<State> ToState(py::handle obj, const std::string& what) {
  if (obj.is_none() || !py::isinstance<State>(obj)) {
    throw py::type_error(what + " must be an auxstore.State, not " + TypeName(obj));
  }
  return obj.cast<std::shared_ptr<State>>();
}

std::vector<std::pair<uint32_t, py::object>> ToLayerPairs(py::handle obj, const char* what) {
  std::vector<std::pair<uint32_t, py::object>> out;
  const std::string w = what;
  if (py::isinstance<py::dict>(obj)) {
    for (auto item : py::reinterpret_borrow<py::dict>(obj)) {
      out.emplace_back(ToU32(item.first, w + " layer"),
                       py::reinterpret_borrow<py::object>(item.second));
    }
    return out;
  }
  if (obj.is_none() || py::isinstance<py::str>(obj) || !py::hasattr(obj, "__iter__")) {
    throw py::type_error(w +
                         " must be a dict {layer: value} or a list of (layer, value) pairs, "
                         "not " +
                         TypeName(obj));
  }
  size_t i = 0;
  for (py::handle item : py::iter(obj)) {
    const std::string at = w + "[" + std::to_string(i++) + "]";
    auto t = ToItems(item, 2, at + " (layer, value)");
    out.emplace_back(ToU32(t[0], at + " layer"), t[1]);
  }
  return out;
}

}  // namespace auxpy
