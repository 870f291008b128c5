// allot: one binary, many subcommands (DESIGN.md, "Command-line contract").
#include <iostream>

#include "cli/commands.h"

int main(int argc, char** argv) {
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
  allot::cli::add_client_cluster_commands(app, ctx);
  allot::cli::add_demo_command(app, ctx);
  // Further command groups register here, one line each.
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  }
  return ctx.exit_code;
}
