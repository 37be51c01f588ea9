// `auxstore export` / `auxstore import`: one snapshot as plain files (one raw
// blob per layer plus manifest.json, see import_manifest.h) and back.
#pragma once

#include <optional>
#include <string>

#include "auxstore/prefix.h"
#include "auxstore/status.h"
#include "tools/cli/import_manifest.h"

namespace auxstore::cli {

struct ExportReport {
  NamespaceId ns = 0;
  Prefix prefix;
  uint64_t layers = 0, bytes = 0;
};

// Read-only open (works beside a live writer). `dir` is created (0700) and
// must not exist or be empty; files are created exclusively, manifest.json
// last. `ns`: required only when the prefix is in several namespaces.
// `shared` (a rados:// URI, "" = none): as InspectSnapshot's.
Result<ExportReport> ExportSnapshot(const std::string& store_path, const Prefix& prefix,
                                    std::optional<NamespaceId> ns, const std::string& dir,
                                    const std::string& shared = {});

// Reads and checks an export directory without touching any store: the
// manifest (at most 1 MiB), then each file it names, opened inside `dir`
// with O_NOFOLLOW, required to be a regular file of exactly the size the
// manifest gives (itself bounded by the geometry / `max_layer_bytes`), whose
// XXH3 matches and whose blob passes its codec's check.
struct LoadedImport {
  ImportPlan plan;
  std::vector<std::vector<uint8_t>> blobs;  // parallel to plan.layers
};
Result<LoadedImport> LoadImportDir(const std::string& dir,
                                   uint64_t max_layer_bytes = kDefaultMaxLayerBytes);

struct ImportReport {
  NamespaceId ns = 0;
  Prefix prefix;
  uint64_t layers = 0, bytes = 0;
  bool already_present = false;  // the prefix was stored already; nothing written
};

// LoadImportDir, then (only if all of it is valid) RegisterNamespace and
// PutSnapshot — atomic like any put. Takes the writer's lock.
// `shared` (a rados:// URI, "" = none): the put goes to that pool too
// (SharedWrite::kThrough: it is there when this returns).
Result<ImportReport> ImportSnapshot(const std::string& store_path, const std::string& dir,
                                    uint64_t max_layer_bytes = kDefaultMaxLayerBytes,
                                    const std::string& shared = {});

}  // namespace auxstore::cli
