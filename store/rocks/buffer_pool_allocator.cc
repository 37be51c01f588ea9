#include "store/rocks/buffer_pool_allocator.h"

#include <sys/mman.h>

#include <bit>
#include <cstdlib>
#include <map>
#include <mutex>
#include <vector>

namespace auxstore::store_internal {
namespace {

constexpr size_t kPooledMin = 64 * 1024;  // below this, malloc is cheap enough
constexpr size_t kHeader = 64;            // keeps the payload cache-line aligned
constexpr size_t kHugePage = 2u << 20;

// Each block starts with a header recording its capacity (0 = plain malloc).
struct BlockHeader {
  size_t capacity;
};

// Size classes: powers of two up to 2 MiB, then multiples of 2 MiB (a 4 MiB
// chunk record takes 6 MiB, not 8).
size_t CapacityFor(size_t size) {
  if (size + kHeader <= kHugePage) return std::bit_ceil(size + kHeader) - kHeader;
  return (size + kHeader + kHugePage - 1) / kHugePage * kHugePage - kHeader;
}

// A block for `capacity` payload bytes. Blocks of 2 MiB and more are huge-page
// aligned and ask for transparent huge pages: on this project's VMs the
// first write to each fresh 4 KiB page costs ~10 us, so a new 4 MiB read
// buffer cost ~10 ms of faults before its first read.
void* AllocateBlock(size_t capacity) {
  const size_t total = capacity + kHeader;
  if (total < kHugePage)
    return std::aligned_alloc(kHeader, (total + kHeader - 1) / kHeader * kHeader);
  void* block = std::aligned_alloc(kHugePage, total);
  if (block) (void)::madvise(block, total, MADV_HUGEPAGE);
  return block;
}

class BufferPoolAllocator : public rocksdb::MemoryAllocator {
 public:
  explicit BufferPoolAllocator(size_t max_cached) : max_cached_(max_cached) {}
  ~BufferPoolAllocator() override {
    for (auto& [capacity, list] : free_)
      for (void* b : list) std::free(b);
  }

  const char* Name() const override { return "auxstore.BufferPoolAllocator"; }

  void* Allocate(size_t size) override {
    size_t capacity = 0;
    if (size >= kPooledMin) {
      capacity = CapacityFor(size);
      std::lock_guard lock(mu_);
      auto& list = free_[capacity];
      if (!list.empty()) {
        void* block = list.back();
        list.pop_back();
        cached_ -= capacity;
        return static_cast<char*>(block) + kHeader;
      }
    }
    void* block = AllocateBlock(capacity ? capacity : size);
    if (!block) return nullptr;
    static_cast<BlockHeader*>(block)->capacity = capacity;
    return static_cast<char*>(block) + kHeader;
  }

  void Deallocate(void* p) override {
    if (!p) return;
    void* block = static_cast<char*>(p) - kHeader;
    const size_t capacity = static_cast<BlockHeader*>(block)->capacity;
    if (capacity) {
      std::lock_guard lock(mu_);
      if (cached_ + capacity <= max_cached_) {
        free_[capacity].push_back(block);
        cached_ += capacity;
        return;
      }
    }
    std::free(block);
  }

  size_t UsableSize(void* p, size_t allocation_size) const override {
    const size_t capacity =
        static_cast<BlockHeader*>(static_cast<void*>(static_cast<char*>(p) - kHeader))->capacity;
    return capacity ? capacity : allocation_size;
  }

 private:
  const size_t max_cached_;
  std::mutex mu_;
  size_t cached_ = 0;
  std::map<size_t, std::vector<void*>> free_;  // capacity -> free blocks
};

}  // namespace

std::shared_ptr<rocksdb::MemoryAllocator> NewBufferPoolAllocator(size_t max_cached_bytes) {
  return std::make_shared<BufferPoolAllocator>(max_cached_bytes);
}

}  // namespace auxstore::store_internal
