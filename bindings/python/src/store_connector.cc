// The connector's batched calls on auxstore.Store (issue 24,
// docs/connectors.md): consecutive-hit counts over prefixes and over a
// block chain's pages, the batched lookup + lease and the batched release,
// and row ranges of a layer.
// Each is one GIL-free call into the C ABI for the whole batch.
#include <pybind11/stl.h>

#include "common.h"
#include "store_types.h"

namespace auxpy {

namespace {

const uint8_t (*PrefixArray(const std::vector<Prefix>& ps))[16] {
  return ps.empty() ? nullptr : reinterpret_cast<const uint8_t(*)[16]>(ps.data());
}

}  // namespace

void RegisterStoreConnector(StoreClass& store) {
  store.def(
      "count_leading_stored",
      [](Store& s, IntArg ns_arg, py::handle prefixes) {
        const uint64_t ns = ToU64(ns_arg, "ns");
        const std::vector<Prefix> ps = ToPrefixes(prefixes);
        size_t count = 0;
        py::gil_scoped_release release;
        s.With([&](auxstore_t* db) {
          Check([&](char** e) {
            return auxstore_count_leading_stored(db, ns, PrefixArray(ps), ps.size(), &count, e);
          });
        });
        return count;
      },
      py::arg("ns"), py::arg("prefixes"),
      "How many LEADING prefixes (pages) are stored: the consecutive-hit count SGLang HiCache's "
      "batch_exists returns. The first is looked up alone and the rest in one batched lookup, "
      "so a first-key miss costs one lookup. Counts no hit, changes no recency.");

  store.def(
      "count_leading_pages",
      [](Store& s, IntArg ns_arg, py::handle block_chain, IntArg block_size_arg) {
        const uint64_t ns = ToU64(ns_arg, "ns");
        const uint32_t block_size = ToU32(block_size_arg, "block_size");
        const std::vector<Prefix> chain = ToPrefixes(block_chain, "block_chain");
        size_t pages = 0;
        uint32_t page_tokens = 0;
        {
          py::gil_scoped_release release;
          s.With([&](auxstore_t* db) {
            Check([&](char** e) {
              return auxstore_count_leading_pages(db, ns, PrefixArray(chain), chain.size(),
                                                  block_size, &pages, &page_tokens, e);
            });
          });
        }
        return py::make_tuple(pages, page_tokens);
      },
      py::arg("ns"), py::arg("block_chain"), py::arg("block_size"),
      "(pages, page_tokens): how many LEADING pages of a block chain (prefix_hash(tokens, "
      "block_size, salt)) the namespace stores, by whichever snapshot's paged put stored "
      "them, and the tokens of a page: rows [0, pages * page_tokens) are stored.");

  store.def(
      "lookup_leased",
      [](Store& s, IntArg ns_arg, py::handle prefixes, IntArg lease_ms_arg) {
        const uint64_t ns = ToU64(ns_arg, "ns");
        const uint64_t lease_ms = ToU64(lease_ms_arg, "lease_ms");
        const std::vector<Prefix> ps = ToPrefixes(prefixes);
        std::vector<uint64_t> leases(ps.size(), 0);
        size_t leading = 0;
        {
          py::gil_scoped_release release;
          s.With([&](auxstore_t* db) {
            Check([&](char** e) {
              return auxstore_lookup_leased(db, ns, PrefixArray(ps), ps.size(), lease_ms,
                                            leases.empty() ? nullptr : leases.data(), &leading, e);
            });
          });
        }
        return py::make_tuple(leading, leases);
      },
      py::arg("ns"), py::arg("prefixes"), py::arg("lease_ms"),
      "(leading, leases): looks up the prefixes and leases each one stored, in one batched "
      "lookup (vLLM's prepare_load). leases[i] is 0 where prefixes[i] is not stored; leading "
      "counts the LEADING ones stored. Release with release_leases.");

  store.def(
      "read_layer_rows",
      [](Store& s, IntArg ns_arg, py::handle prefix, IntArg layer_arg, IntArg first_arg,
         IntArg last_arg, py::handle buffer) {
        const uint64_t ns = ToU64(ns_arg, "ns");
        const uint32_t layer = ToU32(layer_arg, "layer");
        const uint64_t first = ToU64(first_arg, "first_row");
        const uint64_t last = ToU64(last_arg, "last_row");
        const Prefix p = ToPrefix(prefix);
        Buffer b(buffer, true, "buffer");
        size_t size = 0;
        uint64_t rows = 0;
        {
          py::gil_scoped_release release;
          s.With([&](auxstore_t* db) {
            Check([&](char** e) {
              return auxstore_read_layer_rows(db, ns, p.data(), layer, first, last, b.ptr(),
                                              b.len(), &size, &rows, e);
            });
          });
        }
        return py::make_tuple(size, rows);
      },
      py::arg("ns"), py::arg("prefix"), py::arg("layer"), py::arg("first_row"), py::arg("last_row"),
      py::arg("buffer"),
      "(bytes, rows): rows [first_row, last_row) of every array of a QSA or DSA layer (QSA: "
      "raw keys; DSA: k_normed, gate, valid) into the writable buffer, array after array; the "
      "whole layer is read and verified, only those rows are copied. rows: the layer's rows in "
      "all.");

  store.def(
      "release_leases",
      [](Store& s, const std::vector<uint64_t>& leases) {
        size_t released = 0;
        py::gil_scoped_release release;
        s.With([&](auxstore_t* db) {
          Check([&](char** e) {
            return auxstore_lease_release_many(db, leases.empty() ? nullptr : leases.data(),
                                               leases.size(), &released, e);
          });
        });
        return released;
      },
      py::arg("leases"),
      "Releases leases (vLLM's complete_load), skipping 0 and ones already gone; returns how "
      "many it released.");
}

}  // namespace auxpy
