#include "store/rados/rados_reclaim.h"

#include <cerrno>
#include <exception>
#include <optional>
#include <set>
#include <system_error>

#include "store/rados/rados_aio.h"
#include "store/rados/rados_manifests.h"

namespace auxstore::rados {

Result<std::vector<std::string>> RadosReclaim::ListObjects() {
  std::vector<std::string> names;
  try {  // librados's object iterator reports errors by throwing
    for (auto it = conn_.io().nobjects_begin(); it != conn_.io().nobjects_end(); ++it) {
      names.push_back(it->get_oid());
    }
  } catch (const std::system_error& e) {
    int rc = e.code().value();
    return conn_.Check(rc > 0 ? -rc : rc, "list the namespace's objects");
  } catch (const std::exception& e) {
    return Status::IOError("RADOS pool '" + conn_.uri().pool +
                           "': list the namespace's objects: " + e.what());
  }
  return names;
}

Result<ReclaimListing> RadosReclaim::ListReclaimable(std::chrono::seconds grace) {
  const auto min_grace = std::chrono::milliseconds(3ull * conn_.uri().op_timeout_ms);
  if (grace < min_grace) {
    return Status::InvalidArgument(
        "reclaim grace of " + std::to_string(grace.count()) + " s is shorter than 3 op timeouts (" +
        std::to_string(min_grace.count() / 1000) + " s): a commit in flight could lose a page");
  }
  AUXSTORE_ASSIGN_OR_RETURN(std::vector<std::string> objects, ListObjects());
  ReclaimListing out;
  std::vector<PageKey> pages;
  std::set<PageKey> named;
  RadosManifests manifests(conn_, max_in_flight_);
  for (const std::string& name : objects) {
    if (auto key = PageKey::FromObjectName(name)) {
      pages.push_back(*key);
    } else if (name.starts_with(kManifestPrefix)) {
      ++out.manifests;
      auto listed = manifests.PagesOf(name);
      if (listed.status().IsNotFound()) continue;  // erased since the listing
      if (!listed.ok()) return listed.status();
      named.insert(listed->begin(), listed->end());
    } else {
      out.foreign.push_back(name);
    }
  }
  out.pages = pages.size();
  std::vector<PageKey> unnamed;
  for (const PageKey& k : pages) {
    if (named.count(k)) {
      ++out.named;
    } else {
      unnamed.push_back(k);
    }
  }
  // Stat the unnamed ones: their version (for the guarded remove) and mtime.
  std::vector<librados::ObjectReadOperation> ops(unnamed.size());
  std::vector<struct timespec> mtimes(unnamed.size());
  std::vector<uint64_t> sizes(unnamed.size());
  std::optional<Status> first_error;
  const auto cutoff = std::chrono::system_clock::now() - grace;
  RunWindowed(
      unnamed.size(), max_in_flight_,
      [&](size_t i, librados::AioCompletion* c) {
        ops[i].stat2(&sizes[i], &mtimes[i], nullptr);
        return conn_.io().aio_operate(unnamed[i].ObjectName(), c, &ops[i], nullptr);
      },
      [&](size_t i, int rc, librados::AioCompletion* c) {
        if (rc == -ENOENT) return;  // removed since the listing
        if (rc < 0) {
          if (!first_error) first_error = conn_.Check(rc, "stat " + unnamed[i].ObjectName());
          return;
        }
        auto mtime = std::chrono::system_clock::time_point(
            std::chrono::duration_cast<std::chrono::system_clock::duration>(
                std::chrono::seconds(mtimes[i].tv_sec) +
                std::chrono::nanoseconds(mtimes[i].tv_nsec)));
        if (mtime > cutoff) {
          ++out.too_young;
        } else {
          out.reclaimable.push_back({unnamed[i], c->get_version64(), mtime, sizes[i]});
        }
      });
  if (first_error) return *first_error;
  return out;
}

Result<size_t> RadosReclaim::Reclaim(std::span<const UnnamedPage> pages, uint64_t* bytes_freed) {
  std::vector<librados::ObjectWriteOperation> ops(pages.size());
  std::optional<Status> first_error;
  size_t removed = 0;
  RunWindowed(
      pages.size(), max_in_flight_,
      [&](size_t i, librados::AioCompletion* c) {
        ops[i].assert_version(pages[i].version);
        ops[i].remove();
        return conn_.io().aio_operate(pages[i].key.ObjectName(), c, &ops[i]);
      },
      [&](size_t i, int rc, librados::AioCompletion*) {
        if (rc >= 0) {
          ++removed;
          if (bytes_freed) *bytes_freed += pages[i].bytes;
        } else if (rc != -ERANGE && rc != -EOVERFLOW && rc != -ENOENT && !first_error) {
          // ERANGE/EOVERFLOW: touched by a commit since the listing; ENOENT: gone
          first_error = conn_.Check(rc, "remove page " + pages[i].key.ObjectName());
        }
      });
  if (first_error) return *first_error;
  return removed;
}

}  // namespace auxstore::rados
