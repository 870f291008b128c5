#pragma once
// Each group of `allot` subcommands registers itself on the CLI11 app. A command's callback stores its exit
// code in `exit_code` (0 success, 1 a check failed, 2 invalid input, 3 a runtime failure such as a server that
// cannot be reached), and main returns it.
#include <CLI/CLI.hpp>

namespace allot::cli {

struct Context {
  int exit_code = 0;
};

void add_sim_commands(CLI::App& app, Context& ctx);       // sim run | replay | bench
void add_replay_command(CLI::App& sim, Context& ctx);     // sim replay (called by add_sim_commands)
void add_bench_command(CLI::App& sim, Context& ctx);      // sim bench (called by add_sim_commands)
void add_topology_commands(CLI::App& app, Context& ctx);  // topology import | slurm-conf | mermaid
void add_demo_command(CLI::App& app, Context& ctx);       // demo
void add_server_command(CLI::App& app, Context& ctx);     // server
void add_agent_command(CLI::App& app, Context& ctx);      // agent
void add_client_admin_commands(CLI::App& app, Context& ctx);    // apply | team | allocation | policy | priority-class
void add_client_job_commands(CLI::App& app, Context& ctx);      // submit | jobs | describe | cancel | logs
void add_client_job_change_commands(CLI::App& app, Context& ctx);  // hold | release | set priority | delete
void add_client_access_commands(CLI::App& app, Context& ctx);   // token | audit | config
void add_client_webhook_commands(CLI::App& app, Context& ctx);  // webhook create | list | delete
void add_client_admission_check_commands(CLI::App& app, Context& ctx);  // admission-check create | list | delete
void add_client_worker_commands(CLI::App& app, Context& ctx);  // workers (a manager's worker clusters)
void add_client_usage_command(CLI::App& app, Context& ctx);     // usage (client_cmds_usage.cpp)
// node adopt (a join token for one node), added to the `node` group that add_client_cluster_commands makes
void add_node_adopt_command(CLI::App& node, Context& ctx);
// nodes | teams | events | node ... | topology show (after add_topology_commands: it extends `topology`)
void add_client_cluster_commands(CLI::App& app, Context& ctx);
void add_client_plan_commands(CLI::App& app, Context& ctx);     // plans | plan create | describe | delete
void add_client_reservation_commands(CLI::App& app, Context& ctx);  // reservation create | list | delete
void add_kueue_commands(CLI::App& app, Context& ctx);  // export kueue | import kueue

}  // namespace allot::cli
