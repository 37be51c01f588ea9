// auxstore.Store's registration: the class, its construction and handle
// calls, stats and leases; the other calls by topic (store_types.h).
#include <pybind11/stl.h>

#include <algorithm>
#include <cstring>
#include <optional>

#include "common.h"
#include "store_types.h"

namespace auxpy {

void RegisterStoreLeases(StoreClass& store) {
  store.def(
      "lease_acquire",
      [](Store& s, IntArg ns_arg, py::handle prefix, IntArg lease_ms_arg) {
        const uint64_t ns = ToU64(ns_arg, "ns");
        const uint64_t lease_ms = ToU64(lease_ms_arg, "lease_ms");
        const Prefix p = ToPrefix(prefix);
        uint64_t lease = 0;
        py::gil_scoped_release release;
        s.With([&](auxstore_t* db) {
          Check([&](char** e) {
            return auxstore_lease_acquire(db, ns, p.data(), lease_ms, &lease, e);
          });
        });
        return lease;
      },
      py::arg("ns"), py::arg("prefix"), py::arg("lease_ms"),
      "Pins a snapshot against eviction and expiry for up to lease_ms; returns the lease id.");

  store.def(
      "lease_release",
      [](Store& s, IntArg lease_arg) {
        const uint64_t lease = ToU64(lease_arg, "lease");
        py::gil_scoped_release release;
        s.With([&](auxstore_t* db) {
          Check([&](char** e) { return auxstore_lease_release(db, lease, e); });
        });
      },
      py::arg("lease"), "Releases a lease (NotFoundError when unknown, expired or released).");

  store.def(
      "acquire_leases",
      [](Store& s, IntArg ns_arg, py::handle prefixes, IntArg lease_ms_arg) {
        const uint64_t ns = ToU64(ns_arg, "ns");
        const uint64_t lease_ms = ToU64(lease_ms_arg, "lease_ms");
        const std::vector<Prefix> ps = ToPrefixes(prefixes);
        std::vector<uint64_t> leases(ps.size(), 0);
        py::gil_scoped_release release;
        s.With([&](auxstore_t* db) {
          // One batched lookup + lease; all or none.
          size_t leading = 0;
          Check([&](char** e) {
            return auxstore_lookup_leased(
                db, ns, ps.empty() ? nullptr : reinterpret_cast<const uint8_t(*)[16]>(ps.data()),
                ps.size(), lease_ms, leases.empty() ? nullptr : leases.data(), &leading, e);
          });
          if (leading < ps.size()) {
            (void)auxstore_lease_release_many(db, leases.data(), leases.size(), nullptr, nullptr);
            throw Error(AUXSTORE_NOT_FOUND,
                        "acquire_leases: prefixes[" + std::to_string(leading) + "] is not stored");
          }
        });
        return leases;
      },
      py::arg("ns"), py::arg("prefixes"), py::arg("lease_ms"),
      "Leases every prefix (vLLM's prepare_load): all or none (on an error the ones taken are "
      "released and it raises).");
}

void RegisterStore(py::module_& m) {
  RegisterStoreTypes(m);
  StoreClass store(
      m, "Store",
      "An open auxstore store (auxstore_open). A context manager: close() on exit. Every call "
      "releases the GIL; any number of threads may use one Store at once.");
  store
      .def(py::init([](py::object path, IntArg capacity_bytes, IntArg ttl_seconds,
                       py::object chunk_bytes, py::object durability, bool read_only,
                       bool create_if_missing, py::object log, IntArg log_level,
                       const std::string& shared, const std::string& shared_write,
                       IntArg read_lanes, bool shared_local_copies) {
             return std::make_shared<Store>(
                 std::move(path), ToU64(capacity_bytes, "capacity_bytes"),
                 ToU64(ttl_seconds, "ttl_seconds"), std::move(chunk_bytes), std::move(durability),
                 read_only, create_if_missing, std::move(log), ToInt(log_level.obj, "log_level"),
                 shared, shared_write, ToU32(read_lanes.obj, "read_lanes"), shared_local_copies);
           }),
           py::arg("path"), py::kw_only(), py::arg("capacity_bytes") = 0,
           py::arg("ttl_seconds") = 0, py::arg("chunk_bytes") = py::none(),
           py::arg("durability") = "sync", py::arg("read_only") = false,
           py::arg("create_if_missing") = true, py::arg("log") = py::none(),
           py::arg("log_level") = static_cast<int>(AUXSTORE_LOG_WARN), py::arg("shared") = "",
           py::arg("shared_write") = "through", py::arg("read_lanes") = 0,
           py::arg("shared_local_copies") = true,
           "Opens (creating when allowed) the store at `path`. `log`: a callable "
           "(level, source, message) or a logging.Logger receiving auxstore's and RocksDB's "
           "log records at `log_level` and above, from any thread. `shared`: a "
           "rados://POOL?conf=PATH&namespace=NS URI, the shared tier every process naming it "
           "restores from (docs/shared-tier.md; '' = none); `shared_write`: 'through' (a put "
           "returns once the pool has it) or 'behind' (once committed locally, uploaded "
           "behind). `read_lanes`: threads copying one read's layers at once (when the layers "
           "besides the largest hold a MiB or more; 0 = one per two cores, 2 to 8; 1 = in "
           "turn; at most 64). `shared_local_copies`: whether what is read from the pool is also "
           "written into the local directory, behind the call (False: lookups answer from the "
           "pool's records, reads go straight from the pool into memory each time, and "
           "'through' puts go to the pool alone).")
      .def("close", &Store::Close, "Closes the store (its pipelines first). Idempotent.")
      .def_property_readonly("closed", &Store::closed,
                             "True once closed (close(), a `with` block, or its parent closed).")
      .def_property_readonly("path", &Store::path, "The directory it was opened at.")
      .def_property_readonly("chunk_bytes", &Store::chunk_bytes,
                             "The chunk size it was opened with.")
      .def_property_readonly("read_only", &Store::read_only, "True when opened read-only.")
      .def("__enter__", [](std::shared_ptr<Store> s) { return s; })
      .def("__exit__", [](Store& s, py::args) { s.Close(); })
      .def("__repr__", [](Store& s) {
        return "<auxstore.Store " + py::repr(py::str(s.path())).cast<std::string>() +
               (s.closed() ? " closed>" : ">");
      });

  store.def(
      "stats",
      [](Store& s) {
        auxstore_stats_t st{};
        py::gil_scoped_release release;
        s.With(
            [&](auxstore_t* db) { Check([&](char** e) { return auxstore_stats(db, &st, e); }); });
        return st;
      },
      "The store's counters (a StoreStats).");
  store.def(
      "shared_stats",
      [](Store& s) {
        auxstore_shared_stats_t st{};
        st.struct_size = sizeof st;
        {
          py::gil_scoped_release release;
          s.With([&](auxstore_t* db) {
            Check([&](char** e) { return auxstore_shared_stats(db, &st, e); });
          });
        }
        py::dict d;
        d["shared"] = st.shared != 0;
        d["uploads"] = st.uploads;
        d["pages_stored"] = st.pages_stored;
        d["pages_present"] = st.pages_present;
        d["upload_failures"] = st.upload_failures;
        d["shed"] = st.shed;
        d["queued"] = st.queued;
        d["restores"] = st.restores;
        d["corruptions"] = st.corruptions;
        return d;
      },
      "The shared tier's counters by this handle, a dict (shared False and all 0 without "
      "one): uploads, pages_stored, pages_present, upload_failures, shed, queued, restores, "
      "corruptions.");

  RegisterStoreWrites(store);
  RegisterStoreLookups(store);
  RegisterStoreReads(store);
  RegisterStoreLeases(store);
  RegisterStoreConnector(store);
  RegisterHostReads(m, store);
  RegisterFunctions(m);
}

}  // namespace auxpy
