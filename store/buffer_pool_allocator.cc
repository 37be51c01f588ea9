#include "store/buffer_pool_allocator.h"

#include <bit>
#include <cstdlib>
#include <mutex>
#include <vector>

namespace auxstore::store_internal {
namespace {

constexpr size_t kPooledMin = 64 * 1024;  // below this, malloc is cheap enough
constexpr size_t kHeader = 64;            // keeps the payload cache-line aligned

// Each block starts with a header recording its capacity (0 = plain malloc).
struct BlockHeader {
  size_t capacity;
};

class BufferPoolAllocator : public rocksdb::MemoryAllocator {
 public:
  explicit BufferPoolAllocator(size_t max_cached) : max_cached_(max_cached) {}
  ~BufferPoolAllocator() override {
    for (auto& list : free_)
      for (void* b : list) std::free(b);
  }

  const char* Name() const override { return "auxstore.BufferPoolAllocator"; }

  void* Allocate(size_t size) override {
    size_t capacity = 0;
    if (size >= kPooledMin) {
      capacity = std::bit_ceil(size);
      std::lock_guard lock(mu_);
      auto& list = ListFor(capacity);
      if (!list.empty()) {
        void* block = list.back();
        list.pop_back();
        cached_ -= capacity;
        return static_cast<char*>(block) + kHeader;
      }
    }
    void* block = std::aligned_alloc(
        kHeader, kHeader + ((capacity ? capacity : size) + kHeader - 1) / kHeader * kHeader);
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
        ListFor(capacity).push_back(block);
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
  std::vector<void*>& ListFor(size_t capacity) { return free_[std::countr_zero(capacity)]; }

  const size_t max_cached_;
  std::mutex mu_;
  size_t cached_ = 0;
  std::vector<void*> free_[64];
};

}  // namespace

std::shared_ptr<rocksdb::MemoryAllocator> NewBufferPoolAllocator(size_t max_cached_bytes) {
  return std::make_shared<BufferPoolAllocator>(max_cached_bytes);
}

}  // namespace auxstore::store_internal
