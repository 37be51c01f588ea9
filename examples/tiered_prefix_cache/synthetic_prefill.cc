// Deterministic stand-in prefill and the bit-exact comparison against it.
#include "synthetic_prefill.h"

#include <cstring>
#include <string>

#include "auxstore/blob_codecs.h"
#include "auxstore/prefix.h"

namespace tiered {
namespace {

uint64_t SplitMix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// A bf16 in (-1, 1): the top half of a float.
uint16_t Bf16From(uint64_t bits) {
  const float f = static_cast<float>(static_cast<double>(bits >> 11) / double(1ull << 53)) * 2 - 1;
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return static_cast<uint16_t>(u >> 16);
}

void PutBf16(std::vector<uint8_t>& out, uint16_t v) {
  out.push_back(static_cast<uint8_t>(v));
  out.push_back(static_cast<uint8_t>(v >> 8));
}

// Row `t` depends on token t and its position only, like a KV row would.
uint64_t RowSeed(std::span<const uint32_t> tokens, size_t t, uint64_t layer) {
  return SplitMix((uint64_t{tokens[t]} << 32) ^ (t << 4) ^ layer);
}

std::vector<uint8_t> Rows(std::span<const uint32_t> tokens, uint32_t dim, uint64_t layer) {
  std::vector<uint8_t> out;
  out.reserve(tokens.size() * dim * 2);
  for (size_t t = 0; t < tokens.size(); ++t) {
    const uint64_t seed = RowSeed(tokens, t, layer);
    for (uint32_t d = 0; d < dim; ++d) PutBf16(out, Bf16From(SplitMix(seed + d)));
  }
  return out;
}

auxstore::Result<std::vector<uint8_t>> ReadBlockKeys(const Model& model,
                                                     const auxstore::SeqState& state) {
  const auto& q = static_cast<const auxstore::QsaSeqState&>(state);
  std::vector<uint8_t> keys(q.pooled() * model.qsa_layer().geometry.hd * 2);
  if (!keys.empty()) {
    AUXSTORE_RETURN_IF_ERROR(model.gpu().CopyD2HOnStream(q.block_keys(), 0, keys, model.stream()));
  }
  return keys;
}

}  // namespace

std::vector<uint8_t> SyntheticBf16(size_t count, uint64_t seed) {
  std::vector<uint8_t> out;
  out.reserve(count * 2);
  for (size_t i = 0; i < count; ++i) PutBf16(out, Bf16From(SplitMix(seed * 1000003 + i)));
  return out;
}

std::map<uint32_t, std::vector<uint8_t>> PrefillBlobs(std::span<const uint32_t> tokens) {
  const auxstore::NamespaceSpec spec = ModelSpec();
  const uint64_t n = tokens.size();
  std::map<uint32_t, std::vector<uint8_t>> blobs;
  blobs[kQsaLayer] = auxstore::EncodeQsaBlob(n, n / spec.qsa.ratio,
                                             Rows(tokens, spec.qsa.hd, kQsaLayer), spec.qsa.hd)
                         .value();
  std::vector<uint8_t> valid(n, 1);
  blobs[kDsaLayer] =
      auxstore::EncodeDsaBlob(n, spec.dsa.index_head_dim,
                              Rows(tokens, spec.dsa.index_head_dim, kDsaLayer),
                              Rows(tokens, spec.dsa.index_head_dim, kDsaLayer + 100), valid)
          .value();
  // An opaque per-sequence extra (e.g. sampler state): 256 bytes keyed by
  // the exact token sequence.
  const auxstore::TokenDigest digest = auxstore::DigestTokens(tokens, kSalt);
  std::vector<uint8_t> opaque(256);
  for (size_t i = 0; i < opaque.size(); ++i) opaque[i] = digest.bytes[i % 16] ^ uint8_t(i);
  blobs[kOpaqueLayer] = std::move(opaque);
  return blobs;
}

auxstore::Result<SequenceStates> Prefill(const Model& model, std::span<const uint32_t> tokens) {
  AUXSTORE_ASSIGN_OR_RETURN(SequenceStates states, model.FreshStates());
  const auto blobs = PrefillBlobs(tokens);
  for (const auto& [layer, blob] : blobs) {
    AUXSTORE_RETURN_IF_ERROR(states.layers.at(layer)->Restore(blob, model.stream()));
  }
  // The blobs die here: the copies must be done.
  AUXSTORE_RETURN_IF_ERROR(model.gpu().Synchronize(model.stream()));
  return states;
}

auxstore::Status CheckSameAsPrefill(const Model& model, const SequenceStates& states,
                                    std::span<const uint32_t> tokens) {
  const auto want = PrefillBlobs(tokens);
  for (const auto& [layer, blob] : want) {
    AUXSTORE_ASSIGN_OR_RETURN(auto have, states.layers.at(layer)->Snapshot(model.stream()));
    if (have != blob) {
      return auxstore::Status::Corruption("layer " + std::to_string(layer) +
                                          " differs: " + std::to_string(have.size()) +
                                          " bytes, want " + std::to_string(blob.size()));
    }
  }
  AUXSTORE_ASSIGN_OR_RETURN(SequenceStates reference, Prefill(model, tokens));
  AUXSTORE_ASSIGN_OR_RETURN(auto keys, ReadBlockKeys(model, *states.layers.at(kQsaLayer)));
  AUXSTORE_ASSIGN_OR_RETURN(auto want_keys, ReadBlockKeys(model, *reference.layers.at(kQsaLayer)));
  if (keys != want_keys) return auxstore::Status::Corruption("re-pooled QSA block keys differ");
  return auxstore::Status::Ok();
}

}  // namespace tiered
