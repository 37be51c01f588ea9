// Issue 20 break 5: `auxstore migrate PATH` keeps the old store at PATH.v1
// "byte for byte" (docs/cli.md). The real CLI migrates a copy of
// tests/fixtures/v1-store (a store the previous release wrote); then PATH.v1
// must hold exactly the files the store held before - same names, types,
// modes, sizes and bytes: no lock file or anything else added, nothing
// removed or rewritten.
#include <gtest/gtest.h>

#include <string>

#include "tests/trust/trust_util.h"

namespace auxstore::trust {
namespace {

// Every regular file's bytes, by path relative to `root`.
std::map<std::string, std::string> Contents(const std::string& root, const Listing& l) {
  std::map<std::string, std::string> out;
  for (const auto& [rel, e] : l) {
    if (e.type != 'f') continue;
    std::string bytes;
    EXPECT_TRUE(ReadFile(root + "/" + rel, &bytes)) << "cannot read " << root << "/" << rel;
    out[rel] = std::move(bytes);
  }
  return out;
}

TEST(TrustMigrate, TheOldStoreIsKeptByteForByte) {
  ScratchDir dir("migrate-keeps");
  const std::string store = dir.Sub("store");
  std::string why;
  ASSERT_TRUE(CopyTree(AUXSTORE_TRUST_V1_FIXTURE, store, &why)) << why;
  const Listing before = List(store);
  const auto bytes_before = Contents(store, before);
  ASSERT_GT(bytes_before.size(), 3u) << "the fixture is missing: " << ListingToString(before);

  const ProcResult m = RunCli({"migrate", store});
  ASSERT_TRUE(m.Exited(0)) << "auxstore migrate: " << m.Describe() << "\n" << m.out << m.ErrTail();

  const std::string backup = store + ".v1";
  const Listing kept = List(backup);
  EXPECT_EQ(DiffListings(before, kept, /*compare_modes=*/true), "")
      << "PATH.v1 is not the store that was migrated (names, types, modes or sizes differ)";
  const auto bytes_kept = Contents(backup, kept);
  for (const auto& [rel, data] : bytes_before) {
    auto it = bytes_kept.find(rel);
    if (it == bytes_kept.end()) continue;  // reported by the listing diff
    EXPECT_TRUE(it->second == data) << rel << " in PATH.v1 differs from the migrated store's";
  }
  // And the migrated store opens and lists (the migration did its job).
  const ProcResult ls = RunCli({"ls", store});
  EXPECT_TRUE(ls.Exited(0)) << "auxstore ls on the migrated store: " << ls.Describe() << "\n"
                            << ls.ErrTail();
}

}  // namespace
}  // namespace auxstore::trust
