// The C ABI side of the trust tests: the battery namespace's geometry, a
// spec's layers as auxstore_layer_t, and one snapshot read back and compared
// with its deterministic spec. Used by auxstore_trust_child and by the tests
// that hold a C ABI handle in their own process.
#pragma once

#include <cstring>
#include <string>
#include <vector>

#include "auxstore/blob_hash.h"
#include "auxstore/c.h"
#include "tests/trust/trust_spec.h"

namespace auxstore::trust {

// "<code> <CodeName> <message>"
inline std::string Err(int code, char* msg) {
  std::string s =
      std::to_string(code) + " " + auxstore_code_name(code) + " " + (msg ? msg : "(no message)");
  return s;
}

inline auxstore_geometry_t BatteryGeometry() {
  const auxstore::NamespaceSpec s = auxstore::trust::BatterySpec();
  auxstore_geometry_t g{};
  g.qsa_hd = s.qsa.hd;
  g.qsa_max_tokens = s.qsa.max_tokens;
  g.qsa_ratio = s.qsa.ratio;
  g.qsa_rot = s.qsa.rot;
  g.qsa_theta = s.qsa.theta;
  g.qsa_eps = s.qsa.eps;
  g.dsa_index_head_dim = s.dsa.index_head_dim;
  g.dsa_capacity = s.dsa.capacity;
  return g;
}

inline uint64_t BatteryNs() {
  return auxstore::NamespaceFingerprint(auxstore::trust::BatterySpec());
}

inline std::vector<auxstore_layer_t> CLayers(const SnapshotSpec& s) {
  std::vector<auxstore_layer_t> out;
  for (const auto& l : s.layers) {
    out.push_back({l.layer, static_cast<uint32_t>(l.kind), l.bytes.data(), l.bytes.size()});
  }
  return out;
}

// One seed: "exact", "absent ...", "error ...", "WRONG ...".
inline std::string ReadSeed(auxstore_t* db, uint64_t ns, const SnapshotSpec& want) {
  std::vector<auxstore_layer_info_t> info(64);
  uint64_t tokens = 0;
  size_t n = 0;
  char* msg = nullptr;
  int rc = auxstore_get_manifest(db, ns, want.prefix.bytes.data(), &tokens, info.data(),
                                 info.size(), &n, &msg);
  if (rc == AUXSTORE_NOT_FOUND) {
    std::string r = std::string("absent ") + (msg ? msg : "");
    auxstore_free(msg);
    return r;
  }
  if (rc != AUXSTORE_OK) {
    std::string r = "error " + Err(rc, msg) + " (get_manifest)";
    auxstore_free(msg);
    return r;
  }
  if (tokens != want.token_count || n != want.layers.size()) {
    return "WRONG manifest: token_count " + std::to_string(tokens) + " layers " +
           std::to_string(n) + ", written token_count " + std::to_string(want.token_count) +
           " layers " + std::to_string(want.layers.size());
  }
  for (size_t i = 0; i < n; ++i) {
    const auto& l = want.layers[i];
    if (info[i].layer != l.layer || info[i].kind != static_cast<uint32_t>(l.kind) ||
        info[i].bytes != l.bytes.size()) {  // the bytes themselves are compared below
      return "WRONG manifest entry " + std::to_string(i) + ": layer " +
             std::to_string(info[i].layer) + " kind " + std::to_string(info[i].kind) + " bytes " +
             std::to_string(info[i].bytes) + " (written: layer " + std::to_string(l.layer) +
             " bytes " + std::to_string(l.bytes.size()) + ")";
    }
  }
  for (const auto& l : want.layers) {
    void* data = nullptr;
    size_t size = 0;
    rc = auxstore_get_layer(db, ns, want.prefix.bytes.data(), l.layer, &data, &size, &msg);
    if (rc != AUXSTORE_OK) {
      std::string r = "error " + Err(rc, msg) + " (get_layer " + std::to_string(l.layer) + ")";
      auxstore_free(msg);
      return r;
    }
    const bool same =
        size == l.bytes.size() && (size == 0 || std::memcmp(data, l.bytes.data(), size) == 0);
    auxstore_free(data);
    if (!same) {
      return "WRONG layer " + std::to_string(l.layer) + ": " + std::to_string(size) +
             " bytes returned, " + std::to_string(l.bytes.size()) + " written, contents differ";
    }
  }
  auxstore_free(msg);
  return "exact";
}

// auxstore_open with the few options the tests use; *code and *message
// receive the result (message empty on success).
inline auxstore_t* OpenC(const std::string& path, bool read_only, int* code, std::string* message) {
  auxstore_options_t* o = auxstore_options_create();
  if (read_only) auxstore_options_set_read_only(o, 1, nullptr);
  auxstore_t* db = nullptr;
  char* msg = nullptr;
  *code = auxstore_open(path.c_str(), o, &db, &msg);
  auxstore_options_destroy(o);
  message->assign(msg ? msg : "");
  auxstore_free(msg);
  return *code == AUXSTORE_OK ? db : nullptr;
}

// Registers the battery namespace; "" or the error.
inline std::string RegisterBattery(auxstore_t* db) {
  const auxstore_geometry_t g = BatteryGeometry();
  uint64_t ns = 0;
  char* msg = nullptr;
  const int rc = auxstore_register_namespace(db, "reliability-battery", &g, &ns, &msg);
  std::string r =
      rc == AUXSTORE_OK ? (ns == BatteryNs() ? "" : "namespace id differs") : Err(rc, msg);
  auxstore_free(msg);
  return r;
}

// Puts one deterministic snapshot; returns the code, *error gets the message.
inline int PutSeed(auxstore_t* db, const std::string& profile, uint64_t seed, std::string* error) {
  const SnapshotSpec s = *MakeProfile(profile, seed);
  const auto layers = CLayers(s);
  char* msg = nullptr;
  const int rc = auxstore_put_snapshot(db, BatteryNs(), s.prefix.bytes.data(), s.token_count,
                                       layers.size(), layers.data(), &msg);
  if (rc != AUXSTORE_OK && error) *error = Err(rc, msg);
  auxstore_free(msg);
  return rc;
}

}  // namespace auxstore::trust
