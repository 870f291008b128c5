#include "interop/k8s_manifest.h"

#include <algorithm>
#include <charconv>
#include <random>
#include <set>

#include "config/spec_yaml.h"
#include "core/model/labels.h"
#include "interop/k8s_pod.h"

namespace allot::interop {
namespace {

using k8s::Field;
using k8s::PodTemplate;

constexpr const char* kQueueLabel = "kueue.x-k8s.io/queue-name";
constexpr const char* kPriorityLabel = "kueue.x-k8s.io/priority-class";
// The capacity plan the job runs on (allot's job spec `plan:`; docs/plans.md). A label, as the queue and the
// priority class are, so that `kubectl get -l allot.dev/plan=NAME` finds a plan's jobs.
constexpr const char* kPlanLabel = "allot.dev/plan";
constexpr int kMaxReplicas = 100'000;
// Kueue's partial admission: a Job may run with as few as this many of its `parallelism` pods.
constexpr const char* kMinParallelism = "kueue.x-k8s.io/job-min-parallelism";
// JobSet's exclusive placement: each child Job alone in a domain of this topology label.
constexpr const char* kExclusiveTopology = "alpha.jobset.sigs.k8s.io/exclusive-topology";

bool strip_prefix(std::string_view& s, std::string_view prefix) {
  if (s.size() <= prefix.size() || s.substr(0, prefix.size()) != prefix) return false;
  s.remove_prefix(prefix.size());
  return true;
}
bool strip_suffix(std::string_view& s, std::string_view suffix) {
  if (s.size() <= suffix.size() || s.substr(s.size() - suffix.size()) != suffix) return false;
  s.remove_suffix(suffix.size());
  return true;
}

// Rejects keys outside `known` at the levels allot interprets, so a misspelt field (paralellism) is an error
// rather than a silently different job.
Status only_known(const Field& m, const std::set<std::string>& known) {
  if (!m.present()) return ok_status();
  if (auto st = m.expect_map(); !st) return st.error();
  for (const auto& kv : m.node()) {
    const std::string key = kv.first.Scalar();
    if (!known.count(key)) {
      std::string list;
      for (const auto& k : known) list += (list.empty() ? "" : ", ") + k;
      return m.child(key).error("unknown or unsupported field; allot reads " + list);
    }
  }
  return ok_status();
}

// Name, team, priority and the topology annotations that sit on the object itself.
Status read_metadata(const Field& doc, JobSpec& spec, std::vector<std::string>& warnings, std::string* priority_label) {
  const Field meta = doc.child("metadata");
  if (auto st = meta.expect_map(); !st) return meta.error("is required (a map with name and namespace)");
  const Field name = meta.child("name");
  const Field generate = meta.child("generateName");
  if (!name.present() && generate.present()) {
    auto g = generate.str();
    if (!g) return g.error();
    spec.name = generated_name(*g);
    warnings.push_back("metadata.generateName: the job is named " + spec.name);
  } else {
    if (!name.present()) return name.error("is required (or metadata.generateName)");
    auto n = name.str();
    if (!n) return n.error();
    spec.name = *n;
  }

  const Field labels = meta.child("labels");
  if (labels.present()) {
    if (auto st = labels.expect_map(); !st) return st.error();
    // Every label is kept on the job (selectors: `allot jobs -l`, `cancel --selector`), Kueue's own included.
    for (const auto& kv : labels.node()) {
      const std::string key = kv.first.as<std::string>();
      auto v = labels.entry(key, kv.second).str();
      if (!v) return v.error();
      if (std::string why = label_problem(key, *v); !why.empty()) return labels.entry(key, kv.second).error(why);
      spec.labels[key] = *v;
    }
    if (spec.labels.size() > kMaxLabels)
      return labels.error("has " + std::to_string(spec.labels.size()) + " labels; at most " + std::to_string(kMaxLabels));
  }
  const Field queue = labels.child(kQueueLabel);
  const Field ns = meta.child("namespace");
  if (queue.present()) {
    auto q = queue.str();
    if (!q) return q.error();
    spec.team = team_from_queue_name(*q);
    if (ns.present())
      if (auto v = ns.str(); v && team_from_namespace(*v) != spec.team)
        warnings.push_back(ns.warning("names team " + team_from_namespace(*v) + " but the label " + kQueueLabel + " names team " +
                                      spec.team + "; the label wins"));
  } else if (ns.present()) {
    auto v = ns.str();
    if (!v) return v.error();
    spec.team = team_from_namespace(*v);
  } else {
    return meta.error(std::string("cannot tell the team: set the label ") + kQueueLabel +
                      " (hyperpod-ns-<team>-localqueue) or metadata.namespace (hyperpod-ns-<team>), or give "
                      "allot submit --queue-name");
  }
  const Field prio = labels.child(kPriorityLabel);
  if (prio.present()) {
    auto p = prio.str();
    if (!p) return p.error();
    spec.priority = priority_from_class(*p);
    *priority_label = *p;
  }
  const Field plan = labels.child(kPlanLabel);
  if (plan.present()) {
    auto p = plan.str();
    if (!p) return p.error();
    spec.plan = *p;  // checked when the job is submitted: an unknown or ended plan is refused there
  }
  return ok_status();
}

// Pod-set annotations on the object's own metadata are a common slip (Kueue reads them from the pod
// template); honour them for templates that have none, and say where they belong.
Status object_annotations_fallback(const Field& doc, std::vector<PodTemplate*> templates,
                                   std::vector<std::string>& warnings) {
  const Field ann = doc.child("metadata").child("annotations");
  if (!ann.present() || !ann.node().IsMap()) return ok_status();
  PodTemplate probe;
  if (auto st = k8s::read_topology_annotations(ann, probe); !st) return st.error();
  if (probe.topology.empty()) return ok_status();
  bool used = false;
  for (PodTemplate* t : templates) {
    if (!t->topology.empty()) continue;
    t->topology = probe.topology;
    t->slice_size = probe.slice_size;
    used = true;
  }
  if (used)
    warnings.push_back(ann.warning("topology annotations belong on the pod template (spec.template.metadata."
                                   "annotations); used from here since the template has none"));
  return ok_status();
}

PodSetSpec pod_set_of(const PodTemplate& t, std::string name, int replicas) {
  PodSetSpec ps;
  ps.name = std::move(name);
  ps.replicas = replicas;
  ps.instance_type = t.instance_type;
  ps.per_replica = t.per_replica;
  ps.topology = t.topology;
  return ps;
}

Status check_slice(const Field& tmpl, const PodTemplate& t, int replicas) {
  if (t.slice_size > replicas)
    return tmpl.child("metadata").child("annotations").error(
        "kueue.x-k8s.io/podset-slice-size " + std::to_string(t.slice_size) + " is larger than the " +
        std::to_string(replicas) + " replicas");
  return ok_status();
}

// A batch Job's podFailurePolicy: only rules whose effect allot already has are taken (a rule that counts a
// failure against backoffLimit, as every failure is counted; a rule that ignores pods disrupted by preemption,
// which never uses a retry in allot). Any other rule would make the job end or retry differently from what was
// written, so the manifest is refused, naming the rule.
Status check_pod_failure_policy(const Field& policy) {
  if (!policy.present()) return ok_status();
  if (auto st = only_known(policy, {"rules"}); !st) return st.error();
  const Field rules = policy.child("rules");
  if (!rules.present()) return ok_status();
  if (auto st = rules.expect_list(); !st) return st.error();
  const std::string allowed =
      "allot honours only rules with action Count (every failure counts against backoffLimit, as allot counts it) and "
      "action Ignore onPodConditions DisruptionTarget (preemption never uses a retry in allot); remove the rule or "
      "submit without podFailurePolicy";
  for (size_t i = 0; i < rules.node().size(); ++i) {
    const Field rule = rules.item(i);
    auto action = rule.child("action").str();
    if (!action) return action.error();
    if (*action == "Count") continue;
    if (*action == "Ignore" && !rule.child("onExitCodes").present()) {
      const Field conds = rule.child("onPodConditions");
      bool disruption_only = conds.present() && conds.node().IsSequence() && conds.node().size() > 0;
      for (size_t c = 0; disruption_only && c < conds.node().size(); ++c) {
        auto type = conds.item(c).child("type").str();
        disruption_only = type && *type == "DisruptionTarget";
      }
      if (disruption_only) continue;
    }
    return rule.error("action " + *action + " cannot be honoured: " + allowed);
  }
  return ok_status();
}

// activeDeadlineSeconds (a Job's spec, a Kubeflow job's runPolicy, a JobSet's replicated job templates) is the
// job's wall-time limit (core/lifecycle/time_limit.h): stopped at it, Failed with reason deadline_exceeded, as Kubernetes
// ends a Job with reason DeadlineExceeded. Where several are given (a JobSet's replicated jobs, which start
// together as one gang), the smallest holds, with a warning.
Status read_active_deadline(const Field& f, ManifestJob& out) {
  if (!f.present()) return ok_status();
  auto s = f.integer(1, kMaxSeconds);
  if (!s) return s.error();
  if (out.spec.time_limit_s && *out.spec.time_limit_s != *s)
    out.warnings.push_back(f.warning("differs from another activeDeadlineSeconds of the job; the smallest, " +
                                     std::to_string(std::min(*out.spec.time_limit_s, *s)) + " s, is the whole gang's time limit"));
  out.spec.time_limit_s = std::min(out.spec.time_limit_s.value_or(*s), *s);
  return ok_status();
}

Result<ManifestJob> read_batch_job(const Field& doc) {
  ManifestJob out;
  if (auto st = only_known(doc, {"apiVersion", "kind", "metadata", "spec", "status"}); !st) return st.error();
  if (auto st = read_metadata(doc, out.spec, out.warnings, &out.priority_label); !st) return st.error();
  const Field spec = doc.child("spec");
  if (auto st = spec.expect_map(); !st) return spec.error("is required");
  if (auto st = only_known(spec, {"parallelism", "completions", "completionMode", "backoffLimit",
                                  "backoffLimitPerIndex", "maxFailedIndexes", "activeDeadlineSeconds",
                                  "ttlSecondsAfterFinished", "suspend", "template", "podFailurePolicy",
                                  "podReplacementPolicy", "selector", "manualSelector", "managedBy",
                                  "successPolicy"});
      !st)
    return st.error();
  int replicas = 1;
  if (spec.child("parallelism").present()) {
    auto p = spec.child("parallelism").integer(1, kMaxReplicas);
    if (!p) return p.error();
    replicas = static_cast<int>(*p);
  }
  std::optional<int64_t> completions;
  if (spec.child("completions").present()) {
    auto c = spec.child("completions").integer(1, kMaxArrayCount);
    if (!c) return c.error();
    completions = *c;
  }
  if (spec.child("backoffLimit").present()) {
    auto b = spec.child("backoffLimit").integer(0, 1000);
    if (!b) return b.error();
    out.spec.max_retries = static_cast<int>(*b);
  }
  // completionMode: Indexed gives each pod JOB_COMPLETION_INDEX; allot gives each replica its index (its RANK).
  bool indexed = false;
  if (const Field mode = spec.child("completionMode"); mode.present()) {
    auto m = mode.str();
    if (!m) return m.error();
    if (*m == "Indexed") indexed = true;
    else if (*m != "NonIndexed") return mode.error("must be NonIndexed or Indexed, got " + *m);
  }
  // An Indexed Job with more completions than parallelism is a job array (core/model/array.h): `completions` tasks of one
  // pod each, at most `parallelism` at once, each with its JOB_COMPLETION_INDEX, and backoffLimitPerIndex (else
  // backoffLimit) the retries of each task. Otherwise the pods are one gang of `parallelism` replicas.
  if (indexed && completions && *completions > replicas) {
    out.spec.array = ArraySpec{.count = static_cast<int>(*completions), .parallel = replicas};
    replicas = 1;
    if (const Field per = spec.child("backoffLimitPerIndex"); per.present()) {
      auto b = per.integer(0, 1000);
      if (!b) return b.error();
      out.spec.max_retries = static_cast<int>(*b);
    }
  } else {
    out.spec.completion_index = indexed;
    if (completions && *completions != replicas)
      out.warnings.push_back(spec.child("completions").warning(
          indexed ? "allot runs `parallelism` replicas once, as one gang; completions below parallelism is not used"
                  : "allot runs `parallelism` replicas once, as one gang; completions is not used (with completionMode: "
                    "Indexed and completions above parallelism, the Job is an array of `completions` tasks)"));
  }
  if (auto st = check_pod_failure_policy(spec.child("podFailurePolicy")); !st) return st.error();
  if (auto st = read_active_deadline(spec.child("activeDeadlineSeconds"), out); !st) return st.error();
  const Field tmpl = spec.child("template");
  auto t = k8s::read_pod_template(tmpl, out.warnings);
  if (!t) return t.error();
  if (auto st = object_annotations_fallback(doc, {&*t}, out.warnings); !st) return st.error();
  if (auto st = check_slice(tmpl, *t, replicas); !st) return st.error();
  out.spec.pod_sets.push_back(pod_set_of(*t, "main", replicas));
  // Kueue's partial admission: the Job runs with as few as min-parallelism pods, an elastic pod set of that min.
  if (const Field minp = doc.child("metadata").child("annotations").child(kMinParallelism); minp.present()) {
    if (out.spec.array)
      return minp.error("does not apply to an Indexed Job with completions above parallelism: that is an array of "
                        "one-pod tasks, which cannot be elastic; remove the annotation");
    auto text = minp.str();
    if (!text) return text.error();
    int64_t n = 0;
    const auto [end, ec] = std::from_chars(text->data(), text->data() + text->size(), n);
    if (ec != std::errc() || end != text->data() + text->size() || n < 1 || n > replicas)
      return minp.error("must be a whole number of pods, 1.." + std::to_string(replicas) + " (the parallelism), got \"" + *text + "\"");
    if (n < replicas) out.spec.pod_sets.back().min_replicas = static_cast<int>(n);
  }
  out.spec.command = t->command;
  out.spec.env = t->env;
  out.spec.container = t->container;
  return out;
}

Result<ManifestJob> read_pytorch_job(const Field& doc) {
  ManifestJob out;
  if (auto st = only_known(doc, {"apiVersion", "kind", "metadata", "spec", "status"}); !st) return st.error();
  if (auto st = read_metadata(doc, out.spec, out.warnings, &out.priority_label); !st) return st.error();
  const Field spec = doc.child("spec");
  if (auto st = spec.expect_map(); !st) return spec.error("is required");
  if (auto st = only_known(spec, {"pytorchReplicaSpecs", "runPolicy", "elasticPolicy", "nprocPerNode"}); !st)
    return st.error();
  // elasticPolicy makes the workers elastic (docs/job-spec.md, "Elastic jobs"): between minReplicas and
  // maxReplicas, read after the replica specs below.
  const Field elastic = spec.child("elasticPolicy");
  if (elastic.present())
    if (auto st = only_known(elastic, {"minReplicas", "maxReplicas", "rdzvBackend", "rdzvPort", "rdzvHost", "rdzvId",
                                       "rdzvConf", "standalone", "nProcPerNode", "maxRestarts", "metrics"});
        !st)
      return st.error();
  const Field run = spec.child("runPolicy");
  if (run.child("backoffLimit").present()) {
    auto b = run.child("backoffLimit").integer(0, 1000);
    if (!b) return b.error();
    out.spec.max_retries = static_cast<int>(*b);
  }
  if (auto st = read_active_deadline(run.child("activeDeadlineSeconds"), out); !st) return st.error();
  const Field specs = spec.child("pytorchReplicaSpecs");
  if (auto st = only_known(specs, {"Master", "Worker"}); !st) return st.error();
  if (!specs.present() || specs.node().size() == 0) return specs.error("needs Master and/or Worker");

  struct Part {
    std::string name;
    int replicas;
    PodTemplate t;
  };
  std::vector<Part> parts;
  for (const char* type : {"Master", "Worker"}) {  // Master first: it is rank 0
    const Field rs = specs.child(type);
    if (!rs.present()) continue;
    if (auto st = only_known(rs, {"replicas", "restartPolicy", "template"}); !st) return st.error();
    int replicas = 1;
    if (rs.child("replicas").present()) {
      auto r = rs.child("replicas").integer(0, kMaxReplicas);
      if (!r) return r.error();
      replicas = static_cast<int>(*r);
    }
    if (replicas == 0) continue;
    auto t = k8s::read_pod_template(rs.child("template"), out.warnings);
    if (!t) return t.error();
    parts.push_back({type == std::string("Master") ? "master" : "worker", replicas, std::move(*t)});
  }
  if (parts.empty()) return specs.error("has no replicas");
  std::vector<PodTemplate*> templates;
  for (auto& p : parts) templates.push_back(&p.t);
  if (auto st = object_annotations_fallback(doc, templates, out.warnings); !st) return st.error();
  for (const auto& p : parts)
    if (auto st = check_slice(specs.child(p.name == "master" ? "Master" : "Worker").child("template"), p.t, p.replicas); !st)
      return st.error();
  // Master and workers that ask for the same thing are one gang of ranks 0..N-1, which lets a topology
  // request hold all of them together; different requests need a pod set each.
  bool same = parts.size() == 2 && parts[0].t.per_replica == parts[1].t.per_replica &&
              parts[0].t.instance_type == parts[1].t.instance_type && parts[0].t.topology == parts[1].t.topology;
  if (same && parts[0].t.topology.slice) same = false;  // slices count per pod set
  if (parts.size() == 1 || same) {
    int total = 0;
    for (const auto& p : parts) total += p.replicas;
    out.spec.pod_sets.push_back(pod_set_of(parts[0].t, "main", total));
  } else {
    for (const auto& p : parts) out.spec.pod_sets.push_back(pod_set_of(p.t, p.name, p.replicas));
  }
  if (elastic.present()) {
    const auto worker = std::find_if(parts.begin(), parts.end(), [](const Part& p) { return p.name == "worker"; });
    if (worker == parts.end()) return elastic.error("needs Worker replicas to resize");
    const int masters = static_cast<int>(parts.size()) - 1;  // a master merged into "main" stays a fixed rank 0
    int lo = worker->replicas, hi = worker->replicas;
    if (elastic.child("minReplicas").present()) {
      auto r = elastic.child("minReplicas").integer(1, kMaxReplicas);
      if (!r) return r.error();
      lo = static_cast<int>(*r);
    }
    if (elastic.child("maxReplicas").present()) {
      auto r = elastic.child("maxReplicas").integer(1, kMaxReplicas);
      if (!r) return r.error();
      hi = static_cast<int>(*r);
    }
    if (lo > hi) return elastic.child("minReplicas").error("is above maxReplicas (" + std::to_string(hi) + ")");
    PodSetSpec& ps = out.spec.pod_sets.size() == 1 ? out.spec.pod_sets.front() : out.spec.pod_sets.back();
    const int fixed = out.spec.pod_sets.size() == 1 ? masters : 0;
    ps.replicas = hi + fixed;
    if (lo < hi) ps.min_replicas = lo + fixed;
  }
  // Every rank runs the same program in a PyTorchJob (torchrun tells them apart by RANK); take the master's.
  out.spec.command = parts[0].t.command;
  out.spec.env = parts[0].t.env;
  out.spec.container = parts[0].t.container;
  // torchrun's processes per replica ("8", "auto", "gpu"), passed on as the training operator does.
  if (spec.child("nprocPerNode").present()) {
    auto n = spec.child("nprocPerNode").str();
    if (!n) return n.error();
    out.spec.env["PET_NPROC_PER_NODE"] = *n;
  }
  if (parts.size() == 2 && parts[0].t.command != parts[1].t.command)
    out.warnings.push_back(specs.warning("Master and Worker commands differ; every rank runs the Master's"));
  if (parts.size() == 2 && !(parts[0].t.container == parts[1].t.container))
    out.warnings.push_back(specs.warning("Master and Worker containers (image, args, volumes, /dev/shm) differ; every rank runs the Master's"));
  return out;
}

// A JobSet (jobset.x-k8s.io/v1alpha2): each replicatedJob is a pod set of replicas x parallelism pods, with
// its pod template's topology annotations (Kueue's TAS reads them there, slices included). The whole set is
// one gang, as Kueue admits it. Every rank runs the first replicated job's command, as in a PyTorchJob.
Result<ManifestJob> read_jobset(const Field& doc) {
  ManifestJob out;
  if (auto st = only_known(doc, {"apiVersion", "kind", "metadata", "spec", "status"}); !st) return st.error();
  if (auto st = read_metadata(doc, out.spec, out.warnings, &out.priority_label); !st) return st.error();
  const Field spec = doc.child("spec");
  if (auto st = spec.expect_map(); !st) return spec.error("is required");
  if (auto st = only_known(spec, {"replicatedJobs", "network", "successPolicy", "failurePolicy", "startupPolicy",
                                  "suspend", "coordinator", "managedBy", "ttlSecondsAfterFinished"});
      !st)
    return st.error();
  if (const Field mr = spec.child("failurePolicy").child("maxRestarts"); mr.present()) {
    auto m = mr.integer(0, 1000);
    if (!m) return m.error();
    out.spec.max_retries = static_cast<int>(*m);
  }
  for (const char* ignored : {"successPolicy", "startupPolicy", "network", "coordinator"})
    if (spec.child(ignored).present())
      out.warnings.push_back(spec.child(ignored).warning("ignored: allot starts and ends the whole set as one gang"));
  // exclusive-topology on the JobSet applies to every replicated job; one on a replicated job's template, to it.
  std::string exclusive;
  if (const Field ex = doc.child("metadata").child("annotations").child(kExclusiveTopology); ex.present()) {
    auto v = ex.str();
    if (!v) return v.error();
    exclusive = *v;
  }
  const Field jobs = spec.child("replicatedJobs");
  if (auto st = jobs.expect_list(); !st) return jobs.error("is required (a list of replicated jobs)");
  if (jobs.node().size() == 0) return jobs.error("lists no replicated job");
  std::vector<PodTemplate> templates;
  // dependsOn (JobSet's: the replicated job's child jobs are created once those it names are Ready or Complete):
  // per pod set (replicated job with replicas), the earlier replicated jobs it names and the condition.
  std::vector<std::string> set_names;                // of the pod sets, in order
  std::vector<std::vector<JobDependency>> depends;  // by pod set; names are replicated jobs' names here
  bool any_depends = false;
  for (size_t i = 0; i < jobs.node().size(); ++i) {
    const Field rj = jobs.item(i);
    if (auto st = only_known(rj, {"name", "replicas", "template", "dependsOn", "groupName"}); !st) return st.error();
    auto name = rj.child("name").str();
    if (!name) return name.error();
    int64_t replicas = 1;
    if (rj.child("replicas").present()) {
      auto r = rj.child("replicas").integer(0, kMaxReplicas);
      if (!r) return r.error();
      replicas = *r;
    }
    std::vector<JobDependency> after;
    if (const Field dep = rj.child("dependsOn"); dep.present()) {
      if (auto st = dep.expect_list(); !st) return dep.error("must be a list of {name, status}");
      for (size_t k = 0; k < dep.node().size(); ++k) {
        const Field d = dep.item(k);
        if (auto st = only_known(d, {"name", "status"}); !st) return st.error();
        auto on = d.child("name").str();
        if (!on) return on.error();
        auto status = d.child("status").str();
        if (!status) return status.error();
        // Ready: the child jobs are running (allot: started); Complete: they succeeded (allot: succeeded).
        DependencyCondition c = DependencyCondition::kSucceeded;
        if (*status == "Ready") c = DependencyCondition::kStarted;
        else if (*status != "Complete") return d.child("status").error("must be Ready or Complete, not " + *status);
        if (std::find(set_names.begin(), set_names.end(), *on) == set_names.end())
          return d.child("name").error("names " + *on + ", which is not an earlier replicated job with replicas");
        after.push_back(JobDependency{.job = *on, .condition = c});
      }
    }
    const Field jspec = rj.child("template").child("spec");
    if (auto st = jspec.expect_map(); !st) return jspec.error("is required (the Job spec of the replicated job)");
    int64_t parallelism = 1;
    if (jspec.child("parallelism").present()) {
      auto p = jspec.child("parallelism").integer(1, kMaxReplicas);
      if (!p) return p.error();
      parallelism = *p;
    }
    if (replicas == 0) continue;
    if (auto st = read_active_deadline(jspec.child("activeDeadlineSeconds"), out); !st) return st.error();
    if (replicas * parallelism > kMaxReplicas)
      return rj.child("replicas").error("times parallelism is more than " + std::to_string(kMaxReplicas) + " pods");
    const Field tmpl = jspec.child("template");
    auto t = k8s::read_pod_template(tmpl, out.warnings);
    if (!t) return t.error();
    const int pods = static_cast<int>(replicas * parallelism);
    if (auto st = check_slice(tmpl, *t, pods); !st) return st.error();
    if (!templates.empty() && t->command != templates[0].command)
      out.warnings.push_back(rj.warning("its command differs from the first replicated job's; every rank runs the first's"));
    out.spec.pod_sets.push_back(pod_set_of(*t, *name, pods));
    set_names.push_back(*name);
    any_depends |= !after.empty();
    depends.push_back(std::move(after));
    std::string own = exclusive;
    if (const Field ex = rj.child("template").child("metadata").child("annotations").child(kExclusiveTopology); ex.present()) {
      auto v = ex.str();
      if (!v) return v.error();
      own = *v;
    }
    // JobSet places each child job in one domain of that level, alone: for one child job, topology required
    // and exclusive at that level. Several child jobs share the pod set, so they get exclusive domains, but not
    // one each (said so). The level is checked against the server's levels when the job is submitted.
    if (!own.empty()) {
      TopologySpec& topo = out.spec.pod_sets.back().topology;
      topo.exclusive = own;
      if (replicas == 1 && topo.required.empty() && topo.preferred.empty()) topo.required = own;
      if (replicas > 1)
        out.warnings.push_back(rj.warning("exclusive-topology: the " + std::to_string(replicas) + " child jobs get " + own +
                                          " domains no other job uses, but not one domain each"));
    }
    templates.push_back(std::move(*t));
  }
  if (templates.empty()) return jobs.error("has no replicas");
  if (any_depends) {
    // One gang cannot honour an order inside it: each replicated job becomes its own allot job, NAME-RJ, naming
    // the earlier ones it depends on in `after` (docs/from-kueue-hyperpod.md, "JobSet dependsOn"), each with its own
    // template's command and container.
    const JobSpec whole = out.spec;
    std::vector<JobSpec> chain;
    for (size_t i = 0; i < whole.pod_sets.size(); ++i) {
      JobSpec one = whole;
      one.name = whole.name + "-" + set_names[i];
      one.pod_sets = {whole.pod_sets[i]};
      one.command = templates[i].command;
      one.env = templates[i].env;
      one.container = templates[i].container;
      for (const JobDependency& d : depends[i]) one.after.push_back({whole.name + "-" + d.job, d.condition});
      chain.push_back(std::move(one));
    }
    out.warnings.push_back("dependsOn: the " + std::to_string(chain.size()) + " replicated jobs are submitted as " +
                           std::to_string(chain.size()) + " jobs (" + whole.name + "-<replicated job>), each its own gang, "
                           "chained with after (Ready: started, Complete: succeeded)");
    out.spec = std::move(chain.front());
    out.chained.assign(std::make_move_iterator(chain.begin() + 1), std::make_move_iterator(chain.end()));
    return out;
  }
  out.spec.command = templates[0].command;
  out.spec.env = templates[0].env;
  out.spec.container = templates[0].container;
  for (size_t i = 1; i < templates.size(); ++i)
    if (!(templates[i].container == templates[0].container)) {
      out.warnings.push_back("the pod templates' containers (image, args, volumes, /dev/shm) differ; every rank runs the first's");
      break;
    }
  return out;
}

// An MPIJob (kubeflow.org/v2beta1): the Launcher and the Workers become pod sets `launcher` and `worker`
// (Launcher first: rank 0). allot has no ssh launch: every rank runs the Launcher's command with RANK,
// MASTER_ADDR and MASTER_PORT set, so mpirun's start of the workers over ssh does not happen; a warning says
// so, as it does for what else does not carry over.
Result<ManifestJob> read_mpi_job(const Field& doc) {
  ManifestJob out;
  if (auto st = only_known(doc, {"apiVersion", "kind", "metadata", "spec", "status"}); !st) return st.error();
  if (auto st = read_metadata(doc, out.spec, out.warnings, &out.priority_label); !st) return st.error();
  const Field spec = doc.child("spec");
  if (auto st = spec.expect_map(); !st) return spec.error("is required");
  if (auto st = only_known(spec, {"mpiReplicaSpecs", "runPolicy", "slotsPerWorker", "sshAuthMountPath",
                                  "mpiImplementation", "launcherCreationPolicy", "runLauncherAsWorker"});
      !st)
    return st.error();
  if (const Field b = spec.child("runPolicy").child("backoffLimit"); b.present()) {
    auto n = b.integer(0, 1000);
    if (!n) return n.error();
    out.spec.max_retries = static_cast<int>(*n);
  }
  if (auto st = read_active_deadline(spec.child("runPolicy").child("activeDeadlineSeconds"), out); !st) return st.error();
  const Field specs = spec.child("mpiReplicaSpecs");
  if (auto st = only_known(specs, {"Launcher", "Worker"}); !st) return st.error();
  if (!specs.child("Launcher").present()) return specs.child("Launcher").error("is required (it runs mpirun)");
  std::vector<PodTemplate> templates;
  for (const char* type : {"Launcher", "Worker"}) {
    const Field rs = specs.child(type);
    if (!rs.present()) continue;
    if (auto st = only_known(rs, {"replicas", "restartPolicy", "template"}); !st) return st.error();
    int replicas = 1;
    if (rs.child("replicas").present()) {
      auto r = rs.child("replicas").integer(0, kMaxReplicas);
      if (!r) return r.error();
      replicas = static_cast<int>(*r);
    }
    if (replicas == 0) continue;
    auto t = k8s::read_pod_template(rs.child("template"), out.warnings);
    if (!t) return t.error();
    if (auto st = check_slice(rs.child("template"), *t, replicas); !st) return st.error();
    out.spec.pod_sets.push_back(pod_set_of(*t, type == std::string("Launcher") ? "launcher" : "worker", replicas));
    templates.push_back(std::move(*t));
  }
  if (templates.empty()) return specs.error("has no replicas");
  out.spec.command = templates[0].command;
  out.spec.env = templates[0].env;
  out.spec.container = templates[0].container;
  for (size_t i = 1; i < templates.size(); ++i)
    if (!(templates[i].container == templates[0].container)) {
      out.warnings.push_back("the pod templates' containers (image, args, volumes, /dev/shm) differ; every rank runs the first's");
      break;
    }
  out.warnings.push_back(specs.warning(
      "every rank runs the Launcher's command (allot sets RANK, MASTER_ADDR and MASTER_PORT; it does not start "
      "workers over ssh for mpirun): use a program that starts from those variables"));
  for (const char* ignored : {"slotsPerWorker", "sshAuthMountPath", "mpiImplementation"})
    if (spec.child(ignored).present()) out.warnings.push_back(spec.child(ignored).warning("ignored"));
  return out;
}

// HyperPod's own HyperPodPyTorchJob (sagemaker.amazonaws.com/v1), what `hyp create hyp-pytorch-job` makes:
// spec.replicaSpecs is a list of {name, replicas, template}; each is a pod set, one gang, and every rank runs
// the first's command (HyperPod's training operator starts torchrun in each pod; allot sets RANK,
// MASTER_ADDR and MASTER_PORT for it). runPolicy.jobMaxRetryCount is the retries; nprocPerNode is passed on
// as PET_NPROC_PER_NODE, as for a PyTorchJob. Elastic training: a replica spec with maxReplicas (and
// spec.elasticPolicy's minReplicas/maxReplicas) is an elastic pod set from minReplicas (else its replicas) to
// maxReplicas, as a PyTorchJob's elasticPolicy makes its workers. What HyperPod's operator does beyond that
// (spares, scaling steps and timeouts, log monitoring, resume) is ignored with a warning.
Result<ManifestJob> read_hyperpod_pytorch_job(const Field& doc) {
  ManifestJob out;
  if (auto st = only_known(doc, {"apiVersion", "kind", "metadata", "spec", "status"}); !st) return st.error();
  if (auto st = read_metadata(doc, out.spec, out.warnings, &out.priority_label); !st) return st.error();
  const Field spec = doc.child("spec");
  if (auto st = spec.expect_map(); !st) return spec.error("is required");
  for (const auto& kv : spec.node()) {
    const std::string key = kv.first.Scalar();
    if (key != "replicaSpecs" && key != "runPolicy" && key != "nprocPerNode" && key != "elasticPolicy")
      out.warnings.push_back(spec.child(key).warning("ignored: HyperPod's training operator reads it, allot does not"));
  }
  if (const Field r = spec.child("runPolicy").child("jobMaxRetryCount"); r.present()) {
    auto n = r.integer(0, 1000);
    if (!n) return n.error();
    out.spec.max_retries = static_cast<int>(*n);
  }
  // elasticPolicy's sizes; the scaling steps and timeouts are the operator's business.
  const Field elastic = spec.child("elasticPolicy");
  std::optional<int> elastic_min, elastic_max;
  if (elastic.present()) {
    if (auto st = elastic.expect_map(); !st) return st.error();
    for (const auto& kv : elastic.node()) {
      const std::string key = kv.first.Scalar();
      const Field f = elastic.child(key);
      if (key == "minReplicas" || key == "maxReplicas") {
        auto r = f.integer(1, kMaxReplicas);
        if (!r) return r.error();
        (key == "minReplicas" ? elastic_min : elastic_max) = static_cast<int>(*r);
      } else {
        out.warnings.push_back(f.warning("ignored: allot grows an elastic job by any number of replicas into capacity "
                                         "idle for policy.elastic_grow_delay, and shrinks it when others need the room"));
      }
    }
    if (elastic_min && elastic_max && *elastic_min > *elastic_max)
      return elastic.child("minReplicas").error("is above maxReplicas (" + std::to_string(*elastic_max) + ")");
  }
  const Field specs = spec.child("replicaSpecs");
  if (auto st = specs.expect_list(); !st) return specs.error("is required (a list of {name, replicas, template})");
  std::vector<PodTemplate> templates;
  std::optional<size_t> elastic_set;  // the pod set with maxReplicas
  for (size_t i = 0; i < specs.node().size(); ++i) {
    const Field rs = specs.item(i);
    if (auto st = only_known(rs, {"name", "replicas", "minReplicas", "maxReplicas", "spares", "template"}); !st)
      return st.error();
    auto name = rs.child("name").str();
    if (!name) return name.error();
    int replicas = 1;
    if (rs.child("replicas").present()) {
      auto r = rs.child("replicas").integer(0, kMaxReplicas);
      if (!r) return r.error();
      replicas = static_cast<int>(*r);
    }
    std::optional<int> lo, hi;
    for (const char* key : {"minReplicas", "maxReplicas"})
      if (rs.child(key).present()) {
        auto r = rs.child(key).integer(1, kMaxReplicas);
        if (!r) return r.error();
        (key == std::string("minReplicas") ? lo : hi) = static_cast<int>(*r);
      }
    if (rs.child("spares").present())
      out.warnings.push_back(rs.child("spares").warning("ignored: allot restarts a failed rank on any free node"));
    if (replicas == 0 && !hi) continue;
    auto t = k8s::read_pod_template(rs.child("template"), out.warnings);
    if (!t) return t.error();
    if (auto st = check_slice(rs.child("template"), *t, std::max(replicas, hi.value_or(0))); !st) return st.error();
    if (!templates.empty() && t->command != templates[0].command)
      out.warnings.push_back(rs.warning("its command differs from the first replica spec's; every rank runs the first's"));
    PodSetSpec ps = pod_set_of(*t, *name, replicas);
    if (hi) {
      if (elastic_set) return rs.child("maxReplicas").error("is set on a second replica spec; allot resizes one pod set only");
      if (elastic_max && *elastic_max != *hi)
        return rs.child("maxReplicas").error("is " + std::to_string(*hi) + " but spec.elasticPolicy.maxReplicas is " +
                                             std::to_string(*elastic_max) + "; they must match");
      const int low = lo.value_or(elastic_min.value_or(std::max(replicas, 1)));
      if (low > *hi) return rs.child("maxReplicas").error("is below the smallest size (" + std::to_string(low) + ")");
      ps.replicas = *hi;
      if (low < *hi) ps.min_replicas = low;
      elastic_set = out.spec.pod_sets.size();
    } else if (lo) {
      return rs.child("minReplicas").error("needs maxReplicas (an elastic replica spec runs between the two)");
    }
    out.spec.pod_sets.push_back(std::move(ps));
    templates.push_back(std::move(*t));
  }
  if (templates.empty()) return specs.error("has no replicas");
  if (elastic.present() && !elastic_set) {
    // elasticPolicy without a replica spec's maxReplicas: it sizes the only replica spec.
    if (out.spec.pod_sets.size() != 1)
      return elastic.error("needs maxReplicas on the replica spec it resizes (there are " +
                           std::to_string(out.spec.pod_sets.size()) + ")");
    PodSetSpec& ps = out.spec.pod_sets.front();
    const int hi = elastic_max.value_or(ps.replicas), lo = elastic_min.value_or(ps.replicas);
    if (lo > hi) return elastic.error("minReplicas " + std::to_string(lo) + " is above maxReplicas " + std::to_string(hi));
    ps.replicas = hi;
    if (lo < hi) ps.min_replicas = lo;
  }
  out.spec.command = templates[0].command;
  out.spec.env = templates[0].env;
  out.spec.container = templates[0].container;
  for (size_t i = 1; i < templates.size(); ++i)
    if (!(templates[i].container == templates[0].container)) {
      out.warnings.push_back("the pod templates' containers (image, args, volumes, /dev/shm) differ; every rank runs the first's");
      break;
    }
  // torchrun's processes per replica ("8", "auto", "gpu"), passed on as the training operator does.
  if (spec.child("nprocPerNode").present()) {
    auto n = spec.child("nprocPerNode").str();
    if (!n) return n.error();
    out.spec.env["PET_NPROC_PER_NODE"] = *n;
  }
  return out;
}

Result<ManifestJob> read_manifest(const YAML::Node& node, const std::string& origin) {
  const Field doc(origin, node);
  if (!is_k8s_manifest(node)) return doc.error("not a Kubernetes object (apiVersion and kind are required)");
  auto api = doc.child("apiVersion").str();
  if (!api) return api.error();
  auto kind = doc.child("kind").str();
  if (!kind) return kind.error();
  if (*kind == "Job" && *api == "batch/v1") return read_batch_job(doc);
  if (*kind == "PyTorchJob" && *api == "kubeflow.org/v1") return read_pytorch_job(doc);
  if (*kind == "JobSet" && *api == "jobset.x-k8s.io/v1alpha2") return read_jobset(doc);
  if (*kind == "MPIJob" && *api == "kubeflow.org/v2beta1") return read_mpi_job(doc);
  // AWS's documentation spells the kind HyperPodPytorchJob, its blog and the hyp CLI HyperPodPyTorchJob.
  if ((*kind == "HyperPodPyTorchJob" || *kind == "HyperPodPytorchJob") && *api == "sagemaker.amazonaws.com/v1")
    return read_hyperpod_pytorch_job(doc);
  return doc.child("kind").error("allot submits batch/v1 Job, kubeflow.org/v1 PyTorchJob, jobset.x-k8s.io/v1alpha2 JobSet, kubeflow.org/v2beta1 MPIJob and sagemaker.amazonaws.com/v1 HyperPodPyTorchJob, not " + *api + " " +
                                 *kind);
}

}  // namespace

std::string team_from_queue_name(std::string_view queue) {
  std::string_view s = queue;
  if (strip_prefix(s, "hyperpod-ns-")) strip_suffix(s, "-localqueue");
  return std::string(s);
}

std::string team_from_namespace(std::string_view ns) {
  std::string_view s = ns;
  strip_prefix(s, "hyperpod-ns-");
  return std::string(s);
}

std::string pick_priority_class(const std::string& label, const std::vector<std::string>& classes) {
  if (std::find(classes.begin(), classes.end(), label) != classes.end()) return label;
  return priority_from_class(label);
}

std::string generated_name(const std::string& prefix) {
  static const char kAlphabet[] = "bcdfghjklmnpqrstvwxz2456789";
  std::random_device rd;
  std::uniform_int_distribution<size_t> pick(0, sizeof(kAlphabet) - 2);
  std::string name = prefix;
  for (int i = 0; i < 5; ++i) name += kAlphabet[pick(rd)];
  return name;
}

std::string priority_from_class(std::string_view cls) {
  std::string_view s = cls;
  strip_suffix(s, "-priority");
  return std::string(s);
}

bool is_k8s_manifest(const YAML::Node& doc) {
  return doc.IsMap() && doc["apiVersion"].IsDefined() && doc["kind"].IsDefined();
}

Result<ManifestJob> job_from_manifest(const YAML::Node& node, const std::string& origin, const std::string& queue_name) {
  // The readers check types before converting, so yaml-cpp should not throw; if it does, the exception
  // still becomes an Error rather than crossing the module boundary.
  try {
    if (queue_name.empty()) return read_manifest(node, origin);
    // --queue-name is the label as if the file had it: the team comes from it, and the job carries it.
    YAML::Node copy = YAML::Clone(node);
    if (copy.IsMap() && copy["metadata"].IsMap() && (!copy["metadata"]["labels"] || copy["metadata"]["labels"].IsMap()))
      copy["metadata"]["labels"][kQueueLabel] = queue_name;
    return read_manifest(copy, origin);
  } catch (const YAML::Exception& e) {
    return Error::invalid(origin + ":" + std::to_string(e.mark.line + 1) + ": " + e.msg);
  }
}


}  // namespace allot::interop
