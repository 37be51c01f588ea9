// manifest.json of an exported snapshot: written by export, parsed (as
// untrusted input) by import. The parser is a pure function over the text so
// a fuzzer can drive it.
//
//   {"format": "auxstore-export v1",
//    "namespace": {"id": "<16 hex>", "model_id": "...",
//                  "qsa": {"hd", "max_tokens", "ratio", "rot", "theta", "eps"},
//                  "dsa": {"index_head_dim", "capacity"}},
//    "prefix": "<32 hex>", "token_count": N, "token_digest": "<32 hex>" | null,
//    "layers": [{"layer": L, "kind": "QSA"|"DSA"|"opaque", "file": "layer-L.bin",
//                "bytes": N, "xxh3": "<16 hex>"}, ...]}
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "auxstore/geometry.h"
#include "auxstore/manifest_types.h"
#include "auxstore/prefix.h"
#include "auxstore/status.h"

namespace auxstore::cli {

inline constexpr const char* kExportFormat = "auxstore-export v1";
inline constexpr const char* kExportManifestName = "manifest.json";
inline constexpr uint64_t kMaxExportManifestBytes = 1u << 20;
inline constexpr uint64_t kDefaultMaxLayerBytes = 1ull << 30;
inline constexpr size_t kMaxImportLayers = 65536;

struct ImportLayer {
  uint32_t layer = 0;
  Kind kind = Kind::kOpaque;
  std::string file;  // a plain name inside the export directory
  uint64_t bytes = 0;
  uint64_t xxh3 = 0;
};

struct ImportPlan {
  NamespaceId ns = 0;
  NamespaceSpec spec;
  Prefix prefix;
  uint64_t token_count = 0;
  std::optional<TokenDigest> token_digest;
  std::vector<ImportLayer> layers;  // ascending layer index
};

// The most bytes a valid blob of `kind` can have under `spec` (QSA: a full
// key cache; DSA: a full state), or `max_opaque` for opaque layers.
uint64_t MaxBlobBytes(Kind kind, const NamespaceSpec& spec, uint64_t max_opaque);

// Validates everything a manifest says before any file is opened: format,
// namespace spec (and that its id is the spec's fingerprint), prefix, digest,
// layer indices (unique, ascending), kinds the namespace has geometry for,
// file names (no '/', no "." or "..", no NUL, unique, not manifest.json) and
// sizes within MaxBlobBytes. InvalidArgument naming the first bad field.
Result<ImportPlan> ParseImportManifest(std::string_view json,
                                       uint64_t max_layer_bytes = kDefaultMaxLayerBytes);

// The manifest.json text for a snapshot (export's side): files[i] holds
// layer i's blob, whose plain XXH3-64 is xxh3[i].
std::string WriteExportManifest(NamespaceId ns, const NamespaceSpec& spec, const Prefix& prefix,
                                const Manifest& manifest, const std::vector<std::string>& files,
                                const std::vector<uint64_t>& xxh3);

// Names for kinds in manifest.json: "QSA", "DSA", "opaque".
std::optional<Kind> KindFromName(std::string_view name);

}  // namespace auxstore::cli
