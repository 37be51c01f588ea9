#include "store/record_check.h"

#include <string>

#include "format/envelope.h"

namespace auxstore::store_internal {

Result<ByteSpan> CheckChunkRecord(ByteSpan key, ByteSpan value, const ChunkWant& want,
                                  LayerHasher* layer_hash, std::span<uint8_t> copy_to) {
  if (!copy_to.empty() && copy_to.size() != want.bytes) {
    return Status::InvalidArgument("destination is " + std::to_string(copy_to.size()) +
                                   " bytes, the record's wanted range " +
                                   std::to_string(want.bytes));
  }
  if (want.layer_digest_only && (copy_to.size() != want.bytes || layer_hash == nullptr)) {
    return Status::InvalidArgument("a record read without its checksum needs a copy and a digest");
  }
  auto env = [&]() -> Result<EnvelopeView> {
    if (want.layer_digest_only) return CopyEnvelopeRange(value, want.offset, copy_to, layer_hash);
    if (copy_to.empty()) {
      return DecodeEnvelopeRange(key, value, want.offset, want.bytes, layer_hash);
    }
    return DecodeEnvelopeRange(key, value, want.offset, copy_to, layer_hash);
  }();
  if (!env.ok()) return env.error();
  if (env->kind != ChunkRecordKind(want.layer_kind)) {
    return Status::Corruption("holds a record of kind " +
                              std::to_string(static_cast<unsigned>(env->kind)) +
                              ", the manifest says " + std::string(KindName(want.layer_kind)));
  }
  if (want.whole && (want.offset != 0 || env->payload.size() != want.bytes)) {
    return Status::Corruption("holds " + std::to_string(env->payload.size()) +
                              " payload bytes where " + std::to_string(want.bytes) +
                              " were stored");
  }
  return env->payload.subspan(want.offset, want.bytes);
}

}  // namespace auxstore::store_internal
