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

std::string PutHex(PutId put) { return NamespaceHex(put); }

std::string SnapshotKey(NamespaceId ns, const Prefix& prefix) {
  std::string k(kSnapshotKeyBytes, '\0');
  auto* p = reinterpret_cast<uint8_t*>(k.data());
  PutBE64(p, ns);
  std::memcpy(p + 8, prefix.bytes.data(), 16);
  return k;
}

std::string PutKey(NamespaceId ns, PutId put) {
  std::string k(kPutKeyBytes, '\0');
  auto* p = reinterpret_cast<uint8_t*>(k.data());
  PutBE64(p, ns);
  PutBE64(p + 8, put);
  return k;
}

std::string RecordKey(NamespaceId ns, PutId put, uint32_t layer, uint8_t array, uint32_t chunk) {
  std::string k;
  AssignRecordKey(&k, ns, put, layer, array, chunk);
  return k;
}

void AssignRecordKey(std::string* k, NamespaceId ns, PutId put, uint32_t layer, uint8_t array,
                     uint32_t chunk) {
  k->resize(kRecordKeyBytes);
  auto* p = reinterpret_cast<uint8_t*>(k->data());
  PutBE64(p, ns);
  PutBE64(p + 8, put);
  PutBE32(p + kPutKeyBytes, layer);
  p[kPutKeyBytes + 4] = array;
  PutBE32(p + kPutKeyBytes + 5, chunk);
}

std::string PutRangeEnd(NamespaceId ns, PutId put) {
  // Every record key of the put extends PutKey by 9 bytes; 0xff x 10 after
  // it sorts after all of them.
  std::string k = PutKey(ns, put);
  k.append(10, '\xff');
  return k;
}

std::string PageKey(NamespaceId ns, uint32_t page_tokens, const Prefix& chain_hash) {
  std::string k(kPageKeyBytes, '\0');
  auto* p = reinterpret_cast<uint8_t*>(k.data());
  PutBE64(p, ns);
  PutBE32(p + 8, page_tokens);
  std::memcpy(p + 12, chain_hash.bytes.data(), 16);
  return k;
}

std::string RefKey(NamespaceId ns, PutId owner, PutId referrer) {
  std::string k(kRefKeyBytes, '\0');
  auto* p = reinterpret_cast<uint8_t*>(k.data());
  PutBE64(p, ns);
  PutBE64(p + 8, owner);
  PutBE64(p + 16, referrer);
  return k;
}

bool ParseRecordKey(std::string_view key, ParsedRecordKey* out) {
  if (key.size() != kRecordKeyBytes) return false;
  const auto* p = reinterpret_cast<const uint8_t*>(key.data());
  out->ns = GetBE64(p);
  out->put = GetBE64(p + 8);
  out->layer = GetBE32(p + kPutKeyBytes);
  out->array = p[kPutKeyBytes + 4];
  out->chunk = GetBE32(p + kPutKeyBytes + 5);
  return true;
}

bool ParsePutKey(std::string_view key, NamespaceId* ns, PutId* put) {
  if (key.size() != kPutKeyBytes) return false;
  const auto* p = reinterpret_cast<const uint8_t*>(key.data());
  *ns = GetBE64(p);
  *put = GetBE64(p + 8);
  return true;
}

bool ParseRefKey(std::string_view key, NamespaceId* ns, PutId* owner, PutId* referrer) {
  if (key.size() != kRefKeyBytes) return false;
  const auto* p = reinterpret_cast<const uint8_t*>(key.data());
  *ns = GetBE64(p);
  *owner = GetBE64(p + 8);
  *referrer = GetBE64(p + 16);
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
