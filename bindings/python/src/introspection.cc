// inspect.signature for the module's calls: pybind11 (2.10) writes a typed
// signature line into each function's docstring but not the text signature
// CPython reads (`name(a, b=0)\n--\n\n` at the start of the C docstring).
// auxstore/_signatures.py derives one from pybind11's line at import and
// installs it here, in front of the docstring, which stays as it was.
#include <cstdlib>
#include <cstring>

#include "common.h"

namespace auxpy {

namespace {

// Replaces the C docstring of one of this module's functions (a
// PyCFunction whose self is pybind11's function-record capsule: its
// PyMethodDef and docstring are pybind11's, allocated with strdup).
void SetTextSignature(py::handle f, const std::string& doc) {
  if (!PyCFunction_Check(f.ptr()) || PyCFunction_GET_SELF(f.ptr()) == nullptr ||
      !PyCapsule_CheckExact(PyCFunction_GET_SELF(f.ptr()))) {
    throw py::type_error("not a function of this module");
  }
  PyMethodDef* def = reinterpret_cast<PyCFunctionObject*>(f.ptr())->m_ml;
  char* copy = strdup(doc.c_str());
  if (copy == nullptr) throw std::bad_alloc();
  std::free(const_cast<char*>(def->ml_doc));
  def->ml_doc = copy;
}

}  // namespace

void RegisterIntrospection(py::module_& m) {
  m.def("_set_text_signature", &SetTextSignature, py::arg("function"), py::arg("doc"),
        "Installs `doc` (a text signature, '--', then the docstring) as the C docstring of "
        "one of this module's functions (auxstore/_signatures.py).");
}

}  // namespace auxpy
