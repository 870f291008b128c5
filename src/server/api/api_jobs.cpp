// Users' endpoints for jobs: submit, list, describe, cancel, logs.
#include "config/container_rules.h"
#include "config/spec_yaml.h"
#include "core/model/array.h"
#include "core/model/dependency.h"
#include "core/model/labels.h"
#include "server/outside/admission_checks.h"
#include "server/lifecycle/agents.h"
#include "server/api/arrays.h"
#include "server/api/api.h"
#include "server/writer/retention.h"
#include "server/lifecycle/start_gate.h"
#include "server/views/views.h"
#include "view/job_refs.h"
#include "view/state_json.h"
#include "view/times.h"

namespace allot::server {
namespace {

using nlohmann::json;
// Jobs in one submission at most: its check copies the state once, and its answer renders every job.
constexpr size_t kMaxBatchJobs = 1000;

// The last rule on the job's output that fired (store::LogRuleFired): {"kind", "rule", "pattern", "rank", "attempt",
// "at", "line"?}. The line is the job's own output, so it is there only for those who may read the job's logs
// (its team, and admins), as GET /v1/jobs/{job}/logs decides; the reason never holds it.
void add_log_rule(const ServerState& st, const Job& j, const auth::Caller& who, json& v) {
  auto it = st.log_rules_fired.find(j.id.index());
  if (it == st.log_rules_fired.end()) return;
  const LogRuleSeen& seen = it->second;
  json o = {{"kind", log_rule_kind_name(seen.firing.kind)},
            {"rule", log_rule_name(seen.firing.kind, seen.firing.index)},
            {"rank", seen.firing.rank},
            {"attempt", seen.attempt},
            {"at", view::time_json(seen.at, view::Times::kRfc3339)}};
  if (const std::string* p = log_rule_pattern(j.spec.log_rules, seen.firing.kind, seen.firing.index)) o["pattern"] = *p;
  if (!seen.firing.line.empty() && who.sees_team(st.cluster.teams[j.team.index()].spec.name)) o["line"] = seen.firing.line;
  v["log_rule"] = std::move(o);
}

// A waiting job holding the backfill reservation (policy.backfill): from when, and on which nodes
// (docs/scheduling.md, "Backfill").
void add_reservation(const ServerState& st, const Job& j, json& v) {
  if (!st.reservation || st.reservation->holder != j.id || !is_waiting(j.state)) return;
  v["reservation"] = {{"start_at", view::time_json(st.reservation->at, view::Times::kRfc3339)}, {"nodes", st.reservation->nodes}};
}

Render job_render(const std::string& name, const auth::Caller& who, int status = 200) {
  return [name, who, status](const ServerState& st) -> Reply {
    const Job* j = st.cluster.find_job(name);
    if (!j) return error_reply(Error::not_found("no job named " + name));
    json v = view::job_json(st.cluster, *j, /*with_history=*/true, view::Times::kRfc3339);
    const Time now = static_cast<Time>(system_clock_ms() / 1000);
    add_resilience(st, *j, now, v);
    view::add_time_limit(v, *j, now, view::Times::kRfc3339);
    add_preemption_records(st, *j, who, v);
    add_bound_cpus(st, *j, v);
    add_log_rule(st, *j, who, v);
    add_reservation(st, *j, v);
    // Running, with replicas whose agents pull the image before the start (agents.h, note_pulls).
    if (auto nodes = pulling_nodes(st, *j); !nodes.empty()) v["pulling_image_on"] = nodes;
    // Running, its replicas not yet handed to agents: the stops it waits for (start_gate.h).
    if (auto waits = start_waits(st, *j, job_names_for(who)); !waits.empty()) v["waits_for_stops"] = std::move(waits);
    // ... and, after the server started from its journal, the agents it has not heard from yet (start_gate.h).
    if (auto w = recovery_waits(st, *j); !w.is_null()) {
      w["until"] = view::rfc3339_ms(w["until_ms"].get<int64_t>());
      w.erase("until_ms");
      v["waits_for_first_heartbeats"] = std::move(w);
    }
    // ... and the admission checks that have not answered ready for its run (admission_checks.h).
    add_check_waits(st, *j, v);
    view::hide_job_refs(v, *j, job_names_for(who));
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

// What a submission must pass beyond the core's own checks: the team still exists, the volumes are allowed.
Status check_submission(const Api& api, const ServerState& st, const JobSpec& spec) {
  if (st.removed_teams.count(spec.team)) return Error::invalid("job " + spec.name + ": team '" + spec.team + "' was removed");
  return check_container(api.options, st.cluster, spec);
}

// Every job of a submission submitted to a scratch copy of the state, in order, so that later jobs see earlier
// ones (two jobs of one name are refused): the jobs as a submission would answer them at once (Pending, before
// any scheduling), or the first refusal. The state itself is not touched.
Result<nlohmann::json> try_submissions(const Api& api, const ServerState& st, const std::vector<JobSpec>& specs, Time now) {
  // Jobs that name one another (after): a cycle, or a name listed after the job naming it, is refused first with a
  // message naming it (core/model/dependency.h).
  if (auto order = check_submission_order(specs); !order) return order.error();
  ClusterState scratch = st.cluster;
  json out = json::array();
  for (const auto& spec : specs) {
    if (auto ok = check_submission(api, st, spec); !ok) return ok.error();
    auto id = submit_job(scratch, spec, now);
    if (!id) return id.error();
    out.push_back(view::job_json(scratch, scratch.jobs[id->index()], /*with_history=*/true, view::Times::kRfc3339));
  }
  return out;
}

// An array submission (core/model/array.h): its tasks made here, on the request's thread; then, on the writer, task 0
// (whose submission checks the whole array) and every other task applied in one command, so one batch and one
// journal transaction hold them all. Answered with the array's view. A dry run submits them to a scratch copy.
void submit_array_route(Api& api, const auth::Caller& who, const httplib::Request& req, httplib::Response& res, JobSpec spec,
                        bool dry_run) {
  auto tasks = array_tasks(spec);
  if (!tasks) return answer(res, error_reply(tasks.error()));
  const std::string name = spec.name;
  if (dry_run) {
    Command check = [&api, spec = std::move(spec)](Txn& txn) -> Result<Render> {
      if (auto st = check_submission(api, txn.view(), spec); !st) return st.error();
      ClusterState scratch = txn.cluster();
      auto ids = submit_array(scratch, spec, txn.now());
      if (!ids) return ids.error();
      json body = view::array_json(scratch, *find_array(scratch, spec.name), {});
      return Render([body](const ServerState&) { return json_reply(200, body); });
    };
    CallContext ctx = call_context(who, req, name);
    ctx.audit.reset();  // nothing reaches the journal, the audit trail included
    return answer(res, api.writer.read(std::move(check), std::move(ctx)));
  }
  run(api, who, req, res, [&api, tasks = std::make_shared<std::vector<JobSpec>>(std::move(*tasks)), name, who](Txn& txn) -> Result<Render> {
    if (auto st = check_submission(api, txn.view(), tasks->front()); !st) return st.error();
    for (size_t i = 0; i < tasks->size(); ++i) {
      auto st = txn.apply(store::Submit{std::move((*tasks)[i])});
      if (st) continue;
      if (i == 0) return st.error();  // nothing changed
      return Error::internal("task " + std::to_string(i) + " of array " + name + " was refused after task 0 was accepted: " +
                             st.error().message);
    }
    return array_render(name, who, 201);
  }, name);
}

// POST /v1/jobs: one job spec, or {"jobs": [spec, ...]} (a file of several documents), submitted all or nothing: every
// job is checked first, then all are submitted in one batch. ?dry_run=true (kubectl --dry-run=server): the same
// checks, and the same answer a submission gets at once (each job Pending, its priority class resolved), with
// nothing journaled or changed; 200 instead of 201. Role: the same as submitting (an admin, or a member of each
// job's team).
void submit_route(Routes& http, Api& api) {
  route(http, api, "POST", "/v1/jobs", Access::kMember, [&api](const auth::Caller& who, const httplib::Request& req, httplib::Response& res) {
    if (auto bad = check_content_type(req)) return answer(res, *bad);
    const std::string dry = req.get_param_value("dry_run");
    if (!dry.empty() && dry != "true" && dry != "false")
      return answer(res, error_reply(Error::invalid("query parameter dry_run must be true or false, got '" + printable(dry, 40) + "'")));
    const bool dry_run = dry == "true";
    auto doc = yaml_body(req);
    if (!doc) return answer(res, error_reply(doc.error()));
    // A list of jobs comes as {"jobs": [...]}, a key no job spec has.
    const bool batch = static_cast<bool>((*doc)["jobs"]);
    const YAML::Node list = batch ? (*doc)["jobs"] : YAML::Node();
    if (batch) {
      if (doc->size() != 1) return answer(res, error_reply(Error::invalid("request body: a list of jobs is {\"jobs\": [...]} with no other key")));
      if (!list.IsSequence() || list.size() == 0)
        return answer(res, error_reply(Error::invalid("request body: jobs must be a list of one job spec or more")));
      if (list.size() > kMaxBatchJobs)
        return answer(res, error_reply(Error::invalid("request body: " + std::to_string(list.size()) + " jobs; at most " +
                                                      std::to_string(kMaxBatchJobs) + " in one submission")));
    }
    std::vector<JobSpec> specs;
    for (size_t i = 0; i < (batch ? list.size() : 1); ++i) {
      const YamlContext ctx = batch ? YamlContext{kRequestBody.origin, "jobs[" + std::to_string(i) + "]", 0} : kRequestBody;
      auto spec = parse_job_spec(batch ? list[i] : *doc, api.catalog, ctx);
      if (!spec) return answer(res, error_reply(spec.error()));
      specs.push_back(std::move(*spec));
    }
    // A job array (core/model/array.h) is submitted alone: its tasks, up to 100,000, are one request and one batch.
    if (batch)
      for (size_t i = 0; i < specs.size(); ++i)
        if (specs[i].array)
          return answer(res, error_reply(Error::invalid("request body: jobs[" + std::to_string(i) + "] (" + specs[i].name +
                                                        ") is an array; submit an array alone, not in a list of jobs")));
    // The audit trail names the job a submission names (the first, for a list), accepted or refused.
    const std::string name = specs.front().name;
    for (auto& spec : specs) {
      std::optional<Error> why;
      if (!who.acts_for_team(spec.team))
        why = denied(who, "submitting a job of team " + spec.team, "an admin token or a member token of team " + spec.team);
      // A job's user is its token's (core/quota/user_limits.h: the team's per-user limits apply to it); only an admin may
      // submit for another user.
      else if (!spec.user.empty() && spec.user != who.user && !who.admin())
        why = denied(who, "submitting job " + spec.name + " as user " + spec.user,
                     "an admin token, or a token of user " + spec.user + " (this token's user is " +
                         (who.user.empty() ? std::string("none") : who.user) + "; leave user out to submit as it)");
      if (why) {
        // A dry run writes nothing, not even an audit entry: it is answered as a read would be.
        if (dry_run) return answer(res, error_reply(*why));
        return refuse(api, who, req, res, *why, spec.name);
      }
      if (spec.user.empty()) spec.user = who.user;
      // A manager's team (docs/multicluster.md): the job runs in a worker cluster, never here.
      spec.multicluster = api.options.multicluster.dispatches(spec.team);
    }
    if (specs.front().array) return submit_array_route(api, who, req, res, std::move(specs.front()), dry_run);
    if (dry_run) {
      // Answered from the writer's published view, as a read: nothing reaches the journal.
      Command check = [&api, specs, batch](Txn& txn) -> Result<Render> {
        auto jobs = try_submissions(api, txn.view(), specs, txn.now());
        if (!jobs) return jobs.error();
        json body = batch ? *jobs : (*jobs)[0];
        return Render([body](const ServerState&) { return json_reply(200, body); });
      };
      CallContext ctx = call_context(who, req, name);
      ctx.audit.reset();  // nothing reaches the journal, the audit trail included
      return answer(res, api.writer.read(std::move(check), std::move(ctx)));
    }
    if (!batch) {
      run(api, who, req, res, [&api, spec = std::move(specs.front()), who](Txn& txn) -> Result<Render> {
        if (auto st = check_submission(api, txn.view(), spec); !st) return st.error();
        auto st = txn.apply(store::Submit{spec});
        if (!st) return st.error();
        return job_render(spec.name, who, 201);
      }, name);
      return;
    }
    run(api, who, req, res, [&api, specs = std::move(specs), who](Txn& txn) -> Result<Render> {
      // All or nothing: every job is checked on a scratch copy first, so that the applies below, against the
      // same state in the same order, cannot fail half-way.
      if (auto checked = try_submissions(api, txn.view(), specs, txn.now()); !checked) return checked.error();
      std::vector<std::string> names;
      for (const auto& spec : specs) {
        auto st = txn.apply(store::Submit{spec});
        if (!st) return Error::internal("job " + spec.name + " passed its check but was refused: " + st.error().message);
        names.push_back(spec.name);
      }
      return Render([names, who](const ServerState& st) {
        json all = json::array();
        for (const auto& n : names) {
          Reply one = job_render(n, who)(st);
          all.push_back(json::parse(one.body));
        }
        return json_reply(201, all);
      });
    }, name);
  });
}

void job_read_routes(Routes& http, Api& api) {
  route(http, api, "GET", "/v1/jobs", Access::kReader, [&api](const auth::Caller& who, const httplib::Request& req, httplib::Response& res) {
    std::optional<JobState> state;
    if (req.has_param("state")) {
      state = parse_job_state(req.get_param_value("state"));
      if (!state)
        return answer(res, error_reply(Error::invalid("unknown job state '" + req.get_param_value("state") + "'; states: " + state_names())));
    }
    std::string team = req.get_param_value("team");
    // The dashboard's Jobs page filters by priority class ("none": jobs without one) and instance type too.
    std::string priority = req.get_param_value("priority");
    std::string instance_type = req.get_param_value("instance_type");
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
    // Job arrays (core/model/array.h): each task listed as the job it is (arrays=tasks, the default), or each array as one
    // item with its tasks counted per state (arrays=summary, what `allot jobs` asks for).
    const std::string arrays = req.get_param_value("arrays");
    if (!arrays.empty() && arrays != "tasks" && arrays != "summary")
      return answer(res, error_reply(Error::invalid("query parameter arrays must be tasks or summary, got '" + printable(arrays, 40) + "'")));
    const bool summarise = arrays == "summary";
    // `array`: one array's tasks only (the dashboard's way into an array listed as one row), paged as any listing.
    const std::string array_name = req.get_param_value("array");
    if (!array_name.empty() && summarise)
      return answer(res, error_reply(Error::invalid("query parameters array and arrays=summary do not go together: array=" + printable(array_name, 80) +
                                                    " lists that array's tasks, each as the job it is")));
    run(api, who, req, res, [state, team, priority, instance_type, limit = static_cast<size_t>(*limit), from = *from, who, own_teams_only, summarise,
                             array_name, selector = std::move(*selector), &seats = api.listings](Txn& txn) -> Result<Render> {
      const Team* t = nullptr;
      if (!team.empty() && !(t = txn.cluster().find_team(team))) return Error::not_found("no team named " + team);
      if (!array_name.empty()) {
        // Read as the array's own view would be: a member of another team is told what it would be told of a job.
        auto a = array_for(txn, who, array_name, /*change=*/false);
        if (!a) return a.error();
        if (!*a) return Error::not_found("query parameter array: no job array named " + printable(array_name, 80));
      }
      std::optional<TypeId> type;
      if (!instance_type.empty()) {
        type = txn.cluster().catalog.find(instance_type);
        if (!type) return Error::invalid("query parameter instance_type: unknown instance type '" + printable(instance_type, 80) + "'");
      }
      if (from > txn.cluster().jobs.size()) return Error::invalid("the continue token is not one this server gave");
      const TeamId team_id = t ? t->id : TeamId{};
      // One page is rendered per call, on the request's thread from the published view (Writer::read), while
      // holding one of the listing seats (read_seats.h): so listers neither hold the writer nor, past the seats,
      // take the cores it needs.
      return Render([state, team_id, priority, type, limit, from, who, own_teams_only, summarise, array_name, selector, &seats](const ServerState& st) -> Reply {
        auto seat = seats.take(kListingWait);
        if (!seat) {
          Reply busy = error_reply(503, "Unavailable",
                                   "this server is rendering " + std::to_string(seats.seats()) +
                                       " job listings already (allot server --max-listings); retry after a second");
          busy.retry_after_s = kListingRetryAfterS;
          return busy;
        }
        const auto& jobs = st.cluster.jobs;
        // With `array`, the jobs from its first task to its last are walked (an array's tasks are consecutive
        // jobs of one submission; a name used again after a deletion adds a later run of them) and only its tasks
        // listed; the continue token is a job index as for any listing.
        int32_t slot = -1;
        size_t lo = from, hi = jobs.size();
        if (!array_name.empty()) {
          const ArrayTasks* a = find_array(st.cluster, array_name);
          if (!a) hi = lo;  // deleted since the request was checked: nothing to list
          else {
            slot = st.cluster.array_by_name.at(a->name);
            lo = std::max(lo, static_cast<size_t>(a->tasks.front().index()));
            hi = std::min(hi, static_cast<size_t>(a->tasks.back().index()) + 1);
          }
        }
        // A job is of a type when one of its pod sets names it, or runs on it.
        auto of_type = [&](const Job& j) {
          for (const auto& ps : j.pod_sets)
            if (ps.type == *type) return true;
          for (const auto& ps : j.placement.pod_sets)
            if (ps.type == *type) return true;
          return false;
        };
        auto wanted = [&](const Job& j) {
          return !j.deleted && (slot < 0 || j.array == slot) && (!state || j.state == *state) && (!team_id.valid() || j.team == team_id) &&
                 (priority.empty() || (j.spec.priority.empty() ? "none" : j.spec.priority) == priority) &&
                 (!type || of_type(j)) && selector_matches(selector, j.spec.labels) &&
                 (!own_teams_only || who.in_team(st.cluster.teams[j.team.index()].spec.name));
        };
        const view::SeesTeamJobs sees = job_names_for(who);
        const Time now = static_cast<Time>(system_clock_ms() / 1000);  // one instant for the whole page
        // The body is written item by item: no JSON tree of the whole page is built (a 5,000-job page is
        // megabytes), each job's view is dumped and dropped. It is rendered on the seat's thread, at the lower
        // CPU priority of listings (read_seats.h).
        std::string body = R"({"items":[)";
        seat->run([&] {
          size_t listed = 0;
          size_t i = lo;
          for (; i < hi && listed < limit; ++i) {
            if (!wanted(jobs[i])) continue;
            json item;
            if (summarise && jobs[i].array >= 0) {
              // The array, once, where its first task listed is; its tasks have consecutive IDs (one submission),
              // so the rest are passed over here and the continue token never falls among them.
              const int32_t slot = jobs[i].array;
              item = view::array_json(st.cluster, st.cluster.arrays[static_cast<size_t>(slot)], wanted);
              while (i + 1 < jobs.size() && jobs[i + 1].array == slot) ++i;
            } else {
              item = view::job_json(st.cluster, jobs[i], /*with_history=*/false, view::Times::kRfc3339);
              view::add_time_limit(item, jobs[i], now, view::Times::kRfc3339);
              add_check_waits(st, jobs[i], item);
            }
            if (!(summarise && jobs[i].array >= 0)) view::hide_job_refs(item, jobs[i], sees);  // an array's item names no reason
            if (listed++) body += ',';
            body += item.dump(-1, ' ', false, json::error_handler_t::replace);
          }
          body += ']';
          while (i < hi && !wanted(jobs[i])) ++i;  // no token when no further job would be listed
          if (i < hi) body += R"(,"continue":")" + continue_token(i) + '"';
          body += '}';
        });
        return Reply{200, std::move(body), "application/json"};
      });
    });
  });
  route(http, api, "GET", R"(/v1/jobs/([^/]+))", Access::kReader, [&api](const auth::Caller& who, const httplib::Request& req, httplib::Response& res) {
    run(api, who, req, res, [name = param(req), who](Txn& txn) -> Result<Render> {
      const Job* j = txn.cluster().find_job(name);
      if (!j) {
        auto a = array_for(txn, who, name, /*change=*/false);
        if (!a) return a.error();
        if (*a) return array_render(name, who);
        return job_not_found(txn.cluster(), name);
      }
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
      if (!j) {
        auto a = array_for(txn, who, name, /*change=*/true);
        if (!a) return a.error();
        if (*a) return cancel_array(txn, who, **a);
        return job_not_found(txn.cluster(), name);
      }
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
    // The job must exist and have that replica; the log itself is read off the writer thread (a manager's job's from
    // the worker cluster its last copy went to, docs/multicluster.md).
    auto copy = std::make_shared<RemoteCopyRef>();
    Reply check = api.writer.call([name, rank = *replica, who, copy](Txn& txn) -> Result<Render> {
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
      if (j->spec.multicluster) *copy = j->remote.last;
      return Render([](const ServerState&) { return Reply{200, "", "text/plain"}; });
    }, call_context(who, req));
    if (check.status != 200) return answer(res, check);
    if (!copy->worker.empty() && api.dispatcher) {
      auto text = api.dispatcher->copy_logs(*copy, static_cast<int>(*replica), *tail);
      if (!text) return answer(res, error_reply(text.error()));
      return answer(res, Reply{200, std::move(*text), "text/plain; charset=utf-8"});
    }
    auto text = api.logs.read(name, static_cast<int>(*replica), static_cast<size_t>(*tail));
    if (!text) return answer(res, error_reply(text.error()));
    answer(res, Reply{200, std::move(*text), "text/plain; charset=utf-8"});
  });
}

}  // namespace

void add_job_routes(Routes& http, Api& api) {
  submit_route(http, api);
  job_read_routes(http, api);
  add_job_change_routes(http, api);
}

}  // namespace allot::server
