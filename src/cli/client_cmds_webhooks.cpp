// `allot webhook create|list|delete` (docs/cli.md): webhooks of the cluster (admins) or of a team (admins, and
// the team's members to the hosts the server allows). The secret is printed once, by create.
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

struct WebhookArgs {
  ClientFlags flags;
  std::string url, events, team, description, id;
};

std::string webhooks_table(const json& hooks, int64_t now) {
  client::Table t({"ID", "SCOPE", "EVENTS", "URL", "DELIVERED", "FAILED", "LAST", "DESCRIPTION"});
  for (const auto& w : hooks) {
    std::string last = "-";
    if (w.contains("last_delivery")) {
      const json& d = w["last_delivery"];
      last = client::ago(client::time_at(d, "at"), now) + " ago " +
             (d.value("ok", false) ? "ok " + client::number(d["status"])
                                   : "failed (try " + client::number(d["attempt"]) + "): " + client::text(d, "error"));
    }
    const std::string scope = w["team"].is_null() ? "cluster" : "team " + client::text(w, "team");
    t.add({client::text(w, "id"), scope, client::join(w["events"]), client::text(w, "url"), client::number(w["delivered"]),
           client::number(w["failed"]), last, client::text(w, "description")});
  }
  return t.empty() ? "no webhooks\n" : t.str();
}

int run_webhook_create(Session& s, WebhookArgs& a) {
  json body = {{"url", a.url}, {"events", client::comma_list(a.events)}};
  if (!a.team.empty()) body["team"] = a.team;
  if (!a.description.empty()) body["description"] = a.description;
  auto r = s.api().post("/v1/webhooks", body);
  if (!r) return report("webhook create", r.error());
  return s.print(*r, [](const json& w) {
    // The secret alone on stdout, so `S=$(allot webhook create ...)` keeps it; what was made goes to stderr.
    std::cerr << "webhook " << client::text(w, "id") << " made ("
              << (w["team"].is_null() ? std::string("cluster-wide") : "team " + client::text(w, "team"))
              << ", events " << client::join(w["events"]) << "); its signing secret is shown only now\n";
    return client::text(w, "secret") + "\n";
  });
}

int run_webhook_list(Session& s, WebhookArgs&) {
  auto r = s.api().get("/v1/webhooks");
  return s.show("webhook list", r, [](const json& w) { return webhooks_table(w, client::unix_now()); });
}

int run_webhook_delete(Session& s, WebhookArgs& a) {
  auto r = s.api().del("/v1/webhooks/" + client::url_encode(a.id));
  if (!r) return report("webhook delete", r.error());
  std::cout << "webhook " << a.id << " deleted\n";
  return 0;
}

}  // namespace

void add_client_webhook_commands(CLI::App& app, Context& ctx) {
  auto* hook = app.add_subcommand("webhook", "Webhooks: the server POSTs chosen events, signed, to a URL");
  hook->require_subcommand(1);

  auto c = std::make_shared<WebhookArgs>();
  auto* create = hook->add_subcommand("create", "Make a webhook and print its signing secret (shown only this once)");
  create->add_option("--url", c->url, "Where to POST: http://HOST[:PORT]/PATH or https://...")->required();
  create->add_option("--events", c->events,
                     "Comma-separated kinds: job.started, job.succeeded, job.failed, job.cancelled, job.preempted, "
                     "job.requeued, node.unhealthy, node.replaced")
      ->required();
  create->add_option("--team", c->team, "The team whose jobs' events it receives (without: cluster-wide, admins only)");
  create->add_option("--description", c->description, "What it is for");
  client::add_client_flags(create, c->flags);
  on_run(create, ctx, c, "webhook create", run_webhook_create);

  auto l = std::make_shared<WebhookArgs>();
  auto* list = hook->add_subcommand("list", "List webhooks: id, scope, events, URL, deliveries, the last one (never secrets)");
  client::add_client_flags(list, l->flags);
  on_run(list, ctx, l, "webhook list", run_webhook_list);

  auto d = std::make_shared<WebhookArgs>();
  auto* del = hook->add_subcommand("delete", "Delete a webhook: nothing more is sent to it");
  del->add_option("ID", d->id, "Webhook id (allot webhook list)")->required();
  client::add_client_flags(del, d->flags);
  on_run(del, ctx, d, "webhook delete", run_webhook_delete);
}

}  // namespace allot::cli
