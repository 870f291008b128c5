#pragma once
// The Running jobs by node, so that a heartbeat reads the jobs placed on its own node only: with 1,000 nodes
// heartbeating every second and thousands of jobs running, walking every running job for every heartbeat was the
// writer's largest cost under load (bench/RESULTS.md, "Load at scale").
//
// Kept up to date where ServerState::running is (server_state.cpp, push()): every change of a job's state or
// placement names the job in an event. A job is listed under each node its placement holds while it is Running.
//
// Thread-safety: none; a part of ServerState.
#include <cstdint>
#include <set>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/model/state.h"

namespace allot::server {

class RunningIndex {
 public:
  // Lists `j` under the nodes of its placement when it is Running, and under none otherwise.
  void update(const Job& j);
  // The indices of the Running jobs placed on `node`, in ascending order (as ServerState::running); null when none.
  const std::set<uint32_t>* on(NodeId node) const;
  // The nodes of every job update() was called for since the last call, before and after the update (node
  // indices, possibly repeated): their heartbeat answers may have changed (heartbeat_board.h).
  std::vector<uint32_t> take_touched() { return std::exchange(touched_, {}); }

 private:
  void remove(uint32_t job);
  std::unordered_map<uint32_t, std::vector<uint32_t>> nodes_of_;  // job index -> node indices (sorted, unique)
  std::unordered_map<uint32_t, std::set<uint32_t>> jobs_on_;      // node index -> job indices
  std::vector<uint32_t> touched_;
};

}  // namespace allot::server
