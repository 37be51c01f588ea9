#include "store/rados/rados_page_store.h"

#include <cerrno>
#include <optional>
#include <string>

#include "store/rados/rados_aio.h"

namespace auxstore::rados {

Result<PagePutResult> RadosPageStore::PutPages(std::span<const ByteSpan> pages,
                                               std::span<const PageKey> keys) {
  if (!keys.empty() && keys.size() != pages.size()) {
    return Status::InvalidArgument("PutPages: " + std::to_string(keys.size()) + " keys for " +
                                   std::to_string(pages.size()) + " pages");
  }
  PagePutResult out;
  out.keys.assign(keys.begin(), keys.end());
  out.keys.resize(pages.size());
  std::vector<librados::ObjectWriteOperation> ops(pages.size());
  std::optional<Status> first_error;
  RunWindowed(
      pages.size(), max_in_flight_,
      [&](size_t i, librados::AioCompletion* c) {
        // Each page hashed as it is sent: beside the writes in flight, not
        // one pass over every page before the first is sent.
        if (keys.empty()) out.keys[i] = PageKey::Of(pages[i]);
        librados::bufferlist bl;
        bl.append(reinterpret_cast<const char*>(pages[i].data()), pages[i].size());
        ops[i].create(true);  // exclusive: EEXIST, nothing written, if any writer got there first
        ops[i].write_full(bl);
        return conn_.io().aio_operate(out.keys[i].ObjectName(), c, &ops[i]);
      },
      [&](size_t i, int rc, librados::AioCompletion*) {
        if (rc >= 0) {
          ++out.stored;
        } else if (rc == -EEXIST) {
          ++out.already_stored;
        } else if (!first_error) {
          first_error = conn_.Check(rc, "put page " + out.keys[i].ObjectName());
        }
      });
  if (first_error) return *first_error;
  return out;
}

std::vector<Result<std::vector<uint8_t>>> RadosPageStore::ReadPages(std::span<const PageKey> keys) {
  std::vector<Result<std::vector<uint8_t>>> out(keys.size(), Status::Internal("not read"));
  std::vector<librados::bufferlist> data(keys.size());
  std::vector<librados::ObjectReadOperation> ops(keys.size());
  RunWindowed(
      keys.size(), max_in_flight_,
      [&](size_t i, librados::AioCompletion* c) {
        ops[i].read(0, 0, &data[i], nullptr);  // length 0: the whole object
        return conn_.io().aio_operate(keys[i].ObjectName(), c, &ops[i], nullptr);
      },
      [&](size_t i, int rc, librados::AioCompletion*) {
        const std::string name = keys[i].ObjectName();
        if (rc < 0) {
          out[i] = conn_.Check(rc, "read page " + name);
          return;
        }
        std::vector<uint8_t> bytes(data[i].length());
        data[i].begin().copy(bytes.size(), reinterpret_cast<char*>(bytes.data()));
        data[i].clear();
        PageKey got = PageKey::Of(bytes);
        if (got != keys[i]) {
          out[i] =
              Status::Corruption("RADOS pool '" + conn_.uri().pool + "': page " + name + " holds " +
                                 std::to_string(bytes.size()) + " bytes whose XXH3-128 is " +
                                 got.Hex() + ": damaged behind our back; not returned");
          return;
        }
        out[i] = std::move(bytes);
      });
  return out;
}

}  // namespace auxstore::rados
