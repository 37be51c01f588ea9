// TieredStore: a Store whose Options::shared names a RADOS pool
// (docs/shared-tier.md). The local DbStore (the directory) stays in front
// and serves every read; the pool is where any process on any node finds
// what another stored:
//   - PutSnapshot commits locally and uploads (SharedWrite::kThrough: before
//     it returns, the pages sent while the local commit runs and the record
//     committed after both; kBehind: queued after the local commit,
//     UploadQueue);
//   - a lookup that misses locally asks the pool for its candidates in one
//     batched round, restores what it finds (every byte checked) into the
//     local store, and answers from there, so every local read path,
//     pipeline included, serves restored snapshots unchanged. A
//     LongestPrefix restore answers once the pages are read and checked and
//     writes the local copy behind (tiered_fills.cc): until it is written,
//     ReadLayerInto, ReadLayersInto and GetLayer copy from the checked
//     layers, and every other call waits for the fills before it (Local());
//   - ReadLayersInto and ReadSnapshotsInto of snapshots only the pool holds
//     read their pages straight into the caller's memory, checked there
//     (tiered_reads_into.cc), a snapshot read whole copied behind;
//   - with Options::shared_local_copies off, the lookups answer from the
//     pool's records and the byte reads come from the pool each time; only
//     the calls that work on a local copy write one;
//   - Erase removes the pool's record too (Busy while another node's lease
//     holds it); leases a lookup takes are also taken in the pool;
//   - List visits the local snapshots and the pool's, merged in key order
//     (tiered_list.cc).
// When the pool does not answer: a lookup answers from the local store
// when that found something, else Unavailable; puts (kThrough), erase and
// Flush return Unavailable.
#pragma once

#include <atomic>
#include <boost/asio/thread_pool.hpp>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <utility>
#include <vector>

#include "auxstore/store.h"
#include "store/shared/shared_tier.h"
#include "store/shared/upload_queue.h"

namespace auxstore::shared {

class TieredStore final : public Store {
 public:
  static Result<std::unique_ptr<Store>> Open(const Options& options, const std::string& path);
  ~TieredStore() override;

  Result<NamespaceId> RegisterNamespace(const NamespaceSpec& spec) override;
  Result<NamespaceSpec> GetNamespace(NamespaceId ns) override;
  Result<std::vector<std::pair<NamespaceId, NamespaceSpec>>> ListNamespaces() override;
  Status PutSnapshot(NamespaceId ns, const Prefix& prefix, uint64_t token_count,
                     std::span<const LayerBlob> layers, const PutOptions& put) override;
  Status PutSnapshots(std::span<SnapshotPut> puts) override;
  Result<Manifest> GetManifest(NamespaceId ns, const Prefix& prefix) override;
  Status ReadLayer(NamespaceId ns, const Prefix& prefix, uint32_t layer,
                   const ChunkSink& sink) override;
  Result<std::vector<uint8_t>> GetLayer(NamespaceId ns, const Prefix& prefix,
                                        uint32_t layer) override;
  Result<std::unique_ptr<LayerReader>> OpenLayer(NamespaceId ns, const Prefix& prefix,
                                                 const Manifest& manifest, uint32_t layer,
                                                 PieceChecks checks) override;
  Status Quarantine(NamespaceId ns, const Prefix& prefix, const Status& why) override;
  Status QuarantineIfUnchanged(NamespaceId ns, const Prefix& prefix, const Manifest& seen,
                               const Status& why) override;
  Result<std::optional<size_t>> LongestPrefix(NamespaceId ns,
                                              std::span<const Prefix> candidates) override;
  Result<std::optional<PrefixMatch>> FindLongestPrefix(NamespaceId ns,
                                                       std::span<const Prefix> candidates,
                                                       const LookupOptions& options) override;
  Result<std::optional<TokenMatch>> LongestPrefixForTokens(NamespaceId ns,
                                                           std::span<const uint32_t> tokens,
                                                           uint32_t block_size, uint64_t salt,
                                                           const LookupOptions& options) override;
  Result<LeaseId> AcquireLease(NamespaceId ns, const Prefix& prefix, uint64_t lease_ms) override;
  Status ReleaseLease(LeaseId lease) override;
  Result<std::vector<std::optional<Manifest>>> GetManifests(
      NamespaceId ns, std::span<const Prefix> prefixes) override;
  Result<uint64_t> ReadLayerInto(NamespaceId ns, const Prefix& prefix, uint32_t layer,
                                 std::span<uint8_t> dst) override;
  Status ReadLayersInto(NamespaceId ns, const Prefix& prefix, std::span<LayerInto> layers) override;
  void ReadSnapshotsInto(std::span<SnapshotInto> snapshots) override;
  Status Erase(NamespaceId ns, const Prefix& prefix) override;
  Status List(std::optional<NamespaceId> ns,
              const std::function<bool(const SnapshotInfo&)>& visit) override;
  StoreStats Stats() override;
  Status Flush() override;
  Status RunMaintenance() override;
  Result<VerifyReport> Verify(const VerifyOptions& options) override;
  Result<RepairReport> Repair(const VerifyReport& report) override;
  Result<CompactReport> Compact(const CompactOptions& options) override;
  uint64_t DiskBytes() override;
  Result<size_t> CountLeadingStored(NamespaceId ns, std::span<const Prefix> prefixes) override;
  Result<ChainPages> CountLeadingPages(NamespaceId ns, std::span<const Prefix> block_chain,
                                       uint32_t block_size) override;
  Result<BatchLeases> LookupAndLease(NamespaceId ns, std::span<const Prefix> prefixes,
                                     uint64_t lease_ms) override;
  Result<LayerRows> ReadLayerRows(NamespaceId ns, const Prefix& prefix, uint32_t layer,
                                  uint64_t first_row, uint64_t last_row,
                                  std::span<uint8_t> dst) override;

 private:
  TieredStore(Options options, std::string path, std::unique_ptr<Store> local,
              std::unique_ptr<SharedTier> tier);

  // A kThrough put with Options::shared_local_copies off: the manifest
  // planned from the layers (PlanPut, the checks of a local put), the pages
  // and the record committed to the pool, nothing written locally.
  Status PutToPool(NamespaceId ns, const Prefix& prefix, uint64_t token_count,
                   std::span<const LayerBlob> layers, const PutOptions& put);
  // The upload PutToPool commits: the record with its planned manifest (a
  // put id of its own) and the layers' bytes; the local put's error for
  // layers it refuses, NotFound for a namespace not registered here.
  Result<shared::Upload> PlanForPool(NamespaceId ns, const Prefix& prefix, uint64_t token_count,
                                     std::span<const LayerBlob> layers, const PutOptions& put);

  // The upload of a put: the local manifest and the bytes matching it
  // (`ahead`: pages already in the pool, SharedTier::PutPagesAhead).
  Status Upload(NamespaceId ns, const Prefix& prefix, std::span<const LayerBlob> layers,
                const PutOptions& put, std::span<const rados::PageKey> ahead = {});
  // Reads a record's layers from the pool, every byte checked (leased in the
  // pool meanwhile).
  Result<std::vector<LayerBuffer>> Fetch(const SharedRecord& r);
  // Fetch of each records[i] (all of namespace ns, as ReadRecords(ns) gives
  // them): the leases in one round beside the pages of all in one window.
  std::vector<Result<std::vector<LayerBuffer>>> FetchEach(
      NamespaceId ns, std::span<const SharedRecord* const> records);
  // Reads records[j] (all of namespace ns) under pool leases: `read(which,
  // on_damage)` reads records[which[i]] and returns each one's status. It
  // runs beside the leases being taken (kReport), then again under them for
  // the records it found damaged (kQuarantine): a read before its lease
  // held may have met an erase and a reclaim rather than damage. Returns
  // each lease's status (not OK: that record's outcome is this error); the
  // leases taken are released behind.
  using LeasedRead =
      std::function<std::vector<Status>(std::span<const size_t> which, SharedTier::OnDamage)>;
  std::vector<Status> ReadUnderLeases(NamespaceId ns, std::span<const SharedRecord* const> records,
                                      const LeasedRead& read);
  // ---- reads straight from the pool (tiered_reads_into.cc) ----
  // The snapshots (all of namespace ns, missing from the local store and
  // with no pending fill) read from the pool into their layers' `dst`:
  // the records in one round, the pages of all in one window, checked in
  // place. A snapshot read whole is copied and its local copy queued behind.
  void ReadFromPool(NamespaceId ns, std::span<SnapshotInto* const> snapshots);
  // Corruption unless the record's namespace spec fingerprints to its
  // namespace id: a record no read or lookup may use.
  Status SpecCheck(const SharedRecord& r) const;
  // A batch restore fetches snapshots in groups of about this many bytes.
  static constexpr uint64_t kFetchGroupBytes = 64ull << 20;
  // Writes fetched layers into the local store as the record's snapshot.
  Status Fill(const SharedRecord& r, const std::vector<LayerBuffer>& layers);

  // ---- fills behind a lookup (tiered_fills.cc) ----
  // A restored snapshot whose local copy fill_thread_ is writing; its
  // layers (checked) serve byte reads meanwhile.
  struct PendingFill {
    SharedRecord record;
    std::vector<LayerBuffer> layers;  // record.manifest.layers' order
    uint64_t bytes = 0;
  };
  using FillKey = std::pair<NamespaceId, Prefix>;
  // Queues the local copy of `r` on fill_thread_ (waiting while more than
  // kMaxPendingFillBytes are queued; with `wait` false, writing none then)
  // and serves its layers until written.
  void FillBehind(const SharedRecord& r, std::vector<LayerBuffer> layers, bool wait = true);
  // The bytes of copies that would be queued now without waiting.
  uint64_t FillRoom();
  // Queues on fill_thread_ the restore of (ns, prefix) from the pool into
  // the local store (the record read again, the pages fetched, the copy
  // written), unless it is local or queued already by then, or more than
  // kMaxPendingFillBytes of such restores are queued: the local copy of a
  // snapshot a read into memory took in part (or whole, with no room to
  // copy it then). Reads the pool a second time; holds no bytes queued.
  void RestoreBehind(NamespaceId ns, const Prefix& prefix, const Manifest& manifest);
  // The local store, once every fill queued before this call is written:
  // what every call but the byte reads goes through.
  Store& Local();
  // The pending fill of (ns, prefix), if any.
  std::shared_ptr<const PendingFill> PendingOf(NamespaceId ns, const Prefix& prefix);
  // The leading run of prefixes stored locally or with a pending fill.
  Result<size_t> CountLeadingHere(NamespaceId ns, std::span<const Prefix> prefixes);
  // The longest candidates[i], i >= from, with a pending fill.
  std::optional<size_t> LongestPending(NamespaceId ns, std::span<const Prefix> candidates,
                                       size_t from);
  // Layer `layer` of a pending fill: NotFound when the snapshot lacks it.
  static Result<std::span<const uint8_t>> PendingLayer(const PendingFill& p, uint32_t layer);
  // Layer `layer` of a pending fill into dst, as ReadLayerInto reads it.
  static Result<uint64_t> CopyPending(const PendingFill& p, uint32_t layer, std::span<uint8_t> dst);
  // Every layer of `layers` copied so (ReadLayersInto's outcomes).
  static Status CopyPendingLayers(const PendingFill& p, std::span<LayerInto> layers);
  static constexpr uint64_t kMaxPendingFillBytes = 256ull << 20;
  // The fill thread's nice value: above the engine's threads.
  static constexpr int kFillNice = 10;
  // Which of prefixes[from..] the pool holds (one batched round) restored:
  // kLongest — the longest it holds (trying shorter ones when it fails);
  // kLeading — the leading run from `from`; kAll — each it holds. With
  // kLeading and kAll, snapshots are fetched in groups of kFetchGroupBytes,
  // the next group while the one before is filled (on fill_thread_).
  enum class Want { kLongest, kLeading, kAll };
  // With kLongest, and kLeading on a store that can write, the local copies
  // are written behind (FillBehind): *restored says which prefixes[i] was
  // restored (kLongest) or where the restored run ends (kLeading). With
  // kAll every fill is done when the call returns.
  Status RestoreFromPool(NamespaceId ns, std::span<const Prefix> prefixes, size_t from, Want want,
                         std::optional<size_t>* restored = nullptr);
  // The lookups, restoring what the pool holds (`restore`; what the calls
  // that lease or read the local store after them need) or answering from
  // the pool's records alone (Options::shared_local_copies off).
  Result<std::optional<size_t>> LongestPrefixOf(NamespaceId ns, std::span<const Prefix> candidates,
                                                bool restore);
  Result<size_t> CountLeadingOf(NamespaceId ns, std::span<const Prefix> prefixes, bool restore);
  // The warning of a restored snapshot whose local copy was not written.
  void WarnNotFilled(const SharedRecord& r, const Status& why);
  // What RestoreIfMissing did. `local`: the snapshot is in the local store
  // now. `unfilled`: the pool's snapshot, read and checked, whose local copy
  // was not written (a full disk, a store that stopped writing, a read-only
  // store, Options::shared_local_copies off: `why`); the byte reads serve
  // it from memory.
  struct Restored {
    bool local = false;
    std::shared_ptr<const PendingFill> unfilled;
    Status why;
  };
  // Restores (ns, prefix) when the local store lacks it: its local copy
  // written when Options::shared_local_copies or `need_local` says so.
  Result<Restored> RestoreIfMissing(NamespaceId ns, const Prefix& prefix, bool need_local);
  // Runs `read`; when it is NotFound and the pool restores the snapshot,
  // again, or `unfilled(restored)` when the pool's snapshot was not written
  // locally (a byte read, unless `need_local`).
  template <typename F, typename G>
  auto ReadThrough(NamespaceId ns, const Prefix& prefix, F&& read, G&& unfilled,
                   bool need_local = false) -> decltype(read());
  // ReadThrough whose read needs the local copy: when it cannot be written,
  // the reason.
  template <typename F>
  auto ReadThrough(NamespaceId ns, const Prefix& prefix, F&& read) -> decltype(read());
  void LeaseInPool(LeaseId lease, NamespaceId ns, const Prefix& prefix, uint64_t lease_ms);
  // This node's lease on a pool record, taken once a release of the same
  // record queued behind (ReleasePoolLeaseBehind) is done: both name this
  // node as holder, so a release running after the take would drop it.
  Status TakePoolLease(NamespaceId ns, const Prefix& prefix, uint64_t lease_ms);
  // Releases this node's lease on lease_thread_, without waiting.
  void ReleasePoolLeaseBehind(NamespaceId ns, const Prefix& prefix);

  Options options_;
  std::string path_;
  std::unique_ptr<Store> local_;
  std::unique_ptr<SharedTier> tier_;
  std::unique_ptr<UploadQueue> queue_;  // kBehind only
  std::mutex pending_mu_;
  std::condition_variable pending_cv_;  // a fill written
  std::map<FillKey, std::shared_ptr<const PendingFill>> pending_;
  uint64_t pending_bytes_ = 0;
  std::set<FillKey> restoring_;  // RestoreBehind's queued
  uint64_t restoring_bytes_ = 0;
  std::atomic<uint64_t> fills_behind_{0};  // queued and not yet written
  std::mutex releasing_mu_;
  std::condition_variable releasing_cv_;  // a release behind done
  std::multiset<FillKey> releasing_;      // releases behind not yet done
  std::mutex leases_mu_;
  std::map<LeaseId, std::pair<NamespaceId, Prefix>> leases_;  // leases also held in the pool
  std::mutex put_id_mu_;
  std::mt19937_64 put_ids_{[] {  // PutToPool's manifests' ids
    std::random_device rd;
    return (uint64_t{rd()} << 32) ^ rd();
  }()};
  // fill_thread_: the local copies of restores (written behind a lookup or
  // a CountLeadingStored and joined by the destructor; the other batches'
  // waited for by their call).
  // upload_threads_: the page uploads of kThrough puts beside their local
  // commits. lease_thread_: the pool leases of restores, taken beside their
  // page reads and released without the restore waiting, in order; the
  // destructor waits for them.
  // Last, so that they are joined before the stores go.
  boost::asio::thread_pool fill_thread_{1};
  boost::asio::thread_pool upload_threads_{2};
  boost::asio::thread_pool lease_thread_{1};
};

}  // namespace auxstore::shared
