#include "store/fingerprint_set.h"

#include <sys/mman.h>
#include <xxhash.h>

#include <cstdlib>
#include <cstring>

namespace auxstore::store_internal {
namespace {

constexpr size_t kHugePage = 2u << 20;
constexpr size_t kMinCapacity = 1024;

// Zeroed slots; on huge pages when the array fills one or more.
uint64_t* AllocateSlots(size_t capacity) {
  const size_t bytes = capacity * sizeof(uint64_t);
  const bool huge = bytes >= kHugePage;
  void* p = std::aligned_alloc(huge ? kHugePage : 64, bytes);
  if (p == nullptr) throw std::bad_alloc();
  if (huge) (void)::madvise(p, bytes, MADV_HUGEPAGE);
  std::memset(p, 0, bytes);
  return static_cast<uint64_t*>(p);
}

}  // namespace

void FingerprintSet::Free::operator()(uint64_t* p) const { std::free(p); }

uint64_t FingerprintSet::Of(std::string_view key) {
  const uint64_t f = XXH3_64bits(key.data(), key.size());
  return f == 0 ? 1 : f;
}

void FingerprintSet::Reserve(size_t n) {
  size_t capacity = kMinCapacity;
  while (capacity < 2 * n) capacity *= 2;  // at most half full
  if (capacity > mask_ + 1 || !slots_) Rehash(capacity);
}

void FingerprintSet::Rehash(size_t capacity) {
  std::unique_ptr<uint64_t[], Free> old(AllocateSlots(capacity));
  old.swap(slots_);
  const size_t old_capacity = old ? mask_ + 1 : 0;
  mask_ = capacity - 1;
  for (size_t i = 0; i < old_capacity; ++i) {
    if (old[i] != 0) Place(old[i]);
  }
}

void FingerprintSet::Place(uint64_t f) {
  size_t i = f & mask_;
  while (slots_[i] != 0) i = (i + 1) & mask_;
  slots_[i] = f;
}

void FingerprintSet::Insert(uint64_t f) {
  if (!slots_ || 2 * (size_ + 1) > mask_ + 1) Reserve(size_ + 1);  // doubles
  Place(f);
  ++size_;
}

bool FingerprintSet::Contains(uint64_t f) const {
  if (!slots_) return false;
  for (size_t i = f & mask_;; i = (i + 1) & mask_) {
    if (slots_[i] == f) return true;
    if (slots_[i] == 0) return false;
  }
}

void FingerprintSet::Erase(uint64_t f) {
  if (!slots_) return;
  size_t hole = f & mask_;
  while (slots_[hole] != f) {
    if (slots_[hole] == 0) return;
    hole = (hole + 1) & mask_;
  }
  // Backward shift (no tombstones): a later entry of the run moves into the
  // hole when its home slot is not between the hole and itself.
  for (size_t j = (hole + 1) & mask_; slots_[j] != 0; j = (j + 1) & mask_) {
    const size_t home = slots_[j] & mask_;
    if (((j - home) & mask_) >= ((j - hole) & mask_)) {
      slots_[hole] = slots_[j];
      hole = j;
    }
  }
  slots_[hole] = 0;
  --size_;
}

}  // namespace auxstore::store_internal
