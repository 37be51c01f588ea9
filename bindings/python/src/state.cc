// auxstore.State (one layer's device state, auxstore's or engine-owned) and
// the Backend calls that create one.
#include <pybind11/stl.h>

#include <algorithm>
#include <optional>

#include "common.h"

namespace auxpy {

namespace {

std::shared_ptr<State> MakeState(const std::shared_ptr<Backend>& b, auxstore_state_t* s) {
  auto st = std::make_shared<State>(b, s);
  b->AddState(st);
  return st;
}

// Creates a state with `create(backend, &out, errmsg)`, GIL released.
template <typename Create>
std::shared_ptr<State> NewState(const std::shared_ptr<Backend>& b, Create&& create) {
  auxstore_state_t* out = nullptr;
  {
    py::gil_scoped_release release;
    b->With([&](auxstore_backend_t* be) { Check([&](char** e) { return create(be, &out, e); }); });
  }
  return MakeState(b, out);
}

const char* KindName(int kind) {
  switch (kind) {
    case AUXSTORE_KIND_QSA:
      return "qsa";
    case AUXSTORE_KIND_DSA:
      return "dsa";
    case AUXSTORE_KIND_OPAQUE:
      return "opaque";
  }
  return "?";
}

}  // namespace

// ---- State ------------------------------------------------------------------------

State::~State() { CloseNoGil(); }

void State::CloseNoGil() {
  std::unique_lock lk(mu_);
  // A restore owns its targets until its done callback ran.
  cv_.wait(lk, [&] { return busy_ == 0; });
  if (s_ == nullptr) return;
  (void)auxstore_state_release(s_, nullptr);  // the handle is gone even on an error
  s_ = nullptr;
}

void State::Close() {
  ForbidInLogCallback();
  py::gil_scoped_release release;
  CloseNoGil();
}

bool State::closed() {
  bool c = false;
  WithoutGil([&] {
    std::lock_guard lk(mu_);
    c = s_ == nullptr;
  });
  return c;
}

auxstore_state_t* State::BeginRestore() {
  std::lock_guard lk(mu_);
  if (s_ == nullptr) throw py::value_error("a restore target state is closed");
  if (busy_ != 0) {
    throw std::runtime_error(
        "a restore target is already owned by a running restore (or appears twice)");
  }
  busy_ = 1;
  return s_;
}

void State::EndRestore() {
  {
    std::lock_guard lk(mu_);
    busy_ = 0;
  }
  cv_.notify_all();
}

std::unique_lock<std::mutex> State::LockIdle(auxstore_state_t** out) {
  std::unique_lock lk(mu_);
  cv_.wait(lk, [&] { return busy_ == 0; });
  if (s_ == nullptr) throw py::value_error("a snapshot source state is closed");
  *out = s_;
  return lk;
}

// ---- bindings ------------------------------------------------------------------------

void RegisterStates(py::module_& m, BackendClass& backend) {
  py::class_<State, std::shared_ptr<State>>(
      m, "State",
      "One layer's device state (auxstore_state_t). A context manager: release() on exit "
      "(frees auxstore's device memory; an engine-owned state's buffers stay the engine's). "
      "While it is a running restore's target, every call on it waits for the restore.")
      .def("release", &State::Close,
           "Releases the state (frees auxstore's device memory; an engine-owned state's buffers "
           "stay the engine's), waiting for a restore that targets it. Idempotent.")
      .def("close", &State::Close, "The same as release().")
      .def_property_readonly("closed", &State::closed,
                             "True once closed (close(), a `with` block, or its parent closed).")
      .def("__enter__", [](std::shared_ptr<State> s) { return s; })
      .def("__exit__", [](State& s, py::args) { s.Close(); })
      .def_property_readonly(
          "kind",
          [](State& s) {
            py::gil_scoped_release release;
            return s.With([](auxstore_state_t* st) { return auxstore_state_kind(st); });
          },
          "KIND_QSA, KIND_DSA or KIND_OPAQUE.")
      .def_property_readonly(
          "kind_name",
          [](State& s) {
            int k;
            {
              py::gil_scoped_release release;
              k = s.With([](auxstore_state_t* st) { return auxstore_state_kind(st); });
            }
            return std::string(KindName(k));
          },
          "\"qsa\", \"dsa\" or \"opaque\".")
      .def_property_readonly(
          "borrowed",
          [](State& s) {
            py::gil_scoped_release release;
            return s.With([](auxstore_state_t* st) { return auxstore_state_is_borrowed(st) == 1; });
          },
          "True for an engine-owned state (borrow_*): auxstore never frees its buffers.")
      .def_property_readonly(
          "buffers",
          [](State& s) {
            uint64_t ptrs[3] = {0, 0, 0};
            size_t n = 0;
            {
              py::gil_scoped_release release;
              s.With([&](auxstore_state_t* st) {
                Check([&](char** e) { return auxstore_state_buffers(st, ptrs, &n, e); });
              });
            }
            return std::vector<uint64_t>(ptrs, ptrs + n);
          },
          "Device addresses: QSA (raw_keys, block_keys), DSA (k_normed, gate, valid), opaque "
          "(buffer,).")
      .def_property_readonly(
          "counters",
          [](State& s) {
            uint64_t c = 0, p = 0;
            {
              py::gil_scoped_release release;
              s.With([&](auxstore_state_t* st) {
                Check([&](char** e) { return auxstore_state_counters(st, &c, &p, e); });
              });
            }
            return py::make_tuple(c, p);
          },
          "(count, pooled): QSA ingested / DSA len / opaque size, and QSA pooled blocks.")
      .def(
          "set_counters",
          [](State& s, IntArg count_arg, IntArg pooled_arg) {
            const uint64_t count = ToU64(count_arg, "count");
            const uint64_t pooled = ToU64(pooled_arg, "pooled");
            py::gil_scoped_release release;
            s.With([&](auxstore_state_t* st) {
              Check([&](char** e) { return auxstore_state_set_counters(st, count, pooled, e); });
            });
          },
          py::arg("count"), py::arg("pooled") = 0,
          "Reports what the engine's own kernels wrote (QSA ingested/pooled, DSA len, opaque "
          "size).")
      .def(
          "load",
          [](State& s, py::handle blob) {
            Buffer b(blob, false, "blob");
            py::gil_scoped_release release;
            s.With([&](auxstore_state_t* st) {
              Check([&](char** e) { return auxstore_state_load(st, b.ptr(), b.len(), e); });
            });
          },
          py::arg("blob"), "Fills a fresh state from a blob of its kind, synchronously.")
      .def(
          "read",
          [](State& s) {
            void* data = nullptr;
            size_t size = 0;
            {
              py::gil_scoped_release release;
              s.With([&](auxstore_state_t* st) {
                Check([&](char** e) { return auxstore_state_read(st, &data, &size, e); });
              });
            }
            return OwnedView(data, size);
          },
          "The state's current blob (what a snapshot holds), as a memoryview.")
      .def(
          "read_block_keys",
          [](State& s) {
            void* data = nullptr;
            size_t size = 0;
            {
              py::gil_scoped_release release;
              s.With([&](auxstore_state_t* st) {
                Check([&](char** e) {
                  return auxstore_qsa_state_read_block_keys(st, &data, &size, e);
                });
              });
            }
            return OwnedView(data, size);
          },
          "A QSA state's pooled block keys (pooled * qsa_hd bf16), as a memoryview.")
      .def("__repr__", [](State& s) {
        if (s.closed()) return std::string("<auxstore.State closed>");
        return std::string("<auxstore.State>");
      });

  // States auxstore allocates.
  backend.def(
      "qsa_state",
      [](std::shared_ptr<Backend> b, const auxstore_geometry_t& g, py::handle k_pool_k,
         py::handle k_norm_w) {
        Buffer q(k_pool_k, false, "k_pool_k"), w(k_norm_w, false, "k_norm_w");
        if (q.len() < size_t{g.qsa_hd} * 2 || w.len() < size_t{g.qsa_hd} * 2) {
          throw py::value_error("k_pool_k and k_norm_w must hold qsa_hd bf16 values each");
        }
        return NewState(b, [&](auxstore_backend_t* be, auxstore_state_t** out, char** e) {
          return auxstore_qsa_state_create(be, &g, q.ptr(), w.ptr(), out, e);
        });
      },
      py::arg("geometry"), py::arg("k_pool_k"), py::arg("k_norm_w"),
      "A fresh QSA state; the layer weights (host buffers of qsa_hd bf16 each) are copied to "
      "the device.");
  backend.def(
      "dsa_state",
      [](std::shared_ptr<Backend> b, const auxstore_geometry_t& g) {
        return NewState(b, [&](auxstore_backend_t* be, auxstore_state_t** out, char** e) {
          return auxstore_dsa_state_create(be, &g, out, e);
        });
      },
      py::arg("geometry"), "A fresh DSA state.");
  backend.def(
      "opaque_state",
      [](std::shared_ptr<Backend> b, py::handle capacity_arg) {
        const uint64_t capacity = ToBytes(capacity_arg, "capacity");
        return NewState(b, [&](auxstore_backend_t* be, auxstore_state_t** out, char** e) {
          return auxstore_opaque_state_create(be, capacity, out, e);
        });
      },
      py::arg("capacity"), "A fresh opaque state holding up to `capacity` bytes.");

  // Engine-owned (borrowed) states: the buffers are integer device addresses.
  backend.def(
      "borrow_qsa",
      [](std::shared_ptr<Backend> b, const auxstore_geometry_t& g, IntArg raw_keys_arg,
         IntArg raw_keys_bytes_arg, IntArg block_keys_arg, IntArg block_keys_bytes_arg,
         IntArg k_pool_k_arg, IntArg k_norm_w_arg, IntArg ingested_arg, IntArg pooled_arg) {
        const uint64_t raw_keys = ToU64(raw_keys_arg, "raw_keys");
        const uint64_t raw_keys_bytes = ToU64(raw_keys_bytes_arg, "raw_keys_bytes");
        const uint64_t block_keys = ToU64(block_keys_arg, "block_keys");
        const uint64_t block_keys_bytes = ToU64(block_keys_bytes_arg, "block_keys_bytes");
        const uint64_t k_pool_k = ToU64(k_pool_k_arg, "k_pool_k");
        const uint64_t k_norm_w = ToU64(k_norm_w_arg, "k_norm_w");
        const uint64_t ingested = ToU64(ingested_arg, "ingested");
        const uint64_t pooled = ToU64(pooled_arg, "pooled");
        CheckBytes(raw_keys_bytes, "raw_keys_bytes");
        CheckBytes(block_keys_bytes, "block_keys_bytes");
        const auxstore_qsa_buffers_t buf{raw_keys,         raw_keys_bytes, block_keys,
                                         block_keys_bytes, k_pool_k,       k_norm_w};
        return NewState(b, [&](auxstore_backend_t* be, auxstore_state_t** out, char** e) {
          return auxstore_qsa_state_borrow(be, &g, &buf, ingested, pooled, out, e);
        });
      },
      py::arg("geometry"), py::kw_only(), py::arg("raw_keys"), py::arg("raw_keys_bytes"),
      py::arg("block_keys"), py::arg("block_keys_bytes"), py::arg("k_pool_k"), py::arg("k_norm_w"),
      py::arg("ingested") = 0, py::arg("pooled") = 0,
      "Wraps the engine's QSA buffers (device addresses) and counters; auxstore never frees "
      "them.");
  backend.def(
      "borrow_dsa",
      [](std::shared_ptr<Backend> b, const auxstore_geometry_t& g, IntArg capacity_rows_arg,
         IntArg k_normed_arg, IntArg k_normed_bytes_arg, IntArg gate_arg, IntArg gate_bytes_arg,
         IntArg valid_arg, IntArg valid_bytes_arg, IntArg len_arg) {
        const uint64_t capacity_rows = ToU64(capacity_rows_arg, "capacity_rows");
        const uint64_t k_normed = ToU64(k_normed_arg, "k_normed");
        const uint64_t k_normed_bytes = ToU64(k_normed_bytes_arg, "k_normed_bytes");
        const uint64_t gate = ToU64(gate_arg, "gate");
        const uint64_t gate_bytes = ToU64(gate_bytes_arg, "gate_bytes");
        const uint64_t valid = ToU64(valid_arg, "valid");
        const uint64_t valid_bytes = ToU64(valid_bytes_arg, "valid_bytes");
        const uint64_t len = ToU64(len_arg, "len");
        CheckBytes(k_normed_bytes, "k_normed_bytes");
        CheckBytes(gate_bytes, "gate_bytes");
        CheckBytes(valid_bytes, "valid_bytes");
        const auxstore_dsa_buffers_t buf{capacity_rows, k_normed, k_normed_bytes, gate,
                                         gate_bytes,    valid,    valid_bytes};
        return NewState(b, [&](auxstore_backend_t* be, auxstore_state_t** out, char** e) {
          return auxstore_dsa_state_borrow(be, &g, &buf, len, out, e);
        });
      },
      py::arg("geometry"), py::kw_only(), py::arg("capacity_rows"), py::arg("k_normed"),
      py::arg("k_normed_bytes"), py::arg("gate"), py::arg("gate_bytes"), py::arg("valid"),
      py::arg("valid_bytes"), py::arg("len") = 0, "Wraps the engine's DSA buffers.");
  backend.def(
      "borrow_opaque",
      [](std::shared_ptr<Backend> b, IntArg buffer_arg, IntArg capacity_arg, IntArg size_arg) {
        const uint64_t buffer = ToU64(buffer_arg, "buffer");
        const uint64_t capacity = ToU64(capacity_arg, "capacity");
        const uint64_t size = ToU64(size_arg, "size");
        CheckBytes(capacity, "capacity");
        CheckBytes(size, "size");
        return NewState(b, [&](auxstore_backend_t* be, auxstore_state_t** out, char** e) {
          return auxstore_opaque_state_borrow(be, buffer, capacity, size, out, e);
        });
      },
      py::arg("buffer"), py::kw_only(), py::arg("capacity"), py::arg("size") = 0,
      "Wraps the engine's opaque buffer.");
}

}  // namespace auxpy
