#include "store/record_json.h"

#include <array>
#include <stdexcept>
#include <type_traits>
#include <utility>

#include "config/after_json.h"
#include "store/spec_json.h"

namespace allot::store {
using nlohmann::json;

RequeueCause requeue_cause_from_name(const std::string& s) {
  for (auto c : {RequeueCause::kRendezvousPort, RequeueCause::kServerDeaf})
    if (s == requeue_cause_name(c)) return c;
  throw std::invalid_argument("unknown requeue cause '" + s + "'; causes: rendezvous_port, server_deaf");
}

HealthCause health_cause_from_name(const std::string& s) {
  for (auto c : {HealthCause::kAdmin, HealthCause::kAgent, HealthCause::kTimeout, HealthCause::kHealthCheck, HealthCause::kDeepCheck})
    if (s == health_cause_name(c)) return c;
  throw std::invalid_argument("unknown health cause " + s);
}

json placement_to_json(const std::vector<PodSetRecord>& p) {
  json out = json::array();
  for (const auto& ps : p) {
    json replicas = json::array();
    for (const auto& r : ps.replicas)
      replicas.push_back({{"node", r.node}, {"accelerators", r.accelerators}, {"numa_domains", r.numa_domains}, {"cpus", r.cpus}});
    out.push_back({{"instance_type", ps.instance_type}, {"per_replica", to_json(ps.per_replica)}, {"replicas", replicas}});
  }
  return out;
}

std::vector<PodSetRecord> placement_from_json(const json& j) {
  std::vector<PodSetRecord> out;
  for (const auto& p : j) {
    PodSetRecord ps;
    ps.instance_type = p.at("instance_type").get<std::string>();
    ps.per_replica = resources_from_json(p.at("per_replica"));
    for (const auto& r : p.at("replicas"))
      ps.replicas.push_back({r.at("node").get<std::string>(), r.at("accelerators").get<std::vector<int>>(),
                             r.at("numa_domains").get<std::vector<int>>(), r.at("cpus").get<std::string>()});
    out.push_back(std::move(ps));
  }
  return out;
}

json token_to_json(const TokenRecord& t) {
  json out = {{"id", t.id}, {"secret_hash", t.secret_hash}, {"role", auth::role_name(t.role)}, {"teams", t.teams}, {"node", t.node},
              {"expires_at", t.expires_at}, {"description", t.description}};
  // Written only when set, so that records without them read as they did before the fields existed.
  if (t.max_nodes != 0) out["max_nodes"] = t.max_nodes;
  if (!t.joined_with.empty()) out["joined_with"] = t.joined_with;
  if (!t.user.empty()) out["user"] = t.user;
  return out;
}

namespace {

json share_to_json(const Share& s) { return json::array({s.num, s.den}); }

Share share_from_json(const json& j) {
  if (!j.is_array() || j.size() != 2) throw std::invalid_argument("a share is [numerator, denominator]");
  Share s{j.at(0).get<int64_t>(), j.at(1).get<int64_t>()};
  if (s.num < 0 || s.den < 0) throw std::invalid_argument("a share is not negative");
  return s;
}

PreemptionRule rule_from(const std::string& s) {
  if (auto r = parse_preemption_rule(s)) return *r;
  throw std::invalid_argument("unknown preemption rule " + s);
}

json group_to_json(const PreemptionGroup& g) {
  json victims = json::array();
  for (const auto& v : g.victims) {
    json out = {{"job", v.job}, {"team", v.team}, {"rule", preemption_rule_name(v.rule)}};
    if (v.to > 0) out["shrunk"] = {{"from", v.from}, {"to", v.to}};  // an elastic victim shrunk, not preempted
    victims.push_back(std::move(out));
  }
  json teams = json::array();
  for (const auto& t : g.teams) {
    json types = json::array();
    for (const auto& f : t.types)
      types.push_back({{"instance_type", f.instance_type}, {"nominal", to_json(f.nominal)},
                       {"usage_before", to_json(f.usage_before)}, {"usage_after", to_json(f.usage_after)},
                       {"borrowed_before", to_json(f.borrowed_before)}, {"borrowed_after", to_json(f.borrowed_after)}});
    teams.push_back({{"team", t.team}, {"share_before", share_to_json(t.share_before)},
                     {"share_after", share_to_json(t.share_after)}, {"types", types}});
  }
  json out = {{"preemptor", g.preemptor}, {"preemptor_team", g.preemptor_team}, {"victims", victims}, {"teams", teams}};
  // Only when fair sharing compared groups (a cohort tree): records of a cluster without groups stay as they were.
  if (!g.groups.empty()) {
    json groups = json::array();
    for (const auto& f : g.groups)
      groups.push_back({{"group", f.group}, {"share_before", share_to_json(f.share_before)}, {"share_after", share_to_json(f.share_after)}});
    out["groups"] = std::move(groups);
  }
  return out;
}

PreemptionGroup group_from_json(const json& j) {
  PreemptionGroup g;
  g.preemptor = j.at("preemptor").get<std::string>();
  g.preemptor_team = j.at("preemptor_team").get<std::string>();
  for (const auto& v : j.at("victims")) {
    g.victims.push_back({v.at("job").get<std::string>(), v.at("team").get<std::string>(), rule_from(v.at("rule").get<std::string>())});
    if (v.contains("shrunk")) {
      g.victims.back().from = v.at("shrunk").at("from").get<int>();
      g.victims.back().to = v.at("shrunk").at("to").get<int>();
    }
  }
  for (const auto& t : j.at("teams")) {
    PreemptionGroup::TeamFigures out{t.at("team").get<std::string>(), share_from_json(t.at("share_before")),
                          share_from_json(t.at("share_after")), {}};
    for (const auto& f : t.at("types"))
      out.types.push_back({f.at("instance_type").get<std::string>(), resources_from_json(f.at("nominal")),
                           resources_from_json(f.at("usage_before")), resources_from_json(f.at("usage_after")),
                           resources_from_json(f.at("borrowed_before")), resources_from_json(f.at("borrowed_after"))});
    g.teams.push_back(std::move(out));
  }
  if (j.contains("groups"))  // records journaled before it, and of clusters without groups, have none
    for (const auto& f : j.at("groups"))
      g.groups.push_back({f.at("group").get<std::string>(), share_from_json(f.at("share_before")), share_from_json(f.at("share_after"))});
  return g;
}

// Records written before rules and groups were journaled have neither key: they decode with both empty.
Preempt preempt_from_json(const json& j) {
  Preempt p{j.at("job").get<std::string>(), j.at("preemptor").get<std::string>(), ref_text_at(j, "reason"), {}, {}};
  if (j.contains("rule")) p.rule = rule_from(j.at("rule").get<std::string>());
  if (j.contains("group")) p.group = group_from_json(j.at("group"));
  return p;
}

struct ToJson {
  json operator()(const SetPolicy& o) const { return {{"policy", to_json(o.policy)}}; }
  json operator()(const UpsertTeam& o) const { return {{"team", to_json(o.team)}}; }
  json operator()(const RemoveTeam& o) const { return {{"team", o.team}}; }
  json operator()(const AddNode& o) const { return {{"node", to_json(o.node)}, {"address", o.address}, {"agent", o.agent}}; }
  json operator()(const RemoveNode& o) const {
    json j = {{"node", o.node}};
    if (!o.cause.empty()) j["cause"] = o.cause;
    return j;
  }
  json operator()(const NodeHealthChange& o) const {
    json out = {{"node", o.node}, {"health", node_health_name(o.health)}, {"cause", health_cause_name(o.cause)}, {"address", o.address}};
    if (!o.reason.empty()) out["reason"] = o.reason;
    if (!o.replaces.empty()) out["replaces"] = o.replaces;
    return out;
  }
  json operator()(const Cordon& o) const { return {{"node", o.node}, {"cordoned", o.cordoned}}; }
  json operator()(const Drain& o) const { return {{"node", o.node}}; }
  json operator()(const Submit& o) const { return {{"job", to_json(o.job)}}; }
  json operator()(const Cancel& o) const { return {{"job", o.job}}; }
  json operator()(const Finish& o) const {
    json out = {{"job", o.job}, {"succeeded", o.succeeded}, {"reason", o.reason}};
    if (!o.node.empty()) out["node"] = o.node;  // only when charged to a node: older records keep their body (checksums)
    return out;
  }
  json operator()(const Admit& o) const {
    json out = {{"job", o.job}, {"placement", placement_to_json(o.placement)}, {"borrowing", o.borrowing}};
    put_ref_text(out, "reason", o.reason);
    return out;
  }
  json operator()(const Preempt& o) const {
    json out = {{"job", o.job}, {"preemptor", o.preemptor}};
    put_ref_text(out, "reason", o.reason);
    if (o.rule) out["rule"] = preemption_rule_name(*o.rule);
    if (o.group) out["group"] = group_to_json(*o.group);
    return out;
  }
  json operator()(const Resize& o) const {
    json out = {{"job", o.job},   {"placement", placement_to_json(o.placement)}, {"borrowing", o.borrowing}, {"from", o.from},
                {"to", o.to},     {"cause", o.cause}, {"for_job", o.for_job}};
    put_ref_text(out, "reason", o.reason);
    if (o.rule) out["rule"] = preemption_rule_name(*o.rule);
    if (o.group) out["group"] = group_to_json(*o.group);
    return out;
  }
  json operator()(const CreateToken& o) const {
    return {{"token", token_to_json(o.token)}};
  }
  json operator()(const RevokeToken& o) const { return {{"id", o.id}}; }
  json operator()(const Audit& o) const {
    json out = {{"action", o.action}, {"target", o.target}, {"status", o.status}, {"message", o.message}};
    if (!o.source.empty()) out["source"] = o.source;
    return out;
  }
  json operator()(const HoldJob& o) const { return {{"job", o.job}, {"held", o.held}}; }
  json operator()(const SetJobPriority& o) const { return {{"job", o.job}, {"priority", o.priority}}; }
  json operator()(const DeleteJob& o) const { return {{"job", o.job}}; }
  json operator()(const CreatePlan& o) const { return {{"plan", to_json(o.plan)}}; }
  json operator()(const PlanStepRecord& o) const { return {{"plan", o.plan}, {"state", o.state}}; }
  json operator()(const DeletePlan& o) const { return {{"plan", o.plan}}; }
  json operator()(const CreateReservation& o) const { return {{"reservation", to_json(o.reservation)}}; }
  json operator()(const ReservationStepRecord& o) const { return {{"reservation", o.reservation}, {"state", o.state}}; }
  json operator()(const DeleteReservation& o) const { return {{"reservation", o.reservation}}; }
  json operator()(const CompactFinished& o) const { return {{"finished_before", o.finished_before}}; }
  json operator()(const Requeue& o) const {
    json out = {{"job", o.job}, {"node", o.node}, {"port", o.port}, {"reason", o.reason}};
    // Records of the first cause keep the bytes (and checksums) they had before causes were recorded.
    if (o.cause != RequeueCause::kRendezvousPort) out["cause"] = requeue_cause_name(o.cause);
    return out;
  }
  json operator()(const TimeLimitExceeded& o) const { return {{"job", o.job}, {"time_limit_s", o.time_limit_s}}; }
  json operator()(const LocalityWaitBegan& o) const { return {{"job", o.job}}; }
  json operator()(const StartTimeout& o) const {
    return {{"job", o.job}, {"nodes", o.nodes}, {"backoff_s", o.backoff_s}, {"reason", o.reason}};
  }
  json operator()(const CreateWebhook& o) const { return {{"webhook", webhook_to_json(o.webhook)}}; }
  json operator()(const DeleteWebhook& o) const { return {{"id", o.id}}; }
  json operator()(const LogRuleFired& o) const {
    return {{"job", o.job}, {"attempt", o.attempt}, {"kind", log_rule_kind_name(o.firing.kind)}, {"index", o.firing.index},
            {"rank", o.firing.rank}, {"line", o.firing.line}};
  }
  json operator()(const DependencyNeverHolds& o) const {
    return {{"job", o.job}, {"after", o.after}, {"condition", dependency_condition_name(o.condition)}};
  }
  json operator()(const SetNetworkLayers& o) const {
    json nodes = json::array();
    for (const auto& n : o.nodes) nodes.push_back({{"node", n.node}, {"layers", n.layers}});
    return {{"nodes", nodes}};
  }
  json operator()(const PutAdmissionCheck& o) const { return {{"check", admission_check_to_json(o.check)}}; }
  json operator()(const DeleteAdmissionCheck& o) const { return {{"name", o.name}}; }
  json operator()(const AdmissionCheckAnswered& o) const {
    return {{"job", o.job},   {"attempt", o.attempt}, {"check", o.check}, {"answer", check_answer_name(o.answer)},
            {"message", o.message}, {"backoff_s", o.backoff_s}};
  }
  json operator()(const RecoverInPlace& o) const {
    json moves = json::array();
    for (const auto& m : o.moves)
      moves.push_back({{"pod_set", m.pod_set}, {"index", m.index}, {"node", m.to.node}, {"accelerators", m.to.accelerators},
                       {"numa_domains", m.to.numa_domains}, {"cpus", m.to.cpus}});
    return {{"job", o.job}, {"node", o.node}, {"epoch", o.epoch}, {"moves", moves}};
  }
  json operator()(const InPlaceFallback& o) const { return {{"job", o.job}, {"epoch", o.epoch}, {"reason", o.reason}}; }
  json operator()(const RemoteCopyStep& o) const {
    json out = {{"job", o.job}, {"step", remote_step_name(o.step)}, {"worker", o.worker}, {"copy", o.copy}, {"reason", o.reason}};
    if (o.step == RemoteStep::kEvent) out["worker_seq"] = o.worker_seq, out["worker_kind"] = o.worker_kind;
    return out;
  }
};

}  // namespace

json job_refs_to_json(const std::vector<JobRef>& refs) {
  json out = json::array();
  for (const JobRef& r : refs) out.push_back({{"job", r.job}, {"team", r.team}, {"at", r.at}, {"size", r.size}});
  return out;
}

RefText ref_text_from_json(std::string text, const json& refs) {
  if (refs.is_null()) return RefText::refs_unknown(std::move(text));
  std::vector<JobRef> out;
  size_t end = 0;  // references are in text order and do not overlap (hiding relies on it, view/job_refs.h)
  for (const auto& r : refs) {
    JobRef ref{r.at("job").get<std::string>(), r.at("team").get<std::string>(), r.at("at").get<uint32_t>(), r.at("size").get<uint32_t>()};
    // The words must be the reference's own, where it says: a reader hides exactly those bytes.
    const std::string words = RefText::job(ref.job, ref.team).str();
    if (ref.size != words.size() || ref.at < end || ref.at > text.size() || text.compare(ref.at, ref.size, words) != 0)
      throw std::invalid_argument("reference to job " + ref.job + " of team " + ref.team + " at " + std::to_string(ref.at) +
                                  " is not in its text, after the one before it");
    end = ref.at + ref.size;
    out.push_back(std::move(ref));
  }
  return RefText(std::move(text), std::move(out));
}

void put_ref_text(json& out, const std::string& key, const RefText& text) {
  out[key] = text.str();
  if (!text.refs().empty()) out[key + "_refs"] = job_refs_to_json(text.refs());
}

RefText ref_text_at(const json& in, const std::string& key) {
  auto refs = in.find(key + "_refs");
  return ref_text_from_json(in.at(key).get<std::string>(), refs == in.end() ? json() : *refs);
}

namespace {
NodeHealthChange node_health_from_json(const json& j) {
  NodeHealthChange h{j.at("node").get<std::string>(), node_health_from_name(j.at("health").get<std::string>()),
                     health_cause_from_name(j.at("cause").get<std::string>()), j.at("address").get<std::string>(),
                     j.value("reason", std::string()), j.value("replaces", std::string())};
  // Journals written before the field existed said which node a replacement replaces in its first health change's
  // reason only ("replacement of node X: deep health check running"): read once here, so that what they retired
  // stays retired; every record written since carries the field.
  static const std::string kLegacy = "replacement of node ";
  if (!j.contains("replaces") && h.cause == HealthCause::kDeepCheck && h.reason.rfind(kLegacy, 0) == 0 &&
      h.reason.find(':') != std::string::npos)
    h.replaces = h.reason.substr(kLegacy.size(), h.reason.find(':') - kLegacy.size());
  return h;
}
}  // namespace

json webhook_to_json(const WebhookRecord& w) {
  json events = json::array();
  for (NoticeKind k : w.events) events.push_back(notice_kind_name(k));
  return {{"id", w.id},         {"team", w.team},     {"url", w.url},
          {"events", events},   {"secret", w.secret}, {"description", w.description}};
}

WebhookRecord webhook_from_json(const json& j) {
  WebhookRecord w{j.at("id").get<std::string>(), j.at("team").get<std::string>(), j.at("url").get<std::string>(), {},
                  j.at("secret").get<std::string>(), j.at("description").get<std::string>()};
  for (const auto& e : j.at("events")) {
    const std::string name = e.get<std::string>();
    auto k = parse_notice_kind(name);
    if (!k) throw std::invalid_argument("webhook " + w.id + ": unknown event kind '" + name + "'; kinds: " + notice_kind_list());
    w.events.push_back(*k);
  }
  return w;
}

json admission_check_to_json(const AdmissionCheckRecord& c) {
  return {{"name", c.name}, {"kind", admission_check_kind_name(c.kind)}, {"url", c.url}, {"teams", c.teams},
          {"priority_classes", c.priority_classes}, {"description", c.description}};
}

AdmissionCheckRecord admission_check_from_json(const json& j) {
  const std::string kind = j.at("kind").get<std::string>();
  auto k = parse_admission_check_kind(kind);
  if (!k) throw std::invalid_argument("admission check: unknown kind '" + kind + "'; kinds: " + admission_check_kind_list());
  return AdmissionCheckRecord{j.at("name").get<std::string>(), *k, j.at("url").get<std::string>(),
                              j.at("teams").get<std::vector<std::string>>(), j.at("priority_classes").get<std::vector<std::string>>(),
                              j.at("description").get<std::string>()};
}

TokenRecord token_from_json(const json& j) {
  const std::string role = j.at("role").get<std::string>();
  const std::optional<auth::Role> r = auth::parse_role(role);
  if (!r) throw std::invalid_argument("token " + j.at("id").get<std::string>() + ": unknown role '" + role + "'; roles: " + auth::role_list());
  return TokenRecord{j.at("id").get<std::string>(),       j.at("secret_hash").get<std::string>(),
                     *r,                                  j.at("teams").get<std::vector<std::string>>(),
                     j.at("node").get<std::string>(),     j.at("expires_at").get<Time>(),
                     j.at("description").get<std::string>(), j.value("max_nodes", 0),
                     j.value("joined_with", std::string()),   j.value("user", std::string())};
}

json actor_to_json(const Actor& a) {
  json j = {{"token", a.token}, {"role", actor_role_name(a.role)}, {"teams", a.teams}, {"node", a.node}};
  if (!a.user.empty()) j["user"] = a.user;  // absent: none (and in records written before users)
  return j;
}

Actor actor_from_json(const json& j) {
  const std::string role = j.at("role").get<std::string>();
  const std::optional<ActorRole> r = parse_actor_role(role);
  if (!r) throw std::invalid_argument("unknown role '" + role + "'; roles: " + actor_role_list());
  return Actor{.token = j.at("token").get<std::string>(),
               .role = *r,
               .teams = j.at("teams").get<std::vector<std::string>>(),
               .node = j.at("node").get<std::string>(),
               .user = j.value("user", std::string())};
}

namespace {

// One reader per record kind, chosen by the type it makes. No catch-all: a new kind of record does not compile
// until it has a reader here (parse_op's table is built from every alternative of Op). Throws on malformed
// input; op_from_json turns that into an Error.
struct FromJson {
  const json& j;
  template <typename T>
  using As = std::type_identity<T>;
  std::string str(const char* k) const { return j.at(k).get<std::string>(); }

  Op operator()(As<SetPolicy>) const { return SetPolicy{policy_from_json(j.at("policy"))}; }
  Op operator()(As<UpsertTeam>) const { return UpsertTeam{team_from_json(j.at("team"))}; }
  Op operator()(As<RemoveTeam>) const { return RemoveTeam{str("team")}; }
  Op operator()(As<AddNode>) const { return AddNode{node_from_json(j.at("node")), str("address"), j.at("agent").get<bool>()}; }
  Op operator()(As<RemoveNode>) const { return RemoveNode{str("node"), j.value("cause", std::string())}; }
  Op operator()(As<NodeHealthChange>) const { return node_health_from_json(j); }
  Op operator()(As<Cordon>) const { return Cordon{str("node"), j.at("cordoned").get<bool>()}; }
  Op operator()(As<Drain>) const { return Drain{str("node")}; }
  Op operator()(As<Submit>) const { return Submit{job_from_json(j.at("job"))}; }
  Op operator()(As<Cancel>) const { return Cancel{str("job")}; }
  Op operator()(As<Finish>) const {
    return Finish{str("job"), j.at("succeeded").get<bool>(), str("reason"), j.value("node", std::string())};
  }
  Op operator()(As<Admit>) const {
    return Admit{str("job"), placement_from_json(j.at("placement")), j.at("borrowing").get<bool>(), ref_text_at(j, "reason")};
  }
  Op operator()(As<Preempt>) const { return preempt_from_json(j); }
  Op operator()(As<Resize>) const {
    // A shrink's rule and preemption group; grows, and shrinks written before they were journaled, have neither.
    Resize r{str("job"),          placement_from_json(j.at("placement")), j.at("borrowing").get<bool>(),
             j.at("from").get<int>(), j.at("to").get<int>(), str("cause"), str("for_job"), ref_text_at(j, "reason"), {}, {}};
    if (j.contains("rule")) r.rule = rule_from(j.at("rule").get<std::string>());
    if (j.contains("group")) r.group = group_from_json(j.at("group"));
    return r;
  }
  Op operator()(As<CreateToken>) const { return CreateToken{token_from_json(j.at("token"))}; }
  Op operator()(As<RevokeToken>) const { return RevokeToken{str("id")}; }
  Op operator()(As<Audit>) const {
    return Audit{str("action"), str("target"), j.at("status").get<int>(), str("message"), j.value("source", "")};
  }
  Op operator()(As<HoldJob>) const { return HoldJob{str("job"), j.at("held").get<bool>()}; }
  Op operator()(As<SetJobPriority>) const { return SetJobPriority{str("job"), str("priority")}; }
  Op operator()(As<DeleteJob>) const { return DeleteJob{str("job")}; }
  Op operator()(As<CreatePlan>) const { return CreatePlan{plan_from_json(j.at("plan"))}; }
  Op operator()(As<PlanStepRecord>) const { return PlanStepRecord{str("plan"), str("state")}; }
  Op operator()(As<DeletePlan>) const { return DeletePlan{str("plan")}; }
  Op operator()(As<CreateReservation>) const { return CreateReservation{reservation_from_json(j.at("reservation"))}; }
  Op operator()(As<ReservationStepRecord>) const { return ReservationStepRecord{str("reservation"), str("state")}; }
  Op operator()(As<DeleteReservation>) const { return DeleteReservation{str("reservation")}; }
  Op operator()(As<CompactFinished>) const { return CompactFinished{j.at("finished_before").get<Time>()}; }
  Op operator()(As<Requeue>) const {
    Requeue r{str("job"), str("node"), j.at("port").get<int>(), str("reason")};
    if (j.contains("cause")) r.cause = requeue_cause_from_name(j.at("cause").get<std::string>());
    return r;
  }
  Op operator()(As<TimeLimitExceeded>) const { return TimeLimitExceeded{str("job"), j.at("time_limit_s").get<int64_t>()}; }
  Op operator()(As<LocalityWaitBegan>) const { return LocalityWaitBegan{str("job")}; }
  Op operator()(As<StartTimeout>) const {
    return StartTimeout{str("job"), j.at("nodes").get<std::vector<std::string>>(), j.at("backoff_s").get<int64_t>(), str("reason")};
  }
  Op operator()(As<CreateWebhook>) const { return CreateWebhook{webhook_from_json(j.at("webhook"))}; }
  Op operator()(As<DeleteWebhook>) const { return DeleteWebhook{str("id")}; }
  Op operator()(As<LogRuleFired>) const {
    auto kind = parse_log_rule_kind(str("kind"));
    if (!kind) throw std::invalid_argument("log_rule: kind '" + str("kind") + "' is not hung, restart or fail");
    return LogRuleFired{str("job"), j.at("attempt").get<int>(), LogRuleFiring{*kind, j.at("index").get<int>(), j.at("rank").get<int>(), str("line")}};
  }
  Op operator()(As<DependencyNeverHolds>) const {
    auto c = config::dependency_condition_named(str("condition"));
    if (!c) throw std::invalid_argument("dependency_never: condition '" + str("condition") + "' is not succeeded, ended or started");
    return DependencyNeverHolds{str("job"), str("after"), *c};
  }
  Op operator()(As<SetNetworkLayers>) const {
    SetNetworkLayers out;
    for (const auto& n : j.at("nodes"))
      out.nodes.push_back(NodeLayers{n.at("node").get<std::string>(), n.at("layers").get<std::vector<std::string>>()});
    return out;
  }
  Op operator()(As<PutAdmissionCheck>) const { return PutAdmissionCheck{admission_check_from_json(j.at("check"))}; }
  Op operator()(As<DeleteAdmissionCheck>) const { return DeleteAdmissionCheck{str("name")}; }
  Op operator()(As<AdmissionCheckAnswered>) const {
    auto a = parse_check_answer(str("answer"));
    if (!a) throw std::invalid_argument("admission_check: answer '" + str("answer") + "' is not ready, retry or reject");
    return AdmissionCheckAnswered{str("job"), j.at("attempt").get<int>(), str("check"), *a, str("message"), j.at("backoff_s").get<int64_t>()};
  }
  Op operator()(As<RecoverInPlace>) const {
    RecoverInPlace out{str("job"), str("node"), j.at("epoch").get<int>(), {}};
    for (const auto& m : j.at("moves"))
      out.moves.push_back({m.at("pod_set").get<int>(), m.at("index").get<int>(),
                           ReplicaRecord{m.at("node").get<std::string>(), m.at("accelerators").get<std::vector<int>>(),
                                         m.at("numa_domains").get<std::vector<int>>(), m.at("cpus").get<std::string>()}});
    return out;
  }
  Op operator()(As<InPlaceFallback>) const { return InPlaceFallback{str("job"), j.at("epoch").get<int>(), str("reason")}; }
  Op operator()(As<RemoteCopyStep>) const {
    auto s = parse_remote_step(str("step"));
    if (!s)
      throw std::invalid_argument("remote_copy: step '" + str("step") +
                                  "' is not dispatched, running, succeeded, failed, lost, withdrawn or event");
    RemoteCopyStep out{str("job"), *s, str("worker"), str("copy"), str("reason")};
    if (*s == RemoteStep::kEvent) {
      out.worker_seq = j.at("worker_seq").get<uint64_t>();
      out.worker_kind = str("worker_kind");
      if (out.worker_seq == 0) throw std::invalid_argument("remote_copy: an event's worker_seq is 1 or more");
    }
    return out;
  }
};

// Each kind's name (op_name, the one spelling the writer uses) with its reader, for every alternative of Op.
using Reader = Op (*)(const FromJson&);
template <size_t... I>
std::array<std::pair<std::string_view, Reader>, sizeof...(I)> readers(std::index_sequence<I...>) {
  return {std::pair<std::string_view, Reader>{
      op_name(Op{std::in_place_index<I>}),
      [](const FromJson& f) { return f(std::type_identity<std::variant_alternative_t<I, Op>>{}); }}...};
}

Op parse_op(const json& j) {
  static const auto kReaders = readers(std::make_index_sequence<std::variant_size_v<Op>>{});
  const std::string kind = j.at("op").get<std::string>();
  for (const auto& [name, read] : kReaders)
    if (name == kind) return read(FromJson{j});
  throw std::invalid_argument("unknown record kind '" + kind + "'");
}

}  // namespace

json op_to_json(const Op& op) {
  json j = std::visit(ToJson{}, op);
  j["op"] = op_name(op);
  return j;
}

Result<Op> op_from_json(const json& j) {
  try {
    return parse_op(j);
  } catch (const std::exception& e) {
    return Error::internal(std::string("malformed journal record: ") + e.what());
  }
}

Result<std::vector<std::string>> record_bodies(const std::vector<Record>& batch) {
  std::vector<std::string> bodies;
  bodies.reserve(batch.size());
  try {
    for (const Record& r : batch) bodies.push_back(record_body_json(r).dump());
  } catch (const std::exception& e) {
    return Error::internal(std::string("cannot encode a journal record: ") + e.what());
  }
  return bodies;
}

json record_body_json(const Record& r) {
  json j = op_to_json(r.op);
  if (r.actor != Actor{}) j["actor"] = actor_to_json(r.actor);
  return j;
}

Result<Actor> actor_of_body(const json& body) {
  if (!body.contains("actor")) return Actor{};
  try {
    return actor_from_json(body.at("actor"));
  } catch (const std::exception& e) {
    return Error::internal(std::string("malformed journal record: actor: ") + e.what());
  }
}

json record_to_json(const Record& r) {
  json j = record_body_json(r);
  j["seq"] = r.seq;
  j["at"] = r.at;
  return j;
}

Result<Record> record_from_json(const json& j) {
  auto op = op_from_json(j);
  if (!op) return op.error();
  auto actor = actor_of_body(j);
  if (!actor) return actor.error();
  try {
    return Record{j.at("seq").get<uint64_t>(), j.at("at").get<Time>(), std::move(*op), std::move(*actor)};
  } catch (const std::exception& e) {
    return Error::internal(std::string("malformed journal record: ") + e.what());
  }
}

Result<Record> record_from_row(uint64_t seq, Time at, std::string_view body, const std::string& where) {
  auto j = json::parse(body, nullptr, /*allow_exceptions=*/false);
  const std::string place = "database " + where + ": record " + std::to_string(seq);
  if (j.is_discarded()) return Error::internal(place + " is not valid JSON");
  auto op = op_from_json(j);
  if (!op) return Error::internal(place + ": " + op.error().message);
  auto actor = actor_of_body(j);
  if (!actor) return Error::internal(place + ": " + actor.error().message);
  return Record{seq, at, std::move(*op), std::move(*actor)};
}

json preemption_group_to_json(const PreemptionGroup& g) { return group_to_json(g); }
PreemptionGroup preemption_group_from_json(const json& j) { return group_from_json(j); }

}  // namespace allot::store
