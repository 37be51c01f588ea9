// The example model's geometry, weights and per-sequence states.
#include "model.h"

#include <vector>

#include "synthetic_prefill.h"

namespace tiered {

auxstore::NamespaceSpec ModelSpec() {
  auxstore::NamespaceSpec s;
  s.model_id = "tiered-prefix-cache-example";
  s.qsa = {/*hd=*/64,    /*max_tokens=*/512, /*ratio=*/8, /*rot=*/32, /*theta=*/10000.0f,
           /*eps=*/1e-6f};
  s.dsa = {/*index_head_dim=*/32, /*capacity=*/512};
  return s;
}

auxstore::RestoreTargets SequenceStates::targets() const {
  auxstore::RestoreTargets t;
  for (const auto& [layer, state] : layers) t[layer] = state.get();
  return t;
}

auxstore::SnapshotSources SequenceStates::sources() const {
  auxstore::SnapshotSources s;
  for (const auto& [layer, state] : layers) s[layer] = state.get();
  return s;
}

auxstore::Result<std::unique_ptr<Model>> Model::Create(auxstore::GpuBackend& gpu) {
  std::unique_ptr<Model> m(new Model(gpu));
  m->qsa_.geometry = ModelSpec().qsa;
  const uint32_t hd = m->qsa_.geometry.hd;
  for (auto [dst, seed] : {std::pair{&m->qsa_.k_pool_k, 1u}, std::pair{&m->qsa_.k_norm_w, 2u}}) {
    const std::vector<uint8_t> weights = SyntheticBf16(hd, seed);
    AUXSTORE_ASSIGN_OR_RETURN(*dst, gpu.Alloc(weights.size()));
    AUXSTORE_RETURN_IF_ERROR(gpu.CopyH2DAsync(weights, *dst, 0, auxstore::kDefaultStream));
    AUXSTORE_RETURN_IF_ERROR(gpu.Synchronize(auxstore::kDefaultStream));
  }
  return m;
}

Model::~Model() {
  (void)gpu_.Free(qsa_.k_pool_k);
  (void)gpu_.Free(qsa_.k_norm_w);
}

auxstore::Result<SequenceStates> Model::FreshStates() const {
  SequenceStates s;
  AUXSTORE_ASSIGN_OR_RETURN(s.layers[kQsaLayer], auxstore::QsaSeqState::Create(gpu_, qsa_));
  AUXSTORE_ASSIGN_OR_RETURN(s.layers[kDsaLayer],
                            auxstore::DsaSeqState::Create(gpu_, ModelSpec().dsa));
  AUXSTORE_ASSIGN_OR_RETURN(s.layers[kOpaqueLayer],
                            auxstore::OpaqueSeqState::Create(gpu_, kOpaqueCapacity));
  return s;
}

}  // namespace tiered
