// Users' endpoints for jobs: submit, list, describe, cancel, logs.
#include "config/container_rules.h"
#include "config/spec_yaml.h"
#include "core/labels.h"
#include "server/agents.h"
#include "server/api.h"
#include "server/retention.h"
#include "server/start_gate.h"
#include "server/views.h"
#include "view/job_refs.h"
#include "view/state_json.h"

namespace allot::server {
namespace {

using nlohmann::json;
const YamlContext kBody{"request body", "", 0};

Render job_render(const std::string& name, const auth::Caller& who, int status = 200) {
  return [name, who, status](const ServerState& st) -> Reply {
    const Job* j = st.cluster.find_job(name);
    if (!j) return error_reply(Error::not_found("no job named " + name));
    json v = view::job_json(st.cluster, *j, /*with_history=*/true, view::Times::kRfc3339);
    add_resilience(st, *j, static_cast<Time>(system_clock_ms() / 1000), v);
    add_preemption_records(st, *j, who, v);
    add_bound_cpus(st, *j, v);
    // Running, with replicas whose agents pull the image before the start (agents.h, note_pulls).
    if (auto nodes = pulling_nodes(st, *j); !nodes.empty()) v["pulling_image_on"] = nodes;
    // Running, its replicas not yet handed to agents: the stops it waits for (start_gate.h).
    if (auto waits = start_waits(st, *j, job_names_for(who)); !waits.empty()) v["waits_for_stops"] = std::move(waits);
    view::hide_job_refs(v, job_names_for(who));
    return json_reply(status, v);
  };
}

// A job's volumes against what its team's settings allow (config/container_rules.h), and away from the checkpoint
// root, which the agents mount themselves. An unknown team is left to the submission, which names the teams.
Status check_container(const ServerOptions& options, const ClusterState& cluster, const JobSpec& spec) {
  if (spec.container.volumes.empty()) return ok_status();
  const Team* team = cluster.find_team(spec.team);
  if (!team) return ok_status();
  if (auto st = config::check_host_paths_allowed(spec.container, spec.team, team->spec.containers); !st)
    return Error::invalid("job " + spec.name + ": " + st.error().message);
  if (auto root = config::normal_path(options.checkpoint_dir, "checkpoint_dir"); root && !options.checkpoint_dir.empty())
    for (size_t i = 0; i < spec.container.volumes.size(); ++i)
      if (config::path_within(spec.container.volumes[i].path, *root))
        return Error::invalid("job " + spec.name + ": volume " + std::to_string(i) + " (path " + spec.container.volumes[i].path +
                              ") is inside the checkpoint root " + *root + ", whose job directories allot mounts into containers itself; "
                              "mount it elsewhere");
  return ok_status();
}

// GET /v1/jobs pages: jobs are listed in submission order (their index, which never changes), and the
// continue token names the index of the next job to list. It is opaque to clients.
constexpr int64_t kDefaultJobPage = 500;
constexpr int64_t kMaxJobPage = 5000;
// A listing that finds every seat taken (ServerOptions::max_listings) waits this long for one, then gets 503.
constexpr auto kListingWait = std::chrono::seconds(1);
constexpr int kListingRetryAfterS = 1;

std::string continue_token(size_t next) { return "j" + std::to_string(next); }

Result<size_t> parse_continue(const std::string& token) {
  if (token.empty()) return size_t{0};
  if (token.size() < 2 || token.size() > 13 || token[0] != 'j' || token.find_first_not_of("0123456789", 1) != std::string::npos)
    return Error::invalid("the continue token '" + printable(token, 40) + "' is not one this server gave; pass the one of the previous page");
  return static_cast<size_t>(std::stoull(token.substr(1)));
}

std::string state_names() {
  std::string out;
  for (auto s : {JobState::kPending, JobState::kRunning, JobState::kSuspended, JobState::kSucceeded, JobState::kFailed,
                 JobState::kCancelled})
    out += (out.empty() ? "" : ", ") + std::string(job_state_name(s));
  return out;
}

void submit_route(Routes& http, Api& api) {
  route(http, api, "POST", "/v1/jobs", Access::kMember, [&api](const auth::Caller& who, const httplib::Request& req, httplib::Response& res) {
    if (auto bad = check_content_type(req)) return answer(res, *bad);
    auto doc = yaml_body(req);
    if (!doc) return answer(res, error_reply(doc.error()));
    auto spec = parse_job_spec(*doc, api.catalog, kBody);
    if (!spec) return answer(res, error_reply(spec.error()));
    // The audit trail names the job a submission names, accepted or refused.
    const std::string name = spec->name;
    if (!who.acts_for_team(spec->team))
      return refuse(api, who, req, res,
                    denied(who, "submitting a job of team " + spec->team, "an admin token or a member token of team " + spec->team), name);
    run(api, who, req, res, [&api, spec = std::move(*spec), who](Txn& txn) -> Result<Render> {
      if (txn.state().removed_teams.count(spec.team))
        return Error::invalid("job " + spec.name + ": team '" + spec.team + "' was removed");
      if (auto st = check_container(api.options, txn.cluster(), spec); !st) return st.error();
      auto st = txn.apply(store::Submit{spec});
      if (!st) return st.error();
      return job_render(spec.name, who, 201);
    }, name);
  });
}

void read_routes(Routes& http, Api& api) {
  route(http, api, "GET", "/v1/jobs", Access::kReader, [&api](const auth::Caller& who, const httplib::Request& req, httplib::Response& res) {
    std::optional<JobState> state;
    if (req.has_param("state")) {
      state = parse_job_state(req.get_param_value("state"));
      if (!state)
        return answer(res, error_reply(Error::invalid("unknown job state '" + req.get_param_value("state") + "'; states: " + state_names())));
    }
    std::string team = req.get_param_value("team");
    auto selector = parse_label_selector(req.get_param_value("selector"));
    if (!selector) return answer(res, error_reply(selector.error()));
    // Members list the jobs of their own teams; the rest of the cluster they see in aggregate (teams, nodes).
    if (who.role == auth::Role::kMember && !team.empty() && !who.in_team(team))
      return answer(res, error_reply(denied(who, "listing the jobs of team " + team, "an admin or viewer token, or a member token of team " + team)));
    const bool own_teams_only = who.role == auth::Role::kMember;
    auto limit = query_int(req, "limit", kDefaultJobPage, kMaxJobPage);
    if (!limit) return answer(res, error_reply(limit.error()));
    if (*limit == 0) return answer(res, error_reply(Error::invalid("query parameter limit must be 1.." + std::to_string(kMaxJobPage))));
    auto from = parse_continue(req.get_param_value("continue"));
    if (!from) return answer(res, error_reply(from.error()));
    run(api, who, req, res, [state, team, limit = static_cast<size_t>(*limit), from = *from, who, own_teams_only,
                             selector = std::move(*selector), &seats = api.listings](Txn& txn) -> Result<Render> {
      const Team* t = nullptr;
      if (!team.empty() && !(t = txn.cluster().find_team(team))) return Error::not_found("no team named " + team);
      if (from > txn.cluster().jobs.size()) return Error::invalid("the continue token is not one this server gave");
      const TeamId team_id = t ? t->id : TeamId{};
      // One page is rendered per call, on the request's thread from the published view (Writer::read), while
      // holding one of the listing seats (read_seats.h): so listers neither hold the writer nor, past the seats,
      // take the cores it needs.
      return Render([state, team_id, limit, from, who, own_teams_only, selector, &seats](const ServerState& st) -> Reply {
        auto seat = seats.take(kListingWait);
        if (!seat) {
          Reply busy = error_reply(503, "Unavailable",
                                   "this server is rendering " + std::to_string(seats.seats()) +
                                       " job listings already (allot server --max-listings); retry after a second");
          busy.retry_after_s = kListingRetryAfterS;
          return busy;
        }
        const auto& jobs = st.cluster.jobs;
        auto wanted = [&](const Job& j) {
          return !j.deleted && (!state || j.state == *state) && (!team_id.valid() || j.team == team_id) &&
                 selector_matches(selector, j.spec.labels) &&
                 (!own_teams_only || who.in_team(st.cluster.teams[j.team.index()].spec.name));
        };
        const view::SeesTeamJobs sees = job_names_for(who);
        // The body is written item by item: no JSON tree of the whole page is built (a 5,000-job page is
        // megabytes), each job's view is dumped and dropped.
        std::string body = R"({"items":[)";
        size_t listed = 0;
        size_t i = from;
        for (; i < jobs.size() && listed < limit; ++i) {
          if (!wanted(jobs[i])) continue;
          json item = view::job_json(st.cluster, jobs[i], /*with_history=*/false, view::Times::kRfc3339);
          view::hide_job_refs(item, sees);
          if (listed++) body += ',';
          body += item.dump(-1, ' ', false, json::error_handler_t::replace);
        }
        body += ']';
        while (i < jobs.size() && !wanted(jobs[i])) ++i;  // no token when no further job would be listed
        if (i < jobs.size()) body += R"(,"continue":")" + continue_token(i) + '"';
        body += '}';
        return Reply{200, std::move(body), "application/json"};
      });
    });
  });
  route(http, api, "GET", R"(/v1/jobs/([^/]+))", Access::kReader, [&api](const auth::Caller& who, const httplib::Request& req, httplib::Response& res) {
    run(api, who, req, res, [name = param(req), who](Txn& txn) -> Result<Render> {
      const Job* j = txn.cluster().find_job(name);
      if (!j) return job_not_found(txn.cluster(), name);
      if (who.role == auth::Role::kMember) {
        const std::string& team = txn.cluster().teams[j->team.index()].spec.name;
        if (!who.in_team(team))
          return refuse_job(txn, who, name, denied(who, "reading job " + name, "an admin or viewer token, or a member token of team " + team));
      }
      return job_render(name, who);
    });
  });
  route(http, api, "POST", R"(/v1/jobs/([^/]+)/cancel)", Access::kMember, [&api](const auth::Caller& who, const httplib::Request& req, httplib::Response& res) {
    run(api, who, req, res, [name = param(req), who](Txn& txn) -> Result<Render> {
      const Job* j = txn.cluster().find_job(name);
      if (!j) return job_not_found(txn.cluster(), name);
      const std::string& team = txn.cluster().teams[j->team.index()].spec.name;
      if (!who.acts_for_team(team))
        return refuse_job(txn, who, name, denied(who, "cancelling job " + name, "an admin token or a member token of team " + team));
      auto st = txn.apply(store::Cancel{name});
      if (!st) return st.error();
      return job_render(name, who);
    });
  });
  route(http, api, "GET", R"(/v1/jobs/([^/]+)/logs)", Access::kReader, [&api](const auth::Caller& who, const httplib::Request& req, httplib::Response& res) {
    auto replica = query_int(req, "replica", 0, 1'000'000);
    if (!replica) return answer(res, error_reply(replica.error()));
    auto tail = query_int(req, "tail", 0, int64_t{1} << 40);
    if (!tail) return answer(res, error_reply(tail.error()));
    const std::string name = param(req);
    // The job must exist and have that replica; the log itself is read off the writer thread.
    Reply check = api.writer.call([name, rank = *replica, who](Txn& txn) -> Result<Render> {
      const Job* j = txn.cluster().find_job(name);
      if (!j) return job_not_found(txn.cluster(), name);
      // Logs hold what a job prints: secrets included. Only its own team reads them.
      const std::string& team = txn.cluster().teams[j->team.index()].spec.name;
      if (!who.sees_team(team))
        return refuse_job(txn, who, name,
                          denied(who, "reading the logs of job " + name, "an admin token or a member or viewer token of team " + team));
      int replicas = 0;
      for (const auto& ps : j->spec.pod_sets) replicas += ps.replicas;
      if (rank >= replicas)
        return Error::invalid("job " + name + " has replicas 0.." + std::to_string(replicas - 1) + ", not " + std::to_string(rank));
      return Render([](const ServerState&) { return Reply{200, "", "text/plain"}; });
    }, call_context(who, req));
    if (check.status != 200) return answer(res, check);
    auto text = api.logs.read(name, static_cast<int>(*replica), static_cast<size_t>(*tail));
    if (!text) return answer(res, error_reply(text.error()));
    answer(res, Reply{200, std::move(*text), "text/plain; charset=utf-8"});
  });
}

}  // namespace

void add_job_routes(Routes& http, Api& api) {
  submit_route(http, api);
  read_routes(http, api);
  add_job_change_routes(http, api);
}

}  // namespace allot::server
