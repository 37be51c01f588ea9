// Host buffers (buffer protocol, CPU torch tensors, host DLPack tensors), prefixes, tokens,
// kinds, dtypes, labels, and the memoryview over memory auxstore allocated.
#pragma once

#include "errors.h"

namespace auxpy {

// ---- buffers ------------------------------------------------------------------

// A C-contiguous span of an object's memory, held for the life of this
// object (a buffer-protocol export, a CPU torch tensor kept referenced, or
// the DLPack capsule of a host tensor: __dlpack__() or a "dltensor" capsule).
// Construct and destroy with the GIL; read ptr/len without it.
class Buffer {
 public:
  Buffer() = default;
  Buffer(py::handle obj, bool writable, const std::string& what);
  Buffer(Buffer&& o) noexcept;
  Buffer& operator=(Buffer&&) = delete;
  Buffer(const Buffer&) = delete;
  ~Buffer();

  void* ptr() const { return ptr_; }
  size_t len() const { return len_; }
  // A reference that keeps the memory exported (a memoryview, or the tensor).
  py::object Keeper() const;

 private:
  Py_buffer view_{};
  bool have_view_ = false;
  py::object hold_;  // the torch tensor, when that is what it is
  void* ptr_ = nullptr;
  size_t len_ = 0;
};

using Prefix = std::array<uint8_t, 16>;

// A prefix: 16 bytes of any buffer, or 32 hex digits.
Prefix ToPrefix(py::handle obj, const char* what = "prefix");
// Many prefixes: a (n, 16) uint8 buffer, or an iterable of prefixes.
std::vector<Prefix> ToPrefixes(py::handle obj, const char* what = "prefixes");
py::bytes PrefixBytes(const Prefix& p);
py::bytes PrefixBytes(const uint8_t* p);

// Tokens: a buffer of integers (any integer format) or an iterable of ints.
std::vector<uint32_t> ToTokens(py::handle obj);

// A blob kind: 1..3 or "qsa" / "dsa" / "opaque".
uint32_t ToKind(py::handle obj, const std::string& what = "kind");
// An element type: AUXSTORE_DTYPE_* or a name ("f32", "float32", "bfloat16",
// numpy / torch dtypes through their str()).
uint32_t ToDType(py::handle obj);
// Label set for the exposition: None, a str (as is) or a dict (escaped).
std::string ToLabels(py::handle obj);
std::string EscapeLabelValue(const std::string& v);

// A memoryview over memory auxstore_malloc'd (freed with auxstore_free when
// the last view goes): no copy on the way out.
py::object OwnedView(void* data, size_t size);
void RegisterBuffers(py::module_& m);

}  // namespace auxpy
