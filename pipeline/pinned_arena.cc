#include "pipeline/pinned_arena.h"

namespace auxstore::pipeline {

Result<std::unique_ptr<PinnedArena>> PinnedArena::Create(GpuBackend& gpu, uint64_t bytes) {
  if (bytes == 0) return Status::InvalidArgument("pinned arena of 0 bytes");
  AUXSTORE_ASSIGN_OR_RETURN(uint8_t * base, gpu.AllocPinned(bytes));
  return std::unique_ptr<PinnedArena>(new PinnedArena(gpu, base, bytes));
}

PinnedArena::PinnedArena(GpuBackend& gpu, uint8_t* base, uint64_t bytes)
    : gpu_(gpu), base_(base), bytes_(bytes), ranges_(bytes, /*align=*/256) {}

PinnedArena::~PinnedArena() { (void)gpu_.FreePinned(base_); }

uint8_t* PinnedArena::TryAllocate(uint64_t bytes) {
  std::lock_guard lock(mu_);
  auto off = ranges_.Allocate(bytes);
  return off ? base_ + *off : nullptr;
}

void PinnedArena::Free(uint8_t* p) {
  std::lock_guard lock(mu_);
  (void)ranges_.Free(static_cast<uint64_t>(p - base_));
}

uint64_t PinnedArena::used() const {
  std::lock_guard lock(mu_);
  return ranges_.used();
}

}  // namespace auxstore::pipeline
