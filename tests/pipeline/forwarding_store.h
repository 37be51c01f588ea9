// A Store that forwards to a real one, with injectable faults and a gate
// that holds writes, for pipeline tests.
#pragma once

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <optional>

#include "auxstore/store.h"

namespace auxstore::testing {

class ForwardingStore final : public Store {
 public:
  explicit ForwardingStore(Store& inner) : in_(inner) {}

  // ReadPieceInto of (layer, chunk of its first array) returns Corruption and, as the real
  // store does (store.h), quarantines the snapshot itself.
  std::optional<std::pair<uint32_t, uint32_t>> corrupt_chunk;
  // GetManifest reports a wrong whole-blob hash for this layer.
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
    auto m = in_.GetManifest(ns, p);
    if (m.ok() && wrong_hash_layer) {
      for (auto& l : m->layers)
        if (l.layer == *wrong_hash_layer) l.xxh3 ^= 1;
    }
    return m;
  }
  Status ReadLayer(NamespaceId ns, const Prefix& p, uint32_t layer,
                   const ChunkSink& sink) override {
    return in_.ReadLayer(ns, p, layer, sink);
  }
  Result<std::vector<uint8_t>> GetLayer(NamespaceId ns, const Prefix& p, uint32_t l) override {
    return in_.GetLayer(ns, p, l);
  }
  Status ReadPieceInto(NamespaceId ns, const Prefix& p, const Manifest& m, uint32_t layer,
                       const LayerPiece& piece, std::span<uint8_t> dst,
                       LayerHasher* layer_hash) override {
    ++chunk_reads;
    if (piece.chunk > 0 || piece.array > 0) {
      std::unique_lock l(mu_);
      cv_.wait(l, [&] { return held_layer_ != layer; });
    }
    if (corrupt_chunk && piece.array == 0 && *corrupt_chunk == std::make_pair(layer, piece.chunk)) {
      Status st = Status::Corruption("injected chunk corruption");
      (void)Quarantine(ns, p, st);
      return st;
    }
    return in_.ReadPieceInto(ns, p, m, layer, piece, dst, layer_hash);
  }
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

}  // namespace auxstore::testing
