// Verify, repair and compact on a pool (RadosPoolCheck), against the ctest
// fixture's cluster:
//   - a page overwritten behind our back (`rados put`) is found, and exactly
//     the manifests that name it are reported; a damaged manifest and a
//     missing page are reported too; repair removes those manifests and the
//     damaged page, nothing healthy, and the pool then verifies clean;
//   - the orphans of a writer killed with SIGKILL mid-put are reclaimed by
//     compact once the grace has passed, with the bytes they held; nothing a
//     manifest names is removed; an expired lease is dropped, a live one kept.
#include "store/rados/rados_pool_check.h"

#include <chrono>
#include <cstdio>
#include <fstream>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "store/rados/rados_manifests.h"
#include "store/rados/rados_page_store.h"
#include "store/rados/rados_reclaim.h"
#include "tests/rados/rados_child_process.h"
#include "tests/rados/rados_test_env.h"

namespace auxstore::rados {
namespace {

using namespace std::chrono_literals;
using testenv::Connect;
using testenv::PageBytes;
using testenv::UriFor;

std::vector<uint8_t> Bytes(const std::string& s) { return {s.begin(), s.end()}; }

// The `rados` command line on the fixture's cluster, in namespace `ns`.
std::string RadosCli(const std::string& ns) {
  return "rados -c " + testenv::ConfPath() + " -p " + testenv::kPool + " -N '" + ns + "' ";
}

// Overwrites object `name` with `bytes` as an operator (or a bug) would.
void RawPut(const std::string& ns, const std::string& name, const std::string& bytes) {
  const std::string file = testing::TempDir() + "raw_put_bytes";
  std::ofstream(file, std::ios::binary) << bytes;
  ASSERT_EQ(testenv::Shell(RadosCli(ns) + "put " + name + " " + file), 0);
}

std::set<std::string> Objects(const PoolVerifyReport& r, ManifestHealth h) {
  std::set<std::string> out;
  for (const ManifestCheck& m : r.manifests) {
    if (m.health == h) out.insert(m.object);
  }
  return out;
}

const ManifestCheck* Find(const PoolVerifyReport& r, const std::string& object) {
  for (const ManifestCheck& m : r.manifests) {
    if (m.object == object) return &m;
  }
  return nullptr;
}

TEST(RadosPoolCheck, DamagedPageReportsExactlyItsUsersAndRepairLeavesTheRestClean) {
  const std::string ns = testenv::UniqueNamespace();
  auto conn = Connect(UriFor(ns));
  ASSERT_TRUE(conn);
  RadosPageStore pages(*conn);
  RadosManifests manifests(*conn);
  RadosPoolCheck check(*conn);

  std::vector<std::vector<uint8_t>> bytes;
  for (size_t i = 0; i < 10; ++i) bytes.push_back(PageBytes(700, i, 65536));
  std::vector<ByteSpan> spans(bytes.begin(), bytes.end());
  auto put = pages.PutPages(spans);
  ASSERT_TRUE(put.ok()) << put.status().ToString();
  const std::vector<PageKey>& p = put->keys;
  // a..f and the pages each names; p3 is shared by a and b only.
  const std::vector<std::pair<std::string, std::vector<PageKey>>> snaps = {
      {"a", {p[0], p[1], p[2], p[3]}},
      {"b", {p[3], p[4], p[5]}},
      {"c", {p[6], p[7]}},
      {"d", {p[0]}},
      {"e", {p[8]}},
      {"f", {p[9]}}};
  for (const auto& [id, named] : snaps) {
    ASSERT_TRUE(manifests.Commit(Bytes(id), Bytes("body of " + id), named).ok()) << id;
  }
  auto name = [](const std::string& id) { return ManifestObjectName(Bytes(id)); };

  auto before = check.Verify();
  ASSERT_TRUE(before.ok()) << before.status().ToString();
  EXPECT_TRUE(before->Clean());
  EXPECT_EQ(before->manifests.size(), 6u);
  EXPECT_EQ(before->pages_checked, 10u);
  EXPECT_EQ(before->bytes_checked, 10u * 65536);

  RawPut(ns, p[3].ObjectName(), "not the page this name hashes");
  RawPut(ns, name("f"), "not the manifest its xattr hashes");
  ASSERT_EQ(testenv::Shell(RadosCli(ns) + "rm " + p[8].ObjectName()), 0);

  auto found = check.Verify();
  ASSERT_TRUE(found.ok()) << found.status().ToString();
  EXPECT_FALSE(found->Clean());
  EXPECT_EQ(Objects(*found, ManifestHealth::kOk), (std::set{name("c"), name("d")}));
  EXPECT_EQ(Objects(*found, ManifestHealth::kCorrupt), (std::set{name("a"), name("b"), name("f")}));
  EXPECT_EQ(Objects(*found, ManifestHealth::kMissingPage), std::set{name("e")});
  ASSERT_EQ(found->damaged_pages.size(), 1u);
  EXPECT_EQ(found->damaged_pages[0].key, p[3]);
  EXPECT_EQ(found->missing_pages, std::vector{p[8]});
  for (const char* id : {"a", "b"}) {
    const ManifestCheck* m = Find(*found, name(id));
    ASSERT_TRUE(m);
    EXPECT_EQ(m->bad_pages, std::vector{p[3]}) << id;
    EXPECT_NE(m->reason.find(p[3].ObjectName()), std::string::npos) << m->reason;
  }
  EXPECT_NE(Find(*found, name("f"))->reason.find(name("f") + ": its bytes"), std::string::npos)
      << Find(*found, name("f"))->reason;
  EXPECT_NE(Find(*found, name("e"))->reason.find(p[8].ObjectName()), std::string::npos);

  auto repaired = check.Repair();
  ASSERT_TRUE(repaired.ok()) << repaired.status().ToString();
  EXPECT_EQ(
      std::set<std::string>(repaired->removed_manifests.begin(), repaired->removed_manifests.end()),
      (std::set{name("a"), name("b"), name("e"), name("f")}));
  EXPECT_EQ(repaired->removed_pages, std::vector{p[3]});
  EXPECT_TRUE(repaired->changed_since_verify.empty());

  auto after = check.Verify();
  ASSERT_TRUE(after.ok()) << after.status().ToString();
  EXPECT_TRUE(after->Clean());
  EXPECT_EQ(Objects(*after, ManifestHealth::kOk), (std::set{name("c"), name("d")}));
  EXPECT_EQ(after->pages, 8u) << "only the damaged page was removed (p8 was already gone)";
  EXPECT_EQ(after->unnamed_pages, 5u) << "p1 p2 p4 p5 p9: named only by removed manifests";
  for (size_t i : {0, 1, 2, 4, 5, 6, 7, 9}) {
    auto got = pages.ReadPages(std::vector{p[i]});
    ASSERT_TRUE(got[0].ok()) << "page " << i << ": " << got[0].status().ToString();
    EXPECT_EQ(*got[0], bytes[i]);
  }
  // The damaged object gone, the next put of that page stores it afresh.
  auto again = pages.PutPages(std::vector<ByteSpan>{spans[3]});
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(again->stored, 1u);
  EXPECT_TRUE(pages.ReadPages(std::vector{p[3]})[0].ok());
}

TEST(RadosPoolCheck, CompactReclaimsAKilledWritersOrphansAndDropsExpiredLeases) {
  const std::string ns = testenv::UniqueNamespace();
  constexpr uint32_t kOpTimeoutMs = 2000;
  const auto grace = 6s;  // 3 op timeouts: the shortest ListReclaimable accepts
  constexpr uint64_t kSeed = 900;
  constexpr size_t kPageBytes = 131072;  // rados_test_child snapshots: 8 per snapshot
  const RadosUri uri = UriFor(ns, kOpTimeoutMs);
  auto conn = Connect(uri);
  ASSERT_TRUE(conn);
  RadosPageStore pages(*conn);
  RadosManifests manifests(*conn);
  RadosPoolCheck check(*conn);

  // Kill the writer while it puts snapshot 4's pages (its commit of 3 done).
  testenv::Child writer = testenv::SpawnChild({"snapshots", uri.ToString(), std::to_string(kSeed)});
  ASSERT_GT(writer.pid, 0);
  char line[128];
  long committed = -1;
  while (committed < 3 && std::fgets(line, sizeof line, writer.out)) {
    std::sscanf(line, "committed %ld", &committed);
  }
  std::this_thread::sleep_for(15ms);
  ASSERT_TRUE(writer.Kill()) << "the writer ended on its own";
  ASSERT_EQ(committed, 3) << "the writer failed before snapshot 4";
  // And pages this process put and never committed.
  std::vector<std::vector<uint8_t>> loose = {PageBytes(kSeed + 100, 0, 4096),
                                             PageBytes(kSeed + 100, 1, 4096)};
  std::vector<ByteSpan> loose_spans(loose.begin(), loose.end());
  auto loose_put = pages.PutPages(loose_spans);
  ASSERT_TRUE(loose_put.ok()) << loose_put.status().ToString();

  std::set<PageKey> may_go(loose_put->keys.begin(), loose_put->keys.end());
  for (uint64_t s = 4; s < 6; ++s) {
    for (size_t i = 0; i < 8; ++i) may_go.insert(PageKey::Of(PageBytes(kSeed + s, i, kPageBytes)));
  }
  uint64_t visible = 0;
  while (manifests.Read(Bytes("snap-" + std::to_string(visible))).ok()) ++visible;
  ASSERT_GE(visible, 4u);

  const std::vector<uint8_t> snap0 = Bytes("snap-0");
  ASSERT_TRUE(manifests.TakeLease(snap0, "dead-node", 1ms).ok());
  ASSERT_TRUE(manifests.TakeLease(snap0, "live-node", 10min).ok());
  EXPECT_EQ(check.Compact(5s).status().code(), StatusCode::kInvalidArgument);

  auto before = check.Verify();
  ASSERT_TRUE(before.ok()) << before.status().ToString();
  const size_t orphans = before->unnamed_pages;
  std::printf("MEASURED killed mid-put: %llu snapshots visible, %zu unnamed pages\n",
              static_cast<unsigned long long>(visible), orphans);
  ASSERT_GE(orphans, loose.size());

  std::this_thread::sleep_for(grace + 1500ms);
  // What compact will take: only pages of the lost snapshots and the loose ones.
  auto listing = RadosReclaim(*conn).ListReclaimable(grace);
  ASSERT_TRUE(listing.ok()) << listing.status().ToString();
  ASSERT_EQ(listing->reclaimable.size(), orphans);
  for (const UnnamedPage& u : listing->reclaimable) {
    EXPECT_TRUE(may_go.count(u.key)) << u.key.ObjectName() << " is no orphan of this test";
  }
  auto compacted = check.Compact(grace);
  ASSERT_TRUE(compacted.ok()) << compacted.status().ToString();
  EXPECT_EQ(compacted->pages_removed, orphans);
  EXPECT_EQ(compacted->named, visible * 8);
  EXPECT_EQ(compacted->leases_dropped, 1u);
  const size_t loose_bytes = loose.size() * 4096;
  EXPECT_EQ(compacted->bytes_freed, loose_bytes + (orphans - loose.size()) * kPageBytes);
  std::printf("MEASURED compact: %zu pages removed, %llu bytes freed\n", compacted->pages_removed,
              static_cast<unsigned long long>(compacted->bytes_freed));

  auto leases = manifests.Leases(snap0);
  ASSERT_TRUE(leases.ok()) << leases.status().ToString();
  ASSERT_EQ(leases->size(), 1u);
  EXPECT_EQ((*leases)[0].holder, "live-node");

  auto after = check.Verify();
  ASSERT_TRUE(after.ok()) << after.status().ToString();
  EXPECT_TRUE(after->Clean());
  EXPECT_EQ(after->manifests.size(), visible);
  EXPECT_EQ(after->unnamed_pages, 0u);
  EXPECT_EQ(after->pages, visible * 8) << "every named page is still there";
  EXPECT_EQ(after->pages_checked, visible * 8);
}

}  // namespace
}  // namespace auxstore::rados
