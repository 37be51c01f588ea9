// The demo's model: a namespace geometry, layer weights, and the aux state
// each layer holds for a token sequence — all pure functions of their
// arguments, so the restoring process can check every byte without any
// channel to the snapshotting one but the store.
#pragma once

#include <cstdint>
#include <vector>

#include "auxstore/geometry.h"

namespace auxstore::demo {

NamespaceSpec DemoSpec();

// Random token ids of sequence `seq`.
std::vector<uint32_t> SequenceTokens(uint32_t seq, uint32_t n);

// bf16 bit patterns of well-behaved values in [-1, 1).
std::vector<uint16_t> Bf16Values(size_t n, uint64_t seed);

// The QSA pooling query and RMSNorm weight of layer `layer`.
std::vector<uint16_t> KPoolK(const NamespaceSpec& s, uint32_t layer);
std::vector<uint16_t> KNormW(const NamespaceSpec& s, uint32_t layer);

// Even layers are QSA, odd layers DSA.
bool IsQsaLayer(uint32_t layer);

// The aux blob layer `layer` of sequence `seq` holds after `tokens` tokens
// (QSA: every complete block pooled).
std::vector<uint8_t> LayerBlobBytes(const NamespaceSpec& s, uint32_t seq, uint32_t layer,
                                    uint64_t tokens);

}  // namespace auxstore::demo
