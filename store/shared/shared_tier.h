// SharedTier: the store's side of the RADOS pool (store/rados): uploads a
// snapshot (its layers cut into content-addressed page objects, then its
// SharedRecord committed as the manifest, last and atomically), reads the
// records of many prefixes in one batched round, reads a record's layers
// back (every byte checked against its page key and the layer digest), and
// quarantines a record whose objects are damaged. Thread-safe.
//
// A librados client that saw every OSD unreachable does not always learn
// their new addresses when they come back (measured: its writes kept timing
// out for 30 s while a new client's went through): after any Unavailable the
// next call opens a fresh client (the old one is closed once no call uses it).
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "auxstore/store.h"
#include "store/rados/rados_connection.h"
#include "store/rados/rados_manifests.h"
#include "store/rados/rados_page_store.h"
#include "store/rados/rados_pool_check.h"
#include "store/shared/shared_record.h"

namespace auxstore::shared {

// What a put hands to the tier: the record without its segments, and the
// bytes of each layer (record.manifest.layers' order).
struct Upload {
  SharedRecord record;
  std::vector<ByteSpan> layers;
};

// One layer's bytes as read from the pool (not zeroed before: every byte
// is written by the read).
struct LayerBuffer {
  std::unique_ptr<uint8_t[]> data;
  uint64_t size = 0;
  std::span<const uint8_t> span() const { return {data.get(), size}; }
};

struct TierCounters {
  std::atomic<uint64_t> uploads{0}, pages_stored{0}, pages_present{0}, upload_failures{0}, shed{0},
      restores{0}, corruptions{0};
};

class SharedTier {
 public:
  static Result<std::unique_ptr<SharedTier>> Open(const std::string& uri);

  const std::string& pool() const { return uri_.pool; }
  std::chrono::milliseconds op_timeout() const {
    return std::chrono::milliseconds(uri_.op_timeout_ms);
  }
  TierCounters& counters() { return counters_; }

  // Stores the pages, then commits the record. OK also when another writer
  // committed this prefix first (same or other bytes: one wins, never a mix).
  // `ahead`: pages PutPagesAhead already stored, not sent again (unless the
  // commit finds one reclaimed meanwhile: then every page is put again).
  Status Put(Upload& up, std::span<const rados::PageKey> ahead = {});

  // Stores pages ahead of the record that will name them (a put's pages
  // while its local commit runs); their keys. Until a record names them
  // they are orphans: `compact` reclaims them after its grace period.
  Result<std::vector<rados::PageKey>> PutPagesAhead(std::span<const ByteSpan> pages);

  // The records of (ns, prefixes[i]), read in one batched round: nullopt
  // where the pool has none. A damaged record (bytes not matching their
  // hash, not decoding, or naming another key) is quarantined, counted and a
  // miss. Unavailable when the pool does not answer within the op timeout.
  Result<std::vector<std::optional<SharedRecord>>> ReadRecords(NamespaceId ns,
                                                               std::span<const Prefix> prefixes);

  // What a read that meets a damaged or missing page, or a layer digest that
  // differs, does besides returning Corruption: kQuarantine removes the
  // record (and a damaged page object) from the pool and counts it; kReport
  // changes nothing (a read made before the record's lease held, which may
  // have met an erase and a reclaim rather than damage).
  enum class OnDamage { kQuarantine, kReport };
  // Every layer's bytes of each records[i], the pages of all of them read in
  // one window straight into the layers' buffers (a batch restore keeps the
  // OSDs as busy as one large read would). Corruption when a page is damaged
  // or missing or a layer's digest differs: nothing unchecked is returned.
  std::vector<Result<std::vector<LayerBuffer>>> ReadLayersOfEach(
      std::span<const SharedRecord* const> records, OnDamage on_damage);

  // Layer `index` of a record's manifest.layers, read into `dst` (at least
  // the layer's size; its first bytes are written) and, when `copy` is not
  // empty (the layer's size), copied there too in the pass that checks its
  // digest.
  struct LayerDst {
    size_t index = 0;
    std::span<uint8_t> dst;
    std::span<uint8_t> copy;
  };
  // How a record's read went: OK, or the error met at wanted[failed_at]
  // (the layers before it were read and checked).
  struct LayersRead {
    Status status;
    size_t failed_at = 0;
  };
  // The wanted[k] layers of each records[k], the pages of all of them read
  // in one window straight into their destinations, each page checked
  // against its key and each layer against its digest there, checked in
  // wanted[k]'s order (so a read into the caller's memory is the one copy).
  std::vector<LayersRead> ReadLayersInto(std::span<const SharedRecord* const> records,
                                         std::span<const std::vector<LayerDst>> wanted,
                                         OnDamage on_damage);

  Status TakeLease(NamespaceId ns, const Prefix& prefix, uint64_t lease_ms);
  // TakeLease of each (ns, prefixes[i]) in one round.
  std::vector<Status> TakeLeases(NamespaceId ns, std::span<const Prefix> prefixes,
                                 uint64_t lease_ms);
  Status ReleaseLease(NamespaceId ns, const Prefix& prefix);
  // Removes the record: Busy while another node's lease holds it; OK when absent.
  Status Erase(NamespaceId ns, const Prefix& prefix);

  // Every record in the pool, optionally of one namespace only, read in
  // batches and checked as ReadRecords checks them (a damaged one is
  // counted, not quarantined: listing changes nothing), and the object
  // counts of the pool's namespace.
  struct Listing {
    std::vector<SharedRecord> records;  // in object-name order
    size_t damaged = 0;
    size_t page_objects = 0;
  };
  Result<Listing> ListRecords(std::optional<NamespaceId> ns);

  // The pool's own verify, repair and compact (store/rados/rados_pool_check.h).
  Result<rados::PoolVerifyReport> VerifyPool();
  Result<rados::PoolRepairReport> RepairPool();
  Result<rados::PoolCompactReport> CompactPool(std::chrono::seconds grace);

  // This handle's name on the leases it takes: host.pid.random.
  const std::string& holder() const { return holder_; }

 private:
  // Aio page reads and writes outstanding at once, per call.
  static constexpr size_t kPagesInFlight = 32;
  // One librados client and the page and manifest stores on it.
  struct Session {
    explicit Session(std::unique_ptr<rados::RadosConnection> c)
        : conn(std::move(c)), pages(*conn, kPagesInFlight), manifests(*conn, kPagesInFlight) {}
    std::unique_ptr<rados::RadosConnection> conn;
    rados::RadosPageStore pages;
    rados::RadosManifests manifests;
  };
  SharedTier(rados::RadosUri uri, std::unique_ptr<rados::RadosConnection> conn);
  // The session, a fresh one when the last call found the pool unreachable.
  Result<std::shared_ptr<Session>> Current();
  // `st`, noting an Unavailable for the next Current().
  Status Note(Status st);
  void QuarantineRecord(Session& s, NamespaceId ns, const Prefix& prefix);
  // r's wanted layers as read (their pages keys[i] gave read[i], in
  // wanted's order; digests[w]: whether wanted[w]'s digest matched, when
  // checked already), checked.
  LayersRead CheckRead(Session& ss, const SharedRecord& r, std::span<const LayerDst> wanted,
                       std::span<const rados::PageKey> keys, std::span<const Status> read,
                       std::span<const std::optional<bool>> digests, OnDamage on_damage);
  // Whether a layer's bytes in its destination match its digest (copied
  // to layer.copy on the way).
  static bool DigestMatches(const SharedRecord& r, const LayerDst& layer);

  rados::RadosUri uri_;
  std::mutex mu_;
  std::shared_ptr<Session> session_;
  bool stale_ = false;
  std::string holder_;
  TierCounters counters_;
};

}  // namespace auxstore::shared
