// What one published read view costs the writer as the cluster grows (issue 25 items 7 and 10): view_of
// (server/writer/server_state.h) copies the whole state but the job table's unchanged chunks, so its cost grows
// with the nodes (the core's Node, room and topology tree, and the server's NodeInfo per node). Builds a state of
// N nodes as registered agents leave it (three topology labels, a NodeInfo with its ranks placed, a history of
// health changes and the health checks its agent last reported), then times --copies views in a row, each after a heartbeat's worth of change (every node's
// last heartbeat moved, as the writer's rounds do), and prints the median per view and per node.
//
//   view_copy_bench [--sizes 1000,5000,10000] [--copies 50] [--ranks 20] [--history 10] [--checks 8]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "core/model/state.h"
#include "server/writer/server_state.h"

namespace {

using Clock = std::chrono::steady_clock;

struct Args {
  std::vector<int> sizes = {1000, 5000, 10000};
  int copies = 50;
  int ranks = 20;    // (job, rank) pairs each node has had placed on it
  int history = 10;  // health changes kept per node
  int checks = 8;    // health checks each agent reports (GPUs, EFA, NVLink, disks...)
};

std::vector<int> parse_sizes(const char* text) {
  std::vector<int> out;
  for (const char* p = text; *p;) {
    out.push_back(std::atoi(p));
    p = std::strchr(p, ',');
    if (!p) break;
    ++p;
  }
  return out;
}

allot::server::ServerState make_state(const Args& a, int nodes) {
  allot::server::ServerState st;
  std::vector<allot::NodeSpec> specs;
  specs.reserve(nodes);
  for (int i = 0; i < nodes; ++i) {
    allot::NodeSpec s;
    s.name = "ip-10-" + std::to_string(i / 250) + "-" + std::to_string(i % 250) + ".ec2.internal";
    s.instance_type = "ml.p5.48xlarge";
    s.labels = {{"network-node-layer-1", "nn1-" + std::to_string(i / 2000)},
                {"network-node-layer-2", "nn2-" + std::to_string(i / 250)},
                {"network-node-layer-3", "nn3-" + std::to_string(i / 16)}};
    specs.push_back(std::move(s));
  }
  if (auto status = allot::add_nodes(st.cluster, specs, 0); !status) {
    std::fprintf(stderr, "view_copy_bench: %s\n", status.error().message.c_str());
    std::exit(1);
  }
  for (const auto& s : specs) {
    allot::server::NodeInfo& info = st.nodes[s.name];
    info.agent = true;
    info.address = "10.0." + std::to_string(st.nodes.size() % 250) + ".1";
    for (int r = 0; r < a.ranks; ++r) info.ranks_placed.edit().insert({static_cast<uint32_t>(r * 7), r % 8});
    for (int h = 0; h < a.history; ++h)
      info.history.edit().push_back({h * 1000, "Schedulable", "UnschedulablePendingReboot", "health_check", "xid 79 on GPU 3"});
    for (int c = 0; c < a.checks; ++c)
      info.checks.edit().push_back({"check-" + std::to_string(c), "passed",
                                    "all 8 devices answered; error counters unchanged since the last run", "reboot", 1000});
  }
  return st;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const bool more = i + 1 < argc;
    if (!std::strcmp(argv[i], "--sizes") && more) a.sizes = parse_sizes(argv[++i]);
    else if (!std::strcmp(argv[i], "--copies") && more) a.copies = std::max(1, std::atoi(argv[++i]));
    else if (!std::strcmp(argv[i], "--ranks") && more) a.ranks = std::max(0, std::atoi(argv[++i]));
    else if (!std::strcmp(argv[i], "--history") && more) a.history = std::max(0, std::atoi(argv[++i]));
    else if (!std::strcmp(argv[i], "--checks") && more) a.checks = std::max(0, std::atoi(argv[++i]));
    else {
      std::fprintf(stderr, "usage: view_copy_bench [--sizes 1000,5000,10000] [--copies 50] [--ranks 20] [--history 10] [--checks 8]\n");
      return 2;
    }
  }
  std::printf("nodes, median ms per view, max ms, us per node (%d copies; per node %d ranks placed, %d health changes, %d checks)\n",
              a.copies, a.ranks, a.history, a.checks);
  for (int n : a.sizes) {
    allot::server::ServerState st = make_state(a, n);
    std::shared_ptr<const allot::server::ServerState> previous;
    std::vector<double> ms;
    int64_t beat = 1;
    for (int c = 0; c < a.copies; ++c) {
      for (auto& [name, info] : st.nodes) info.last_heartbeat_ms = ++beat;
      const auto t0 = Clock::now();
      auto view = allot::server::view_of(st, previous.get());
      ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
      previous = std::move(view);  // the old view is freed here, outside the timed copy (readers hold it meanwhile)
    }
    const double med = median(ms);
    std::printf("%d, %.2f, %.2f, %.2f\n", n, med, *std::max_element(ms.begin(), ms.end()), 1000 * med / n);
  }
  return 0;
}
