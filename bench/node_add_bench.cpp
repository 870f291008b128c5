// Adding many nodes at once (issue 33): the simulator's add_nodes event and the server's POST /v1/nodes build
// the topology tree once per batch, so their cost grows linearly with the nodes added. Before, the tree was
// rebuilt for every node: 5,000 nodes took 30.7 s in `allot sim run` and 18.4 s of the server's writer.
// Prints, per size, the median over --reps of the CPU time (of this process: the simulator, or the server
// running in it) and wall time, and the time per node. "one at a time" is the old way, core add_node per node
// (the rebuild each time), measured up to --old-max nodes only: it is quadratic.
//
//   node_add_bench [--sizes 1000,10000,100000] [--reps 3] [--old-max 10000]
#include <httplib.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "core/model/state.h"
#include "server/server.h"
#include "sim/scenario.h"
#include "sim/scenario_run.h"

namespace {

using Clock = std::chrono::steady_clock;

struct Figures {
  double cpu_s = 0, wall_s = 0;
};

Figures measure(const std::function<void()>& f) {
  const std::clock_t c0 = std::clock();
  const auto w0 = Clock::now();
  f();
  return {double(std::clock() - c0) / CLOCKS_PER_SEC, std::chrono::duration<double>(Clock::now() - w0).count()};
}

Figures median(std::vector<Figures> v) {
  auto pick = [&](auto field) {
    std::vector<double> x;
    for (const auto& f : v) x.push_back(f.*field);
    std::sort(x.begin(), x.end());
    return x[x.size() / 2];
  };
  return {pick(&Figures::cpu_s), pick(&Figures::wall_s)};
}

// `n` nodes as a nodes list: racks of 100 nodes under 10 layer-3 switches each, so the tree has every level.
std::string nodes_yaml(int n, const std::string& prefix, const std::string& indent) {
  std::ostringstream out;
  for (int first = 1; first <= n; first += 100) {
    const int last = std::min(n, first + 99);
    const int rack = first / 100;
    out << indent << "- {name: \"" << prefix << "[" << first << "-" << last << "]\", instance_type: ml.p5.48xlarge, labels: "
        << "{network-node-layer-1: nn1-" << rack / 100 << ", network-node-layer-2: nn2-" << rack / 10
        << ", network-node-layer-3: nn3-" << rack << "}}\n";
  }
  return out.str();
}

void fail(const std::string& what) {
  std::fprintf(stderr, "node_add_bench: %s\n", what.c_str());
  std::exit(1);
}

// `allot sim run`'s path: parse the scenario, then run it (one add_nodes event of n nodes at t=1).
Figures sim_batch(int n) {
  const std::string text = "cluster:\n  nodes:\n    - {name: seed, instance_type: ml.p5.48xlarge}\nevents:\n  - at: 1\n    add_nodes:\n" +
                           nodes_yaml(n, "n", "      ");
  auto sc = allot::sim::parse_scenario(text, "bench.yaml");
  if (!sc) fail(sc.error().message);
  return measure([&] {
    auto rep = allot::sim::run_scenario(*sc);
    if (!rep) fail(rep.error().message);
  });
}

// The old way: one core add_node per node, each rebuilding the tree.
Figures one_at_a_time(int n) {
  const std::string text = "cluster:\n  nodes:\n" + nodes_yaml(n, "n", "    ");
  auto sc = allot::sim::parse_scenario(text, "bench.yaml");
  if (!sc) fail(sc.error().message);
  allot::ClusterState s(allot::Catalog::builtin());
  return measure([&] {
    for (const auto& spec : sc->nodes)
      if (auto st = allot::add_node(s, spec, 0); !st) fail(st.error().message);
  });
}

// POST /v1/nodes to a server running in this process (SQLite journal in a temporary directory).
Figures server_batch(int n) {
  const auto dir = std::filesystem::temp_directory_path() / ("allot-node-add-bench-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  allot::server::ServerOptions o;
  o.listen = "127.0.0.1:0";
  o.data_dir = dir.string();
  // 100,000 nodes are one request of several seconds (the journal records alone are 100,000 rows); the
  // default 30 s answer deadline is for a loaded machine's sake raised here, not needed by the work itself.
  o.request_timeout = std::chrono::milliseconds(600000);
  o.write_timeout = std::chrono::milliseconds(600000);
  auto s = allot::server::Server::open(o);
  if (!s || !(*s)->start().ok()) fail("cannot start the server");
  std::ifstream token_file(dir / "admin-token");
  std::string token;
  token_file >> token;
  httplib::Client c("127.0.0.1", (*s)->port());
  c.set_read_timeout(600, 0);
  c.set_bearer_token_auth(token);
  const std::string body = nodes_yaml(n, "n", "");
  Figures f = measure([&] {
    auto r = c.Post("/v1/nodes", body, "application/yaml");
    if (!r || r->status != 201) fail("POST /v1/nodes: " + (r ? std::to_string(r->status) + " " + r->body.substr(0, 300) : "no answer"));
  });
  (*s)->stop();
  s->reset();
  std::filesystem::remove_all(dir);
  return f;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<int> sizes = {1000, 10000, 100000};
  int reps = 3, old_max = 10000;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--reps") reps = std::atoi(argv[i + 1]);
    else if (flag == "--old-max") old_max = std::atoi(argv[i + 1]);
    else if (flag == "--sizes") {
      sizes.clear();
      std::stringstream list(argv[i + 1]);
      for (std::string x; std::getline(list, x, ',');) sizes.push_back(std::atoi(x.c_str()));
    } else {
      fail("unknown flag " + flag + " (--sizes A,B,C --reps N --old-max N)");
    }
  }
  spdlog::set_level(spdlog::level::warn);
  std::printf("%-28s %9s %10s %10s %14s\n", "path", "nodes", "cpu_s", "wall_s", "cpu_us/node");
  auto row = [&](const char* path, int n, const std::function<Figures(int)>& f) {
    std::vector<Figures> runs;
    for (int r = 0; r < reps; ++r) runs.push_back(f(n));
    const Figures m = median(runs);
    std::printf("%-28s %9d %10.3f %10.3f %14.2f\n", path, n, m.cpu_s, m.wall_s, m.cpu_s * 1e6 / n);
    std::fflush(stdout);
  };
  for (int n : sizes) row("sim add_nodes (batch)", n, sim_batch);
  for (int n : sizes) row("server POST /v1/nodes", n, server_batch);
  for (int n : sizes)
    if (n <= old_max) row("core add_node one at a time", n, one_at_a_time);
  return 0;
}
