// `allot workers` (docs/cli.md): a manager's worker clusters (docs/multicluster.md), for admins and viewers: each
// one's URL, when it last answered and whether its lease ran out.
#include <memory>

#include "cli/client_run.h"
#include "cli/commands.h"
#include "client/cli_flags.h"
#include "client/output.h"
#include "client/render.h"

namespace allot::cli {
namespace {

using client::ClientFlags;
using client::Session;
using nlohmann::json;

struct WorkersArgs {
  ClientFlags flags;
};

std::string workers_table(const json& w) {
  client::Table t({"NAME", "URL", "LAST ANSWER", "LOST"});
  for (const auto& c : w.value("workers", json::array()))
    t.add({client::text(c, "name"), client::text(c, "url"), c["last_answer"].is_null() ? "never" : client::text(c, "last_answer"),
           c.value("lost", false) ? "yes" : "no"});
  if (t.empty()) return "not a manager: no worker clusters (allot server --workers FILE)\n";
  return t.str() + "teams dispatched: " + client::join(w["teams"]) + "; lease " + std::to_string(w.value("lease_s", 0)) + " s\n";
}

int run_workers(Session& s, WorkersArgs&) {
  auto r = s.api().get("/v1/workers");
  return s.show("workers", r, [](const json& w) { return workers_table(w); });
}

}  // namespace

void add_client_worker_commands(CLI::App& app, Context& ctx) {
  auto a = std::make_shared<WorkersArgs>();
  auto* cmd = app.add_subcommand("workers", "A manager's worker clusters: URL, last answer, lease (admin, viewer)");
  client::add_client_flags(cmd, a->flags);
  on_run(cmd, ctx, a, "workers", run_workers);
}

}  // namespace allot::cli
