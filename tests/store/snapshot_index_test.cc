// SnapshotIndex's eviction order: least recently used first, exact whatever
// the clock's resolution (puts and reads within one millisecond keep the
// order they happened in).
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

}  // namespace
}  // namespace auxstore::store_internal
