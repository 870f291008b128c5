// `allot usage` (docs/cli.md, "allot usage"): accelerator-hours used, borrowed, lent and lost, and queueing, from
// GET /v1/usage, as a table, CSV, JSON or YAML. The server checks --since, --until and --by and says what is wrong.
#include <iostream>
#include <map>
#include <memory>

#include "cli/client_run.h"
#include "cli/commands.h"
#include "client/cli_flags.h"
#include "client/output.h"
#include "client/usage_render.h"

namespace allot::cli {
namespace {

struct UsageArgs {
  client::ClientFlags flags;
  std::string since = "30d", until, by = "team";
  bool csv = false;  // -o csv: the session prints JSON, which this command writes as CSV instead
};

int run_usage(client::Session& s, UsageArgs& a) {
  std::map<std::string, std::string> query{{"since", a.since}, {"by", a.by}};
  if (!a.until.empty()) query["until"] = a.until;
  auto r = s.api().get(client::with_query("/v1/usage", query));
  if (a.csv) {
    if (!r) return client::report("usage", r.error());
    std::cout << client::usage_csv(*r);
    return 0;
  }
  return s.show("usage", r, [](const nlohmann::json& j) { return client::usage_table(j); });
}

}  // namespace

void add_client_usage_command(CLI::App& app, Context& ctx) {
  auto a = std::make_shared<UsageArgs>();
  auto* usage = app.add_subcommand("usage", "Accelerator-hours used, borrowed, lent and lost, and queueing, per team, user, "
                                            "priority class and instance type (as Slurm's sreport)");
  usage->add_option("--since", a->since, "From: a duration back from now (30d, 12h) or an RFC 3339 time; counted from the "
                                         "start of its hour")
      ->capture_default_str();
  usage->add_option("--until", a->until, "Up to: a duration back from now or an RFC 3339 time (default: now)");
  usage->add_option("--by", a->by, "Group by some of team, user, priority, instance_type (comma-separated)")->capture_default_str();
  client::add_client_flags(usage, a->flags, {"csv"});
  usage->callback([&ctx, a] {
    a->csv = a->flags.output == "csv";
    if (a->csv) a->flags.output = "json";
    auto s = client::Session::open(a->flags);
    ctx.exit_code = s ? run_usage(*s, *a) : client::report("usage", s.error());
  });
}

}  // namespace allot::cli
