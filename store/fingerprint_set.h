// The set of snapshot keys a lookup asks about, as 64-bit fingerprints in one
// flat, linearly probed array on transparent huge pages (issue 25).
//
// Why not the index's std::unordered_map: at 1M snapshots its nodes spread
// over ~200 MB of 4 KiB pages, and on a VM with shadow paging a probe there
// costs page walks and, after any large free in the process, page faults: a
// LongestPrefix over 64 candidates measured p99 3.9 ms that way. This array
// is 16 MB (8 huge pages) at 1M keys and a probe is one cache miss.
//
// A multiset: two keys may share a fingerprint (a 64-bit collision, which
// makes a lookup read one manifest that is not there: harmless); each Erase
// takes one away. So a caller inserts each key once and erases it once.
// Not thread-safe: SnapshotIndex holds its mutex around every call.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>

namespace auxstore::store_internal {

class FingerprintSet {
 public:
  static uint64_t Of(std::string_view key);  // never 0 (0 marks a free slot)

  void Reserve(size_t n);  // room for n fingerprints without growing
  void Insert(uint64_t f);
  void Erase(uint64_t f);  // one of them; none when absent
  bool Contains(uint64_t f) const;
  size_t size() const { return size_; }

 private:
  struct Free {
    void operator()(uint64_t* p) const;
  };
  std::unique_ptr<uint64_t[], Free> slots_;
  size_t mask_ = 0;  // capacity - 1, the capacity a power of two (0: none yet)
  size_t size_ = 0;
  void Rehash(size_t capacity);
  void Place(uint64_t f);
};

}  // namespace auxstore::store_internal
