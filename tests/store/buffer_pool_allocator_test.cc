// The read-buffer pool RocksDB's block reads allocate from.
#include "store/rocks/buffer_pool_allocator.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>

namespace auxstore::store_internal {
namespace {

TEST(BufferPoolAllocator, BuffersAreWritableAlignedAndSizedByClass) {
  auto pool = NewBufferPoolAllocator(64u << 20);
  for (size_t size : {size_t{100}, size_t{64} << 10, (size_t{256} << 10) + 90,
                      (size_t{4} << 20) + 90, size_t{9} << 20}) {
    void* p = pool->Allocate(size);
    ASSERT_NE(p, nullptr) << size;
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 64, 0u) << size;
    const size_t usable = pool->UsableSize(p, size);
    EXPECT_GE(usable, size);
    std::memset(p, 0xab, usable);  // every usable byte is ours (ASan checks)
    pool->Deallocate(p);
  }
  // A 4 MiB chunk record is not rounded up to 8 MiB.
  void* chunk = pool->Allocate((size_t{4} << 20) + 90);
  EXPECT_LT(pool->UsableSize(chunk, (size_t{4} << 20) + 90), size_t{7} << 20);
  pool->Deallocate(chunk);
}

TEST(BufferPoolAllocator, FreedBuffersAreReusedWithinTheCacheBound) {
  auto pool = NewBufferPoolAllocator(8u << 20);
  void* a = pool->Allocate(3u << 20);
  pool->Deallocate(a);
  EXPECT_EQ(pool->Allocate(3u << 20), a);  // same class: handed back
  void* b = pool->Allocate(3u << 20);
  void* c = pool->Allocate(3u << 20);
  pool->Deallocate(a);
  pool->Deallocate(b);
  pool->Deallocate(c);  // beyond the 8 MiB bound: freed, not kept
  void* x = pool->Allocate(3u << 20);
  void* y = pool->Allocate(3u << 20);
  EXPECT_TRUE((x == a || x == b) && (y == a || y == b) && x != y);
  pool->Deallocate(x);
  pool->Deallocate(y);
  pool->Deallocate(nullptr);  // a no-op
}

}  // namespace
}  // namespace auxstore::store_internal
