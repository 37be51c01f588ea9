// RunBeside (store/run_beside.h): the side job runs on the pool when a
// thread is free, on the caller when none is, and callers never deadlock
// waiting for their side jobs, even when they are the pool's only threads.
#include "store/run_beside.h"

#include <gtest/gtest.h>

#include <atomic>
#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>
#include <future>
#include <latch>
#include <thread>

#include "auxstore/status.h"

namespace auxstore::store_internal {
namespace {

TEST(RunBeside, TheSideJobRunsOnAFreePoolThreadWhileTheCallerRunsItsOwn) {
  boost::asio::thread_pool pool(1);
  std::promise<void> side_started;
  std::thread::id side_thread;
  auto [main_result, side_result] = RunBeside(
      pool.get_executor(),
      [&] {
        side_started.get_future().wait();  // the side job is running elsewhere meanwhile
        return 1;
      },
      [&] {
        side_thread = std::this_thread::get_id();
        side_started.set_value();
        return 2;
      });
  EXPECT_EQ(main_result, 1);
  EXPECT_EQ(side_result, 2);
  EXPECT_NE(side_thread, std::this_thread::get_id());
  pool.join();
}

TEST(RunBeside, TheCallerRunsTheSideJobWhenNoPoolThreadIsFree) {
  boost::asio::thread_pool pool(1);
  std::promise<void> gate;
  boost::asio::post(pool, [opened = gate.get_future().share()] { opened.wait(); });
  int side_runs = 0;
  std::thread::id side_thread;
  auto [main_result, side_result] = RunBeside(
      pool.get_executor(), [] { return std::string("main"); },
      [&] {
        ++side_runs;
        side_thread = std::this_thread::get_id();
        return std::string("side");
      });
  EXPECT_EQ(main_result, "main");
  EXPECT_EQ(side_result, "side");
  EXPECT_EQ(side_thread, std::this_thread::get_id());
  gate.set_value();
  pool.join();  // the pool's copy of the job finds it claimed and does nothing
  EXPECT_EQ(side_runs, 1);
}

// N + 1 callers on a pool of N, the callers being the pool's own threads:
// the first N hold every thread until all N have started, so no thread is
// left for any side job. Callers that waited for a pool thread would hang
// here for ever; each runs its side job itself instead.
TEST(RunBeside, NPlusOneCallersOnAPoolOfNAllFinish) {
  constexpr int kThreads = 3;
  boost::asio::thread_pool pool(kThreads);
  std::latch all_threads_busy(kThreads);
  std::atomic<int> side_runs{0}, finished{0};
  for (int caller = 0; caller <= kThreads; ++caller) {
    boost::asio::post(pool, [&, caller] {
      auto [m, s] = RunBeside(
          pool.get_executor(),
          [&] {
            if (caller < kThreads) all_threads_busy.arrive_and_wait();
            return caller;
          },
          [&] {
            ++side_runs;
            return -caller;
          });
      EXPECT_EQ(m, caller);
      EXPECT_EQ(s, -caller);
      ++finished;
    });
  }
  pool.join();
  EXPECT_EQ(finished.load(), kThreads + 1);
  EXPECT_EQ(side_runs.load(), kThreads + 1);
}

TEST(RunBeside, AFailingSideJobReportsItsOwnResult) {
  boost::asio::thread_pool pool(2);
  auto [m, s] = RunBeside(
      pool.get_executor(), [] { return Status::Ok(); },
      [] { return Status::IOError("second file"); });
  EXPECT_TRUE(m.ok());
  EXPECT_EQ(s.code(), StatusCode::kIOError) << s.ToString();
  pool.join();
}

}  // namespace
}  // namespace auxstore::store_internal
