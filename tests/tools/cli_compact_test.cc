// `auxstore compact`: frees the disk space of erased snapshots, applies the
// namespace, TTL and byte-budget filters, and refuses while a writer is open.
#include "auxstore/maintenance.h"
#include "tests/tools/cli_test_util.h"
#include "tools/cli/inspect.h"

namespace auxstore::testing {
namespace {

TEST(CompactTest, DirectoryShrinksByMostOfTheErasedPayload) {
  TempDir dir;
  const std::string path = dir.Sub("store");
  std::vector<Written> all;
  {
    auto store = OpenStore(path);
    const NamespaceId ns = store->RegisterNamespace(TestSpec()).value();
    for (uint64_t i = 0; i < 40; ++i) all.push_back(PutMixed(*store, ns, i, /*big=*/i % 8 == 0));
  }
  const uint64_t before_erase = DirBytes(path);
  uint64_t erased = 0;
  {
    auto store = OpenStore(path);
    for (size_t i = 0; i < all.size(); ++i) {
      if (i % 5 == 4) continue;  // keep every fifth
      for (const auto& [layer, bytes] : all[i].layers) erased += bytes.size();
      ASSERT_TRUE(store->Erase(all[i].ns, all[i].prefix).ok());
    }
  }
  CliRun r = RunBinary({"compact", path, "--json"});
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  auto j = r.Json();
  const uint64_t after = DirBytes(path);
  EXPECT_EQ(j["snapshots_before"].get<uint64_t>(), 8u);
  EXPECT_EQ(j["snapshots_after"].get<uint64_t>(), 8u);
  EXPECT_EQ(j["disk_bytes_after"].get<uint64_t>(), after);
  EXPECT_GE(before_erase - after, erased * 8 / 10)
      << "before erase " << before_erase << ", after compact " << after << ", erased " << erased;
  // Some of the erased bytes were in shared files that only compaction frees.
  EXPECT_GT(j["disk_bytes_freed"].get<uint64_t>(), 0u);
  auto store = OpenStore(path);
  for (size_t i = 4; i < all.size(); i += 5) ExpectReadsBack(*store, all[i]);
  EXPECT_EQ(RunInProcess({"verify", path}).code, 0);
}

TEST(CompactTest, NamespaceTtlAndBudgetFiltersAndOrphans) {
  TempDir dir;
  const std::string path = dir.Sub("store");
  NamespaceId keep = 0, drop = 0;
  std::vector<Written> kept;
  {
    auto store = OpenStore(path);
    keep = store->RegisterNamespace(TestSpec("keep")).value();
    drop = store->RegisterNamespace(TestSpec("drop")).value();
    for (uint64_t i = 0; i < 4; ++i) kept.push_back(PutMixed(*store, keep, i, false));
    for (uint64_t i = 10; i < 13; ++i) PutMixed(*store, drop, i, false);
  }
  CliRun r = RunInProcess({"compact", path, "--drop-ns", cli::NamespaceHex(drop), "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.Json()["dropped_by_namespace"].get<uint64_t>(), 3u);
  EXPECT_EQ(r.Json()["snapshots_after"].get<uint64_t>(), 4u);

  // Budget: two snapshots' worth of payload keeps two.
  const uint64_t one = cli::ListSnapshots(path, keep)->front().manifest.payload_bytes();
  r = RunInProcess({"compact", path, "--max-bytes", std::to_string(2 * one + one / 2), "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.Json()["evicted"].get<uint64_t>(), 2u);
  EXPECT_LE(r.Json()["payload_bytes_after"].get<uint64_t>(), 2 * one + one / 2);

  // --ttl 3600 keeps snapshots younger than an hour: all of them here.
  r = RunInProcess({"compact", path, "--ttl", "3600", "--json"});
  EXPECT_EQ(r.Json()["expired"].get<uint64_t>(), 0u);
  EXPECT_EQ(r.Json()["snapshots_after"].get<uint64_t>(), 2u);

  // --keep-ns of another namespace drops the rest.
  r = RunInProcess({"compact", path, "--keep-ns", cli::NamespaceHex(drop), "--json"});
  EXPECT_EQ(r.Json()["snapshots_after"].get<uint64_t>(), 0u);
  EXPECT_EQ(RunInProcess({"compact", path, "--keep-ns", "xyz"}).code, 2);
}

TEST(CompactTest, RefusesWhileAWriterHasTheStoreOpen) {
  TempDir dir;
  const std::string path = dir.Sub("store");
  auto writer = OpenStore(path);
  const NamespaceId ns = writer->RegisterNamespace(TestSpec()).value();
  Written w = PutMixed(*writer, ns, 1, false);
  const uint64_t before = DirBytes(path);

  CliRun bin = RunBinary({"compact", path, "--json"});
  EXPECT_EQ(bin.code, 2);
  EXPECT_EQ(bin.Json()["code"].get<std::string>(), "Busy") << bin.out;
  EXPECT_NE(bin.err.find("open for writing"), std::string::npos) << bin.err;
  EXPECT_EQ(DirBytes(path), before);  // refused before opening anything
  auto in_process = CompactStoreAt(path, {});
  EXPECT_EQ(in_process.status().code(), StatusCode::kBusy) << in_process.status().ToString();
  ExpectReadsBack(*writer, w);
}

}  // namespace
}  // namespace auxstore::testing
