// SnapshotIndex's eviction order: least recently used first, exact whatever
// the clock's resolution (puts and reads within one millisecond keep the
// order they happened in); its byte counts whatever the background load saw.
#include "store/snapshot_index.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace auxstore::store_internal {
namespace {

IndexEntry Own(const std::string& put, uint64_t bytes, int64_t ms) {
  return IndexEntry{bytes, ms, ms, {{put, bytes}}};
}

TEST(SnapshotIndexTest, PutsWithinOneTickAreEvictedInTheOrderTheyWerePut) {
  SnapshotIndex index;
  index.FinishLoad({});
  // Keys put in reverse key order at one clock reading: a tie on the time
  // must not fall back to the key.
  index.Added("c", Own("put-c", 10, 1000));
  index.Added("b", Own("put-b", 10, 1000));
  index.Added("a", Own("put-a", 10, 1000));
  EXPECT_EQ(index.EvictionVictims(25, 1000), (std::vector<std::string>{"c"}));
  EXPECT_EQ(index.EvictionVictims(15, 1000), (std::vector<std::string>{"c", "b"}));
}

TEST(SnapshotIndexTest, AReadWithinTheSameTickMakesASnapshotTheMostRecent) {
  SnapshotIndex index;
  index.FinishLoad({});
  index.Added("a", Own("put-a", 10, 1000));
  index.Added("b", Own("put-b", 10, 1000));
  index.Added("c", Own("put-c", 10, 1000));
  index.Touched("a", 1000);
  EXPECT_EQ(index.EvictionVictims(15, 1000), (std::vector<std::string>{"b", "c"}));
}

TEST(SnapshotIndexTest, WhatTheLoaderFoundComesBeforeWhatThisHandleDidAtTheSameTime) {
  SnapshotIndex index;
  index.Added("a", Own("put-a", 10, 1000));  // before the load finished
  index.FinishLoad({{"b", Own("put-b", 10, 1000)}, {"c", Own("put-c", 10, 1000)}});
  // Loaded entries tie on the time: by key, consistently on every open.
  EXPECT_EQ(index.EvictionVictims(10, 1000), (std::vector<std::string>{"b", "c"}));
  EXPECT_EQ(index.EvictionVictims(0, 1000), (std::vector<std::string>{"b", "c", "a"}));
}

TEST(SnapshotIndexTest, AnOlderClockReadingStillComesFirst) {
  SnapshotIndex index;
  index.FinishLoad({});
  index.Added("a", Own("put-a", 10, 2000));
  index.Added("b", Own("put-b", 10, 1000));
  EXPECT_EQ(index.EvictionVictims(10, 2000), (std::vector<std::string>{"b"}));
}

TEST(SnapshotIndexTest, APutTheLoadSawBeforeItWasAddedCountsItsBytesOnce) {
  // A put commits, the load scans its manifest (but ran its run scan before
  // the commit: no uses) and finishes, then the put adds its entry.
  SnapshotIndex index;
  index.Added("a", Own("put-a", 10, 1000));
  index.FinishLoad({{"a", Own("put-a", 10, 1000)},
                    {"b", IndexEntry{20, 1000, 1000, {}}},
                    {"c", IndexEntry{30, 1000, 1000, {}}}});
  index.Added("b", IndexEntry{20, 1000, 1000, {{"put-b", 20}}});
  index.Added("c", IndexEntry{30, 1000, 1000, {{"put-a", 10}, {"put-c", 20}}});
  EXPECT_EQ(index.snapshots(), 3u);
  EXPECT_EQ(index.bytes(), 60u);
  EXPECT_EQ(index.unique_bytes(), 50u);
  EXPECT_EQ(index.users("put-a"), 2u);
  EXPECT_EQ(index.LongestKnown(std::vector<std::string>{"b", "c"}), 1);
  index.Removed("c");
  EXPECT_EQ(index.unique_bytes(), 30u);
  EXPECT_EQ(index.LongestKnown(std::vector<std::string>{"b", "c"}), 0);
}

}  // namespace
}  // namespace auxstore::store_internal
