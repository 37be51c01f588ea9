// Failure trials at the RADOS level, on the ctest fixture's cluster (size 3,
// min_size 2):
//   - kill -9 of one OSD (cluster.sh kill-osd, a different one each trial)
//     while a writer puts snapshots (pages, then the manifest) and a reader
//     reads acknowledged pages back; the OSD is started again (start-osd) and
//     the trial ends once every PG is active+clean. Nothing acknowledged is
//     lost, every read is exact, and the pool verifies clean at the end;
//   - the whole cluster stopped: verify, repair and compact return
//     Unavailable; started again on the same dir: everything acknowledged is
//     there and the pool verifies clean.
//
//   rados_osd_trials_test [--trials=N] [gtest flags]
// N defaults to AUXSTORE_OSD_TRIALS or 2 (about 40 s each on this machine);
// the bar is --trials=10. Figures are printed (MEASURED), not asserted.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <future>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "store/rados/rados_manifests.h"
#include "store/rados/rados_page_store.h"
#include "store/rados/rados_pool_check.h"
#include "tests/rados/osd_trials_env.h"
#include "tests/rados/rados_test_env.h"

namespace auxstore::rados {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using testenv::Connect;
using testenv::PageBytes;
using testenv::UriFor;
using trials::Cluster;
using trials::RunTrials;
using trials::Since;
using trials::WaitActiveClean;

constexpr size_t kPagesPerSnapshot = 8, kPageBytes = 65536;

std::vector<uint8_t> Bytes(const std::string& s) { return {s.begin(), s.end()}; }
// Snapshot `s`'s pages: family 5000 + s.
std::vector<std::vector<uint8_t>> SnapshotPages(uint64_t s) {
  std::vector<std::vector<uint8_t>> pages;
  for (size_t i = 0; i < kPagesPerSnapshot; ++i)
    pages.push_back(PageBytes(5000 + s, i, kPageBytes));
  return pages;
}

std::vector<uint8_t> SnapshotId(uint64_t s) { return Bytes("trial-snap-" + std::to_string(s)); }

// Removes every object of the test's namespace (the OSDs' files are small).
void RemoveNamespace(RadosConnection& conn) {
  auto objects = ListNamespaceObjects(conn);
  ASSERT_TRUE(objects.ok()) << objects.status().ToString();
  for (const std::string& o : *objects) conn.io().remove(o);
}

// Puts snapshots one after another until told to stop: pages, then the
// manifest; a snapshot is acknowledged when its commit returned.
struct Writer {
  RadosConnection& conn;
  std::mutex mu;
  std::vector<uint64_t> acked;  // snapshot numbers
  std::atomic<uint64_t> next{0};
  std::atomic<size_t> failures{0};
  std::atomic<bool> stop{false};
  double slowest = 0;

  size_t Acked() {
    std::lock_guard<std::mutex> lock(mu);
    return acked.size();
  }
  void Run() {
    RadosPageStore pages(conn, 16);
    RadosManifests manifests(conn);
    while (!stop) {
      const uint64_t s = next++;
      auto bytes = SnapshotPages(s);
      std::vector<ByteSpan> spans(bytes.begin(), bytes.end());
      auto t0 = Clock::now();
      auto put = pages.PutPages(spans);
      Status st = put.status();
      if (put.ok()) st = manifests.Commit(SnapshotId(s), spans.front(), put->keys).status();
      slowest = std::max(slowest, Since(t0));
      if (!st.ok()) {
        ++failures;
        ADD_FAILURE() << "snapshot " << s << ": " << st.ToString();
        continue;
      }
      {
        std::lock_guard<std::mutex> lock(mu);
        acked.push_back(s);
      }
      std::this_thread::sleep_for(20ms);  // paced: the trials' data stays small
    }
  }
};

// Reads pages of acknowledged snapshots at random until told to stop.
struct Reader {
  RadosConnection& conn;
  Writer& writer;
  std::atomic<size_t> reads{0}, wrong{0}, errors{0};
  std::atomic<bool> stop{false};

  void Run() {
    RadosPageStore pages(conn, 16);
    std::mt19937_64 rng(42);
    while (!stop) {
      uint64_t s;
      {
        std::lock_guard<std::mutex> lock(writer.mu);
        if (writer.acked.empty()) {
          s = UINT64_MAX;
        } else {
          s = writer.acked[rng() % writer.acked.size()];
        }
      }
      if (s == UINT64_MAX) {
        std::this_thread::sleep_for(10ms);
        continue;
      }
      auto bytes = SnapshotPages(s);
      std::vector<PageKey> keys;
      for (const auto& b : bytes) keys.push_back(PageKey::Of(b));
      auto got = pages.ReadPages(keys);
      for (size_t i = 0; i < keys.size(); ++i) {
        ++reads;
        if (!got[i].ok()) {
          ++errors;
          ADD_FAILURE() << "read of acknowledged snapshot " << s << ": "
                        << got[i].status().ToString();
        } else if (*got[i] != bytes[i]) {
          ++wrong;
          ADD_FAILURE() << "snapshot " << s << " page " << i << " read back different bytes";
        }
      }
    }
  }
};

TEST(RadosOsdTrials, OneOsdKilledDuringPutsAndReadsLosesNothing) {
  const std::string ns = testenv::UniqueNamespace();
  auto conn = Connect(UriFor(ns));
  ASSERT_TRUE(conn);
  ASSERT_TRUE(WaitActiveClean(180s)) << "the cluster is not active+clean to begin with";
  Writer writer{*conn};
  Reader reader{*conn, writer};
  std::thread w([&] { writer.Run(); });
  std::thread r([&] { reader.Run(); });
  // Returns early on a failed assertion.
  RunTrials([&] { return writer.Acked(); }, [&] { return reader.reads.load(); });
  writer.stop = reader.stop = true;
  w.join();
  r.join();
  if (HasFatalFailure()) return;
  std::printf(
      "MEASURED %d trials: %zu snapshots of %zu x 64 KiB (paced) acknowledged, %zu failed puts, "
      "slowest "
      "put+commit %.2f s; %zu page reads, %zu wrong, %zu errors\n",
      trials::g_trials, writer.Acked(), kPagesPerSnapshot, writer.failures.load(), writer.slowest,
      reader.reads.load(), reader.wrong.load(), reader.errors.load());
  EXPECT_EQ(writer.failures, 0u);
  EXPECT_EQ(reader.wrong, 0u);
  EXPECT_EQ(reader.errors, 0u);

  // Every acknowledged snapshot: its manifest and pages, exact; the pool clean.
  RadosManifests manifests(*conn);
  RadosPageStore pages(*conn);
  for (uint64_t s : writer.acked) {
    auto m = manifests.Read(SnapshotId(s));
    ASSERT_TRUE(m.ok()) << "acknowledged snapshot " << s << ": " << m.status().ToString();
    auto bytes = SnapshotPages(s);
    EXPECT_EQ(m->bytes, bytes.front());
    std::vector<PageKey> keys;
    for (const auto& b : bytes) keys.push_back(PageKey::Of(b));
    auto got = pages.ReadPages(keys);
    for (size_t i = 0; i < keys.size(); ++i) {
      ASSERT_TRUE(got[i].ok()) << got[i].status().ToString();
      EXPECT_EQ(*got[i], bytes[i]) << "snapshot " << s << " page " << i;
    }
  }
  auto verified = RadosPoolCheck(*conn).Verify();
  ASSERT_TRUE(verified.ok()) << verified.status().ToString();
  EXPECT_TRUE(verified->Clean());
  EXPECT_EQ(verified->manifests.size(), writer.Acked());
  RemoveNamespace(*conn);
}

// Runs `call` on its own thread; aborts the binary if it has not returned
// after `bound` (a hang must fail, not block ctest). Prints how long it took.
template <typename Call>
Status Returns(const std::string& what, std::chrono::seconds bound, Call call) {
  auto t0 = Clock::now();
  std::packaged_task<Status()> task(std::move(call));
  auto result = task.get_future();
  std::thread(std::move(task)).detach();
  if (result.wait_for(bound) != std::future_status::ready) {
    std::fprintf(stderr, "FATAL: %s did not return within %lld s\n", what.c_str(),
                 static_cast<long long>(bound.count()));
    std::abort();
  }
  Status st = result.get();
  std::printf("MEASURED %-32s -> %s after %.2f s\n", what.c_str(),
              std::string(StatusCodeName(st.code())).c_str(), Since(t0));
  std::fflush(stdout);
  return st;
}

TEST(RadosOsdTrials, WholeClusterStoppedAndStartedKeepsEverythingAcknowledged) {
  const std::string ns = testenv::UniqueNamespace();
  constexpr uint32_t kOpTimeoutMs = 3000;
  auto conn = Connect(UriFor(ns, kOpTimeoutMs));
  ASSERT_TRUE(conn);
  RadosPageStore pages(*conn);
  RadosManifests manifests(*conn);
  constexpr uint64_t kSnapshots = 8;
  for (uint64_t s = 0; s < kSnapshots; ++s) {
    auto bytes = SnapshotPages(1000 + s);
    std::vector<ByteSpan> spans(bytes.begin(), bytes.end());
    auto put = pages.PutPages(spans);
    ASSERT_TRUE(put.ok()) << put.status().ToString();
    ASSERT_TRUE(manifests.Commit(SnapshotId(1000 + s), spans.front(), put->keys).ok());
  }

  ASSERT_EQ(testenv::Shell(Cluster("stop")), 0);
  RadosPoolCheck check(*conn);
  // A few op timeouts at most (a listing, then nothing else gets sent); a
  // hang would run into the bound.
  const auto bound = std::chrono::seconds(10 * kOpTimeoutMs / 1000 + 30);
  auto unavailable = [](const Status& st) {
    EXPECT_EQ(st.code(), StatusCode::kUnavailable) << st.ToString();
  };
  unavailable(Returns("cluster stopped: verify", bound, [&] { return check.Verify().status(); }));
  unavailable(Returns("cluster stopped: repair", bound, [&] { return check.Repair().status(); }));
  unavailable(
      Returns("cluster stopped: compact", bound, [&] { return check.Compact(9s).status(); }));

  auto t0 = Clock::now();
  ASSERT_EQ(testenv::Shell(Cluster("start") + " > /dev/null"), 0);
  std::printf("MEASURED cluster start (same dir) to HEALTH_OK: %.1f s\n", Since(t0));
  auto again = Connect(UriFor(ns));
  ASSERT_TRUE(again);
  auto verified = RadosPoolCheck(*again).Verify();
  ASSERT_TRUE(verified.ok()) << verified.status().ToString();
  EXPECT_TRUE(verified->Clean());
  EXPECT_EQ(verified->manifests.size(), kSnapshots);
  EXPECT_EQ(verified->pages_checked, kSnapshots * kPagesPerSnapshot);
  EXPECT_EQ(verified->bytes_checked, kSnapshots * kPagesPerSnapshot * kPageBytes);
  for (uint64_t s = 0; s < kSnapshots; ++s) {
    auto bytes = SnapshotPages(1000 + s);
    std::vector<PageKey> keys;
    for (const auto& b : bytes) keys.push_back(PageKey::Of(b));
    auto got = RadosPageStore(*again).ReadPages(keys);
    for (size_t i = 0; i < keys.size(); ++i) {
      ASSERT_TRUE(got[i].ok()) << got[i].status().ToString();
      EXPECT_EQ(*got[i], bytes[i]);
    }
  }
  RemoveNamespace(*again);
}

}  // namespace
}  // namespace auxstore::rados

int main(int argc, char** argv) {
  testing::InitGoogleTest(&argc, argv);
  if (!auxstore::rados::trials::ParseTrials(argc, argv)) return 2;
  return RUN_ALL_TESTS();
}
