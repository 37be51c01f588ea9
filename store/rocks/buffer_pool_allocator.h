// A RocksDB MemoryAllocator that keeps large buffers for reuse.
//
// Reading a multi-MiB record makes RocksDB allocate a fresh buffer per Get;
// glibc serves those with mmap/munmap, so every read pays page faults and
// zeroing (28-40% of CPU, shared/perf-notes.md cause 2). Set as the block
// cache's allocator, this pool hands the same pages back read after read
// (RocksDB uses it even with fill_cache=false). Small sizes go to malloc.
#pragma once

#include <rocksdb/memory_allocator.h>

#include <memory>

namespace auxstore::store_internal {

// Keeps at most `max_cached_bytes` of free buffers.
std::shared_ptr<rocksdb::MemoryAllocator> NewBufferPoolAllocator(size_t max_cached_bytes);

}  // namespace auxstore::store_internal
