// auxstore_demo: the end-to-end flow an engine goes through, in two processes.
//
//   auxstore_demo snapshot --store DIR   process 1: builds QSA and DSA states for
//       N layers of several token sequences, snapshots every other block
//       boundary of each, and exits.
//   auxstore_demo restore --store DIR    process 2 (a restart): for each query,
//       finds the longest stored prefix of its tokens, restores every layer
//       into fresh sequence states on the backend (CUDA where present, else the
//       host backend) through the GpuPipeline, and checks every byte: raw
//       keys and DSA rows against the regenerated state, QSA block keys
//       against the CPU reference of the re-pool kernel.
#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <cstring>

#include "auxstore/gpu_pipeline.h"
#include "auxstore/store.h"
#include "gpu/qsa_block_pool_ref.h"
#include "tools/demo/demo_states.h"

namespace auxstore::demo {
namespace {

using Clock = std::chrono::steady_clock;

constexpr uint32_t kBlockSize = 256;  // tokens per prefix-hash block
constexpr uint64_t kSalt = 0x5eed;

struct Config {
  std::string store;
  uint32_t layers = 24;
  uint32_t sequences = 4;
  uint32_t tokens = 4096;  // per sequence
};

double Seconds(Clock::time_point a) {
  return std::chrono::duration<double>(Clock::now() - a).count();
}

int Fail(const Status& s) {
  std::fprintf(stderr, "auxstore_demo: %s\n", s.ToString().c_str());
  return 1;
}

int Snapshot(const Config& c) {
  auto store = Store::Open(Options(), c.store);
  if (!store.ok()) return Fail(store.status());
  const NamespaceSpec spec = DemoSpec();
  auto ns = (*store)->RegisterNamespace(spec);
  if (!ns.ok()) return Fail(ns.status());
  uint64_t bytes = 0, snapshots = 0;
  double put_seconds = 0;
  for (uint32_t seq = 0; seq < c.sequences; ++seq) {
    const auto tokens = SequenceTokens(seq, c.tokens);
    const auto prefixes = PrefixHashes(tokens, kBlockSize, kSalt);
    for (size_t b = 1; b < prefixes.size(); b += 2) {
      const uint64_t n = (b + 1) * kBlockSize;
      std::vector<std::vector<uint8_t>> blobs;
      std::vector<LayerBlob> layers;
      for (uint32_t l = 0; l < c.layers; ++l) blobs.push_back(LayerBlobBytes(spec, seq, l, n));
      for (uint32_t l = 0; l < c.layers; ++l)
        layers.push_back({l, IsQsaLayer(l) ? Kind::kQsa : Kind::kDsa, blobs[l]});
      PutOptions put;
      put.token_digest = DigestTokens(std::span(tokens).first(n), kSalt);
      // The chain up to this snapshot: rows of blocks an earlier snapshot
      // of the sequence stored are shared, not written again.
      put.block_chain = std::span(prefixes).first(b + 1);
      put.block_size = kBlockSize;
      const auto t0 = Clock::now();
      Status s = (*store)->PutSnapshot(*ns, prefixes[b], n, layers, put);
      put_seconds += Seconds(t0);
      if (!s.ok()) return Fail(s);
      for (auto& blob : blobs) bytes += blob.size();
      ++snapshots;
    }
  }
  const StoreStats st = (*store)->Stats();
  std::printf(
      "process 1: %llu snapshots x %u layers (QSA + DSA), %.1f MiB of layers put durably "
      "(sync) in %.2f s = %.0f MiB/s; %.1f MiB stored (pages shared between a sequence's "
      "snapshots) -> %s\n",
      (unsigned long long)snapshots, c.layers, bytes / 1048576.0, put_seconds,
      bytes / 1048576.0 / put_seconds, st.bytes_written / 1048576.0, c.store.c_str());
  return 0;
}

// Device copies of each QSA layer's weights.
struct Weights {
  std::vector<DevicePtr> k_pool_k, k_norm_w;
};

Result<Weights> UploadWeights(GpuBackend& gpu, const NamespaceSpec& spec, uint32_t layers) {
  Weights w;
  for (uint32_t l = 0; l < layers; ++l) {
    for (auto [values, out] :
         {std::pair{KPoolK(spec, l), &w.k_pool_k}, std::pair{KNormW(spec, l), &w.k_norm_w}}) {
      AUXSTORE_ASSIGN_OR_RETURN(DevicePtr p, gpu.Alloc(values.size() * 2));
      AUXSTORE_RETURN_IF_ERROR(
          gpu.CopyH2DAsync({reinterpret_cast<const uint8_t*>(values.data()), values.size() * 2}, p,
                           0, kDefaultStream));
      AUXSTORE_RETURN_IF_ERROR(gpu.Synchronize(kDefaultStream));
      out->push_back(p);
    }
  }
  return w;
}

std::vector<uint8_t> ReadBack(GpuBackend& gpu, DevicePtr p, size_t bytes) {
  std::vector<uint8_t> out(bytes);
  if (bytes && !gpu.CopyD2HOnStream(p, 0, out, kDefaultStream).ok()) out.clear();
  return out;
}

// Checks one restored layer against what process 1 stored; counts bad bytes.
uint64_t CheckLayer(GpuBackend& gpu, const NamespaceSpec& spec, SeqState& st,
                    const std::vector<uint8_t>& expected, uint32_t layer) {
  if (auto* dsa = dynamic_cast<DsaSeqState*>(&st)) {
    auto blob = dsa->Snapshot(kDefaultStream);
    return blob.ok() && *blob == expected ? 0 : 1;
  }
  auto& qsa = dynamic_cast<QsaSeqState&>(st);
  const QsaGeometry& g = spec.qsa;
  auto view = DecodeQsaBlob(expected, g).value();
  if (qsa.ingested() != view.header.ingested || qsa.pooled() != view.header.pooled) return 1;
  auto raw = ReadBack(gpu, qsa.raw_keys(), view.raw_keys.size());
  if (!std::equal(raw.begin(), raw.end(), view.raw_keys.begin(), view.raw_keys.end())) return 1;
  // Block keys: the device's re-pool against the CPU reference on the same input.
  const size_t block_bytes = view.header.pooled * g.hd * 2;
  auto blocks = ReadBack(gpu, qsa.block_keys(), block_bytes);
  std::vector<uint16_t> raw16(view.raw_keys.size() / 2), want(view.header.pooled * g.hd);
  std::memcpy(raw16.data(), view.raw_keys.data(), view.raw_keys.size());
  QsaBlockPoolArgs a;
  a.ingested = view.header.ingested;
  a.n = static_cast<uint32_t>(view.header.pooled);
  a.ratio = g.ratio;
  a.hd = g.hd;
  a.rot = g.rot;
  a.theta = g.theta;
  a.eps = g.eps;
  if (a.n > 0 &&
      !gpu::QsaBlockPoolReference(a, raw16, KPoolK(spec, layer), KNormW(spec, layer), want).ok()) {
    return 1;
  }
  return blocks.size() == block_bytes && std::memcmp(blocks.data(), want.data(), block_bytes) == 0
             ? 0
             : 1;
}

int Restore(const Config& c) {
  auto store = Store::Open(Options(), c.store);
  if (!store.ok()) return Fail(store.status());
  auto gpu = CreateBackend(BackendKind::kAuto);
  if (!gpu.ok()) return Fail(gpu.status());
  auto pipeline = GpuPipeline::Create(**store, **gpu);
  if (!pipeline.ok()) return Fail(pipeline.status());
  const NamespaceSpec spec = DemoSpec();
  const NamespaceId ns = NamespaceFingerprint(spec);
  auto weights = UploadWeights(**gpu, spec, c.layers);
  if (!weights.ok()) return Fail(weights.status());
  std::printf("process 2: backend %.*s\n", static_cast<int>((*gpu)->name().size()),
              (*gpu)->name().data());

  uint64_t bytes = 0, restored = 0, bad_layers = 0;
  double restore_seconds = 0;
  for (uint32_t seq = 0; seq < c.sequences; ++seq) {
    auto tokens = SequenceTokens(seq, c.tokens);
    tokens.push_back(12345);  // the query runs past what was stored: a new turn
    auto hit = (*store)->LongestPrefixForTokens(ns, tokens, kBlockSize, kSalt);
    if (!hit.ok()) return Fail(hit.status());
    if (!hit->has_value()) {
      std::printf("  query %u: miss\n", seq);
      continue;
    }
    const uint64_t n = (*hit)->tokens;
    std::vector<std::unique_ptr<SeqState>> states;
    RestoreTargets targets;
    for (uint32_t l = 0; l < c.layers; ++l) {
      std::unique_ptr<SeqState> st;
      if (IsQsaLayer(l)) {
        auto q = QsaSeqState::Create(**gpu, {spec.qsa, weights->k_pool_k[l], weights->k_norm_w[l]});
        if (!q.ok()) return Fail(q.status());
        st = std::move(*q);
      } else {
        auto d = DsaSeqState::Create(**gpu, spec.dsa);
        if (!d.ok()) return Fail(d.status());
        st = std::move(*d);
      }
      targets[l] = st.get();
      states.push_back(std::move(st));
    }
    const auto t0 = Clock::now();
    Status s = (*pipeline)->Restore(ns, (*hit)->prefix, targets, kDefaultStream).get();
    restore_seconds += Seconds(t0);
    if (!s.ok()) return Fail(s);
    uint64_t bad = 0;
    for (uint32_t l = 0; l < c.layers; ++l) {
      auto expected = LayerBlobBytes(spec, seq, l, n);
      bytes += expected.size();
      bad += CheckLayer(**gpu, spec, *states[l], expected, l);
      (void)states[l]->Release();
    }
    bad_layers += bad;
    ++restored;
    std::printf(
        "  query %u: %zu tokens -> longest stored prefix %llu tokens; %u layers restored, "
        "%llu mismatched\n",
        seq, tokens.size(), (unsigned long long)n, c.layers, (unsigned long long)bad);
  }
  std::printf(
      "process 2: %llu restores, %.1f MiB in %.3f s = %.0f MiB/s through the pipeline "
      "(read + verify + stage + upload + re-pool); %llu mismatched layers\n",
      (unsigned long long)restored, bytes / 1048576.0, restore_seconds,
      bytes / 1048576.0 / restore_seconds, (unsigned long long)bad_layers);
  return bad_layers == 0 && restored == c.sequences ? 0 : 1;
}

}  // namespace
}  // namespace auxstore::demo

int main(int argc, char** argv) {
  CLI::App app{"auxstore end-to-end demo"};
  app.require_subcommand(1);
  auxstore::demo::Config c;
  for (auto* sub : {app.add_subcommand("snapshot", "process 1: snapshot prefixes and exit"),
                    app.add_subcommand("restore", "process 2: restore and check every byte")}) {
    sub->add_option("--store", c.store, "store directory")->required();
    sub->add_option("--layers", c.layers, "layers per snapshot")->check(CLI::Range(1, 1024));
    sub->add_option("--sequences", c.sequences, "token sequences")->check(CLI::Range(1, 1000));
    sub->add_option("--tokens", c.tokens, "tokens per sequence")->check(CLI::Range(512, 8192));
  }
  CLI11_PARSE(app, argc, argv);
  return app.got_subcommand("snapshot") ? auxstore::demo::Snapshot(c) : auxstore::demo::Restore(c);
}
