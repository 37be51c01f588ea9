// Buffers (buffer protocol, CPU torch tensors), prefixes, tokens, kinds,
// dtypes, labels, and the memoryview over memory auxstore allocated.
#include <dlpack/dlpack.h>

#include <cctype>
#include <cstring>
#include <stdexcept>

#include "common.h"

namespace auxpy {

namespace {

bool IsTorchTensor(py::handle obj) {
  return py::hasattr(obj, "data_ptr") && py::hasattr(obj, "element_size") &&
         py::hasattr(obj, "is_contiguous") && py::hasattr(obj, "device");
}

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// True when a buffer's element format is plain bytes: one scalar code
// (struct / PEP 3118, with an optional byte order and count), never object
// pointers ('O') or a structured / sub-array / pointer layout.
bool PlainFormat(const char* format) {
  if (format == nullptr) return true;  // 'B'
  std::string f = format;
  if (!f.empty() && std::strchr("@=<>!", f[0]) != nullptr) f = f.substr(1);
  size_t i = 0;
  while (i < f.size() && f[i] >= '0' && f[i] <= '9') ++i;
  f = f.substr(i);
  if (f.size() == 2 && f[0] == 'Z') return std::strchr("efdg", f[1]) != nullptr;  // complex
  return f.size() == 1 && std::strchr("?cbBhHiIlLqQnNefdgsxw", f[0]) != nullptr;
}

// The DLPack capsule of `obj`: `obj` itself when it is one ("dltensor"), else
// obj.__dlpack__() after __dlpack_device__ says host memory; None when `obj`
// speaks no DLPack. The capsule is not consumed: while it lives the tensor
// does, and its own destructor calls the producer's deleter.
py::object DlpackCapsule(py::handle obj, const std::string& what) {
  if (PyCapsule_IsValid(obj.ptr(), "dltensor")) return py::reinterpret_borrow<py::object>(obj);
  if (!py::hasattr(obj, "__dlpack__")) return py::none();
  if (py::hasattr(obj, "__dlpack_device__")) {
    const auto dev = obj.attr("__dlpack_device__")().cast<std::pair<int, int>>();
    if (dev.first != kDLCPU && dev.first != kDLCUDAHost) {
      throw py::type_error(what + " is a device tensor (DLPack device type " +
                           std::to_string(dev.first) +
                           "): pass its device address to the device API instead");
    }
  }
  return obj.attr("__dlpack__")();
}

// The host memory a DLPack capsule describes: C-contiguous, whole bytes.
void DlpackSpan(py::handle capsule, const std::string& what, void** ptr, size_t* len) {
  auto* m = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule.ptr(), "dltensor"));
  if (m == nullptr) {
    PyErr_Clear();
    throw py::type_error(what + ": __dlpack__() returned no unused \"dltensor\" capsule");
  }
  const DLTensor& t = m->dl_tensor;
  if (t.device.device_type != kDLCPU && t.device.device_type != kDLCUDAHost) {
    throw py::type_error(what + " is a device tensor (DLPack device type " +
                         std::to_string(t.device.device_type) +
                         "): pass its device address to the device API instead");
  }
  if (t.dtype.bits % 8 != 0) {
    throw py::type_error(what + " has " + std::to_string(t.dtype.bits) +
                         "-bit elements: auxstore reads and writes whole bytes");
  }
  uint64_t elements = 1, expect_stride = 1;
  bool contiguous = true;
  for (int d = t.ndim - 1; d >= 0; --d) {
    if (t.shape[d] < 0) throw py::value_error(what + " has a negative DLPack shape");
    if (t.strides != nullptr && t.shape[d] > 1 &&
        t.strides[d] != static_cast<int64_t>(expect_stride)) {
      contiguous = false;
    }
    expect_stride *= static_cast<uint64_t>(t.shape[d]);
    elements *= static_cast<uint64_t>(t.shape[d]);
  }
  if (!contiguous) {
    throw py::value_error(what +
                          " must be C-contiguous: auxstore reads and writes it in place, "
                          "never through a copy");
  }
  *ptr = static_cast<char*>(t.data) + t.byte_offset;
  *len = static_cast<size_t>(elements * (t.dtype.bits / 8) * t.dtype.lanes);
}

// auxstore-malloc'd bytes exported through the buffer protocol.
struct OwnedBytes {
  void* data = nullptr;
  size_t size = 0;
  ~OwnedBytes() { auxstore_free(data); }
};

}  // namespace

Buffer::Buffer(py::handle obj, bool writable, const std::string& what) {
  if (PyObject_CheckBuffer(obj.ptr())) {
    const int flags = PyBUF_STRIDES | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0);
    if (PyObject_GetBuffer(obj.ptr(), &view_, flags) != 0) {
      PyErr_Clear();
      throw py::type_error(what + (writable ? " must be a writable buffer" : " must be a buffer") +
                           " (numpy array, bytearray, memoryview" + (writable ? ")" : ", bytes)"));
    }
    have_view_ = true;
    if (!PlainFormat(view_.format)) {
      const std::string f = view_.format;
      PyBuffer_Release(&view_);
      have_view_ = false;
      throw py::type_error(what + " holds elements of format '" + f +
                           "' (an object or structured dtype), not plain bytes: auxstore "
                           "stores and overwrites raw memory");
    }
    if (!PyBuffer_IsContiguous(&view_, 'C')) {
      PyBuffer_Release(&view_);
      have_view_ = false;
      throw py::value_error(what +
                            " must be C-contiguous: auxstore reads and writes it in place, "
                            "never through a copy");
    }
    ptr_ = view_.buf;
    len_ = static_cast<size_t>(view_.len);
    return;
  }
  if (IsTorchTensor(obj)) {
    if (py::str(obj.attr("device").attr("type")).cast<std::string>() != "cpu") {
      throw py::type_error(what +
                           " is a device tensor: pass tensor.data_ptr() (an integer "
                           "device address) to the device API instead");
    }
    if (!obj.attr("is_contiguous")().cast<bool>()) {
      throw py::value_error(what + " must be a contiguous tensor (auxstore never copies it)");
    }
    ptr_ = reinterpret_cast<void*>(obj.attr("data_ptr")().cast<uintptr_t>());
    len_ = obj.attr("numel")().cast<size_t>() * obj.attr("element_size")().cast<size_t>();
    hold_ = py::reinterpret_borrow<py::object>(obj);
    return;
  }
  if (py::object capsule = DlpackCapsule(obj, what); !capsule.is_none()) {
    DlpackSpan(capsule, what, &ptr_, &len_);
    hold_ = std::move(capsule);
    return;
  }
  throw py::type_error(what +
                       " must support the buffer protocol (numpy array, bytearray, "
                       "memoryview, bytes), be a CPU torch tensor or a host DLPack tensor "
                       "(__dlpack__), not " +
                       std::string(Py_TYPE(obj.ptr())->tp_name));
}

Buffer::Buffer(Buffer&& o) noexcept
    : view_(o.view_),
      have_view_(o.have_view_),
      hold_(std::move(o.hold_)),
      ptr_(o.ptr_),
      len_(o.len_) {
  o.have_view_ = false;
  o.view_ = Py_buffer{};
}

Buffer::~Buffer() {
  if (have_view_) PyBuffer_Release(&view_);
}

py::object Buffer::Keeper() const {
  if (hold_) return hold_;
  if (have_view_ && view_.obj != nullptr) {
    return py::reinterpret_steal<py::object>(PyMemoryView_FromObject(view_.obj));
  }
  return py::none();
}

Prefix ToPrefix(py::handle obj, const char* what) {
  Prefix p{};
  if (py::isinstance<py::str>(obj)) {
    const std::string s = obj.cast<std::string>();
    if (s.size() != 32) {
      throw py::value_error(std::string(what) + " is a str of " + std::to_string(s.size()) +
                            " characters, not 32 hex digits");
    }
    for (size_t i = 0; i < 16; ++i) {
      const int hi = HexDigit(s[2 * i]), lo = HexDigit(s[2 * i + 1]);
      if (hi < 0 || lo < 0) throw py::value_error(std::string(what) + " is not hex: " + s);
      p[i] = static_cast<uint8_t>(hi * 16 + lo);
    }
    return p;
  }
  Buffer b(obj, false, what);
  if (b.len() != 16) {
    throw py::value_error(std::string(what) + " is " + std::to_string(b.len()) +
                          " bytes, must be 16 (or 32 hex digits)");
  }
  std::memcpy(p.data(), b.ptr(), 16);
  return p;
}

std::vector<Prefix> ToPrefixes(py::handle obj, const char* what) {
  std::vector<Prefix> out;
  if (PyObject_CheckBuffer(obj.ptr()) && !py::isinstance<py::bytes>(obj) &&
      !py::isinstance<py::bytearray>(obj)) {
    // A 2-D (n, 16) uint8 array, one prefix a row.
    Py_buffer v{};
    if (PyObject_GetBuffer(obj.ptr(), &v, PyBUF_STRIDES | PyBUF_FORMAT) == 0) {
      const bool rows =
          v.ndim == 2 && v.shape[1] == 16 && v.itemsize == 1 && PyBuffer_IsContiguous(&v, 'C');
      if (rows) {
        out.resize(static_cast<size_t>(v.shape[0]));
        if (!out.empty()) std::memcpy(out.data(), v.buf, out.size() * 16);
      }
      PyBuffer_Release(&v);
      if (rows) return out;
    } else {
      PyErr_Clear();
    }
  }
  if (py::isinstance<py::str>(obj) || py::isinstance<py::bytes>(obj) ||
      py::isinstance<py::bytearray>(obj)) {
    throw py::type_error(std::string(what) +
                         " must be an iterable of prefixes or an (n, 16) uint8 array");
  }
  if (obj.is_none() || !py::hasattr(obj, "__iter__")) {
    throw py::type_error(std::string(what) +
                         " must be an iterable of prefixes or an (n, 16) uint8 array, not " +
                         Py_TYPE(obj.ptr())->tp_name);
  }
  size_t i = 0;
  for (py::handle item : py::iter(obj)) {
    // 16 bytes, the common key: no name built (one allocation a key was
    // most of a 64-key call from a list).
    if (PyBytes_CheckExact(item.ptr()) && PyBytes_GET_SIZE(item.ptr()) == 16) {
      Prefix p;
      std::memcpy(p.data(), PyBytes_AS_STRING(item.ptr()), 16);
      out.push_back(p);
      ++i;
      continue;
    }
    const std::string at = std::string(what) + "[" + std::to_string(i++) + "]";
    out.push_back(ToPrefix(item, at.c_str()));
  }
  return out;
}

py::bytes PrefixBytes(const uint8_t* p) { return py::bytes(reinterpret_cast<const char*>(p), 16); }
py::bytes PrefixBytes(const Prefix& p) { return PrefixBytes(p.data()); }

std::vector<uint32_t> ToTokens(py::handle obj) {
  std::vector<uint32_t> out;
  auto put = [&](long long v) {
    if (v < 0 || v > 0xffffffffLL) {
      throw py::value_error("token " + std::to_string(v) + " is outside 0..2^32-1");
    }
    out.push_back(static_cast<uint32_t>(v));
  };
  if (PyObject_CheckBuffer(obj.ptr()) && !py::isinstance<py::bytes>(obj) &&
      !py::isinstance<py::bytearray>(obj)) {
    Py_buffer v{};
    if (PyObject_GetBuffer(obj.ptr(), &v, PyBUF_STRIDES | PyBUF_FORMAT) != 0) {
      PyErr_Clear();
      throw py::type_error("tokens must be integers");
    }
    struct Release {
      Py_buffer* v;
      ~Release() { PyBuffer_Release(v); }
    } release{&v};
    std::string fmt = v.format != nullptr ? v.format : "B";
    if (!fmt.empty() && (fmt[0] == '<' || fmt[0] == '=' || fmt[0] == '@' || fmt[0] == '!')) {
      fmt = fmt.substr(1);
    }
    if (fmt.size() != 1 || std::string("bBhHiIlLqQ").find(fmt[0]) == std::string::npos) {
      throw py::type_error("tokens must be an integer array, not format '" + fmt + "'");
    }
    if (!PyBuffer_IsContiguous(&v, 'C') || v.ndim > 1) {
      throw py::value_error("tokens must be a contiguous 1-D array");
    }
    const size_t n = static_cast<size_t>(v.len / v.itemsize);
    out.reserve(n);
    const bool is_signed = std::islower(static_cast<unsigned char>(fmt[0])) != 0;
    const auto* p = static_cast<const uint8_t*>(v.buf);
    for (size_t i = 0; i < n; ++i) {
      const uint8_t* e = p + i * v.itemsize;
      long long x = 0;
      switch (v.itemsize) {
        case 1:
          x = is_signed ? *reinterpret_cast<const int8_t*>(e) : *e;
          break;
        case 2: {
          uint16_t u;
          std::memcpy(&u, e, 2);
          x = is_signed ? static_cast<int16_t>(u) : u;
          break;
        }
        case 4: {
          uint32_t u;
          std::memcpy(&u, e, 4);
          x = is_signed ? static_cast<int32_t>(u) : static_cast<long long>(u);
          break;
        }
        case 8: {
          uint64_t u;
          std::memcpy(&u, e, 8);
          if (!is_signed && u > 0xffffffffULL) {
            throw py::value_error("token " + std::to_string(u) + " is outside 0..2^32-1");
          }
          x = static_cast<long long>(u);
          break;
        }
        default:
          throw py::type_error("tokens: unsupported item size " + std::to_string(v.itemsize));
      }
      put(x);
    }
    return out;
  }
  if (obj.is_none() || py::isinstance<py::str>(obj) || !py::hasattr(obj, "__iter__")) {
    throw py::type_error(std::string("tokens must be an integer array or an iterable of ints, "
                                     "not ") +
                         Py_TYPE(obj.ptr())->tp_name);
  }
  size_t i = 0;
  for (py::handle t : py::iter(obj)) {
    put(static_cast<long long>(
        ToUnsigned(t, "tokens[" + std::to_string(i++) + "]", 0xffffffffULL)));
  }
  return out;
}

uint32_t ToKind(py::handle obj, const std::string& what) {
  if (py::isinstance<py::str>(obj)) {
    const std::string s = obj.cast<std::string>();
    if (s == "qsa" || s == "QSA") return AUXSTORE_KIND_QSA;
    if (s == "dsa" || s == "DSA") return AUXSTORE_KIND_DSA;
    if (s == "opaque") return AUXSTORE_KIND_OPAQUE;
    throw py::value_error(what + " '" + s + "' is not 'qsa', 'dsa' or 'opaque'");
  }
  // Any other integer goes to auxstore, which refuses it (InvalidArgumentError).
  return ToU32(obj, what);
}

uint32_t ToDType(py::handle obj) {
  if (PyLong_Check(obj.ptr())) return ToU32(obj, "dtype");
  std::string s = py::str(obj).cast<std::string>();
  if (s.rfind("torch.", 0) == 0) s = s.substr(6);
  static const std::pair<const char*, uint32_t> kNames[] = {
      {"u8", AUXSTORE_DTYPE_U8},       {"uint8", AUXSTORE_DTYPE_U8},
      {"i8", AUXSTORE_DTYPE_I8},       {"int8", AUXSTORE_DTYPE_I8},
      {"bf16", AUXSTORE_DTYPE_BF16},   {"bfloat16", AUXSTORE_DTYPE_BF16},
      {"f16", AUXSTORE_DTYPE_F16},     {"float16", AUXSTORE_DTYPE_F16},
      {"half", AUXSTORE_DTYPE_F16},    {"f32", AUXSTORE_DTYPE_F32},
      {"float32", AUXSTORE_DTYPE_F32}, {"float", AUXSTORE_DTYPE_F32},
      {"i32", AUXSTORE_DTYPE_I32},     {"int32", AUXSTORE_DTYPE_I32},
      {"f64", AUXSTORE_DTYPE_F64},     {"float64", AUXSTORE_DTYPE_F64},
      {"double", AUXSTORE_DTYPE_F64},  {"i64", AUXSTORE_DTYPE_I64},
      {"int64", AUXSTORE_DTYPE_I64},   {"long", AUXSTORE_DTYPE_I64}};
  for (const auto& [name, v] : kNames) {
    if (s == name) return v;
  }
  throw py::value_error("dtype '" + s +
                        "' is not one auxstore declares (u8, i8, bf16, f16, f32, "
                        "i32, f64, i64)");
}

std::string EscapeLabelValue(const std::string& v) {
  std::string out;
  for (char c : v) {
    if (c == '\\' || c == '"') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

std::string ToLabels(py::handle obj) {
  if (obj.is_none()) return "";
  if (py::isinstance<py::str>(obj)) return obj.cast<std::string>();
  if (!py::isinstance<py::dict>(obj)) {
    throw py::type_error("labels must be None, a dict {name: value} or a str");
  }
  std::string out;
  for (auto item : py::reinterpret_borrow<py::dict>(obj)) {
    const std::string name = py::str(item.first).cast<std::string>();
    bool ok = !name.empty() && !(name[0] >= '0' && name[0] <= '9') && name.rfind("__", 0) != 0;
    for (char c : name) {
      ok = ok &&
           (c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'));
    }
    if (!ok) throw py::value_error("'" + name + "' is not a valid Prometheus label name");
    if (!out.empty()) out += ',';
    out += name + "=\"" + EscapeLabelValue(py::str(item.second).cast<std::string>()) + "\"";
  }
  return out;
}

py::object OwnedView(void* data, size_t size) {
  auto owned = std::make_shared<OwnedBytes>();
  owned->data = data;
  owned->size = size;
  py::object holder = py::cast(owned);
  return py::reinterpret_steal<py::object>(PyMemoryView_FromObject(holder.ptr()));
}

void RegisterBuffers(py::module_& m) {
  py::class_<OwnedBytes, std::shared_ptr<OwnedBytes>>(
      m, "Blob", py::buffer_protocol(),
      "Bytes auxstore allocated (a layer, a state's readback), freed when the last view of "
      "them goes. Read it through memoryview(blob) / numpy.frombuffer(blob): no copy.")
      .def_buffer([](OwnedBytes& b) {
        return py::buffer_info(b.data, 1, py::format_descriptor<uint8_t>::format(), 1,
                               {static_cast<py::ssize_t>(b.size)}, {1}, false);
      })
      .def("__len__", [](const OwnedBytes& b) { return b.size; });
  m.def("escape_label_value", &EscapeLabelValue, py::arg("value"),
        "A Prometheus label value with \\, \" and newlines escaped.");
}

}  // namespace auxpy
