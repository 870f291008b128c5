// Webhooks (docs/api.md, "Webhooks"): made, listed and deleted by admins (cluster-wide or for a team) and by
// members (for their own teams, to the hosts the operator allowed). The secret is shown once, in the answer that
// makes the webhook; lists show the URL, the kinds and the last delivery, never the secret.
#include "auth/webhook_signature.h"
#include "server/api/api.h"
#include "server/outside/webhook_rules.h"
#include "server/outside/webhook_sender.h"
#include "view/times.h"

namespace allot::server {
namespace {

using nlohmann::json;

// Webhooks of one scope (the cluster, or one team) at most: every event is one POST per webhook that wants it.
constexpr size_t kMaxPerScope = 20;

json webhook_json(const WebhookInfo& w, const std::map<std::string, WebhookSender::LastDelivery>& last) {
  json events = json::array();
  for (store::NoticeKind k : w.webhook.events) events.push_back(store::notice_kind_name(k));
  json o = {{"id", w.webhook.id}, {"url", w.webhook.url}, {"events", events},
            {"created_at", view::rfc3339(w.created_at)}, {"created_by", w.created_by}};
  o["team"] = w.webhook.team.empty() ? json(nullptr) : json(w.webhook.team);
  if (!w.webhook.description.empty()) o["description"] = w.webhook.description;
  if (auto it = last.find(w.webhook.id); it != last.end()) {
    const auto& l = it->second;
    json d = {{"at", view::rfc3339_ms(l.at_ms)}, {"event", l.event}, {"seq", l.seq}, {"attempt", l.attempt},
              {"status", l.status}, {"ok", l.status >= 200 && l.status < 300}};
    if (!l.error.empty()) d["error"] = l.error;
    o["last_delivery"] = d;
    o["delivered"] = l.delivered;
    o["failed"] = l.failed;
  } else {
    o["delivered"] = 0;
    o["failed"] = 0;
  }
  return o;
}

// A webhook's team: readable (and deletable) by admins and that team's members.
bool may_manage(const auth::Caller& who, const store::WebhookRecord& w) {
  return who.admin() || (!w.team.empty() && who.acts_for_team(w.team));
}

// The request to make a webhook, checked against what the caller may make. The secret and id are the server's.
Result<store::WebhookRecord> parse_webhook_request(const json& b, const auth::Caller& who, const WebhookOptions& options) {
  if (auto st = only_keys(b, {"url", "events", "team", "description"}, "webhook"); !st) return st.error();
  store::WebhookRecord w;
  if (!b.contains("url") || !b["url"].is_string()) return Error::invalid("webhook: url is required (http:// or https://)");
  w.url = b["url"].get<std::string>();
  auto url = parse_webhook_url(w.url);
  if (!url) return url.error();
  if (!b.contains("events") || !b["events"].is_array() || b["events"].empty())
    return Error::invalid("webhook: events is required: a list of one or more of " + store::notice_kind_list());
  for (const auto& e : b["events"]) {
    const std::string name = e.is_string() ? e.get<std::string>() : e.dump();
    auto k = store::parse_notice_kind(name);
    if (!k) return Error::invalid("webhook: unknown event kind '" + name + "'; kinds: " + store::notice_kind_list());
    if (std::find(w.events.begin(), w.events.end(), *k) != w.events.end())
      return Error::invalid("webhook: event kind " + name + " is listed twice");
    w.events.push_back(*k);
  }
  if (b.contains("team") && !b["team"].is_null()) {
    if (!b["team"].is_string()) return Error::invalid("webhook: team must be a team name");
    w.team = b["team"].get<std::string>();
    if (auto st = check_name(NameKind::kTeam, w.team); !st) return Error::invalid("webhook: " + st.error().message);
  }
  if (b.contains("description")) {
    if (!b["description"].is_string() || b["description"].get<std::string>().size() > 256)
      return Error::invalid("webhook: description must be a text of at most 256 characters");
    w.description = b["description"].get<std::string>();
  }
  if (!w.team.empty())
    for (store::NoticeKind k : w.events)
      if (!store::is_job_notice(k))
        return Error::invalid("webhook: " + std::string(store::notice_kind_name(k)) +
                              " is about nodes, which a team's webhook does not receive; a team's webhook takes job kinds "
                              "(job.*), a cluster-wide webhook (an admin's, without team) every kind");
  if (!who.admin()) {
    if (w.team.empty())
      return denied(who, "making a cluster-wide webhook", "an admin token; a member makes webhooks for its own teams (team: NAME)");
    if (!who.acts_for_team(w.team))
      return denied(who, "making a webhook of team " + w.team, "an admin token or a member token of team " + w.team);
    if (!host_allowed(url->host, options.hosts))
      return denied(who, "making a webhook that posts to " + url->host,
                    options.hosts.empty()
                        ? std::string("an admin token: this server lets members post to no host (allot server --webhook-hosts lists those they may)")
                        : "an admin token, or a host allowed by allot server --webhook-hosts (" + [&] {
                            std::string l;
                            for (const auto& h : options.hosts) l += (l.empty() ? "" : ", ") + h;
                            return l;
                          }() + ")");
  }
  return w;
}

}  // namespace

void add_webhook_routes(Routes& http, Api& api) {
  route(http, api, "POST", "/v1/webhooks", Access::kMember, [&api](const auth::Caller& who, const httplib::Request& req, httplib::Response& res) {
    if (auto bad = check_content_type(req)) return answer(res, *bad);
    auto body = json_body(req);
    if (!body) return answer(res, error_reply(body.error()));
    auto rec = parse_webhook_request(*body, who, api.options.webhooks);
    if (!rec) {
      if (rec.error().code == ErrorCode::kPermissionDenied) return refuse(api, who, req, res, rec.error());
      return answer(res, error_reply(rec.error()));
    }
    rec->id = auth::new_webhook_id();
    rec->secret = auth::new_webhook_secret();
    run(api, who, req, res, [w = std::move(*rec), &api](Txn& txn) mutable -> Result<Render> {
      if (!w.team.empty() && (!txn.cluster().find_team(w.team) || txn.state().removed_teams.count(w.team)))
        return Error::not_found("webhook: no team named " + w.team);
      if (txn.state().webhooks.count(w.id)) return Error::exists("webhook: the fresh id " + w.id + " is taken; send the request again");
      size_t same_scope = 0;
      for (const auto& [id, other] : txn.state().webhooks) same_scope += other.webhook.team == w.team;
      if (same_scope >= kMaxPerScope)
        return Error::precondition("webhook: " + (w.team.empty() ? std::string("the cluster") : "team " + w.team) + " has " +
                                   std::to_string(kMaxPerScope) + " webhooks already, the most one scope may have; delete one first");
      const std::string id = w.id, secret = w.secret;
      if (auto st = txn.apply(store::CreateWebhook{std::move(w)}); !st) return st.error();
      return Render([id, secret, &api](const ServerState& st) -> Reply {
        json out = webhook_json(st.webhooks.at(id), api.webhooks.last_deliveries());
        out["secret"] = secret;  // shown this once
        return json_reply(201, out);
      });
    });
  });
  route(http, api, "GET", "/v1/webhooks", Access::kMember, [&api](const auth::Caller& who, const httplib::Request& req, httplib::Response& res) {
    run(api, who, req, res, [who, &api](Txn&) -> Result<Render> {
      return Render([who, &api](const ServerState& st) {
        const auto last = api.webhooks.last_deliveries();
        json out = json::array();
        for (const auto& [id, w] : st.webhooks)
          if (may_manage(who, w.webhook)) out.push_back(webhook_json(w, last));
        return json_reply(200, out);
      });
    });
  });
  route(http, api, "DELETE", R"(/v1/webhooks/([^/]+))", Access::kMember, [&api](const auth::Caller& who, const httplib::Request& req, httplib::Response& res) {
    run(api, who, req, res, [id = param(req), who](Txn& txn) -> Result<Render> {
      auto it = txn.state().webhooks.find(id);
      // Another team's webhook reads as a missing one: ids are not for other teams to learn.
      if (it == txn.state().webhooks.end() || !may_manage(who, it->second.webhook))
        return Error::not_found("no webhook with id " + id + " (allot webhook list shows them)");
      if (auto st = txn.apply(store::DeleteWebhook{id}); !st) return st.error();
      return Render([](const ServerState&) { return Reply{204, "", ""}; });
    });
  });
}

}  // namespace allot::server
