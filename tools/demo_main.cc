// auxstore_demo: the end-to-end flow an engine goes through, in two processes.
//
//   auxstore_demo snapshot --store DIR   process 1: builds QSA and DSA states for
//       N layers for several token sequences, snapshots each prefix, exits.
//   auxstore_demo restore --store DIR    process 2 (a restart): for each query,
//       finds the longest stored prefix of its tokens, reads every layer back
//       (checksums verified), checks every byte against the regenerated state,
//       and prints what it did and the throughput.
//
// State contents are a pure function of (sequence, layer), so process 2 can
// check bytes without any channel to process 1 but the store.
#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdio>
#include <random>

#include "auxstore/store.h"

namespace {

using namespace auxstore;
using Clock = std::chrono::steady_clock;

constexpr uint32_t kBlockSize = 256;  // tokens per prefix-hash block
constexpr uint64_t kSalt = 0x5eed;

struct DemoConfig {
  std::string store;
  uint32_t layers = 24;
  uint32_t sequences = 4;
  uint32_t tokens = 4096;  // per sequence
};

NamespaceSpec DemoSpec() {
  NamespaceSpec s;
  s.model_id = "demo-glm5next-qsa";
  s.qsa = {128, 8192, 8, 64, 10000.0f, 1e-6f};
  s.dsa = {128, 8192};
  return s;
}

std::vector<uint32_t> SequenceTokens(uint32_t seq, uint32_t n) {
  std::vector<uint32_t> t(n);
  std::mt19937 rng(seq);
  for (auto& x : t) x = rng() % 150000;
  return t;
}

std::vector<uint8_t> Bytes(size_t n, uint64_t seed) {
  std::vector<uint8_t> v(n);
  std::mt19937_64 rng(seed);
  for (size_t i = 0; i < n; i += 8) {
    uint64_t x = rng();
    for (size_t b = 0; b < 8 && i + b < n; ++b) v[i + b] = static_cast<uint8_t>(x >> (8 * b));
  }
  return v;
}

// The aux blob layer `layer` of sequence `seq` holds after `tokens` tokens:
// even layers QSA, odd layers DSA.
std::vector<uint8_t> LayerState(const NamespaceSpec& s, uint32_t seq, uint32_t layer,
                                uint64_t tokens) {
  const uint64_t seed = (uint64_t{seq} << 40) ^ (uint64_t{layer} << 20) ^ tokens;
  if (layer % 2 == 0) {
    auto keys = Bytes(tokens * s.qsa.hd * 2, seed);
    return EncodeQsaBlob(tokens, tokens / s.qsa.ratio, keys, s.qsa.hd).value();
  }
  const uint64_t kb = tokens * s.dsa.index_head_dim * 2;
  return EncodeDsaBlob(tokens, s.dsa.index_head_dim, Bytes(kb, seed), Bytes(kb, seed + 1),
                       Bytes(tokens, seed + 2))
      .value();
}

double Seconds(Clock::time_point a) {
  return std::chrono::duration<double>(Clock::now() - a).count();
}

int Fail(const Status& s) {
  std::fprintf(stderr, "auxstore_demo: %s\n", s.ToString().c_str());
  return 1;
}

int Snapshot(const DemoConfig& c) {
  auto store = Store::Open(Options(), c.store);
  if (!store.ok()) return Fail(store.status());
  const NamespaceSpec spec = DemoSpec();
  auto ns = (*store)->RegisterNamespace(spec);
  if (!ns.ok()) return Fail(ns.status());
  uint64_t bytes = 0, snapshots = 0;
  const auto t0 = Clock::now();
  for (uint32_t seq = 0; seq < c.sequences; ++seq) {
    const auto tokens = SequenceTokens(seq, c.tokens);
    const auto prefixes = PrefixHashes(tokens, kBlockSize, kSalt);
    // Snapshot every other block boundary, as an engine would at chunk ends.
    for (size_t b = 1; b < prefixes.size(); b += 2) {
      const uint64_t n = (b + 1) * kBlockSize;
      std::vector<std::vector<uint8_t>> blobs;
      std::vector<LayerBlob> layers;
      for (uint32_t l = 0; l < c.layers; ++l) blobs.push_back(LayerState(spec, seq, l, n));
      for (uint32_t l = 0; l < c.layers; ++l)
        layers.push_back({l, l % 2 ? Kind::kDsa : Kind::kQsa, blobs[l]});
      PutOptions put;
      put.token_digest = DigestTokens(std::span(tokens).first(n), kSalt);
      Status s = (*store)->PutSnapshot(*ns, prefixes[b], n, layers, put);
      if (!s.ok()) return Fail(s);
      for (auto& blob : blobs) bytes += blob.size();
      ++snapshots;
    }
  }
  const double secs = Seconds(t0);
  std::printf("snapshot: %llu snapshots, %u layers each (QSA+DSA), %.1f MiB in %.2f s "
              "(%.0f MiB/s, durability sync) -> %s\n",
              (unsigned long long)snapshots, c.layers, bytes / 1048576.0, secs,
              bytes / 1048576.0 / secs, c.store.c_str());
  return 0;
}

int Restore(const DemoConfig& c) {
  Options o;
  auto store = Store::Open(o, c.store);
  if (!store.ok()) return Fail(store.status());
  const NamespaceSpec spec = DemoSpec();
  const NamespaceId ns = NamespaceFingerprint(spec);
  uint64_t bytes = 0, restored = 0, mismatches = 0;
  const auto t0 = Clock::now();
  for (uint32_t seq = 0; seq < c.sequences; ++seq) {
    // The query runs past what was stored: a new turn of the same chat.
    auto tokens = SequenceTokens(seq, c.tokens);
    tokens.push_back(12345);
    auto hit = (*store)->LongestPrefixForTokens(ns, tokens, kBlockSize, kSalt);
    if (!hit.ok()) return Fail(hit.status());
    if (!hit->has_value()) {
      std::printf("query %u: miss\n", seq);
      continue;
    }
    const uint64_t n = (*hit)->tokens;
    for (uint32_t l = 0; l < c.layers; ++l) {
      auto blob = (*store)->GetLayer(ns, (*hit)->prefix, l);
      if (!blob.ok()) return Fail(blob.status());
      bytes += blob->size();
      if (*blob != LayerState(spec, seq, l, n)) ++mismatches;
    }
    ++restored;
    std::printf("query %u: %zu tokens, longest stored prefix %llu tokens, %u layers restored\n",
                seq, tokens.size(), (unsigned long long)n, c.layers);
  }
  const double secs = Seconds(t0);
  std::printf("restore: %llu prefixes, %.1f MiB read and verified in %.2f s (%.0f MiB/s incl. "
              "byte checks), %llu mismatched layers, backend: host (store-level restore)\n",
              (unsigned long long)restored, bytes / 1048576.0, secs, bytes / 1048576.0 / secs,
              (unsigned long long)mismatches);
  return mismatches == 0 && restored == c.sequences ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"auxstore end-to-end demo"};
  app.require_subcommand(1);
  DemoConfig c;
  for (auto* sub : {app.add_subcommand("snapshot", "process 1: snapshot prefixes and exit"),
                    app.add_subcommand("restore", "process 2: restore and check")}) {
    sub->add_option("--store", c.store, "store directory")->required();
    sub->add_option("--layers", c.layers, "layers per snapshot")->check(CLI::Range(1, 1024));
    sub->add_option("--sequences", c.sequences, "token sequences")->check(CLI::Range(1, 1000));
    sub->add_option("--tokens", c.tokens, "tokens per sequence")->check(CLI::Range(512, 8192));
  }
  CLI11_PARSE(app, argc, argv);
  return app.got_subcommand("snapshot") ? Snapshot(c) : Restore(c);
}
