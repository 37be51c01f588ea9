// Stands in for the engine's prefill: per-layer states that are a pure
// function of the tokens, so a later process can recompute what a restore
// must reproduce bit for bit.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "model.h"

namespace tiered {

// `count` finite bf16 values (little-endian bytes) determined by `seed`.
std::vector<uint8_t> SyntheticBf16(size_t count, uint64_t seed);

// The blob each layer holds after prefilling `tokens` (at most the QSA
// max_tokens and the DSA capacity).
std::map<uint32_t, std::vector<uint8_t>> PrefillBlobs(std::span<const uint32_t> tokens);

// Fresh states filled with PrefillBlobs (QSA blocks re-pooled on the device).
auxstore::Result<SequenceStates> Prefill(const Model& model, std::span<const uint32_t> tokens);

// OK when `states` hold exactly what Prefill(tokens) would: every layer's
// blob and the QSA block keys; otherwise an error naming the first difference.
auxstore::Status CheckSameAsPrefill(const Model& model, const SequenceStates& states,
                                    std::span<const uint32_t> tokens);

}  // namespace tiered
