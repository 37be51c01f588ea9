// TieredStore: opening, erase, and the calls that stay local. Puts:
// tiered_puts.cc; lookups and restores: tiered_lookup.cc.
#include "store/shared/tiered_store.h"

#include <sys/resource.h>
#include <unistd.h>

#include <boost/asio/post.hpp>

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
