#include "store/rados/rados_aio.h"

#include <condition_variable>
#include <mutex>
#include <vector>

namespace auxstore::rados {
namespace {

// Indices of completed operations, filled by librados's callback thread.
struct DoneQueue {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<size_t> done;
};

struct Slot {
  DoneQueue* queue = nullptr;
  size_t index = 0;
};

void OnComplete(librados::completion_t, void* arg) {
  auto* slot = static_cast<Slot*>(arg);
  // Notified under the lock: RunWindowed cannot return (and destroy the
  // queue) before this callback is done with it.
  std::lock_guard<std::mutex> lock(slot->queue->mu);
  slot->queue->done.push_back(slot->index);
  slot->queue->cv.notify_one();
}

}  // namespace

void RunWindowed(size_t n, size_t window,
                 const std::function<int(size_t, librados::AioCompletion*)>& start,
                 const std::function<void(size_t, int, librados::AioCompletion*)>& finish) {
  if (window == 0) window = 1;
  DoneQueue queue;
  std::vector<Slot> slots(n);
  std::vector<librados::AioCompletion*> completions(n, nullptr);
  size_t next = 0, in_flight = 0;
  std::vector<size_t> ready;
  while (next < n || in_flight > 0) {
    // Refill as soon as any operation completed, not only the oldest.
    while (next < n && in_flight < window) {
      const size_t i = next++;
      slots[i] = {&queue, i};
      completions[i] = librados::Rados::aio_create_completion(&slots[i], OnComplete);
      int rc = start(i, completions[i]);
      if (rc < 0) {
        finish(i, rc, completions[i]);  // never submitted: no callback comes
        completions[i]->release();
        completions[i] = nullptr;
      } else {
        ++in_flight;
      }
    }
    if (in_flight == 0) continue;
    {
      std::unique_lock<std::mutex> lock(queue.mu);
      // Returns: every op is bounded by rados_osd_op_timeout (RadosConnection).
      queue.cv.wait(lock, [&] { return !queue.done.empty(); });
      ready.swap(queue.done);
    }
    for (size_t i : ready) {
      librados::AioCompletion* c = completions[i];
      c->wait_for_complete();  // already complete; orders us after librados's bookkeeping
      finish(i, c->get_return_value(), c);
      c->release();
      completions[i] = nullptr;
      --in_flight;
    }
    ready.clear();
  }
}

}  // namespace auxstore::rados
