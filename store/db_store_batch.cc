// The connector's batched calls (issue 24, docs/connectors.md): the
// consecutive-hit count over many prefixes and over a block chain's pages,
// and a lookup that leases every hit, each one batched RocksDB lookup. The
// Store base class has plain versions over GetManifests and AcquireLease
// for stores that do not override them.
#include <algorithm>
#include <string>
#include <vector>

#include "store/bytes.h"
#include "store/db_store.h"
#include "store/keys.h"

namespace auxstore {

namespace {

size_t LeadingFound(const std::vector<std::optional<Manifest>>& found) {
  return static_cast<size_t>(
      std::find_if(found.begin(), found.end(), [](const auto& m) { return !m.has_value(); }) -
      found.begin());
}

}  // namespace

Result<size_t> Store::CountLeadingStored(NamespaceId ns, std::span<const Prefix> prefixes) {
  AUXSTORE_ASSIGN_OR_RETURN(auto found, GetManifests(ns, prefixes));
  return LeadingFound(found);
}

Result<Store::ChainPages> Store::CountLeadingPages(NamespaceId, std::span<const Prefix>, uint32_t) {
  return Status::NotSupported("this store keeps no page index to count a chain's pages in");
}

Result<Store::BatchLeases> Store::LookupAndLease(NamespaceId ns, std::span<const Prefix> prefixes,
                                                 uint64_t lease_ms) {
  if (lease_ms == 0) return Status::InvalidArgument("a lease of 0 ms");
  AUXSTORE_ASSIGN_OR_RETURN(auto found, GetManifests(ns, prefixes));
  BatchLeases out;
  out.leases.assign(prefixes.size(), 0);
  bool leading = true;
  for (size_t i = 0; i < prefixes.size(); ++i) {
    if (found[i]) {
      auto lease = AcquireLease(ns, prefixes[i], lease_ms);
      if (lease.ok()) {
        out.leases[i] = *lease;
      } else if (!lease.status().IsNotFound()) {  // NotFound: erased since the lookup
        for (LeaseId l : out.leases)
          if (l != 0) (void)ReleaseLease(l);
        return lease.status();
      }
    }
    leading = leading && out.leases[i] != 0;
    if (leading) ++out.leading;
  }
  return out;
}

namespace store_internal {

Result<size_t> DbStore::CountLeadingStored(NamespaceId ns, std::span<const Prefix> prefixes) {
  if (prefixes.empty()) return size_t{0};
  // The first alone: a connector's usual miss is a first-key miss, and one
  // lookup answers it without probing the other keys.
  AUXSTORE_ASSIGN_OR_RETURN(auto first, MultiGetManifests(ns, prefixes.first(1)));
  if (!first[0]) return size_t{0};
  AUXSTORE_ASSIGN_OR_RETURN(auto rest, MultiGetManifests(ns, prefixes.subspan(1)));
  return 1 + LeadingFound(rest);
}

Result<Store::ChainPages> DbStore::CountLeadingPages(NamespaceId ns,
                                                     std::span<const Prefix> block_chain,
                                                     uint32_t block_size) {
  if (block_size == 0) return Status::InvalidArgument("block_size is 0, must be > 0");
  AUXSTORE_ASSIGN_OR_RETURN(NamespaceSpec spec, NamespaceSpecFor(ns));
  ChainPages out;
  out.page_tokens = spec.page_tokens != 0 ? spec.page_tokens : block_size;
  if (out.page_tokens % block_size != 0) {
    return Status::InvalidArgument("the namespace's page of " + std::to_string(out.page_tokens) +
                                   " tokens is not a multiple of the block size " +
                                   std::to_string(block_size));
  }
  const size_t per_page = out.page_tokens / block_size;
  const size_t pages = block_chain.size() / per_page;
  // Page p is indexed under the chain hash of its last block, naming p.
  std::vector<Prefix> page_ends;
  page_ends.reserve(pages);
  for (size_t p = 0; p < pages; ++p) page_ends.push_back(block_chain[(p + 1) * per_page - 1]);
  AUXSTORE_ASSIGN_OR_RETURN(out.pages, ledger_.LeadingStoredPages(ns, out.page_tokens, page_ends));
  return out;
}

Result<Store::BatchLeases> DbStore::LookupAndLease(NamespaceId ns, std::span<const Prefix> prefixes,
                                                   uint64_t lease_ms) {
  if (lease_ms == 0) return Status::InvalidArgument("a lease of 0 ms");
  // Lease first, each under its key's lock (eviction and expiry take it too
  // and skip leased keys), then look up: a snapshot the lookup finds cannot
  // be evicted before its lease, and the leases of the ones it misses go.
  const int64_t now = NowUnixMs();
  const int64_t expires = now + static_cast<int64_t>(std::min<uint64_t>(lease_ms, INT32_MAX));
  BatchLeases out;
  out.leases.reserve(prefixes.size());
  for (const Prefix& p : prefixes) {
    const std::string skey = SnapshotKey(ns, p);
    KeyLock key_lock(this, skey);
    out.leases.push_back(index_.AddLease(skey, now, expires));
  }
  auto found = MultiGetManifests(ns, prefixes);
  if (!found.ok()) {
    for (LeaseId l : out.leases) (void)index_.RemoveLease(l, now);
    return found.error();
  }
  for (size_t i = 0; i < prefixes.size(); ++i) {
    if ((*found)[i]) {
      ++hits_;
      Touch(ns, prefixes[i]);
    } else {
      ++misses_;
      (void)index_.RemoveLease(out.leases[i], now);
      out.leases[i] = 0;
    }
  }
  out.leading = LeadingFound(*found);
  return out;
}

}  // namespace store_internal

}  // namespace auxstore
