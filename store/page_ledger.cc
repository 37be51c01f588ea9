// PageLedger's home-independent parts: the pins a SharedChain holds.
#include "store/page_ledger.h"

#include <utility>

namespace auxstore::store_internal {

SharedChain& SharedChain::operator=(SharedChain&& o) noexcept {
  if (this == &o) return *this;
  Release();
  layers = std::move(o.layers);
  owners = std::move(o.owners);
  ledger_ = std::exchange(o.ledger_, nullptr);
  ns_ = o.ns_;
  o.owners.clear();
  return *this;
}

void SharedChain::Release() {
  if (ledger_ != nullptr) {
    for (const auto& [owner, bytes] : owners) ledger_->Unpin(ns_, owner);
  }
  ledger_ = nullptr;
}

}  // namespace auxstore::store_internal
