// A Store that forwards to a real one, with injectable faults and a gate
// that holds writes, for pipeline tests.
#pragma once

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>

#include "auxstore/store.h"

namespace auxstore::testing {

class ForwardingStore final : public Store {
  class FaultyReader;

 public:
  explicit ForwardingStore(Store& inner) : in_(inner) {}

  // A LayerReader's read of (layer, chunk of its first array) returns Corruption and, as
  // the real reader does (layer_reader.h), quarantines the snapshot itself.
  std::optional<std::pair<uint32_t, uint32_t>> corrupt_chunk;
  // The read of this layer's last piece returns a layer digest mismatch (Corruption) and
  // quarantines the snapshot, as the real reader does.
  std::optional<uint32_t> wrong_hash_layer;
  std::atomic<int> quarantines{0}, chunk_reads{0};
  // While set, a read of this layer past its first chunk waits until
  // ReleaseHeldLayer.
  void HoldLayer(uint32_t layer) {
    std::lock_guard l(mu_);
    held_layer_ = layer;
  }
  void ReleaseHeldLayer() {
    {
      std::lock_guard l(mu_);
      held_layer_.reset();
    }
    cv_.notify_all();
  }

  // When set, PutSnapshot fails with it (after the gate) and writes nothing.
  std::optional<Status> put_error;

  // While closed, PutSnapshot waits.
  void CloseGate() {
    std::lock_guard l(mu_);
    gate_open_ = false;
  }
  void OpenGate() {
    {
      std::lock_guard l(mu_);
      gate_open_ = true;
    }
    cv_.notify_all();
  }

  Result<NamespaceId> RegisterNamespace(const NamespaceSpec& s) override {
    return in_.RegisterNamespace(s);
  }
  Result<NamespaceSpec> GetNamespace(NamespaceId ns) override { return in_.GetNamespace(ns); }
  Result<std::vector<std::pair<NamespaceId, NamespaceSpec>>> ListNamespaces() override {
    return in_.ListNamespaces();
  }
  Status PutSnapshot(NamespaceId ns, const Prefix& p, uint64_t tokens,
                     std::span<const LayerBlob> layers, const PutOptions& put) override {
    {
      std::unique_lock l(mu_);
      cv_.wait(l, [&] { return gate_open_; });
      if (put_error) return *put_error;
    }
    return in_.PutSnapshot(ns, p, tokens, layers, put);
  }
  Result<Manifest> GetManifest(NamespaceId ns, const Prefix& p) override {
    return in_.GetManifest(ns, p);
  }
  Status ReadLayer(NamespaceId ns, const Prefix& p, uint32_t layer,
                   const ChunkSink& sink) override {
    return in_.ReadLayer(ns, p, layer, sink);
  }
  Result<std::vector<uint8_t>> GetLayer(NamespaceId ns, const Prefix& p, uint32_t l) override {
    return in_.GetLayer(ns, p, l);
  }
  // The real reader, behind the faults above (FaultyReader).
  Result<std::unique_ptr<LayerReader>> OpenLayer(NamespaceId ns, const Prefix& p, const Manifest& m,
                                                 uint32_t layer, PieceChecks checks) override;
  Status Quarantine(NamespaceId ns, const Prefix& p, const Status& why) override {
    ++quarantines;
    return in_.Quarantine(ns, p, why);
  }
  Status QuarantineIfUnchanged(NamespaceId ns, const Prefix& p, const Manifest& seen,
                               const Status& why) override {
    ++quarantines;
    return in_.QuarantineIfUnchanged(ns, p, seen, why);
  }
  Result<std::optional<size_t>> LongestPrefix(NamespaceId ns, std::span<const Prefix> c) override {
    return in_.LongestPrefix(ns, c);
  }
  Result<std::optional<PrefixMatch>> FindLongestPrefix(NamespaceId ns, std::span<const Prefix> c,
                                                       const LookupOptions& o) override {
    return in_.FindLongestPrefix(ns, c, o);
  }
  Result<std::optional<TokenMatch>> LongestPrefixForTokens(NamespaceId ns,
                                                           std::span<const uint32_t> t, uint32_t bs,
                                                           uint64_t salt,
                                                           const LookupOptions& o) override {
    return in_.LongestPrefixForTokens(ns, t, bs, salt, o);
  }
  Result<LeaseId> AcquireLease(NamespaceId ns, const Prefix& p, uint64_t ms) override {
    return in_.AcquireLease(ns, p, ms);
  }
  Status ReleaseLease(LeaseId l) override { return in_.ReleaseLease(l); }
  Result<std::vector<std::optional<Manifest>>> GetManifests(NamespaceId ns,
                                                            std::span<const Prefix> p) override {
    return in_.GetManifests(ns, p);
  }
  Result<uint64_t> ReadLayerInto(NamespaceId ns, const Prefix& p, uint32_t layer,
                                 std::span<uint8_t> dst) override {
    return in_.ReadLayerInto(ns, p, layer, dst);
  }
  Status Erase(NamespaceId ns, const Prefix& p) override { return in_.Erase(ns, p); }
  Status List(std::optional<NamespaceId> ns,
              const std::function<bool(const SnapshotInfo&)>& visit) override {
    return in_.List(ns, visit);
  }
  StoreStats Stats() override { return in_.Stats(); }
  Status Flush() override { return in_.Flush(); }
  Status RunMaintenance() override { return in_.RunMaintenance(); }
  Result<VerifyReport> Verify(const VerifyOptions& o) override { return in_.Verify(o); }
  Result<RepairReport> Repair(const VerifyReport& r) override { return in_.Repair(r); }
  Result<CompactReport> Compact(const CompactOptions& o) override { return in_.Compact(o); }
  uint64_t DiskBytes() override { return in_.DiskBytes(); }

 private:
  Store& in_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool gate_open_ = true;
  std::optional<uint32_t> held_layer_;
};

// The real reader with the ForwardingStore's faults in front of each read.
class ForwardingStore::FaultyReader final : public LayerReader {
 public:
  FaultyReader(ForwardingStore& s, NamespaceId ns, const Prefix& p, std::unique_ptr<LayerReader> in)
      : s_(s), ns_(ns), p_(p), in_(std::move(in)) {}
  const LayerEntry& entry() const override { return in_->entry(); }
  std::span<const LayerPiece> pieces() const override { return in_->pieces(); }
  size_t next() const override { return in_->next(); }
  Result<LayerPiece> ReadInto(std::span<uint8_t> dst) override {
    AUXSTORE_RETURN_IF_ERROR(BeforeRead());
    return in_->ReadInto(dst);
  }
  Result<View> Read() override {
    AUXSTORE_RETURN_IF_ERROR(BeforeRead());
    return in_->Read();
  }

 private:
  Status BeforeRead() {
    if (done()) return Status::Ok();  // the real reader says so
    const uint32_t layer = entry().layer;
    const LayerPiece& piece = pieces()[next()];
    ++s_.chunk_reads;
    if (piece.chunk > 0 || piece.array > 0) {
      std::unique_lock l(s_.mu_);
      s_.cv_.wait(l, [&] { return s_.held_layer_ != layer; });
    }
    Status st;
    if (s_.corrupt_chunk && piece.array == 0 &&
        *s_.corrupt_chunk == std::make_pair(layer, piece.chunk)) {
      st = Status::Corruption("injected chunk corruption");
    } else if (s_.wrong_hash_layer == layer && next() + 1 == pieces().size()) {
      st = Status::Corruption("injected layer digest mismatch");
    }
    if (!st.ok()) (void)s_.Quarantine(ns_, p_, st);
    return st;
  }

  ForwardingStore& s_;
  const NamespaceId ns_;
  const Prefix p_;
  std::unique_ptr<LayerReader> in_;
};

inline Result<std::unique_ptr<LayerReader>> ForwardingStore::OpenLayer(
    NamespaceId ns, const Prefix& p, const Manifest& m, uint32_t layer, PieceChecks checks) {
  AUXSTORE_ASSIGN_OR_RETURN(auto inner, in_.OpenLayer(ns, p, m, layer, checks));
  return std::unique_ptr<LayerReader>(
      std::make_unique<FaultyReader>(*this, ns, p, std::move(inner)));
}

}  // namespace auxstore::testing
