#include "gpu/resident_memory.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdlib>

namespace auxstore::gpu {

namespace {

constexpr size_t kAlign = 256;
constexpr size_t kHugePage = 2u << 20;

size_t RoundUp(size_t n, size_t to) { return (n + to - 1) / to * to; }

}  // namespace

uint8_t* AllocResident(size_t bytes) {
  // Huge-page alignment for big blocks: 512x fewer faults, and the kernel can
  // back them with 2 MiB pages when THP is in madvise mode.
  const size_t align = bytes >= kHugePage ? kHugePage : kAlign;
  const size_t size = RoundUp(bytes, align);
  auto* p = static_cast<uint8_t*>(std::aligned_alloc(align, size));
  if (p == nullptr) return nullptr;
  const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  const auto first = RoundUp(reinterpret_cast<uintptr_t>(p), page);
  const auto end = reinterpret_cast<uintptr_t>(p) + size;
  if (align == kHugePage)
    (void)::madvise(reinterpret_cast<void*>(first), end - first, MADV_HUGEPAGE);
  if (end <= first ||
      ::madvise(reinterpret_cast<void*>(first), end - first, MADV_POPULATE_WRITE) != 0) {
    // Older kernels: touch every page (writes zero, as fresh pages hold).
    for (uintptr_t a = reinterpret_cast<uintptr_t>(p); a < end; a += page) {
      *reinterpret_cast<volatile uint8_t*>(a) = 0;
    }
  }
  return p;
}

}  // namespace auxstore::gpu
