// The value types of auxstore.Store's answers (Match, Manifest) and the
// registration of the store's plain types (Geometry, LayerInfo, Manifest,
// Match, StoreStats), of the Store class and of its calls, by topic.
#pragma once

#include <vector>

#include "common.h"

namespace auxpy {

struct Match {
  py::object index;  // into the candidates (longest_prefix) or the block hashes (for tokens)
  py::bytes prefix;
  py::object tokens;  // tokens covered (for tokens), or None
  uint64_t lease = 0;
};

struct Manifest {
  uint64_t token_count = 0;
  std::vector<auxstore_layer_info_t> layers;
};

using StoreClass = py::class_<Store, std::shared_ptr<Store>>;

void RegisterStoreTypes(py::module_& m);         // store_types.cc
void RegisterStoreWrites(StoreClass& store);     // store_write.cc: namespaces, puts, erase, flush
void RegisterStoreLookups(StoreClass& store);    // store_read.cc: lookups, manifests, exists
void RegisterStoreReads(StoreClass& store);      // store_read.cc: layers into caller buffers
void RegisterStoreLeases(StoreClass& store);     // store_bind.cc
void RegisterStoreConnector(StoreClass& store);  // store_connector.cc: batched exists, leases
void RegisterHostReads(py::module_& m,
                       StoreClass& store);  // host_reads.cc: registered host buffers
void RegisterFunctions(py::module_& m);     // functions.cc: prefix hashes, code names, ...

}  // namespace auxpy
