// Module functions: code_name, prefix_hash, token_digest, qsa_block_pool_host.
#include <pybind11/stl.h>

#include <algorithm>
#include <cstring>
#include <optional>

#include "common.h"
#include "store_types.h"

namespace auxpy {

void RegisterFunctions(py::module_& m) {
  m.def(
      "code_name", [](int c) { return std::string(auxstore_code_name(c)); }, py::arg("code"),
      "\"OK\", \"NotFound\", ...; \"Unknown\" for other values.");

  m.def(
      "prefix_hash",
      [](py::handle tokens, IntArg block_size_arg, IntArg salt_arg) {
        const uint32_t block_size = ToU32(block_size_arg, "block_size");
        const uint64_t salt = ToU64(salt_arg, "salt");
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
      [](py::handle tokens, IntArg salt_arg) {
        const uint64_t salt = ToU64(salt_arg, "salt");
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
      [](const auxstore_geometry_t& g, py::handle raw_keys, IntArg ingested_arg,
         py::handle k_pool_k, py::handle k_norm_w, IntArg n_blocks_arg, py::object out) {
        const uint64_t ingested = ToU64(ingested_arg, "ingested");
        const uint32_t n_blocks = ToU32(n_blocks_arg, "n_blocks");
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
