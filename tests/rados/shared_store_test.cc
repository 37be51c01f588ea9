// The store on a shared pool (Options::shared, store/shared): processes with
// separate local directories share one RADOS pool; every one restores what
// any stored, byte-exact, and the pool stays whole through concurrent puts,
// erases under another node's lease and writers killed with SIGKILL.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <future>
#include <mutex>
#include <random>
#include <set>
#include <thread>

#include "auxstore/log.h"
#include "auxstore/metrics.h"
#include "store/rados/object_names.h"
#include "store/rados/rados_reclaim.h"
#include "tests/rados/rados_test_env.h"
#include "tests/rados/shared_pool_fixture.h"
#include "tests/rados/shared_test_env.h"
#include "tests/support/cycles.h"
#include "tests/support/frozen_fs.h"
#include "tests/support/tmpfs.h"

namespace auxstore::sharedtest {
namespace {

using namespace std::chrono_literals;
using testing::TempDir;

// `bytes` (a multiple of 8) of xorshift from `seed`: a distinct multi-MiB
// layer per seed.
std::vector<uint8_t> RandomLayer(uint64_t seed, size_t bytes) {
  std::vector<uint8_t> out(bytes);
  uint64_t x = 0xD1B54A32D192ED03ull * seed;
  auto* words = reinterpret_cast<uint64_t*>(out.data());
  for (size_t w = 0; w < bytes / 8; ++w) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    words[w] = x;
  }
  return out;
}

// `snapshots` snapshots of `layers` opaque layers of `bytes` each, put
// through `store`: layer l of snapshot s is RandomLayer(seed + s * layers +
// l), its prefix (tag, s + 1, 0...). Their prefixes; empty on a failure
// (reported).
std::vector<Prefix> PutRandomSnapshots(Store& store, NamespaceId ns, uint8_t tag, size_t snapshots,
                                       uint32_t layers, size_t bytes, uint64_t seed) {
  std::vector<Prefix> prefixes(snapshots);
  for (size_t s = 0; s < snapshots; ++s) {
    prefixes[s].bytes[0] = tag;
    prefixes[s].bytes[1] = static_cast<uint8_t>(s + 1);
    std::vector<std::vector<uint8_t>> data;
    std::vector<LayerBlob> blobs;
    for (uint32_t l = 0; l < layers; ++l) data.push_back(RandomLayer(seed + s * layers + l, bytes));
    for (uint32_t l = 0; l < layers; ++l) blobs.push_back({l, Kind::kOpaque, data[l]});
    const Status st = store.PutSnapshot(ns, prefixes[s], 1, blobs, PutOptions{});
    if (!st.ok()) {
      ADD_FAILURE() << "snapshot " << s << ": " << st.ToString();
      return {};
    }
  }
  return prefixes;
}

// This process's resident memory (VmRSS).
uint64_t ResidentBytes() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stoull(line.substr(6)) * 1024;
  }
  return 0;
}

class SharedStoreTest : public SharedPoolTest {
 protected:
  std::unique_ptr<Store> Open(const std::string& dir, SharedWrite mode = SharedWrite::kThrough) {
    auto s = OpenShared(dir, uri_, mode);
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    return s.ok() ? std::move(s).value() : nullptr;
  }

  // A store in `dir` with conv's namespace registered (in *ns); null on a
  // failure (reported).
  std::unique_ptr<Store> OpenRegistered(const Conversation& conv, const std::string& dir,
                                        NamespaceId* ns) {
    auto store = Open(dir);
    if (!store) return nullptr;
    auto id = store->RegisterNamespace(conv.spec());
    EXPECT_TRUE(id.ok()) << id.status().ToString();
    if (!id.ok()) return nullptr;
    *ns = *id;
    return store;
  }

  // A store in `dir` that put conv's snapshot of n tokens (namespace in
  // *ns); null on a failure (reported).
  std::unique_ptr<Store> OpenWithSnapshot(const Conversation& conv, const std::string& dir,
                                          NamespaceId* ns, uint64_t n) {
    auto store = OpenRegistered(conv, dir, ns);
    if (!store) return nullptr;
    const Status st = conv.Put(*store, *ns, n);
    EXPECT_TRUE(st.ok()) << n << ": " << st.ToString();
    return st.ok() ? std::move(store) : nullptr;
  }

  // The pool's page objects, by name.
  std::set<std::string> PageObjects() {
    std::set<std::string> pages;
    for (auto it = conn_->io().nobjects_begin(); it != conn_->io().nobjects_end(); ++it)
      if (it->get_oid().starts_with("page.")) pages.insert(it->get_oid());
    return pages;
  }

  // A raw write over `object`, behind every store's back.
  void Overwrite(const std::string& object, const std::string& bytes) {
    librados::bufferlist bl;
    bl.append(bytes);
    ASSERT_EQ(conn_->io().write_full(object, bl), 0) << object;
  }

  // A chained put of conv's snapshot of n tokens whose DSA blob is a byte
  // short (a put every store refuses): its status.
  static Status PutShortDsa(Store& store, const Conversation& conv, NamespaceId ns, uint64_t n) {
    auto blobs = conv.Blobs(n);
    blobs[1].pop_back();
    const std::vector<LayerBlob> layers{
        {0, Kind::kQsa, blobs[0]}, {1, Kind::kDsa, blobs[1]}, {2, Kind::kOpaque, blobs[2]}};
    const auto chain = conv.Chain(n);
    PutOptions o;
    o.block_chain = chain;
    o.block_size = kBlock;
    return store.PutSnapshot(ns, conv.PrefixOf(n), n, layers, o);
  }

  // A store in `dir` that put conv's chained snapshots of 128, 256 and 384
  // tokens (namespace in *ns); null on a failure (reported).
  std::unique_ptr<Store> OpenWithChain(const Conversation& conv, const std::string& dir,
                                       NamespaceId* ns) {
    auto store = OpenRegistered(conv, dir, ns);
    if (!store) return nullptr;
    for (uint64_t n : {128, 256, 384}) {
      const Status st = conv.Put(*store, *ns, n);
      EXPECT_TRUE(st.ok()) << n << ": " << st.ToString();
      if (!st.ok()) return nullptr;
    }
    return store;
  }
};

TEST_F(SharedStoreTest, AnotherProcessRestoresChainedSnapshotsByteExactAndStoresNothingNew) {
  const Conversation conv(11);
  NamespaceId ns = 0;
  auto a = OpenWithChain(conv, tmp_.Sub("a"), &ns);
  ASSERT_TRUE(a);
  const StoreStats sa = a->Stats();
  EXPECT_TRUE(sa.shared);
  EXPECT_EQ(sa.shared_uploads, 3u);
  // The same counters in the Prometheus text.
  std::string metrics;
  AppendStoreMetrics(sa, "", &metrics);
  EXPECT_NE(metrics.find("auxstore_shared_uploads_total 3\n"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("auxstore_shared_pages_total{result=\"present\"} " +
                         std::to_string(sa.shared_pages_present) + "\n"),
            std::string::npos)
      << metrics;
  // 256 and 384 start with the pages 128 stored: chained snapshots name the
  // same page objects.
  EXPECT_GT(sa.shared_pages_present, 0u);
  const size_t objects = Objects();

  Child b = Child::Spawn({"restore", uri_, tmp_.Sub("b"), "11", "512"});
  EXPECT_EQ(b.Line(), "longest 384");
  EXPECT_EQ(b.Line(), "exact");
  const std::string stored = b.Line();
  EXPECT_TRUE(stored.starts_with("stored 0 present ")) << stored;
  EXPECT_EQ(b.Wait(), 0);
  EXPECT_EQ(Objects(), objects) << "B's put of the same snapshot stored something new";
  std::printf("MEASURED chained puts: %zu objects, A created %lu pages and found %lu stored\n",
              objects, static_cast<unsigned long>(sa.shared_pages_stored),
              static_cast<unsigned long>(sa.shared_pages_present));
}

// A kThrough put sends its pages while the local store commits it: what it
// sent is what its record names (no page left unnamed), and a put the local
// store refuses sends nothing.
TEST_F(SharedStoreTest, PutsSendOnlyPagesTheirRecordsNameAndARefusedPutSendsNothing) {
  const Conversation conv(12);
  NamespaceId ns = 0;
  auto a = OpenWithChain(conv, tmp_.Sub("a"), &ns);
  ASSERT_TRUE(a);
  rados::RadosReclaim reclaim(*conn_);
  const auto grace = std::chrono::seconds(3 * kOpTimeoutMs / 1000);
  auto listing = reclaim.ListReclaimable(grace);
  ASSERT_TRUE(listing.ok()) << listing.status().ToString();
  EXPECT_EQ(listing->manifests, 3u);
  EXPECT_GT(listing->pages, 0u);
  EXPECT_EQ(listing->named, listing->pages) << "pages sent that no record names";
  const auto before = PageObjects();
  EXPECT_FALSE(PutShortDsa(*a, conv, ns, 448).ok());
  EXPECT_EQ(PageObjects(), before) << "a refused put sent pages";
  auto b = Open(tmp_.Sub("b"));
  ASSERT_TRUE(b);
  for (uint64_t n : {128, 256, 384}) EXPECT_TRUE(conv.Check(*b, ns, n).ok()) << n;
}

// A lookup that restores from the pool answers once the pages are read and
// checked, and writes the local copy behind: reads meanwhile are exact, with
// the same errors; every other call sees the copy written; an erase right
// after the lookup is not undone by the copy; closing the store writes it.
TEST_F(SharedStoreTest, ALookupAnswersBeforeItsLocalCopyIsWrittenAndEveryCallSeesTheSnapshot) {
  const Conversation conv(13);
  NamespaceId ns = 0;
  auto a = OpenWithChain(conv, tmp_.Sub("a"), &ns);
  ASSERT_TRUE(a);
  const auto chain = conv.Chain(384);
  {
    auto b = Open(tmp_.Sub("b"));
    ASSERT_TRUE(b);
    auto found = b->LongestPrefix(ns, chain);
    ASSERT_TRUE(found.ok()) << found.status().ToString();
    ASSERT_EQ(*found, std::optional<size_t>(chain.size() - 1));
    const auto blobs = conv.Blobs(384);
    std::vector<std::vector<uint8_t>> got(blobs.size());
    std::vector<Store::LayerInto> into;
    for (uint32_t l = 0; l < blobs.size(); ++l) {
      got[l].resize(blobs[l].size());
      into.push_back({l, got[l]});
    }
    std::vector<uint8_t> small(blobs[0].size() - 1);
    into.push_back({0, small});
    into.push_back({9, small});
    EXPECT_FALSE(b->ReadLayersInto(ns, conv.PrefixOf(384), into).ok());
    for (uint32_t l = 0; l < blobs.size(); ++l) {
      EXPECT_TRUE(into[l].status.ok()) << l << ": " << into[l].status.ToString();
      EXPECT_EQ(into[l].bytes, blobs[l].size());
      EXPECT_TRUE(got[l] == blobs[l]) << "layer " << l;
    }
    EXPECT_EQ(into[3].status.code(), StatusCode::kOutOfRange) << into[3].status.ToString();
    EXPECT_EQ(into[4].status.code(), StatusCode::kNotFound) << into[4].status.ToString();
    auto m = b->GetManifest(ns, conv.PrefixOf(384));  // the local copy's
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    EXPECT_EQ(m->token_count, 384u);
    EXPECT_TRUE(conv.Check(*b, ns, 384).ok());
    EXPECT_EQ(b->Stats().shared_restores, 1u);

    // Restored by a lookup and erased at once: the copy behind does not bring
    // it back. A 64 MiB snapshot restored first keeps its copy queued ahead.
    const std::vector<uint8_t> big = testing::RandomBytes(64u << 20, 13);
    const Prefix big_prefix = testing::PrefixFromSeed(13);
    const LayerBlob big_layer[] = {{0, Kind::kOpaque, big}};
    ASSERT_TRUE(a->PutSnapshot(ns, big_prefix, 1, big_layer, PutOptions{}).ok());
    auto c = Open(tmp_.Sub("c"));
    ASSERT_TRUE(c);
    auto big_found = c->LongestPrefix(ns, std::span(&big_prefix, 1));
    ASSERT_TRUE(big_found.ok() && *big_found == std::optional<size_t>(0));
    const auto short_chain = conv.Chain(256);
    auto again = c->LongestPrefix(ns, short_chain);
    ASSERT_TRUE(again.ok() && *again == std::optional<size_t>(short_chain.size() - 1));
    ASSERT_TRUE(c->Erase(ns, conv.PrefixOf(256)).ok());
    const Prefix erased[] = {conv.PrefixOf(256)};
    auto gone = c->GetManifests(ns, erased);
    ASSERT_TRUE(gone.ok()) << gone.status().ToString();
    EXPECT_FALSE((*gone)[0]) << "the erased snapshot came back";

    // Closed straight after two lookups, the second's copy queued behind the
    // first's 64 MiB: closing writes both.
    auto e = Open(tmp_.Sub("e"));
    ASSERT_TRUE(e);
    ASSERT_TRUE(e->LongestPrefix(ns, std::span(&big_prefix, 1)).ok());
    const auto chain_128 = conv.Chain(128);
    auto last = e->LongestPrefix(ns, chain_128);
    ASSERT_TRUE(last.ok() && *last == std::optional<size_t>(chain_128.size() - 1));
  }
  // Without the pool, each directory holds what its lookups restored.
  for (auto [dir, n] : {std::pair{"b", 384}, std::pair{"e", 128}}) {
    auto local = Store::Open(Options{}, tmp_.Sub(dir));
    ASSERT_TRUE(local.ok()) << local.status().ToString();
    EXPECT_TRUE(conv.Check(**local, ns, n).ok()) << dir;
  }
}

TEST_F(SharedStoreTest, ConcurrentPutsOfOnePrefixLeaveOneWholeSnapshot) {
  const Conversation conv(22);
  Child b = Child::Spawn({"put", uri_, tmp_.Sub("b"), "22", "256"});
  Child c = Child::Spawn({"put", uri_, tmp_.Sub("c"), "22", "256"});
  b.Say("go");
  c.Say("go");
  EXPECT_EQ(b.Line(), "acked 256");
  EXPECT_EQ(c.Line(), "acked 256");
  EXPECT_EQ(b.Wait(), 0);
  EXPECT_EQ(c.Wait(), 0);
  EXPECT_EQ(Objects("manifest."), 1u);
  auto d = Open(tmp_.Sub("d"));
  ASSERT_TRUE(d);
  auto ns = d->RegisterNamespace(conv.spec());
  ASSERT_TRUE(ns.ok());
  EXPECT_TRUE(conv.Check(*d, *ns, 256).ok());
  EXPECT_EQ(d->Stats().shared_restores, 1u);
}

TEST_F(SharedStoreTest, ListVisitsTheLocalAndThePoolsSnapshotsOnceEachInKeyOrder) {
  const Conversation conv(66);
  NamespaceId ns = 0;
  auto a = OpenWithChain(conv, tmp_.Sub("a"), &ns);
  ASSERT_TRUE(a);
  // B holds 256 locally (restored from the pool) and 512 of its own
  // (uploaded too); 128 and 384 are only in the pool.
  auto b = Open(tmp_.Sub("b"));
  ASSERT_TRUE(b);
  ASSERT_TRUE(b->RegisterNamespace(conv.spec()).ok());
  ASSERT_TRUE(conv.Check(*b, ns, 256).ok());
  ASSERT_TRUE(conv.Put(*b, ns, 512).ok());
  std::vector<Prefix> seen;
  std::vector<uint64_t> tokens;
  ASSERT_TRUE(b->List(ns, [&](const SnapshotInfo& s) {
                 seen.push_back(s.prefix);
                 tokens.push_back(s.manifest.token_count);
                 return true;
               }).ok());
  std::vector<Prefix> want;
  for (uint64_t n : {128, 256, 384, 512}) want.push_back(conv.PrefixOf(n));
  std::sort(want.begin(), want.end());  // key order within a namespace: the prefix bytes
  EXPECT_EQ(seen, want);
  std::multiset<uint64_t> counts(tokens.begin(), tokens.end());
  EXPECT_EQ(counts, (std::multiset<uint64_t>{128, 256, 384, 512}));
  // Stopping early stops: one visit, OK.
  size_t visits = 0;
  ASSERT_TRUE(b->List(ns, [&](const SnapshotInfo&) { return ++visits < 1; }).ok());
  EXPECT_EQ(visits, 1u);
  // Listing restored nothing: B's directory still holds only its two.
  EXPECT_EQ(b->Stats().shared_restores, 1u);
}

TEST_F(SharedStoreTest, EraseIsBusyWhileAnotherNodesLeaseHoldsTheSnapshot) {
  const Conversation conv(33);
  auto a = Open(tmp_.Sub("a"));
  ASSERT_TRUE(a);
  auto ns = a->RegisterNamespace(conv.spec());
  ASSERT_TRUE(ns.ok());
  ASSERT_TRUE(conv.Put(*a, *ns, 128).ok());
  Child b = Child::Spawn({"lease", uri_, tmp_.Sub("b"), "33", "128"});
  ASSERT_EQ(b.Line(), "leased");
  Status busy = a->Erase(*ns, conv.PrefixOf(128));
  EXPECT_EQ(busy.code(), StatusCode::kBusy) << busy.ToString();
  EXPECT_TRUE(conv.Check(*a, *ns, 128).ok()) << "a refused erase removed the local copy";
  b.Say("go");
  EXPECT_EQ(b.Line(), "released");
  EXPECT_EQ(b.Wait(), 0);
  ASSERT_TRUE(a->Erase(*ns, conv.PrefixOf(128)).ok());
  EXPECT_EQ(Objects("manifest."), 0u);
  auto c = Open(tmp_.Sub("c"));
  ASSERT_TRUE(c);
  ASSERT_TRUE(c->RegisterNamespace(conv.spec()).ok());
  EXPECT_EQ(c->GetManifest(*ns, conv.PrefixOf(128)).status().code(), StatusCode::kNotFound);
}

TEST_F(SharedStoreTest, ADamagedPageIsNeverReturnedAndItsSnapshotIsQuarantinedInThePool) {
  const Conversation conv(44);
  NamespaceId ns = 0;
  auto a = OpenWithSnapshot(conv, tmp_.Sub("a"), &ns, 128);
  ASSERT_TRUE(a);
  ASSERT_EQ(Objects("manifest."), 1u);
  // A raw write over one page object, behind the store's back.
  const auto pages = PageObjects();
  ASSERT_FALSE(pages.empty());
  Overwrite(*pages.begin(), std::string(100, 'x'));

  auto b = Open(tmp_.Sub("b"));
  ASSERT_TRUE(b);
  ASSERT_TRUE(b->RegisterNamespace(conv.spec()).ok());
  std::vector<uint8_t> dst(1 << 20);
  auto read = b->ReadLayerInto(ns, conv.PrefixOf(128), 0, dst);
  EXPECT_EQ(read.status().code(), StatusCode::kCorruption) << read.status().ToString();
  EXPECT_EQ(b->Stats().shared_corruptions, 1u);
  EXPECT_EQ(b->Stats().shared_restores, 0u);
  EXPECT_EQ(Objects("manifest."), 0u) << "the snapshot using the damaged page is still in the pool";
  EXPECT_FALSE(b->GetManifests(ns, std::vector<Prefix>{conv.PrefixOf(128)}).value()[0]);
  // The writer still has it; putting it again stores the page afresh.
  ASSERT_TRUE(conv.Put(*a, ns, 128).ok());
  auto c = Open(tmp_.Sub("c"));
  ASSERT_TRUE(c);
  ASSERT_TRUE(c->RegisterNamespace(conv.spec()).ok());
  EXPECT_TRUE(conv.Check(*c, ns, 128).ok());
}

// A process that did not look the snapshots up (another did: an engine's
// scheduler and its workers) reads them straight from the pool into its
// memory, several in one ReadSnapshotsInto: each layer's outcome as the
// local store gives it, every byte checked; a snapshot read whole gets its
// local copy written behind, one read in part none.
TEST_F(SharedStoreTest, AReadIntoMemoryOfSnapshotsOnlyThePoolHoldsReadsThemStraightFromIt) {
  const Conversation conv(61);
  NamespaceId ns = 0;
  auto a = OpenWithChain(conv, tmp_.Sub("a"), &ns);
  ASSERT_TRUE(a);
  const std::vector<std::vector<std::vector<uint8_t>>> blobs{conv.Blobs(128), conv.Blobs(256),
                                                             conv.Blobs(384)};
  Conversation stranger(62);
  {
    auto b = OpenRegistered(conv, tmp_.Sub("b"), &ns);
    ASSERT_TRUE(b);
    // 128: every layer. 256: layers 2 and 0 only. 384: every layer, and
    // layer 9 (not in it) and layer 1 into too small a buffer. A prefix no
    // one stored.
    std::vector<std::vector<uint8_t>> mem;
    std::vector<std::pair<size_t, uint32_t>> of;  // (snapshot, layer) of mem[i]
    const auto want = [&](size_t snap, uint32_t layer, size_t bytes) {
      mem.emplace_back(bytes, 0xEE);
      of.push_back({snap, layer});
    };
    for (uint32_t l = 0; l < 3; ++l) want(0, l, blobs[0][l].size());
    want(1, 2, blobs[1][2].size());
    want(1, 0, blobs[1][0].size());
    for (uint32_t l = 0; l < 3; ++l) want(2, l, blobs[2][l].size());
    want(2, 9, 64);
    want(2, 1, blobs[2][1].size() - 1);
    want(3, 0, 64);
    std::vector<Store::LayerInto> into;
    for (size_t i = 0; i < mem.size(); ++i) into.push_back({of[i].second, mem[i]});
    const Prefix prefixes[] = {conv.PrefixOf(128), conv.PrefixOf(256), conv.PrefixOf(384),
                               stranger.PrefixOf(128)};
    std::vector<Store::SnapshotInto> snaps;
    for (size_t from = 0; from < into.size();) {
      size_t to = from;
      while (to < into.size() && of[to].first == of[from].first) ++to;
      snaps.push_back({ns, prefixes[of[from].first], std::span(into).subspan(from, to - from)});
      from = to;
    }
    b->ReadSnapshotsInto(snaps);
    for (size_t i = 0; i < into.size(); ++i) {
      const auto [snap, layer] = of[i];
      SCOPED_TRACE("snapshot " + std::to_string(snap) + ", layer " + std::to_string(layer));
      if (snap == 3) {
        EXPECT_EQ(into[i].status.code(), StatusCode::kNotFound) << into[i].status.ToString();
      } else if (layer == 9) {
        EXPECT_EQ(into[i].status.code(), StatusCode::kNotFound) << into[i].status.ToString();
      } else if (mem[i].size() < blobs[snap][layer].size()) {
        EXPECT_EQ(into[i].status.code(), StatusCode::kOutOfRange) << into[i].status.ToString();
      } else {
        ASSERT_TRUE(into[i].status.ok()) << into[i].status.ToString();
        EXPECT_EQ(into[i].bytes, blobs[snap][layer].size());
        EXPECT_TRUE(
            std::equal(blobs[snap][layer].begin(), blobs[snap][layer].end(), mem[i].begin()));
      }
    }
    for (size_t i = 0; i < into.size(); ++i) {
      if (!into[i].status.ok()) {
        EXPECT_TRUE(std::all_of(mem[i].begin(), mem[i].end(), [](uint8_t v) { return v == 0xEE; }))
            << "snapshot " << of[i].first << ", layer " << of[i].second << ": written, failed";
      }
    }
    const StoreStats stats = b->Stats();  // once every copy queued behind the reads is written
    EXPECT_GE(stats.shared_restores, 2u) << "the snapshots read whole are copied";
    EXPECT_EQ(stats.shared_corruptions, 0u);
  }
  // Closed (every local copy written): the two read whole, copied from the
  // read, and the one read in part, restored behind it.
  auto local = Store::Open(Options{}, tmp_.Sub("b"));
  ASSERT_TRUE(local.ok()) << local.status().ToString();
  for (uint64_t n : {128, 256, 384})
    EXPECT_TRUE(conv.Check(**local, ns, n).ok()) << n << " tokens: no local copy";
}

// Read straight from the pool, a damaged page is never returned: the
// layers before it are read, it and the ones after fail, and its snapshot
// is quarantined in the pool.
TEST_F(SharedStoreTest, AReadIntoMemoryStraightFromThePoolQuarantinesASnapshotWithADamagedPage) {
  const Conversation conv(63);
  NamespaceId ns = 0;
  auto a = OpenWithSnapshot(conv, tmp_.Sub("a"), &ns, 128);
  ASSERT_TRUE(a);
  const auto blobs = conv.Blobs(128);
  const std::string opaque = rados::PageKey::Of(blobs[2]).ObjectName();  // one page
  ASSERT_TRUE(PageObjects().contains(opaque));
  Overwrite(opaque, std::string(blobs[2].size(), 'x'));

  auto b = OpenRegistered(conv, tmp_.Sub("b"), &ns);
  ASSERT_TRUE(b);
  std::vector<std::vector<uint8_t>> mem{
      std::vector<uint8_t>(blobs[0].size()), std::vector<uint8_t>(blobs[1].size()),
      std::vector<uint8_t>(blobs[2].size()), std::vector<uint8_t>(blobs[0].size())};
  std::vector<Store::LayerInto> into{{0, mem[0]}, {1, mem[1]}, {2, mem[2]}, {0, mem[3]}};
  const Status st = b->ReadLayersInto(ns, conv.PrefixOf(128), into);
  EXPECT_EQ(st.code(), StatusCode::kCorruption) << st.ToString();
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_TRUE(into[i].status.ok()) << i << ": " << into[i].status.ToString();
    EXPECT_TRUE(mem[i] == blobs[i]) << i;
  }
  for (size_t i = 2; i < 4; ++i)
    EXPECT_EQ(into[i].status.code(), StatusCode::kCorruption)
        << i << ": " << into[i].status.ToString();
  const StoreStats stats = b->Stats();
  EXPECT_EQ(stats.shared_corruptions, 1u);
  EXPECT_EQ(stats.shared_restores, 0u);
  EXPECT_EQ(Objects("manifest."), 0u) << "the snapshot using the damaged page is still in the pool";
  EXPECT_FALSE(PageObjects().contains(opaque)) << "the damaged page object is still in the pool";
}

// Layers read from the pool into memory that overlaps are refused, each
// with InvalidArgument, before anything is read: their digests are checked
// in the caller's memory, and one layer's pages landing in another's would
// be taken for damage and quarantine a sound snapshot for every node.
TEST_F(SharedStoreTest, AReadFromThePoolIntoOverlappingMemoryIsRefusedAndQuarantinesNothing) {
  const Conversation conv(66);
  NamespaceId ns = 0;
  auto a = OpenWithChain(conv, tmp_.Sub("a"), &ns);
  ASSERT_TRUE(a);
  const auto blobs = conv.Blobs(384);
  auto b = OpenRegistered(conv, tmp_.Sub("b"), &ns);
  ASSERT_TRUE(b);
  std::vector<uint8_t> shared(blobs[0].size() + blobs[1].size());
  std::vector<uint8_t> own(blobs[2].size());
  std::vector<Store::LayerInto> into{
      {0, shared}, {1, std::span(shared).subspan(blobs[0].size() - 1)}, {2, own}};
  const Status st = b->ReadLayersInto(ns, conv.PrefixOf(384), into);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << st.ToString();
  EXPECT_EQ(into[0].status.code(), StatusCode::kInvalidArgument) << into[0].status.ToString();
  EXPECT_EQ(into[1].status.code(), StatusCode::kInvalidArgument) << into[1].status.ToString();
  ASSERT_TRUE(into[2].status.ok()) << into[2].status.ToString();
  EXPECT_TRUE(own == blobs[2]);
  const StoreStats stats = b->Stats();
  EXPECT_EQ(stats.shared_corruptions, 0u);
  EXPECT_EQ(stats.shared_restores, 0u) << "read in part: no local copy";
  EXPECT_EQ(Objects("manifest."), 3u) << "a snapshot was quarantined";
  // Side by side, the same layers read whole.
  std::vector<std::vector<uint8_t>> whole{std::vector<uint8_t>(blobs[0].size()),
                                          std::vector<uint8_t>(blobs[1].size())};
  std::vector<Store::LayerInto> apart{{0, whole[0]}, {1, whole[1]}};
  ASSERT_TRUE(b->ReadLayersInto(ns, conv.PrefixOf(384), apart).ok());
  EXPECT_TRUE(whole[0] == blobs[0] && whole[1] == blobs[1]);
}

// Options::shared_local_copies off: the lookups answer from the pool's
// records and every byte read comes from the pool, checked, nothing written
// locally; a call that works on a local copy still writes one.
TEST_F(SharedStoreTest, WithoutLocalCopiesLookupsAnswerFromThePoolAndReadsGoStraightToIt) {
  const Conversation conv(64);
  NamespaceId ns = 0;
  auto a = OpenWithChain(conv, tmp_.Sub("a"), &ns);
  ASSERT_TRUE(a);
  const auto chain = conv.Chain(384);  // 6 blocks: 128, 256 and 384 tokens stored
  Options o;
  o.shared = uri_;
  o.background_maintenance = false;
  o.shared_local_copies = false;
  {
    auto opened = Store::Open(o, tmp_.Sub("b"));
    ASSERT_TRUE(opened.ok()) << opened.status().ToString();
    Store& b = **opened;
    auto found = b.LongestPrefix(ns, chain);
    ASSERT_TRUE(found.ok()) << found.status().ToString();
    EXPECT_EQ(*found, std::optional<size_t>(chain.size() - 1));
    const std::vector<Prefix> stored{conv.PrefixOf(128), conv.PrefixOf(256), conv.PrefixOf(384),
                                     Conversation(65).PrefixOf(128)};
    auto leading = b.CountLeadingStored(ns, stored);
    ASSERT_TRUE(leading.ok()) << leading.status().ToString();
    EXPECT_EQ(*leading, 3u);
    // Every read twice: each time from the pool.
    for (int round = 0; round < 2; ++round) {
      const auto blobs = conv.Blobs(384);
      std::vector<std::vector<uint8_t>> got(blobs.size());
      std::vector<Store::LayerInto> into;
      for (uint32_t l = 0; l < blobs.size(); ++l) {
        got[l].assign(blobs[l].size(), 0);
        into.push_back({l, got[l]});
      }
      const Status st = b.ReadLayersInto(ns, conv.PrefixOf(384), into);
      ASSERT_TRUE(st.ok()) << st.ToString();
      for (uint32_t l = 0; l < blobs.size(); ++l) EXPECT_TRUE(got[l] == blobs[l]) << l;
      std::vector<uint8_t> one(blobs[1].size());
      auto copied = b.ReadLayerInto(ns, conv.PrefixOf(384), 1, one);
      EXPECT_TRUE(copied.ok() && *copied == blobs[1].size() && one == blobs[1])
          << copied.status().ToString();
      EXPECT_TRUE(conv.Check(b, ns, 256).ok());  // GetLayer of each layer
      std::vector<uint8_t> streamed(blobs[2].size());
      const Status sink = b.ReadLayer(ns, conv.PrefixOf(384), 2, [&](uint64_t at, ByteSpan chunk) {
        if (at + chunk.size() > streamed.size()) return Status::OutOfRange("past the layer");
        std::copy(chunk.begin(), chunk.end(), streamed.begin() + static_cast<ptrdiff_t>(at));
        return Status::Ok();
      });
      EXPECT_TRUE(sink.ok() && streamed == blobs[2]) << sink.ToString();
      // Two snapshots in one call.
      const auto small = conv.Blobs(128);
      std::vector<uint8_t> first(small[0].size()), last(blobs[0].size());
      std::vector<Store::LayerInto> a0{{0, first}}, b0{{0, last}};
      std::vector<Store::SnapshotInto> two{{ns, conv.PrefixOf(128), a0},
                                           {ns, conv.PrefixOf(384), b0}};
      b.ReadSnapshotsInto(two);
      EXPECT_TRUE(a0[0].status.ok() && first == small[0]) << a0[0].status.ToString();
      EXPECT_TRUE(b0[0].status.ok() && last == blobs[0]) << b0[0].status.ToString();
      EXPECT_EQ(b.Stats().shared_restores, 0u) << "round " << round;
    }
    // Reading a snapshot's manifest needs a local copy: it is written.
    auto m = b.GetManifest(ns, conv.PrefixOf(128));
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    EXPECT_EQ(m->token_count, 128u);
    EXPECT_EQ(b.Stats().shared_restores, 1u);
  }
  auto local = Store::Open(Options{}, tmp_.Sub("b"));
  ASSERT_TRUE(local.ok()) << local.status().ToString();
  const std::vector<Prefix> all{conv.PrefixOf(128), conv.PrefixOf(256), conv.PrefixOf(384)};
  auto here = (*local)->GetManifests(ns, all);
  ASSERT_TRUE(here.ok()) << here.status().ToString();
  EXPECT_TRUE((*here)[0]) << "the copy GetManifest needed";
  EXPECT_FALSE((*here)[1]) << "read without local copies, and copied";
  EXPECT_FALSE((*here)[2]) << "read without local copies, and copied";
}

// With Options::shared_local_copies off a kThrough put writes the pool
// alone: its record's manifest is planned from the layers (PlanPut), and
// every reader checks the bytes against it. Chained puts share the pool's
// pages, a refused put sends nothing and says why, and nothing is written
// into the putting store's directory.
TEST_F(SharedStoreTest, WithoutLocalCopiesAPutGoesToThePoolAloneAndEveryNodeReadsItExact) {
  const Conversation conv(66);
  Options o;
  o.shared = uri_;
  o.background_maintenance = false;
  o.shared_local_copies = false;
  NamespaceId ns = 0;
  {
    auto opened = Store::Open(o, tmp_.Sub("a"));
    ASSERT_TRUE(opened.ok()) << opened.status().ToString();
    Store& a = **opened;
    auto id = a.RegisterNamespace(conv.spec());
    ASSERT_TRUE(id.ok()) << id.status().ToString();
    ns = *id;
    for (uint64_t n : {128, 256, 384}) {
      const Status st = conv.Put(a, ns, n);
      ASSERT_TRUE(st.ok()) << n << ": " << st.ToString();
    }
    const StoreStats sa = a.Stats();
    EXPECT_EQ(sa.shared_uploads, 3u);
    EXPECT_GT(sa.shared_pages_present, 0u) << "256 and 384 start with the pages 128 stored";
    EXPECT_EQ(sa.snapshots, 0u) << "a put without local copies wrote one";
    EXPECT_EQ(sa.puts, 0u);
    rados::RadosReclaim reclaim(*conn_);
    auto listing = reclaim.ListReclaimable(std::chrono::seconds(3 * kOpTimeoutMs / 1000));
    ASSERT_TRUE(listing.ok()) << listing.status().ToString();
    EXPECT_EQ(listing->manifests, 3u);
    EXPECT_EQ(listing->named, listing->pages) << "pages sent that no record names";

    // Refused: a DSA blob a byte short, a namespace never registered, a
    // chain longer than the tokens. Each says why and sends nothing.
    const size_t objects = Objects();
    Status st = PutShortDsa(a, conv, ns, 448);
    EXPECT_EQ(st.code(), StatusCode::kCorruption) << st.ToString();  // as a local put says
    EXPECT_NE(st.ToString().find("size mismatch"), std::string::npos) << st.ToString();
    st = conv.Put(a, ns + 1, 128);
    EXPECT_EQ(st.code(), StatusCode::kNotFound) << st.ToString();
    EXPECT_NE(st.ToString().find("namespace"), std::string::npos) << st.ToString();
    auto whole = conv.Blobs(128);
    const std::vector<LayerBlob> layers{
        {0, Kind::kQsa, whole[0]}, {1, Kind::kDsa, whole[1]}, {2, Kind::kOpaque, whole[2]}};
    const auto chain = conv.Chain(448);  // 28 blocks for 128 tokens
    PutOptions po;
    po.block_chain = chain;
    po.block_size = kBlock;
    st = a.PutSnapshot(ns, conv.PrefixOf(448), 128, layers, po);
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << st.ToString();
    EXPECT_EQ(Objects(), objects) << "a refused put sent something";
    // The same snapshot again: stored once.
    ASSERT_TRUE(conv.Put(a, ns, 384).ok());
    EXPECT_EQ(Objects(), objects);
    EXPECT_EQ(a.Stats().shared_pages_stored, sa.shared_pages_stored);

    // The putting store finds and reads its snapshots from the pool.
    auto found = a.LongestPrefix(ns, conv.Chain(384));
    ASSERT_TRUE(found.ok()) << found.status().ToString();
    EXPECT_EQ(*found, std::optional<size_t>(conv.Chain(384).size() - 1));
    for (uint64_t n : {128, 256, 384}) EXPECT_TRUE(conv.Check(a, ns, n).ok()) << n;
  }
  // Another node, with local copies: every byte checked against the
  // planned manifests' digests, and exact.
  auto b = Open(tmp_.Sub("b"));
  ASSERT_TRUE(b);
  auto found = b->LongestPrefix(ns, conv.Chain(384));
  ASSERT_TRUE(found.ok()) << found.status().ToString();
  EXPECT_EQ(*found, std::optional<size_t>(conv.Chain(384).size() - 1));
  for (uint64_t n : {128, 256, 384}) {
    const Status st = conv.Check(*b, ns, n);
    EXPECT_TRUE(st.ok()) << n << ": " << st.ToString();
    auto m = b->GetManifest(ns, conv.PrefixOf(n));
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    EXPECT_EQ(m->token_count, n);
  }
  EXPECT_EQ(b->Stats().shared_corruptions, 0u);
  // Nothing in the putting store's directory.
  auto local = Store::Open(Options{}, tmp_.Sub("a"));
  ASSERT_TRUE(local.ok()) << local.status().ToString();
  EXPECT_EQ((*local)->Stats().snapshots, 0u);
}

// PutSnapshots on the pool, with local copies and without: the pages of
// every snapshot of the batch in one window, each record committed after
// its own; each snapshot's outcome is PutSnapshot's (a refused one sends
// nothing and stops none of the others); another node restores each exact,
// and every page sent is named by a record.
TEST_F(SharedStoreTest, ABatchOfPutsGivesEachSnapshotItsOwnOutcomeAndLeavesNoPageUnnamed) {
  size_t manifests = 0;
  for (bool local_copies : {true, false}) {
    SCOPED_TRACE(local_copies ? "local copies" : "no local copies");
    const Conversation conv(local_copies ? 67 : 68);
    Options o;
    o.shared = uri_;
    o.background_maintenance = false;
    o.shared_local_copies = local_copies;
    NamespaceId ns = 0;
    {
      auto opened = Store::Open(o, tmp_.Sub(local_copies ? "a" : "p"));
      ASSERT_TRUE(opened.ok()) << opened.status().ToString();
      Store& a = **opened;
      auto id = a.RegisterNamespace(conv.spec());
      ASSERT_TRUE(id.ok()) << id.status().ToString();
      ns = *id;
      const std::vector<uint64_t> tokens = {128, 256, 384, 448, 512};
      std::vector<std::vector<std::vector<uint8_t>>> blobs;
      std::vector<std::vector<LayerBlob>> layers;
      std::vector<std::vector<Prefix>> chains;
      for (uint64_t n : tokens) {
        blobs.push_back(conv.Blobs(n));
        chains.push_back(conv.Chain(n));
      }
      blobs[3][1].pop_back();  // 448: a DSA blob a byte short
      std::vector<Store::SnapshotPut> puts(tokens.size());
      for (size_t i = 0; i < tokens.size(); ++i) {
        layers.push_back({{0, Kind::kQsa, blobs[i][0]},
                          {1, Kind::kDsa, blobs[i][1]},
                          {2, Kind::kOpaque, blobs[i][2]}});
      }
      for (size_t i = 0; i < tokens.size(); ++i) {
        puts[i].ns = i == 4 ? ns + 1 : ns;  // 512: a namespace never registered
        puts[i].prefix = conv.PrefixOf(tokens[i]);
        puts[i].token_count = tokens[i];
        puts[i].layers = layers[i];
        puts[i].options.block_chain = chains[i];
        puts[i].options.block_size = kBlock;
      }
      const Status first = a.PutSnapshots(puts);
      for (size_t i = 0; i < 3; ++i) EXPECT_TRUE(puts[i].status.ok()) << puts[i].status.ToString();
      EXPECT_EQ(puts[3].status.code(), StatusCode::kCorruption) << puts[3].status.ToString();
      EXPECT_EQ(puts[4].status.code(), StatusCode::kNotFound) << puts[4].status.ToString();
      EXPECT_EQ(first.code(), StatusCode::kCorruption) << first.ToString();
      EXPECT_NE(first.ToString().find("puts[3]"), std::string::npos) << first.ToString();
      const StoreStats sa = a.Stats();
      EXPECT_EQ(sa.shared_uploads, 3u);
      EXPECT_EQ(sa.snapshots, local_copies ? 3u : 0u);
      manifests += 3;
      rados::RadosReclaim reclaim(*conn_);
      auto listing = reclaim.ListReclaimable(std::chrono::seconds(3 * kOpTimeoutMs / 1000));
      ASSERT_TRUE(listing.ok()) << listing.status().ToString();
      EXPECT_EQ(listing->manifests, manifests);
      EXPECT_EQ(listing->named, listing->pages) << "pages sent that no record names";
    }
    auto b = Open(tmp_.Sub(local_copies ? "b" : "c"));
    ASSERT_TRUE(b);
    for (uint64_t n : {128, 256, 384}) {
      const Status st = conv.Check(*b, ns, n);
      EXPECT_TRUE(st.ok()) << n << ": " << st.ToString();
    }
    EXPECT_TRUE(conv.Check(*b, ns, 448).IsNotFound());
    EXPECT_EQ(b->Stats().shared_corruptions, 0u);
  }
}

TEST_F(SharedStoreTest, BatchedRestoresFillWhatTheyFetchAndEndTheLeadingRunAtADamagedSnapshot) {
  // A batch fetches snapshot i + 1 from the pool while it writes snapshot i
  // into the local store: whatever a later fetch meets, every snapshot
  // before it is filled whole, and the leading run ends where it should.
  const Conversation conv(77);
  NamespaceId ns = 0;
  auto a = OpenWithSnapshot(conv, tmp_.Sub("a"), &ns, 128);
  ASSERT_TRUE(a);
  ASSERT_TRUE(conv.Put(*a, ns, 256).ok());
  const std::set<std::string> before = PageObjects();
  ASSERT_TRUE(conv.Put(*a, ns, 384).ok());
  std::string victim;  // a page only 384 names
  for (const std::string& p : PageObjects())
    if (!before.contains(p)) victim = p;
  ASSERT_FALSE(victim.empty());
  Overwrite(victim, std::string(100, 'x'));
  const std::vector<Prefix> chain = {conv.PrefixOf(128), conv.PrefixOf(256), conv.PrefixOf(384)};

  // kAll (GetManifests): 128 and 256 restored, 384's damage reported.
  auto b = Open(tmp_.Sub("b"));
  ASSERT_TRUE(b);
  ASSERT_TRUE(b->RegisterNamespace(conv.spec()).ok());
  auto all = b->GetManifests(ns, chain);
  EXPECT_EQ(all.status().code(), StatusCode::kCorruption) << all.status().ToString();
  EXPECT_EQ(b->Stats().shared_restores, 2u);
  EXPECT_EQ(b->Stats().shared_corruptions, 1u);
  EXPECT_TRUE(conv.Check(*b, ns, 128).ok());
  EXPECT_TRUE(conv.Check(*b, ns, 256).ok());
  EXPECT_EQ(b->Stats().shared_restores, 2u) << "a check read from the pool: not filled locally";
  EXPECT_EQ(Objects("manifest."), 2u) << "384, which names the damaged page, is still in the pool";

  // kLeading (CountLeadingStored) on another empty directory: the run of
  // two, their local copies written behind (every later call sees them).
  auto c = Open(tmp_.Sub("c"));
  ASSERT_TRUE(c);
  ASSERT_TRUE(c->RegisterNamespace(conv.spec()).ok());
  auto leading = c->CountLeadingStored(ns, chain);
  ASSERT_TRUE(leading.ok()) << leading.status().ToString();
  EXPECT_EQ(*leading, 2u);
  EXPECT_EQ(c->Stats().shared_restores, 2u);
  EXPECT_TRUE(conv.Check(*c, ns, 128).ok());
  EXPECT_TRUE(conv.Check(*c, ns, 256).ok());
  EXPECT_EQ(c->GetManifest(ns, conv.PrefixOf(384)).status().code(), StatusCode::kNotFound);
}

// A leading run longer than one fetch group (TieredStore::kFetchGroupBytes,
// 64 MiB): the pages of a group are read in one window, the local copies
// written behind. The run ends at the snapshot with a damaged page (in the
// second group); every snapshot before it reads byte-exact into memory at
// once, and the directory opened without the pool, after the store closed,
// holds each of them whole.
TEST_F(SharedStoreTest, ABatchRestoreBeyondOneFetchGroupReadsIntoMemoryAndWritesEveryCopyWhole) {
  const Conversation conv(78);
  NamespaceId ns = 0;
  auto a = OpenRegistered(conv, tmp_.Sub("a"), &ns);
  ASSERT_TRUE(a);
  constexpr size_t kSnapshots = 8, kLayers = 2, kLayerBytes = 6u << 20;  // 96 MiB
  std::vector<Prefix> prefixes;
  std::vector<std::vector<std::vector<uint8_t>>> bytes(kSnapshots);
  std::set<std::string> before;
  for (size_t s = 0; s < kSnapshots; ++s) {
    Prefix p;
    p.bytes[0] = 0xB7;
    p.bytes[1] = static_cast<uint8_t>(s + 1);
    prefixes.push_back(p);
    std::vector<LayerBlob> blobs;
    for (uint32_t l = 0; l < kLayers; ++l) {
      bytes[s].emplace_back(kLayerBytes);
      uint64_t x = 0x9E3779B97F4A7C15ull * (s * kLayers + l + 1);
      for (uint8_t& b : bytes[s][l]) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        b = static_cast<uint8_t>(x);
      }
      blobs.push_back({l, Kind::kOpaque, bytes[s][l]});
    }
    if (s + 1 == kSnapshots) before = PageObjects();
    ASSERT_TRUE(a->PutSnapshot(ns, p, 1, blobs, PutOptions{}).ok()) << s;
  }
  std::string victim;  // a page only the last snapshot names
  for (const std::string& page : PageObjects())
    if (!before.contains(page)) victim = page;
  ASSERT_FALSE(victim.empty());
  Overwrite(victim, std::string(100, 'x'));

  const std::string dir = tmp_.Sub("c");
  {
    auto c = OpenRegistered(conv, dir, &ns);
    ASSERT_TRUE(c);
    auto leading = c->CountLeadingStored(ns, prefixes);
    ASSERT_TRUE(leading.ok()) << leading.status().ToString();
    EXPECT_EQ(*leading, kSnapshots - 1);
    std::vector<std::vector<uint8_t>> into(kLayers, std::vector<uint8_t>(kLayerBytes));
    std::vector<Store::LayerInto> wanted;
    for (uint32_t l = 0; l < kLayers; ++l) wanted.push_back({l, into[l]});
    for (size_t s = 0; s + 1 < kSnapshots; ++s) {
      ASSERT_TRUE(c->ReadLayersInto(ns, prefixes[s], wanted).ok()) << s;
      EXPECT_TRUE(into == bytes[s]) << "snapshot " << s << " read into memory differs";
    }
    const StoreStats stats = c->Stats();
    EXPECT_EQ(stats.shared_restores, kSnapshots - 1);
    EXPECT_EQ(stats.shared_corruptions, 1u);
    EXPECT_EQ(Objects("manifest."), kSnapshots - 1) << "the damaged snapshot is still in the pool";
  }
  auto local = Store::Open(Options{}, dir);
  ASSERT_TRUE(local.ok()) << local.status().ToString();
  for (size_t s = 0; s < kSnapshots; ++s) {
    for (uint32_t l = 0; l < kLayers; ++l) {
      auto got = (*local)->GetLayer(ns, prefixes[s], l);
      if (s + 1 == kSnapshots) {
        EXPECT_EQ(got.status().code(), StatusCode::kNotFound) << got.status().ToString();
      } else {
        ASSERT_TRUE(got.ok()) << s << ": " << got.status().ToString();
        EXPECT_TRUE(*got == bytes[s][l]) << "local copy of snapshot " << s << " layer " << l;
      }
    }
  }
}

// The local copies a restore queues are bounded (256 MiB): a batch that
// outruns its local disk waits for it rather than holding every snapshot it
// restored in memory. B's local directory is on an ext4 file system frozen
// for the batch (every write blocks, as on a disk that cannot keep up): with
// 256 MiB of the 320 MiB restored in memory and nothing written, the batch
// still waits (without the bound it returns once everything is fetched),
// while reads go on: of a snapshot whose copy is queued (from its checked
// layers) and of one already local (never behind the queued copies).
// Thawed, it returns the whole run; every snapshot reads byte-exact, and the
// directory opened without the pool holds each copy whole.
// A read into memory from the pool never waits for the local disk: with
// the local file system frozen, one ReadSnapshotsInto of 320 MiB (more than
// the copy queue's 256 MiB) returns every byte, and so does a second one of
// the same snapshots; thawed and closed, the directory holds every snapshot
// (the ones the queue took copied from the read, the others restored
// behind it).
TEST_F(SharedStoreTest, AReadIntoMemoryFromThePoolNeverWaitsForAFrozenLocalDisk) {
  std::string why;
  auto fs = testing::FreezableFs::Make(tmp_.Sub("fs"), 1ull << 30, &why);
  if (!fs) GTEST_SKIP() << why;
  const Conversation conv(81);
  NamespaceId ns = 0;
  constexpr size_t kSnapshots = 10, kLayers = 8, kLayerBytes = 4u << 20;
  std::vector<Prefix> prefixes;
  {
    auto a = OpenRegistered(conv, tmp_.Sub("a"), &ns);
    ASSERT_TRUE(a);
    prefixes = PutRandomSnapshots(*a, ns, 0xF4, kSnapshots, kLayers, kLayerBytes, 1000);
    ASSERT_EQ(prefixes.size(), kSnapshots);
  }
  std::vector<std::vector<uint8_t>> mem(kSnapshots * kLayers);
  std::vector<Store::LayerInto> into(kSnapshots * kLayers);
  std::vector<Store::SnapshotInto> snaps;
  const auto read_all = [&](Store& store) {
    snaps.clear();
    for (size_t s = 0; s < kSnapshots; ++s) {
      for (uint32_t l = 0; l < kLayers; ++l) {
        mem[s * kLayers + l].assign(kLayerBytes, 0);
        into[s * kLayers + l] = {l, mem[s * kLayers + l]};
      }
      snaps.push_back({ns, prefixes[s], std::span(into).subspan(s * kLayers, kLayers)});
    }
    store.ReadSnapshotsInto(snaps);
  };
  const auto exact = [&]() -> ::testing::AssertionResult {
    for (size_t s = 0; s < kSnapshots; ++s) {
      for (uint32_t l = 0; l < kLayers; ++l) {
        const auto& got = into[s * kLayers + l];
        if (!got.status.ok()) return ::testing::AssertionFailure() << got.status.ToString();
        if (mem[s * kLayers + l] != RandomLayer(1000 + s * kLayers + l, kLayerBytes))
          return ::testing::AssertionFailure() << "snapshot " << s << ", layer " << l << " differs";
      }
    }
    return ::testing::AssertionSuccess();
  };
  const std::string dir = fs->path() + "/b";
  {
    auto b = OpenRegistered(conv, dir, &ns);
    ASSERT_TRUE(b);
    testing::ThawOnExit thaw(*fs);  // before b closes, which waits for its writes
    ASSERT_TRUE(fs->Freeze());
    for (int round = 0; round < 2; ++round) {
      auto done = std::async(std::launch::async, [&] { read_all(*b); });
      const bool returned = done.wait_for(60s) == std::future_status::ready;
      if (!returned) fs->Thaw();  // let it finish, then fail
      done.get();
      ASSERT_TRUE(returned) << "round " << round << ": the read waited for the frozen disk";
      EXPECT_TRUE(exact()) << "round " << round;
    }
    ASSERT_TRUE(fs->Thaw());
  }
  auto local = Store::Open(Options{}, dir);
  ASSERT_TRUE(local.ok()) << local.status().ToString();
  auto here = (*local)->GetManifests(ns, prefixes);
  ASSERT_TRUE(here.ok()) << here.status().ToString();
  for (size_t s = 0; s < kSnapshots; ++s) EXPECT_TRUE((*here)[s]) << s << ": no local copy";
  read_all(**local);
  EXPECT_TRUE(exact()) << "the local copies";
}

TEST_F(SharedStoreTest, ABatchThatOutrunsItsLocalDiskWaitsOnceTheQueuedCopiesReachTheirBound) {
  std::string why;
  auto fs = testing::FreezableFs::Make(tmp_.Sub("fs"), 1ull << 30, &why);
  if (!fs) GTEST_SKIP() << why;
  const Conversation conv(80);
  NamespaceId ns = 0;
  constexpr size_t kSnapshots = 10, kLayers = 8, kLayerBytes = 4u << 20;  // 320 MiB
  const auto layer_bytes = [&](size_t s, uint32_t l) {
    return RandomLayer(s * kLayers + l + 1, kLayerBytes);
  };
  std::vector<Prefix> prefixes;
  Prefix pre;  // a snapshot B holds locally before the batch
  pre.bytes[0] = 0xF3;
  const std::vector<uint8_t> pre_bytes = layer_bytes(kSnapshots, 0);
  {
    auto a = OpenRegistered(conv, tmp_.Sub("a"), &ns);
    ASSERT_TRUE(a);
    prefixes = PutRandomSnapshots(*a, ns, 0xF2, kSnapshots, kLayers, kLayerBytes, 1);
    ASSERT_EQ(prefixes.size(), kSnapshots);
    const LayerBlob pre_blob{0, Kind::kOpaque, pre_bytes};
    ASSERT_TRUE(a->PutSnapshot(ns, pre, 1, {&pre_blob, 1}, PutOptions{}).ok());
  }
  const std::string dir = fs->path() + "/b";
  {
    auto b = OpenRegistered(conv, dir, &ns);
    ASSERT_TRUE(b);
    testing::ThawOnExit thaw(*fs);  // before b closes, which waits for its writes
    // `pre` restored and written locally before the disk freezes.
    auto pre_read = b->GetLayer(ns, pre, 0);
    ASSERT_TRUE(pre_read.ok()) << pre_read.status().ToString();
    ASSERT_TRUE(*pre_read == pre_bytes);
    const uint64_t rss_before = ResidentBytes();
    ASSERT_TRUE(fs->Freeze());
    std::promise<Result<size_t>> counted;
    auto future = counted.get_future();
    std::thread batch([&] { counted.set_value(b->CountLeadingStored(ns, prefixes)); });
    // Until 256 MiB more are resident (the copies queued: the bound), then
    // 2 s more for the fetch to run on, were it not waiting.
    const auto deadline = std::chrono::steady_clock::now() + 60s;
    while (ResidentBytes() < rss_before + (256ull << 20) &&
           std::chrono::steady_clock::now() < deadline &&
           future.wait_for(100ms) != std::future_status::ready) {
    }
    const uint64_t queued = ResidentBytes() - rss_before;
    const bool returned_frozen = future.wait_for(2s) == std::future_status::ready;
    // Meanwhile, the disk still frozen: a snapshot whose copy is queued
    // reads from its checked layers, and one already local from the local
    // store; neither waits for the queued copies.
    std::vector<uint8_t> first(kLayerBytes);
    std::vector<Store::LayerInto> first_layer = {{0, first}};
    auto queued_read = std::async(std::launch::async,
                                  [&] { return b->ReadLayersInto(ns, prefixes[0], first_layer); });
    auto local_read = std::async(std::launch::async, [&] { return b->GetLayer(ns, pre, 0); });
    const bool queued_read_frozen = queued_read.wait_for(10s) == std::future_status::ready;
    const bool local_read_frozen = local_read.wait_for(10s) == std::future_status::ready;
    const bool thawed = fs->Thaw();
    batch.join();
    EXPECT_TRUE(queued_read_frozen) << "a read of a queued copy waited for the frozen disk";
    EXPECT_TRUE(local_read_frozen) << "a read of a local snapshot waited for the queued copies";
    const Status queued_status = queued_read.get();
    EXPECT_TRUE(queued_status.ok()) << queued_status.ToString();
    EXPECT_TRUE(first == layer_bytes(0, 0)) << "the queued copy read differs";
    auto local_got = local_read.get();
    ASSERT_TRUE(local_got.ok()) << local_got.status().ToString();
    EXPECT_TRUE(*local_got == pre_bytes) << "the local snapshot read differs";
    EXPECT_TRUE(thawed);
    EXPECT_GE(queued, 256ull << 20) << "the batch never held 256 MiB while the disk was frozen";
    EXPECT_FALSE(returned_frozen) << "the batch returned with its copies unwritten past the bound";
    auto leading = future.get();
    ASSERT_TRUE(leading.ok()) << leading.status().ToString();
    EXPECT_EQ(*leading, kSnapshots);
    std::vector<std::vector<uint8_t>> into(kLayers, std::vector<uint8_t>(kLayerBytes));
    std::vector<Store::LayerInto> wanted;
    for (uint32_t l = 0; l < kLayers; ++l) wanted.push_back({l, into[l]});
    for (size_t s = 0; s < kSnapshots; ++s) {
      ASSERT_TRUE(b->ReadLayersInto(ns, prefixes[s], wanted).ok()) << s;
      for (uint32_t l = 0; l < kLayers; ++l) EXPECT_TRUE(into[l] == layer_bytes(s, l)) << s << l;
    }
    std::printf(
        "MEASURED a batch of 320 MiB beside a frozen local disk: %.0f MiB resident "
        "while it waited\n",
        static_cast<double>(queued) / (1 << 20));
  }
  auto local = Store::Open(Options{}, dir);
  ASSERT_TRUE(local.ok()) << local.status().ToString();
  for (size_t s = 0; s < kSnapshots; ++s) {
    for (uint32_t l = 0; l < kLayers; ++l) {
      auto got = (*local)->GetLayer(ns, prefixes[s], l);
      ASSERT_TRUE(got.ok()) << s << ": " << got.status().ToString();
      EXPECT_TRUE(*got == layer_bytes(s, l)) << "local copy of snapshot " << s << " layer " << l;
    }
  }
}

// An erase and the reclaim of its pages on one node racing a restore of the
// snapshot on another: the restore answers the whole snapshot (its lease
// came first, and the erase was refused, or it was done before the erase)
// or "not there", never Corruption, and quarantines nothing. Node A erases
// each snapshot and removes its page (what compact does to the pages only
// an erased manifest named) while node B looks it up, 40 races, either
// starting first. (The restore reads its pages beside taking its lease; the
// narrowest interleaving, a page read failing after the reclaim and before
// the lease is refused, needs the erase and removal to land between two
// round trips of the restore, and this test does not force it.)
TEST_F(SharedStoreTest, AnEraseAndReclaimRacingARestoreAreNeverTakenForDamage) {
  const Conversation conv(79);
  NamespaceId ns = 0;
  auto a = OpenRegistered(conv, tmp_.Sub("a"), &ns);
  auto b = OpenRegistered(conv, tmp_.Sub("b"), &ns);
  ASSERT_TRUE(a && b);
  std::mt19937_64 rng(79);
  size_t restored = 0, absent = 0, refused = 0;
  for (int race = 0; race < 40; ++race) {
    Prefix p;
    p.bytes[0] = 0xE5;
    p.bytes[1] = static_cast<uint8_t>(race);
    std::vector<uint8_t> bytes(64 << 10);
    for (uint8_t& x : bytes) x = static_cast<uint8_t>(rng());
    const LayerBlob blob{0, Kind::kOpaque, bytes};
    const std::set<std::string> before = PageObjects();
    ASSERT_TRUE(a->PutSnapshot(ns, p, 1, {&blob, 1}, PutOptions{}).ok()) << race;
    std::vector<std::string> pages;
    for (const std::string& page : PageObjects())
      if (!before.contains(page)) pages.push_back(page);
    ASSERT_EQ(pages.size(), 1u);
    // Either may start first, by up to 3 ms (a restore of this snapshot
    // takes about that long here).
    const auto erase_after = std::chrono::microseconds(rng() % 3000);
    const auto lookup_after = std::chrono::microseconds(rng() % 3000);
    std::thread eraser([&] {
      std::this_thread::sleep_for(erase_after);
      const Status erased = a->Erase(ns, p);
      if (!erased.ok()) {
        EXPECT_EQ(erased.code(), StatusCode::kBusy) << erased.ToString();
        ++refused;
        return;
      }
      for (const std::string& page : pages) conn_->io().remove(page);
    });
    std::this_thread::sleep_for(lookup_after);
    auto found = b->LongestPrefix(ns, std::span(&p, 1));
    eraser.join();
    ASSERT_TRUE(found.ok()) << race << ": " << found.status().ToString();
    if (!*found) {
      ++absent;
      continue;
    }
    ++restored;
    auto got = b->GetLayer(ns, p, 0);
    ASSERT_TRUE(got.ok()) << race << ": " << got.status().ToString();
    EXPECT_TRUE(*got == bytes) << race;
  }
  EXPECT_EQ(b->Stats().shared_corruptions, 0u);
  std::printf(
      "MEASURED erase+reclaim racing a restore: %zu restored, %zu absent, %zu erases "
      "refused (leased)\n",
      restored, absent, refused);
}

TEST_F(SharedStoreTest, VerifyRepairAndCompactCoverThePool) {
  const Conversation conv(55);
  NamespaceId ns = 0;
  auto a = OpenWithSnapshot(conv, tmp_.Sub("a"), &ns, 128);
  ASSERT_TRUE(a);
  auto clean = a->Verify();
  ASSERT_TRUE(clean.ok()) << clean.status().ToString();
  EXPECT_TRUE(clean->clean());
  const auto pages = PageObjects();
  ASSERT_FALSE(pages.empty());
  const std::string victim = *pages.begin();
  Overwrite(victim, std::string(64, 'y'));

  auto found = a->Verify();
  ASSERT_TRUE(found.ok()) << found.status().ToString();
  EXPECT_FALSE(found->clean());
  bool named = false;
  for (const auto& p : found->store_problems) named |= p.find(victim) != std::string::npos;
  EXPECT_TRUE(named) << "no problem names " << victim;
  auto repaired = a->Repair(*found);
  ASSERT_TRUE(repaired.ok()) << repaired.status().ToString();
  ASSERT_EQ(repaired->removed.size(), 1u);
  EXPECT_EQ(repaired->removed[0].ns, ns);
  EXPECT_EQ(repaired->removed[0].prefix, conv.PrefixOf(128));
  EXPECT_EQ(Objects("manifest."), 0u);
  EXPECT_TRUE(conv.Check(*a, ns, 128).ok()) << "the local copy is healthy and stays";
  auto after = a->Verify();
  ASSERT_TRUE(after.ok());
  EXPECT_TRUE(after->clean());
  EXPECT_TRUE(a->Compact({}).ok());
}

// kill -9 of a writing node, AUXSTORE_SHARED_KILL_CYCLES times (10 by
// default): every snapshot it acknowledged restores byte-exact on another
// node, the one it was writing is absent or whole, and reclaim takes the
// orphans and nothing a snapshot uses.
// A lookup's local copy that cannot be written (its directory's file system
// full) is reported through the log sink, naming the snapshot and the
// error, and costs the engine no bytes: the lookup and every byte read after
// it return the pool's, while the local store, which stopped writing at the
// failure, refuses what needs a local copy. Reopened with room again, the
// next lookup writes the copy, and the directory opened without the pool
// holds it whole. A read-only store (which cannot write a copy) reads the
// pool's bytes the same way, with no warning.
TEST_F(SharedStoreTest, ALocalCopyThatCannotBeWrittenIsLoggedAndTheReadsStillReturnThePoolsBytes) {
  const Conversation conv(17);
  NamespaceId ns = 0;
  auto a = OpenWithChain(conv, tmp_.Sub("a"), &ns);
  ASSERT_TRUE(a);
  std::string why;
  auto mnt = testing::TmpfsMount::Mount(tmp_.Sub("small"), 32u << 20, &why);
  if (!mnt) GTEST_SKIP() << why;
  std::mutex mu;
  std::vector<std::string> warnings;
  Options o;
  o.shared = uri_;
  o.background_maintenance = false;
  o.log_sink = [&](const LogRecord& r) {
    if (r.level != LogLevel::kWarn || r.source != "auxstore") return;
    std::lock_guard lock(mu);
    warnings.emplace_back(r.message);
  };
  const auto warned = [&](const std::string& name) {
    std::lock_guard lock(mu);
    size_t n = 0;
    for (const auto& w : warnings)
      n += w.find(name) != std::string::npos && w.find("not written locally") != std::string::npos;
    return n;
  };
  const std::string dir = mnt->path() + "/b";
  const std::string filler = mnt->path() + "/filler";
  const auto chain = conv.Chain(384);
  const std::string name = conv.PrefixOf(384).ToHex();
  const auto blobs = conv.Blobs(384);
  {
    auto b = Store::Open(o, dir);
    ASSERT_TRUE(b.ok()) << b.status().ToString();
    ASSERT_GT(testing::FillUp(filler), 0u);
    auto found = (*b)->LongestPrefix(ns, chain);
    ASSERT_TRUE(found.ok()) << found.status().ToString();
    EXPECT_EQ(*found, std::optional<size_t>(chain.size() - 1));
    Status st = conv.Check(**b, ns, 384);  // GetLayer of each layer
    EXPECT_TRUE(st.ok()) << "read after the lookup, disk full: " << st.ToString();
    (void)(*b)->Stats();  // after every fill queued before it
    EXPECT_GE(warned(name), 1u) << "no warning names snapshot " << name;
    // Every byte read, after the failed copy: each from the pool again.
    std::vector<std::vector<uint8_t>> got(blobs.size());
    std::vector<Store::LayerInto> into;
    for (uint32_t l = 0; l < blobs.size(); ++l) {
      got[l].assign(blobs[l].size(), 0);
      into.push_back({l, got[l]});
    }
    st = (*b)->ReadLayersInto(ns, conv.PrefixOf(384), into);
    EXPECT_TRUE(st.ok()) << "ReadLayersInto, disk full: " << st.ToString();
    for (uint32_t l = 0; l < blobs.size(); ++l) EXPECT_TRUE(got[l] == blobs[l]) << "layer " << l;
    std::vector<uint8_t> one(blobs[1].size());
    auto copied = (*b)->ReadLayerInto(ns, conv.PrefixOf(384), 1, one);
    EXPECT_TRUE(copied.ok() && *copied == blobs[1].size() && one == blobs[1])
        << copied.status().ToString();
    std::vector<uint8_t> streamed(blobs[2].size());
    st = (*b)->ReadLayer(ns, conv.PrefixOf(384), 2, [&](uint64_t at, ByteSpan chunk) {
      if (at + chunk.size() > streamed.size()) return Status::OutOfRange("past the layer");
      std::copy(chunk.begin(), chunk.end(), streamed.begin() + at);
      return Status::Ok();
    });
    EXPECT_TRUE(st.ok() && streamed == blobs[2]) << st.ToString();
    // What needs a local copy says why there is none.
    auto manifest = (*b)->GetManifest(ns, conv.PrefixOf(384));
    ASSERT_FALSE(manifest.ok());
    EXPECT_NE(manifest.status().ToString().find("no local copy"), std::string::npos)
        << manifest.status().ToString();
    EXPECT_GE(warned(name), 2u);
  }
  std::filesystem::remove(filler);
  {
    auto b = Store::Open(o, dir);
    ASSERT_TRUE(b.ok()) << b.status().ToString();
    auto found = (*b)->LongestPrefix(ns, chain);
    ASSERT_TRUE(found.ok()) << found.status().ToString();
    EXPECT_EQ(*found, std::optional<size_t>(chain.size() - 1));
  }
  {
    auto local = Store::Open(Options{}, dir);
    ASSERT_TRUE(local.ok()) << local.status().ToString();
    const Status st = conv.Check(**local, ns, 384);
    EXPECT_TRUE(st.ok()) << "the local copy written once there was room: " << st.ToString();
  }
  // Read-only: a snapshot it lacks (256 tokens) read from the pool.
  const size_t before = warned(conv.PrefixOf(256).ToHex());
  Options ro = o;
  ro.read_only = true;
  auto r = Store::Open(ro, dir);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const Status st = conv.Check(**r, ns, 256);
  EXPECT_TRUE(st.ok()) << "read-only store, a snapshot only the pool holds: " << st.ToString();
  EXPECT_EQ(warned(conv.PrefixOf(256).ToHex()), before);
}

// A put whose local commit fails after its pages went ahead to the pool (a
// full local disk) returns the error and names nothing in the pool: no
// other node finds the snapshot; its pages are orphans, and the reclaim
// that compact runs removes exactly them after the grace, every page a
// manifest names kept.
TEST_F(SharedStoreTest, APutWhoseLocalCommitFailsLeavesOnlyOrphansThatReclaimRemoves) {
  std::string why;
  auto mnt = testing::TmpfsMount::Mount(tmp_.Sub("full"), 32u << 20, &why);
  if (!mnt) GTEST_SKIP() << why;
  const Conversation conv(29), other(31);
  NamespaceId ns = 0;
  auto a = OpenWithChain(conv, tmp_.Sub("a"), &ns);  // pages a manifest names
  ASSERT_TRUE(a);
  const std::set<std::string> before = PageObjects();
  {
    NamespaceId other_ns = 0;
    auto b = OpenRegistered(other, mnt->path() + "/b", &other_ns);
    ASSERT_TRUE(b);
    ASSERT_GT(testing::FillUp(mnt->path() + "/filler"), 0u);
    const Status st = other.Put(*b, other_ns, 384);
    ASSERT_FALSE(st.ok()) << "a put on a full disk returned OK";
  }
  std::set<std::string> orphans;
  for (const auto& page : PageObjects())
    if (!before.contains(page)) orphans.insert(page);
  auto c = Open(tmp_.Sub("c"));
  ASSERT_TRUE(c);
  auto other_ns = c->RegisterNamespace(other.spec());
  ASSERT_TRUE(other_ns.ok()) << other_ns.status().ToString();
  auto found = c->LongestPrefix(*other_ns, other.Chain(384));
  ASSERT_TRUE(found.ok()) << found.status().ToString();
  EXPECT_FALSE(found->has_value()) << "the failed put's snapshot is visible on another node";

  rados::RadosReclaim reclaim(*conn_);
  const auto grace = std::chrono::seconds(3 * kOpTimeoutMs / 1000);
  std::this_thread::sleep_for(grace + 1s);
  auto listing = reclaim.ListReclaimable(grace);
  ASSERT_TRUE(listing.ok()) << listing.status().ToString();
  EXPECT_EQ(listing->reclaimable.size(), orphans.size());
  auto removed = reclaim.Reclaim(listing->reclaimable);
  ASSERT_TRUE(removed.ok()) << removed.status().ToString();
  std::printf("MEASURED a put failed on a full disk: %zu orphan pages in the pool, %zu reclaimed\n",
              orphans.size(), *removed);
  EXPECT_EQ(PageObjects(), before);
  EXPECT_TRUE(conv.Check(*c, ns, 384).ok());
}

// A process killed while the local copies of its lookups are still queued
// on the fill thread loses only those copies: its directory, opened without
// the pool, holds each snapshot whole or not at all, and opened with the
// pool restores every one again, byte-exact.
TEST_F(SharedStoreTest, AProcessKilledWithLocalCopiesQueuedLeavesEachWholeOrAbsent) {
  const int cycles = testing::CyclesFor(0, 8);
  const Conversation conv(23);
  NamespaceId ns = 0;
  auto a = OpenRegistered(conv, tmp_.Sub("a"), &ns);
  ASSERT_TRUE(a);
  const std::vector<uint64_t> sizes{128, 256, 384, 512, 640};
  for (uint64_t n : sizes) ASSERT_TRUE(conv.Put(*a, ns, n).ok()) << n;
  size_t whole = 0, absent = 0;
  for (int cycle = 0; cycle < cycles; ++cycle) {
    const std::string dir = tmp_.Sub("k" + std::to_string(cycle));
    std::vector<std::string> args{"lookups", uri_, dir, "23"};
    for (uint64_t n : sizes) args.push_back(std::to_string(n));
    Child c = Child::Spawn(args);
    const size_t answers = 1 + cycle % sizes.size();
    for (size_t i = 0; i < answers; ++i) {
      const std::string line = c.Line();
      ASSERT_EQ(line, "found " + std::to_string(sizes[i])) << "cycle " << cycle;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(cycle * 3 % 17));
    c.Kill();
    EXPECT_EQ(c.Wait(), 128 + SIGKILL);
    {
      auto local = Store::Open(Options{}, dir);
      ASSERT_TRUE(local.ok()) << "cycle " << cycle << ": " << local.status().ToString();
      for (size_t i = 0; i < sizes.size(); ++i) {
        const Status st = conv.Check(**local, ns, sizes[i]);
        EXPECT_TRUE(st.ok() || st.code() == StatusCode::kNotFound)
            << "cycle " << cycle << ", " << sizes[i]
            << " tokens: a partial local copy: " << st.ToString();
        if (i < answers) (st.ok() ? whole : absent) += 1;  // its lookup answered
      }
    }
    auto again = Open(dir);
    ASSERT_TRUE(again);
    for (uint64_t n : sizes) {
      const Status st = conv.Check(*again, ns, n);
      EXPECT_TRUE(st.ok()) << "cycle " << cycle << ", " << n << " tokens: " << st.ToString();
    }
  }
  std::printf(
      "MEASURED %d kills with local copies queued: of the snapshots whose lookup answered, %zu "
      "copies whole, %zu lost (absent)\n",
      cycles, whole, absent);
}

TEST_F(SharedStoreTest, KilledWriterLosesNothingAcknowledgedAndLeavesNoPartialSnapshot) {
  const char* env = std::getenv("AUXSTORE_SHARED_KILL_CYCLES");
  const int cycles = env ? std::atoi(env) : 10;
  const std::vector<uint64_t> sizes{64, 128, 192, 256, 320, 384, 448, 512};
  std::vector<std::pair<uint64_t, uint64_t>> acked;  // (seed, tokens)
  std::vector<std::pair<uint64_t, uint64_t>> maybe;  // the put in flight when killed
  for (int cycle = 0; cycle < cycles; ++cycle) {
    const uint64_t seed = 1000 + cycle;
    std::vector<std::string> args{"put", uri_, tmp_.Sub("w" + std::to_string(cycle)),
                                  std::to_string(seed)};
    for (uint64_t n : sizes) args.push_back(std::to_string(n));
    Child w = Child::Spawn(args);
    w.Say("go");
    const size_t kill_after = 1 + cycle % 3;
    size_t got = 0;
    while (got < kill_after) {
      const std::string line = w.Line();
      ASSERT_TRUE(line.starts_with("acked ")) << "cycle " << cycle << ": " << line;
      acked.emplace_back(seed, sizes[got++]);
    }
    // 0-45 ms into the next put: its local commit, its pages or its manifest.
    std::this_thread::sleep_for(std::chrono::milliseconds(cycle * 7 % 47));
    w.Kill();
    EXPECT_EQ(w.Wait(), 128 + SIGKILL);
    maybe.emplace_back(seed, sizes[got]);
  }
  auto check_all = [&](const std::string& dir) {
    auto r = Open(dir);
    ASSERT_TRUE(r);
    for (auto [seed, n] : acked) {
      const Conversation conv(seed);
      auto ns = r->RegisterNamespace(conv.spec());
      ASSERT_TRUE(ns.ok());
      Status st = conv.Check(*r, *ns, n);
      EXPECT_TRUE(st.ok()) << "acknowledged snapshot " << seed << "/" << n << ": " << st.ToString();
    }
    for (auto [seed, n] : maybe) {
      const Conversation conv(seed);
      auto ns = r->RegisterNamespace(conv.spec());
      ASSERT_TRUE(ns.ok());
      Status st = conv.Check(*r, *ns, n);
      EXPECT_TRUE(st.ok() || st.code() == StatusCode::kNotFound)
          << "the snapshot being written when killed is partial: " << st.ToString();
    }
  };
  check_all(tmp_.Sub("r1"));
  // Reclaim (what compact on any node runs on the pool) after the grace.
  rados::RadosReclaim reclaim(*conn_);
  const auto grace = std::chrono::seconds(3 * kOpTimeoutMs / 1000);
  std::this_thread::sleep_for(grace + 1s);
  auto listing = reclaim.ListReclaimable(grace);
  ASSERT_TRUE(listing.ok()) << listing.status().ToString();
  auto removed = reclaim.Reclaim(listing->reclaimable);
  ASSERT_TRUE(removed.ok()) << removed.status().ToString();
  std::printf(
      "MEASURED %d kill -9 cycles: %zu acknowledged snapshots, %zu manifests, %zu orphan "
      "pages reclaimed, %zu named pages kept\n",
      cycles, acked.size(), listing->manifests, *removed, listing->named);
  EXPECT_GE(listing->manifests, acked.size());
  EXPECT_LE(listing->manifests, acked.size() + maybe.size());
  check_all(tmp_.Sub("r2"));  // a fresh directory: every byte from the pool again
}

}  // namespace
}  // namespace auxstore::sharedtest
