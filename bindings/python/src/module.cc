// auxstore._auxstore: the native half of the `auxstore` Python package
// (bindings/python/auxstore/ is the other), over libauxstore_c.so.
#include "common.h"

PYBIND11_MODULE(_auxstore, m) {
  m.doc() =
      "auxstore over its C ABI (libauxstore_c.so): Store, Backend, State, Pipeline, "
      "RestoreHandle. Import the `auxstore` package rather than this module.";

  // Status codes, kinds, durability, backends, log levels, dtypes.
  const std::pair<const char*, int> constants[] = {
      {"OK", AUXSTORE_OK},
      {"NOT_FOUND", AUXSTORE_NOT_FOUND},
      {"CORRUPTION", AUXSTORE_CORRUPTION},
      {"INVALID_ARGUMENT", AUXSTORE_INVALID_ARGUMENT},
      {"OUT_OF_RANGE", AUXSTORE_OUT_OF_RANGE},
      {"CAPACITY", AUXSTORE_CAPACITY},
      {"IO_ERROR", AUXSTORE_IO_ERROR},
      {"BUSY", AUXSTORE_BUSY},
      {"UNAVAILABLE", AUXSTORE_UNAVAILABLE},
      {"NOT_SUPPORTED", AUXSTORE_NOT_SUPPORTED},
      {"INTERNAL", AUXSTORE_INTERNAL},
      {"KIND_QSA", AUXSTORE_KIND_QSA},
      {"KIND_DSA", AUXSTORE_KIND_DSA},
      {"KIND_OPAQUE", AUXSTORE_KIND_OPAQUE},
      {"SYNC", AUXSTORE_SYNC},
      {"ASYNC", AUXSTORE_ASYNC},
      {"BACKEND_AUTO", AUXSTORE_BACKEND_AUTO},
      {"BACKEND_HOST", AUXSTORE_BACKEND_HOST},
      {"BACKEND_CUDA", AUXSTORE_BACKEND_CUDA},
      {"LOG_DEBUG", AUXSTORE_LOG_DEBUG},
      {"LOG_INFO", AUXSTORE_LOG_INFO},
      {"LOG_WARN", AUXSTORE_LOG_WARN},
      {"LOG_ERROR", AUXSTORE_LOG_ERROR},
      {"DTYPE_U8", AUXSTORE_DTYPE_U8},
      {"DTYPE_I8", AUXSTORE_DTYPE_I8},
      {"DTYPE_BF16", AUXSTORE_DTYPE_BF16},
      {"DTYPE_F16", AUXSTORE_DTYPE_F16},
      {"DTYPE_F32", AUXSTORE_DTYPE_F32},
      {"DTYPE_I32", AUXSTORE_DTYPE_I32},
      {"DTYPE_F64", AUXSTORE_DTYPE_F64},
      {"DTYPE_I64", AUXSTORE_DTYPE_I64},
      {"LATENCY_BUCKETS", AUXSTORE_LATENCY_BUCKETS},
      {"THROUGHPUT_BUCKETS", AUXSTORE_THROUGHPUT_BUCKETS},
  };
  for (const auto& [name, value] : constants) m.attr(name) = value;

  auxpy::RegisterErrors(m);
  auxpy::RegisterBuffers(m);
  auxpy::RegisterStore(m);
  auxpy::RegisterDevice(m);
  auxpy::RegisterPipeline(m);
  auxpy::RegisterIntrospection(m);

  // From atexit on, auxstore's threads stop calling into Python (log records
  // are dropped, futures of restores still running are left pending).
  m.def("_mark_exiting", &auxpy::MarkExiting);
  py::module_::import("atexit").attr("register")(m.attr("_mark_exiting"));
}
