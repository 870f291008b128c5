#pragma once
// A server state driven record by record, as the writer drives it and as a replay does: tests of what the
// server's tables derive from the journal (goodput, usage) compare the live path with a replay of `records_`.
#include <gtest/gtest.h>

#include <utility>
#include <vector>

#include "core/pass/scheduler.h"
#include "server/writer/server_state.h"
#include "store/replay.h"

namespace allot::server::test {

class JournalTest : public ::testing::Test {
 protected:
  // A record applied as the journal replays it (and as the API applies changes).
  void put(Time at, store::Op op, store::Actor actor = {}) {
    store::Record r{++seq_, at, std::move(op), std::move(actor)};
    ASSERT_TRUE(apply(st_, r, events_).ok()) << store::op_name(r.op);
    records_.push_back(std::move(r));
  }
  // A scheduler pass as the writer runs it: the decisions are applied by the pass and noted afterwards.
  void pass(Time now) {
    ScheduleResult sr = schedule(st_.cluster, now);
    for (const Decision& d : sr.decisions) {
      store::Record r{++seq_, now, store::decision_record(st_.cluster, d), {}};
      note_decision(st_, r, events_);
      records_.push_back(std::move(r));
    }
  }

  ServerState st_;
  std::vector<Event> events_;
  std::vector<store::Record> records_;
  uint64_t seq_ = 0;
};

}  // namespace allot::server::test
