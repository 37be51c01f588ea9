// The C ABI over a shared pool, as a connector uses it: one process puts
// snapshots through auxstore_put_snapshot; another, with its own local
// directory, reads them into its registered host memory with one host read
// (multi-MiB layers cut into jobs, each read straight from the pool), every
// byte exact. Once that store is closed its directory holds every snapshot:
// the jobs read each in part, and each was restored behind them. Only the C
// ABI is linked (auxstore::c), as an engine links it.
#include <gtest/gtest.h>
#include <unistd.h>

#include <array>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <string>
#include <vector>

#include "auxstore/c.h"

namespace {

// OK, or the error's code and message (freed).
testing::AssertionResult Ok(int rc, char*& err) {
  if (rc == AUXSTORE_OK) return testing::AssertionSuccess();
  testing::AssertionResult out = testing::AssertionFailure()
                                 << "rc " << rc << ": " << (err ? err : "(no message)");
  auxstore_free(err);
  err = nullptr;
  return out;
}

class SharedCapiTest : public testing::Test {
 protected:
  void SetUp() override {
    const auto* info = testing::UnitTest::GetInstance()->current_test_info();
    const std::string unique = std::string(info->test_suite_name()) + "." + info->name() + "." +
                               std::to_string(getpid()) + "." + std::to_string(time(nullptr));
    uri_ = std::string("rados://auxstore?conf=") + AUXSTORE_CEPH_DIR +
           "/ceph.conf&namespace=" + unique;
    dir_ = std::filesystem::temp_directory_path() / ("auxstore-" + unique);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // A store at dir_/name, on the pool when `shared`; null on a failure.
  // `local_copies` 0: Options::shared_local_copies off.
  auxstore_t* Open(const std::string& name, bool shared, int local_copies = 1) {
    auxstore_options_t* o = auxstore_options_create();
    char* err = nullptr;
    if (shared) {
      EXPECT_TRUE(Ok(auxstore_options_set_shared(o, uri_.c_str(), AUXSTORE_SHARED_THROUGH,
                                                 256u << 20, 0, &err),
                     err));
      EXPECT_TRUE(Ok(auxstore_options_set_shared_local_copies(o, local_copies, &err), err));
    }
    auxstore_t* db = nullptr;
    EXPECT_TRUE(Ok(auxstore_open((dir_ / name).c_str(), o, &db, &err), err));
    auxstore_options_destroy(o);
    return db;
  }

  std::string uri_;
  std::filesystem::path dir_;
};

constexpr uint32_t kSnapshots = 3;
constexpr uint32_t kLayers = 3;

size_t LayerBytes(uint32_t s, uint32_t l) {
  const size_t sizes[kLayers] = {(3u << 20) + 17, (3u << 19) + 5 * s, 4096 + s};
  return sizes[l];
}
uint8_t ByteOf(uint32_t s, uint32_t l, size_t b) {
  return static_cast<uint8_t>(s * 131 + l * 17 + b * 7 + (b >> 9));
}
void PrefixOf(uint32_t s, uint8_t out[16]) {
  for (int b = 0; b < 16; ++b) out[b] = static_cast<uint8_t>(s * 41 + b * 3 + 1);
}

// One host read of every layer of every snapshot into one registered
// buffer; OK when every target reads back exact.
testing::AssertionResult ReadAll(auxstore_t* db, uint64_t ns) {
  size_t total = 0;
  for (uint32_t s = 0; s < kSnapshots; ++s)
    for (uint32_t l = 0; l < kLayers; ++l) total += LayerBytes(s, l);
  std::vector<uint8_t> host(total, 0xEE);
  char* err = nullptr;
  auxstore_host_buffer_t* buffer = nullptr;
  if (auto r = Ok(auxstore_register_host_buffer(db, host.data(), host.size(), &buffer, &err), err);
      !r) {
    return r << " (register)";
  }
  std::vector<auxstore_host_read_target_t> targets;
  size_t offset = 0;
  for (uint32_t s = 0; s < kSnapshots; ++s) {
    for (uint32_t l = 0; l < kLayers; ++l) {
      auxstore_host_read_target_t t{};
      t.ns = ns;
      PrefixOf(s, t.prefix);
      t.layer = l;
      t.buffer = buffer;
      t.offset = offset;
      t.capacity = LayerBytes(s, l);
      targets.push_back(t);
      offset += t.capacity;
    }
  }
  auxstore_host_read_t* read = nullptr;
  testing::AssertionResult out = testing::AssertionSuccess();
  if (auto r = Ok(auxstore_host_read_start(db, targets.data(), targets.size(), &read, &err), err);
      !r) {
    out = r << " (start)";
  } else {
    if (auto w = Ok(auxstore_host_read_wait(read, &err), err); !w) out = w << " (wait)";
    auxstore_host_read_release(read);
  }
  (void)auxstore_unregister_host_buffer(buffer, &err);
  auxstore_free(err);
  if (!out) return out;
  offset = 0;
  for (uint32_t s = 0; s < kSnapshots; ++s) {
    for (uint32_t l = 0; l < kLayers; ++l) {
      for (size_t b = 0; b < LayerBytes(s, l); ++b) {
        if (host[offset + b] != ByteOf(s, l, b)) {
          return testing::AssertionFailure()
                 << "snapshot " << s << ", layer " << l << ": byte " << b << " differs";
        }
      }
      offset += LayerBytes(s, l);
    }
  }
  return testing::AssertionSuccess();
}

// Puts every snapshot through `db`, its namespace registered (in *ns): one
// auxstore_put_snapshot each, or all in one auxstore_put_snapshots.
testing::AssertionResult PutAll(auxstore_t* db, uint64_t* ns, bool batch = false) {
  const auxstore_geometry_t opaque_only = {0, 0, 0, 0, 0.0f, 0.0f, 0, 0};
  char* err = nullptr;
  if (auto r = Ok(auxstore_register_namespace(db, "shared-capi", &opaque_only, ns, &err), err);
      !r) {
    return r << " (register)";
  }
  std::vector<std::vector<std::vector<uint8_t>>> bytes(kSnapshots);
  std::vector<std::vector<auxstore_layer_t>> layers(kSnapshots);
  std::vector<auxstore_snapshot_put_t> puts(kSnapshots);
  for (uint32_t s = 0; s < kSnapshots; ++s) {
    bytes[s].resize(kLayers);
    for (uint32_t l = 0; l < kLayers; ++l) {
      bytes[s][l].resize(LayerBytes(s, l));
      for (size_t b = 0; b < bytes[s][l].size(); ++b) bytes[s][l][b] = ByteOf(s, l, b);
      layers[s].push_back({l, AUXSTORE_KIND_OPAQUE, bytes[s][l].data(), bytes[s][l].size()});
    }
    puts[s] = {*ns, {}, 64, layers[s].size(), layers[s].data(), nullptr};
    PrefixOf(s, puts[s].prefix);
    if (batch) continue;
    if (auto r = Ok(auxstore_put_snapshot(db, *ns, puts[s].prefix, 64, layers[s].size(),
                                          layers[s].data(), &err),
                    err);
        !r) {
      return r << " (put " << s << ")";
    }
  }
  if (batch) {
    std::vector<int> results(kSnapshots, -1);
    if (auto r =
            Ok(auxstore_put_snapshots(db, puts.data(), puts.size(), results.data(), &err), err);
        !r) {
      return r << " (put_snapshots)";
    }
    for (uint32_t s = 0; s < kSnapshots; ++s) {
      if (results[s] != AUXSTORE_OK) {
        return testing::AssertionFailure() << "snapshot " << s << ": rc " << results[s];
      }
    }
  }
  return testing::AssertionSuccess();
}

TEST_F(SharedCapiTest, HostReadsOfAnotherProcessesSnapshotsComeFromThePoolAndAreCopiedLocally) {
  uint64_t ns = 0;
  auxstore_t* a = Open("a", /*shared=*/true);
  ASSERT_NE(a, nullptr);
  ASSERT_TRUE(PutAll(a, &ns));
  auxstore_close(a);

  // Another process's store: nothing local, no lookup before.
  auxstore_t* b = Open("b", /*shared=*/true);
  ASSERT_NE(b, nullptr);
  EXPECT_TRUE(ReadAll(b, ns)) << "from the pool";
  EXPECT_TRUE(ReadAll(b, ns)) << "again, wherever each is by now";
  auxstore_close(b);  // writes the local copies queued

  // Its directory alone, without the pool: every snapshot whole.
  auxstore_t* local = Open("b", /*shared=*/false);
  ASSERT_NE(local, nullptr);
  EXPECT_TRUE(ReadAll(local, ns)) << "the local copies";
  auxstore_close(local);
}

// A store with no local copies puts to the pool alone (here all in one
// auxstore_put_snapshots): another store reads every byte, and the putting
// store's directory holds nothing.
TEST_F(SharedCapiTest, PutsWithoutLocalCopiesGoToThePoolAlone) {
  uint64_t ns = 0;
  auxstore_t* a = Open("a", /*shared=*/true, /*local_copies=*/0);
  ASSERT_NE(a, nullptr);
  ASSERT_TRUE(PutAll(a, &ns, /*batch=*/true));
  EXPECT_TRUE(ReadAll(a, ns)) << "from the pool";
  auxstore_close(a);
  auxstore_t* b = Open("b", /*shared=*/true);
  ASSERT_NE(b, nullptr);
  EXPECT_TRUE(ReadAll(b, ns)) << "another store, from the pool";
  auxstore_close(b);
  auxstore_t* local = Open("a", /*shared=*/false);
  ASSERT_NE(local, nullptr);
  auxstore_stats_t stats{};
  char* err = nullptr;
  ASSERT_TRUE(Ok(auxstore_stats(local, &stats, &err), err));
  EXPECT_EQ(stats.snapshots, 0u) << "a put without local copies wrote one";
  auxstore_close(local);
}

// Puts from registered memory on a pool (a connector's many small pages,
// auxstore_host_put_start): small snapshots share one batch per job, each
// its own outcome; another store reads every byte.
TEST_F(SharedCapiTest, PutsFromRegisteredMemoryOfManySmallSnapshotsReachThePoolExact) {
  constexpr uint32_t kPages = 40;
  constexpr size_t kPage = 12 * 1024;
  const auxstore_geometry_t opaque_only = {0, 0, 0, 0, 0.0f, 0.0f, 0, 0};
  char* err = nullptr;
  uint64_t ns = 0;
  auxstore_t* a = Open("a", /*shared=*/true);
  ASSERT_NE(a, nullptr);
  ASSERT_TRUE(Ok(auxstore_register_namespace(a, "shared-capi", &opaque_only, &ns, &err), err));
  std::vector<uint8_t> host(kPages * 2 * kPage);
  for (size_t b = 0; b < host.size(); ++b) host[b] = static_cast<uint8_t>(b * 2654435761u >> 13);
  auxstore_host_buffer_t* buffer = nullptr;
  ASSERT_TRUE(Ok(auxstore_register_host_buffer(a, host.data(), host.size(), &buffer, &err), err));
  std::vector<std::array<auxstore_host_layer_t, 2>> layers(kPages);
  std::vector<auxstore_host_put_t> puts(kPages);
  for (uint32_t s = 0; s < kPages; ++s) {
    for (uint32_t l = 0; l < 2; ++l) {
      layers[s][l] = {l, AUXSTORE_KIND_OPAQUE, buffer, (s * 2 + l) * kPage, kPage - 7 * l};
    }
    puts[s] = {ns, {}, 16, 2, layers[s].data()};
    PrefixOf(100 + s, puts[s].prefix);
  }
  auxstore_host_read_t* put = nullptr;
  ASSERT_TRUE(Ok(auxstore_host_put_start(a, puts.data(), puts.size(), &put, &err), err));
  EXPECT_TRUE(Ok(auxstore_host_read_wait(put, &err), err));
  for (uint32_t s = 0; s < kPages; ++s) {
    size_t size = 0;
    EXPECT_TRUE(Ok(auxstore_host_read_wait_target(put, s, &size, &err), err)) << s;
    EXPECT_EQ(size, 2 * kPage - 7) << s;
  }
  auxstore_host_read_release(put);
  ASSERT_TRUE(Ok(auxstore_unregister_host_buffer(buffer, &err), err));
  auxstore_close(a);

  auxstore_t* b = Open("b", /*shared=*/true, /*local_copies=*/0);
  ASSERT_NE(b, nullptr);
  for (uint32_t s = 0; s < kPages; ++s) {
    for (uint32_t l = 0; l < 2; ++l) {
      void* got = nullptr;
      size_t size = 0;
      ASSERT_TRUE(Ok(auxstore_get_layer(b, ns, puts[s].prefix, l, &got, &size, &err), err))
          << s << "/" << l;
      const uint8_t* want = host.data() + (s * 2 + l) * kPage;
      EXPECT_TRUE(size == kPage - 7 * l && std::memcmp(got, want, size) == 0) << s << "/" << l;
      auxstore_free(got);
    }
  }
  auxstore_close(b);
}

}  // namespace
