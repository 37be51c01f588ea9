#include "store/meta_keys.h"

#include "format/byte_order.h"
#include "format/envelope.h"
#include "store/bytes.h"

namespace auxstore::store_internal {
std::string EncodeMeta(const std::string& key, const std::string& payload) {
  return EncodeEnvelope(Bytes(key), RecordKind::kStoreMeta, Bytes(payload));
}

std::string EncodeMetaU64(const std::string& key, uint64_t v) {
  std::string p;
  internal::AppendLE64(&p, v);
  return EncodeMeta(key, p);
}

Result<uint64_t> DecodeMetaU64(const std::string& key, const std::string& value) {
  auto env = DecodeEnvelope(Bytes(key), Bytes(value));
  if (!env.ok()) return env.error().WithContext("store record '" + key + "'");
  if (env->kind != RecordKind::kStoreMeta || env->payload.size() != 8) {
    return Status::Corruption("store record '" + key + "' is malformed");
  }
  return internal::GetLE64(env->payload.data());
}

Result<std::string> DecodeMeta(const std::string& key, ByteSpan value) {
  auto env = DecodeEnvelope(Bytes(key), value);
  if (!env.ok()) return env.error().WithContext("store record '" + key + "'");
  if (env->kind != RecordKind::kStoreMeta) {
    return Status::Corruption("store record '" + key + "' is malformed");
  }
  return std::string(env->payload.begin(), env->payload.end());
}

}  // namespace auxstore::store_internal
