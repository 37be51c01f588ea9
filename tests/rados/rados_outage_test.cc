// The cluster failing under a connected client (the ctest fixture's cluster,
// which these tests restart before they end). One OSD killed mid-put: the
// writes stall and continue, nothing acknowledged is lost. Then:
//   1. every OSD killed (cluster.sh kill-osd): each call returns Unavailable,
//      bounded by the op timeout, and nothing hangs; the OSDs restarted: the
//      acknowledged pages are there;
//   2. the whole cluster stopped: connecting returns Unavailable too;
//   3. the cluster started again: everything acknowledged before is there.
// The figures (how long each call took) are printed, not asserted: the test
// asserts that each call returns (within a bound far above the timeout, so
// a hang fails instead of blocking ctest).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "store/rados/rados_manifests.h"
#include "store/rados/rados_page_store.h"
#include "store/rados/rados_reclaim.h"
#include "tests/rados/rados_test_env.h"

namespace auxstore::rados {
namespace {

using namespace std::chrono_literals;
using testenv::Connect;
using testenv::PageBytes;
using testenv::UriFor;

constexpr uint32_t kOpTimeoutMs = 3000;
// Far above any call's bound (a connect or an op: one timeout; a commit's
// touch round then its create: two); only a hang gets near it.
constexpr auto kHangBound = std::chrono::milliseconds(10 * kOpTimeoutMs + 30'000);

std::vector<uint8_t> Bytes(const std::string& s) { return {s.begin(), s.end()}; }

// cluster.sh COMMAND DIR [ARG] on the fixture's cluster.
void ClusterSh(const std::string& command, const std::string& arg = "") {
  const std::string cmd =
      testenv::ClusterSh() + " " + command + " " + testenv::ClusterDir() + " " + arg;
  ASSERT_EQ(testenv::Shell(cmd), 0) << cmd;
}

// Runs `call` on its own thread and waits for it up to kHangBound: the
// Status it returned, and prints how long it took. A call that does not
// return aborts the test binary (its thread still holds the client).
Status Returns(const std::string& what, std::function<Status()> call) {
  auto started = std::chrono::steady_clock::now();
  std::packaged_task<Status()> task(std::move(call));
  auto result = task.get_future();
  std::thread(std::move(task)).detach();
  if (result.wait_for(kHangBound) != std::future_status::ready) {
    std::fprintf(stderr, "FATAL: %s did not return within %lld ms\n", what.c_str(),
                 static_cast<long long>(kHangBound.count()));
    std::abort();
  }
  Status st = result.get();
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  std::printf("MEASURED %-42s -> %s after %.2f s\n", what.c_str(),
              std::string(StatusCodeName(st.code())).c_str(), secs);
  std::fflush(stdout);
  return st;
}

// One OSD of three killed while a writer puts (size 3, min_size 2): the
// writes stall and continue, none fails, and every acknowledged page reads
// back exact, before and after the OSD is back.
TEST(RadosOutage, OneOsdKilledMidPutLosesNothing) {
  const std::string ns = testenv::UniqueNamespace();
  auto conn = Connect(UriFor(ns));
  ASSERT_TRUE(conn);
  constexpr int kBatches = 40, kKillAfter = 5, kRestartAfter = 25, kPerBatch = 16;
  std::atomic<int> acked_batches{0};
  std::atomic<bool> failed{false};
  double slowest = 0;
  std::thread writer([&] {
    RadosPageStore pages(*conn);
    for (int b = 0; b < kBatches; ++b) {
      std::vector<std::vector<uint8_t>> batch;
      for (int i = 0; i < kPerBatch; ++i) batch.push_back(PageBytes(40 + b, i, 65536));
      std::vector<ByteSpan> spans(batch.begin(), batch.end());
      auto t0 = std::chrono::steady_clock::now();
      auto put = pages.PutPages(spans);
      slowest = std::max(
          slowest, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
      if (!put.ok()) {
        ADD_FAILURE() << "batch " << b << ": " << put.status().ToString();
        failed = true;
        return;
      }
      acked_batches = b + 1;
    }
  });
  auto wait_for = [&](int n) {
    while (acked_batches < n && !failed) std::this_thread::sleep_for(10ms);
  };
  wait_for(kKillAfter);
  ClusterSh("kill-osd", "1");
  wait_for(kRestartAfter);
  ClusterSh("start-osd", "1");
  writer.join();
  std::printf("MEASURED one OSD killed: %d batches of %d x 64 KiB acknowledged, slowest %.2f s\n",
              acked_batches.load(), kPerBatch, slowest);
  ASSERT_FALSE(failed);
  RadosPageStore pages(*conn);
  for (int b = 0; b < kBatches; ++b) {
    std::vector<PageKey> keys;
    for (int i = 0; i < kPerBatch; ++i) keys.push_back(PageKey::Of(PageBytes(40 + b, i, 65536)));
    auto got = pages.ReadPages(keys);
    for (int i = 0; i < kPerBatch; ++i) {
      ASSERT_TRUE(got[i].ok()) << got[i].status().ToString();
      EXPECT_EQ(*got[i], PageBytes(40 + b, i, 65536));
    }
  }
}

TEST(RadosOutage, EveryCallReturnsUnavailableAndNothingAcknowledgedIsLost) {
  const std::string ns = testenv::UniqueNamespace();
  auto conn = Connect(UriFor(ns, kOpTimeoutMs));
  ASSERT_TRUE(conn);
  RadosPageStore pages(*conn);
  RadosManifests manifests(*conn);
  RadosReclaim reclaim(*conn);

  // Acknowledged before the outage: 16 pages and a manifest naming them.
  std::vector<std::vector<uint8_t>> acked;
  for (size_t i = 0; i < 16; ++i) acked.push_back(PageBytes(30, i, 65536));
  std::vector<ByteSpan> spans(acked.begin(), acked.end());
  auto put = pages.PutPages(spans);
  ASSERT_TRUE(put.ok()) << put.status().ToString();
  const std::vector<PageKey> keys = put->keys;
  ASSERT_TRUE(manifests.Commit(Bytes("acked"), Bytes("body"), keys).ok());

  // 1. every OSD dead, the monitor up
  for (int osd = 0; osd < 3; ++osd) ClusterSh("kill-osd", std::to_string(osd));
  std::vector<std::vector<uint8_t>> fresh = {PageBytes(31, 0, 4096)};
  std::vector<ByteSpan> fresh_spans(fresh.begin(), fresh.end());
  auto expect_unavailable = [](const Status& st) {
    EXPECT_EQ(st.code(), StatusCode::kUnavailable) << st.ToString();
  };
  expect_unavailable(
      Returns("OSDs dead: put pages", [&] { return pages.PutPages(fresh_spans).status(); }));
  expect_unavailable(Returns("OSDs dead: read 16 pages", [&] {
    auto got = pages.ReadPages(keys);
    for (auto& g : got) {
      if (g.status().code() != StatusCode::kUnavailable) return g.status();
    }
    return got.front().status();
  }));
  expect_unavailable(Returns("OSDs dead: commit a manifest", [&] {
    return manifests.Commit(Bytes("new"), Bytes("b"), keys).status();
  }));
  expect_unavailable(Returns("OSDs dead: read the manifest",
                             [&] { return manifests.Read(Bytes("acked")).status(); }));
  expect_unavailable(Returns("OSDs dead: take a lease",
                             [&] { return manifests.TakeLease(Bytes("acked"), "node-a", 60s); }));
  expect_unavailable(Returns("OSDs dead: erase", [&] { return manifests.Erase(Bytes("acked")); }));
  expect_unavailable(
      Returns("OSDs dead: reclaim listing", [&] { return reclaim.ListReclaimable(9s).status(); }));

  // the OSDs restarted (same data): the acknowledged pages read back exact
  const std::string sh = testenv::ClusterSh(), dir = testenv::ClusterDir();
  const std::string start_osd = sh + " start-osd " + dir + " ";
  ASSERT_EQ(testenv::Shell(start_osd + "0 & a=$!; " + start_osd + "1 & b=$!; " + start_osd +
                           "2; c=$?; wait $a && wait $b && exit $c"),
            0);
  {
    auto after_osds = Connect(UriFor(ns, 10000));
    ASSERT_TRUE(after_osds);
    auto got = RadosPageStore(*after_osds).ReadPages(keys);
    for (size_t i = 0; i < keys.size(); ++i) {
      ASSERT_TRUE(got[i].ok()) << got[i].status().ToString();
      EXPECT_EQ(*got[i], acked[i]) << "page " << i;
    }
  }

  // 2. the whole cluster stopped: a new client cannot connect, the old one's
  // calls still return
  ClusterSh("stop");
  expect_unavailable(Returns("cluster stopped: connect", [&] {
    return RadosConnection::Open(UriFor(ns, kOpTimeoutMs)).status();
  }));
  expect_unavailable(Returns("cluster stopped: read the manifest",
                             [&] { return manifests.Read(Bytes("acked")).status(); }));

  // 3. started again (same data): everything acknowledged is there, exact
  ClusterSh("start");
  auto again = Connect(UriFor(ns, 10000));
  ASSERT_TRUE(again);
  auto m = RadosManifests(*again).Read(Bytes("acked"));
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->bytes, Bytes("body"));
  auto got = RadosPageStore(*again).ReadPages(keys);
  for (size_t i = 0; i < keys.size(); ++i) {
    ASSERT_TRUE(got[i].ok()) << got[i].status().ToString();
    EXPECT_EQ(*got[i], acked[i]) << "page " << i;
  }
}

}  // namespace
}  // namespace auxstore::rados
