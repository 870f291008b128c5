#pragma once
// Sample journal records shared by the store tests: one or more of every record kind, with every field set.
#include <vector>

#include "store/record.h"

namespace allot::store {

inline JobSpec full_job() {
  JobSpec j;
  j.name = "train-1";
  j.team = "team-a";
  j.priority = "training";
  PodSetSpec a;
  a.name = "workers";
  a.replicas = 4;
  a.instance_type = "ml.p5.48xlarge";
  a.per_replica.accelerators = 8;
  a.per_replica.vcpu_milli = 96500;
  a.per_replica.memory_mib = 1024 * 1024;
  a.topology.required = "network-node-layer-3";
  a.topology.slice = SliceSpec{"ultraserver", 2};
  a.topology.exclusive = "network-node-layer-2";
  PodSetSpec b;
  b.name = "driver";
  b.per_replica.whole_node = true;
  b.topology.preferred = "zone";
  j.pod_sets = {a, b};
  j.max_retries = 3;
  j.checkpoint_interval_s = 600;
  j.duration_s = 3600;
  j.command = {"/bin/sh", "-c", "echo \"hi\"\n"};
  j.env = {{"A", "1"}, {"EMPTY", ""}};
  j.labels = {{"app", "llm"}, {"kueue.x-k8s.io/queue-name", "hyperpod-ns-team-a-localqueue"}};
  j.plan = "reserved";
  j.log_rules = LogRules{ProgressRule{"step \\d+", 600}, {"NCCL (timeout|error)"}, {"loss.*nan", "Traceback"}};
  j.after = {{"prep-1", DependencyCondition::kSucceeded}, {"warmup", DependencyCondition::kStarted}};
  j.recovery = Recovery::kInPlace;
  j.recovery_timeout_s = 90;
  j.membership_signal = "SIGUSR1";
  return j;
}

// A group with two victims of two rules and fractional amounts, and a cohort group's shares, so every field and
// unit is exercised.
inline PreemptionGroup preemption_group() {
  const Resources one{1, 32000, 131072}, half_cpu{0, 500, 1};
  return PreemptionGroup{
      "serve-1",
      "team-b",
      {{"train-1", "team-a", PreemptionRule::kReclaim}, {"serve-0", "team-b", PreemptionRule::kPriority}},
      {{"team-b", Share{0, 10}, Share{1, 20}, {{"ml.g5.8xlarge", one * 2, one, one * 3, Resources{}, one}}},
       {"team-a", Share{3, 40}, Share{1, 0}, {{"ml.g5.8xlarge", one, one * 2 + half_cpu, one, one + half_cpu, Resources{}}}}},
      {{"research", Share{2, 9}, Share{1, 9}}}};  // a cohort group fair sharing compared
}

inline std::vector<Op> every_kind() {
  PolicySpec p;
  p.task_prioritization = TaskPrioritization::kTaskRanking;
  p.idle_compute = IdleCompute::kFcfs;
  p.idle_pool = true;
  p.priority_classes = {{"inference", 100}, {"training", 70}};
  p.min_runtime_s = 60;
  p.starvation_threshold_s = 7200;
  p.elastic_grow_delay_s = 900;
  TeamSpec t;
  t.name = "team-a";
  t.fair_share_weight = 10;
  AmountSpec inst;
  inst.instances = 2;
  AmountSpec acc;
  acc.accelerators = 3;
  acc.vcpu_milli = 1500;
  acc.memory_mib = 2048;
  t.allocation = {{"ml.g5.8xlarge", inst}, {"ml.p5.48xlarge", acc}};
  t.strategy = SharingStrategy::kLend;
  t.borrow_limit = 200;
  t.preempt_team_tasks = PreemptTeamTasks::kNever;
  NodeSpec n{"gpu-1", "ml.p5.48xlarge", "group-a", {{"network-node-layer-3", "nn-3a"}, {"zone", "use1-az1"}}};
  Admit admit{"train-1",
              {{"ml.p5.48xlarge", Resources{8, 192000, 2048 * 1024}, {{"gpu-1", {0, 1, 2, 3, 4, 5, 6, 7}, {0, 1}, "0-191"}}},
               {"ml.g5.8xlarge", Resources{1, 32000, 131072}, {{"gpu-2", {0}, {0}, "0-31"}, {"gpu-3", {0}, {0}, "0-31"}}}},
              true,
              "admitted by borrowing 8 accelerators"};
  JobSpec elastic = full_job();
  elastic.name = "train-elastic";
  elastic.pod_sets[0].min_replicas = 2;
  Resize resize{"train-elastic",
                {{"ml.g5.8xlarge", Resources{1, 32000, 131072}, {{"gpu-2", {0}, {0}, "0-31"}, {"gpu-3", {0}, {0}, "0-31"}}}},
                true,
                1,
                2,
                "shrink",
                "serve-1",
                "gave up 1 replica above its min to job serve-1"};
  return {SetPolicy{p},
          UpsertTeam{t},
          RemoveTeam{"team-b"},
          AddNode{n, "10.0.0.7", true},
          RemoveNode{"gpu-9"},
          NodeHealthChange{"gpu-1", NodeHealth::kUnschedulablePendingReboot, HealthCause::kTimeout, ""},
          NodeHealthChange{"gpu-1", NodeHealth::kSchedulable, HealthCause::kAgent, "10.0.0.8"},
          NodeHealthChange{"gpu-1", NodeHealth::kUnschedulablePendingReplacement, HealthCause::kAdmin, ""},
          NodeHealthChange{"gpu-1", NodeHealth::kUnschedulablePendingReboot, HealthCause::kHealthCheck, "",
                           "check gpu failed: XID 79 on GPU 2"},
          NodeHealthChange{"gpu-4", NodeHealth::kUnschedulable, HealthCause::kDeepCheck, "", "deep health check running"},
          NodeHealthChange{"gpu-5", NodeHealth::kUnschedulable, HealthCause::kDeepCheck, "",
                           "replacement of node gpu-1: deep health check running", "gpu-1"},
          Cordon{"gpu-2", true},
          Cordon{"gpu-2", false},
          Drain{"gpu-3"},
          Submit{full_job()},
          Submit{elastic},
          Cancel{"train-2"},
          Finish{"train-1", true, "all 4 replicas exited with code 0"},
          Finish{"train-1", false, "replica 2 exited with code 137"},
          Finish{"train-1", false, "node gpu-2 is failing (missed heartbeats); replica 0 exited with code 1 on gpu-1 after it", "gpu-2"},
          admit,
          Preempt{"train-1", "serve-1", "reclaimed by team-b"},  // as written before rules and groups were
          Preempt{"train-1", "serve-1", "preempted (reclaim): team team-b takes back its lent quota for job serve-1",
                  PreemptionRule::kReclaim, preemption_group()},
          resize,
          CreateToken{TokenRecord{"3f9a2c1b7e", std::string(64, 'a'), auth::Role::kMember, {"team-a", "team-b"}, "", 1800000000, "CI"}},
          CreateToken{TokenRecord{"0123456789", std::string(64, 'b'), auth::Role::kAgent, {}, "gpu-1", 0, ""}},
          RevokeToken{"3f9a2c1b7e"},
          Audit{"POST /v1/jobs/b-1/cancel", "b-1", 403, "needs a member token of team b"},
          HoldJob{"train-3", true},
          HoldJob{"train-3", false},
          SetJobPriority{"train-3", "inference"},
          SetJobPriority{"train-3", ""},
          DeleteJob{"train-2"},
          CreatePlan{PlanSpec{"reserved", "ml.p5.48xlarge", 4, 1800000000, 1800086400, 600, "team-a",
                              {{"network-node-layer-3", "nn-3p"}}}},
          PlanStepRecord{"reserved", "Active"},
          DeletePlan{"reserved"},
          CompactFinished{1700000000},
          Requeue{"train-7", "gpu-1", 29517, "MASTER_PORT 29517 was in use on node gpu-1, rank 0's"},
          TimeLimitExceeded{"train-7", 3600},
          LocalityWaitBegan{"train-7"},
          StartTimeout{"train-7", {"gpu-2", "gpu-3"}, 120, "not every replica was running 300 s after its agents were given the run"},
          CreateWebhook{WebhookRecord{"9c1e5a7b3d", "", "https://hooks.example.com/allot", {NoticeKind::kJobFailed, NoticeKind::kNodeReplaced},
                                      std::string(64, 'c'), "on-call"}},
          CreateWebhook{WebhookRecord{"7a2b4c6d8e", "team-a", "http://127.0.0.1:9000/h", {NoticeKind::kJobPreempted}, std::string(64, 'd'), ""}},
          DeleteWebhook{"9c1e5a7b3d"},
          LogRuleFired{"train-7", 3, LogRuleFiring{LogRuleKind::kFail, 0, 1, "step 7 loss: nan \\x1b"}},
          DependencyNeverHolds{"eval-7", "train-7", DependencyCondition::kSucceeded},
          SetNetworkLayers{{NodeLayers{"gpu-1", {"nn-1a", "nn-2b", "nn-3c"}}, NodeLayers{"gpu-2", {"nn-1a", "nn-2b", "nn-3d", "nn-4e"}}}},
          PutAdmissionCheck{AdmissionCheckRecord{"budget", AdmissionCheckKind::kHttp, "https://budget.example.com/check",
                                                 {"team-a", "team-b"}, {"production"}, "the finance team's budget gate"}},
          PutAdmissionCheck{AdmissionCheckRecord{"on-plan", AdmissionCheckKind::kCapacityPlanActive, "", {}, {}, ""}},
          AdmissionCheckAnswered{"train-7", 4, "budget", CheckAnswer::kRetry, "over budget until 12:00", 20},
          AdmissionCheckAnswered{"train-7", 5, "on-plan", CheckAnswer::kReady, "", 0},
          DeleteAdmissionCheck{"budget"},
          CreateReservation{ReservationSpec{"maint", "team-a", "alice", {"gpu-1", "gpu-2"}, "", 0, 1800000000, 1800086400}},
          CreateReservation{ReservationSpec{"eval", "team-b", "", {}, "ml.p5.48xlarge", 2, 1800000000, 1800003600}},
          ReservationStepRecord{"maint", "Active"},
          DeleteReservation{"eval"},
          RecoverInPlace{"train-7", "gpu-1", 2, {ReplicaMoveRecord{0, 1, ReplicaRecord{"gpu-3", {0, 1}, {0}, "0-47"}},
                                                 ReplicaMoveRecord{1, 0, ReplicaRecord{"gpu-4", {}, {}, ""}}}},
          InPlaceFallback{"train-7", 2, "node gpu-1 failed; in-place recovery did not finish within 120 s"},
          RemoteCopyStep{"train-9", RemoteStep::kDispatched, "east", "train-9-1", ""},
          RemoteCopyStep{"train-9", RemoteStep::kRunning, "east", "train-9-1", "admitted on gpu-1 within team a's nominal quota"},
          RemoteCopyStep{"train-9", RemoteStep::kLost, "east", "train-9-1", "it answered nothing for 61 s, its lease is 60 s"},
          RemoteCopyStep{"train-9", RemoteStep::kWithdrawn, "east", "train-9-1", ""},
          RemoteCopyStep{"train-9", RemoteStep::kSucceeded, "west", "train-9-2", "all 1 replicas exited with code 0"},
          RemoteCopyStep{"train-9", RemoteStep::kFailed, "west", "train-9-2", "replica 0 exited with code 1"},
          RemoteCopyStep{"train-9", RemoteStep::kEvent, "west", "train-9-2", "admitted on gpu-1", 57, "admit"}};
}

}  // namespace allot::store
