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

auxstore::Status SequenceStates::Free() {
  layers.clear();  // borrowed states: they free nothing
  auxstore::Status first;
  for (auxstore::DevicePtr p : buffers) {
    auxstore::Status st = gpu->Free(p);
    if (first.ok() && !st.ok()) first = st;
  }
  buffers.clear();
  return first;
}

auxstore::Result<std::unique_ptr<Model>> Model::Create(auxstore::GpuBackend& gpu) {
  std::unique_ptr<Model> m(new Model(gpu));
  AUXSTORE_ASSIGN_OR_RETURN(m->stream_, gpu.CreateStream());
  m->qsa_.geometry = ModelSpec().qsa;
  const uint32_t hd = m->qsa_.geometry.hd;
  for (auto [dst, seed] : {std::pair{&m->qsa_.k_pool_k, 1u}, std::pair{&m->qsa_.k_norm_w, 2u}}) {
    const std::vector<uint8_t> weights = SyntheticBf16(hd, seed);
    AUXSTORE_ASSIGN_OR_RETURN(*dst, gpu.Alloc(weights.size()));
    AUXSTORE_RETURN_IF_ERROR(gpu.CopyH2DAsync(weights, *dst, 0, m->stream_));
    AUXSTORE_RETURN_IF_ERROR(gpu.Synchronize(m->stream_));
  }
  return m;
}

Model::~Model() {
  (void)gpu_.Free(qsa_.k_pool_k);
  (void)gpu_.Free(qsa_.k_norm_w);
  if (stream_ != auxstore::kDefaultStream) (void)gpu_.DestroyStream(stream_);
}

auxstore::Result<SequenceStates> Model::FreshStates() const {
  SequenceStates s;
  s.gpu = &gpu_;
  auto alloc = [&](uint64_t bytes) -> auxstore::Result<auxstore::DevicePtr> {
    AUXSTORE_ASSIGN_OR_RETURN(auxstore::DevicePtr p, gpu_.Alloc(bytes));
    s.buffers.push_back(p);
    return p;
  };
  const auxstore::QsaGeometry& q = qsa_.geometry;
  auxstore::QsaSeqState::Buffers qb;
  qb.raw_keys_bytes = uint64_t{q.max_tokens} * q.hd * 2;
  qb.block_keys_bytes = uint64_t{q.max_tokens / q.ratio} * q.hd * 2;
  AUXSTORE_ASSIGN_OR_RETURN(qb.raw_keys, alloc(qb.raw_keys_bytes));
  AUXSTORE_ASSIGN_OR_RETURN(qb.block_keys, alloc(qb.block_keys_bytes));
  AUXSTORE_ASSIGN_OR_RETURN(s.layers[kQsaLayer], auxstore::QsaSeqState::Borrow(gpu_, qsa_, qb));
  const auxstore::DsaGeometry d = ModelSpec().dsa;
  auxstore::DsaSeqState::Buffers db;
  db.k_normed_bytes = db.gate_bytes = uint64_t{d.capacity} * d.index_head_dim * 2;
  db.valid_bytes = d.capacity;
  AUXSTORE_ASSIGN_OR_RETURN(db.k_normed, alloc(db.k_normed_bytes));
  AUXSTORE_ASSIGN_OR_RETURN(db.gate, alloc(db.gate_bytes));
  AUXSTORE_ASSIGN_OR_RETURN(db.valid, alloc(db.valid_bytes));
  AUXSTORE_ASSIGN_OR_RETURN(s.layers[kDsaLayer], auxstore::DsaSeqState::Borrow(gpu_, d, db));
  AUXSTORE_ASSIGN_OR_RETURN(auxstore::DevicePtr opaque, alloc(kOpaqueCapacity));
  AUXSTORE_ASSIGN_OR_RETURN(s.layers[kOpaqueLayer],
                            auxstore::OpaqueSeqState::Borrow(gpu_, opaque, kOpaqueCapacity));
  return s;
}

}  // namespace tiered
