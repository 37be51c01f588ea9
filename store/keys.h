// Key layouts of the store's column families (docs/format.md, "Store keys").
//
//   namespaces  ns(u64 BE)                                  -> envelope(kNamespace)
//   manifests   ns(u64 BE) | prefix(16)                     -> envelope(kManifest)
//   records     ns(u64 BE) | put(u64 BE) | layer(u32 BE) | array(u8) | chunk(u32 BE)
//                                                           -> envelope(chunk kind)
//   runs        ns | put                                    -> envelope(kRun): what the put stored
//   pages       ns | page_tokens(u32 BE) | chain hash(16)   -> envelope(kPageRef): who stored the
//   page refs        ns | owner put | referrer put               -> the referrer's snapshot key
//   recency     ns | prefix                                 -> last access ms (u64 LE)
//   meta        ascii name                                  -> envelope(kStoreMeta)
//
// Big-endian so one put's records are contiguous and ordered by layer, then
// array, then chunk: one DeleteRange removes them, one SST holds them
// sorted, and a layer's stream is read in key order. An owner's refs are
// contiguous too: one prefix scan says whether anyone still uses its pages.
#pragma once

#include <cstdint>
#include <string>

#include "auxstore/manifest_types.h"
#include "auxstore/prefix.h"

namespace auxstore::store_internal {

inline constexpr size_t kSnapshotKeyBytes = 8 + 16;
inline constexpr size_t kPutKeyBytes = 8 + 8;
inline constexpr size_t kRecordKeyBytes = kPutKeyBytes + 4 + 1 + 4;
inline constexpr size_t kPageKeyBytes = 8 + 4 + 16;
inline constexpr size_t kRefKeyBytes = 8 + 8 + 8;

std::string NamespaceKey(NamespaceId ns);
// "0123456789abcdef": how messages and tools name a namespace.
std::string NamespaceHex(NamespaceId ns);
std::string PutHex(PutId put);  // 16 hex digits, as tools name a put
std::string SnapshotKey(NamespaceId ns, const Prefix& prefix);
// ns | put: a put's run record key, and the prefix of all its records.
std::string PutKey(NamespaceId ns, PutId put);
std::string RecordKey(NamespaceId ns, PutId put, uint32_t layer, uint8_t array, uint32_t chunk);
// The same key written over `*k`, reusing its buffer (a reader's key per
// record would otherwise cost an allocation).
void AssignRecordKey(std::string* k, NamespaceId ns, PutId put, uint32_t layer, uint8_t array,
                     uint32_t chunk);
// The first key after every record of (ns, put): the end of its range.
std::string PutRangeEnd(NamespaceId ns, PutId put);
std::string PageKey(NamespaceId ns, uint32_t page_tokens, const Prefix& chain_hash);
std::string RefKey(NamespaceId ns, PutId owner, PutId referrer);

struct ParsedRecordKey {
  NamespaceId ns = 0;
  PutId put = 0;
  uint32_t layer = 0;
  uint8_t array = 0;
  uint32_t chunk = 0;
};
bool ParsePutKey(std::string_view key, NamespaceId* ns, PutId* put);
bool ParseRefKey(std::string_view key, NamespaceId* ns, PutId* owner, PutId* referrer);
bool ParseRecordKey(std::string_view key, ParsedRecordKey* out);
bool ParseSnapshotKey(std::string_view key, NamespaceId* ns, Prefix* prefix);
bool ParseNamespaceKey(std::string_view key, NamespaceId* ns);

}  // namespace auxstore::store_internal
