#include "tools/cli/import_manifest.h"

#include <cstdio>
#include <nlohmann/json.hpp>
#include <set>

#include "auxstore/geometry.h"

namespace auxstore::cli {
namespace {

using nlohmann::json;

std::string Hex64(uint64_t v) {
  char b[17];
  std::snprintf(b, sizeof b, "%016llx", static_cast<unsigned long long>(v));
  return b;
}

std::string Hex(const uint8_t* p, size_t n) {
  static const char* d = "0123456789abcdef";
  std::string s;
  for (size_t i = 0; i < n; ++i) {
    s += d[p[i] >> 4];
    s += d[p[i] & 15];
  }
  return s;
}

bool ParseHexBytes(std::string_view s, uint8_t* out, size_t n) {
  if (s.size() != 2 * n) return false;
  auto nib = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  for (size_t i = 0; i < n; ++i) {
    int hi = nib(s[2 * i]), lo = nib(s[2 * i + 1]);
    if (hi < 0 || lo < 0) return false;
    out[i] = static_cast<uint8_t>(hi << 4 | lo);
  }
  return true;
}

Status Bad(const std::string& field, const std::string& why) {
  return Status::InvalidArgument("manifest.json: " + field + " " + why);
}

// Typed field readers: each names the field when it is missing or mistyped.
Result<const json*> Field(const json& obj, const char* name, const std::string& where) {
  auto it = obj.find(name);
  if (it == obj.end()) return Bad(where + name, "is missing");
  return &*it;
}

Result<uint64_t> U64(const json& obj, const char* name, const std::string& where,
                     uint64_t max = UINT64_MAX) {
  AUXSTORE_ASSIGN_OR_RETURN(const json* f, Field(obj, name, where));
  if (!f->is_number_unsigned()) return Bad(where + name, "is not a non-negative integer");
  const uint64_t v = f->get<uint64_t>();
  if (v > max)
    return Bad(where + name, "is " + std::to_string(v) + ", over " + std::to_string(max));
  return v;
}

Result<std::string> Str(const json& obj, const char* name, const std::string& where) {
  AUXSTORE_ASSIGN_OR_RETURN(const json* f, Field(obj, name, where));
  if (!f->is_string()) return Bad(where + name, "is not a string");
  return f->get<std::string>();
}

Result<float> F32(const json& obj, const char* name, const std::string& where) {
  AUXSTORE_ASSIGN_OR_RETURN(const json* f, Field(obj, name, where));
  if (!f->is_number()) return Bad(where + name, "is not a number");
  return static_cast<float>(f->get<double>());
}

Result<NamespaceSpec> ParseSpec(const json& ns) {
  if (!ns.is_object()) return Bad("namespace", "is not an object");
  NamespaceSpec s;
  AUXSTORE_ASSIGN_OR_RETURN(s.model_id, Str(ns, "model_id", "namespace."));
  AUXSTORE_ASSIGN_OR_RETURN(const json* q, Field(ns, "qsa", "namespace."));
  AUXSTORE_ASSIGN_OR_RETURN(const json* d, Field(ns, "dsa", "namespace."));
  if (!q->is_object()) return Bad("namespace.qsa", "is not an object");
  if (!d->is_object()) return Bad("namespace.dsa", "is not an object");
  const std::string qw = "namespace.qsa.", dw = "namespace.dsa.";
  AUXSTORE_ASSIGN_OR_RETURN(s.qsa.hd, U64(*q, "hd", qw, UINT32_MAX));
  AUXSTORE_ASSIGN_OR_RETURN(s.qsa.max_tokens, U64(*q, "max_tokens", qw, UINT32_MAX));
  AUXSTORE_ASSIGN_OR_RETURN(s.qsa.ratio, U64(*q, "ratio", qw, UINT32_MAX));
  AUXSTORE_ASSIGN_OR_RETURN(s.qsa.rot, U64(*q, "rot", qw, UINT32_MAX));
  AUXSTORE_ASSIGN_OR_RETURN(s.qsa.theta, F32(*q, "theta", qw));
  AUXSTORE_ASSIGN_OR_RETURN(s.qsa.eps, F32(*q, "eps", qw));
  AUXSTORE_ASSIGN_OR_RETURN(s.dsa.index_head_dim, U64(*d, "index_head_dim", dw, UINT32_MAX));
  AUXSTORE_ASSIGN_OR_RETURN(s.dsa.capacity, U64(*d, "capacity", dw, UINT32_MAX));
  // The identity fields are optional: absent, they take their defaults.
  if (ns.contains("page_tokens")) {
    AUXSTORE_ASSIGN_OR_RETURN(s.page_tokens, U64(ns, "page_tokens", "namespace.", UINT32_MAX));
  }
  if (ns.contains("weight_revision")) {
    AUXSTORE_ASSIGN_OR_RETURN(s.weight_revision, Str(ns, "weight_revision", "namespace."));
  }
  if (ns.contains("tp")) {
    const json& tp = ns["tp"];
    if (!tp.is_object()) return Bad("namespace.tp", "is not an object");
    AUXSTORE_ASSIGN_OR_RETURN(s.tp_rank, U64(tp, "rank", "namespace.tp.", UINT32_MAX));
    AUXSTORE_ASSIGN_OR_RETURN(s.tp_world_size, U64(tp, "world_size", "namespace.tp.", UINT32_MAX));
  }
  if (ns.contains("opaque_layers")) {
    const json& arr = ns["opaque_layers"];
    if (!arr.is_array()) return Bad("namespace.opaque_layers", "is not an array");
    for (size_t i = 0; i < arr.size(); ++i) {
      const std::string w = "namespace.opaque_layers[" + std::to_string(i) + "].";
      if (!arr[i].is_object()) return Bad(w, "is not an object");
      OpaqueLayerSpec o;
      AUXSTORE_ASSIGN_OR_RETURN(o.layer, U64(arr[i], "layer", w, UINT32_MAX));
      AUXSTORE_ASSIGN_OR_RETURN(std::string dtype, Str(arr[i], "dtype", w));
      bool known = false;
      for (uint32_t t = 1; t <= 8; ++t) {
        if (DTypeName(static_cast<DType>(t)) == dtype) {
          o.dtype = static_cast<DType>(t);
          known = true;
        }
      }
      if (!known) return Bad(w + "dtype", "'" + dtype + "' is not a known dtype");
      AUXSTORE_ASSIGN_OR_RETURN(const json* shape, Field(arr[i], "shape", w));
      if (!shape->is_array()) return Bad(w + "shape", "is not an array");
      for (const json& dim : *shape) {
        if (!dim.is_number_unsigned()) return Bad(w + "shape", "holds a non-integer");
        o.shape.push_back(dim.get<uint64_t>());
      }
      s.opaque_layers.push_back(std::move(o));
    }
  }
  Status v = ValidateNamespaceSpec(s);
  if (!v.ok()) return Bad("namespace", "is not a valid spec: " + v.message());
  return s;
}

Status CheckFileName(const std::string& name, const std::string& where) {
  if (name.empty()) return Bad(where, "is empty");
  if (name.size() > 255) return Bad(where, "is longer than 255 bytes");
  if (name == "." || name == "..") return Bad(where, "'" + name + "' is not a file name");
  if (name.find('/') != std::string::npos) {
    return Bad(where,
               "'" + name + "' names a path; only plain names inside the directory are read");
  }
  if (name.find('\0') != std::string::npos) return Bad(where, "contains a NUL byte");
  if (name == kExportManifestName) return Bad(where, "names the manifest itself");
  return Status::Ok();
}

}  // namespace

std::optional<Kind> KindFromName(std::string_view name) {
  if (name == "QSA") return Kind::kQsa;
  if (name == "DSA") return Kind::kDsa;
  if (name == "opaque") return Kind::kOpaque;
  return std::nullopt;
}

uint64_t MaxBlobBytes(Kind kind, const NamespaceSpec& spec, uint64_t max_opaque) {
  switch (kind) {  // u32 geometry: these products cannot overflow 64 bits
    case Kind::kQsa:
      return 16 + uint64_t{spec.qsa.max_tokens} * spec.qsa.hd * 2;
    case Kind::kDsa:
      return 16 + uint64_t{spec.dsa.capacity} * (4 * uint64_t{spec.dsa.index_head_dim} + 1);
    case Kind::kOpaque:
      return max_opaque;
  }
  return 0;
}

Result<ImportPlan> ParseImportManifest(std::string_view text, uint64_t max_layer_bytes) {
  if (text.size() > kMaxExportManifestBytes) {
    return Bad("", "is " + std::to_string(text.size()) + " bytes, over the 1 MiB limit");
  }
  const json j = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return Status::InvalidArgument("manifest.json is not valid JSON");
  if (!j.is_object()) return Bad("", "is not a JSON object");
  AUXSTORE_ASSIGN_OR_RETURN(std::string format, Str(j, "format", ""));
  if (format != kExportFormat) {
    return Bad("format", "is '" + format + "', this build reads '" + kExportFormat + "'");
  }
  ImportPlan plan;
  AUXSTORE_ASSIGN_OR_RETURN(const json* ns, Field(j, "namespace", ""));
  AUXSTORE_ASSIGN_OR_RETURN(plan.spec, ParseSpec(*ns));
  AUXSTORE_ASSIGN_OR_RETURN(std::string id, Str(*ns, "id", "namespace."));
  uint8_t idb[8];
  if (!ParseHexBytes(id, idb, 8)) return Bad("namespace.id", "is not 16 hex digits");
  for (uint8_t b : idb) plan.ns = plan.ns << 8 | b;
  if (plan.ns != NamespaceFingerprint(plan.spec)) {
    return Bad("namespace.id", id + " is not the fingerprint of the spec given (" +
                                   Hex64(NamespaceFingerprint(plan.spec)) + ")");
  }
  AUXSTORE_ASSIGN_OR_RETURN(std::string prefix, Str(j, "prefix", ""));
  auto p = Prefix::FromHex(prefix);
  if (!p.ok()) return Bad("prefix", p.error().message());
  plan.prefix = *p;
  AUXSTORE_ASSIGN_OR_RETURN(plan.token_count, U64(j, "token_count", ""));
  if (auto d = j.find("token_digest"); d != j.end() && !d->is_null()) {
    TokenDigest digest;
    if (!d->is_string() || !ParseHexBytes(d->get<std::string>(), digest.bytes.data(), 16)) {
      return Bad("token_digest", "is not 32 hex digits or null");
    }
    plan.token_digest = digest;
  }
  AUXSTORE_ASSIGN_OR_RETURN(const json* layers, Field(j, "layers", ""));
  if (!layers->is_array()) return Bad("layers", "is not an array");
  if (layers->empty()) return Bad("layers", "is empty");
  if (layers->size() > kMaxImportLayers) return Bad("layers", "has too many entries");
  std::set<std::string> files;
  for (size_t i = 0; i < layers->size(); ++i) {
    const json& e = (*layers)[i];
    const std::string w = "layers[" + std::to_string(i) + "].";
    if (!e.is_object()) return Bad(w.substr(0, w.size() - 1), "is not an object");
    ImportLayer l;
    AUXSTORE_ASSIGN_OR_RETURN(l.layer, U64(e, "layer", w, UINT32_MAX));
    if (!plan.layers.empty() && l.layer <= plan.layers.back().layer) {
      return Bad(w + "layer", std::to_string(l.layer) + " is not above the previous layer's index");
    }
    AUXSTORE_ASSIGN_OR_RETURN(std::string kind, Str(e, "kind", w));
    auto k = KindFromName(kind);
    if (!k) return Bad(w + "kind", "'" + kind + "' is not QSA, DSA or opaque");
    l.kind = *k;
    if (l.kind == Kind::kQsa && !plan.spec.qsa.used()) {
      return Bad(w + "kind", "is QSA but the namespace has no QSA geometry");
    }
    if (l.kind == Kind::kDsa && !plan.spec.dsa.used()) {
      return Bad(w + "kind", "is DSA but the namespace has no DSA geometry");
    }
    AUXSTORE_ASSIGN_OR_RETURN(l.file, Str(e, "file", w));
    AUXSTORE_RETURN_IF_ERROR(CheckFileName(l.file, w + "file"));
    if (!files.insert(l.file).second) return Bad(w + "file", "'" + l.file + "' is named twice");
    const uint64_t max = MaxBlobBytes(l.kind, plan.spec, max_layer_bytes);
    AUXSTORE_ASSIGN_OR_RETURN(l.bytes, U64(e, "bytes", w));
    if (l.bytes > max) {
      return Bad(w + "bytes", std::to_string(l.bytes) + " is more than a " +
                                  std::string(KindName(l.kind)) + " layer can hold here (" +
                                  std::to_string(max) + ")");
    }
    AUXSTORE_ASSIGN_OR_RETURN(std::string xxh3, Str(e, "xxh3", w));
    uint8_t hb[8];
    if (!ParseHexBytes(xxh3, hb, 8)) return Bad(w + "xxh3", "is not 16 hex digits");
    for (uint8_t b : hb) l.xxh3 = l.xxh3 << 8 | b;
    plan.layers.push_back(std::move(l));
  }
  return plan;
}

std::string WriteExportManifest(NamespaceId ns, const NamespaceSpec& spec, const Prefix& prefix,
                                const Manifest& m, const std::vector<std::string>& files,
                                const std::vector<uint64_t>& xxh3) {
  json j;
  j["format"] = kExportFormat;
  j["namespace"] = {
      {"id", Hex64(ns)},
      {"model_id", spec.model_id},
      {"qsa",
       {{"hd", spec.qsa.hd},
        {"max_tokens", spec.qsa.max_tokens},
        {"ratio", spec.qsa.ratio},
        {"rot", spec.qsa.rot},
        {"theta", static_cast<double>(spec.qsa.theta)},
        {"eps", static_cast<double>(spec.qsa.eps)}}},
      {"dsa", {{"index_head_dim", spec.dsa.index_head_dim}, {"capacity", spec.dsa.capacity}}}};
  // Written only when set, so an export without them reads as before.
  if (!spec.weight_revision.empty()) j["namespace"]["weight_revision"] = spec.weight_revision;
  if (spec.page_tokens != 0) j["namespace"]["page_tokens"] = spec.page_tokens;
  if (spec.tp_world_size != 1 || spec.tp_rank != 0) {
    j["namespace"]["tp"] = {{"rank", spec.tp_rank}, {"world_size", spec.tp_world_size}};
  }
  if (!spec.opaque_layers.empty()) {
    json arr = json::array();
    for (const OpaqueLayerSpec& o : spec.opaque_layers) {
      arr.push_back(
          {{"layer", o.layer}, {"dtype", std::string(DTypeName(o.dtype))}, {"shape", o.shape}});
    }
    j["namespace"]["opaque_layers"] = std::move(arr);
  }
  j["prefix"] = prefix.ToHex();
  j["token_count"] = m.token_count;
  j["created_unix_ms"] = m.created_unix_ms;
  j["token_digest"] = m.token_digest ? json(Hex(m.token_digest->bytes.data(), 16)) : json(nullptr);
  json layers = json::array();
  for (size_t i = 0; i < m.layers.size(); ++i) {
    const LayerEntry& l = m.layers[i];
    layers.push_back({{"layer", l.layer},
                      {"kind", std::string(KindName(l.kind))},
                      {"file", files[i]},
                      {"bytes", l.bytes},
                      {"xxh3", Hex64(xxh3[i])}});
  }
  j["layers"] = std::move(layers);
  return j.dump(2) + "\n";
}

}  // namespace auxstore::cli
