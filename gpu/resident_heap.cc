#include "gpu/resident_heap.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>

namespace auxstore::gpu {
namespace {

constexpr uint64_t kBlockAlign = 256;
constexpr uint64_t kHugePage = 2u << 20;
// Regions grow with the heap (a test's few small buffers take one 2 MiB
// region; a serving process's states take a few big ones).
constexpr uint64_t kMaxRegionGrowth = 256u << 20;

// n rounded up to a multiple of `to`; false when that overflows.
bool RoundUp(uint64_t n, uint64_t to, uint64_t* out) {
  uint64_t sum = 0;
  if (__builtin_add_overflow(n, to - 1, &sum)) return false;
  *out = sum / to * to;
  return true;
}

// `size` bytes (a multiple of 2 MiB), 2 MiB aligned, huge pages requested
// and every page populated. Null when out of memory.
uint8_t* MapRegion(uint64_t size) {
  auto* p = static_cast<uint8_t*>(std::aligned_alloc(kHugePage, size));
  if (p == nullptr) return nullptr;
  // Without THP (or on kernels before 5.14) these fail and the pages are
  // touched by hand: still resident, with 4 KiB pages.
  (void)::madvise(p, size, MADV_HUGEPAGE);
  if (::madvise(p, size, MADV_POPULATE_WRITE) != 0) {
    const auto page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
    for (uint64_t a = 0; a < size; a += page) static_cast<volatile uint8_t*>(p)[a] = 0;
  }
  return p;
}

}  // namespace

ResidentHeap::~ResidentHeap() {
  for (auto& r : regions_) std::free(r->base);
}

uint8_t* ResidentHeap::Allocate(size_t bytes) {
  if (bytes == 0 || bytes > kMaxBytes) return nullptr;
  std::lock_guard lock(mu_);
  for (auto& r : regions_) {
    if (auto off = r->blocks.Allocate(bytes)) return r->base + *off;
  }
  uint64_t rounded = 0;
  if (!RoundUp(bytes, kHugePage, &rounded)) return nullptr;
  const uint64_t size = std::max(rounded, std::clamp(reserved_, kHugePage, kMaxRegionGrowth));
  uint8_t* base = MapRegion(size);
  if (base == nullptr) return nullptr;
  auto& r = regions_.emplace_back(new Region{base, RangeAllocator(size, kBlockAlign)});
  reserved_ += size;
  const auto off = r->blocks.Allocate(bytes);
  return off ? r->base + *off : nullptr;  // a fresh region of >= bytes always has room
}

bool ResidentHeap::Free(uint8_t* p) {
  std::lock_guard lock(mu_);
  for (auto it = regions_.begin(); it != regions_.end(); ++it) {
    Region& r = **it;
    if (p < r.base || p >= r.base + r.blocks.capacity()) continue;
    if (!r.blocks.Free(static_cast<uint64_t>(p - r.base))) return false;
    if (r.blocks.empty()) {
      reserved_ -= r.blocks.capacity();
      std::free(r.base);
      regions_.erase(it);
    }
    return true;
  }
  return false;
}

size_t ResidentHeap::regions() const {
  std::lock_guard lock(mu_);
  return regions_.size();
}

}  // namespace auxstore::gpu
