#include "server/state_snapshot.h"

#include <nlohmann/json.hpp>
#include <stdexcept>

#include "store/cluster_snapshot.h"
#include "store/record_json.h"

namespace allot::server {
using nlohmann::json;

namespace {

// Bumped when the body's layout changes; a body of another format is refused (start-up then needs the journal).
constexpr int kFormat = 1;

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
  for (const auto& [job, rank] : n.ranks_placed) ranks.push_back({job, rank});
  json history = json::array();
  for (const auto& c : n.history) history.push_back({c.at, c.from, c.to, c.cause, c.reason});
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
    n.ranks_placed.insert({job, r.at(1).get<int>()});
  }
  n.cause = store::health_cause_from_name(j.at("cause").get<std::string>());
  n.reason = j.at("reason").get<std::string>();
  n.phase_since_ms = j.at("phase_since_ms").get<int64_t>();
  for (const auto& c : j.at("history"))
    n.history.push_back({c.at(0).get<Time>(), c.at(1).get<std::string>(), c.at(2).get<std::string>(),
                         c.at(3).get<std::string>(), c.at(4).get<std::string>()});
  if (n.history.size() > NodeInfo::kHistoryKept) throw std::invalid_argument("a node's history is longer than is kept");
  n.replaces = j.at("replaces").get<std::string>();
  n.start_timeouts = j.value("start_timeouts", 0);  // absent in snapshots written before gang start timeouts
  if (n.start_timeouts < 0) throw std::invalid_argument("a node's start_timeouts is negative");
  return n;
}

json account_json(uint32_t job, const JobAccount& a) {
  json restarts = json::array();
  for (const auto& r : a.restarts) restarts.push_back({r.at, r.attempt, r.cause, r.node, r.run_s, r.lost_s});
  return {{"job", job}, {"slots", a.slots}, {"held_s", a.held_s}, {"lost_s", a.lost_s}, {"run_since", a.run_since}, {"restarts", restarts}};
}

json event_json(const Event& e) {
  return {e.seq, e.at, e.kind, e.job, e.node, e.message, e.team,
          e.preemption ? store::preemption_group_to_json(*e.preemption) : json(nullptr), event_audience_name(e.audience)};
}

Event event_from(const json& j) {
  Event e{j.at(0).get<uint64_t>(), j.at(1).get<Time>(), j.at(2).get<std::string>(), j.at(3).get<std::string>(),
          j.at(4).get<std::string>(), j.at(5).get<std::string>(), j.at(6).get<std::string>(), nullptr};
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
Result<RestoredState> restore(uint64_t seq, const json& j, const Catalog& catalog) {
  if (j.at("format").get<int>() != kFormat)
    return Error::invalid("format " + j.at("format").dump() + ", this version reads " + std::to_string(kFormat));
  if (j.at("last_seq").get<uint64_t>() != seq)
    return Error::invalid("it says it is the state after record " + j.at("last_seq").dump());
  auto cluster = store::cluster_from_json(j.at("cluster"), catalog);
  if (!cluster) return Error::invalid("cluster: " + cluster.error().message);
  RestoredState out;
  ServerState& st = out.state;
  st.cluster = std::move(*cluster);
  const size_t jobs = st.cluster.jobs.size();
  for (const auto& item : j.at("nodes").items()) st.nodes.emplace(item.key(), node_info_from(item.value(), jobs));
  st.removed_teams = j.at("removed_teams").get<std::set<std::string>>();
  for (const auto& a : j.at("accounts")) {
    const auto job = a.at("job").get<uint32_t>();
    if (job >= jobs) throw std::invalid_argument("an account names job " + std::to_string(job) + ", beyond the jobs");
    JobAccount& acc = st.accounts[job];
    acc.slots = a.at("slots").get<int64_t>();
    acc.held_s = a.at("held_s").get<int64_t>();
    acc.lost_s = a.at("lost_s").get<int64_t>();
    // Snapshots written before run_since was kept: the run began at the job's latest start.
    acc.run_since = a.contains("run_since") ? a.at("run_since").get<Time>() : st.cluster.jobs[job].started_at;
    for (const auto& r : a.at("restarts"))
      acc.restarts.push_back({r.at(0).get<Time>(), r.at(1).get<int>(), r.at(2).get<std::string>(), r.at(3).get<std::string>(),
                              r.at(4).get<int64_t>(), r.at(5).get<int64_t>()});
  }
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
    auto key = std::make_pair(q.at("team").get<std::string>(), q.at("priority").get<std::string>());
    Histogram& h = st.observed.queue_wait.try_emplace(key, kQueueWaitBounds).first->second;
    restore_histogram(h, q.at("histogram"), "queue wait of team " + key.first);
  }
  // Snapshots written before the counters were labelled with team and instance type hold them by rule alone
  // (an object): those counts cannot be told apart and are not restored; the counters count from the snapshot
  // on (docs/api.md, "Metrics").
  st.observed.admissions_by_rule = rule_counts_from(observed.at("admissions_by_rule"));
  st.observed.preemptions_by_rule = rule_counts_from(observed.at("preemptions_by_rule"));
  for (const Job& job : st.cluster.jobs)
    if (job.state == JobState::kRunning) {
      st.running.insert(job.id.index());
      st.accounts[job.id.index()].run_types = placement_types(job.placement);
    }
  for (const auto& t : j.at("tokens")) {
    TokenInfo info{store::token_from_json(t.at("token")), t.at("created_at").get<Time>(), t.at("created_by").get<std::string>(),
                   t.at("revoked").get<bool>(), t.at("revoked_at").get<Time>()};
    const std::string id = info.token.id;
    if (!st.tokens.emplace(id, std::move(info)).second) throw std::invalid_argument("token " + id + " is listed twice");
  }
  st.tokens_version = 1;
  // Absent in snapshots written before webhooks were.
  for (const auto& w : j.value("webhooks", json::array())) {
    WebhookInfo info{store::webhook_from_json(w.at("webhook")), w.at("created_at").get<Time>(), w.at("created_by").get<std::string>()};
    const std::string id = info.webhook.id;
    if (!st.webhooks.emplace(id, std::move(info)).second) throw std::invalid_argument("webhook " + id + " is listed twice");
  }
  st.webhooks_version = 1;
  for (const auto& a : j.at("audit")) {
    const json& au = a.at("audit");
    st.audit.push_back(AuditEntry{a.at("seq").get<uint64_t>(), a.at("at").get<Time>(), store::actor_from_json(a.at("actor")),
                                  store::Audit{au.at("action").get<std::string>(), au.at("target").get<std::string>(),
                                               au.at("status").get<int>(), au.at("message").get<std::string>(),
                                               au.value("source", "")}});
    if (st.audit.back().seq > seq) throw std::invalid_argument("an audit entry is after the snapshot's record");
  }
  if (st.audit.size() > ServerState::kAuditKept) throw std::invalid_argument("the audit trail is longer than is kept");
  st.last_seq = seq;
  st.last_event = j.at("last_event").get<uint64_t>();
  st.version = j.at("version").get<uint64_t>();
  for (const auto& e : j.at("events")) {
    out.events.push_back(event_from(e));
    const uint64_t before = out.events.size() > 1 ? out.events[out.events.size() - 2].seq : 0;
    if (out.events.back().seq <= before || out.events.back().seq > st.last_event)
      throw std::invalid_argument("event " + std::to_string(out.events.back().seq) + " is out of order");
  }
  return out;
}

}  // namespace

namespace {

// Where the largest arrays go in the document before they are written into its text: a string no state holds
// (encode_state_snapshot checks that each occurs exactly once in the text, or writes the whole document instead).
const std::string kJobsMark = std::string("\x01allot-snapshot-jobs\x01");
const std::string kAuditMark = std::string("\x01allot-snapshot-audit\x01");

// Text that is not UTF-8 cannot be in the journal (store.h), so it cannot be here; replace rather than throw.
std::string dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

// Writes "[e1,e2,...]" as dump() would write the array of the entries, one entry in memory at a time.
template <class Each>
std::string array_text(Each&& each) {
  std::string out = "[";
  each([&](const json& e) {
    if (out.size() > 1) out += ',';
    out += dump(e);
  });
  out += ']';
  return out;
}

json audit_entry(const AuditEntry& a) {
  return {{"seq", a.seq}, {"at", a.at}, {"actor", store::actor_to_json(a.actor)},
          {"audit", {{"action", a.audit.action}, {"target", a.audit.target}, {"status", a.audit.status},
                     {"message", a.audit.message}, {"source", a.audit.source}}}};
}

json encode_document(const ServerState& st, const std::vector<Event>& events, bool whole);

}  // namespace

// The jobs (one entry per job kept) and the audit trail (up to 100,000 entries) are most of a large state. As
// one JSON document they took several times the text's size in memory while it was written (1.8 GiB of peak RSS
// with 50,000 jobs, 380 MiB without snapshots; bench/RESULTS.md). So the document is dumped with a mark in
// their place, and their text, written entry by entry, goes where the mark is. The text is the same as the
// whole document's dump.
std::string encode_state_snapshot(const ServerState& st, const std::vector<Event>& events) {
  std::string text = dump(encode_document(st, events, /*whole=*/false));
  const std::string jobs_mark = dump(json(kJobsMark)), audit_mark = dump(json(kAuditMark));
  const size_t jobs_at = text.find(jobs_mark), audit_at = text.find(audit_mark);
  const bool once = jobs_at != std::string::npos && audit_at != std::string::npos &&
                    text.find(jobs_mark, jobs_at + 1) == std::string::npos && text.find(audit_mark, audit_at + 1) == std::string::npos;
  if (!once) return dump(encode_document(st, events, /*whole=*/true));  // some text of the state holds a mark
  std::string jobs = array_text([&](const auto& f) { store::for_each_job_entry(st.cluster, f); });
  std::string audit = array_text([&](const auto& f) {
    for (const auto& a : st.audit) f(audit_entry(a));
  });
  // The later mark first, so that the earlier one's position still holds.
  if (jobs_at > audit_at) {
    text.replace(jobs_at, jobs_mark.size(), jobs);
    text.replace(audit_at, audit_mark.size(), audit);
  } else {
    text.replace(audit_at, audit_mark.size(), audit);
    text.replace(jobs_at, jobs_mark.size(), jobs);
  }
  return text;
}

namespace {

json encode_document(const ServerState& st, const std::vector<Event>& events, bool whole) {
  json nodes = json::object();
  for (const auto& [name, info] : st.nodes) nodes[name] = node_info_json(info);
  json accounts = json::array();
  // By job, so that the same state always encodes to the same text.
  std::map<uint32_t, const JobAccount*> by_job;
  for (const auto& [job, acc] : st.accounts) by_job[job] = &acc;
  for (const auto& [job, acc] : by_job) accounts.push_back(account_json(job, *acc));
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
    queue_wait.push_back({{"team", key.first}, {"priority", key.second}, {"histogram", histogram_json(h)}});
  json tokens = json::array();
  for (const auto& [id, t] : st.tokens)
    tokens.push_back({{"token", store::token_to_json(t.token)}, {"created_at", t.created_at}, {"created_by", t.created_by},
                      {"revoked", t.revoked}, {"revoked_at", t.revoked_at}});
  json webhooks = json::array();
  for (const auto& [id, w] : st.webhooks)
    webhooks.push_back({{"webhook", store::webhook_to_json(w.webhook)}, {"created_at", w.created_at}, {"created_by", w.created_by}});
  json audit = json::array();
  if (whole)
    for (const auto& a : st.audit) audit.push_back(audit_entry(a));
  else
    audit = kAuditMark;
  json cluster = store::cluster_to_json(st.cluster, /*with_jobs=*/whole);
  if (!whole) cluster["jobs"] = kJobsMark;
  json ev = json::array();
  for (const auto& e : events) ev.push_back(event_json(e));
  json j = {{"format", kFormat},
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
            {"audit", std::move(audit)},
            {"last_event", st.last_event},
            {"version", st.version},
            {"events", std::move(ev)}};
  return j;
}

}  // namespace

Result<RestoredState> restore_state_snapshot(uint64_t seq, const std::string& body, const Catalog& catalog) {
  const std::string where = "snapshot at journal record " + std::to_string(seq);
  auto j = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return Error::internal(where + " is not valid JSON");
  try {
    auto r = restore(seq, j, catalog);
    if (!r) return Error::internal(where + ": " + r.error().message);
    return r;
  } catch (const std::exception& e) {
    return Error::internal(where + " is malformed: " + e.what());
  }
}

}  // namespace allot::server
