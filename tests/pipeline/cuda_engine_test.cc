// The engine-fit flow on a real GPU: buffers the engine cudaMalloc'd itself
// (unknown to auxstore's backend), its own non-blocking cudaStream_t for the
// write-behind snapshot's D2H copies and for waiting on restored layers, and
// the pipeline restoring into them. Built with CUDA only; skips without a
// device (tools/gpu_check.sh runs it where one is).
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <random>

#include "auxstore/gpu_pipeline.h"
#include "tests/gpu/gpu_test_util.h"
#include "tests/support/test_util.h"

namespace auxstore {
namespace {

constexpr QsaGeometry kQsa{
    .hd = 128, .max_tokens = 4096, .ratio = 4, .rot = 64, .theta = 10000.0f, .eps = 1e-6f};
constexpr DsaGeometry kDsa{.index_head_dim = 128, .capacity = 4096};
constexpr uint64_t kTokens = 3000;

DevicePtr Malloc(size_t bytes) {
  void* p = nullptr;
  EXPECT_EQ(cudaMalloc(&p, bytes), cudaSuccess);
  return reinterpret_cast<DevicePtr>(p);
}

TEST(CudaEngine, RestoreIntoCudaMallocBuffersOnTheEnginesStream) {
  auto gpu = CreateBackend(BackendKind::kCuda, 0);
  if (!gpu.ok()) GTEST_SKIP() << "no CUDA device: " << gpu.status().ToString();
  testing::TempDir dir;
  Options o;
  o.chunk_bytes = 1u << 20;
  auto store = Store::Open(o, dir.path());
  ASSERT_TRUE(store.ok());
  NamespaceSpec spec;
  spec.model_id = "cuda-engine";
  spec.qsa = kQsa;
  spec.dsa = kDsa;
  const NamespaceId ns = *(*store)->RegisterNamespace(spec);
  PipelineOptions po;
  po.staging_bytes = 1u << 20;
  auto pipe = GpuPipeline::Create(**store, **gpu, po);
  ASSERT_TRUE(pipe.ok());
  cudaStream_t engine = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&engine, cudaStreamNonBlocking), cudaSuccess);
  const StreamHandle stream = reinterpret_cast<StreamHandle>(engine);

  std::mt19937_64 rng(5);
  const auto q = testing::RandomBf16(kQsa.hd, rng, 0.3f), w = testing::RandomBf16(kQsa.hd, rng);
  QsaLayer layer{kQsa, Malloc(kQsa.hd * 2), Malloc(kQsa.hd * 2)};
  ASSERT_EQ(cudaMemcpy(reinterpret_cast<void*>(layer.k_pool_k), q.data(), kQsa.hd * 2,
                       cudaMemcpyHostToDevice),
            cudaSuccess);
  ASSERT_EQ(cudaMemcpy(reinterpret_cast<void*>(layer.k_norm_w), w.data(), kQsa.hd * 2,
                       cudaMemcpyHostToDevice),
            cudaSuccess);
  auto alloc_qsa = [&] {
    QsaSeqState::Buffers b;
    b.raw_keys_bytes = uint64_t{kQsa.max_tokens} * kQsa.hd * 2;
    b.block_keys_bytes = uint64_t{kQsa.max_tokens / kQsa.ratio} * kQsa.hd * 2;
    b.raw_keys = Malloc(b.raw_keys_bytes);
    b.block_keys = Malloc(b.block_keys_bytes);
    return b;
  };
  auto alloc_dsa = [&] {
    DsaSeqState::Buffers b;
    b.k_normed_bytes = b.gate_bytes = uint64_t{kDsa.capacity} * kDsa.index_head_dim * 2;
    b.valid_bytes = kDsa.capacity;
    b.k_normed = Malloc(b.k_normed_bytes);
    b.gate = Malloc(b.gate_bytes);
    b.valid = Malloc(b.valid_bytes);
    return b;
  };

  // The engine's ingest: rows on the device, copied on its stream.
  const auto raw = testing::RandomBf16(kTokens * kQsa.hd, rng);
  const auto kn = testing::RandomBytes(kTokens * kDsa.index_head_dim * 2, 7);
  const auto gt = testing::RandomBytes(kTokens * kDsa.index_head_dim * 2, 8);
  const auto va = testing::RandomBytes(kTokens, 9);
  auto src_q = alloc_qsa();
  auto src_d = alloc_dsa();
  ASSERT_EQ(cudaMemcpyAsync(reinterpret_cast<void*>(src_q.raw_keys), raw.data(), raw.size() * 2,
                            cudaMemcpyHostToDevice, engine),
            cudaSuccess);
  for (auto [dst, v] :
       {std::pair{src_d.k_normed, &kn}, std::pair{src_d.gate, &gt}, std::pair{src_d.valid, &va}}) {
    ASSERT_EQ(cudaMemcpyAsync(reinterpret_cast<void*>(dst), v->data(), v->size(),
                              cudaMemcpyHostToDevice, engine),
              cudaSuccess);
  }
  {
    auto sq = QsaSeqState::Borrow(**gpu, layer, src_q, kTokens, 0);
    auto sd = DsaSeqState::Borrow(**gpu, kDsa, src_d, kTokens);
    ASSERT_TRUE(sq.ok() && sd.ok());
    // Ordered after the ingest copies: the snapshot's D2H runs on `engine`.
    ASSERT_TRUE((*pipe)
                    ->Snapshot(ns, testing::PrefixFromSeed(1), kTokens,
                               {{0, sq->get()}, {1, sd->get()}}, stream)
                    .ok());
    ASSERT_TRUE((*pipe)->Flush().ok());
  }
  auto dst_q = alloc_qsa();
  auto dst_d = alloc_dsa();
  {
    auto tq = QsaSeqState::Borrow(**gpu, layer, dst_q);
    auto td = DsaSeqState::Borrow(**gpu, kDsa, dst_d);
    ASSERT_TRUE(tq.ok() && td.ok());
    auto h =
        (*pipe)->StartRestore(ns, testing::PrefixFromSeed(1), {{0, tq->get()}, {1, td->get()}});
    ASSERT_TRUE(h->StreamWaitAll(stream).ok());
    std::vector<uint16_t> back(raw.size());
    // Enqueued after the device-side wait: sees the restored rows.
    ASSERT_EQ(cudaMemcpyAsync(back.data(), reinterpret_cast<void*>(dst_q.raw_keys), back.size() * 2,
                              cudaMemcpyDeviceToHost, engine),
              cudaSuccess);
    ASSERT_EQ(cudaStreamSynchronize(engine), cudaSuccess);
    EXPECT_EQ(back, raw);
    ASSERT_TRUE(h->Wait().ok());
    EXPECT_EQ((*tq)->ingested(), kTokens);
    EXPECT_EQ((*td)->len(), kTokens);
    std::vector<uint8_t> kn_back(kn.size());
    ASSERT_EQ(cudaMemcpy(kn_back.data(), reinterpret_cast<void*>(dst_d.k_normed), kn.size(),
                         cudaMemcpyDeviceToHost),
              cudaSuccess);
    EXPECT_EQ(kn_back, kn);
  }
  for (DevicePtr p : {src_q.raw_keys, src_q.block_keys, dst_q.raw_keys, dst_q.block_keys,
                      src_d.k_normed, src_d.gate, src_d.valid, dst_d.k_normed, dst_d.gate,
                      dst_d.valid, layer.k_pool_k, layer.k_norm_w}) {
    EXPECT_EQ(cudaFree(reinterpret_cast<void*>(p)), cudaSuccess) << "still the engine's to free";
  }
  pipe->reset();
  EXPECT_EQ(cudaStreamDestroy(engine), cudaSuccess);
}

}  // namespace
}  // namespace auxstore
