// kill -9 of a writer process in the middle of its stream of snapshots
// (rados_test_child snapshots): every snapshot it reported committed reads
// back whole and exact, no manifest is partial, and the pages of the
// snapshot it was writing are orphans that the reclaim listing finds once
// the grace has passed, and removes; nothing a manifest names is touched.
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "store/rados/rados_manifests.h"
#include "store/rados/rados_page_store.h"
#include "store/rados/rados_reclaim.h"
#include "tests/rados/rados_test_env.h"

extern char** environ;

namespace auxstore::rados {
namespace {

using namespace std::chrono_literals;
using testenv::Connect;
using testenv::PageBytes;
using testenv::UriFor;

constexpr uint64_t kSeed = 500;
constexpr size_t kPagesPerSnapshot = 8, kPageBytes = 131072;  // as the child writes them

std::vector<uint8_t> Bytes(const std::string& s) { return {s.begin(), s.end()}; }

// The child writing snapshots, its stdout on a pipe.
struct Writer {
  pid_t pid = -1;
  FILE* out = nullptr;
};

Writer SpawnWriter(const std::string& uri) {
  int fds[2];
  if (pipe(fds) != 0) return {};
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
  posix_spawn_file_actions_addclose(&actions, fds[0]);
  std::string seed = std::to_string(kSeed);
  std::vector<char*> argv = {const_cast<char*>(AUXSTORE_RADOS_CHILD),
                             const_cast<char*>("snapshots"), const_cast<char*>(uri.c_str()),
                             seed.data(), nullptr};
  Writer w;
  if (posix_spawn(&w.pid, AUXSTORE_RADOS_CHILD, &actions, nullptr, argv.data(), environ) != 0) {
    w.pid = -1;
  }
  posix_spawn_file_actions_destroy(&actions);
  close(fds[1]);
  w.out = fdopen(fds[0], "r");
  return w;
}

std::set<PageKey> KeysOfSnapshot(uint64_t s) {
  std::set<PageKey> keys;
  for (size_t i = 0; i < kPagesPerSnapshot; ++i) {
    keys.insert(PageKey::Of(PageBytes(kSeed + s, i, kPageBytes)));
  }
  return keys;
}

TEST(RadosKilledWriter, NothingCommittedIsLostAndReclaimTakesOnlyTheOrphans) {
  const std::string ns = testenv::UniqueNamespace();
  const RadosUri uri = UriFor(ns, 3000);
  Writer w = SpawnWriter(uri.ToString());
  ASSERT_GT(w.pid, 0);
  ASSERT_TRUE(w.out);
  // Kill it once snapshot 4's pages are acknowledged: its commit is next.
  long reported_committed = -1;
  char line[128];
  while (std::fgets(line, sizeof line, w.out)) {
    long s = -1;
    if (std::sscanf(line, "committed %ld", &s) == 1) reported_committed = s;
    if (std::sscanf(line, "put %ld", &s) == 1 && s == 4) break;
  }
  kill(w.pid, SIGKILL);
  int status = 0;
  waitpid(w.pid, &status, 0);
  std::fclose(w.out);
  ASSERT_TRUE(WIFSIGNALED(status)) << "the writer ended on its own: " << status;
  ASSERT_EQ(reported_committed, 3) << "the writer failed before snapshot 4";

  auto conn = Connect(uri);
  ASSERT_TRUE(conn);
  RadosManifests manifests(*conn);
  RadosPageStore pages(*conn);
  // Every manifest there is whole; every one reported committed is there.
  uint64_t visible = 0;
  for (;; ++visible) {
    auto m = manifests.Read(Bytes("snap-" + std::to_string(visible)));
    if (m.status().IsNotFound()) break;
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    EXPECT_EQ(m->bytes, PageBytes(kSeed + visible, 0, kPageBytes));
    std::set<PageKey> named(m->pages.begin(), m->pages.end());
    EXPECT_EQ(named, KeysOfSnapshot(visible));
    for (auto& got : pages.ReadPages(m->pages)) ASSERT_TRUE(got.ok()) << got.status().ToString();
  }
  std::printf("killed after 'put 4': %llu snapshots visible (4 or 5)\n",
              static_cast<unsigned long long>(visible));
  EXPECT_GE(visible, 4u);

  // Once the grace has passed, the orphans are exactly the pages of the
  // snapshots the writer put but did not commit.
  RadosReclaim reclaim(*conn);
  const auto grace = 9s;  // 3 op timeouts
  std::this_thread::sleep_for(grace + 1500ms);
  auto listing = reclaim.ListReclaimable(grace);
  ASSERT_TRUE(listing.ok()) << listing.status().ToString();
  std::set<PageKey> in_flight;
  for (uint64_t s = visible; s < visible + 2; ++s) {
    for (const PageKey& k : KeysOfSnapshot(s)) in_flight.insert(k);
  }
  for (const UnnamedPage& p : listing->reclaimable) {
    EXPECT_TRUE(in_flight.count(p.key)) << p.key.ObjectName() << " is no page of a lost snapshot";
  }
  std::printf("orphans listed: %zu (named pages %zu)\n", listing->reclaimable.size(),
              listing->named);
  EXPECT_EQ(listing->named, visible * kPagesPerSnapshot);
  auto removed = reclaim.Reclaim(listing->reclaimable);
  ASSERT_TRUE(removed.ok()) << removed.status().ToString();
  EXPECT_EQ(*removed, listing->reclaimable.size());

  auto after = reclaim.ListReclaimable(grace);
  ASSERT_TRUE(after.ok()) << after.status().ToString();
  EXPECT_TRUE(after->reclaimable.empty());
  EXPECT_EQ(after->pages, visible * kPagesPerSnapshot) << "only named pages are left";
  for (uint64_t s = 0; s < visible; ++s) {
    auto m = manifests.Read(Bytes("snap-" + std::to_string(s)));
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    for (auto& got : pages.ReadPages(m->pages)) EXPECT_TRUE(got.ok()) << got.status().ToString();
  }
}

}  // namespace
}  // namespace auxstore::rados
