// Store: round trips, validation, idempotence, namespaces, reopen.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <filesystem>
#include <thread>

#include "auxstore/blob_hash.h"
#include "auxstore/store.h"
#include "tests/support/test_util.h"

namespace auxstore {
namespace {

using testing::DsaBlob;
using testing::PrefixFromSeed;
using testing::QsaBlob;
using testing::RandomBytes;
using testing::TempDir;
using testing::TestSpec;

std::unique_ptr<Store> OpenOrDie(const std::string& path, Options o = {}) {
  auto s = Store::Open(o, path);
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  return s.ok() ? std::move(s).value() : nullptr;
}

class StoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Options o;
    o.chunk_bytes = 64 * 1024;
    options_ = o;
    store_ = OpenOrDie(dir_.path(), options_);
    ns_ = store_->RegisterNamespace(TestSpec()).value();
  }
  void Reopen() {
    store_.reset();
    store_ = OpenOrDie(dir_.path(), options_);
  }

  TempDir dir_;
  Options options_;
  std::unique_ptr<Store> store_;
  NamespaceId ns_ = 0;
};

TEST_F(StoreTest, OpaqueLayersRoundTripAcrossSizesAndChunkBoundaries) {
  const size_t chunk = options_.chunk_bytes;
  const std::vector<size_t> sizes = {0,     1,         17,        chunk - 1,
                                     chunk, chunk + 1, 3 * chunk, 5 * chunk + 123};
  uint64_t seed = 1;
  for (size_t size : sizes) {
    auto blob = RandomBytes(size, seed);
    const Prefix p = PrefixFromSeed(seed++);
    LayerBlob layer{7, Kind::kOpaque, blob};
    ASSERT_TRUE(store_->PutSnapshot(ns_, p, 100, {&layer, 1}).ok()) << size;
    auto back = store_->GetLayer(ns_, p, 7);
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    EXPECT_EQ(*back, blob) << "size " << size;
    auto m = store_->GetManifest(ns_, p);
    ASSERT_TRUE(m.ok());
    EXPECT_EQ(m->layers.at(0).bytes, size);
    LayerHasher digest(*m, m->layers.at(0));
    digest.Update(blob);
    EXPECT_EQ(m->layers.at(0).xxh3, digest.Digest());
    EXPECT_EQ(m->token_count, 100u);
  }
}

TEST_F(StoreTest, ManyLayersOfEveryKindRoundTripAfterReopen) {
  const NamespaceSpec spec = TestSpec();
  std::vector<std::vector<uint8_t>> blobs;
  std::vector<LayerBlob> layers;
  for (uint32_t i = 0; i < 128; ++i) {
    switch (i % 3) {
      case 0:
        blobs.push_back(QsaBlob(spec, 100 + i, (100 + i) / 4, i));
        break;
      case 1:
        blobs.push_back(DsaBlob(spec, 50 + i, i));
        break;
      default:
        blobs.push_back(RandomBytes(1000 * i, i));
        break;
    }
  }
  for (uint32_t i = 0; i < 128; ++i) {
    layers.push_back({i,
                      i % 3 == 0   ? Kind::kQsa
                      : i % 3 == 1 ? Kind::kDsa
                                   : Kind::kOpaque,
                      blobs[i]});
  }
  const Prefix p = PrefixFromSeed(42);
  ASSERT_TRUE(store_->PutSnapshot(ns_, p, 1234, layers).ok());
  Reopen();
  auto m = store_->GetManifest(ns_, p);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  ASSERT_EQ(m->layers.size(), 128u);
  for (uint32_t i = 0; i < 128; ++i) {
    auto back = store_->GetLayer(ns_, p, i);
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    EXPECT_EQ(*back, blobs[i]) << "layer " << i;
  }
}

TEST_F(StoreTest, LargeLayerTakesTheIngestPathAndRoundTrips) {
  auto blob = RandomBytes(64u << 20, 9);
  const Prefix p = PrefixFromSeed(9);
  LayerBlob layer{0, Kind::kOpaque, blob};
  ASSERT_TRUE(store_->PutSnapshot(ns_, p, 1, {&layer, 1}).ok());
  Reopen();
  auto back = store_->GetLayer(ns_, p, 0);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_TRUE(*back == blob);
}

// Snapshots with two halves of 64 MiB or more are written as two SST files
// in parallel (store/db_store_write.cc) and ingested together.
TEST_F(StoreTest, BigSnapshotIsWrittenAsTwoFilesAndRoundTrips) {
  auto count_tables = [this] {
    size_t n = 0;
    for (auto& e : std::filesystem::directory_iterator(dir_.path()))
      n += e.path().extension() == ".sst";
    return n;
  };
  const size_t tables_before = count_tables();
  // 40 + 30 MiB, then 66 MiB: cut before layer 2.
  std::vector<std::vector<uint8_t>> blobs = {RandomBytes(40u << 20, 40), RandomBytes(30u << 20, 41),
                                             RandomBytes((66u << 20) + 3, 42)};
  std::vector<LayerBlob> layers;
  for (uint32_t i = 0; i < 3; ++i) layers.push_back({i, Kind::kOpaque, blobs[i]});
  const Prefix p = PrefixFromSeed(40);
  ASSERT_TRUE(store_->PutSnapshot(ns_, p, 1, layers).ok());
  EXPECT_EQ(count_tables(), tables_before + 2) << "layers 0-1 and layer 2, one file each";
  // Under 64 MiB a half: one file.
  const Prefix q = PrefixFromSeed(41);
  ASSERT_TRUE(store_->PutSnapshot(ns_, q, 1, std::span(layers).first(2)).ok());
  EXPECT_EQ(count_tables(), tables_before + 3);
  Reopen();
  for (uint32_t i = 0; i < 3; ++i) {
    auto back = store_->GetLayer(ns_, p, i);
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    EXPECT_TRUE(*back == blobs[i]) << "layer " << i;
  }
  ASSERT_TRUE(store_->Erase(ns_, p).ok());
  EXPECT_TRUE(store_->GetLayer(ns_, p, 2).status().IsNotFound());
  auto back = store_->GetLayer(ns_, q, 1);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_TRUE(*back == blobs[1]);
}

// Each big put writes its second file on the store's work pool. With one
// work thread, two big puts at once find at most one thread free: the other
// writes both its files itself, and both round-trip.
TEST_F(StoreTest, ConcurrentBigPutsOnOneWorkThreadAllCompleteAndRoundTrip) {
  options_.work_threads = 1;
  Reopen();
  constexpr int kPuts = 2;  // work_threads + 1
  const std::vector<uint8_t> first = RandomBytes(64u << 20, 50),
                             second = RandomBytes(64u << 20, 51);
  const std::vector<LayerBlob> layers = {{0, Kind::kOpaque, first}, {1, Kind::kOpaque, second}};
  std::vector<std::thread> puts;
  std::vector<Status> results(kPuts);
  for (int i = 0; i < kPuts; ++i) {
    puts.emplace_back(
        [&, i] { results[i] = store_->PutSnapshot(ns_, PrefixFromSeed(50 + i), 1, layers); });
  }
  for (std::thread& t : puts) t.join();
  for (const Status& s : results) ASSERT_TRUE(s.ok()) << s.ToString();
  Reopen();
  for (int i = 0; i < kPuts; ++i) {
    for (uint32_t layer = 0; layer < 2; ++layer) {
      auto back = store_->GetLayer(ns_, PrefixFromSeed(50 + i), layer);
      ASSERT_TRUE(back.ok()) << back.status().ToString();
      EXPECT_TRUE(*back == (layer == 0 ? first : second)) << "put " << i << " layer " << layer;
    }
  }
}

TEST_F(StoreTest, ZeroWorkThreadsIsRefused) {
  store_.reset();
  options_.work_threads = 0;
  auto s = Store::Open(options_, dir_.path());
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(s.status().IsInvalidArgument()) << s.status().ToString();
  EXPECT_NE(s.status().ToString().find("work_threads"), std::string::npos);
}

TEST_F(StoreTest, MoreReadLanesThanSixtyFourAreRefusedAndNothingIsCreated) {
  store_.reset();
  options_.read_lanes = 65;
  const std::string fresh = dir_.path() + "/never";
  auto s = Store::Open(options_, fresh);
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(s.status().IsInvalidArgument()) << s.status().ToString();
  EXPECT_NE(s.status().ToString().find("read_lanes"), std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(fresh));
  options_.read_lanes = 64;
  EXPECT_TRUE(Store::Open(options_, fresh).ok());
}

TEST_F(StoreTest, SnapshotWrittenByAnotherProcessRestoresBitExact) {
  store_.reset();
  auto blob = RandomBytes(3u << 20, 77);
  const Prefix p = PrefixFromSeed(77);
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    auto s = Store::Open(options_, dir_.path());
    if (!s.ok()) ::_exit(2);
    LayerBlob layer{3, Kind::kOpaque, blob};
    ::_exit((*s)->PutSnapshot(ns_, p, 5, {&layer, 1}).ok() ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  store_ = OpenOrDie(dir_.path(), options_);
  auto back = store_->GetLayer(ns_, p, 3);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_TRUE(*back == blob);
}

TEST_F(StoreTest, InvalidLayerIsRefusedWithTheCodecErrorAndNothingIsWritten) {
  const NamespaceSpec spec = TestSpec();
  auto good = QsaBlob(spec, 8, 2, 1);
  auto bad = QsaBlob(spec, 8, 3, 2);  // 3 blocks * ratio 4 > 8 ingested
  std::vector<LayerBlob> layers = {{0, Kind::kQsa, good}, {1, Kind::kQsa, bad}};
  const Prefix p = PrefixFromSeed(3);
  Status s = store_->PutSnapshot(ns_, p, 8, layers);
  EXPECT_TRUE(s.IsCorruption()) << s.ToString();
  EXPECT_NE(s.message().find("layer 1"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("pools more than it holds"), std::string::npos) << s.message();
  EXPECT_TRUE(store_->GetManifest(ns_, p).status().IsNotFound());
  EXPECT_EQ(store_->Stats().puts, 0u);
  EXPECT_EQ(store_->Stats().commit_seq, 0u);
}

TEST_F(StoreTest, DsaLayerOfAnotherGeometryIsRefused) {
  NamespaceSpec other = TestSpec();
  other.dsa.index_head_dim = 64;
  auto blob = DsaBlob(other, 10, 1);
  LayerBlob layer{0, Kind::kDsa, blob};
  Status s = store_->PutSnapshot(ns_, PrefixFromSeed(1), 10, {&layer, 1});
  EXPECT_TRUE(s.IsInvalidArgument()) << s.ToString();
  EXPECT_NE(s.message().find("different model geometry"), std::string::npos);
}

TEST_F(StoreTest, BadCallsAreRefusedWithClearErrors) {
  auto blob = RandomBytes(10, 1);
  std::vector<LayerBlob> dup = {{1, Kind::kOpaque, blob}, {1, Kind::kOpaque, blob}};
  EXPECT_NE(store_->PutSnapshot(ns_, PrefixFromSeed(1), 1, dup).message().find("appears twice"),
            std::string::npos);
  EXPECT_TRUE(store_->PutSnapshot(ns_, PrefixFromSeed(1), 1, {}).IsInvalidArgument());
  LayerBlob unknown{0, static_cast<Kind>(9), blob};
  EXPECT_TRUE(store_->PutSnapshot(ns_, PrefixFromSeed(1), 1, {&unknown, 1}).IsInvalidArgument());
  LayerBlob ok{0, Kind::kOpaque, blob};
  Status s = store_->PutSnapshot(ns_ + 1, PrefixFromSeed(1), 1, {&ok, 1});
  EXPECT_TRUE(s.IsNotFound());
  EXPECT_NE(s.message().find("not registered"), std::string::npos);
  EXPECT_EQ(store_->Stats().commit_seq, 0u);
  EXPECT_TRUE(store_->GetLayer(ns_, PrefixFromSeed(1), 0).status().IsNotFound());
}

TEST_F(StoreTest, RePutOfAnExistingPrefixIsANoOp) {
  auto a = RandomBytes(100, 1), b = RandomBytes(100, 2);
  const Prefix p = PrefixFromSeed(1);
  LayerBlob la{0, Kind::kOpaque, a}, lb{0, Kind::kOpaque, b};
  ASSERT_TRUE(store_->PutSnapshot(ns_, p, 1, {&la, 1}).ok());
  ASSERT_TRUE(store_->PutSnapshot(ns_, p, 1, {&lb, 1}).ok());
  EXPECT_EQ(*store_->GetLayer(ns_, p, 0), a);
  EXPECT_EQ(store_->Stats().duplicate_puts, 1u);
  EXPECT_EQ(store_->Stats().commit_seq, 1u);
}

TEST_F(StoreTest, NamespacesAreIsolated) {
  const NamespaceId other = store_->RegisterNamespace(TestSpec("other-model")).value();
  ASSERT_NE(other, ns_);
  auto blob = RandomBytes(100, 1);
  const Prefix p = PrefixFromSeed(1);
  LayerBlob l{0, Kind::kOpaque, blob};
  ASSERT_TRUE(store_->PutSnapshot(ns_, p, 1, {&l, 1}).ok());
  EXPECT_TRUE(store_->GetManifest(other, p).status().IsNotFound());
  EXPECT_FALSE(store_->LongestPrefix(other, {&p, 1}).value().has_value());
  EXPECT_TRUE(store_->LongestPrefix(ns_, {&p, 1}).value().has_value());
}

TEST_F(StoreTest, NamespaceRegistrationIsIdempotentPersistentAndValidated) {
  EXPECT_EQ(store_->RegisterNamespace(TestSpec()).value(), ns_);
  Reopen();
  auto spec = store_->GetNamespace(ns_);
  ASSERT_TRUE(spec.ok());
  EXPECT_EQ(spec->model_id, "test-model");
  EXPECT_EQ(spec->qsa.hd, 64u);
  NamespaceSpec bad = TestSpec();
  bad.qsa.rot = 33;
  auto r = store_->RegisterNamespace(bad);
  EXPECT_TRUE(r.status().IsInvalidArgument());
  EXPECT_NE(r.status().message().find("rot"), std::string::npos);
  EXPECT_EQ(store_->ListNamespaces()->size(), 1u);
}

TEST_F(StoreTest, LongestPrefixReturnsTheLongestPresentCandidate) {
  std::vector<Prefix> cands;
  for (int i = 0; i < 64; ++i) cands.push_back(PrefixFromSeed(1000 + i));
  auto blob = RandomBytes(10, 1);
  LayerBlob l{0, Kind::kOpaque, blob};
  for (int i : {3, 17, 40}) ASSERT_TRUE(store_->PutSnapshot(ns_, cands[i], i, {&l, 1}).ok());
  EXPECT_EQ(store_->LongestPrefix(ns_, cands).value(), std::optional<size_t>(40));
  EXPECT_EQ(store_->LongestPrefix(ns_, std::span(cands).first(40)).value(),
            std::optional<size_t>(17));
  EXPECT_EQ(store_->LongestPrefix(ns_, std::span(cands).first(3)).value(), std::nullopt);
  EXPECT_EQ(store_->LongestPrefix(ns_, {}).value(), std::nullopt);
}

TEST_F(StoreTest, LongestPrefixForTokensChecksTheTokenDigest) {
  std::vector<uint32_t> tokens(64);
  for (uint32_t i = 0; i < 64; ++i) tokens[i] = i * 31 + 7;
  const uint64_t salt = 99;
  auto prefixes = PrefixHashes(tokens, 16, salt);
  auto blob = RandomBytes(10, 1);
  LayerBlob l{0, Kind::kOpaque, blob};
  PutOptions with_digest;
  with_digest.token_digest = DigestTokens(std::span(tokens).first(32), salt);
  ASSERT_TRUE(store_->PutSnapshot(ns_, prefixes[1], 32, {&l, 1}, with_digest).ok());
  auto m = store_->LongestPrefixForTokens(ns_, tokens, 16, salt);
  ASSERT_TRUE(m.ok());
  ASSERT_TRUE(m->has_value());
  EXPECT_EQ((*m)->tokens, 32u);
  EXPECT_EQ((*m)->prefix, prefixes[1]);

  // A snapshot planted under prefix[3] with another sequence's digest is a
  // collision: the lookup falls back to the genuine shorter match.
  PutOptions wrong;
  wrong.token_digest = DigestTokens(std::vector<uint32_t>{1, 2, 3}, salt);
  ASSERT_TRUE(store_->PutSnapshot(ns_, prefixes[3], 64, {&l, 1}, wrong).ok());
  m = store_->LongestPrefixForTokens(ns_, tokens, 16, salt);
  ASSERT_TRUE(m.ok() && m->has_value());
  EXPECT_EQ((*m)->tokens, 32u);
  EXPECT_TRUE(store_->LongestPrefixForTokens(ns_, tokens, 0, salt).status().IsInvalidArgument());
}

TEST_F(StoreTest, EraseRemovesTheSnapshotAndListSeesWhatIsLeft) {
  auto blob = RandomBytes(200, 1);
  LayerBlob l{0, Kind::kOpaque, blob};
  for (int i = 0; i < 5; ++i)
    ASSERT_TRUE(store_->PutSnapshot(ns_, PrefixFromSeed(i), 1, {&l, 1}).ok());
  ASSERT_TRUE(store_->Erase(ns_, PrefixFromSeed(2)).ok());
  // Erasing what is not there is OK and changes nothing (no commit).
  const uint64_t commits = store_->Stats().commit_seq;
  EXPECT_TRUE(store_->Erase(ns_, PrefixFromSeed(2)).ok());
  EXPECT_EQ(store_->Stats().commit_seq, commits);
  EXPECT_TRUE(store_->GetLayer(ns_, PrefixFromSeed(2), 0).status().IsNotFound());
  int n = 0;
  ASSERT_TRUE(store_
                  ->List(ns_,
                         [&](const SnapshotInfo& info) {
                           EXPECT_NE(info.prefix, PrefixFromSeed(2));
                           ++n;
                           return true;
                         })
                  .ok());
  EXPECT_EQ(n, 4);
}

TEST_F(StoreTest, StoreDirectoryAndFilesAreOwnerOnlyWhateverTheUmask) {
  store_.reset();
  const mode_t old = ::umask(0);
  TempDir d;
  std::string path = d.Sub("store");
  {
    auto s = OpenOrDie(path);
    ASSERT_TRUE(s);
    auto ns = s->RegisterNamespace(TestSpec()).value();
    auto blob = RandomBytes(2u << 20, 1);
    LayerBlob l{0, Kind::kOpaque, blob};
    ASSERT_TRUE(s->PutSnapshot(ns, PrefixFromSeed(1), 1, {&l, 1}).ok());
  }
  ::umask(old);
  struct stat st;
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  for (auto& e : std::filesystem::recursive_directory_iterator(path)) {
    ASSERT_EQ(::stat(e.path().c_str(), &st), 0);
    if (e.is_regular_file()) {
      EXPECT_EQ(st.st_mode & 0077, 0u) << e.path();
    }
  }
}

TEST_F(StoreTest, ReadOnlyOpenServesReadsAndRefusesWrites) {
  auto blob = RandomBytes(300, 1);
  LayerBlob l{0, Kind::kOpaque, blob};
  ASSERT_TRUE(store_->PutSnapshot(ns_, PrefixFromSeed(1), 1, {&l, 1}).ok());
  Options ro = options_;
  ro.read_only = true;
  auto reader = OpenOrDie(dir_.path(), ro);  // while the writer is open
  ASSERT_TRUE(reader);
  EXPECT_EQ(*reader->GetLayer(ns_, PrefixFromSeed(1), 0), blob);
  Status s = reader->PutSnapshot(ns_, PrefixFromSeed(2), 1, {&l, 1});
  EXPECT_EQ(s.code(), StatusCode::kUnavailable);
  EXPECT_NE(s.message().find("read-only"), std::string::npos);
}

TEST_F(StoreTest, SecondWriterIsRefusedAsBusy) {
  auto second = Store::Open(options_, dir_.path());
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), StatusCode::kBusy) << second.status().ToString();
}

TEST_F(StoreTest, WriterInAnotherProcessMakesOpenBusyAndTheDirectoryIsUntouched) {
  store_.reset();
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    auto s = Store::Open(options_, dir_.path());
    char c = s.ok() ? 'y' : 'n';
    (void)!::write(ready[1], &c, 1);
    ::pause();  // hold the store until killed
    ::_exit(0);
  }
  char c = 0;
  ASSERT_EQ(::read(ready[0], &c, 1), 1);
  ASSERT_EQ(c, 'y');
  std::vector<std::string> before;
  for (auto& e : std::filesystem::directory_iterator(dir_.path())) before.push_back(e.path());
  auto second = Store::Open(options_, dir_.path());
  std::vector<std::string> after;
  for (auto& e : std::filesystem::directory_iterator(dir_.path())) after.push_back(e.path());
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), StatusCode::kBusy) << second.status().ToString();
  std::sort(before.begin(), before.end());
  std::sort(after.begin(), after.end());
  EXPECT_EQ(before, after) << "a refused open must not create or rotate files";
}

TEST(StoreOpenTest, OpenRefusesBadOptionsAndMissingStores) {
  TempDir d;
  Options o;
  o.chunk_bytes = 0;
  EXPECT_TRUE(Store::Open(o, d.Sub("x")).status().IsInvalidArgument());
  Options ro;
  ro.read_only = true;
  EXPECT_TRUE(Store::Open(ro, d.Sub("missing")).status().IsNotFound());
  EXPECT_TRUE(Store::Open(Options(), "").status().IsInvalidArgument());
}

}  // namespace
}  // namespace auxstore
