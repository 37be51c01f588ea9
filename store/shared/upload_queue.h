// UploadQueue: SharedWrite::kBehind. Puts return after the local commit;
// their snapshots (copied) wait here, bounded by bytes, and one background
// thread uploads them to the pool in order. An upload that fails stays
// queued and is retried (after 1 s, doubling to 30 s); Flush() waits until
// every queued snapshot was uploaded or failed once more, and reports the
// ones that could not be. When the queue is full a put either waits for room
// or sheds (the snapshot is not queued, and counted in TierCounters::shed):
// nothing leaves the queue uncounted.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <list>
#include <mutex>
#include <thread>
#include <vector>

#include "store/shared/shared_tier.h"

namespace auxstore::shared {

class UploadQueue {
 public:
  UploadQueue(SharedTier& tier, uint64_t max_bytes, bool shed_when_full);
  // Stops the thread. Snapshots still queued are not uploaded: call Flush()
  // first (the store's close does).
  ~UploadQueue();
  UploadQueue(const UploadQueue&) = delete;
  UploadQueue& operator=(const UploadQueue&) = delete;

  // Takes a copy of `layers` (the record's layers, in order). A put bigger
  // than the whole queue waits for an empty queue (or is shed).
  void Enqueue(SharedRecord record, std::span<const ByteSpan> layers);

  // Drops a queued upload of (ns, prefix) (an erase); true when one was.
  bool Drop(NamespaceId ns, const Prefix& prefix);

  // Waits until the queue is empty or every snapshot in it was tried since
  // this call and failed: OK, or Unavailable/IOError naming how many wait
  // and the last error (they stay queued and are retried).
  Status Flush();

  uint64_t queued() const;

 private:
  struct Item {
    SharedRecord record;
    std::vector<std::vector<uint8_t>> bytes;
    uint64_t size = 0;
    uint64_t failed_mark = 0;  // the flush mark current when it last failed
    std::chrono::steady_clock::time_point not_before{};
    std::chrono::milliseconds backoff{1000};
  };
  void Run();
  bool AllFailedSince(uint64_t mark) const;

  SharedTier& tier_;
  const uint64_t max_bytes_;
  const bool shed_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::list<Item> items_;  // a list: the uploading front stays put while others go
  uint64_t bytes_ = 0;
  bool busy_ = false;  // the thread is uploading items_.front()
  uint64_t flush_mark_ = 0;
  Status last_error_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace auxstore::shared
