// auxstore.Store: open/close, namespaces, snapshots, lookups, leases, batched
// and in-place reads, stats; the log hook; prefix hashes.
#include <pybind11/stl.h>

#include <algorithm>
#include <cstring>
#include <optional>

#include "common.h"

namespace auxpy {

namespace {

// Delivers one log record to the Python callable, from any auxstore or
// RocksDB thread: takes the GIL, and never lets an exception escape.
void LogTrampoline(void* arg, int level, const char* source, const char* message) {
  if (arg == nullptr || PythonGone()) return;
  auto* ctx = static_cast<LogContext*>(arg);
  PyGILState_STATE st = PyGILState_Ensure();
  ++t_log_callback;
  PyObject* src =
      PyUnicode_DecodeUTF8(source, static_cast<Py_ssize_t>(std::strlen(source)), "replace");
  PyObject* msg =
      PyUnicode_DecodeUTF8(message, static_cast<Py_ssize_t>(std::strlen(message)), "replace");
  PyObject* r = nullptr;
  if (src != nullptr && msg != nullptr) {
    r = PyObject_CallFunction(ctx->fn.ptr(), "iOO", level, src, msg);
  }
  if (r == nullptr) PyErr_WriteUnraisable(ctx->fn.ptr());  // sys.unraisablehook
  Py_XDECREF(r);
  Py_XDECREF(src);
  Py_XDECREF(msg);
  --t_log_callback;
  PyGILState_Release(st);
}

struct OptionsDeleter {
  void operator()(auxstore_options_t* o) const { auxstore_options_destroy(o); }
};

int ToDurability(py::handle d) {
  if (py::isinstance<py::str>(d)) {
    const std::string s = d.cast<std::string>();
    if (s == "sync") return AUXSTORE_SYNC;
    if (s == "async") return AUXSTORE_ASYNC;
    throw py::value_error("durability '" + s + "' is neither 'sync' nor 'async'");
  }
  return ToInt(d, "durability");
}

// One snapshot's layers, viewed in place: (layer, kind, data) triples or a
// dict {layer: (kind, data)}.
struct Layers {
  std::vector<Buffer> buffers;
  std::vector<auxstore_layer_t> c;
};

Layers ToLayers(py::handle obj, const std::string& what) {
  Layers out;
  std::vector<std::tuple<uint32_t, uint32_t, py::object>> items;
  if (py::isinstance<py::dict>(obj)) {
    for (auto item : py::reinterpret_borrow<py::dict>(obj)) {
      const std::string at = what + "[" + py::repr(item.first).cast<std::string>() + "]";
      auto kd = ToItems(item.second, 2, at + " (kind, data)");
      items.emplace_back(ToU32(item.first, what + " layer"), ToKind(kd[0], at + " kind"), kd[1]);
    }
  } else {
    if (obj.is_none() || py::isinstance<py::str>(obj) || !py::hasattr(obj, "__iter__")) {
      throw py::type_error(what +
                           " must be a list of (layer, kind, data) or a dict {layer: (kind, "
                           "data)}, not " +
                           std::string(Py_TYPE(obj.ptr())->tp_name));
    }
    size_t i = 0;
    for (py::handle item : py::iter(obj)) {
      const std::string at = what + "[" + std::to_string(i++) + "]";
      auto t = ToItems(item, 3, at + " (layer, kind, data)");
      items.emplace_back(ToU32(t[0], at + " layer"), ToKind(t[1], at + " kind"), t[2]);
    }
  }
  out.buffers.reserve(items.size());
  for (size_t i = 0; i < items.size(); ++i) {
    auto& [layer, kind, data] = items[i];
    out.buffers.emplace_back(data, false, what + "[" + std::to_string(i) + "] data");
    out.c.push_back({layer, kind, out.buffers.back().ptr(), out.buffers.back().len()});
  }
  return out;
}

// Destinations of one snapshot's layers: {layer: buffer} or (layer, buffer) pairs.
struct Dests {
  std::vector<Buffer> buffers;
  std::vector<auxstore_layer_dest_t> c;
};

Dests ToDests(py::handle obj, const std::string& what) {
  Dests out;
  auto pairs = ToLayerPairs(obj, what.c_str());
  out.buffers.reserve(pairs.size());
  for (size_t i = 0; i < pairs.size(); ++i) {
    out.buffers.emplace_back(pairs[i].second, true,
                             what + "[" + std::to_string(pairs[i].first) + "]");
    out.c.push_back({pairs[i].first, out.buffers.back().ptr(), out.buffers.back().len(), 0});
  }
  return out;
}

struct Match {
  py::object index;  // into the candidates (longest_prefix) or the block hashes (for tokens)
  py::bytes prefix;
  py::object tokens;  // tokens covered (for tokens), or None
  uint64_t lease = 0;
};

struct Manifest {
  uint64_t token_count = 0;
  std::vector<auxstore_layer_info_t> layers;
};

std::vector<uint8_t> Found(auxstore_t* db, uint64_t ns, const std::vector<Prefix>& ps,
                           std::vector<uint64_t>* counts) {
  std::vector<uint8_t> found(ps.size(), 0);
  if (counts != nullptr) counts->assign(ps.size(), 0);
  Check([&](char** e) {
    return auxstore_get_manifests(db, ns, reinterpret_cast<const uint8_t(*)[16]>(ps.data()),
                                  ps.size(), found.data(),
                                  counts != nullptr ? counts->data() : nullptr, e);
  });
  return found;
}

py::dict StatsDict(const auxstore_stats_t& s) {
  py::dict d;
#define AUXPY_FIELD(f) d[#f] = s.f;
  AUXPY_FIELD(snapshots)
  AUXPY_FIELD(payload_bytes)
  AUXPY_FIELD(hits)
  AUXPY_FIELD(misses)
  AUXPY_FIELD(puts)
  AUXPY_FIELD(duplicate_puts)
  AUXPY_FIELD(evictions)
  AUXPY_FIELD(expirations)
  AUXPY_FIELD(quarantines)
  AUXPY_FIELD(orphans_seen)
  AUXPY_FIELD(orphans_removed)
  AUXPY_FIELD(commit_seq)
  AUXPY_FIELD(durable_watermark)
  AUXPY_FIELD(lost_commits_at_open)
  AUXPY_FIELD(bytes_written)
  AUXPY_FIELD(bytes_read)
  AUXPY_FIELD(capacity_bytes)
  AUXPY_FIELD(leases)
  AUXPY_FIELD(unique_bytes)
#undef AUXPY_FIELD
  d["index_ready"] = s.index_ready != 0;
  d["fenced"] = s.fenced != 0;
  return d;
}

}  // namespace

// ---- Store ------------------------------------------------------------------------

Store::Store(py::object path, uint64_t capacity_bytes, uint64_t ttl_seconds, py::object chunk_bytes,
             py::object durability, bool read_only, bool create_if_missing, py::object log,
             int log_level) {
  ForbidInLogCallback();
  py::object fs = py::module_::import("os").attr("fsdecode")(path);
  path_ = fs.cast<std::string>();
  CheckNoNul(path_, "path");
  read_only_ = read_only;
  std::unique_ptr<auxstore_options_t, OptionsDeleter> o(auxstore_options_create());
  if (!o) throw std::bad_alloc();
  Check([&](char** e) { return auxstore_options_set_capacity_bytes(o.get(), capacity_bytes, e); });
  Check([&](char** e) { return auxstore_options_set_ttl_seconds(o.get(), ttl_seconds, e); });
  if (!chunk_bytes.is_none()) {
    chunk_bytes_ = ToU32(chunk_bytes, "chunk_bytes");
    Check([&](char** e) { return auxstore_options_set_chunk_bytes(o.get(), chunk_bytes_, e); });
  }
  const int d = ToDurability(durability);
  Check([&](char** e) { return auxstore_options_set_durability(o.get(), d, e); });
  Check([&](char** e) { return auxstore_options_set_read_only(o.get(), read_only ? 1 : 0, e); });
  Check([&](char** e) {
    return auxstore_options_set_create_if_missing(o.get(), create_if_missing ? 1 : 0, e);
  });
  if (!log.is_none()) {
    if (!PyCallable_Check(log.ptr())) {
      if (!py::hasattr(log, "log")) {
        throw py::type_error(
            "log must be a callable (level, source, message) or a "
            "logging.Logger");
      }
      log = py::module_::import("auxstore._logsupport").attr("log_to")(log);
    }
    log_ = std::make_unique<LogContext>();
    log_->fn = log;
    Check([&](char** e) {
      return auxstore_options_set_log_callback(o.get(), LogTrampoline, log_.get(), log_level, e);
    });
  }
  auxstore_t* db = nullptr;
  char* err = nullptr;
  int rc;
  {
    py::gil_scoped_release release;  // the open may log (the callback takes the GIL)
    rc = auxstore_open(path_.c_str(), o.get(), &db, &err);
  }
  if (rc != AUXSTORE_OK) {
    std::string m = err != nullptr ? err : auxstore_code_name(rc);
    auxstore_free(err);
    log_.reset();
    throw Error(rc, m);
  }
  db_ = db;
}

Store::~Store() {
  WithoutGil([&] { CloseNoGil(); });
  if (log_) {
    LogContext* l = log_.release();
    if (!WithGil([&] { delete l; })) {
      // The interpreter is gone: the callable is leaked, not decref'd.
    }
  }
}

void Store::CloseNoGil() {
  std::unique_lock lk(mu_);
  deferred_.Wait();
  if (db_ == nullptr) return;
  for (auto& p : pipelines_.Take()) p->CloseNoGil();
  auxstore_close(db_);  // may log: the callback takes the GIL, released here
  db_ = nullptr;
}

void Store::Close() {
  ForbidBlockingInCallback("Store.close");
  {
    py::gil_scoped_release release;
    CloseNoGil();
  }
  log_.reset();
}

bool Store::closed() {
  bool c = false;
  WithoutGil([&] {
    std::shared_lock<std::shared_mutex> lk(mu_, std::defer_lock);
    if (t_done_callback > 0 ? !lk.try_lock() : (lk.lock(), false)) {
      c = true;  // being closed
      return;
    }
    c = db_ == nullptr;
  });
  return c;
}

std::shared_lock<std::shared_mutex> Store::LockOpen() {
  ForbidInLogCallback();
  auto lk = LockShared(mu_, "store");
  if (db_ == nullptr) throw py::value_error("the store is closed");
  return lk;
}

// ---- bindings -----------------------------------------------------------------------

void RegisterStore(py::module_& m) {
  py::class_<auxstore_geometry_t>(m, "Geometry",
                                  "A namespace's geometry (auxstore_geometry_t). qsa_hd 0: no QSA "
                                  "layers; dsa_index_head_dim 0: no DSA layers.")
      .def(
          py::init([](uint32_t qsa_hd, uint32_t qsa_max_tokens, uint32_t qsa_ratio,
                      uint32_t qsa_rot, float qsa_theta, float qsa_eps, uint32_t dsa_index_head_dim,
                      uint32_t dsa_capacity) {
            return auxstore_geometry_t{qsa_hd,    qsa_max_tokens, qsa_ratio,          qsa_rot,
                                       qsa_theta, qsa_eps,        dsa_index_head_dim, dsa_capacity};
          }),
          py::kw_only(), py::arg("qsa_hd") = 0, py::arg("qsa_max_tokens") = 0,
          py::arg("qsa_ratio") = 0, py::arg("qsa_rot") = 0, py::arg("qsa_theta") = 0.0f,
          py::arg("qsa_eps") = 0.0f, py::arg("dsa_index_head_dim") = 0, py::arg("dsa_capacity") = 0)
      .def_readwrite("qsa_hd", &auxstore_geometry_t::qsa_hd)
      .def_readwrite("qsa_max_tokens", &auxstore_geometry_t::qsa_max_tokens)
      .def_readwrite("qsa_ratio", &auxstore_geometry_t::qsa_ratio)
      .def_readwrite("qsa_rot", &auxstore_geometry_t::qsa_rot)
      .def_readwrite("qsa_theta", &auxstore_geometry_t::qsa_theta)
      .def_readwrite("qsa_eps", &auxstore_geometry_t::qsa_eps)
      .def_readwrite("dsa_index_head_dim", &auxstore_geometry_t::dsa_index_head_dim)
      .def_readwrite("dsa_capacity", &auxstore_geometry_t::dsa_capacity)
      .def("__repr__", [](const auxstore_geometry_t& g) {
        return "Geometry(qsa_hd=" + std::to_string(g.qsa_hd) +
               ", qsa_max_tokens=" + std::to_string(g.qsa_max_tokens) +
               ", qsa_ratio=" + std::to_string(g.qsa_ratio) +
               ", qsa_rot=" + std::to_string(g.qsa_rot) +
               ", qsa_theta=" + std::to_string(g.qsa_theta) +
               ", qsa_eps=" + std::to_string(g.qsa_eps) +
               ", dsa_index_head_dim=" + std::to_string(g.dsa_index_head_dim) +
               ", dsa_capacity=" + std::to_string(g.dsa_capacity) + ")";
      });

  py::class_<auxstore_layer_info_t>(m, "LayerInfo",
                                    "One layer of a stored snapshot's manifest; xxh3 is the layer "
                                    "digest (XXH3-64 over the header and each page's and tail's "
                                    "XXH3-64), not a plain XXH3 of the blob.")
      .def_readonly("layer", &auxstore_layer_info_t::layer)
      .def_readonly("kind", &auxstore_layer_info_t::kind)
      .def_readonly("bytes", &auxstore_layer_info_t::bytes)
      .def_readonly("xxh3", &auxstore_layer_info_t::xxh3)
      .def("__repr__", [](const auxstore_layer_info_t& l) {
        return "LayerInfo(layer=" + std::to_string(l.layer) + ", kind=" + std::to_string(l.kind) +
               ", bytes=" + std::to_string(l.bytes) + ")";
      });

  py::class_<Manifest>(m, "Manifest", "A stored snapshot's manifest.")
      .def_readonly("token_count", &Manifest::token_count)
      .def_readonly("layers", &Manifest::layers)
      .def("layer", [](const Manifest& mf, uint32_t layer) -> py::object {
        for (const auto& l : mf.layers) {
          if (l.layer == layer) return py::cast(l);
        }
        return py::none();
      });

  py::class_<Match>(m, "Match",
                    "A lookup's hit: `index` (into the candidates, or into the token "
                    "sequence's block hashes), `prefix` (16 bytes), `tokens` (the tokens it "
                    "covers, for token lookups; else None), `lease` (0: none).")
      .def_readonly("index", &Match::index)
      .def_readonly("prefix", &Match::prefix)
      .def_readonly("tokens", &Match::tokens)
      .def_readonly("lease", &Match::lease)
      .def("__repr__", [](const Match& x) {
        return "Match(index=" + py::repr(x.index).cast<std::string>() +
               ", tokens=" + py::repr(x.tokens).cast<std::string>() +
               ", lease=" + std::to_string(x.lease) + ")";
      });

  py::class_<auxstore_stats_t>(m, "StoreStats", "auxstore_stats_t: the store's counters.")
      .def_readonly("snapshots", &auxstore_stats_t::snapshots)
      .def_readonly("payload_bytes", &auxstore_stats_t::payload_bytes)
      .def_readonly("hits", &auxstore_stats_t::hits)
      .def_readonly("misses", &auxstore_stats_t::misses)
      .def_readonly("puts", &auxstore_stats_t::puts)
      .def_readonly("duplicate_puts", &auxstore_stats_t::duplicate_puts)
      .def_readonly("evictions", &auxstore_stats_t::evictions)
      .def_readonly("expirations", &auxstore_stats_t::expirations)
      .def_readonly("quarantines", &auxstore_stats_t::quarantines)
      .def_readonly("orphans_seen", &auxstore_stats_t::orphans_seen)
      .def_readonly("orphans_removed", &auxstore_stats_t::orphans_removed)
      .def_readonly("commit_seq", &auxstore_stats_t::commit_seq)
      .def_readonly("durable_watermark", &auxstore_stats_t::durable_watermark)
      .def_readonly("lost_commits_at_open", &auxstore_stats_t::lost_commits_at_open)
      .def_readonly("bytes_written", &auxstore_stats_t::bytes_written)
      .def_readonly("bytes_read", &auxstore_stats_t::bytes_read)
      .def_readonly("capacity_bytes", &auxstore_stats_t::capacity_bytes)
      .def_readonly("leases", &auxstore_stats_t::leases)
      .def_readonly("unique_bytes", &auxstore_stats_t::unique_bytes,
                    "The bytes stored for the snapshots, each shared page once (what "
                    "capacity_bytes budgets); payload_bytes counts every snapshot in full.")
      .def_property_readonly("index_ready",
                             [](const auxstore_stats_t& s) { return s.index_ready != 0; })
      .def_property_readonly("fenced", [](const auxstore_stats_t& s) { return s.fenced != 0; })
      .def("as_dict", &StatsDict)
      .def("__repr__", [](const auxstore_stats_t& s) {
        return "StoreStats(" + py::repr(StatsDict(s)).cast<std::string>() + ")";
      });

  py::class_<Store, std::shared_ptr<Store>> store(
      m, "Store",
      "An open auxstore store (auxstore_open). A context manager: close() on exit. Every call "
      "releases the GIL; any number of threads may use one Store at once.");
  store
      .def(py::init<py::object, uint64_t, uint64_t, py::object, py::object, bool, bool, py::object,
                    int>(),
           py::arg("path"), py::kw_only(), py::arg("capacity_bytes") = 0,
           py::arg("ttl_seconds") = 0, py::arg("chunk_bytes") = py::none(),
           py::arg("durability") = "sync", py::arg("read_only") = false,
           py::arg("create_if_missing") = true, py::arg("log") = py::none(),
           py::arg("log_level") = static_cast<int>(AUXSTORE_LOG_WARN),
           "Opens (creating when allowed) the store at `path`. `log`: a callable "
           "(level, source, message) or a logging.Logger receiving auxstore's and RocksDB's "
           "log records at `log_level` and above, from any thread.")
      .def("close", &Store::Close, "Closes the store (its pipelines first). Idempotent.")
      .def_property_readonly("closed", &Store::closed)
      .def_property_readonly("path", &Store::path)
      .def_property_readonly("chunk_bytes", &Store::chunk_bytes)
      .def_property_readonly("read_only", &Store::read_only)
      .def("__enter__", [](std::shared_ptr<Store> s) { return s; })
      .def("__exit__", [](Store& s, py::args) { s.Close(); })
      .def("__repr__", [](Store& s) {
        return "<auxstore.Store " + py::repr(py::str(s.path())).cast<std::string>() +
               (s.closed() ? " closed>" : ">");
      });

  store.def(
      "register_namespace",
      [](Store& s, const std::string& model_id, std::optional<auxstore_geometry_t> geometry,
         std::optional<std::string> weight_revision, uint32_t tp_rank, uint32_t tp_world_size,
         py::object opaque_layers, uint32_t page_tokens) {
        CheckNoNul(model_id, "model_id");
        if (weight_revision) CheckNoNul(*weight_revision, "weight_revision");
        std::vector<auxstore_opaque_layer_desc_t> descs;
        if (!opaque_layers.is_none()) {
          size_t n = 0;
          for (py::handle item : py::iter(opaque_layers)) {
            const std::string at = "opaque_layers[" + std::to_string(n++) + "]";
            auxstore_opaque_layer_desc_t d{};
            py::object layer, dtype, shape;
            if (py::hasattr(item, "layer") && py::hasattr(item, "dtype")) {
              layer = item.attr("layer");
              dtype = item.attr("dtype");
              shape = item.attr("shape");
            } else {
              auto t = ToItems(item, 3, at + " (layer, dtype, shape)");
              layer = t[0];
              dtype = t[1];
              shape = t[2];
            }
            d.layer = ToU32(layer, at + " layer");
            d.dtype = ToDType(dtype);
            std::vector<uint64_t> dims;
            if (PyIndex_Check(shape.ptr())) {
              dims.push_back(ToU64(shape, at + " shape"));
            } else if (!shape.is_none() && py::hasattr(shape, "__iter__")) {
              size_t k = 0;
              for (py::handle x : py::iter(shape)) {
                dims.push_back(ToU64(x, at + " shape[" + std::to_string(k++) + "]"));
              }
            } else {
              throw py::type_error(at + " shape must be a tuple of ints, not " +
                                   std::string(Py_TYPE(shape.ptr())->tp_name));
            }
            // ndim outside 1..8 goes to auxstore as it is, which refuses it.
            d.ndim = static_cast<uint32_t>(dims.size());
            for (size_t i = 0; i < dims.size() && i < 8; ++i) d.shape[i] = dims[i];
            if (dims.size() > 8) d.ndim = static_cast<uint32_t>(dims.size());
            descs.push_back(d);
          }
        }
        auxstore_namespace_t ns{};
        ns.struct_size = sizeof ns;
        ns.model_id = model_id.c_str();
        ns.weight_revision = weight_revision ? weight_revision->c_str() : nullptr;
        ns.tp_rank = tp_rank;
        ns.tp_world_size = tp_world_size;
        ns.geometry = geometry.value_or(auxstore_geometry_t{});
        ns.n_opaque_layers = descs.size();
        ns.opaque_layers = descs.empty() ? nullptr : descs.data();
        ns.page_tokens = page_tokens;
        uint64_t id = 0;
        py::gil_scoped_release release;
        s.With([&](auxstore_t* db) {
          Check([&](char** e) { return auxstore_register_namespace_ex(db, &ns, &id, e); });
        });
        return id;
      },
      py::arg("model_id"), py::arg("geometry") = py::none(), py::kw_only(),
      py::arg("weight_revision") = py::none(), py::arg("tp_rank") = 0, py::arg("tp_world_size") = 1,
      py::arg("opaque_layers") = py::none(), py::arg("page_tokens") = 0,
      "Registers (idempotently) a namespace: model id, weight revision, TP rank / world size, "
      "geometry, the declared opaque layers [(layer, dtype, shape), ...] and page_tokens (rows "
      "per stored page of QSA/DSA layers, a multiple of the chained puts' block_size; 0: each "
      "put's block_size). Every one is part of the id. Returns it.");

  store.def(
      "put",
      [](Store& s, uint64_t ns, py::handle prefix, uint64_t token_count, py::handle layers,
         py::handle token_digest, py::handle block_chain, uint32_t block_size) {
        const Prefix p = ToPrefix(prefix);
        Layers ls = ToLayers(layers, "layers");
        std::optional<Prefix> digest;
        if (!token_digest.is_none()) digest = ToPrefix(token_digest, "token_digest");
        std::vector<Prefix> chain;
        if (!block_chain.is_none()) chain = ToPrefixes(block_chain, "block_chain");
        auxstore_put_options_t o{};
        o.struct_size = sizeof o;
        o.token_digest = digest ? digest->data() : nullptr;
        o.block_chain =
            chain.empty() ? nullptr : reinterpret_cast<const uint8_t(*)[16]>(chain.data());
        o.n_blocks = chain.size();
        o.block_size = block_size;
        py::gil_scoped_release release;
        s.With([&](auxstore_t* db) {
          Check([&](char** e) {
            return auxstore_put_snapshot_ex(db, ns, p.data(), token_count, ls.c.size(), ls.c.data(),
                                            &o, e);
          });
        });
      },
      py::arg("ns"), py::arg("prefix"), py::arg("token_count"), py::arg("layers"), py::kw_only(),
      py::arg("token_digest") = py::none(), py::arg("block_chain") = py::none(),
      py::arg("block_size") = 0,
      "Writes a snapshot synchronously. `layers`: [(layer, kind, data), ...] or "
      "{layer: (kind, data)}; each data any C-contiguous buffer, read in place (no copy). "
      "`token_digest`: token_digest() of the tokens the prefix covers (longest_prefix_for_tokens "
      "checks it). `block_chain` (with `block_size`): the chained hashes of the snapshot's "
      "tokens, one per complete block (prefix_hash(tokens, block_size, salt), a list of 16-byte "
      "prefixes or an (n, 16) uint8 array; at most token_count // block_size): QSA and DSA rows "
      "are then stored in pages shared with every snapshot of the namespace along that chain, "
      "only pages not stored yet written. A bad chain raises InvalidArgumentError, nothing "
      "written.");

  store.def(
      "batch_put",
      [](Store& s, uint64_t ns, py::handle items) {
        struct Item {
          Prefix p;
          uint64_t tokens;
          Layers layers;
        };
        std::vector<Item> all;
        size_t n = 0;
        for (py::handle it : py::iter(items)) {
          const std::string at = "items[" + std::to_string(n++) + "]";
          auto t = ToItems(it, 3, at + " (prefix, token_count, layers)");
          all.push_back({ToPrefix(t[0], (at + " prefix").c_str()), ToU64(t[1], at + " token_count"),
                         ToLayers(t[2], at + " layers")});
        }
        std::vector<bool> ok(all.size(), false);
        {
          py::gil_scoped_release release;
          s.With([&](auxstore_t* db) {
            for (size_t i = 0; i < all.size(); ++i) {
              Item& x = all[i];
              ok[i] = CheckAllowing(AUXSTORE_CAPACITY, [&](char** e) {
                        return auxstore_put_snapshot(db, ns, x.p.data(), x.tokens,
                                                     x.layers.c.size(), x.layers.c.data(), e);
                      }) == AUXSTORE_OK;
            }
          });
        }
        return ok;
      },
      py::arg("ns"), py::arg("items"),
      "Writes many snapshots [(prefix, token_count, layers), ...] in one GIL-free call: a list "
      "of bools, False where the store shed it (Capacity); any other error raises.");

  store.def(
      "longest_prefix",
      [](Store& s, uint64_t ns, py::handle candidates, uint64_t lease_ms) -> py::object {
        const std::vector<Prefix> c = ToPrefixes(candidates, "candidates");
        size_t index = 0;
        uint64_t lease = 0;
        int rc;
        {
          py::gil_scoped_release release;
          rc = s.With([&](auxstore_t* db) {
            const auto* cand = reinterpret_cast<const uint8_t(*)[16]>(c.data());
            return CheckAllowing(AUXSTORE_NOT_FOUND, [&](char** e) {
              return lease_ms > 0 ? auxstore_longest_prefix_leased(db, ns, cand, c.size(), lease_ms,
                                                                   &index, &lease, e)
                                  : auxstore_longest_prefix(db, ns, cand, c.size(), &index, e);
            });
          });
        }
        if (rc == AUXSTORE_NOT_FOUND) return py::none();
        Match mt{py::int_(index), PrefixBytes(c[index]), py::none(), lease};
        return py::cast(std::move(mt));
      },
      py::arg("ns"), py::arg("candidates"), py::kw_only(), py::arg("lease_ms") = 0,
      "The longest stored prefix among candidates ordered shortest to longest: a Match, or "
      "None when none is stored. lease_ms > 0 also leases it (Match.lease).");

  store.def(
      "longest_prefix_for_tokens",
      [](Store& s, uint64_t ns, py::handle tokens, uint32_t block_size, uint64_t salt,
         uint64_t lease_ms) -> py::object {
        const std::vector<uint32_t> t = ToTokens(tokens);
        Prefix p{};
        uint64_t covered = 0, lease = 0;
        int rc;
        {
          py::gil_scoped_release release;
          rc = s.With([&](auxstore_t* db) {
            return CheckAllowing(AUXSTORE_NOT_FOUND, [&](char** e) {
              return lease_ms > 0
                         ? auxstore_longest_prefix_for_tokens_leased(db, ns, t.data(), t.size(),
                                                                     block_size, salt, lease_ms,
                                                                     p.data(), &covered, &lease, e)
                         : auxstore_longest_prefix_for_tokens(
                               db, ns, t.data(), t.size(), block_size, salt, p.data(), &covered, e);
            });
          });
        }
        if (rc == AUXSTORE_NOT_FOUND) return py::none();
        Match mt{py::int_(block_size ? covered / block_size - 1 : 0), PrefixBytes(p),
                 py::int_(covered), lease};
        return py::cast(std::move(mt));
      },
      py::arg("ns"), py::arg("tokens"), py::arg("block_size"), py::arg("salt") = 0, py::kw_only(),
      py::arg("lease_ms") = 0,
      "The longest stored prefix of `tokens` at a block boundary (token digest checked): a "
      "Match (prefix, tokens covered, lease) or None.");

  store.def(
      "get_manifest",
      [](Store& s, uint64_t ns, py::handle prefix) {
        const Prefix p = ToPrefix(prefix);
        Manifest mf;
        py::gil_scoped_release release;
        s.With([&](auxstore_t* db) {
          mf.layers.resize(16);
          for (;;) {
            size_t n = 0;
            const int rc = CheckAllowing(AUXSTORE_OUT_OF_RANGE, [&](char** e) {
              return auxstore_get_manifest(db, ns, p.data(), &mf.token_count, mf.layers.data(),
                                           mf.layers.size(), &n, e);
            });
            if (rc == AUXSTORE_OK) {
              mf.layers.resize(n);
              return;
            }
            mf.layers.resize(n);  // sized by the call: try again
          }
        });
        return mf;
      },
      py::arg("ns"), py::arg("prefix"), "A stored snapshot's manifest (NotFoundError if none).");

  store.def(
      "get_manifests",
      [](Store& s, uint64_t ns, py::handle prefixes) {
        const std::vector<Prefix> ps = ToPrefixes(prefixes);
        std::vector<uint64_t> counts;
        std::vector<uint8_t> found;
        {
          py::gil_scoped_release release;
          found = s.With([&](auxstore_t* db) { return Found(db, ns, ps, &counts); });
        }
        py::list out;
        for (size_t i = 0; i < ps.size(); ++i) {
          out.append(found[i] ? py::object(py::int_(counts[i])) : py::object(py::none()));
        }
        return out;
      },
      py::arg("ns"), py::arg("prefixes"),
      "One batched lookup (auxstore_get_manifests): per prefix its token count, or None when "
      "not stored. Counts no hit, changes no recency.");

  store.def(
      "exists_many",
      [](Store& s, uint64_t ns, py::handle prefixes) {
        const std::vector<Prefix> ps = ToPrefixes(prefixes);
        std::vector<uint8_t> found;
        {
          py::gil_scoped_release release;
          found = s.With([&](auxstore_t* db) { return Found(db, ns, ps, nullptr); });
        }
        std::vector<bool> out(found.begin(), found.end());
        return out;
      },
      py::arg("ns"), py::arg("prefixes"), "Which prefixes are stored (one batched lookup).");

  store.def(
      "exists",
      [](Store& s, uint64_t ns, py::handle prefix) {
        const std::vector<Prefix> ps{ToPrefix(prefix)};
        py::gil_scoped_release release;
        return s.With([&](auxstore_t* db) { return Found(db, ns, ps, nullptr)[0] != 0; });
      },
      py::arg("ns"), py::arg("prefix"));

  store.def(
      "count_leading_stored",
      [](Store& s, uint64_t ns, py::handle prefixes) {
        const std::vector<Prefix> ps = ToPrefixes(prefixes);
        py::gil_scoped_release release;
        const std::vector<uint8_t> found =
            s.With([&](auxstore_t* db) { return Found(db, ns, ps, nullptr); });
        return static_cast<size_t>(std::find(found.begin(), found.end(), 0) - found.begin());
      },
      py::arg("ns"), py::arg("prefixes"),
      "How many LEADING prefixes (pages) are stored, in one batched lookup: what SGLang "
      "HiCache's batch_exists and vLLM's OffloadingManager.lookup return.");

  store.def(
      "get_layer",
      [](Store& s, uint64_t ns, py::handle prefix, uint32_t layer) {
        const Prefix p = ToPrefix(prefix);
        void* data = nullptr;
        size_t size = 0;
        {
          py::gil_scoped_release release;
          s.With([&](auxstore_t* db) {
            Check([&](char** e) {
              return auxstore_get_layer(db, ns, p.data(), layer, &data, &size, e);
            });
          });
        }
        return OwnedView(data, size);
      },
      py::arg("ns"), py::arg("prefix"), py::arg("layer"),
      "One whole layer, verified, as a memoryview over the bytes auxstore returned (no copy).");

  store.def(
      "read_layers_into",
      [](Store& s, uint64_t ns, py::handle prefix, py::handle dests) {
        const Prefix p = ToPrefix(prefix);
        Dests d = ToDests(dests, "dests");
        {
          py::gil_scoped_release release;
          s.With([&](auxstore_t* db) {
            Check([&](char** e) {
              return auxstore_read_layers(db, ns, p.data(), d.c.data(), d.c.size(), e);
            });
          });
        }
        py::dict sizes;
        for (const auto& x : d.c) sizes[py::int_(x.layer)] = x.size;
        return sizes;
      },
      py::arg("ns"), py::arg("prefix"), py::arg("dests"),
      "Reads layers straight into the caller's writable buffers ({layer: buffer} or "
      "[(layer, buffer), ...]): each chunk copied once while verified, no intermediate "
      "allocation. Returns {layer: size}. OutOfRangeError (nothing read) when one is too small.");

  store.def(
      "read_layer_into",
      [](Store& s, uint64_t ns, py::handle prefix, uint32_t layer, py::handle buffer) {
        const Prefix p = ToPrefix(prefix);
        Buffer b(buffer, true, "buffer");
        auxstore_layer_dest_t d{layer, b.ptr(), b.len(), 0};
        py::gil_scoped_release release;
        s.With([&](auxstore_t* db) {
          Check([&](char** e) { return auxstore_read_layers(db, ns, p.data(), &d, 1, e); });
        });
        return d.size;
      },
      py::arg("ns"), py::arg("prefix"), py::arg("layer"), py::arg("buffer"),
      "One layer into the caller's buffer; returns its size.");

  store.def(
      "batch_read_into",
      [](Store& s, uint64_t ns, py::handle items) {
        std::vector<std::pair<Prefix, Dests>> all;
        size_t n = 0;
        for (py::handle it : py::iter(items)) {
          const std::string at = "items[" + std::to_string(n++) + "]";
          auto t = ToItems(it, 2, at + " (prefix, dests)");
          all.emplace_back(ToPrefix(t[0], (at + " prefix").c_str()), ToDests(t[1], at + " dests"));
        }
        std::vector<bool> ok(all.size(), false);
        {
          py::gil_scoped_release release;
          s.With([&](auxstore_t* db) {
            for (size_t i = 0; i < all.size(); ++i) {
              auto& [p, d] = all[i];
              char* err = nullptr;
              const int rc = auxstore_read_layers(db, ns, p.data(), d.c.data(), d.c.size(), &err);
              std::string msg = err != nullptr ? err : "";
              auxstore_free(err);
              if (rc == AUXSTORE_OK) {
                ok[i] = true;
              } else if (rc != AUXSTORE_NOT_FOUND && rc != AUXSTORE_CORRUPTION) {
                throw Error(rc, msg);
              }
            }
          });
        }
        return ok;
      },
      py::arg("ns"), py::arg("items"),
      "Many snapshots' layers into caller buffers [(prefix, dests), ...] in one GIL-free call: "
      "a list of bools, False for a snapshot not stored (or found corrupt, and quarantined); "
      "a too-small buffer or a bad argument raises.");

  store.def(
      "erase",
      [](Store& s, uint64_t ns, py::handle prefix) {
        const Prefix p = ToPrefix(prefix);
        py::gil_scoped_release release;
        s.With([&](auxstore_t* db) {
          Check([&](char** e) { return auxstore_erase(db, ns, p.data(), e); });
        });
      },
      py::arg("ns"), py::arg("prefix"));

  store.def(
      "flush",
      [](Store& s) {
        py::gil_scoped_release release;
        s.With([&](auxstore_t* db) { Check([&](char** e) { return auxstore_flush(db, e); }); });
      },
      "Makes every snapshot accepted so far durable.");

  store.def("stats", [](Store& s) {
    auxstore_stats_t st{};
    py::gil_scoped_release release;
    s.With([&](auxstore_t* db) { Check([&](char** e) { return auxstore_stats(db, &st, e); }); });
    return st;
  });

  store.def(
      "lease_acquire",
      [](Store& s, uint64_t ns, py::handle prefix, uint64_t lease_ms) {
        const Prefix p = ToPrefix(prefix);
        uint64_t lease = 0;
        py::gil_scoped_release release;
        s.With([&](auxstore_t* db) {
          Check([&](char** e) {
            return auxstore_lease_acquire(db, ns, p.data(), lease_ms, &lease, e);
          });
        });
        return lease;
      },
      py::arg("ns"), py::arg("prefix"), py::arg("lease_ms"),
      "Pins a snapshot against eviction and expiry for up to lease_ms; returns the lease id.");

  store.def(
      "lease_release",
      [](Store& s, uint64_t lease) {
        py::gil_scoped_release release;
        s.With([&](auxstore_t* db) {
          Check([&](char** e) { return auxstore_lease_release(db, lease, e); });
        });
      },
      py::arg("lease"), "Releases a lease (NotFoundError when unknown, expired or released).");

  store.def(
      "acquire_leases",
      [](Store& s, uint64_t ns, py::handle prefixes, uint64_t lease_ms) {
        const std::vector<Prefix> ps = ToPrefixes(prefixes);
        std::vector<uint64_t> leases;
        py::gil_scoped_release release;
        s.With([&](auxstore_t* db) {
          try {
            for (const Prefix& p : ps) {
              uint64_t l = 0;
              Check([&](char** e) {
                return auxstore_lease_acquire(db, ns, p.data(), lease_ms, &l, e);
              });
              leases.push_back(l);
            }
          } catch (...) {
            for (uint64_t l : leases) (void)auxstore_lease_release(db, l, nullptr);
            throw;
          }
        });
        return leases;
      },
      py::arg("ns"), py::arg("prefixes"), py::arg("lease_ms"),
      "Leases every prefix (vLLM's prepare_load): all or none (on an error the ones taken are "
      "released and it raises).");

  store.def(
      "release_leases",
      [](Store& s, const std::vector<uint64_t>& leases) {
        size_t released = 0;
        py::gil_scoped_release release;
        s.With([&](auxstore_t* db) {
          for (uint64_t l : leases) {
            if (l == 0) continue;
            released += CheckAllowing(AUXSTORE_NOT_FOUND, [&](char** e) {
                          return auxstore_lease_release(db, l, e);
                        }) == AUXSTORE_OK;
          }
        });
        return released;
      },
      py::arg("leases"),
      "Releases leases (vLLM's complete_load), ignoring ones already gone; returns how many "
      "it released.");

  // ---- free functions ----------------------------------------------------------------
  m.def(
      "code_name", [](int c) { return std::string(auxstore_code_name(c)); }, py::arg("code"),
      "\"OK\", \"NotFound\", ...; \"Unknown\" for other values.");

  m.def(
      "prefix_hash",
      [](py::handle tokens, uint32_t block_size, uint64_t salt) {
        const std::vector<uint32_t> t = ToTokens(tokens);
        std::vector<Prefix> out(block_size ? t.size() / block_size : 0);
        size_t n = 0;
        {
          py::gil_scoped_release release;
          Check([&](char** e) {
            return auxstore_prefix_hash(t.data(), t.size(), block_size, salt,
                                        reinterpret_cast<uint8_t(*)[16]>(out.data()), out.size(),
                                        &n, e);
          });
        }
        py::list l;
        for (size_t i = 0; i < n; ++i) l.append(PrefixBytes(out[i]));
        return l;
      },
      py::arg("tokens"), py::arg("block_size"), py::arg("salt") = 0,
      "Chained block hashes of tokens, one 16-byte prefix per complete block, shortest first.");

  m.def(
      "token_digest",
      [](py::handle tokens, uint64_t salt) {
        const std::vector<uint32_t> t = ToTokens(tokens);
        Prefix out{};
        Check([&](char** e) {
          return auxstore_token_digest(t.data(), t.size(), salt, out.data(), e);
        });
        return PrefixBytes(out);
      },
      py::arg("tokens"), py::arg("salt") = 0, "Digest of the exact token sequence (16 bytes).");

  m.def(
      "qsa_block_pool_host",
      [](const auxstore_geometry_t& g, py::handle raw_keys, uint64_t ingested, py::handle k_pool_k,
         py::handle k_norm_w, uint32_t n_blocks, py::object out) {
        Buffer raw(raw_keys, false, "raw_keys"), q(k_pool_k, false, "k_pool_k"),
            w(k_norm_w, false, "k_norm_w");
        const size_t need = size_t{n_blocks} * g.qsa_hd * 2;
        if (raw.len() < ingested * g.qsa_hd * 2) {
          throw py::value_error("raw_keys holds fewer than ingested * qsa_hd bf16 values");
        }
        if (q.len() < size_t{g.qsa_hd} * 2 || w.len() < size_t{g.qsa_hd} * 2) {
          throw py::value_error("k_pool_k and k_norm_w must hold qsa_hd bf16 values each");
        }
        if (out.is_none()) out = py::bytearray(std::string(need, '\0'));
        Buffer o(out, true, "out");
        if (o.len() < need) throw py::value_error("out holds fewer than n_blocks * qsa_hd bf16");
        {
          py::gil_scoped_release release;
          Check([&](char** e) {
            return auxstore_qsa_block_pool_host(&g, raw.ptr(), ingested, q.ptr(), w.ptr(), n_blocks,
                                                o.ptr(), e);
          });
        }
        return out;
      },
      py::arg("geometry"), py::arg("raw_keys"), py::arg("ingested"), py::arg("k_pool_k"),
      py::arg("k_norm_w"), py::arg("n_blocks"), py::arg("out") = py::none(),
      "The CPU reference of the QSA re-pool: n_blocks * qsa_hd bf16 block keys into `out` (a "
      "new bytearray when None).");
}

}  // namespace auxpy
