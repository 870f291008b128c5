// Unit tests of OrderedVictims (core/preemption/ordered_victims.h): candidates put in victim order only as far as they are
// read must come out in exactly the order one std::sort by victim_order() gives, however far they are read and
// with many candidates alike in priority and start time (the ties the later keys settle).
#include <gtest/gtest.h>

#include <algorithm>
#include <deque>
#include <random>

#include "core/preemption/ordered_victims.h"
#include "core/preemption/preemption.h"

namespace allot::core::test::ordered_victims_test {
namespace {

// Jobs with few priorities and start times (so that most comparisons go down to arrival), arrivals unique as
// submission makes them, in a shuffled order.
std::deque<Job> jobs_for(uint64_t seed, int n) {
  std::mt19937_64 rng(seed);
  std::deque<Job> out;
  for (int i = 0; i < n; ++i) {
    Job j;
    j.id = JobId(static_cast<uint32_t>(i));
    j.priority = static_cast<int>(rng() % 3) * 50;
    j.started_at = static_cast<Time>(rng() % 4) * 60;
    j.arrival = static_cast<uint64_t>(i) * 7 + 3;
    out.push_back(j);
  }
  std::shuffle(out.begin(), out.end(), rng);
  return out;
}

std::vector<const Job*> sorted_by_victim_order(const std::deque<Job>& jobs) {
  std::vector<const Job*> out;
  for (const Job& j : jobs) out.push_back(&j);
  std::sort(out.begin(), out.end(), [](const Job* a, const Job* b) { return victim_order(*a, *b); });
  return out;
}

TEST(OrderedVictimsTest, ReadingAPrefixGivesTheSortedPrefix) {
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    for (int n : {0, 1, 15, 16, 17, 100, 1000}) {
      const std::deque<Job> jobs = jobs_for(seed, n);
      const std::vector<const Job*> expected = sorted_by_victim_order(jobs);
      // Stop at every kind of point: before the first chunk ends, at its end, in later chunks, at the end.
      for (size_t stop : {size_t{1}, size_t{5}, size_t{16}, size_t{17}, size_t{40}, size_t{333}, static_cast<size_t>(n)}) {
        OrderedVictims v;
        for (const Job& j : jobs) v.add(j);
        ASSERT_EQ(v.size(), static_cast<size_t>(n));
        for (size_t i = 0; i < std::min(stop, static_cast<size_t>(n)); ++i)
          ASSERT_EQ(v.at(i), expected[i]) << "seed " << seed << ", " << n << " candidates, read to " << stop << ", at " << i;
        EXPECT_EQ(v.all(), expected) << "seed " << seed << ", " << n << " candidates, after reading " << stop;
      }
    }
  }
}

TEST(OrderedVictimsTest, KeysCopiedFromElsewhereOrderAsTheJobsDo) {
  const std::deque<Job> jobs = jobs_for(7, 500);
  OrderedVictims v;
  for (const Job& j : jobs) v.add({j.priority, j.started_at, j.arrival, j.id.index(), &j});
  EXPECT_EQ(v.all(), sorted_by_victim_order(jobs));
}

TEST(OrderedVictimsTest, JobIdSettlesWhatArrivalDoesNot) {
  // Arrival is unique in a state built by submission; were it not, the order would still be one order.
  std::deque<Job> jobs(3);
  for (uint32_t i = 0; i < 3; ++i) {
    jobs[i].id = JobId(2 - i);
    jobs[i].priority = 10;
    jobs[i].arrival = 5;
  }
  EXPECT_TRUE(victim_order(jobs[2], jobs[1]));
  EXPECT_FALSE(victim_order(jobs[1], jobs[2]));
  OrderedVictims v;
  for (const Job& j : jobs) v.add(j);
  EXPECT_EQ(v.at(0), &jobs[2]);
  EXPECT_EQ(v.at(2), &jobs[0]);
}

}  // namespace
}  // namespace allot::core::test::ordered_victims_test
