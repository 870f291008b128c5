// GET /v1/usage (docs/api.md, "Usage"): accelerator-hours used, borrowed, lent and lost, and queueing, from the
// hourly aggregates the journal builds (usage_ledger.h). Readers: admins and viewers see every team, a member only
// its own teams (so never another team's users).
#include <cctype>
#include <optional>
#include <string>

#include "server/api/api.h"
#include "server/writer/retention.h"
#include "server/views/usage_ledger.h"
#include "view/times.h"

namespace allot::server {
namespace {

using nlohmann::json;

// A point in time a query names: a duration back from now ("30d", "12h", "90m", "3600s"), an RFC 3339 time or Unix
// seconds. A bare number is Unix seconds, as every other time the API takes; a duration needs its unit.
Result<Time> query_time(const std::optional<std::string>& given, const char* key, Time now, Time fallback) {
  if (!given) return fallback;
  const std::string& text = *given;
  auto refused = [&] {
    return Error::invalid(std::string("query parameter ") + key + ": '" + text +
                          "' is neither a duration (a whole number with a unit s, m, h or d, as in 30d) nor a time "
                          "(RFC 3339, as in 2026-11-01T00:00:00Z)");
  };
  const bool duration = !text.empty() && std::isdigit(static_cast<unsigned char>(text.front())) &&
                        std::string_view("smhd").find(text.back()) != std::string_view::npos;
  if (duration) {
    auto d = parse_retention(text);
    if (!d || !*d) return refused();
    return now - **d;
  }
  auto t = view::parse_time_input(text, std::string("query parameter ") + key);
  if (!t) return refused();
  return *t;
}

json figures_json(const UsageFigures& f) {
  return {{"used_s", f.used_s},           {"borrowed_s", f.borrowed_s},         {"lent_s", f.lent_s},
          {"lost_preemption_s", f.lost_preemption_s}, {"lost_failure_s", f.lost_failure_s},
          {"queued_s", f.queued_s},       {"admitted", f.admitted}};
}

}  // namespace

json usage_report_json(const UsageReport& r) {
  json by = json::array();
  for (UsageDim d : r.by) by.push_back(usage_dim_name(d));
  json rows = json::array();
  for (const auto& row : r.rows) {
    json o;
    for (UsageDim d : r.by) {
      switch (d) {
        case UsageDim::kTeam: o["team"] = row.team; break;
        case UsageDim::kUser: o["user"] = row.user; break;
        case UsageDim::kPriority: o["priority"] = row.priority; break;
        case UsageDim::kInstanceType: o["instance_type"] = row.instance_type; break;
      }
    }
    o.update(figures_json(row.figures));
    rows.push_back(std::move(o));
  }
  return {{"since", view::rfc3339(r.since)}, {"until", view::rfc3339(r.until)}, {"by", std::move(by)},
          {"rows", std::move(rows)}, {"total", figures_json(r.total)}};
}

void add_usage_routes(Routes& http, Api& api) {
  route(http, api, "GET", "/v1/usage", Access::kReader, [&api](const auth::Caller& who, const httplib::Request& req, httplib::Response& res) {
    auto by = parse_usage_dims(req.has_param("by") ? req.get_param_value("by") : "team");
    if (!by) return answer(res, error_reply(by.error()));
    auto given = [&req](const char* key) {
      return req.has_param(key) ? std::optional<std::string>(req.get_param_value(key)) : std::nullopt;
    };
    run(api, who, req, res, [since_text = given("since"), until_text = given("until"), by = *by, who](Txn& txn) -> Result<Render> {
      const Time now = txn.now();
      auto since = query_time(since_text, "since", now, now - 30 * 86400);
      if (!since) return since.error();
      auto until = query_time(until_text, "until", now, now);
      if (!until) return until.error();
      if (*since >= *until)
        return Error::invalid("since (" + view::rfc3339(*since) + ") is not before until (" + view::rfc3339(*until) + ")");
      return Render([by, who, since = *since, until = *until, now](const ServerState& st) {
        std::function<bool(const std::string&)> visible;
        // Admins and viewers read every team; a member its own teams only (docs/security.md).
        if (who.role == auth::Role::kMember) visible = [&who](const std::string& team) { return who.in_team(team); };
        return json_reply(200, usage_report_json(st.usage.report(since, std::min(until, now), now, by, visible)));
      });
    });
  });
}

}  // namespace allot::server
