#include "server/writer/state_snapshot.h"

#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>

#include "store/cluster_snapshot.h"
#include "store/journal_checksum.h"
#include "store/record_json.h"

namespace allot::server {
using nlohmann::json;

namespace {

// Bumped when the body's layout changes; a body of another format is refused (start-up then replays the journal).
// 1: one JSON document. 2: lines (state_snapshot.h), written since issue 25 item 6; both are read.
constexpr int kFormatDocument = 1;
constexpr int kFormat = 2;
const std::string kMagic = "allot-snapshot ";

// The parts of the state that grow with the jobs and the audit trail: format 2 writes one entry per line, in
// this order, after the header; format 1 holds them in the document's arrays.
// Usage (usage_ledger.h) came later: its hourly rows and the users of the jobs kept, after the events.
enum class Section { kJobs, kAccounts, kAudit, kEvents, kUsageRows, kUsageUsers };
constexpr Section kSections[] = {Section::kJobs,   Section::kAccounts,  Section::kAudit,
                                 Section::kEvents, Section::kUsageRows, Section::kUsageUsers};

const char* section_name(Section s) {
  switch (s) {
    case Section::kJobs: return "jobs";
    case Section::kAccounts: return "accounts";
    case Section::kAudit: return "audit";
    case Section::kEvents: return "events";
    case Section::kUsageRows: return "usage_rows";
    case Section::kUsageUsers: return "usage_users";
  }
  return "?";
}

// A section's array in the format-1 layout (the document snapshot_document gives).
json& section_array(json& doc, Section s) { return s == Section::kJobs ? doc["cluster"]["jobs"] : doc[section_name(s)]; }
const json& section_array(const json& doc, Section s) {
  return s == Section::kJobs ? doc.at("cluster").at("jobs") : doc.at(section_name(s));
}

// Hands each entry of a section to the callback, in order, wherever the format keeps them.
using EachEntry = std::function<void(Section, const std::function<void(const json&)>&)>;

// An error a restore step returned, carried out of an entry's callback as it is (not as "malformed").
struct Refused {
  Error error;
};

json histogram_json(const Histogram& h) { return {{"counts", h.counts()}, {"sum", h.sum()}, {"count", h.count()}}; }

void restore_histogram(Histogram& h, const json& j, const std::string& what) {
  if (!h.restore(j.at("counts").get<std::vector<uint64_t>>(), j.at("sum").get<double>(), j.at("count").get<uint64_t>()))
    throw std::invalid_argument(what + ": the bucket counts do not match the histogram");
}

// The by-rule counters (observed.h) as [rule, team, instance type, count] rows.
json rule_counts_json(const std::map<RuleKey, uint64_t>& counts) {
  json out = json::array();
  for (const auto& [key, n] : counts) out.push_back({key.rule, key.team, key.instance_type, n});
  return out;
}

std::map<RuleKey, uint64_t> rule_counts_from(const json& j) {
  std::map<RuleKey, uint64_t> out;
  if (j.is_object()) return out;  // by rule alone: written before the labels
  for (const auto& row : j) {
    RuleKey key{row.at(0).get<std::string>(), row.at(1).get<std::string>(), row.at(2).get<std::string>()};
    if (!out.emplace(std::move(key), row.at(3).get<uint64_t>()).second)
      throw std::invalid_argument("a decision counter by rule, team and instance type is listed twice");
  }
  return out;
}

json node_info_json(const NodeInfo& n) {
  json ranks = json::array();
  for (const auto& [job, rank] : *n.ranks_placed) ranks.push_back({job, rank});
  json history = json::array();
  for (const auto& c : *n.history) history.push_back({c.at, c.from, c.to, c.cause, c.reason});
  return {{"address", n.address},   {"agent", n.agent},   {"timed_out", n.timed_out},
          {"ranks_placed", ranks},  {"cause", store::health_cause_name(n.cause)},
          {"reason", n.reason},     {"phase_since_ms", n.phase_since_ms},
          {"history", history},     {"replaces", n.replaces},
          {"start_timeouts", n.start_timeouts}};
}

NodeInfo node_info_from(const json& j, size_t jobs) {
  NodeInfo n;
  n.address = j.at("address").get<std::string>();
  n.agent = j.at("agent").get<bool>();
  n.timed_out = j.at("timed_out").get<bool>();
  for (const auto& r : j.at("ranks_placed")) {
    const auto job = r.at(0).get<uint32_t>();
    if (job >= jobs) throw std::invalid_argument("a replica placed names job " + std::to_string(job) + ", beyond the jobs");
    n.ranks_placed.edit().insert({job, r.at(1).get<int>()});
  }
  n.cause = store::health_cause_from_name(j.at("cause").get<std::string>());
  n.reason = j.at("reason").get<std::string>();
  n.phase_since_ms = j.at("phase_since_ms").get<int64_t>();
  for (const auto& c : j.at("history"))
    n.history.edit().push_back({c.at(0).get<Time>(), c.at(1).get<std::string>(), c.at(2).get<std::string>(),
                         c.at(3).get<std::string>(), c.at(4).get<std::string>()});
  if (n.history->size() > NodeInfo::kHistoryKept) throw std::invalid_argument("a node's history is longer than is kept");
  n.replaces = j.at("replaces").get<std::string>();
  n.start_timeouts = j.value("start_timeouts", 0);  // absent in snapshots written before gang start timeouts
  if (n.start_timeouts < 0) throw std::invalid_argument("a node's start_timeouts is negative");
  return n;
}

json account_json(uint32_t job, const JobAccount& a) {
  json restarts = json::array();
  for (const auto& r : a.restarts) restarts.push_back({r.at, r.attempt, r.cause, r.node, r.run_s, r.lost_s});
  json out = {{"job", job}, {"slots", a.slots}, {"held_s", a.held_s}, {"run_since", a.run_since}};
  // Left out when none was lost and the job never restarted, as for most jobs (read back so).
  if (a.lost_s != 0) out["lost_s"] = a.lost_s;
  if (!restarts.empty()) out["restarts"] = std::move(restarts);
  return out;
}

// The figures of a usage row, each left out when 0 (most rows have a few).
constexpr std::pair<const char*, int64_t UsageFigures::*> kUsageFields[] = {
    {"used_s", &UsageFigures::used_s},
    {"borrowed_s", &UsageFigures::borrowed_s},
    {"lent_s", &UsageFigures::lent_s},
    {"lost_preemption_s", &UsageFigures::lost_preemption_s},
    {"lost_failure_s", &UsageFigures::lost_failure_s},
    {"queued_s", &UsageFigures::queued_s},
    {"admitted", &UsageFigures::admitted}};

json usage_row_json(const UsageLedger::Row& r) {
  json out = {{"hour", r.hour}, {"team", r.team}, {"user", r.user}, {"priority", r.priority}, {"type", r.instance_type}};
  for (const auto& [name, field] : kUsageFields)
    if (r.figures.*field != 0) out[name] = r.figures.*field;
  return out;
}

UsageLedger::Row usage_row_from(const json& j) {
  UsageLedger::Row r{j.at("hour").get<Time>(), j.at("team").get<std::string>(), j.at("user").get<std::string>(),
                     j.at("priority").get<std::string>(), j.at("type").get<std::string>(), {}};
  for (const auto& [name, field] : kUsageFields) {
    r.figures.*field = j.value(name, int64_t{0});
    if (r.figures.*field < 0) throw std::invalid_argument(std::string("a usage row's ") + name + " is negative");
  }
  return r;
}

json event_json(const Event& e) {
  json out = {e.seq, e.at, e.kind, e.job, e.node, e.message.str(), e.team,
              e.preemption ? store::preemption_group_to_json(*e.preemption) : json(nullptr), event_audience_name(e.audience)};
  // The jobs the message names, only when it names any (events of snapshots before them read as refs_unknown).
  if (!e.message.refs().empty()) out.push_back(store::job_refs_to_json(e.message.refs()));
  return out;
}

Event event_from(const json& j) {
  Event e{j.at(0).get<uint64_t>(), j.at(1).get<Time>(), j.at(2).get<std::string>(), j.at(3).get<std::string>(),
          j.at(4).get<std::string>(), store::ref_text_from_json(j.at(5).get<std::string>(), j.size() > 9 ? j.at(9) : json()),
          j.at(6).get<std::string>(), nullptr};
  if (!j.at(7).is_null()) e.preemption = std::make_shared<const PreemptionGroup>(store::preemption_group_from_json(j.at(7)));
  if (j.size() > 8) {
    auto audience = parse_event_audience(j.at(8).get<std::string>());
    if (!audience) throw std::invalid_argument("event " + std::to_string(e.seq) + " has an unknown audience " + j.at(8).dump());
    e.audience = *audience;
  } else if (e.kind == store::op_name(store::CreateToken{}) || e.kind == store::op_name(store::RevokeToken{})) {
    // A snapshot written before events carried their audience: its token events keep to the same readers as new
    // ones (the record kind's spelling comes from the journal's one table of kinds).
    e.audience = EventAudience::kWholeClusterReaders;
  }
  return e;
}

// Throws on malformed input; restore_state_snapshot turns that into an Error naming the seq.
// `j`: the document (format 1) or the header (format 2) of the body, whose framing gave `format`; `each` reads the
// sections' entries from wherever that format keeps them.
Result<RestoredState> restore(uint64_t seq, const json& j, int format, const EachEntry& each, const Catalog& catalog) {
  if (j.at("format").get<int>() != format)
    return Error::invalid("format " + j.at("format").dump() + ", this version reads " + std::to_string(kFormatDocument) + " and " +
                          std::to_string(kFormat));
  if (j.at("last_seq").get<uint64_t>() != seq)
    return Error::invalid("it says it is the state after record " + j.at("last_seq").dump());
  // Usage aggregates are rebuilt from the whole journal, which a snapshot without them cannot stand for.
  if (!j.contains("usage"))
    return Error::invalid("it was written before usage reports were kept (no usage aggregates): the journal, which keeps "
                          "every record, is replayed instead");
  auto restoring = store::ClusterRestore::begin(j.at("cluster"), catalog);
  if (!restoring) return Error::invalid("cluster: " + restoring.error().message);
  each(Section::kJobs, [&](const json& entry) {
    if (auto st = restoring->add_job_entry(entry); !st) throw Refused{Error::invalid("cluster: " + st.error().message)};
  });
  auto cluster = std::move(*restoring).finish(j.at("cluster"));
  if (!cluster) return Error::invalid("cluster: " + cluster.error().message);
  RestoredState out;
  ServerState& st = out.state;
  st.cluster = std::move(*cluster);
  const size_t jobs = st.cluster.jobs.size();
  for (const auto& item : j.at("nodes").items()) st.nodes.emplace(item.key(), node_info_from(item.value(), jobs));
  st.removed_teams = j.at("removed_teams").get<std::set<std::string>>();
  each(Section::kAccounts, [&](const json& a) {
    const auto job = a.at("job").get<uint32_t>();
    if (job >= jobs) throw std::invalid_argument("an account names job " + std::to_string(job) + ", beyond the jobs");
    JobAccount& acc = st.accounts.edit(job);
    acc.slots = a.at("slots").get<int64_t>();
    acc.held_s = a.at("held_s").get<int64_t>();
    acc.lost_s = a.value("lost_s", int64_t{0});
    // Snapshots written before run_since was kept: the run began at the job's latest start.
    acc.run_since = a.contains("run_since") ? a.at("run_since").get<Time>() : st.cluster.jobs[job].started_at;
    for (const auto& r : a.value("restarts", json::array()))
      acc.restarts.push_back({r.at(0).get<Time>(), r.at(1).get<int>(), r.at(2).get<std::string>(), r.at(3).get<std::string>(),
                              r.at(4).get<int64_t>(), r.at(5).get<int64_t>()});
  });
  for (const auto& p : j.at("preemptions_of")) {
    const auto job = p.at("job").get<uint32_t>();
    if (job >= jobs) throw std::invalid_argument("preemptions name job " + std::to_string(job) + ", beyond the jobs");
    auto& seen = st.preemptions_of[job];
    for (const auto& g : p.at("seen"))
      seen.push_back({g.at("at").get<Time>(), g.at("group").is_null() ? nullptr
                                                                       : std::make_shared<const PreemptionGroup>(
                                                                             store::preemption_group_from_json(g.at("group")))});
    if (seen.size() > ServerState::kPreemptionsKept) throw std::invalid_argument("more preemptions of a job than are kept");
  }
  // Absent in snapshots written before log rules.
  if (j.contains("log_rules_fired"))
    for (const auto& f : j.at("log_rules_fired")) {
      const auto job = f.at("job").get<uint32_t>();
      if (job >= jobs) throw std::invalid_argument("a log rule names job " + std::to_string(job) + ", beyond the jobs");
      auto kind = parse_log_rule_kind(f.at("kind").get<std::string>());
      if (!kind) throw std::invalid_argument("a log rule of kind " + f.at("kind").dump());
      st.log_rules_fired[job] = LogRuleSeen{f.at("attempt").get<int>(), f.at("at").get<Time>(),
                                            LogRuleFiring{*kind, f.at("index").get<int>(), f.at("rank").get<int>(), f.at("line").get<std::string>()}};
    }
  st.retired = j.at("retired").get<std::map<std::string, std::string>>();
  st.admissions_total = j.at("admissions_total").get<uint64_t>();
  st.preemptions_total = j.at("preemptions_total").get<uint64_t>();
  const json& observed = j.at("observed");
  for (const auto& q : observed.at("queue_wait")) {
    // Rows written before the histograms were kept per instance type cannot be split by type: left out, and the
    // histograms count from the snapshot on, as the by-rule counters below (docs/api.md, "Metrics").
    if (!q.contains("instance_type")) continue;
    QueueWaitKey key{q.at("team").get<std::string>(), q.at("priority").get<std::string>(), q.at("instance_type").get<std::string>()};
    Histogram& h = st.observed.queue_wait.try_emplace(key, kQueueWaitBounds).first->second;
    restore_histogram(h, q.at("histogram"), "queue wait of team " + key.team);
  }
  // Snapshots written before the counters were labelled with team and instance type hold them by rule alone
  // (an object): those counts cannot be told apart and are not restored; the counters count from the snapshot
  // on (docs/api.md, "Metrics").
  st.observed.admissions_by_rule = rule_counts_from(observed.at("admissions_by_rule"));
  st.observed.preemptions_by_rule = rule_counts_from(observed.at("preemptions_by_rule"));
  for (const Job& job : st.cluster.jobs)
    if (job.state == JobState::kRunning) {
      st.running.insert(job.id.index());
      st.accounts.edit(job.id.index()).run_types = placement_types(job.placement);
    }
  for (const auto& t : j.at("tokens")) {
    TokenInfo info{store::token_from_json(t.at("token")), t.at("created_at").get<Time>(), t.at("created_by").get<std::string>(),
                   t.at("revoked").get<bool>(), t.at("revoked_at").get<Time>()};
    const std::string id = info.token.id;
    if (!st.tokens.edit().emplace(id, std::move(info)).second) throw std::invalid_argument("token " + id + " is listed twice");
  }
  st.tokens_version = 1;
  // Absent in snapshots written before webhooks were.
  for (const auto& w : j.value("webhooks", json::array())) {
    WebhookInfo info{store::webhook_from_json(w.at("webhook")), w.at("created_at").get<Time>(), w.at("created_by").get<std::string>()};
    const std::string id = info.webhook.id;
    if (!st.webhooks.emplace(id, std::move(info)).second) throw std::invalid_argument("webhook " + id + " is listed twice");
  }
  st.webhooks_version = 1;
  // Absent in snapshots written before admission checks were.
  for (const auto& c : j.value("admission_checks", json::array())) {
    AdmissionCheckInfo info{store::admission_check_from_json(c.at("check")), c.at("created_at").get<Time>(),
                            c.at("created_by").get<std::string>(), c.at("since_seq").get<uint64_t>()};
    const std::string name = info.check.name;
    if (info.since_seq > seq) throw std::invalid_argument("admission check " + name + " was made after the snapshot's record");
    if (!st.admission_checks.emplace(name, std::move(info)).second) throw std::invalid_argument("admission check " + name + " is listed twice");
  }
  for (const auto& r : j.value("run_checks", json::array())) {
    const auto job = r.at("job").get<uint32_t>();
    if (job >= jobs) throw std::invalid_argument("admission checks name job " + std::to_string(job) + ", beyond the jobs");
    st.run_checks[job] = RunChecks{r.at("attempt").get<int>(), r.at("began_seq").get<uint64_t>(), r.at("ready").get<std::set<std::string>>()};
  }
  for (const auto& r : j.value("check_retries", json::array())) {
    const auto job = r.at("job").get<uint32_t>();
    if (job >= jobs) throw std::invalid_argument("admission check retries name job " + std::to_string(job) + ", beyond the jobs");
    st.check_retries[job] = r.at("retries").get<int>();
  }
  st.admission_checks_version = 1;
  each(Section::kAudit, [&](const json& a) {
    const json& au = a.at("audit");
    st.audit.push_back(AuditEntry{a.at("seq").get<uint64_t>(), a.at("at").get<Time>(), store::actor_from_json(a.at("actor")),
                                  store::Audit{au.at("action").get<std::string>(), au.at("target").get<std::string>(),
                                               au.at("status").get<int>(), au.at("message").get<std::string>(),
                                               au.value("source", "")}});
    if (st.audit.back().seq > seq) throw std::invalid_argument("an audit entry is after the snapshot's record");
  });
  if (st.audit.size() > ServerState::kAuditKept) throw std::invalid_argument("the audit trail is longer than is kept");
  st.last_seq = seq;
  st.last_event = j.at("last_event").get<uint64_t>();
  st.version = j.at("version").get<uint64_t>();
  each(Section::kEvents, [&](const json& e) {
    out.events.push_back(event_from(e));
    const uint64_t before = out.events.size() > 1 ? out.events[out.events.size() - 2].seq : 0;
    if (out.events.back().seq <= before || out.events.back().seq > st.last_event)
      throw std::invalid_argument("event " + std::to_string(out.events.back().seq) + " is out of order");
  });
  each(Section::kUsageRows, [&](const json& r) { st.usage.add_row(usage_row_from(r)); });
  each(Section::kUsageUsers, [&](const json& u) {
    const auto job = u.at("job").get<uint32_t>();
    if (job >= jobs) throw std::invalid_argument("a usage user names job " + std::to_string(job) + ", beyond the jobs");
    st.usage.set_user(UsageLedger::JobUser{job, u.at("user").get<std::string>(), u.at("waiting_since").get<Time>()});
  });
  st.usage.set_accrued_to(j.at("usage").at("accrued_to").get<Time>());
  st.usage.rebuild_runs(st.cluster);
  return out;
}

// Text that is not UTF-8 cannot be in the journal (store.h), so it cannot be here; replace rather than throw.
std::string dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

json audit_entry(const AuditEntry& a) {
  return {{"seq", a.seq}, {"at", a.at}, {"actor", store::actor_to_json(a.actor)},
          {"audit", {{"action", a.audit.action}, {"target", a.audit.target}, {"status", a.audit.status},
                     {"message", a.audit.message}, {"source", a.audit.source}}}};
}

// Format 1's whole document (kDocument), or format 2's header (kHeader): the same without the sections' entries,
// which format 2 writes on lines of their own.
enum class Layout { kDocument, kHeader };

// The accounts by job, so that the same state always encodes to the same text.
std::map<uint32_t, const JobAccount*> accounts_by_job(const ServerState& st) {
  std::map<uint32_t, const JobAccount*> by_job;
  st.accounts.for_each([&](uint32_t job, const JobAccount& acc) { by_job[job] = &acc; });
  return by_job;
}

json encode_document(const ServerState& st, const std::vector<Event>& events, Layout layout) {
  const bool whole = layout == Layout::kDocument;
  json nodes = json::object();
  for (const auto& [name, info] : st.nodes) nodes[name] = node_info_json(info);
  json accounts = json::array();
  if (whole)
    for (const auto& [job, acc] : accounts_by_job(st)) accounts.push_back(account_json(job, *acc));
  json preemptions = json::array();
  std::map<uint32_t, const std::deque<PreemptionSeen>*> seen_by_job;
  for (const auto& [job, seen] : st.preemptions_of) seen_by_job[job] = &seen;
  for (const auto& [job, seen] : seen_by_job) {
    json list = json::array();
    for (const auto& p : *seen)
      list.push_back({{"at", p.at}, {"group", p.group ? store::preemption_group_to_json(*p.group) : json(nullptr)}});
    preemptions.push_back({{"job", job}, {"seen", std::move(list)}});
  }
  json fired = json::array();
  std::map<uint32_t, const LogRuleSeen*> fired_by_job;
  for (const auto& [job, f] : st.log_rules_fired) fired_by_job[job] = &f;
  for (const auto& [job, f] : fired_by_job)
    fired.push_back({{"job", job}, {"attempt", f->attempt}, {"at", f->at}, {"kind", log_rule_kind_name(f->firing.kind)},
                     {"index", f->firing.index}, {"rank", f->firing.rank}, {"line", f->firing.line}});
  json queue_wait = json::array();
  for (const auto& [key, h] : st.observed.queue_wait)
    queue_wait.push_back({{"team", key.team}, {"priority", key.priority}, {"instance_type", key.instance_type}, {"histogram", histogram_json(h)}});
  json tokens = json::array();
  for (const auto& [id, t] : *st.tokens)
    tokens.push_back({{"token", store::token_to_json(t.token)}, {"created_at", t.created_at}, {"created_by", t.created_by},
                      {"revoked", t.revoked}, {"revoked_at", t.revoked_at}});
  json webhooks = json::array();
  for (const auto& [id, w] : st.webhooks)
    webhooks.push_back({{"webhook", store::webhook_to_json(w.webhook)}, {"created_at", w.created_at}, {"created_by", w.created_by}});
  json checks = json::array();
  for (const auto& [name, c] : st.admission_checks)
    checks.push_back({{"check", store::admission_check_to_json(c.check)}, {"created_at", c.created_at},
                      {"created_by", c.created_by}, {"since_seq", c.since_seq}});
  json run_checks = json::array();
  for (const auto& [job, rc] : std::map<uint32_t, RunChecks>(st.run_checks.begin(), st.run_checks.end()))
    run_checks.push_back({{"job", job}, {"attempt", rc.attempt}, {"began_seq", rc.began_seq}, {"ready", rc.ready}});
  json check_retries = json::array();
  for (const auto& [job, n] : std::map<uint32_t, int>(st.check_retries.begin(), st.check_retries.end()))
    check_retries.push_back({{"job", job}, {"retries", n}});
  json audit = json::array();
  if (whole)
    for (const auto& a : st.audit) audit.push_back(audit_entry(a));
  json cluster = store::cluster_to_json(st.cluster, /*with_jobs=*/whole);
  if (!whole) cluster.erase("jobs");
  json ev = json::array();
  if (whole)
    for (const auto& e : events) ev.push_back(event_json(e));
  json usage_rows = json::array(), usage_users = json::array();
  if (whole) {
    for (const auto& r : st.usage.rows()) usage_rows.push_back(usage_row_json(r));
    for (const auto& u : st.usage.users())
      usage_users.push_back({{"job", u.job}, {"user", u.user}, {"waiting_since", u.waiting_since}});
  }
  json j = {{"format", whole ? kFormatDocument : kFormat},
            {"last_seq", st.last_seq},
            {"cluster", std::move(cluster)},
            {"nodes", std::move(nodes)},
            {"removed_teams", st.removed_teams},
            {"accounts", std::move(accounts)},
            {"retired", st.retired},
            {"log_rules_fired", std::move(fired)},
            {"preemptions_of", std::move(preemptions)},
            {"admissions_total", st.admissions_total},
            {"preemptions_total", st.preemptions_total},
            {"observed", {{"queue_wait", std::move(queue_wait)},
                          {"admissions_by_rule", rule_counts_json(st.observed.admissions_by_rule)},
                          {"preemptions_by_rule", rule_counts_json(st.observed.preemptions_by_rule)}}},
            {"tokens", std::move(tokens)},
            {"webhooks", std::move(webhooks)},
            {"admission_checks", std::move(checks)},
            {"run_checks", std::move(run_checks)},
            {"check_retries", std::move(check_retries)},
            {"audit", std::move(audit)},
            {"last_event", st.last_event},
            {"version", st.version},
            {"events", std::move(ev)},
            {"usage", {{"accrued_to", st.usage.accrued_to()}}},
            {"usage_rows", std::move(usage_rows)},
            {"usage_users", std::move(usage_users)}};
  if (!whole)
    for (Section sec : kSections)
      if (sec != Section::kJobs) j.erase(section_name(sec));
  return j;
}

// The first line: "allot-snapshot 2 " and the checksum of the text after the line (store/journal_checksum.h).
std::string first_line(std::string_view checksum) { return kMagic + std::to_string(kFormat) + " " + std::string(checksum) + "\n"; }

// Format 2 from the header (without "entries") and each section's lines (each entry's JSON and a newline).
std::string seal(json header, const std::vector<std::pair<size_t, std::string>>& sections) {
  json counts = json::object();
  for (Section sec : kSections) counts[section_name(sec)] = sections[static_cast<size_t>(sec)].first;
  header["entries"] = std::move(counts);
  std::string text = dump(header);
  text += '\n';
  size_t size = text.size();
  for (const auto& [n, lines] : sections) size += lines.size();
  const std::string placeholder = first_line(std::string(32, '0'));
  std::string out;
  out.reserve(placeholder.size() + size);
  out += placeholder;
  out += text;
  for (const auto& [n, lines] : sections) out += lines;
  const std::string sum = store::snapshot_checksum(std::string_view(out).substr(placeholder.size()));
  out.replace(0, placeholder.size(), first_line(sum));
  return out;
}

// Reads format 2's lines one at a time: the entries are parsed and restored one by one, so that no tree of the
// whole state is ever built (a 56 MB document took 4 s to parse and free with 50,000 jobs; bench/RESULTS.md).
class Lines {
 public:
  explicit Lines(std::string_view text) : rest_(text) {}
  std::optional<std::string_view> next() {
    if (rest_.empty()) return std::nullopt;
    const size_t nl = rest_.find('\n');
    if (nl == std::string_view::npos) {  // the last line has its newline too: this one was cut
      rest_ = {};
      return std::nullopt;
    }
    std::string_view line = rest_.substr(0, nl);
    rest_.remove_prefix(nl + 1);
    return line;
  }
  bool at_end() const { return rest_.empty(); }

 private:
  std::string_view rest_;
};

// Format 2's framing checked: its format and checksum. Returns the text after the first line.
Result<std::string_view> checked_text(std::string_view body) {
  const size_t nl = body.find('\n');
  const std::string_view line = body.substr(0, nl == std::string_view::npos ? body.size() : nl);
  const size_t space = line.find(' ', kMagic.size());
  if (space == std::string_view::npos) return Error::invalid("its first line is cut short");
  const std::string_view format = line.substr(kMagic.size(), space - kMagic.size());
  if (format != std::to_string(kFormat))
    return Error::invalid("format " + std::string(format) + ", this version reads " + std::to_string(kFormatDocument) + " and " +
                          std::to_string(kFormat));
  if (nl == std::string_view::npos) return Error::invalid("it has no text after its first line");
  const std::string_view stored = line.substr(space + 1);
  const std::string_view text = body.substr(nl + 1);
  const std::string sum = store::snapshot_checksum(text);
  if (stored != sum)
    return Error::invalid("does not match its checksum (stored " + std::string(stored) + ", its content gives " + sum +
                          "): it is torn or was changed after it was written");
  return text;
}

// Format 2's text (after the first line) as its header and a reader of the sections' lines, in order.
struct Framed {
  json header;
  EachEntry each;
};
Framed frame(std::shared_ptr<Lines> lines) {
  auto head = lines->next();
  if (!head) throw std::invalid_argument("it has no header line");
  Framed out{json::parse(*head), nullptr};
  const json counts = out.header.at("entries");
  out.each = [lines, counts](Section sec, const std::function<void(const json&)>& fn) {
    // A section written by a later version than the one that wrote the snapshot is absent: no entries (the
    // restore says what a snapshot without it lacks).
    const uint64_t n = counts.value(section_name(sec), uint64_t{0});
    for (uint64_t i = 0; i < n; ++i) {
      auto line = lines->next();
      if (!line)
        throw std::invalid_argument("it ends after " + std::to_string(i) + " of its " + std::to_string(n) + " " +
                                    section_name(sec) + " entries");
      fn(json::parse(*line));
    }
  };
  return out;
}

}  // namespace

std::string encode_state_snapshot(const ServerState& st, const std::vector<Event>& events) {
  std::vector<std::pair<size_t, std::string>> sections(std::size(kSections));
  auto line = [&](Section sec, const json& e) {
    auto& [n, text] = sections[static_cast<size_t>(sec)];
    text += dump(e);
    text += '\n';
    ++n;
  };
  store::for_each_job_entry(st.cluster, [&](const json& e) { line(Section::kJobs, e); }, store::JobEncoding::kCompact);
  for (const auto& [job, acc] : accounts_by_job(st)) line(Section::kAccounts, account_json(job, *acc));
  for (const auto& a : st.audit) line(Section::kAudit, audit_entry(a));
  for (const auto& e : events) line(Section::kEvents, event_json(e));
  for (const auto& r : st.usage.rows()) line(Section::kUsageRows, usage_row_json(r));
  for (const auto& u : st.usage.users())
    line(Section::kUsageUsers, {{"job", u.job}, {"user", u.user}, {"waiting_since", u.waiting_since}});
  return seal(encode_document(st, events, Layout::kHeader), sections);
}

std::string encode_state_snapshot_format1(const ServerState& st, const std::vector<Event>& events) {
  return dump(encode_document(st, events, Layout::kDocument));
}

Result<json> snapshot_document(const std::string& body) {
  try {
    if (body.rfind(kMagic, 0) != 0) return json::parse(body);
    const size_t nl = body.find('\n');
    if (nl == std::string::npos) return Error::invalid("the snapshot has no text after its first line");
    Framed f = frame(std::make_shared<Lines>(std::string_view(body).substr(nl + 1)));
    json doc = f.header;
    doc.erase("entries");
    for (Section sec : kSections) {
      json& array = section_array(doc, sec);
      array = json::array();
      f.each(sec, [&](const json& e) { array.push_back(e); });
    }
    return doc;
  } catch (const std::exception& e) {
    return Error::invalid(std::string("the snapshot is malformed: ") + e.what());
  }
}

std::string snapshot_from_document(const json& doc) {
  json header = doc;
  std::vector<std::pair<size_t, std::string>> sections(std::size(kSections));
  for (Section sec : kSections) {
    auto& [n, text] = sections[static_cast<size_t>(sec)];
    for (const json& e : section_array(doc, sec)) {
      text += dump(e);
      text += '\n';
      ++n;
    }
    if (sec == Section::kJobs) header["cluster"].erase("jobs");
    else header.erase(section_name(sec));
  }
  return seal(std::move(header), sections);
}

Result<RestoredState> restore_state_snapshot(uint64_t seq, const std::string& body, const Catalog& catalog) {
  const std::string where = "snapshot at journal record " + std::to_string(seq);
  try {
    if (body.rfind(kMagic, 0) == 0) {  // format 2: lines
      auto text = checked_text(body);
      if (!text) return Error::internal(where + " " + text.error().message);
      auto lines = std::make_shared<Lines>(*text);
      Framed f = frame(lines);
      auto r = restore(seq, f.header, kFormat, f.each, catalog);
      if (!r) return Error::internal(where + ": " + r.error().message);
      if (!lines->at_end()) return Error::internal(where + " has text after its last entry");
      return r;
    }
    // Format 1: one JSON document, as versions before format 2 wrote it.
    auto j = json::parse(body, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded()) return Error::internal(where + " is not valid JSON");
    const EachEntry each = [&j](Section sec, const std::function<void(const json&)>& fn) {
      for (const json& e : section_array(j, sec)) fn(e);
    };
    auto r = restore(seq, j, kFormatDocument, each, catalog);
    if (!r) return Error::internal(where + ": " + r.error().message);
    return r;
  } catch (const Refused& r) {
    return Error::internal(where + ": " + r.error.message);
  } catch (const std::exception& e) {
    return Error::internal(where + " is malformed: " + e.what());
  }
}

}  // namespace allot::server
