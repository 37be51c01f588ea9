// libFuzzer target: DecodeEnvelope and DecodeEnvelopeInto over untrusted
// record values. Input: [key length u8][key][value]. Both decoders must agree,
// and an accepted value must re-encode to itself.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "format/envelope.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const size_t key_len = std::min<size_t>(data[0], size - 1);
  const auxstore::ByteSpan key(data + 1, key_len);
  const auxstore::ByteSpan value(data + 1 + key_len, size - 1 - key_len);
  auto env = auxstore::DecodeEnvelope(key, value);
  std::vector<uint8_t> dst(value.size() >= auxstore::kEnvelopeHeaderBytes
                               ? value.size() - auxstore::kEnvelopeHeaderBytes
                               : 0);
  auto into = auxstore::DecodeEnvelopeInto(key, value, dst);
  if (env.ok() != into.ok()) std::abort();
  if (env.ok()) {
    const std::string again = auxstore::EncodeEnvelope(key, env->kind, env->payload);
    if (again.size() != value.size() ||
        again.compare(0, again.size(), reinterpret_cast<const char*>(value.data()), value.size()) !=
            0) {
      std::abort();
    }
  }
  return 0;
}
