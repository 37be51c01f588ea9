// TieredStore's fills behind a lookup: a LongestPrefix that restores a
// snapshot from the pool answers once its pages are read and checked, and
// the local copy (a full PutSnapshot, as long as the page reads) is written
// on fill_thread_ meanwhile. Until it is written the checked layers serve
// ReadLayerInto, ReadLayersInto and GetLayer; every other call reaches the
// local store through Local(), which first waits for the fills queued
// before it, so what it sees is as if the fill had been written inline.
#include <boost/asio/post.hpp>
#include <boost/asio/use_future.hpp>
#include <cstring>
#include <string>

#include "auxstore/log.h"
#include "store/shared/tiered_store.h"

namespace auxstore::shared {

uint64_t TieredStore::FillRoom() {
  std::lock_guard lock(pending_mu_);
  return pending_bytes_ >= kMaxPendingFillBytes ? 0 : kMaxPendingFillBytes - pending_bytes_;
}

void TieredStore::FillBehind(const SharedRecord& r, std::vector<LayerBuffer> layers, bool wait) {
  auto fill = std::make_shared<PendingFill>();
  fill->record = r;
  fill->layers = std::move(layers);
  for (const LayerBuffer& l : fill->layers) fill->bytes += l.size;
  const FillKey key{r.ns, r.prefix};
  {
    std::unique_lock lock(pending_mu_);
    // Bounded: lookups that outrun the local disk wait for it here.
    const auto room = [&] {
      return pending_bytes_ + fill->bytes <= kMaxPendingFillBytes || pending_.empty();
    };
    if (!wait && !room()) return;
    pending_cv_.wait(lock, room);
    if (!pending_.emplace(key, fill).second) return;  // another lookup's fill: that one writes it
    pending_bytes_ += fill->bytes;
    ++fills_behind_;
  }
  boost::asio::post(fill_thread_, [this, fill, key] {
    // A failed fill leaves no local copy: the next read restores it again.
    const Status st = Fill(fill->record, fill->layers);
    if (!st.ok()) WarnNotFilled(fill->record, st);
    std::lock_guard lock(pending_mu_);
    pending_.erase(key);
    pending_bytes_ -= fill->bytes;
    --fills_behind_;
    pending_cv_.notify_all();
  });
}

void TieredStore::RestoreBehind(NamespaceId ns, const Prefix& prefix, const Manifest& manifest) {
  uint64_t bytes = 0;
  for (const LayerEntry& e : manifest.layers) bytes += e.bytes;
  const FillKey key{ns, prefix};
  {
    std::lock_guard lock(pending_mu_);
    if (pending_.contains(key) || restoring_.contains(key) ||
        restoring_bytes_ + bytes > kMaxPendingFillBytes) {
      return;
    }
    restoring_.insert(key);
    restoring_bytes_ += bytes;
  }
  boost::asio::post(fill_thread_, [this, key, bytes] {
    const auto& [ns, prefix] = key;
    // The pool's record read again: the one the read used may have been
    // replaced since, and its pages reclaimed.
    const Prefix one[] = {prefix};
    auto local = local_->GetManifests(ns, one);
    if (!(local.ok() && (*local)[0]) && !PendingOf(ns, prefix)) {
      auto records = tier_->ReadRecords(ns, one);
      if (records.ok() && (*records)[0]) {
        auto fetched = Fetch(*(*records)[0]);
        if (fetched.ok()) {
          const Status st = Fill(*(*records)[0], *fetched);
          if (!st.ok()) WarnNotFilled(*(*records)[0], st);
        }
      }
    }
    std::lock_guard lock(pending_mu_);
    restoring_.erase(key);
    restoring_bytes_ -= bytes;
  });
}

void TieredStore::WarnNotFilled(const SharedRecord& r, const Status& why) {
  const std::string message = "snapshot " + r.prefix.ToHex() + " restored from RADOS pool '" +
                              tier_->pool() + "' was not written locally: " + why.ToString();
  Deliver(options_.log_sink, {LogLevel::kWarn, "auxstore", message});
}

Store& TieredStore::Local() {
  // fill_thread_ runs its jobs in order: one posted now runs after every
  // fill queued before this call.
  if (fills_behind_.load() > 0)
    boost::asio::post(fill_thread_, boost::asio::use_future([] {})).wait();
  return *local_;
}

std::shared_ptr<const TieredStore::PendingFill> TieredStore::PendingOf(NamespaceId ns,
                                                                       const Prefix& prefix) {
  if (fills_behind_.load() == 0) return nullptr;
  std::lock_guard lock(pending_mu_);
  auto it = pending_.find({ns, prefix});
  return it == pending_.end() ? nullptr : it->second;
}

std::optional<size_t> TieredStore::LongestPending(NamespaceId ns,
                                                  std::span<const Prefix> candidates, size_t from) {
  if (fills_behind_.load() == 0) return std::nullopt;
  std::lock_guard lock(pending_mu_);
  for (size_t i = candidates.size(); i-- > from;)
    if (pending_.contains({ns, candidates[i]})) return i;
  return std::nullopt;
}

Result<std::span<const uint8_t>> TieredStore::PendingLayer(const PendingFill& p, uint32_t layer) {
  const auto& entries = p.record.manifest.layers;
  for (size_t i = 0; i < entries.size(); ++i)
    if (entries[i].layer == layer) return p.layers[i].span();
  return Status::NotFound("layer " + std::to_string(layer) + " is not in the snapshot of prefix " +
                          p.record.prefix.ToHex());
}

Result<uint64_t> TieredStore::CopyPending(const PendingFill& p, uint32_t layer,
                                          std::span<uint8_t> dst) {
  AUXSTORE_ASSIGN_OR_RETURN(auto bytes, PendingLayer(p, layer));
  if (dst.size() < bytes.size()) {
    return Status::OutOfRange("layer " + std::to_string(layer) + " of prefix " +
                              p.record.prefix.ToHex() + " is " + std::to_string(bytes.size()) +
                              " bytes; the destination holds " + std::to_string(dst.size()));
  }
  if (!bytes.empty()) std::memcpy(dst.data(), bytes.data(), bytes.size());
  return bytes.size();
}

Status TieredStore::CopyPendingLayers(const PendingFill& p, std::span<LayerInto> layers) {
  Status first;
  for (LayerInto& l : layers) {
    auto copied = CopyPending(p, l.layer, l.dst);
    l.status = copied.status();
    l.bytes = copied.ok() ? *copied : 0;
    if (first.ok()) first = l.status;
  }
  return first;
}

}  // namespace auxstore::shared
