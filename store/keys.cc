#include "store/keys.h"

#include <cinttypes>
#include <cstdio>
#include <cstring>

#include "format/byte_order.h"

namespace auxstore::store_internal {

using internal::GetBE32;
using internal::GetBE64;
using internal::PutBE32;
using internal::PutBE64;

std::string NamespaceKey(NamespaceId ns) {
  std::string k(8, '\0');
  PutBE64(reinterpret_cast<uint8_t*>(k.data()), ns);
  return k;
}

std::string NamespaceHex(NamespaceId ns) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016" PRIx64, ns);
  return buf;
}

std::string SnapshotKey(NamespaceId ns, const Prefix& prefix) {
  std::string k(kSnapshotKeyBytes, '\0');
  auto* p = reinterpret_cast<uint8_t*>(k.data());
  PutBE64(p, ns);
  std::memcpy(p + 8, prefix.bytes.data(), 16);
  return k;
}

std::string RecordKey(NamespaceId ns, const Prefix& prefix, uint32_t layer, uint32_t chunk) {
  std::string k = SnapshotKey(ns, prefix);
  k.resize(kRecordKeyBytes);
  auto* p = reinterpret_cast<uint8_t*>(k.data());
  PutBE32(p + kSnapshotKeyBytes, layer);
  PutBE32(p + kSnapshotKeyBytes + 4, chunk);
  return k;
}

std::string SnapshotRangeEnd(NamespaceId ns, const Prefix& prefix) {
  // Every record key of the snapshot extends SnapshotKey; appending 0xff x 9
  // sorts after all of them (record keys add exactly 8 bytes).
  std::string k = SnapshotKey(ns, prefix);
  k.append(9, '\xff');
  return k;
}

bool ParseRecordKey(std::string_view key, ParsedRecordKey* out) {
  if (key.size() != kRecordKeyBytes) return false;
  if (!ParseSnapshotKey(key.substr(0, kSnapshotKeyBytes), &out->ns, &out->prefix)) return false;
  const auto* p = reinterpret_cast<const uint8_t*>(key.data());
  out->layer = GetBE32(p + kSnapshotKeyBytes);
  out->chunk = GetBE32(p + kSnapshotKeyBytes + 4);
  return true;
}

bool ParseSnapshotKey(std::string_view key, NamespaceId* ns, Prefix* prefix) {
  if (key.size() != kSnapshotKeyBytes) return false;
  const auto* p = reinterpret_cast<const uint8_t*>(key.data());
  *ns = GetBE64(p);
  std::memcpy(prefix->bytes.data(), p + 8, 16);
  return true;
}

bool ParseNamespaceKey(std::string_view key, NamespaceId* ns) {
  if (key.size() != 8) return false;
  *ns = GetBE64(reinterpret_cast<const uint8_t*>(key.data()));
  return true;
}

}  // namespace auxstore::store_internal
