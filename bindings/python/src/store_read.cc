// Store calls that read: lookups, manifests, existence, and layers read
// (verified) straight into the caller's buffers.
#include <pybind11/stl.h>

#include <algorithm>
#include <cstring>
#include <optional>

#include "common.h"
#include "store_types.h"

namespace auxpy {

namespace {

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

}  // namespace

void RegisterStoreLookups(StoreClass& store) {
  store.def(
      "longest_prefix",
      [](Store& s, IntArg ns_arg, py::handle candidates, IntArg lease_ms_arg) -> py::object {
        const uint64_t ns = ToU64(ns_arg, "ns");
        const uint64_t lease_ms = ToU64(lease_ms_arg, "lease_ms");
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
      [](Store& s, IntArg ns_arg, py::handle tokens, IntArg block_size_arg, IntArg salt_arg,
         IntArg lease_ms_arg) -> py::object {
        const uint64_t ns = ToU64(ns_arg, "ns");
        const uint32_t block_size = ToU32(block_size_arg, "block_size");
        const uint64_t salt = ToU64(salt_arg, "salt");
        const uint64_t lease_ms = ToU64(lease_ms_arg, "lease_ms");
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
      [](Store& s, IntArg ns_arg, py::handle prefix) {
        const uint64_t ns = ToU64(ns_arg, "ns");
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
      [](Store& s, IntArg ns_arg, py::handle prefixes) {
        const uint64_t ns = ToU64(ns_arg, "ns");
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
      [](Store& s, IntArg ns_arg, py::handle prefixes) {
        const uint64_t ns = ToU64(ns_arg, "ns");
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
      [](Store& s, IntArg ns_arg, py::handle prefix) {
        const uint64_t ns = ToU64(ns_arg, "ns");
        const std::vector<Prefix> ps{ToPrefix(prefix)};
        py::gil_scoped_release release;
        return s.With([&](auxstore_t* db) { return Found(db, ns, ps, nullptr)[0] != 0; });
      },
      py::arg("ns"), py::arg("prefix"),
      "Whether the snapshot (ns, prefix) is stored (counts no hit, changes no recency).");
}

void RegisterStoreReads(StoreClass& store) {
  store.def(
      "get_layer",
      [](Store& s, IntArg ns_arg, py::handle prefix, IntArg layer_arg) {
        const uint64_t ns = ToU64(ns_arg, "ns");
        const uint32_t layer = ToU32(layer_arg, "layer");
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
      [](Store& s, IntArg ns_arg, py::handle prefix, py::handle dests) {
        const uint64_t ns = ToU64(ns_arg, "ns");
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
      [](Store& s, IntArg ns_arg, py::handle prefix, IntArg layer_arg, py::handle buffer) {
        const uint64_t ns = ToU64(ns_arg, "ns");
        const uint32_t layer = ToU32(layer_arg, "layer");
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
      [](Store& s, IntArg ns_arg, py::handle items) {
        const uint64_t ns = ToU64(ns_arg, "ns");
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
}

}  // namespace auxpy
