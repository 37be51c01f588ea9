// A store in a temp dir, a host backend (wrapped for fault injection), QSA
// layer weights, and helpers that build filled source states and fresh
// targets, for the pipeline tests.
#pragma once

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <random>
#include <vector>

#include "auxstore/gpu_pipeline.h"
#include "auxstore/seq_state.h"
#include "gpu/host_backend.h"
#include "tests/gpu/faulty_backend.h"
#include "tests/gpu/gpu_test_util.h"
#include "tests/pipeline/forwarding_store.h"
#include "tests/support/test_util.h"

namespace auxstore::testing {

inline NamespaceSpec PipelineSpec() {
  NamespaceSpec s;
  s.model_id = "pipeline-test";
  s.qsa = {64, 512, 8, 32, 10000.0f, 1e-6f};
  s.dsa = {32, 300};
  return s;
}

// The states of one sequence: QSA layers 0 and 5, DSA layer 1, opaque layer 2.
struct Sequence {
  std::map<uint32_t, std::unique_ptr<SeqState>> layers;

  RestoreTargets targets() const {
    RestoreTargets t;
    for (auto& [i, s] : layers) t[i] = s.get();
    return t;
  }
  SnapshotSources sources() const {
    SnapshotSources t;
    for (auto& [i, s] : layers) t[i] = s.get();
    return t;
  }
  bool all_fresh() const {
    for (auto& [i, s] : layers)
      if (!s->fresh()) return false;
    return true;
  }
};

class PipelineFixture : public ::testing::Test {
 protected:
  void SetUp() override {
    Options o;
    o.chunk_bytes = 4096;  // many chunks per layer
    auto s = Store::Open(o, dir_.path());
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    real_store_ = std::move(*s);
    store_ = std::make_unique<ForwardingStore>(*real_store_);
    ns_ = store_->RegisterNamespace(PipelineSpec()).value();
    std::mt19937_64 rng(99);
    q_ = RandomBf16(64, rng, 0.3f);
    w_ = RandomBf16(64, rng);
    layer_ = {PipelineSpec().qsa, Upload(host_, AsBytes(q_)), Upload(host_, AsBytes(w_))};
    auto st = gpu_.CreateStream();
    ASSERT_TRUE(st.ok());
    stream_ = *st;
  }

  std::unique_ptr<GpuPipeline> MakePipeline(PipelineOptions o = {}) {
    if (o.staging_bytes == PipelineOptions{}.staging_bytes) {
      o.staging_buffers = 3;
      o.staging_bytes = 4096;
      o.snapshot_bytes = 1 << 20;
      o.snapshot_queue = 4;
    }
    auto p = GpuPipeline::Create(*store_, gpu_, o);
    EXPECT_TRUE(p.ok()) << p.status().ToString();
    return p.ok() ? std::move(*p) : nullptr;
  }

  Sequence Fresh() {
    Sequence s;
    s.layers[0] = std::move(QsaSeqState::Create(gpu_, layer_).value());
    s.layers[1] = std::move(DsaSeqState::Create(gpu_, PipelineSpec().dsa).value());
    s.layers[2] = std::move(OpaqueSeqState::Create(gpu_, 6000).value());
    s.layers[5] = std::move(QsaSeqState::Create(gpu_, layer_).value());
    return s;
  }

  // A sequence as the engine leaves it: data on the device, counters set.
  Sequence Filled(uint64_t seed, uint64_t qsa_tokens = 301) {
    Sequence s = Fresh();
    std::mt19937_64 rng(seed);
    auto* qsa = static_cast<QsaSeqState*>(s.layers[0].get());
    auto raw = RandomBf16(qsa_tokens * 64, rng);
    EXPECT_TRUE(gpu_.CopyH2DAsync(AsBytes(raw), qsa->raw_keys(), 0, kDefaultStream).ok());
    const uint64_t pooled = qsa_tokens / 8;
    if (pooled > 0) {
      EXPECT_TRUE(
          gpu_.QsaBlockPool({qsa->raw_keys(), layer_.k_pool_k, layer_.k_norm_w, qsa->block_keys(),
                             qsa_tokens, 0, uint32_t(pooled), 8, 64, 32, 10000.0f, 1e-6f},
                            kDefaultStream)
              .ok());
    }
    EXPECT_TRUE(qsa->SetCounters(qsa_tokens, pooled).ok());
    auto* dsa = static_cast<DsaSeqState*>(s.layers[1].get());
    const uint64_t len = 100 + seed % 50;
    // Copy sources stay alive until the Synchronize below (async copies).
    std::vector<std::vector<uint8_t>> sources;
    auto upload = [&](std::vector<uint8_t> bytes, DevicePtr to) {
      sources.push_back(std::move(bytes));
      EXPECT_TRUE(gpu_.CopyH2DAsync(sources.back(), to, 0, kDefaultStream).ok());
    };
    sources.reserve(4);  // no reallocation moves a buffer a copy still reads
    for (DevicePtr p : {dsa->k_normed(), dsa->gate()}) upload(RandomBytes(len * 64, rng), p);
    upload(RandomBytes(len, rng), dsa->valid());
    EXPECT_TRUE(dsa->SetLen(len).ok());
    auto* opaque = static_cast<OpaqueSeqState*>(s.layers[2].get());
    upload(RandomBytes(5000, rng), opaque->buffer());
    EXPECT_TRUE(opaque->SetSize(5000).ok());
    EXPECT_TRUE(gpu_.Synchronize(kDefaultStream).ok());  // layer 5 stays empty
    return s;
  }

  // Every layer's blob and (QSA) block keys equal.
  void ExpectSame(const Sequence& a, const Sequence& b) {
    for (auto& [i, sa] : a.layers) {
      const SeqState& sb = *b.layers.at(i);
      auto ba = sa->Snapshot(kDefaultStream), bb = sb.Snapshot(kDefaultStream);
      ASSERT_TRUE(ba.ok() && bb.ok());
      EXPECT_EQ(*ba, *bb) << "layer " << i;
      if (sa->kind() == Kind::kQsa) {
        auto& qa = static_cast<const QsaSeqState&>(*sa);
        auto& qb = static_cast<const QsaSeqState&>(sb);
        EXPECT_EQ(qa.pooled(), qb.pooled());
        if (qa.pooled() > 0) {
          EXPECT_EQ(Download16(host_, qa.block_keys(), qa.pooled() * 64),
                    Download16(host_, qb.block_keys(), qb.pooled() * 64))
              << "re-pooled block keys of layer " << i;
        }
      }
    }
  }

  TempDir dir_;
  std::unique_ptr<Store> real_store_;
  std::unique_ptr<ForwardingStore> store_;
  NamespaceId ns_ = 0;
  gpu::HostBackend host_{gpu::HostBackendOptions{.op_delay = std::chrono::microseconds(20)}};
  FaultyBackend gpu_{host_};
  std::vector<uint16_t> q_, w_;
  QsaLayer layer_;
  StreamHandle stream_ = 0;
};

}  // namespace auxstore::testing
