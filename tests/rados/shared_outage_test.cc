// The store on a shared pool when the pool does not answer (every OSD killed
// with SIGKILL, the monitor up): each call that needs the pool returns
// Unavailable within the op timeout, what the local store holds is still
// served, kBehind puts are accepted locally and their uploads wait, Flush
// reports them, a full upload queue sheds (counted) or makes the put wait,
// and once the OSDs are back they are written and another node restores
// them. Kills OSDs: runs after every other ceph test.
#include <gtest/gtest.h>

#include <chrono>
#include <future>

#include "tests/rados/rados_test_env.h"
#include "tests/rados/shared_test_env.h"

namespace auxstore::sharedtest {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using testing::TempDir;

constexpr uint32_t kOpTimeoutMs = 3000;
// Only a hang gets near this; the durations are printed, not asserted.
constexpr auto kHangBound = 10 * std::chrono::milliseconds(kOpTimeoutMs) + 30s;

void ClusterSh(const std::string& command, const std::string& arg) {
  const std::string cmd =
      rados::testenv::ClusterSh() + " " + command + " " + rados::testenv::ClusterDir() + " " + arg;
  ASSERT_EQ(rados::testenv::Shell(cmd), 0) << cmd;
}

// Runs `call` on its own thread; its Status, or Internal when it hung.
template <typename F>
Status Timed(const char* what, F&& call) {
  const auto start = Clock::now();
  auto f = std::async(std::launch::async, std::forward<F>(call));
  if (f.wait_for(kHangBound) != std::future_status::ready) {
    ADD_FAILURE() << what << ": did not return";
    std::abort();  // the thread cannot be joined
  }
  Status st = f.get();
  std::printf("MEASURED %s: %s after %.2f s\n", what,
              std::string(StatusCodeName(st.code())).c_str(),
              std::chrono::duration<double>(Clock::now() - start).count());
  return st;
}

TEST(SharedStoreOutage, CallsReturnUnavailableLocalReadsGoOnQueuedUploadsLandAfterward) {
  TempDir tmp;
  const std::string uri =
      rados::testenv::UriFor(rados::testenv::UniqueNamespace(), kOpTimeoutMs).ToString();
  const Conversation conv(77);
  auto a = OpenShared(tmp.Sub("a"), uri, SharedWrite::kThrough);
  auto q = OpenShared(tmp.Sub("q"), uri, SharedWrite::kBehind);
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  ASSERT_TRUE(q.ok()) << q.status().ToString();
  auto ns = (*a)->RegisterNamespace(conv.spec());
  ASSERT_TRUE(ns.ok());
  ASSERT_TRUE((*q)->RegisterNamespace(conv.spec()).ok());
  ASSERT_TRUE(conv.Put(**a, *ns, 128).ok());
  auto f = OpenShared(tmp.Sub("f"), uri);
  ASSERT_TRUE(f.ok());
  ASSERT_TRUE((*f)->RegisterNamespace(conv.spec()).ok());
  // A store that keeps no local copies: its puts go to the pool alone.
  Options po;
  po.shared = uri;
  po.background_maintenance = false;
  po.shared_local_copies = false;
  auto p = Store::Open(po, tmp.Sub("p"));
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  ASSERT_TRUE((*p)->RegisterNamespace(conv.spec()).ok());
  const Conversation pool_conv(76);

  for (int osd = 0; osd < 3; ++osd) ClusterSh("kill-osd", std::to_string(osd));

  // kThrough: committed locally, the pool's Unavailable returned.
  EXPECT_EQ(Timed("OSDs dead: kThrough put", [&] { return conv.Put(**a, *ns, 256); }).code(),
            StatusCode::kUnavailable);
  // Without local copies: Unavailable, and nothing stored anywhere.
  EXPECT_EQ(
      Timed("OSDs dead: put without local copies", [&] { return pool_conv.Put(**p, *ns, 128); })
          .code(),
      StatusCode::kUnavailable);
  EXPECT_EQ((*p)->Stats().snapshots, 0u);
  // A batch: each snapshot Unavailable, after one op timeout (one window).
  {
    const auto b64 = pool_conv.Blobs(64), b192 = pool_conv.Blobs(192);
    const std::vector<LayerBlob> l64{{2, Kind::kOpaque, b64[2]}}, l192{{2, Kind::kOpaque, b192[2]}};
    std::vector<Store::SnapshotPut> batch(2);
    batch[0] = {*ns, pool_conv.PrefixOf(64), 64, l64};
    batch[1] = {*ns, pool_conv.PrefixOf(192), 192, l192};
    EXPECT_EQ(Timed("OSDs dead: a batch of two puts without local copies",
                    [&] { return (*p)->PutSnapshots(batch); })
                  .code(),
              StatusCode::kUnavailable);
    EXPECT_EQ(batch[0].status.code(), StatusCode::kUnavailable) << batch[0].status.ToString();
    EXPECT_EQ(batch[1].status.code(), StatusCode::kUnavailable) << batch[1].status.ToString();
  }
  // What the local store holds is served; the longest local match answers.
  EXPECT_TRUE(Timed("OSDs dead: local restore", [&] { return conv.Check(**a, *ns, 128); }).ok());
  auto longest = (*a)->LongestPrefix(*ns, conv.Chain(512));
  ASSERT_TRUE(longest.ok()) << longest.status().ToString();
  EXPECT_EQ(*longest, std::optional<size_t>(256 / kBlock - 1));
  // A node that holds nothing locally cannot answer.
  EXPECT_EQ(Timed("OSDs dead: lookup a local miss",
                  [&] { return (*f)->GetManifest(*ns, conv.PrefixOf(128)).status(); })
                .code(),
            StatusCode::kUnavailable);
  EXPECT_EQ(Timed("OSDs dead: erase", [&] { return (*a)->Erase(*ns, conv.PrefixOf(128)); }).code(),
            StatusCode::kUnavailable);
  // List: the local snapshots (128, and 256 committed locally) visited,
  // the pool's missing said.
  size_t listed = 0;
  const Status list_dead = Timed("OSDs dead: list", [&] {
    return (*a)->List(*ns, [&](const SnapshotInfo&) { return ++listed > 0; });
  });
  EXPECT_EQ(list_dead.code(), StatusCode::kUnavailable) << list_dead.ToString();
  EXPECT_EQ(listed, 2u);
  // kBehind: accepted locally, the upload waits; Flush reports it.
  EXPECT_TRUE(Timed("OSDs dead: kBehind put", [&] { return conv.Put(**q, *ns, 192); }).ok());
  const Status flush_dead = Timed("OSDs dead: kBehind flush", [&] { return (*q)->Flush(); });
  EXPECT_EQ(flush_dead.code(), StatusCode::kUnavailable) << flush_dead.ToString();
  EXPECT_EQ((*q)->Stats().shared_queued, 1u);
  EXPECT_GE((*q)->Stats().shared_upload_failures, 1u);

  // A full upload queue: with shedding, a put past its bound is committed
  // locally, not queued, and counted; without, the put waits for room.
  const Conversation shed_conv(78), wait_conv(79);
  const auto bytes_of = [](const Conversation& c, uint64_t n) {
    uint64_t b = 0;
    for (const auto& l : c.Blobs(n)) b += l.size();
    return b;
  };
  Options so;
  so.shared = uri;
  so.shared_write = SharedWrite::kBehind;
  so.background_maintenance = false;
  so.shared_queue_bytes = bytes_of(shed_conv, 64) + bytes_of(shed_conv, 128);
  so.shared_shed_when_full = true;
  auto s = Store::Open(so, tmp.Sub("s"));
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  ASSERT_TRUE((*s)->RegisterNamespace(conv.spec()).ok());
  for (uint64_t n : {64, 128, 192, 256, 320}) {
    EXPECT_TRUE(
        Timed("OSDs dead: kBehind put, shedding", [&] { return shed_conv.Put(**s, *ns, n); }).ok());
  }
  EXPECT_EQ((*s)->Stats().shared_queued, 2u) << "64 and 128 fill the queue";
  EXPECT_EQ((*s)->Stats().shared_shed, 3u) << "192, 256 and 320 did not fit";
  so.shared_queue_bytes = bytes_of(wait_conv, 64);
  so.shared_shed_when_full = false;
  auto w = Store::Open(so, tmp.Sub("w"));
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  ASSERT_TRUE((*w)->RegisterNamespace(conv.spec()).ok());
  ASSERT_TRUE(wait_conv.Put(**w, *ns, 64).ok());
  auto waiting = std::async(std::launch::async, [&] { return wait_conv.Put(**w, *ns, 128); });
  // The pool is dead, so nothing can make room: the put stays in its wait.
  EXPECT_EQ(waiting.wait_for(2s), std::future_status::timeout) << "a full queue did not wait";

  const std::string sh = rados::testenv::ClusterSh(), dir = rados::testenv::ClusterDir();
  const std::string start_osd = sh + " start-osd " + dir + " ";
  ASSERT_EQ(rados::testenv::Shell(start_osd + "0 & a=$!; " + start_osd + "1 & b=$!; " + start_osd +
                                  "2; c=$?; wait $a && wait $b && exit $c"),
            0);
  // The queued upload is written (a flush retries at once; PGs may still be
  // peering for a few seconds).
  Status flushed;
  for (int i = 0; i < 10; ++i) {
    flushed = (*q)->Flush();
    if (flushed.ok()) break;
  }
  EXPECT_TRUE(flushed.ok()) << flushed.ToString();
  EXPECT_EQ((*q)->Stats().shared_queued, 0u);
  EXPECT_EQ((*q)->Stats().shared_shed, 0u);
  // The waiting put got its room once the queue's first upload landed.
  ASSERT_EQ(waiting.wait_for(kHangBound), std::future_status::ready);
  EXPECT_TRUE(waiting.get().ok());
  for (auto* store : {&*s, &*w}) {
    for (int i = 0; i < 10 && !(*store)->Flush().ok(); ++i) {
    }
    EXPECT_EQ((*store)->Stats().shared_queued, 0u);
  }
  EXPECT_EQ((*s)->Stats().shared_shed, 3u);
  EXPECT_EQ((*w)->Stats().shared_shed, 0u);
  // The kThrough puts refused meanwhile go up when put again.
  EXPECT_TRUE(conv.Put(**a, *ns, 256).ok());
  EXPECT_TRUE(pool_conv.Check(**f, *ns, 128).IsNotFound())
      << "the put refused during the outage left its snapshot in the pool";
  EXPECT_TRUE(pool_conv.Put(**p, *ns, 128).ok());
  EXPECT_EQ((*p)->Stats().snapshots, 0u);
  auto g = OpenShared(tmp.Sub("g"), uri);
  ASSERT_TRUE(g.ok());
  ASSERT_TRUE((*g)->RegisterNamespace(conv.spec()).ok());
  EXPECT_TRUE(conv.Check(**g, *ns, 192).ok());
  EXPECT_TRUE(conv.Check(**g, *ns, 256).ok());
  EXPECT_TRUE(conv.Check(**g, *ns, 128).ok());
  EXPECT_TRUE(pool_conv.Check(**g, *ns, 128).ok());
  // What was queued reached the pool; what was shed did not, and is still
  // served by the store that took it.
  for (uint64_t n : {64, 128}) {
    EXPECT_TRUE(shed_conv.Check(**g, *ns, n).ok()) << n;
    EXPECT_TRUE(wait_conv.Check(**g, *ns, n).ok()) << n;
  }
  for (uint64_t n : {192, 256, 320}) {
    EXPECT_TRUE(shed_conv.Check(**g, *ns, n).IsNotFound()) << n << " was shed";
    EXPECT_TRUE(shed_conv.Check(**s, *ns, n).ok()) << n;
  }
}

}  // namespace
}  // namespace auxstore::sharedtest
