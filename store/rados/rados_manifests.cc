#include "store/rados/rados_manifests.h"

#include <xxhash.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <map>
#include <optional>
#include <set>

#include "store/rados/manifest_fields.h"
#include "store/rados/rados_aio.h"

namespace auxstore::rados {
namespace {

constexpr int kEraseAttempts = 16;

librados::bufferlist BufferOf(std::string_view s) {
  librados::bufferlist bl;
  bl.append(s.data(), s.size());
  return bl;
}

std::string HashOf(ByteSpan bytes) {
  XXH128_canonical_t canon;
  XXH128_canonicalFromHash(&canon, XXH3_128bits(bytes.data(), bytes.size()));
  return std::string(reinterpret_cast<const char*>(canon.digest), sizeof canon.digest);
}

Status CheckId(ByteSpan id) {
  if (id.empty() || id.size() > kMaxManifestIdBytes) {
    return Status::InvalidArgument("manifest id of " + std::to_string(id.size()) +
                                   " bytes (must be 1.." + std::to_string(kMaxManifestIdBytes) +
                                   ")");
  }
  return Status::Ok();
}

Status CheckHolder(std::string_view holder) {
  if (holder.empty() || holder.size() > 200) {
    return Status::InvalidArgument("lease holder name must be 1..200 bytes");
  }
  return Status::Ok();
}

}  // namespace

Status RadosManifests::TouchPages(const std::string& manifest, std::span<const PageKey> pages) {
  const std::string now = std::to_string(NowUnixMs());
  std::vector<librados::ObjectWriteOperation> ops(pages.size());
  std::optional<Status> first_error;
  RunWindowed(
      pages.size(), max_in_flight_,
      [&](size_t i, librados::AioCompletion* c) {
        ops[i].assert_exists();
        ops[i].setxattr(kRefXattr, BufferOf(now));
        return conn_.io().aio_operate(pages[i].ObjectName(), c, &ops[i]);
      },
      [&](size_t i, int rc, librados::AioCompletion*) {
        if (rc >= 0 || first_error) return;
        if (rc == -ENOENT) {
          first_error = Status::NotFound("RADOS pool '" + conn_.uri().pool + "': " + manifest +
                                         " names page " + pages[i].ObjectName() +
                                         ", which is not stored; nothing committed");
        } else {
          first_error = conn_.Check(rc, "touch page " + pages[i].ObjectName() + " for " + manifest);
        }
      });
  return first_error ? *first_error : Status::Ok();
}

Result<CommitOutcome> RadosManifests::Commit(ByteSpan id, ByteSpan bytes,
                                             std::span<const PageKey> pages) {
  AUXSTORE_RETURN_IF_ERROR(CheckId(id));
  const std::string object = ManifestObjectName(id);
  std::set<PageKey> unique(pages.begin(), pages.end());
  std::vector<PageKey> sorted(unique.begin(), unique.end());
  // The create must follow the touches within one op timeout (RadosReclaim's
  // grace is 3): a slow touch round is done again.
  const auto window = std::chrono::milliseconds(conn_.uri().op_timeout_ms);
  for (int round = 0;; ++round) {
    auto started = std::chrono::steady_clock::now();
    AUXSTORE_RETURN_IF_ERROR(TouchPages(object, sorted));
    if (std::chrono::steady_clock::now() - started <= window) break;
    if (round == 2) {
      return Status::Unavailable("RADOS pool '" + conn_.uri().pool + "': touching the " +
                                 std::to_string(sorted.size()) + " pages of " + object +
                                 " took over one op timeout three times; nothing committed");
    }
  }

  std::map<std::string, librados::bufferlist> names;
  for (const PageKey& k : sorted) names.emplace(k.ObjectName(), librados::bufferlist());
  librados::bufferlist data;
  data.append(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  librados::ObjectWriteOperation op;
  op.create(true);
  op.write_full(data);
  op.setxattr(kHashXattr, BufferOf(HashOf(bytes)));
  op.setxattr(kPagesXattr, BufferOf(std::to_string(sorted.size())));
  op.omap_set(names);
  int rc = conn_.io().operate(object, &op);
  if (rc >= 0) return CommitOutcome::kCommitted;
  if (rc == -EEXIST) return SameBytesOrBusy(object, bytes);
  return conn_.Check(rc, "commit " + object);
}

Result<CommitOutcome> RadosManifests::SameBytesOrBusy(const std::string& object, ByteSpan bytes) {
  librados::bufferlist have;
  int rc = conn_.io().getxattr(object, kHashXattr, have);
  if (rc < 0) return conn_.Check(rc, "read the hash of " + object + " (already committed)");
  if (have.to_str() == HashOf(bytes)) return CommitOutcome::kAlreadyCommitted;
  return Status::Busy("RADOS pool '" + conn_.uri().pool + "': " + object +
                      " was committed by another writer with different bytes; ours not written");
}

Result<std::vector<PageKey>> RadosManifests::PagesOf(const std::string& object) {
  std::vector<PageKey> pages;
  std::string after;
  bool more = true;
  while (more) {
    std::map<std::string, librados::bufferlist> vals;
    int rc = conn_.io().omap_get_vals2(object, after, std::string(PageKey::kPrefix), kOmapPage,
                                       &vals, &more);
    if (rc < 0) return conn_.Check(rc, "list the pages of " + object);
    for (const auto& [name, v] : vals) {
      auto key = PageKey::FromObjectName(name);
      if (!key) {
        return Status::Corruption("RADOS pool '" + conn_.uri().pool + "': " + object +
                                  " names a page '" + name + "' that is no page key");
      }
      pages.push_back(*key);
    }
    if (vals.empty()) break;
    after = vals.rbegin()->first;
  }
  return pages;
}

Result<StoredManifest> RadosManifests::Read(ByteSpan id) {
  AUXSTORE_RETURN_IF_ERROR(CheckId(id));
  const std::string object = ManifestObjectName(id);
  librados::bufferlist data;
  std::map<std::string, librados::bufferlist> xattrs;
  librados::ObjectReadOperation op;
  op.read(0, 0, &data, nullptr);
  op.getxattrs(&xattrs, nullptr);
  int rc = conn_.io().operate(object, &op, nullptr);
  if (rc < 0) return conn_.Check(rc, "read " + object);
  StoredManifest m;
  m.bytes.resize(data.length());
  data.begin().copy(m.bytes.size(), reinterpret_cast<char*>(m.bytes.data()));
  const std::string bad = "RADOS pool '" + conn_.uri().pool + "': " + object + ": ";
  auto hash = xattrs.find(kHashXattr);
  if (hash == xattrs.end() || hash->second.to_str() != HashOf(m.bytes)) {
    return Status::Corruption(bad + "its bytes do not match its XXH3-128; not returned");
  }
  AUXSTORE_ASSIGN_OR_RETURN(m.pages, PagesOf(object));
  auto count = xattrs.find(kPagesXattr);
  if (count == xattrs.end() ||
      ParseDecimal(count->second) != static_cast<int64_t>(m.pages.size())) {
    return Status::Corruption(bad + "names " + std::to_string(m.pages.size()) +
                              " pages, not the count it was committed with");
  }
  return m;
}

namespace {

// The write op that takes or renews `holder`'s lease until now + duration.
void LeaseOp(librados::ObjectWriteOperation& op, std::string_view holder,
             std::chrono::milliseconds duration) {
  std::map<std::string, librados::bufferlist> lease;
  lease.emplace(std::string(kLeasePrefix) + std::string(holder),
                BufferOf(std::to_string(NowUnixMs() + duration.count())));
  op.assert_exists();  // a lease never recreates an erased manifest
  op.omap_set(lease);
}

}  // namespace

Status RadosManifests::TakeLease(ByteSpan id, std::string_view holder,
                                 std::chrono::milliseconds duration) {
  return TakeLeases({&id, 1}, holder, duration)[0];
}

std::vector<Status> RadosManifests::TakeLeases(std::span<const ByteSpan> ids,
                                               std::string_view holder,
                                               std::chrono::milliseconds duration) {
  std::vector<Status> out(ids.size());
  if (Status h = CheckHolder(holder); !h.ok()) {
    std::fill(out.begin(), out.end(), h);
    return out;
  }
  std::vector<std::string> objects(ids.size());
  std::vector<librados::ObjectWriteOperation> ops(ids.size());
  RunWindowed(
      ids.size(), max_in_flight_,
      [&](size_t i, librados::AioCompletion* c) {
        out[i] = CheckId(ids[i]);
        if (!out[i].ok()) return -EINVAL;
        objects[i] = ManifestObjectName(ids[i]);
        LeaseOp(ops[i], holder, duration);
        return conn_.io().aio_operate(objects[i], c, &ops[i]);
      },
      [&](size_t i, int rc, librados::AioCompletion*) {
        if (!out[i].ok()) return;  // a bad id, never submitted
        out[i] = conn_.Check(rc, "lease " + objects[i] + " for " + std::string(holder));
      });
  return out;
}

Status RadosManifests::ReleaseLease(ByteSpan id, std::string_view holder) {
  AUXSTORE_RETURN_IF_ERROR(CheckId(id));
  AUXSTORE_RETURN_IF_ERROR(CheckHolder(holder));
  const std::string object = ManifestObjectName(id);
  librados::ObjectWriteOperation op;
  op.assert_exists();
  op.omap_rm_keys({std::string(kLeasePrefix) + std::string(holder)});
  return conn_.Check(conn_.io().operate(object, &op),
                     "release the lease of " + std::string(holder) + " on " + object);
}

Result<std::vector<Lease>> RadosManifests::Leases(ByteSpan id) {
  AUXSTORE_RETURN_IF_ERROR(CheckId(id));
  const std::string object = ManifestObjectName(id);
  std::map<std::string, librados::bufferlist> vals;
  bool more = false;
  int rc =
      conn_.io().omap_get_vals2(object, "", std::string(kLeasePrefix), kOmapPage, &vals, &more);
  if (rc < 0) return conn_.Check(rc, "read the leases of " + object);
  std::vector<Lease> out;
  for (const auto& [key, v] : vals) {
    auto ms = ParseDecimal(v);
    if (!ms) return Status::Corruption(object + ": lease '" + key + "' has no deadline");
    out.push_back({key.substr(kLeasePrefix.size()),
                   std::chrono::system_clock::time_point(std::chrono::milliseconds(*ms))});
  }
  return out;
}

Status RadosManifests::Erase(ByteSpan id) {
  AUXSTORE_RETURN_IF_ERROR(CheckId(id));
  const std::string object = ManifestObjectName(id);
  for (int attempt = 0; attempt < kEraseAttempts; ++attempt) {
    // The leases and the version they were read at, in one read op.
    std::map<std::string, librados::bufferlist> leases;
    bool more = false;
    librados::ObjectReadOperation read;
    read.omap_get_vals2("", std::string(kLeasePrefix), kOmapPage, &leases, &more, nullptr);
    librados::AioCompletion* c = librados::Rados::aio_create_completion();
    int rc = conn_.io().aio_operate(object, c, &read, nullptr);
    if (rc >= 0) {
      c->wait_for_complete();
      rc = c->get_return_value();
    }
    uint64_t version = c->get_version64();
    c->release();
    if (rc < 0) return conn_.Check(rc, "read the leases of " + object + " to erase it");
    const int64_t now = NowUnixMs();
    for (const auto& [key, v] : leases) {
      auto deadline = ParseDecimal(v);
      if (deadline && *deadline > now) {
        return Status::Busy("RADOS pool '" + conn_.uri().pool + "': " + object + " is leased by " +
                            key.substr(kLeasePrefix.size()) + " for another " +
                            std::to_string(*deadline - now) + " ms; not erased");
      }
    }
    librados::ObjectWriteOperation remove;
    remove.assert_version(version);  // refused if a lease was taken since the read
    remove.remove();
    rc = conn_.io().operate(object, &remove);
    if (rc >= 0) return Status::Ok();
    if (rc != -ERANGE && rc != -EOVERFLOW) return conn_.Check(rc, "erase " + object);
  }
  return Status::Busy("RADOS pool '" + conn_.uri().pool + "': " + object +
                      " kept changing while being erased; not erased");
}

}  // namespace auxstore::rados
