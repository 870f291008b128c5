#include "server/outside/admission_checks.h"

#include <algorithm>

#include "core/model/plans.h"
#include "server/api/api.h"
#include "server/lifecycle/start_gate.h"
#include "server/outside/webhook_rules.h"
#include "server/writer/writer.h"
#include "view/times.h"

namespace allot::server {
namespace {

using nlohmann::json;
using store::AdmissionCheckKind;
using store::CheckAnswer;

const std::string& team_of(const ServerState& st, const Job& j) { return st.cluster.teams[j.team.index()].spec.name; }

bool listed(const std::vector<std::string>& v, const std::string& x) { return v.empty() || std::find(v.begin(), v.end(), x) != v.end(); }

// The run of `j` the table knows of, when it is the current one.
const RunChecks* current_run(const ServerState& st, const Job& j) {
  auto it = st.run_checks.find(j.id.index());
  return it != st.run_checks.end() && it->second.attempt == attempt_of(j) ? &it->second : nullptr;
}

// Checks (by name) that the Running job `j`'s run, not handed out yet, still waits for.
template <typename F>
void for_each_waited(const ServerState& st, const Job& j, F fn) {
  if (j.state != JobState::kRunning || handed_out(st, j)) return;
  const RunChecks* run = current_run(st, j);
  if (!run) return;  // a run begun before the server knew of checks (an older snapshot): it waits for none
  for (const auto& [name, c] : st.admission_checks)
    if (check_applies(st, c, j) && !run->ready.count(name)) fn(c);
}

std::string text_of(const json& b, const char* key) { return b.contains(key) && b[key].is_string() ? b[key].get<std::string>() : ""; }

Result<std::vector<std::string>> name_list(const json& b, const char* key, NameKind kind, const std::string& where) {
  std::vector<std::string> out;
  if (!b.contains(key) || b[key].is_null()) return out;
  if (!b[key].is_array())
    return Error::invalid(where + ": " + key + " must be a list of " + name_kind_word(kind) + " names (empty or absent: every one)");
  for (const auto& e : b[key]) {
    if (!e.is_string()) return Error::invalid(where + ": " + key + " must be a list of " + name_kind_word(kind) + " names, not " + e.dump());
    const std::string n = e.get<std::string>();
    if (auto st = check_name(kind, n); !st) return Error::invalid(where + ": " + key + ": " + st.error().message);
    if (std::find(out.begin(), out.end(), n) != out.end()) return Error::invalid(where + ": " + key + " lists " + n + " twice");
    out.push_back(n);
  }
  if (out.size() > 64) return Error::invalid(where + ": " + key + " lists more than 64 names");
  return out;
}

}  // namespace

bool check_scope_takes(const store::AdmissionCheckRecord& check, const std::string& team, const std::string& priority) {
  return listed(check.teams, team) && listed(check.priority_classes, priority);
}

bool check_applies(const ServerState& st, const AdmissionCheckInfo& check, const Job& j) {
  const RunChecks* run = current_run(st, j);
  return run && check.since_seq < run->began_seq && check_scope_takes(check.check, team_of(st, j), j.spec.priority);
}

const AdmissionCheckInfo* check_waited_for(const ServerState& st, const Job& j) {
  const AdmissionCheckInfo* first = nullptr;
  for_each_waited(st, j, [&](const AdmissionCheckInfo& c) {
    if (!first) first = &c;
  });
  return first;
}

std::optional<BuiltinAnswer> capacity_plan_answer(const ClusterState& s, const Job& j) {
  if (j.spec.plan.empty())
    return BuiltinAnswer{CheckAnswer::kReject, "the job names no capacity plan; this check admits jobs that run on an Active plan (plan: NAME)"};
  const Plan* p = s.find_plan(j.spec.plan);
  if (!p) return BuiltinAnswer{CheckAnswer::kReject, "capacity plan " + j.spec.plan + " no longer exists"};
  switch (p->state) {
    case PlanState::kActive: return BuiltinAnswer{CheckAnswer::kReady, "capacity plan " + j.spec.plan + " is Active"};
    case PlanState::kScheduled: return std::nullopt;
    case PlanState::kEnding:
    case PlanState::kExpired: return BuiltinAnswer{CheckAnswer::kReject, "capacity plan " + j.spec.plan + " is " + plan_state_name(p->state)};
  }
  return std::nullopt;
}

bool answer_builtin_checks(Txn& txn) {
  const ServerState& st = txn.view();
  if (st.admission_checks.empty()) return false;
  struct Answer {
    std::string job, check;
    int attempt;
    BuiltinAnswer a;
  };
  std::vector<Answer> answers;
  for (uint32_t index : st.running) {
    const Job& j = st.cluster.jobs[index];
    bool done = false;  // one answer per job and batch: a reject or retry ends the run
    for_each_waited(st, j, [&](const AdmissionCheckInfo& c) {
      if (done) return;
      switch (c.check.kind) {
        case AdmissionCheckKind::kCapacityPlanActive:
          if (auto a = capacity_plan_answer(st.cluster, j)) {
            answers.push_back({j.spec.name, c.check.name, attempt_of(j), std::move(*a)});
            done = answers.back().a.answer != CheckAnswer::kReady;
          }
          break;
        case AdmissionCheckKind::kHttp: break;  // asked off the writer (admission_checker.h)
      }
    });
  }
  for (auto& a : answers)
    if (auto s = txn.apply(store::AdmissionCheckAnswered{a.job, a.attempt, a.check, a.a.answer, std::move(a.a.message), 0}); !s)
      return false;  // unreachable: the job was Running at this attempt
  return !answers.empty();
}

std::vector<CheckAsk> check_asks(const ServerState& st) {
  std::vector<CheckAsk> out;
  if (st.admission_checks.empty()) return out;
  for (uint32_t index : st.running) {
    const Job& j = st.cluster.jobs[index];
    for_each_waited(st, j, [&](const AdmissionCheckInfo& c) {
      if (c.check.kind != AdmissionCheckKind::kHttp) return;
      int replicas = 0;
      int64_t accelerators = 0;
      std::vector<std::string> types;
      for (const PodSetPlacement& ps : j.placement.pod_sets) {
        replicas += static_cast<int>(ps.replicas.size());
        accelerators += ps.per_replica.accelerators * static_cast<int64_t>(ps.replicas.size());
        const std::string& t = st.cluster.catalog.at(ps.type).name;
        if (std::find(types.begin(), types.end(), t) == types.end()) types.push_back(t);
      }
      json body = {{"check", c.check.name},
                   {"job", j.spec.name},
                   {"team", team_of(st, j)},
                   {"user", j.spec.user},
                   {"priority_class", j.spec.priority},
                   {"plan", j.spec.plan},
                   {"attempt", attempt_of(j)},
                   {"replicas", replicas},
                   {"accelerators", accelerators},
                   {"instance_types", types},
                   {"borrowing", j.borrowing}};
      out.push_back(CheckAsk{j.spec.name, team_of(st, j), c.check.name, c.check.url, attempt_of(j),
                             body.dump(-1, ' ', false, json::error_handler_t::replace)});
    });
  }
  return out;
}

Result<std::pair<CheckAnswer, std::string>> parse_check_reply(std::string_view body) {
  auto shown = [&] { return std::string(body.substr(0, 120)) + (body.size() > 120 ? "..." : ""); };
  json b = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (!b.is_object()) return Error::invalid("the answer is not a JSON object: " + shown());
  if (!b.contains("state") || !b["state"].is_string())
    return Error::invalid("the answer has no \"state\" (allowed: ready, retry, reject): " + shown());
  auto a = store::parse_check_answer(b["state"].get<std::string>());
  if (!a) return Error::invalid("the answer's state '" + b["state"].get<std::string>().substr(0, 40) + "' is not ready, retry or reject");
  std::string message;
  if (b.contains("message") && !b["message"].is_null()) {
    if (!b["message"].is_string()) return Error::invalid("the answer's message is not a text");
    message = b["message"].get<std::string>();
  }
  if (message.size() > kCheckMessageMax) message = message.substr(0, kCheckMessageMax) + "...";
  for (char& ch : message)
    if (static_cast<unsigned char>(ch) < 0x20) ch = ' ';  // one line in descriptions and events
  return std::make_pair(*a, message);
}

int64_t check_retry_backoff_s(int retries_before, const AdmissionCheckOptions& options) {
  int64_t d = std::max<int64_t>(0, options.retry_backoff_s);
  for (int i = 0; i < retries_before && d < options.retry_backoff_max_s; ++i) d *= 2;
  return std::min(d, options.retry_backoff_max_s);
}

Status take_check_answer(Txn& txn, const std::string& job, int attempt, const std::string& check, CheckAnswer answer,
                         std::string message, const AdmissionCheckOptions& options) {
  const ServerState& st = txn.view();
  const Job* j = st.cluster.find_job(job);
  if (!j || j->state != JobState::kRunning || attempt_of(*j) != attempt) return ok_status();
  bool waits = false;
  for_each_waited(st, *j, [&](const AdmissionCheckInfo& c) { waits |= c.check.name == check; });
  if (!waits) return ok_status();
  int64_t backoff_s = 0;
  if (answer == CheckAnswer::kRetry) {
    auto it = st.check_retries.find(j->id.index());
    backoff_s = check_retry_backoff_s(it == st.check_retries.end() ? 0 : it->second, options);
  }
  return txn.apply(store::AdmissionCheckAnswered{job, attempt, check, answer, std::move(message), backoff_s});
}

void note_check_failure(ServerState& st, const std::string& job, int attempt, const std::string& check, int failures,
                        std::string error, int64_t next_try_ms) {
  const Job* j = st.cluster.find_job(job);
  if (!j || j->state != JobState::kRunning || attempt_of(*j) != attempt || !st.admission_checks.count(check)) return;
  st.check_trying[{j->id.index(), check}] = CheckTrying{attempt, failures, std::move(error), next_try_ms};
}

json check_waits(const ServerState& st, const Job& j) {
  json out = json::array();
  for_each_waited(st, j, [&](const AdmissionCheckInfo& c) {
    json w = {{"check", c.check.name}, {"kind", store::admission_check_kind_name(c.check.kind)}};
    auto it = st.check_trying.find({j.id.index(), c.check.name});
    if (it != st.check_trying.end() && it->second.attempt == attempt_of(j)) {
      w["tries"] = it->second.failures;
      w["error"] = it->second.error;
      w["next_try_at"] = view::rfc3339_ms(it->second.next_try_ms);
    }
    out.push_back(std::move(w));
  });
  return out;
}

void add_check_waits(const ServerState& st, const Job& j, json& v) {
  if (j.state != JobState::kRunning) return;
  json waits = check_waits(st, j);
  if (waits.empty()) return;
  std::string reason;
  for (const json& w : waits)
    reason += "waits for admission check " + w.at("check").get<std::string>() + " (" + w.at("kind").get<std::string>() + ") to answer ready; ";
  v["reason"] = reason + v.value("reason", "");
  v["waits_for_checks"] = std::move(waits);
}

Status check_admission_check_name(std::string_view name) {
  const bool ok = !name.empty() && name.size() <= 63 &&
                  std::all_of(name.begin(), name.end(), [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-'; }) &&
                  name.front() != '-' && name.back() != '-';
  if (ok) return ok_status();
  return Error::invalid("admission check: name '" + std::string(name.substr(0, 80)) +
                        "' is not allowed (allowed: 1..63 lowercase letters, digits and '-', beginning and ending with a letter or digit)");
}

Result<store::AdmissionCheckRecord> parse_admission_check_request(const std::string& name, const json& b) {
  if (auto st = check_admission_check_name(name); !st) return st.error();
  const std::string where = "admission check " + name;
  if (!b.is_object()) return Error::invalid(where + ": the body must be a JSON object");
  if (auto st = only_keys(b, {"kind", "url", "teams", "priority_classes", "description"}, where); !st) return st.error();
  store::AdmissionCheckRecord c;
  c.name = name;
  if (!b.contains("kind") || !b["kind"].is_string())
    return Error::invalid(where + ": kind is required (allowed: " + store::admission_check_kind_list() + ")");
  auto kind = store::parse_admission_check_kind(b["kind"].get<std::string>());
  if (!kind)
    return Error::invalid(where + ": kind '" + b["kind"].get<std::string>().substr(0, 40) + "' is not allowed (allowed: " +
                          store::admission_check_kind_list() + ")");
  c.kind = *kind;
  switch (c.kind) {
    case AdmissionCheckKind::kHttp: {
      c.url = text_of(b, "url");
      if (c.url.empty()) return Error::invalid(where + ": url is required for kind http (http://HOST[:PORT]/PATH or https://...)");
      auto url = parse_webhook_url(c.url);
      if (!url) return Error::invalid(where + ": " + url.error().message);
      break;
    }
    case AdmissionCheckKind::kCapacityPlanActive:
      if (b.contains("url")) return Error::invalid(where + ": url is for kind http only; capacity_plan_active asks no endpoint");
      break;
  }
  auto teams = name_list(b, "teams", NameKind::kTeam, where);
  if (!teams) return teams.error();
  c.teams = std::move(*teams);
  auto classes = name_list(b, "priority_classes", NameKind::kPriorityClass, where);
  if (!classes) return classes.error();
  c.priority_classes = std::move(*classes);
  if (b.contains("description")) {
    if (!b["description"].is_string() || b["description"].get<std::string>().size() > 256)
      return Error::invalid(where + ": description must be a text of at most 256 characters");
    c.description = b["description"].get<std::string>();
  }
  return c;
}

json admission_check_json(const AdmissionCheckInfo& c, bool whole) {
  json o = {{"name", c.check.name},
            {"kind", store::admission_check_kind_name(c.check.kind)},
            {"teams", c.check.teams},
            {"priority_classes", c.check.priority_classes},
            {"created_at", view::rfc3339(c.created_at)}};
  if (!c.check.description.empty()) o["description"] = c.check.description;
  if (whole) {
    if (!c.check.url.empty()) o["url"] = c.check.url;
    o["created_by"] = c.created_by;
  }
  return o;
}

}  // namespace allot::server
