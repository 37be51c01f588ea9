// Restores with Asio completion tokens: a callback, boost::asio::use_future,
// boost::asio::use_awaitable / deferred, or any other token.
//
//   Status st = co_await auxstore::async_restore(pipe, ns, prefix, targets, {},
//                                                boost::asio::use_awaitable);
//   std::future<Status> f = auxstore::async_restore(pipe, ns, prefix, targets, {},
//                                                   boost::asio::use_future);
//
// The completion signature is void(Status). The handler runs on its
// associated executor (e.g. the coroutine's), or on a pipeline thread when
// it has none. This is the only public header that needs Boost.
#pragma once

#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/use_future.hpp>
#include <memory>
#include <utility>

#include "auxstore/gpu_pipeline.h"

namespace auxstore {

template <typename CompletionToken>
auto async_restore(GpuPipeline& pipeline, NamespaceId ns, const Prefix& prefix,
                   RestoreTargets targets, RestoreOptions options, CompletionToken&& token) {
  auto initiation = [&pipeline, ns, prefix](auto handler, RestoreTargets t, RestoreOptions o) {
    using Handler = decltype(handler);
    // RestoreCallback is copyable; handlers (futures, coroutines) may not be.
    struct Pending {
      Handler handler;
      boost::asio::executor_work_guard<boost::asio::associated_executor_t<Handler>> work;
    };
    auto ex = boost::asio::get_associated_executor(handler);
    auto pending =
        std::make_shared<Pending>(Pending{std::move(handler), boost::asio::make_work_guard(ex)});
    pipeline.StartRestore(ns, prefix, std::move(t), o, [pending](Status st) {
      auto executor = pending->work.get_executor();
      boost::asio::dispatch(executor, [pending, st = std::move(st)]() mutable {
        std::move(pending->handler)(std::move(st));
        pending->work.reset();
      });
    });
  };
  return boost::asio::async_initiate<CompletionToken, void(Status)>(
      std::move(initiation), token, std::move(targets), std::move(options));
}

}  // namespace auxstore
