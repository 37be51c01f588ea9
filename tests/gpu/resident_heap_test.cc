// RangeAllocator and ResidentHeap: the host backend's device/pinned memory.
#include "gpu/resident_heap.h"

#include <gtest/gtest.h>

#include <cstring>
#include <set>
#include <vector>

#include "gpu/range_allocator.h"

namespace auxstore::gpu {
namespace {

TEST(RangeAllocator, FirstFitAlignedAndCoalescing) {
  RangeAllocator r(4096, 256);
  auto a = r.Allocate(1000), b = r.Allocate(1000), c = r.Allocate(1000);
  ASSERT_TRUE(a && b && c);
  EXPECT_EQ(*a, 0u);
  EXPECT_EQ(*b, 1024u);  // 1000 rounded up to the 256-byte alignment
  EXPECT_EQ(*c, 2048u);
  EXPECT_EQ(r.used(), 3072u);
  EXPECT_FALSE(r.Allocate(2000));
  EXPECT_TRUE(r.Free(*b));
  EXPECT_TRUE(r.Free(*a));  // a and b coalesce
  EXPECT_EQ(r.Allocate(2000), 0u);
  EXPECT_TRUE(r.Free(*c));
  EXPECT_TRUE(r.Free(0));
  EXPECT_TRUE(r.empty());
  EXPECT_EQ(r.Allocate(4096), 0u);  // everything merged back into one range
}

TEST(RangeAllocator, RejectsWhatItDidNotHandOut) {
  RangeAllocator r(4096, 256);
  EXPECT_FALSE(r.Free(0));
  auto a = r.Allocate(300);
  ASSERT_TRUE(a);
  EXPECT_FALSE(r.Free(*a + 256));  // inside a block, not its start
  EXPECT_TRUE(r.Free(*a));
  EXPECT_FALSE(r.Free(*a));  // twice
  EXPECT_FALSE(r.Allocate(4097));
  EXPECT_EQ(r.Allocate(0), 0u);  // a zero-byte request still gets a block
}

TEST(ResidentHeap, BlocksAreDisjointAlignedAndWritable) {
  ResidentHeap heap;
  std::vector<uint8_t*> blocks;
  for (size_t bytes : {1u, 255u, 4096u, 256u << 10, 3u << 20, 100u}) {
    uint8_t* p = heap.Allocate(bytes);
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 256, 0u);
    std::memset(p, static_cast<int>(blocks.size()), bytes);
    blocks.push_back(p);
  }
  EXPECT_EQ(std::set<uint8_t*>(blocks.begin(), blocks.end()).size(), blocks.size());
  EXPECT_EQ(blocks[3][(256u << 10) - 1], 3);  // not overwritten by a neighbour
  EXPECT_EQ(heap.Allocate(0), nullptr);
}

TEST(ResidentHeap, RegionsAreReturnedWhenEmpty) {
  ResidentHeap heap;
  uint8_t* small = heap.Allocate(1000);
  uint8_t* big = heap.Allocate(8u << 20);  // does not fit the first 2 MiB region
  ASSERT_TRUE(small && big);
  EXPECT_EQ(heap.regions(), 2u);
  EXPECT_TRUE(heap.Free(big));
  EXPECT_EQ(heap.regions(), 1u);
  EXPECT_FALSE(heap.Free(big));  // already freed
  int on_stack = 0;
  EXPECT_FALSE(heap.Free(reinterpret_cast<uint8_t*>(&on_stack)));
  EXPECT_TRUE(heap.Free(small));
  EXPECT_EQ(heap.regions(), 0u);
}

TEST(ResidentHeap, FreedBlocksAreReused) {
  ResidentHeap heap;
  uint8_t* keep = heap.Allocate(4096);  // keeps the region alive
  uint8_t* a = heap.Allocate(64u << 10);
  ASSERT_TRUE(keep && a);
  EXPECT_TRUE(heap.Free(a));
  EXPECT_EQ(heap.Allocate(64u << 10), a);
  EXPECT_EQ(heap.regions(), 1u);
}

// Sizes whose rounding would wrap (issue 23: Alloc(2^64-1) handed out a
// 2 MiB region as if it held 2^64-1 bytes) are refused, nothing allocated.
TEST(ResidentHeap, RefusesSizesThatWouldWrap) {
  ResidentHeap heap;
  for (uint64_t bytes : {UINT64_MAX, UINT64_MAX - 100, ResidentHeap::kMaxBytes + 1}) {
    EXPECT_EQ(heap.Allocate(bytes), nullptr) << bytes;
  }
  EXPECT_EQ(heap.regions(), 0u);
  RangeAllocator r(uint64_t{1} << 20, 256);
  EXPECT_FALSE(r.Allocate(UINT64_MAX).has_value());
  EXPECT_EQ(r.used(), 0u);
}

}  // namespace
}  // namespace auxstore::gpu
