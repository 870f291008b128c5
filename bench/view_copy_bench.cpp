// What one published read view costs the writer as the cluster grows (issue 25 items 7 and 10): view_of
// (server/writer/server_state.h) copies the whole state but the job table's unchanged chunks, so its cost grows
// with the nodes (the core's Node, room and topology tree, and the server's NodeInfo per node). Builds a state of
// N nodes as registered agents leave it (three topology labels, a NodeInfo with its ranks placed, a history of
// health changes and the health checks its agent last reported, and the agent's credential), plus the server's
// goodput account of --jobs jobs (the per-job table a server keeps for every job it keeps), then times --copies
// views in a row, each after a heartbeat's worth of change (every node's last heartbeat moved, as the writer's rounds
// do) and --changed-jobs accounts changed (as that many admissions or ends would), and prints the median per view
// and per node. Then, for the members the views share until they change (tokens, names' index, accounts), what
// copying each whole costs (the median of --copies plain copies): what every view paid for them before they were
// shared.
//
//   view_copy_bench [--sizes 1000,5000,10000] [--copies 50] [--ranks 20] [--history 10] [--checks 8]
//                   [--jobs 20000] [--changed-jobs 200]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <unordered_map>
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
  int jobs = 20000;  // jobs kept, each with its goodput account
  int changed_jobs = 200;  // accounts changed between two views
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

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
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
  for (const auto& s : specs) {
    allot::store::TokenRecord t;
    t.id = "agent-" + s.name;
    t.secret_hash = std::string(64, 'f');
    t.role = allot::auth::Role::kAgent;
    t.node = s.name;
    t.joined_with = "join-1";
    st.tokens.edit()[t.id] = allot::server::TokenInfo{t, 1000, "join-1", false, 0};
  }
  for (int j = 0; j < a.jobs; ++j) {
    allot::server::JobAccount& acc = st.accounts.edit(static_cast<uint32_t>(j));
    acc.slots = 8;
    acc.held_s = 3600 * 8;
    acc.run_since = 1000;
    acc.run_types = {allot::TypeId(0)};
    if (j % 10 == 0) acc.restarts.push_back({500, 0, "node ip-10-0-1.ec2.internal became Unschedulable: xid 79", "ip-10-0-1.ec2.internal", 600, 120});
  }
  return st;
}

// The median ms of `copies` plain copies of `value`.
template <class T>
double copy_ms(const T& value, int copies) {
  std::vector<double> ms;
  for (int c = 0; c < copies; ++c) {
    const auto t0 = Clock::now();
    T copy(value);
    ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
  }
  return median(ms);
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
    else if (!std::strcmp(argv[i], "--jobs") && more) a.jobs = std::max(0, std::atoi(argv[++i]));
    else if (!std::strcmp(argv[i], "--changed-jobs") && more) a.changed_jobs = std::max(0, std::atoi(argv[++i]));
    else {
      std::fprintf(stderr,
                   "usage: view_copy_bench [--sizes 1000,5000,10000] [--copies 50] [--ranks 20] [--history 10] [--checks 8]"
                   " [--jobs 20000] [--changed-jobs 200]\n");
      return 2;
    }
  }
  std::printf("nodes, median ms per view, max ms, us per node (%d copies; per node %d ranks placed, %d health changes, %d checks;"
              " %d jobs' accounts, %d changed per view)\n",
              a.copies, a.ranks, a.history, a.checks, a.jobs, a.changed_jobs);
  std::vector<std::string> shared_lines;
  for (int n : a.sizes) {
    allot::server::ServerState st = make_state(a, n);
    std::shared_ptr<const allot::server::ServerState> previous;
    std::vector<double> ms;
    int64_t beat = 1;
    for (int c = 0; c < a.copies; ++c) {
      for (auto& [name, info] : st.nodes) info.last_heartbeat_ms = ++beat;
      for (int j = 0; j < a.changed_jobs && a.jobs > 0; ++j) st.accounts.edit(static_cast<uint32_t>((c * a.changed_jobs + j) % a.jobs)).held_s++;
      const auto t0 = Clock::now();
      auto view = allot::server::view_of(st, previous.get());
      ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
      previous = std::move(view);  // the old view is freed here, outside the timed copy (readers hold it meanwhile)
    }
    const double med = median(ms);
    std::printf("%d, %.2f, %.2f, %.2f\n", n, med, *std::max_element(ms.begin(), ms.end()), 1000 * med / n);
    // The shared members as the plain containers they were before (server_state.h, state.h).
    std::unordered_map<uint32_t, allot::server::JobAccount> accounts;
    st.accounts.for_each([&](uint32_t job, const allot::server::JobAccount& acc) { accounts.emplace(job, acc); });
    char line[200];
    std::snprintf(line, sizeof line, "%d, %.2f, %.2f, %.2f", n, copy_ms(*st.tokens, a.copies),
                  copy_ms(*st.cluster.node_by_name, a.copies), copy_ms(accounts, a.copies));
    shared_lines.push_back(line);
  }
  std::printf("nodes, median ms of a whole copy: tokens, names' index, accounts (what each view paid before they were shared)\n");
  for (const auto& line : shared_lines) std::printf("%s\n", line.c_str());
  return 0;
}
