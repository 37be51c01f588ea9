// RunWindowed: many librados aio operations with a bounded number in flight.
#pragma once

#include <cstddef>
#include <functional>
#include <rados/librados.hpp>

namespace auxstore::rados {

// Submits operations 0..n-1, at most `window` in flight (a new one as soon as
// any completes), and hands each one's result to `finish` on the calling
// thread, in completion order. `start(i, c)` submits operation i on
// completion `c` and returns the submit's rc (negative: the operation never
// started, and finish sees that rc). `finish(i, rc, c)` gets the completion's
// return value; `c` is released after it returns. Everything `start` hands to
// librados (buffers, ops) must stay alive until finish(i) is called.
void RunWindowed(size_t n, size_t window,
                 const std::function<int(size_t, librados::AioCompletion*)>& start,
                 const std::function<void(size_t, int, librados::AioCompletion*)>& finish);

}  // namespace auxstore::rados
