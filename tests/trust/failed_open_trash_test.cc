// Issue 20 break 4, the trash half: a read-write open that RocksDB fails
// must take back what it dropped into auxstore-trash/ (each failed attempt
// after a full disk used to leave a 6-26 MB partial SST there) and leave
// alone what an earlier, fenced writer kept there for RestoreTrash
// (deferred_delete_fs.h). full_disk_big_wal_test shows the open no longer
// fails once the stated bytes are free, so it cannot reach this path; this
// test drives store_internal::UndoTrash, the step DbStore's open runs after
// a failed RocksDB open, on real files: one attempt's worth of changes to
// the trash, made the way DeferredDeleteFileSystem makes them (rename into
// the trash, a rename replacing an entry of the same name).
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <string>

#include "store/rocks/deferred_delete_fs.h"
#include "tests/trust/trust_util.h"

namespace auxstore::trust {
namespace {

using store_internal::kTrashDir;
using store_internal::ListTrash;
using store_internal::UndoTrash;

std::map<std::string, uint64_t> Sizes(const std::string& dir) {
  std::map<std::string, uint64_t> out;
  for (const auto& [name, e] : List(dir)) {
    if (name != "." && name.find('/') == std::string::npos) out[name] = e.size;
  }
  return out;
}

TEST(TrustFailedOpenTrash, AFailedOpenTakesBackWhatItPutInTheTrash) {
  ScratchDir dir("failed-open-trash");
  const std::string store = dir.Sub("store"), trash = store + "/" + kTrashDir;
  ASSERT_EQ(::mkdir(store.c_str(), 0700), 0);
  ASSERT_EQ(::mkdir(trash.c_str(), 0700), 0);
  ASSERT_TRUE(WriteFile(store + "/000010.sst", "live table", 0600));
  ASSERT_TRUE(WriteFile(trash + "/000007.sst", "kept by a fenced writer", 0600));
  ASSERT_TRUE(WriteFile(trash + "/000009.sst", "an unreferenced leftover", 0600));
  const auto dir_before = Sizes(store);
  const auto trash_before = ListTrash(store);
  ASSERT_TRUE(trash_before.exists);

  // The attempt: a partial SST of its recovery flush dropped into the trash,
  // another that replaced the leftover of the same number, and a table file
  // that was in the store before moved into the trash.
  ASSERT_TRUE(WriteFile(trash + "/000012.sst", std::string(4096, 'p'), 0600));
  ASSERT_TRUE(WriteFile(store + "/000009.sst.new", std::string(4096, 'q'), 0600));
  ASSERT_EQ(::rename((store + "/000009.sst.new").c_str(), (trash + "/000009.sst").c_str()), 0);
  ASSERT_EQ(::rename((store + "/000010.sst").c_str(), (trash + "/000010.sst").c_str()), 0);

  UndoTrash(store, trash_before, dir_before);

  const Listing after = List(store);
  EXPECT_TRUE(after.count(std::string(kTrashDir) + "/000007.sst"))
      << "the fenced writer's file was taken out of the trash:\n"
      << ListingToString(after);
  EXPECT_FALSE(after.count(std::string(kTrashDir) + "/000012.sst"))
      << "the attempt's partial SST is still in the trash";
  EXPECT_FALSE(after.count(std::string(kTrashDir) + "/000009.sst"))
      << "the attempt's replacement of 000009.sst is still in the trash";
  EXPECT_FALSE(after.count(std::string(kTrashDir) + "/000010.sst"))
      << "the store's own table file was left in the trash";
  std::string live;
  EXPECT_TRUE(ReadFile(store + "/000010.sst", &live) && live == "live table")
      << "the table file the attempt dropped is not back in the store";
}

TEST(TrustFailedOpenTrash, ATrashFolderTheAttemptMadeGoesWithIt) {
  ScratchDir dir("failed-open-trash");
  const std::string store = dir.Sub("store"), trash = store + "/" + kTrashDir;
  ASSERT_EQ(::mkdir(store.c_str(), 0700), 0);
  const auto dir_before = Sizes(store);
  const auto trash_before = ListTrash(store);
  ASSERT_FALSE(trash_before.exists);
  ASSERT_EQ(::mkdir(trash.c_str(), 0700), 0);
  ASSERT_TRUE(WriteFile(trash + "/000025.sst", std::string(8192, 'p'), 0600));

  UndoTrash(store, trash_before, dir_before);

  const Listing after = List(store);
  EXPECT_EQ(after.size(), 1u) << "the store should be as it was (empty):\n"
                              << ListingToString(after);
}

}  // namespace
}  // namespace auxstore::trust
