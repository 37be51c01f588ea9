// RunBeside: one job on an Asio executor while the calling thread does
// another; returns when both are done, with both results.
//
// The side job is posted with asio::use_future, but the caller never waits
// for a pool thread to come free: when no thread has started the side job by
// the time the caller's own job is done, the caller claims it and runs it
// itself (the pool's task then finds it claimed and touches nothing). So a
// caller waiting on its side job cannot deadlock, however small the pool and
// however many callers wait at once — callers that are themselves the pool's
// threads, or whose pool is busy with long work, included.
#pragma once

#include <atomic>
#include <boost/asio/post.hpp>
#include <boost/asio/use_future.hpp>
#include <future>
#include <memory>
#include <optional>
#include <type_traits>
#include <utility>

namespace auxstore::store_internal {

template <typename Executor, typename Main, typename Side>
std::pair<std::invoke_result_t<Main&>, std::invoke_result_t<Side&>> RunBeside(
    const Executor& executor, Main&& main, Side&& side) {
  using SideResult = std::invoke_result_t<Side&>;
  // Whoever flips it first runs `side`: a pool thread or the caller.
  auto claimed = std::make_shared<std::atomic<bool>>(false);
  std::future<std::optional<SideResult>> on_pool = boost::asio::post(
      executor, boost::asio::use_future([claimed, &side]() -> std::optional<SideResult> {
        if (claimed->exchange(true)) return std::nullopt;  // the caller ran it
        return side();
      }));
  // Should `main` throw: `side` must not run after this frame is gone, so
  // it is claimed, or waited for when a pool thread already runs it.
  struct Settle {
    std::atomic<bool>& claimed;
    std::future<std::optional<SideResult>>& on_pool;
    bool done = false;
    ~Settle() {
      if (!done && claimed.exchange(true)) on_pool.wait();
    }
  } settle{*claimed, on_pool};
  auto main_result = main();
  settle.done = true;
  if (!claimed->exchange(true)) return {std::move(main_result), side()};  // no thread came
  return {std::move(main_result), *on_pool.get()};
}

}  // namespace auxstore::store_internal
