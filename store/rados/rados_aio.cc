#include "store/rados/rados_aio.h"

#include <deque>
#include <utility>

namespace auxstore::rados {

void RunWindowed(size_t n, size_t window,
                 const std::function<int(size_t, librados::AioCompletion*)>& start,
                 const std::function<void(size_t, int, librados::AioCompletion*)>& finish) {
  if (window == 0) window = 1;
  std::deque<std::pair<size_t, librados::AioCompletion*>> in_flight;
  size_t next = 0;
  while (next < n || !in_flight.empty()) {
    while (next < n && in_flight.size() < window) {
      librados::AioCompletion* c = librados::Rados::aio_create_completion();
      int rc = start(next, c);
      if (rc < 0) {
        finish(next, rc, c);
        c->release();
      } else {
        in_flight.emplace_back(next, c);
      }
      ++next;
    }
    if (in_flight.empty()) continue;
    auto [i, c] = in_flight.front();
    in_flight.pop_front();
    // Returns: every op is bounded by rados_osd_op_timeout (RadosConnection).
    c->wait_for_complete();
    finish(i, c->get_return_value(), c);
    c->release();
  }
}

}  // namespace auxstore::rados
