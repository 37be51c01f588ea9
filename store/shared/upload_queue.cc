#include "store/shared/upload_queue.h"

#include <algorithm>

namespace auxstore::shared {

using Clock = std::chrono::steady_clock;
constexpr std::chrono::milliseconds kMaxBackoff{30'000};

UploadQueue::UploadQueue(SharedTier& tier, uint64_t max_bytes, bool shed_when_full)
    : tier_(tier), max_bytes_(max_bytes), shed_(shed_when_full), thread_([this] { Run(); }) {}

UploadQueue::~UploadQueue() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void UploadQueue::Enqueue(SharedRecord record, std::span<const ByteSpan> layers) {
  uint64_t size = 0;
  for (ByteSpan l : layers) size += l.size();
  std::unique_lock lock(mu_);
  auto fits = [&] { return items_.empty() || bytes_ + size <= max_bytes_; };
  if (!fits()) {
    if (shed_) {
      ++tier_.counters().shed;
      return;
    }
    cv_.wait(lock, [&] { return fits() || stop_; });
  }
  Item item;
  item.record = std::move(record);
  for (ByteSpan l : layers) item.bytes.emplace_back(l.begin(), l.end());
  item.size = size;
  bytes_ += size;
  items_.push_back(std::move(item));
  cv_.notify_all();
}

bool UploadQueue::Drop(NamespaceId ns, const Prefix& prefix) {
  std::unique_lock lock(mu_);
  // An upload of it in flight finishes first, so that the erase in the pool
  // that follows comes after its commit, never before.
  auto same = [&](const Item& it) { return it.record.ns == ns && it.record.prefix == prefix; };
  cv_.wait(lock, [&] { return !busy_ || !same(items_.front()); });
  auto it = items_.begin();
  if (busy_ && it != items_.end()) ++it;
  for (; it != items_.end(); ++it) {
    if (same(*it)) {
      bytes_ -= it->size;
      items_.erase(it);
      cv_.notify_all();
      return true;
    }
  }
  return false;
}

bool UploadQueue::AllFailedSince(uint64_t mark) const {
  return std::all_of(items_.begin(), items_.end(),
                     [&](const Item& it) { return it.failed_mark >= mark; });
}

Status UploadQueue::Flush() {
  std::unique_lock lock(mu_);
  const uint64_t mark = ++flush_mark_;
  cv_.notify_all();  // a flush retries at once whatever the backoff says
  cv_.wait(lock, [&] { return (items_.empty() && !busy_) || (!busy_ && AllFailedSince(mark)); });
  if (items_.empty()) return Status::Ok();
  const std::string what = std::to_string(items_.size()) +
                           " snapshots are not in the shared tier yet (queued, retried): ";
  if (last_error_.code() == StatusCode::kUnavailable) {
    return Status::Unavailable(what + last_error_.message());
  }
  return Status::IOError(what + last_error_.ToString());
}

uint64_t UploadQueue::queued() const {
  std::lock_guard lock(mu_);
  return items_.size();
}

void UploadQueue::Run() {
  std::unique_lock lock(mu_);
  while (true) {
    // The first item due: not failed since the current flush mark, and past
    // its backoff unless a flush waits for it.
    auto due = [&](const Item& it) {
      return it.failed_mark < flush_mark_ || Clock::now() >= it.not_before;
    };
    auto next = std::find_if(items_.begin(), items_.end(), due);
    if (stop_) return;
    if (next == items_.end()) {
      auto wake = Clock::now() + kMaxBackoff;
      for (const auto& it : items_) wake = std::min(wake, it.not_before);
      cv_.wait_until(lock, wake);
      continue;
    }
    if (next != items_.begin()) items_.splice(items_.begin(), items_, next);
    busy_ = true;
    Item& item = items_.front();
    const uint64_t mark = flush_mark_;
    lock.unlock();
    Upload up{item.record, {}};
    for (const auto& b : item.bytes) up.layers.emplace_back(b);
    Status st = tier_.Put(up);
    lock.lock();
    busy_ = false;
    if (st.ok()) {
      bytes_ -= item.size;
      items_.pop_front();
    } else {
      last_error_ = st;
      item.failed_mark = mark;
      item.not_before = Clock::now() + item.backoff;
      item.backoff = std::min(item.backoff * 2, kMaxBackoff);
      items_.splice(items_.end(), items_, items_.begin());  // the others first
    }
    cv_.notify_all();
  }
}

}  // namespace auxstore::shared
