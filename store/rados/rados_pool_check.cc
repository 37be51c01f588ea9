#include "store/rados/rados_pool_check.h"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <exception>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <system_error>

#include "store/rados/manifest_fields.h"
#include "store/rados/rados_aio.h"
#include "store/rados/rados_manifests.h"

namespace auxstore::rados {
namespace {

// Pages read per RunWindowed round: bounds the ops and buffers held at once.
constexpr size_t kPageChunk = 4096;

std::string HashString(ByteSpan bytes) {
  PageKey k = PageKey::Of(bytes);  // the same XXH3-128, canonical, as the manifest's hash
  return std::string(reinterpret_cast<const char*>(k.hash.data()), k.hash.size());
}

std::optional<uint64_t> ParseCount(const librados::bufferlist& bl) {
  std::string s = bl.to_str();
  uint64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

bool Changed(int rc) { return rc == -ERANGE || rc == -EOVERFLOW; }  // assert_version refused

}  // namespace

std::string_view ManifestHealthName(ManifestHealth h) {
  switch (h) {
    case ManifestHealth::kOk:
      return "ok";
    case ManifestHealth::kCorrupt:
      return "corrupt";
    case ManifestHealth::kMissingPage:
      return "missing page";
  }
  return "?";
}

size_t PoolVerifyReport::Count(ManifestHealth h) const {
  return std::count_if(manifests.begin(), manifests.end(),
                       [h](const ManifestCheck& m) { return m.health == h; });
}

Result<std::vector<std::string>> ListNamespaceObjects(RadosConnection& conn) {
  std::vector<std::string> names;
  try {  // librados's object iterator reports errors by throwing
    for (auto it = conn.io().nobjects_begin(); it != conn.io().nobjects_end(); ++it) {
      names.push_back(it->get_oid());
    }
  } catch (const std::system_error& e) {
    int rc = e.code().value();
    return conn.Check(rc > 0 ? -rc : rc, "list the namespace's objects");
  } catch (const std::exception& e) {
    return Status::IOError("RADOS pool '" + conn.uri().pool +
                           "': list the namespace's objects: " + e.what());
  }
  std::sort(names.begin(), names.end());
  return names;
}

// One aio read op per manifest: its bytes, xattrs and (up to kOmapPage of)
// the pages it names. Fills report.manifests (health decided later for the
// pages) and named[i], the pages manifest i names.
Status RadosPoolCheck::ReadManifests(const std::vector<std::string>& objects,
                                     PoolVerifyReport& report,
                                     std::vector<std::vector<PageKey>>& named) {
  const size_t n = objects.size();
  std::vector<librados::ObjectReadOperation> ops(n);
  std::vector<librados::bufferlist> data(n);
  std::vector<std::map<std::string, librados::bufferlist>> xattrs(n), omap(n);
  std::unique_ptr<bool[]> more(new bool[n]());
  std::vector<int> rvals(n * 3, 0);
  std::vector<std::optional<ManifestCheck>> checks(n);
  std::vector<std::vector<PageKey>> pages(n);
  std::optional<Status> failed;
  const std::string where = "RADOS pool '" + conn_.uri().pool + "': ";
  RunWindowed(
      n, max_in_flight_,
      [&](size_t i, librados::AioCompletion* c) {
        ops[i].read(0, 0, &data[i], &rvals[3 * i]);
        ops[i].getxattrs(&xattrs[i], &rvals[3 * i + 1]);
        ops[i].omap_get_vals2("", std::string(PageKey::kPrefix), kOmapPage, &omap[i], &more[i],
                              &rvals[3 * i + 2]);
        return conn_.io().aio_operate(objects[i], c, &ops[i], nullptr);
      },
      [&](size_t i, int rc, librados::AioCompletion* c) {
        if (rc == -ENOENT) return;  // erased since the listing
        if (rc < 0) {
          if (!failed) failed = conn_.Check(rc, "read " + objects[i]);
          return;
        }
        ManifestCheck m{objects[i], ManifestHealth::kOk, "", {}, c->get_version64()};
        std::vector<uint8_t> bytes(data[i].length());
        data[i].begin().copy(bytes.size(), reinterpret_cast<char*>(bytes.data()));
        data[i].clear();
        auto hash = xattrs[i].find(kHashXattr);
        if (hash == xattrs[i].end() || hash->second.to_str() != HashString(bytes)) {
          m.health = ManifestHealth::kCorrupt;
          m.reason = objects[i] + ": its bytes do not match its auxstore.xxh3";
        }
        for (const auto& [name, v] : omap[i]) {
          auto key = PageKey::FromObjectName(name);
          if (!key && m.health == ManifestHealth::kOk) {
            m.health = ManifestHealth::kCorrupt;
            m.reason = objects[i] + ": names '" + name + "', which is no page key";
          }
          if (key) pages[i].push_back(*key);
        }
        checks[i] = std::move(m);
      });
  if (failed) return *failed;
  RadosManifests manifests(conn_, max_in_flight_);
  for (size_t i = 0; i < n; ++i) {
    if (!checks[i]) continue;
    ManifestCheck& m = *checks[i];
    if (more[i]) {  // more pages than one omap read returns: list them all
      auto all = manifests.PagesOf(objects[i]);
      if (all.status().IsNotFound()) continue;  // erased meanwhile
      if (all.ok()) {
        pages[i] = std::move(*all);
      } else if (!all.status().IsCorruption()) {
        return all.status();
      } else if (m.health == ManifestHealth::kOk) {
        m.health = ManifestHealth::kCorrupt;
        m.reason = objects[i] + ": its page list holds a name that is no page key";
      }
    }
    auto count = xattrs[i].find(kPagesXattr);
    if (m.health == ManifestHealth::kOk &&
        (count == xattrs[i].end() || ParseCount(count->second) != pages[i].size())) {
      m.health = ManifestHealth::kCorrupt;
      m.reason = objects[i] + ": names " + std::to_string(pages[i].size()) +
                 " pages, not the count it was committed with";
    }
    if (!m.reason.empty()) m.reason = where + m.reason;
    report.manifests.push_back(std::move(m));
    named.push_back(std::move(pages[i]));
  }
  return Status::Ok();
}

// Reads every page in `keys` and hashes its bytes: damaged and missing ones
// go to the report.
Status RadosPoolCheck::CheckPages(const std::vector<PageKey>& keys, PoolVerifyReport& report) {
  for (size_t base = 0; base < keys.size(); base += kPageChunk) {
    const size_t n = std::min(kPageChunk, keys.size() - base);
    std::vector<librados::ObjectReadOperation> ops(n);
    std::vector<librados::bufferlist> data(n);
    std::optional<Status> failed;
    RunWindowed(
        n, max_in_flight_,
        [&](size_t i, librados::AioCompletion* c) {
          ops[i].read(0, 0, &data[i], nullptr);
          return conn_.io().aio_operate(keys[base + i].ObjectName(), c, &ops[i], nullptr);
        },
        [&](size_t i, int rc, librados::AioCompletion* c) {
          const PageKey& key = keys[base + i];
          if (rc == -ENOENT) {
            report.missing_pages.push_back(key);
            return;
          }
          if (rc < 0) {
            if (!failed) failed = conn_.Check(rc, "read page " + key.ObjectName());
            return;
          }
          std::vector<uint8_t> bytes(data[i].length());
          data[i].begin().copy(bytes.size(), reinterpret_cast<char*>(bytes.data()));
          data[i].clear();
          ++report.pages_checked;
          report.bytes_checked += bytes.size();
          PageKey got = PageKey::Of(bytes);
          if (got != key) {
            report.damaged_pages.push_back({key, c->get_version64(),
                                            "page " + key.ObjectName() + " holds " +
                                                std::to_string(bytes.size()) +
                                                " bytes whose XXH3-128 is " + got.Hex()});
          }
        });
    if (failed) return *failed;
  }
  return Status::Ok();
}

Result<PoolVerifyReport> RadosPoolCheck::Verify() {
  AUXSTORE_ASSIGN_OR_RETURN(std::vector<std::string> objects, ListNamespaceObjects(conn_));
  PoolVerifyReport report;
  std::vector<std::string> manifest_objects;
  std::set<PageKey> stored;
  for (const std::string& name : objects) {
    if (auto key = PageKey::FromObjectName(name)) {
      stored.insert(*key);
    } else if (name.starts_with(kManifestPrefix)) {
      manifest_objects.push_back(name);
    } else {
      ++report.foreign;
    }
  }
  report.pages = stored.size();
  std::vector<std::vector<PageKey>> named;
  AUXSTORE_RETURN_IF_ERROR(ReadManifests(manifest_objects, report, named));
  std::set<PageKey> all_named;
  for (const auto& list : named) all_named.insert(list.begin(), list.end());
  for (const PageKey& k : stored) report.unnamed_pages += !all_named.count(k);
  AUXSTORE_RETURN_IF_ERROR(
      CheckPages(std::vector<PageKey>(all_named.begin(), all_named.end()), report));

  // Each manifest's verdict from the pages it names.
  std::map<PageKey, const DamagedPage*> damaged;
  for (const DamagedPage& d : report.damaged_pages) damaged.emplace(d.key, &d);
  std::set<PageKey> missing(report.missing_pages.begin(), report.missing_pages.end());
  const std::string where = "RADOS pool '" + conn_.uri().pool + "': ";
  for (size_t i = 0; i < report.manifests.size(); ++i) {
    ManifestCheck& m = report.manifests[i];
    for (const PageKey& k : named[i]) {
      auto d = damaged.find(k);
      if (d != damaged.end()) {
        m.bad_pages.push_back(k);
        if (m.health != ManifestHealth::kCorrupt) {
          m.health = ManifestHealth::kCorrupt;
          m.reason = where + m.object + " names " + d->second->reason + ", not what its name says";
        }
      } else if (missing.count(k)) {
        m.bad_pages.push_back(k);
        if (m.health == ManifestHealth::kOk) {
          m.health = ManifestHealth::kMissingPage;
          m.reason = where + m.object + " names page " + k.ObjectName() + ", which is not stored";
        }
      }
    }
  }
  return report;
}

Result<PoolRepairReport> RadosPoolCheck::Repair() {
  PoolRepairReport out;
  AUXSTORE_ASSIGN_OR_RETURN(out.found, Verify());
  // The guarded removals: every manifest that is not ok first (so no reader
  // finds a manifest whose damaged page is already gone), then the damaged pages.
  struct Removal {
    std::string object;
    uint64_t version;
  };
  std::vector<Removal> manifests, pages;
  for (const ManifestCheck& m : out.found.manifests) {
    if (m.health != ManifestHealth::kOk) manifests.push_back({m.object, m.version});
  }
  for (const DamagedPage& d : out.found.damaged_pages) {
    pages.push_back({d.key.ObjectName(), d.version});
  }
  for (auto* batch : {&manifests, &pages}) {
    std::vector<librados::ObjectWriteOperation> ops(batch->size());
    std::optional<Status> failed;
    RunWindowed(
        batch->size(), max_in_flight_,
        [&](size_t i, librados::AioCompletion* c) {
          ops[i].assert_version((*batch)[i].version);
          ops[i].remove();
          return conn_.io().aio_operate((*batch)[i].object, c, &ops[i]);
        },
        [&](size_t i, int rc, librados::AioCompletion*) {
          const std::string& object = (*batch)[i].object;
          if (rc >= 0 || rc == -ENOENT) {  // ENOENT: someone removed it already
            if (batch == &manifests) {
              out.removed_manifests.push_back(object);
            } else {
              out.removed_pages.push_back(*PageKey::FromObjectName(object));
            }
          } else if (Changed(rc)) {
            out.changed_since_verify.push_back(object);
          } else if (!failed) {
            failed = conn_.Check(rc, "remove " + object + " (repair)");
          }
        });
    if (failed) return *failed;
  }
  return out;
}

}  // namespace auxstore::rados
