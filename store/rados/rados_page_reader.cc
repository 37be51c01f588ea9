#include "store/rados/rados_page_reader.h"

#include <cstring>
#include <string>

#include "format/xxh3.h"  // AVX2 where the CPU has it
#include "store/rados/rados_aio.h"

namespace auxstore::rados {

std::vector<Status> ReadPagesInto(RadosConnection& conn, std::span<const PageKey> keys,
                                  std::span<const std::span<uint8_t>> dst, size_t max_in_flight,
                                  const std::function<void(size_t)>& on_read) {
  std::vector<Status> out(keys.size(), Status::Internal("not read"));
  if (dst.size() != keys.size()) {
    out.assign(keys.size(),
               Status::InvalidArgument("ReadPagesInto: " + std::to_string(keys.size()) +
                                       " keys but " + std::to_string(dst.size()) + " buffers"));
    return out;
  }
  std::vector<librados::bufferlist> data(keys.size());
  std::vector<librados::ObjectReadOperation> ops(keys.size());
  XXH3_state_t* state = XXH3_createState();
  RunWindowed(
      keys.size(), max_in_flight,
      [&](size_t i, librados::AioCompletion* c) {
        // One byte more than expected: a longer object shows as longer.
        ops[i].read(0, dst[i].size() + 1, &data[i], nullptr);
        return conn.io().aio_operate(keys[i].ObjectName(), c, &ops[i], nullptr);
      },
      [&](size_t i, int rc, librados::AioCompletion*) {
        const std::string name = keys[i].ObjectName();
        librados::bufferlist& bl = data[i];
        if (rc < 0) {
          out[i] = conn.Check(rc, "read page " + name);
          return;
        }
        const std::string where = "RADOS pool '" + conn.uri().pool + "': page " + name;
        if (bl.length() != dst[i].size()) {
          out[i] = Status::Corruption(
              where + " holds " + (bl.length() > dst[i].size() ? "more than" : "only") + " " +
              std::to_string(bl.length() > dst[i].size() ? dst[i].size() : bl.length()) +
              " bytes, not the " + std::to_string(dst[i].size()) +
              " its reader expects; not returned");
          bl.clear();
          return;
        }
        // Hash librados's buffers in place while copying each into dst.
        XXH3_128bits_reset(state);
        size_t at = 0;
        for (const auto& piece : bl.buffers()) {
          XXH3_128bits_update(state, piece.c_str(), piece.length());
          std::memcpy(dst[i].data() + at, piece.c_str(), piece.length());
          at += piece.length();
        }
        bl.clear();
        XXH128_canonical_t canon;
        XXH128_canonicalFromHash(&canon, XXH3_128bits_digest(state));
        if (std::memcmp(canon.digest, keys[i].hash.data(), keys[i].hash.size()) != 0) {
          out[i] = Status::Corruption(where +
                                      ": its bytes are not what its name says (damaged "
                                      "behind our back); not returned");
          return;
        }
        out[i] = Status::Ok();
        if (on_read) on_read(i);
      });
  XXH3_freeState(state);
  return out;
}

}  // namespace auxstore::rados
