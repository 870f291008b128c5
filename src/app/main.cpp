// allot: one binary, many subcommands (DESIGN.md, "Command-line contract").
#include <algorithm>
#include <iostream>
#include <string>
#include <string_view>
#include <vector>

#include "agent/pid_namespace.h"
#include "agent/shim.h"
#include "cli/cli_habits.h"
#include "cli/commands.h"

int main(int argc, char** argv) {
  // A replica's shim (agent/shim.h), exec'd by the agent for every replica: dispatched before the command line is
  // built, so it costs no more than the binary's loading. Hidden: not a command anyone types.
  if (argc > 1 && std::string_view(argv[1]) == allot::agent::kShimCommand) return allot::agent::replica_shim_main(argc, argv);
  // The first process of the agent's PID namespace for replicas (agent/pid_namespace.h), hidden the same way.
  if (argc > 1 && std::string_view(argv[1]) == allot::agent::kPidInitCommand) return allot::agent::pid_init_main(argc, argv);
  CLI::App app{"allot: task governance and topology-aware scheduling for accelerator clusters"};
  app.require_subcommand(1);
  allot::cli::Context ctx;
  allot::cli::add_sim_commands(app, ctx);
  allot::cli::add_topology_commands(app, ctx);
  allot::cli::add_server_command(app, ctx);
  allot::cli::add_agent_command(app, ctx);
  allot::cli::add_client_admin_commands(app, ctx);
  allot::cli::add_client_job_commands(app, ctx);
  allot::cli::add_client_access_commands(app, ctx);
  allot::cli::add_client_webhook_commands(app, ctx);
  allot::cli::add_client_admission_check_commands(app, ctx);
  allot::cli::add_client_worker_commands(app, ctx);
  allot::cli::add_client_usage_command(app, ctx);
  allot::cli::add_client_cluster_commands(app, ctx);
  allot::cli::add_demo_command(app, ctx);
  allot::cli::add_client_plan_commands(app, ctx);
  allot::cli::add_client_reservation_commands(app, ctx);
  allot::cli::add_kueue_commands(app, ctx);
  // Further command groups register here, one line each.
  allot::cli::add_habit_commands(app, ctx);  // help, version, completion; reads the commands above: keep it last
  // Client flags before the command go after it; an unknown command is named, with the closest known one.
  std::vector<std::string> args =
      allot::cli::kubectl_words(allot::cli::hoist_client_flags(std::vector<std::string>(argv + 1, argv + argc)));
  if (const std::string unknown = allot::cli::unknown_command_message(app, args); !unknown.empty()) {
    std::cerr << unknown;
    return 2;
  }
  std::reverse(args.begin(), args.end());  // CLI11 takes the arguments last first
  try {
    app.parse(args);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  }
  return ctx.exit_code;
}
