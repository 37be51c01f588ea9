// TieredStore: opening, puts (the upload), erase, and the calls that stay
// local. Lookups and restores: tiered_lookup.cc.
#include "store/shared/tiered_store.h"

#include <sys/resource.h>
#include <unistd.h>

#include <boost/asio/post.hpp>
#include <boost/asio/use_future.hpp>
#include <future>
#include <map>
#include <optional>

#include "store/shared/planned_pages.h"
#include "store/shared_open.h"

namespace auxstore::shared {

Result<std::unique_ptr<Store>> OpenTieredStore(const Options& options, const std::string& path) {
  return TieredStore::Open(options, path);
}

Result<std::unique_ptr<Store>> TieredStore::Open(const Options& options, const std::string& path) {
  if (options.shared_write == SharedWrite::kBehind && options.shared_queue_bytes == 0) {
    return Status::InvalidArgument("Options::shared_queue_bytes must be > 0 with kBehind");
  }
  // The pool first: a bad URI changes nothing on disk.
  auto tier = SharedTier::Open(options.shared);
  if (!tier.ok()) return tier.status().WithContext("Options::shared");
  Options local_options = options;
  local_options.shared.clear();
  AUXSTORE_ASSIGN_OR_RETURN(auto local, Store::Open(local_options, path));
  return std::unique_ptr<Store>(
      new TieredStore(options, path, std::move(local), std::move(tier).value()));
}

TieredStore::TieredStore(Options options, std::string path, std::unique_ptr<Store> local,
                         std::unique_ptr<SharedTier> tier)
    : options_(std::move(options)),
      path_(std::move(path)),
      local_(std::move(local)),
      tier_(std::move(tier)) {
  if (options_.shared_write == SharedWrite::kBehind) {
    queue_ = std::make_unique<UploadQueue>(*tier_, options_.shared_queue_bytes,
                                           options_.shared_shed_when_full);
  }
  // The local copies of restores are a cache: their writing yields the CPU
  // to the calls an engine waits for (Linux nice values are per thread).
  boost::asio::post(fill_thread_, [] {
    (void)::setpriority(PRIO_PROCESS, static_cast<id_t>(::gettid()), kFillNice);
  });
}

TieredStore::~TieredStore() {
  // The local copies queued behind lookups are written (a thread_pool's
  // destructor would drop the ones not started).
  fill_thread_.join();
  lease_thread_.join();  // the releases of the restores (and fills) before
  // Queued uploads get one more try each; what still fails is lost from the
  // pool (it stays in the local store), as Flush() would have reported.
  if (queue_) (void)queue_->Flush();
  queue_.reset();
}

Status TieredStore::PutSnapshot(NamespaceId ns, const Prefix& prefix, uint64_t token_count,
                                std::span<const LayerBlob> layers, const PutOptions& put) {
  if (queue_) {  // kBehind: queued once the local commit is done
    AUXSTORE_RETURN_IF_ERROR(Local().PutSnapshot(ns, prefix, token_count, layers, put));
    return Upload(ns, prefix, layers, put);
  }
  if (!options_.shared_local_copies) return PutToPool(ns, prefix, token_count, layers, put);
  // kThrough: the pages go to the pool while the local store commits the
  // snapshot (the two take about as long: a put costs the longer of them,
  // not their sum); the record naming them is committed after both. Layers
  // the local put would refuse send nothing ahead.
  std::optional<std::vector<ByteSpan>> planned;
  auto spec = Local().GetNamespace(ns);
  if (spec.ok() && !options_.read_only) {
    auto pages = PlanPages(*spec, token_count, layers, put, options_.chunk_bytes);
    if (pages.ok()) planned = std::move(pages).value();
  }
  std::future<Result<std::vector<rados::PageKey>>> ahead;
  if (planned && !planned->empty()) {
    ahead = boost::asio::post(upload_threads_, boost::asio::use_future([this, &planned] {
                                return tier_->PutPagesAhead(*planned);
                              }));
  }
  const Status local = Local().PutSnapshot(ns, prefix, token_count, layers, put);
  std::vector<rados::PageKey> stored;
  if (ahead.valid()) {  // waited for in every case: it reads the caller's layers
    auto sent = ahead.get();
    // The pool did not take the pages: the put failed as an upload fails.
    if (local.ok() && !sent.ok()) return sent.status();
    if (sent.ok()) stored = std::move(sent).value();
  }
  AUXSTORE_RETURN_IF_ERROR(local);
  return Upload(ns, prefix, layers, put, stored);
}

Status TieredStore::PutToPool(NamespaceId ns, const Prefix& prefix, uint64_t token_count,
                              std::span<const LayerBlob> layers, const PutOptions& put) {
  if (options_.read_only) return Status::Unavailable("store " + path_ + " is open read-only");
  SharedRecord r;
  r.ns = ns;
  r.prefix = prefix;
  AUXSTORE_ASSIGN_OR_RETURN(r.spec, Local().GetNamespace(ns));
  PutId put_id = 0;
  {
    std::lock_guard lock(put_id_mu_);
    while (put_id == 0) put_id = put_ids_();
  }
  AUXSTORE_ASSIGN_OR_RETURN(auto plan, PlanPut(r.spec, token_count, layers, put,
                                               options_.chunk_bytes, put_id, /*digests=*/true));
  r.manifest = std::move(plan.manifest);
  r.block_size = put.block_size;
  r.block_chain.assign(put.block_chain.begin(), put.block_chain.end());
  shared::Upload up{std::move(r), std::move(plan.layers)};
  return tier_->Put(up);
}

Status TieredStore::Upload(NamespaceId ns, const Prefix& prefix, std::span<const LayerBlob> layers,
                           const PutOptions& put, std::span<const rados::PageKey> ahead) {
  SharedRecord r;
  r.ns = ns;
  r.prefix = prefix;
  AUXSTORE_ASSIGN_OR_RETURN(r.spec, Local().GetNamespace(ns));
  const Prefix one[] = {prefix};
  AUXSTORE_ASSIGN_OR_RETURN(auto found, Local().GetManifests(ns, one));
  if (!found[0]) return Status::NotFound("snapshot " + prefix.ToHex() + " vanished before upload");
  r.manifest = std::move(*found[0]);
  r.block_size = put.block_size;
  r.block_chain.assign(put.block_chain.begin(), put.block_chain.end());
  // The caller's bytes, when they are what the local manifest committed
  // (a put of a prefix already stored keeps the stored snapshot's bytes).
  std::map<uint32_t, ByteSpan> given;
  for (const auto& l : layers) given[l.layer] = l.bytes;
  std::vector<ByteSpan> bytes;
  std::vector<std::vector<uint8_t>> reread;
  reread.reserve(r.manifest.layers.size());
  for (const LayerEntry& e : r.manifest.layers) {
    auto it = given.find(e.layer);
    if (it != given.end() && it->second.size() == e.bytes) {
      LayerHasher h(r.manifest, e);
      h.Update(it->second);
      if (h.Digest() == e.xxh3) {
        bytes.push_back(it->second);
        continue;
      }
    }
    AUXSTORE_ASSIGN_OR_RETURN(auto stored, Local().GetLayer(ns, prefix, e.layer));
    reread.push_back(std::move(stored));
    bytes.push_back(reread.back());
  }
  if (queue_) {
    queue_->Enqueue(std::move(r), bytes);
    return Status::Ok();
  }
  shared::Upload up{std::move(r), std::move(bytes)};
  return tier_->Put(up, ahead);
}

Status TieredStore::Erase(NamespaceId ns, const Prefix& prefix) {
  if (queue_) queue_->Drop(ns, prefix);
  // The pool first: while another node's lease holds the record, nothing
  // is erased anywhere (Busy). This node's own lease does not block it (a
  // restore's release still queued finds the record gone: NotFound, fine).
  AUXSTORE_RETURN_IF_ERROR(tier_->Erase(ns, prefix));
  return Local().Erase(ns, prefix);
}

StoreStats TieredStore::Stats() {
  StoreStats s = Local().Stats();
  TierCounters& c = tier_->counters();
  s.shared = true;
  s.shared_uploads = c.uploads;
  s.shared_pages_stored = c.pages_stored;
  s.shared_pages_present = c.pages_present;
  s.shared_upload_failures = c.upload_failures;
  s.shared_shed = c.shed;
  s.shared_queued = queue_ ? queue_->queued() : 0;
  s.shared_restores = c.restores;
  s.shared_corruptions = c.corruptions;
  return s;
}

Status TieredStore::Flush() {
  AUXSTORE_RETURN_IF_ERROR(Local().Flush());
  return queue_ ? queue_->Flush() : Status::Ok();
}

// ---- local only ------------------------------------------------------------

Result<NamespaceId> TieredStore::RegisterNamespace(const NamespaceSpec& spec) {
  return Local().RegisterNamespace(spec);
}
Result<NamespaceSpec> TieredStore::GetNamespace(NamespaceId ns) { return Local().GetNamespace(ns); }
Result<std::vector<std::pair<NamespaceId, NamespaceSpec>>> TieredStore::ListNamespaces() {
  return Local().ListNamespaces();
}
Status TieredStore::Quarantine(NamespaceId ns, const Prefix& prefix, const Status& why) {
  return Local().Quarantine(ns, prefix, why);
}
Status TieredStore::QuarantineIfUnchanged(NamespaceId ns, const Prefix& prefix,
                                          const Manifest& seen, const Status& why) {
  return Local().QuarantineIfUnchanged(ns, prefix, seen, why);
}
Status TieredStore::RunMaintenance() { return Local().RunMaintenance(); }
uint64_t TieredStore::DiskBytes() { return Local().DiskBytes(); }
Result<Store::ChainPages> TieredStore::CountLeadingPages(NamespaceId ns,
                                                         std::span<const Prefix> block_chain,
                                                         uint32_t block_size) {
  return Local().CountLeadingPages(ns, block_chain, block_size);
}

}  // namespace auxstore::shared
