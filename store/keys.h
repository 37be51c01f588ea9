// Key layouts of the store's column families (docs/format.md, "Store keys").
//
//   namespaces  ns(u64 BE)                                  -> envelope(kNamespace)
//   manifests   ns(u64 BE) | prefix(16)                     -> envelope(kManifest)
//   records     ns(u64 BE) | prefix(16) | layer(u32 BE) | chunk(u32 BE)
//                                                           -> envelope(chunk kind)
//   recency     ns | prefix                                 -> last access ms (u64 LE)
//   meta        ascii name                                  -> envelope(kStoreMeta)
//
// Big-endian so one prefix's records are contiguous and ordered by layer,
// then chunk: one DeleteRange removes a snapshot, one SST holds it sorted.
#pragma once

#include <cstdint>
#include <string>

#include "auxstore/prefix.h"

namespace auxstore::store_internal {

inline constexpr size_t kSnapshotKeyBytes = 8 + 16;
inline constexpr size_t kRecordKeyBytes = kSnapshotKeyBytes + 4 + 4;

std::string NamespaceKey(NamespaceId ns);
// "0123456789abcdef": how messages and tools name a namespace.
std::string NamespaceHex(NamespaceId ns);
std::string SnapshotKey(NamespaceId ns, const Prefix& prefix);
std::string RecordKey(NamespaceId ns, const Prefix& prefix, uint32_t layer, uint32_t chunk);
// The first key after every record of (ns, prefix): the end of its range.
std::string SnapshotRangeEnd(NamespaceId ns, const Prefix& prefix);

struct ParsedRecordKey {
  NamespaceId ns = 0;
  Prefix prefix;
  uint32_t layer = 0;
  uint32_t chunk = 0;
};
bool ParseRecordKey(std::string_view key, ParsedRecordKey* out);
bool ParseSnapshotKey(std::string_view key, NamespaceId* ns, Prefix* prefix);
bool ParseNamespaceKey(std::string_view key, NamespaceId* ns);

}  // namespace auxstore::store_internal
