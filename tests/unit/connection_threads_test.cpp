// The request threads' pool (ConnectionThreads, http_server.h): a job wakes the thread that went idle last, one
// thread per job, never more threads than its limit, and shutdown runs what is queued before it joins. Every
// wait is bounded; nothing asserts how long something took.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <thread>

#include "server/http/http_server.h"

namespace allot::server::connection_threads_test {
namespace {

using namespace std::chrono_literals;

// Waits up to 10 s for `done`; false when it never held.
template <typename F>
bool eventually(F done) {
  const auto until = std::chrono::steady_clock::now() + 10s;
  while (!done()) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::sleep_for(1ms);
  }
  return true;
}

// The thread a job ran on.
std::thread::id run_one(ConnectionThreads& pool) {
  std::promise<std::thread::id> ran;
  auto got = ran.get_future();
  pool.enqueue([&ran] { ran.set_value(std::this_thread::get_id()); });
  EXPECT_EQ(got.wait_for(10s), std::future_status::ready);
  return got.get();
}

TEST(ConnectionThreads, AJobWakesTheThreadThatWentIdleLast) {
  ConnectionThreads pool(3);
  // Three jobs held at once start three threads; they are let go one after another, so the third goes idle last.
  std::promise<void> go[3];
  std::shared_future<void> let_go[3] = {go[0].get_future().share(), go[1].get_future().share(),
                                        go[2].get_future().share()};
  std::promise<std::thread::id> ids[3];
  std::future<std::thread::id> id_of[3] = {ids[0].get_future(), ids[1].get_future(), ids[2].get_future()};
  for (int i = 0; i < 3; ++i)
    pool.enqueue([&ids, &let_go, i] {
      ids[i].set_value(std::this_thread::get_id());
      let_go[i].wait();
    });
  std::thread::id thread[3];
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(id_of[i].wait_for(10s), std::future_status::ready);
    thread[i] = id_of[i].get();
  }
  EXPECT_NE(thread[0], thread[1]);
  EXPECT_NE(thread[1], thread[2]);
  EXPECT_NE(thread[0], thread[2]);
  for (size_t i = 0; i < 3; ++i) {
    go[i].set_value();
    ASSERT_TRUE(eventually([&] { return pool.idle() == i + 1; })) << "thread " << i << " never went idle";
  }
  // Each job, one at a time, runs on the warmest thread: the last to go idle, which is the last again after it.
  for (int k = 0; k < 5; ++k) {
    EXPECT_EQ(run_one(pool), thread[2]) << "job " << k;
    ASSERT_TRUE(eventually([&] { return pool.idle() == 3; }));
  }
}

TEST(ConnectionThreads, NoMoreThreadsThanTheLimitAndQueuedJobsAllRun) {
  ConnectionThreads pool(2);
  std::promise<void> go;
  std::shared_future<void> let_go = go.get_future().share();
  std::atomic<int> started{0}, done{0};
  for (int i = 0; i < 6; ++i)
    pool.enqueue([&] {
      ++started;
      let_go.wait();
      ++done;
    });
  ASSERT_TRUE(eventually([&] { return started.load() == 2; }));
  std::this_thread::sleep_for(50ms);  // a third thread, were one started, would have started its job by now
  EXPECT_EQ(started.load(), 2) << "the pool holds two threads";
  go.set_value();
  ASSERT_TRUE(eventually([&] { return done.load() == 6; }));
  ASSERT_TRUE(eventually([&] { return pool.idle() == 2; }));
}

TEST(ConnectionThreads, ShutdownRunsWhatIsQueuedThenJoinsIdleAndBusyThreads) {
  std::atomic<int> done{0};
  {
    ConnectionThreads pool(2);
    run_one(pool);  // one thread, idle afterwards
    ASSERT_TRUE(eventually([&] { return pool.idle() == 1; }));
    for (int i = 0; i < 5; ++i)
      pool.enqueue([&] {
        std::this_thread::sleep_for(2ms);
        ++done;
      });
    pool.shutdown();
    EXPECT_EQ(done.load(), 5);
    EXPECT_EQ(pool.idle(), 0u);
  }  // the destructor's second shutdown has nothing left to do
  EXPECT_EQ(done.load(), 5);
}

}  // namespace
}  // namespace allot::server::connection_threads_test
