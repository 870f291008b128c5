#pragma once
// Polls a condition for tests that wait on a server's background threads (writer ticks, a standby following
// the journal): up to 5 s of real time, so a slow CI machine waits longer but a broken condition still ends.
#include <chrono>
#include <thread>

namespace allot::test {

template <typename F>
bool eventually(F cond) {
  for (int i = 0; i < 500; ++i) {
    if (cond()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return cond();
}

}  // namespace allot::test
