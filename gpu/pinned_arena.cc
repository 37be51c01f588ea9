#include "gpu/pinned_arena.h"

namespace auxstore::gpu {

Result<std::unique_ptr<PinnedArena>> PinnedArena::Create(GpuBackend& gpu, uint64_t bytes) {
  if (bytes == 0) return Status::InvalidArgument("pinned arena of 0 bytes");
  AUXSTORE_ASSIGN_OR_RETURN(uint8_t * base, gpu.AllocPinned(bytes));
  return std::unique_ptr<PinnedArena>(new PinnedArena(gpu, base, bytes));
}

PinnedArena::PinnedArena(GpuBackend& gpu, uint8_t* base, uint64_t bytes)
    : gpu_(gpu), base_(base), bytes_(bytes) {
  free_[0] = bytes;
}

PinnedArena::~PinnedArena() { (void)gpu_.FreePinned(base_); }

uint8_t* PinnedArena::TryAllocate(uint64_t bytes) {
  const uint64_t want = (std::max<uint64_t>(bytes, 1) + kAlign - 1) / kAlign * kAlign;
  std::lock_guard lock(mu_);
  for (auto it = free_.begin(); it != free_.end(); ++it) {
    if (it->second < want) continue;
    const uint64_t off = it->first, len = it->second;
    free_.erase(it);
    if (len > want) free_[off + want] = len - want;
    used_[off] = want;
    return base_ + off;
  }
  return nullptr;
}

void PinnedArena::Free(uint8_t* p) {
  std::lock_guard lock(mu_);
  auto u = used_.find(static_cast<uint64_t>(p - base_));
  if (u == used_.end()) return;
  uint64_t off = u->first, len = u->second;
  used_.erase(u);
  auto next = free_.lower_bound(off);
  if (next != free_.end() && next->first == off + len) {  // merge right
    len += next->second;
    next = free_.erase(next);
  }
  if (next != free_.begin()) {  // merge left
    auto prev = std::prev(next);
    if (prev->first + prev->second == off) {
      prev->second += len;
      return;
    }
  }
  free_[off] = len;
}

uint64_t PinnedArena::used() const {
  std::lock_guard lock(mu_);
  uint64_t n = 0;
  for (auto& [o, l] : used_) n += l;
  return n;
}

}  // namespace auxstore::gpu
