// `allot sim run FILE [--json] [--verbose]`: runs a scenario file and checks its expectations.
// Exit codes: 0 every expectation holds, 1 one does not (each printed with the actual values), 2 the file is
// invalid (printed with its line and what is wrong).
#include <iostream>

#include "cli/commands.h"
#include "sim/scenario_run.h"
#include "view/preemption_json.h"
#include "view/state_json.h"

namespace allot::cli {
namespace {

struct SimRunArgs {
  std::string file;
  bool json = false;
  bool verbose = false;
};

int sim_run(const SimRunArgs& a) {
  auto sc = sim::load_scenario_file(a.file);
  if (!sc) {
    std::cerr << "invalid scenario: " << sc.error().message << "\n";
    return 2;
  }
  auto rep = sim::run_scenario(*sc);
  if (!rep) {
    std::cerr << "invalid scenario: " << a.file << ": " << rep.error().message << "\n";
    return 2;
  }
  for (const auto& w : rep->warnings) std::cerr << "warning: " << a.file << ": " << w << "\n";
  const ClusterState& s = rep->final_state;
  if (a.json) {
    nlohmann::json out = {{"name", sc->name}, {"passed", rep->passed}, {"time", rep->end_time}};
    out["jobs"] = nlohmann::json::array();
    for (const Job& j : s.jobs) {
      out["jobs"].push_back(view::job_json(s, j));
      view::add_time_limit(out["jobs"].back(), j, rep->end_time);  // only jobs with a limit have its keys
    }
    out["teams"] = nlohmann::json::array();
    for (const Team& t : s.teams) out["teams"].push_back(view::team_json(s, t));
    out["preemptions"] = nlohmann::json::array();
    for (const auto& p : rep->preemptions) {
      nlohmann::json g = view::preemption_json(p.group);
      g["at"] = p.at;
      out["preemptions"].push_back(std::move(g));
    }
    // Only scenarios with plans have the key, so the output of every other scenario stays as it was.
    if (!s.plans.empty()) {
      out["plans"] = nlohmann::json::array();
      for (const Plan& p : s.plans) out["plans"].push_back(view::plan_json(s, p));
    }
    out["failures"] = rep->failures;
    std::cout << out.dump(2) << "\n";
  } else {
    if (a.verbose || !rep->passed)
      for (const auto& l : rep->log) std::cout << l << "\n";
    for (const auto& f : rep->failures) std::cout << "FAIL " << f << "\n";
    std::cout << (rep->passed ? "PASS " : "FAIL ") << (sc->name.empty() ? a.file : sc->name) << ": " << rep->checks
              << " expectations checked, " << rep->failures.size() << " failed\n";
  }
  return rep->passed ? 0 : 1;
}

}  // namespace

void add_sim_commands(CLI::App& app, Context& ctx) {
  auto* sim = app.add_subcommand("sim", "Simulate: run scenario files, replay traces, measure the core");
  sim->require_subcommand(1);
  auto args = std::make_shared<SimRunArgs>();
  auto* run = sim->add_subcommand("run", "Run a scenario file and check its expectations (exit 0 pass, 1 fail, 2 invalid)");
  run->add_option("file", args->file, "Scenario YAML file")->required();
  run->add_flag("--json", args->json, "Print the final state of all jobs and teams, and every preemption record, as JSON");
  run->add_flag("-v,--verbose", args->verbose, "Print what happened, step by step");
  run->callback([args, &ctx] { ctx.exit_code = sim_run(*args); });
  add_replay_command(*sim, ctx);
  add_bench_command(*sim, ctx);
}

}  // namespace allot::cli
