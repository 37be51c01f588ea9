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
  auto env = copy_to.empty() ? DecodeEnvelopeRange(key, value, want.offset, want.bytes, layer_hash)
                             : DecodeEnvelopeRange(key, value, want.offset, copy_to, layer_hash);
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
