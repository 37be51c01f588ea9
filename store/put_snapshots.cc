// Store::PutSnapshots for stores that do not override it: one PutSnapshot
// after another (a local put's cost is its own write; the shared tier's
// TieredStore overrides it to send every snapshot's pages in one window).
#include <string>

#include "auxstore/store.h"

namespace auxstore {

Status Store::PutSnapshots(std::span<SnapshotPut> puts) {
  Status first;
  for (size_t i = 0; i < puts.size(); ++i) {
    SnapshotPut& p = puts[i];
    p.status = PutSnapshot(p.ns, p.prefix, p.token_count, p.layers, p.options);
    if (first.ok() && !p.status.ok()) {
      first = p.status.WithContext("puts[" + std::to_string(i) + "]");
    }
  }
  return first;
}

}  // namespace auxstore
