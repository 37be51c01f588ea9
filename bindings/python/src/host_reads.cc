// Engine host memory as a read target (issue 24, docs/connectors.md):
// Store.register_host_buffer(array) -> HostBuffer (registered once; it holds
// the array, a numpy array or a host DLPack tensor, so its memory stays
// valid) and Store.read_into_host(ns, targets) -> HostRead: many layers of
// many snapshots read into registered buffers on the store's pool, with one
// handle. A HostRead holds its HostBuffers until it is released (released
// waits for the reads in flight), so a buffer's memory is never freed under
// a read.
#include <pybind11/stl.h>

#include <cstring>
#include <optional>

#include "common.h"
#include "store_types.h"

namespace auxpy {

namespace {

class HostBuffer {
 public:
  HostBuffer(Buffer buffer, auxstore_host_buffer_t* handle)
      : buffer_(std::in_place, std::move(buffer)), handle_(handle) {}
  ~HostBuffer() {
    // A HostRead holding this buffer keeps it alive, so no read holds it now.
    if (handle_ != nullptr) auxstore_unregister_host_buffer(handle_, nullptr);
  }
  HostBuffer(const HostBuffer&) = delete;
  HostBuffer& operator=(const HostBuffer&) = delete;

  auxstore_host_buffer_t* handle() const {
    if (handle_ == nullptr) throw py::value_error("the host buffer is unregistered");
    return handle_;
  }
  size_t size() const { return buffer_ ? buffer_->len() : 0; }
  // GIL held. BusyError while a HostRead not yet released holds it.
  void Unregister() {
    if (handle_ == nullptr) return;
    Check([&](char** e) { return auxstore_unregister_host_buffer(handle_, e); });
    handle_ = nullptr;
    buffer_.reset();
  }
  py::object Keeper() const { return buffer_ ? buffer_->Keeper() : py::none(); }

 private:
  std::optional<Buffer> buffer_;  // until unregistered
  auxstore_host_buffer_t* handle_;
};

class HostRead {
 public:
  HostRead(auxstore_host_read_t* handle, std::vector<std::shared_ptr<HostBuffer>> buffers, size_t n,
           uint64_t ns)
      : handle_(handle), buffers_(std::move(buffers)), n_(n), ns_(ns) {}
  ~HostRead() { Release(); }
  HostRead(const HostRead&) = delete;
  HostRead& operator=(const HostRead&) = delete;

  size_t size() const { return n_; }
  // The namespace the call was given: wait_snapshot's default.
  uint64_t ns() const { return ns_; }
  auxstore_host_read_t* handle() const {
    if (handle_ == nullptr) throw py::value_error("the host read is released");
    return handle_;
  }
  // Cancels what has not started, waits for the reads in flight, and gives
  // the buffers back.
  void Release() {
    if (handle_ == nullptr) return;
    auxstore_host_read_t* h = handle_;
    handle_ = nullptr;
    WithoutGil([&] { auxstore_host_read_release(h); });
    buffers_.clear();
  }

 private:
  auxstore_host_read_t* handle_;
  std::vector<std::shared_ptr<HostBuffer>> buffers_;
  size_t n_;
  uint64_t ns_;
};

struct Target {
  uint64_t ns;
  Prefix prefix;
  uint32_t layer;
  std::shared_ptr<HostBuffer> buffer;
  size_t offset, capacity;
};

// (prefix, layer, host_buffer, offset, capacity) of namespace `ns`, or
// (ns, prefix, layer, host_buffer, offset, capacity).
Target ToTarget(py::handle item, size_t i, uint64_t ns) {
  const std::string name = "targets[" + std::to_string(i) + "]";
  const py::tuple t = py::reinterpret_borrow<py::object>(item).cast<py::tuple>();
  if (t.size() != 5 && t.size() != 6) {
    throw py::type_error(name + " must be ([ns,] prefix, layer, host_buffer, offset, capacity)");
  }
  const size_t k = t.size() - 5;
  Target out;
  out.ns = k == 1 ? ToU64(t[0].cast<IntArg>(), "ns") : ns;
  out.prefix = ToPrefix(t[k], name.c_str());
  out.layer = ToU32(t[k + 1].cast<IntArg>(), "layer");
  if (!py::isinstance<HostBuffer>(t[k + 2])) {
    throw py::type_error(name + ": the buffer must be a HostBuffer (Store.register_host_buffer)");
  }
  out.buffer = t[k + 2].cast<std::shared_ptr<HostBuffer>>();
  out.offset = ToU64(t[k + 3].cast<IntArg>(), "offset");
  out.capacity = ToU64(t[k + 4].cast<IntArg>(), "capacity");
  return out;
}

}  // namespace

void RegisterHostReads(py::module_& m, StoreClass& store) {
  py::class_<HostBuffer, std::shared_ptr<HostBuffer>>(
      m, "HostBuffer",
      "An engine's host buffer registered with a store (Store.register_host_buffer): a "
      "read target. It holds the array it was made from.")
      .def_property_readonly("size", &HostBuffer::size, "Its bytes.")
      .def_property_readonly("obj", &HostBuffer::Keeper, "What keeps its memory exported.")
      .def("unregister", &HostBuffer::Unregister,
           "Unregisters it (idempotent); BusyError while a HostRead not yet released targets "
           "it.")
      .def(
          "__enter__", [](std::shared_ptr<HostBuffer> b) { return b; }, "Itself.")
      .def(
          "__exit__", [](HostBuffer& b, py::args) { b.Unregister(); }, "Unregisters it.");

  py::class_<HostRead, std::shared_ptr<HostRead>>(
      m, "HostRead",
      "Layers of many snapshots being read into registered host buffers "
      "(Store.read_into_host): per-target, per-snapshot and whole waits.")
      .def("__len__", &HostRead::size, "How many targets it reads.")
      .def(
          "poll", [](HostRead& r) { return auxstore_host_read_poll(r.handle()) == 1; },
          "True when every target is done.")
      .def(
          "target_done",
          [](HostRead& r, size_t i) { return auxstore_host_read_target_done(r.handle(), i) == 1; },
          py::arg("i"), "True when target i is done.")
      .def(
          "wait",
          [](HostRead& r) {
            auxstore_host_read_t* h = r.handle();
            WithoutGil([&] { Check([&](char** e) { return auxstore_host_read_wait(h, e); }); });
          },
          "Waits for every target; raises the first failed target's error.")
      .def(
          "wait_target",
          [](HostRead& r, size_t i) {
            auxstore_host_read_t* h = r.handle();
            size_t size = 0;
            WithoutGil([&] {
              Check([&](char** e) { return auxstore_host_read_wait_target(h, i, &size, e); });
            });
            return size;
          },
          py::arg("i"), "Waits for target i: the layer's bytes, or its error.")
      .def(
          "wait_snapshot",
          [](HostRead& r, py::handle prefix, py::object ns_arg) {
            auxstore_host_read_t* h = r.handle();
            const Prefix p = ToPrefix(prefix);
            const uint64_t ns = ns_arg.is_none() ? r.ns() : ToU64(ns_arg, "ns");
            WithoutGil([&] {
              Check([&](char** e) { return auxstore_host_read_wait_snapshot(h, ns, p.data(), e); });
            });
          },
          py::arg("prefix"), py::arg("ns") = py::none(),
          "Waits for every target of one snapshot: (ns, prefix), ns defaulting to the call's; "
          "one prefix in two namespaces is two snapshots.")
      .def(
          "finished",
          [](HostRead& r) {
            auxstore_host_read_t* h = r.handle();
            std::vector<auxstore_snapshot_ref_t> got(r.size());
            size_t n = 0;
            Check([&](char** e) {
              return auxstore_host_read_finished(h, got.empty() ? nullptr : got.data(), got.size(),
                                                 &n, e);
            });
            py::list out;
            for (size_t i = 0; i < n; ++i) {
              Prefix p;
              std::memcpy(p.data(), got[i].prefix, 16);
              out.append(py::make_tuple(got[i].ns, PrefixBytes(p)));
            }
            return out;
          },
          "The (ns, prefix) of the snapshots whose every target completed since the last call "
          "(vLLM's get_finished); does not wait.")
      .def(
          "cancel", [](HostRead& r) { auxstore_host_read_cancel(r.handle()); },
          "Targets not started end with UnavailableError('cancelled').")
      .def("release", &HostRead::Release,
           "Cancels what has not started, waits for the reads in flight, gives the buffers back.")
      .def(
          "__enter__", [](std::shared_ptr<HostRead> r) { return r; }, "Itself.")
      .def(
          "__exit__", [](HostRead& r, py::args) { r.Release(); }, "Releases it (release).");

  store.def(
      "register_host_buffer",
      [](Store& s, py::handle obj) {
        Buffer b(obj, true, "buffer");
        void* ptr = b.ptr();
        const size_t len = b.len();
        auxstore_host_buffer_t* h = nullptr;
        WithoutGil([&] {
          s.With([&](auxstore_t* db) {
            Check([&](char** e) { return auxstore_register_host_buffer(db, ptr, len, &h, e); });
          });
        });
        return std::make_shared<HostBuffer>(std::move(b), h);
      },
      py::arg("buffer"),
      "Registers a writable host buffer (numpy array, host DLPack tensor, CPU torch tensor) as "
      "a read target: a HostBuffer, which holds the array.");

  store.def(
      "put_from_host",
      [](Store& s, IntArg ns_arg, py::iterable snapshots) {
        const uint64_t ns = ToU64(ns_arg, "ns");
        std::vector<auxstore_host_put_t> puts;
        std::vector<std::vector<auxstore_host_layer_t>> layers;
        std::vector<std::shared_ptr<HostBuffer>> held;
        // Per snapshot: its block chain (empty: none) and block size.
        std::vector<std::vector<Prefix>> chains;
        std::vector<uint32_t> block_sizes;
        for (py::handle item : snapshots) {
          const std::string name = "snapshots[" + std::to_string(puts.size()) + "]";
          const py::tuple t = py::reinterpret_borrow<py::object>(item).cast<py::tuple>();
          if (t.size() != 3 && t.size() != 5) {
            throw py::type_error(name +
                                 " must be (prefix, token_count, [(layer, kind, "
                                 "host_buffer, offset, size), ...][, block_chain, block_size])");
          }
          chains.emplace_back();
          block_sizes.push_back(0);
          if (t.size() == 5) {
            chains.back() = ToPrefixes(t[3], (name + ".block_chain").c_str());
            block_sizes.back() = ToU32(t[4].cast<IntArg>(), "block_size");
          }
          auxstore_host_put_t p{};
          p.ns = ns;
          const Prefix prefix = ToPrefix(t[0], name.c_str());
          std::memcpy(p.prefix, prefix.data(), 16);
          p.token_count = ToU64(t[1].cast<IntArg>(), "token_count");
          std::vector<auxstore_host_layer_t> ls;
          for (py::handle l : t[2].cast<py::iterable>()) {
            const py::tuple lt = py::reinterpret_borrow<py::object>(l).cast<py::tuple>();
            if (lt.size() != 5 || !py::isinstance<HostBuffer>(lt[2])) {
              throw py::type_error(name + ": a layer is (layer, kind, host_buffer, offset, size)");
            }
            auto b = lt[2].cast<std::shared_ptr<HostBuffer>>();
            ls.push_back({ToU32(lt[0].cast<IntArg>(), "layer"), ToKind(lt[1]), b->handle(),
                          static_cast<size_t>(ToU64(lt[3].cast<IntArg>(), "offset")),
                          static_cast<size_t>(ToU64(lt[4].cast<IntArg>(), "size"))});
            held.push_back(std::move(b));
          }
          layers.push_back(std::move(ls));
          puts.push_back(p);
        }
        std::vector<auxstore_put_options_t> options(puts.size());
        std::vector<const auxstore_put_options_t*> option_ptrs(puts.size(), nullptr);
        for (size_t i = 0; i < puts.size(); ++i) {
          puts[i].n_layers = layers[i].size();
          puts[i].layers = layers[i].empty() ? nullptr : layers[i].data();
          if (chains[i].empty() && block_sizes[i] == 0) continue;
          options[i] = {sizeof(auxstore_put_options_t), nullptr,
                        reinterpret_cast<const uint8_t(*)[16]>(chains[i].data()), chains[i].size(),
                        block_sizes[i]};
          option_ptrs[i] = &options[i];
        }
        auxstore_host_read_t* h = nullptr;
        WithoutGil([&] {
          s.With([&](auxstore_t* db) {
            Check([&](char** e) {
              return auxstore_host_put_start_ex(db, puts.empty() ? nullptr : puts.data(),
                                                puts.size(), option_ptrs.data(), &h, e);
            });
          });
        });
        return std::make_shared<HostRead>(h, std::move(held), puts.size(), ns);
      },
      py::arg("ns"), py::arg("snapshots"),
      "Starts putting (prefix, token_count, [(layer, kind, host_buffer, offset, size), ...]"
      "[, block_chain, block_size]) snapshots straight from registered host buffers "
      "(write-behind) and returns a HostRead at once: target i is snapshot i (wait_target(i) "
      "-> its bytes). Every layer is checked first (InvalidArgumentError naming it, nothing "
      "written). With a block chain (as put_snapshot's), QSA and DSA rows go into pages shared "
      "with the chain's other snapshots. Do not change those bytes until the snapshot's put is "
      "done.");

  store.def(
      "read_into_host",
      [](Store& s, IntArg ns_arg, py::iterable targets) {
        const uint64_t ns = ToU64(ns_arg, "ns");
        std::vector<Target> ts;
        for (py::handle item : targets) ts.push_back(ToTarget(item, ts.size(), ns));
        std::vector<auxstore_host_read_target_t> c(ts.size());
        std::vector<std::shared_ptr<HostBuffer>> held;
        for (size_t i = 0; i < ts.size(); ++i) {
          c[i].ns = ts[i].ns;
          std::memcpy(c[i].prefix, ts[i].prefix.data(), 16);
          c[i].layer = ts[i].layer;
          c[i].buffer = ts[i].buffer->handle();
          c[i].offset = ts[i].offset;
          c[i].capacity = ts[i].capacity;
          held.push_back(ts[i].buffer);
        }
        auxstore_host_read_t* h = nullptr;
        WithoutGil([&] {
          s.With([&](auxstore_t* db) {
            Check([&](char** e) {
              return auxstore_host_read_start(db, c.empty() ? nullptr : c.data(), c.size(), &h, e);
            });
          });
        });
        return std::make_shared<HostRead>(h, std::move(held), ts.size(), ns);
      },
      py::arg("ns"), py::arg("targets"),
      "Starts reading (prefix, layer, host_buffer, offset, capacity) targets of namespace ns "
      "(or ([ns,] ...) with a namespace of their own) into registered "
      "host buffers and returns a HostRead at once. Each target is bounds-checked against its "
      "buffer first (InvalidArgumentError naming it, nothing read); each layer is one verified "
      "copy into the buffer; a target's own error never stops the others.");
}

}  // namespace auxpy
