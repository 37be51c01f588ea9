// Store calls that write: register_namespace, put, batch_put, erase, flush.
#include <pybind11/stl.h>

#include <algorithm>
#include <cstring>
#include <optional>

#include "common.h"
#include "store_types.h"

namespace auxpy {

namespace {

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

}  // namespace

void RegisterStoreWrites(StoreClass& store) {
  store.def(
      "register_namespace",
      [](Store& s, const std::string& model_id, std::optional<auxstore_geometry_t> geometry,
         std::optional<std::string> weight_revision, IntArg tp_rank_arg, IntArg tp_world_size_arg,
         py::object opaque_layers, IntArg page_tokens_arg) {
        const uint32_t tp_rank = ToU32(tp_rank_arg, "tp_rank");
        const uint32_t tp_world_size = ToU32(tp_world_size_arg, "tp_world_size");
        const uint32_t page_tokens = ToU32(page_tokens_arg, "page_tokens");
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
      [](Store& s, IntArg ns_arg, py::handle prefix, IntArg token_count_arg, py::handle layers,
         py::handle token_digest, py::handle block_chain, IntArg block_size_arg) {
        const uint64_t ns = ToU64(ns_arg, "ns");
        const uint64_t token_count = ToU64(token_count_arg, "token_count");
        const uint32_t block_size = ToU32(block_size_arg, "block_size");
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
      [](Store& s, IntArg ns_arg, py::handle items) {
        const uint64_t ns = ToU64(ns_arg, "ns");
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
        std::vector<auxstore_snapshot_put_t> puts(all.size());
        for (size_t i = 0; i < all.size(); ++i) {
          puts[i].ns = ns;
          std::copy(all[i].p.begin(), all[i].p.end(), puts[i].prefix);
          puts[i].token_count = all[i].tokens;
          puts[i].n_layers = all[i].layers.c.size();
          puts[i].layers = all[i].layers.c.data();
        }
        std::vector<int> results(all.size(), AUXSTORE_OK);
        int rc = AUXSTORE_OK;
        std::string message;
        {
          py::gil_scoped_release release;
          s.With([&](auxstore_t* db) {
            char* e = nullptr;
            rc = auxstore_put_snapshots(db, puts.data(), puts.size(), results.data(), &e);
            if (e != nullptr) message = e;
            auxstore_free(e);
          });
        }
        std::vector<bool> ok(all.size(), false);
        for (size_t i = 0; i < all.size(); ++i) {
          ok[i] = results[i] == AUXSTORE_OK;
          if (ok[i] || results[i] == AUXSTORE_CAPACITY) continue;
          // The call's message is its first failure's: this one's when no
          // shed snapshot came before it.
          const bool first = std::all_of(results.begin(), results.begin() + i,
                                         [](int r) { return r == AUXSTORE_OK; });
          throw Error(results[i], first && rc == results[i]
                                      ? message
                                      : "auxstore_put_snapshots: snapshots[" + std::to_string(i) +
                                            "]: " + auxstore_code_name(results[i]));
        }
        return ok;
      },
      py::arg("ns"), py::arg("items"),
      "Writes many snapshots [(prefix, token_count, layers), ...] in one GIL-free call "
      "(auxstore_put_snapshots: on a shared pool their pages go in one window): a list of bools, "
      "False where the store shed it (Capacity); any other error raises once every snapshot was "
      "tried.");

  store.def(
      "erase",
      [](Store& s, IntArg ns_arg, py::handle prefix) {
        const uint64_t ns = ToU64(ns_arg, "ns");
        const Prefix p = ToPrefix(prefix);
        py::gil_scoped_release release;
        s.With([&](auxstore_t* db) {
          Check([&](char** e) { return auxstore_erase(db, ns, p.data(), e); });
        });
      },
      py::arg("ns"), py::arg("prefix"),
      "Erases the snapshot (ns, prefix), durably; one not stored is fine (nothing changes).");

  store.def(
      "flush",
      [](Store& s) {
        py::gil_scoped_release release;
        s.With([&](auxstore_t* db) { Check([&](char** e) { return auxstore_flush(db, e); }); });
      },
      "Makes every snapshot accepted so far durable.");
}

}  // namespace auxpy
