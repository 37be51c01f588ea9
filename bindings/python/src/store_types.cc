// auxstore.Geometry, LayerInfo, Manifest, Match and StoreStats.
#include "store_types.h"

#include <pybind11/stl.h>

#include <algorithm>
#include <cstring>
#include <optional>

#include "common.h"

namespace auxpy {

namespace {

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

void RegisterStoreTypes(py::module_& m) {
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
          py::arg("qsa_eps") = 0.0f, py::arg("dsa_index_head_dim") = 0, py::arg("dsa_capacity") = 0,
          "A geometry; every field defaults to 0 (qsa_hd 0: no QSA layers, dsa_index_head_dim 0: "
          "no DSA layers).")
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
      .def(
          "layer",
          [](const Manifest& mf, uint32_t layer) -> py::object {
            for (const auto& l : mf.layers) {
              if (l.layer == layer) return py::cast(l);
            }
            return py::none();
          },
          py::arg("layer"),
          "The LayerInfo of `layer`, or None when the snapshot has no such layer.");

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
      .def("as_dict", &StatsDict, "The counters as a dict {field: value}.")
      .def("__repr__", [](const auxstore_stats_t& s) {
        return "StoreStats(" + py::repr(StatsDict(s)).cast<std::string>() + ")";
      });
}

}  // namespace auxpy
