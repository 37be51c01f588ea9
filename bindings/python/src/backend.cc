// auxstore.Backend (host or CUDA): the handle, device memory, copies and
// streams, as integers. Its state-creating calls are in state.cc.
#include <pybind11/stl.h>

#include <algorithm>
#include <new>
#include <optional>
#include <stdexcept>
#include <string>

#include "common.h"

namespace auxpy {

namespace {

int ToBackendKind(py::handle k) {
  if (py::isinstance<py::str>(k)) {
    const std::string s = k.cast<std::string>();
    if (s == "auto") return AUXSTORE_BACKEND_AUTO;
    if (s == "host") return AUXSTORE_BACKEND_HOST;
    if (s == "cuda") return AUXSTORE_BACKEND_CUDA;
    throw py::value_error("backend kind '" + s + "' is not 'auto', 'host' or 'cuda'");
  }
  return ToInt(k, "kind");
}

}  // namespace

// ---- Backend ----------------------------------------------------------------------

Backend::Backend(py::object kind, py::object device) : Handle("backend") {
  ForbidInLogCallback();
  const int k = ToBackendKind(kind);
  auxstore_backend_t* b = nullptr;
  const std::optional<int> dev =
      device.is_none() ? std::nullopt : std::optional<int>(ToInt(device, "device"));
  py::gil_scoped_release release;
  Check([&](char** e) {
    return dev ? auxstore_backend_create_on_device(k, *dev, &b, e)
               : auxstore_backend_create(k, &b, e);
  });
  Set(b);
}

Backend::~Backend() {
  WithoutGil([&] { CloseNoGil(); });
  std::vector<std::pair<uint64_t, py::object>> kept;
  {
    std::lock_guard lk(kept_mu_);
    kept.swap(kept_);
  }
  if (!kept.empty() && !WithGil([&] { kept.clear(); })) {
    for (auto& k : kept) k.second.release();  // the interpreter is gone: leak
  }
}

void Backend::CloseNoGil() {
  auto lk = Lock();
  deferred_.Wait();
  if (!open()) return;
  // The C ABI's teardown order: pipelines (their restore handles first), then
  // states, then the backend.
  for (auto& p : pipelines_.Take()) p->CloseNoGil();
  for (auto& s : states_.Take()) s->CloseNoGil();
  auxstore_backend_destroy(Take());
}

void Backend::Close() {
  ForbidBlockingInCallback("Backend.close");
  {
    py::gil_scoped_release release;
    CloseNoGil();
  }
  std::vector<std::pair<uint64_t, py::object>> kept;
  std::lock_guard lk(kept_mu_);
  kept.swap(kept_);
}

int Backend::kind() {
  py::gil_scoped_release release;
  return With([](auxstore_backend_t* b) { return auxstore_backend_kind(b); });
}
int Backend::device() {
  py::gil_scoped_release release;
  return With([](auxstore_backend_t* b) { return auxstore_backend_device(b); });
}
std::string Backend::name() {
  py::gil_scoped_release release;
  return With([](auxstore_backend_t* b) { return std::string(auxstore_backend_name(b)); });
}

void Backend::KeepUntilSynced(uint64_t stream, py::object keeper) {
  std::lock_guard lk(kept_mu_);
  kept_.emplace_back(stream, std::move(keeper));
}

void Backend::DropKept(uint64_t stream) {
  std::vector<py::object> dropped;  // decref'd after the lock, with the GIL
  std::lock_guard lk(kept_mu_);
  for (auto it = kept_.begin(); it != kept_.end();) {
    if (it->first == stream) {
      dropped.push_back(std::move(it->second));
      it = kept_.erase(it);
    } else {
      ++it;
    }
  }
}

// ---- bindings ------------------------------------------------------------------------

void RegisterDevice(py::module_& m) {
  BackendClass backend(
      m, "Backend",
      "A host or CUDA backend (auxstore_backend_create). Device addresses and streams are "
      "integers: on CUDA a CUdeviceptr (torch.Tensor.data_ptr()) and a cudaStream_t "
      "(torch.cuda.Stream().cuda_stream); on the host backend memory from alloc() and "
      "streams from create_stream(). A context manager.");
  backend
      .def(py::init<py::object, py::object>(), py::arg("kind") = "auto", py::kw_only(),
           py::arg("device") = py::none(),
           "kind: 'auto' (CUDA when built and present, else host), 'host', 'cuda' or "
           "BACKEND_*; device: a CUDA device index (None: the current device).")
      .def("close", &Backend::Close, "Closes it, with its pipelines and states first.")
      .def_property_readonly("closed", &Backend::closed,
                             "True once closed (close(), a `with` block, or its parent closed).")
      .def_property_readonly("kind", &Backend::kind, "BACKEND_HOST or BACKEND_CUDA.")
      .def_property_readonly("device", &Backend::device,
                             "The CUDA device index (-1 on the host backend).")
      .def_property_readonly("name", &Backend::name,
                             "The backend's name (\"host\", \"cuda:0\", ...).")
      .def("__enter__", [](std::shared_ptr<Backend> b) { return b; })
      .def("__exit__", [](Backend& b, py::args) { b.Close(); })
      .def("__repr__", [](Backend& b) {
        return b.closed() ? std::string("<auxstore.Backend closed>")
                          : "<auxstore.Backend " + b.name() + ">";
      });

  backend.def(
      "alloc",
      [](Backend& b, py::handle nbytes_arg) {
        const size_t nbytes = ToBytes(nbytes_arg, "nbytes");
        uint64_t ptr = 0;
        py::gil_scoped_release release;
        b.With([&](auxstore_backend_t* be) {
          Check([&](char** e) { return auxstore_device_alloc(be, nbytes, &ptr, e); });
        });
        return ptr;
      },
      py::arg("nbytes"), "Device memory (an integer address); free it with free().");
  backend.def(
      "free",
      [](Backend& b, IntArg ptr_arg) {
        const uint64_t ptr = ToU64(ptr_arg, "ptr");
        py::gil_scoped_release release;
        b.With([&](auxstore_backend_t* be) {
          Check([&](char** e) { return auxstore_device_free(be, ptr, e); });
        });
      },
      py::arg("ptr"), "Frees memory from alloc().");
  backend.def(
      "copy_h2d",
      [](Backend& b, IntArg ptr_arg, py::handle src, IntArg stream_arg, IntArg offset_arg) {
        const uint64_t ptr = ToU64(ptr_arg, "ptr");
        const uint64_t stream = ToU64(stream_arg, "stream");
        const uint64_t offset = ToU64(offset_arg, "offset");
        CheckBytes(offset, "offset");
        Buffer s(src, false, "src");
        {
          py::gil_scoped_release release;
          b.With([&](auxstore_backend_t* be) {
            Check([&](char** e) {
              return auxstore_device_copy_h2d(be, ptr, offset, s.ptr(), s.len(), stream, e);
            });
          });
        }
        // The copy reads `src` asynchronously: keep it until the stream is synchronized.
        b.KeepUntilSynced(stream, s.Keeper());
      },
      py::arg("ptr"), py::arg("src"), py::kw_only(), py::arg("stream"), py::arg("offset") = 0,
      "Copies the host buffer `src` to ptr+offset asynchronously on `stream`; `src` is kept "
      "referenced (and exported, so it cannot be resized) until synchronize(stream).");
  backend.def(
      "copy_d2h",
      [](Backend& b, py::handle dst, IntArg ptr_arg, IntArg stream_arg, IntArg offset_arg,
         py::object nbytes) {
        const uint64_t ptr = ToU64(ptr_arg, "ptr");
        const uint64_t stream = ToU64(stream_arg, "stream");
        const uint64_t offset = ToU64(offset_arg, "offset");
        Buffer d(dst, true, "dst");
        const size_t n = nbytes.is_none() ? d.len() : ToBytes(nbytes, "nbytes");
        CheckBytes(offset, "offset");
        if (n > d.len()) throw py::value_error("nbytes is more than dst holds");
        py::gil_scoped_release release;
        b.With([&](auxstore_backend_t* be) {
          Check([&](char** e) {
            return auxstore_device_copy_d2h(be, d.ptr(), ptr, offset, n, stream, e);
          });
        });
      },
      py::arg("dst"), py::arg("ptr"), py::kw_only(), py::arg("stream"), py::arg("offset") = 0,
      py::arg("nbytes") = py::none(),
      "Copies ptr+offset into the writable buffer `dst` (all of it, or nbytes) after the "
      "stream's earlier work; returns once the bytes are there.");
  backend.def(
      "read",
      [](Backend& b, IntArg ptr_arg, py::handle nbytes_arg, IntArg stream_arg, IntArg offset_arg) {
        const uint64_t ptr = ToU64(ptr_arg, "ptr");
        const uint64_t stream = ToU64(stream_arg, "stream");
        const uint64_t offset = ToU64(offset_arg, "offset");
        const size_t nbytes = ToBytes(nbytes_arg, "nbytes");
        CheckBytes(offset, "offset");
        std::string zeros;
        try {
          zeros.assign(nbytes, '\0');
        } catch (const std::bad_alloc&) {
          PyErr_SetString(PyExc_MemoryError, ("read(): nbytes=" + std::to_string(nbytes) +
                                              " is more than this process can allocate")
                                                 .c_str());
          throw py::error_already_set();
        } catch (const std::length_error&) {
          throw py::value_error("read(): nbytes=" + std::to_string(nbytes) + " is too large");
        }
        py::bytearray out(zeros);
        zeros = std::string();
        Buffer d(out, true, "out");
        {
          py::gil_scoped_release release;
          b.With([&](auxstore_backend_t* be) {
            Check([&](char** e) {
              return auxstore_device_copy_d2h(be, d.ptr(), ptr, offset, nbytes, stream, e);
            });
          });
        }
        return out;
      },
      py::arg("ptr"), py::arg("nbytes"), py::kw_only(), py::arg("stream"), py::arg("offset") = 0,
      "copy_d2h into a new bytearray.");
  backend.def(
      "create_stream",
      [](Backend& b) {
        uint64_t s = 0;
        py::gil_scoped_release release;
        b.With([&](auxstore_backend_t* be) {
          Check([&](char** e) { return auxstore_stream_create(be, &s, e); });
        });
        return s;
      },
      "A new stream (non-blocking on CUDA), as an integer.");
  backend.def(
      "destroy_stream",
      [](Backend& b, IntArg stream_arg) {
        const uint64_t stream = ToU64(stream_arg, "stream");
        {
          py::gil_scoped_release release;
          b.With([&](auxstore_backend_t* be) {
            Check([&](char** e) { return auxstore_stream_destroy(be, stream, e); });
          });
        }
        b.DropKept(stream);
      },
      py::arg("stream"), "Waits for the stream's work, then destroys it.");
  backend.def(
      "synchronize",
      [](Backend& b, IntArg stream_arg) {
        const uint64_t stream = ToU64(stream_arg, "stream");
        {
          py::gil_scoped_release release;
          b.With([&](auxstore_backend_t* be) {
            Check([&](char** e) { return auxstore_stream_synchronize(be, stream, e); });
          });
        }
        b.DropKept(stream);
      },
      py::arg("stream"), "Waits for the stream's work.");

  RegisterStates(m, backend);
}

}  // namespace auxpy
