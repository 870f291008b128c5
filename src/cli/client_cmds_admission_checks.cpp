// `allot admission-check create|list|delete` (docs/cli.md): what must say ready before an admitted job's replicas
// start (docs/scheduling.md, "Admission checks"). Admins make and delete them; every reader lists them (a member
// the checks of its teams' jobs).
#include <iostream>
#include <memory>

#include "cli/client_run.h"
#include "cli/commands.h"
#include "client/cli_flags.h"
#include "client/output.h"
#include "client/render.h"

namespace allot::cli {
namespace {

using client::ClientFlags;
using client::report;
using client::Session;
using nlohmann::json;

struct AdmissionCheckArgs {
  ClientFlags flags;
  std::string name, kind, url, teams, priority_classes, description;
};

std::string checks_table(const json& checks) {
  client::Table t({"NAME", "KIND", "TEAMS", "PRIORITY CLASSES", "URL", "DESCRIPTION"});
  for (const auto& c : checks) {
    const std::string teams = c["teams"].empty() ? "*" : client::join(c["teams"]);
    const std::string classes = c["priority_classes"].empty() ? "*" : client::join(c["priority_classes"]);
    t.add({client::text(c, "name"), client::text(c, "kind"), teams, classes, c.contains("url") ? client::text(c, "url") : "-",
           client::text(c, "description")});
  }
  return t.empty() ? "no admission checks\n" : t.str();
}

int run_check_create(Session& s, AdmissionCheckArgs& a) {
  json body = {{"kind", a.kind}, {"teams", client::comma_list(a.teams)}, {"priority_classes", client::comma_list(a.priority_classes)}};
  if (!a.url.empty()) body["url"] = a.url;
  if (!a.description.empty()) body["description"] = a.description;
  auto r = s.api().put("/v1/admission-checks/" + client::url_encode(a.name), body);
  if (!r) return report("admission-check create", r.error());
  return s.print(*r, [](const json& c) {
    return "admission check " + client::text(c, "name") + " (" + client::text(c, "kind") + ") applies to the jobs of " +
           (c["teams"].empty() ? std::string("every team") : "teams " + client::join(c["teams"])) +
           (c["priority_classes"].empty() ? std::string() : " of priority classes " + client::join(c["priority_classes"])) +
           " admitted from now on\n";
  });
}

int run_check_list(Session& s, AdmissionCheckArgs&) {
  auto r = s.api().get("/v1/admission-checks");
  return s.show("admission-check list", r, [](const json& c) { return checks_table(c); });
}

int run_check_delete(Session& s, AdmissionCheckArgs& a) {
  auto r = s.api().del("/v1/admission-checks/" + client::url_encode(a.name));
  if (!r) return report("admission-check delete", r.error());
  std::cout << "admission check " << a.name << " deleted; jobs waiting on it no longer do\n";
  return 0;
}

}  // namespace

void add_client_admission_check_commands(CLI::App& app, Context& ctx) {
  auto* top = app.add_subcommand("admission-check", "Admission checks: what must say ready before an admitted job starts");
  top->require_subcommand(1);

  auto c = std::make_shared<AdmissionCheckArgs>();
  auto* create = top->add_subcommand("create", "Make an admission check, or replace the one of that name (admin)");
  create->add_option("NAME", c->name, "The check's name (a DNS label)")->required();
  create->add_option("--kind", c->kind, "capacity_plan_active (the job's capacity plan is Active) or http (ask --url)")->required();
  create->add_option("--url", c->url, "kind http: where to POST the job's summary: http://HOST[:PORT]/PATH or https://...");
  create->add_option("--teams", c->teams, "Comma-separated teams whose jobs it applies to (without: every team)");
  create->add_option("--priority-classes", c->priority_classes,
                     "Comma-separated priority classes whose jobs it applies to (without: every job)");
  create->add_option("--description", c->description, "What it is for");
  client::add_client_flags(create, c->flags);
  on_run(create, ctx, c, "admission-check create", run_check_create);

  auto l = std::make_shared<AdmissionCheckArgs>();
  auto* list = top->add_subcommand("list", "List admission checks (a member: those of its teams' jobs, without URLs)");
  client::add_client_flags(list, l->flags);
  on_run(list, ctx, l, "admission-check list", run_check_list);

  auto d = std::make_shared<AdmissionCheckArgs>();
  auto* del = top->add_subcommand("delete", "Delete an admission check: jobs waiting on it stop waiting on it (admin)");
  del->add_option("NAME", d->name, "The check's name (allot admission-check list)")->required();
  client::add_client_flags(del, d->flags);
  on_run(del, ctx, d, "admission-check delete", run_check_delete);
}

}  // namespace allot::cli
