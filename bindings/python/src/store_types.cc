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
          py::init([](IntArg qsa_hd_arg, IntArg qsa_max_tokens_arg, IntArg qsa_ratio_arg,
                      IntArg qsa_rot_arg, float qsa_theta, float qsa_eps,
                      IntArg dsa_index_head_dim_arg, IntArg dsa_capacity_arg) {
            const uint32_t qsa_hd = ToU32(qsa_hd_arg, "qsa_hd");
            const uint32_t qsa_max_tokens = ToU32(qsa_max_tokens_arg, "qsa_max_tokens");
            const uint32_t qsa_ratio = ToU32(qsa_ratio_arg, "qsa_ratio");
            const uint32_t qsa_rot = ToU32(qsa_rot_arg, "qsa_rot");
            const uint32_t dsa_index_head_dim = ToU32(dsa_index_head_dim_arg, "dsa_index_head_dim");
            const uint32_t dsa_capacity = ToU32(dsa_capacity_arg, "dsa_capacity");
            return auxstore_geometry_t{qsa_hd,    qsa_max_tokens, qsa_ratio,          qsa_rot,
                                       qsa_theta, qsa_eps,        dsa_index_head_dim, dsa_capacity};
          }),
          py::kw_only(), py::arg("qsa_hd") = 0, py::arg("qsa_max_tokens") = 0,
          py::arg("qsa_ratio") = 0, py::arg("qsa_rot") = 0, py::arg("qsa_theta") = 0.0f,
          py::arg("qsa_eps") = 0.0f, py::arg("dsa_index_head_dim") = 0, py::arg("dsa_capacity") = 0,
          "A geometry; every field defaults to 0 (qsa_hd 0: no QSA layers, dsa_index_head_dim 0: "
          "no DSA layers).")
      .def_readwrite("qsa_hd", &auxstore_geometry_t::qsa_hd,
                     "QSA head dim (0: the namespace has no QSA layers).")
      .def_readwrite("qsa_max_tokens", &auxstore_geometry_t::qsa_max_tokens,
                     "QSA: the most tokens a state holds.")
      .def_readwrite("qsa_ratio", &auxstore_geometry_t::qsa_ratio,
                     "QSA: tokens pooled into one block key.")
      .def_readwrite("qsa_rot", &auxstore_geometry_t::qsa_rot, "QSA: rotary dims.")
      .def_readwrite("qsa_theta", &auxstore_geometry_t::qsa_theta, "QSA: rotary base.")
      .def_readwrite("qsa_eps", &auxstore_geometry_t::qsa_eps, "QSA: the norm's epsilon.")
      .def_readwrite("dsa_index_head_dim", &auxstore_geometry_t::dsa_index_head_dim,
                     "DSA index head dim (0: the namespace has no DSA layers).")
      .def_readwrite("dsa_capacity", &auxstore_geometry_t::dsa_capacity,
                     "DSA: the most rows a state holds.")
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
      .def_readonly("layer", &auxstore_layer_info_t::layer, "The layer index.")
      .def_readonly("kind", &auxstore_layer_info_t::kind, "KIND_QSA, KIND_DSA or KIND_OPAQUE.")
      .def_readonly("bytes", &auxstore_layer_info_t::bytes, "The layer's blob size in bytes.")
      .def_readonly("xxh3", &auxstore_layer_info_t::xxh3, "The layer digest (see the class).")
      .def("__repr__", [](const auxstore_layer_info_t& l) {
        return "LayerInfo(layer=" + std::to_string(l.layer) + ", kind=" + std::to_string(l.kind) +
               ", bytes=" + std::to_string(l.bytes) + ")";
      });

  py::class_<Manifest>(m, "Manifest", "A stored snapshot's manifest.")
      .def_readonly("token_count", &Manifest::token_count, "Tokens the snapshot covers.")
      .def_readonly("layers", &Manifest::layers, "Its layers (LayerInfo), ascending.")
      .def(
          "layer",
          [](const Manifest& mf, IntArg layer_arg) -> py::object {
            const uint32_t layer = ToU32(layer_arg, "layer");
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
      .def_readonly("index", &Match::index,
                    "Into the candidates (longest_prefix) or the token sequence's block hashes.")
      .def_readonly("prefix", &Match::prefix, "The stored prefix (16 bytes).")
      .def_readonly("tokens", &Match::tokens, "Tokens covered (token lookups), else None.")
      .def_readonly("lease", &Match::lease, "The lease taken with the lookup (0: none).")
      .def("__repr__", [](const Match& x) {
        return "Match(index=" + py::repr(x.index).cast<std::string>() +
               ", tokens=" + py::repr(x.tokens).cast<std::string>() +
               ", lease=" + std::to_string(x.lease) + ")";
      });

  py::class_<auxstore_stats_t>(m, "StoreStats", "auxstore_stats_t: the store's counters.")
      .def_readonly("snapshots", &auxstore_stats_t::snapshots, "Visible snapshots.")
      .def_readonly("payload_bytes", &auxstore_stats_t::payload_bytes,
                    "Layer bytes of the visible snapshots, each in full.")
      .def_readonly("hits", &auxstore_stats_t::hits, "Lookups that found a snapshot (this handle).")
      .def_readonly("misses", &auxstore_stats_t::misses, "Lookups that found none (this handle).")
      .def_readonly("puts", &auxstore_stats_t::puts, "Snapshots this handle wrote.")
      .def_readonly("duplicate_puts", &auxstore_stats_t::duplicate_puts,
                    "Puts of a prefix already stored (no-ops).")
      .def_readonly("evictions", &auxstore_stats_t::evictions,
                    "Snapshots evicted for the byte budget.")
      .def_readonly("expirations", &auxstore_stats_t::expirations,
                    "Snapshots expired by their TTL.")
      .def_readonly("quarantines", &auxstore_stats_t::quarantines,
                    "Snapshots quarantined for corruption (persisted across opens).")
      .def_readonly("orphans_seen", &auxstore_stats_t::orphans_seen,
                    "Record groups without a manifest found.")
      .def_readonly("orphans_removed", &auxstore_stats_t::orphans_removed,
                    "Record groups without a manifest removed.")
      .def_readonly("commit_seq", &auxstore_stats_t::commit_seq,
                    "Commits recovered and made since the store was created.")
      .def_readonly("durable_watermark", &auxstore_stats_t::durable_watermark,
                    "The last commit known durable.")
      .def_readonly("lost_commits_at_open", &auxstore_stats_t::lost_commits_at_open,
                    "Commits the open found lost and accepted (accept_data_loss).")
      .def_readonly("bytes_written", &auxstore_stats_t::bytes_written,
                    "Layer bytes this handle wrote.")
      .def_readonly("bytes_read", &auxstore_stats_t::bytes_read,
                    "Layer bytes this handle read and verified.")
      .def_readonly("capacity_bytes", &auxstore_stats_t::capacity_bytes,
                    "The byte budget (0: unlimited).")
      .def_readonly("leases", &auxstore_stats_t::leases, "Live leases of this handle.")
      .def_readonly("unique_bytes", &auxstore_stats_t::unique_bytes,
                    "The bytes stored for the snapshots, each shared page once (what "
                    "capacity_bytes budgets); payload_bytes counts every snapshot in full.")
      .def_property_readonly(
          "index_ready", [](const auxstore_stats_t& s) { return s.index_ready != 0; },
          "True once the background LRU index has loaded.")
      .def_property_readonly(
          "fenced", [](const auxstore_stats_t& s) { return s.fenced != 0; },
          "True after a failed write: the handle writes nothing until reopened.")
      .def("as_dict", &StatsDict, "The counters as a dict {field: value}.")
      .def("__repr__", [](const auxstore_stats_t& s) {
        return "StoreStats(" + py::repr(StatsDict(s)).cast<std::string>() + ")";
      });
}

}  // namespace auxpy
