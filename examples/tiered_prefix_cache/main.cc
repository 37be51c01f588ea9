// tiered_prefix_cache: a runnable demo of an engine-side LRU prefix cache
// with auxstore as its persistent tier.
//
//   populate: prefill N synthetic sequences into a memory tier of M entries;
//             the N-M evicted ones are written behind to the store. Prints
//             "persisted <seq> <tokens> <prefix>" per stored sequence, then
//             "ready"; with --hold it then waits to be killed.
//   query:    a new process looks every sequence up (each extended by a new
//             turn's tokens): "lookup <seq> <tier> <tokens> exact=<0|1>",
//             exact = the restored states equal a fresh prefill bit for bit.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "auxstore/gpu_backend.h"
#include "auxstore/gpu_pipeline.h"
#include "auxstore/store.h"
#include "model.h"
#include "synthetic_prefill.h"
#include "tiered_cache.h"

namespace {

using tiered::kBlockTokens;

// Sequence `i`: 2..16 blocks of tokens, fixed by i.
std::vector<uint32_t> SequenceTokens(uint32_t i) {
  std::mt19937 rng(1000 + i);
  const uint32_t blocks = 2 + rng() % 15;
  std::vector<uint32_t> tokens(blocks * kBlockTokens);
  for (auto& t : tokens) t = rng() % 50000;
  return tokens;
}

// The same sequence followed by a new turn (not a whole block).
std::vector<uint32_t> ExtendedTokens(uint32_t i) {
  std::vector<uint32_t> tokens = SequenceTokens(i);
  for (uint32_t k = 0; k < kBlockTokens + 5; ++k) tokens.push_back(60000 + i * 31 + k);
  return tokens;
}

int Fail(const std::string& what, const auxstore::Status& st) {
  std::fprintf(stderr, "tiered_prefix_cache: %s: %s\n", what.c_str(), st.ToString().c_str());
  return 1;
}

int Populate(tiered::TieredPrefixCache& cache, const tiered::Model& model, uint32_t sequences,
             bool hold) {
  std::map<auxstore::Prefix, uint32_t> seq_of;
  for (uint32_t i = 0; i < sequences; ++i) {
    const std::vector<uint32_t> tokens = SequenceTokens(i);
    seq_of[auxstore::PrefixHashes(tokens, kBlockTokens, tiered::kSalt).back()] = i;
    auto found = cache.Lookup(tokens);
    if (!found.ok()) return Fail("lookup", found.status());
    if (found->tier != tiered::Tier::kMiss) continue;  // e.g. a rerun on a used store
    auto states = tiered::Prefill(model, tokens);
    if (!states.ok()) return Fail("prefill", states.status());
    if (auto st = cache.Insert(tokens, std::move(*states)); !st.ok()) return Fail("insert", st);
  }
  if (auto st = cache.FlushWriteBehind(); !st.ok()) return Fail("write-behind", st);
  for (const auxstore::Prefix& p : cache.TakeWrittenBehind()) {
    const uint32_t i = seq_of.at(p);
    std::printf("persisted %u %zu %s\n", i, SequenceTokens(i).size(), p.ToHex().c_str());
  }
  std::printf("ready\n");
  std::fflush(stdout);
  while (hold) pause();  // the memory tier dies with the process; the store does not
  return 0;
}

int Query(tiered::TieredPrefixCache& cache, const tiered::Model& model, uint32_t sequences) {
  int last_store_hit = -1;
  for (uint32_t i = 0; i < sequences; ++i) {
    const std::vector<uint32_t> tokens = ExtendedTokens(i);
    auto found = cache.Lookup(tokens);
    if (!found.ok()) return Fail("lookup", found.status());
    int exact = 0;
    if (found->tier != tiered::Tier::kMiss) {
      const std::span<const uint32_t> covered(tokens.data(), found->tokens);
      const auxstore::Status same = tiered::CheckSameAsPrefill(model, *found->states, covered);
      if (!same.ok()) std::fprintf(stderr, "sequence %u: %s\n", i, same.ToString().c_str());
      exact = same.ok() ? 1 : 0;
      if (found->tier == tiered::Tier::kStore) last_store_hit = static_cast<int>(i);
    }
    std::printf("lookup %u %s %llu exact=%d\n", i, tiered::TierName(found->tier),
                static_cast<unsigned long long>(found->tokens), exact);
  }
  if (last_store_hit >= 0) {  // promoted: now served from memory
    auto again = cache.Lookup(ExtendedTokens(static_cast<uint32_t>(last_store_hit)));
    if (!again.ok()) return Fail("lookup", again.status());
    std::printf("again %d %s\n", last_store_hit, tiered::TierName(again->tier));
  }
  const tiered::CacheStats& s = cache.stats();
  std::printf(
      "stats memory_hits=%llu store_hits=%llu misses=%llu restore_failures=%llu "
      "layers_streamed=%llu\n",
      static_cast<unsigned long long>(s.memory_hits), static_cast<unsigned long long>(s.store_hits),
      static_cast<unsigned long long>(s.misses),
      static_cast<unsigned long long>(s.restore_failures),
      static_cast<unsigned long long>(s.layers_streamed));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"tiered prefix cache over auxstore"};
  std::string mode, dir;
  uint32_t sequences = 12;
  size_t memory = 4;
  bool hold = false, sync = false;
  app.add_option("mode", mode, "populate | query")
      ->required()
      ->check(CLI::IsMember({"populate", "query"}));
  app.add_option("--store", dir, "store directory")->required();
  app.add_option("--sequences", sequences, "synthetic sequences")->check(CLI::Range(1u, 1000u));
  app.add_option("--memory", memory, "sequences the memory tier holds")
      ->check(CLI::Range(size_t{1}, size_t{1000}));
  app.add_flag("--hold", hold, "populate: wait to be killed after printing ready");
  app.add_flag("--sync", sync, "write snapshots with power-loss durability (default: async)");
  CLI11_PARSE(app, argc, argv);

  auxstore::Options options;
  options.durability = sync ? auxstore::Durability::kSync : auxstore::Durability::kAsync;
  auto store = auxstore::Store::Open(options, dir);
  if (!store.ok()) return Fail("open " + dir, store.status());
  auto ns = (*store)->RegisterNamespace(tiered::ModelSpec());
  if (!ns.ok()) return Fail("register namespace", ns.status());
  auto gpu = auxstore::CreateBackend(auxstore::BackendKind::kAuto);
  if (!gpu.ok()) return Fail("backend", gpu.status());
  auto model = tiered::Model::Create(**gpu);
  if (!model.ok()) return Fail("model", model.status());
  auto pipeline = auxstore::GpuPipeline::Create(**store, **gpu);
  if (!pipeline.ok()) return Fail("pipeline", pipeline.status());
  std::fprintf(stderr, "tiered_prefix_cache: backend %s\n", std::string((*gpu)->name()).c_str());

  int rc = 0;
  {
    tiered::TieredPrefixCache cache(**store, **pipeline, **model, *ns, memory);
    rc = mode == "populate" ? Populate(cache, **model, sequences, hold)
                            : Query(cache, **model, sequences);
  }
  return rc;
}
