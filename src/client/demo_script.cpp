#include "client/demo_script.h"

#include <filesystem>
#include <fstream>
#include <ostream>
#include <set>
#include <sstream>
#include <thread>

#include "client/spec_json.h"
#include "config/spec_yaml.h"

namespace allot::client::demo {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using namespace std::chrono_literals;

constexpr auto kStepTimeout = 20s;

const char* kTeams = R"(# The demo's cluster policy and teams. Change it and run `allot apply` on it.
policy:
  task_prioritization: task-ranking
  priority_classes:
    - {name: inference, weight: 100}
    - {name: training, weight: 50}
teams:
  - name: team-a
    fair_share_weight: 50
    allocation:
      - {instance_type: ml.g5.8xlarge, instances: 2}
    sharing: {strategy: LendAndBorrow, borrow_limit: 100}
  - name: team-b
    fair_share_weight: 50
    allocation:
      - {instance_type: ml.g5.8xlarge, instances: 2}
    sharing: {strategy: LendAndBorrow, borrow_limit: 100}
)";

// Each replica says who it is (as the agent set it up), then works for `steps` seconds, keeping its step in
// ALLOT_CHECKPOINT_DIR: a run after a preemption or a restart continues from the last step it saved.
std::string replica_script(int steps) {
  return "echo \"[$ALLOT_JOB] rank $RANK of $WORLD_SIZE, attempt $ALLOT_ATTEMPT, "
         "CUDA_VISIBLE_DEVICES=$CUDA_VISIBLE_DEVICES, MASTER_ADDR=$MASTER_ADDR:$MASTER_PORT, "
         "cpus $(grep Cpus_allowed_list /proc/self/status | cut -f2)\"; "
         "f=$ALLOT_CHECKPOINT_DIR/rank-$RANK; i=0; "
         "if [ -f \"$f\" ]; then i=$(cat \"$f\"); echo \"resumed from step $i (restart $ALLOT_RESTART_COUNT)\"; fi; "
         "while [ $i -lt " + std::to_string(steps) + " ]; do i=$((i+1)); echo \"step $i\"; echo $i >\"$f\"; sleep 1; done";
}

struct JobFile {
  const char* name;
  const char* team;
  const char* priority;
  int replicas;
  int steps;
  const char* topology;  // a required level, or ""
};

const JobFile kJobs[] = {
    {"a-train", "team-a", "training", 3, 600, ""},
    {"b-serve", "team-b", "inference", 2, 4, ""},
    {"a-urgent", "team-a", "inference", 2, 3, ""},
    {"b-ring", "team-b", "training", 2, 600, "network-node-layer-3"},
    {"a-wide", "team-a", "training", 3, 10, "network-node-layer-3"},
};

std::string job_yaml(const JobFile& j) {
  std::string y = std::string("name: ") + j.name + "\nteam: " + j.team + "\npriority: " + j.priority +
                  "\nreplicas: " + std::to_string(j.replicas) + "\ninstance_type: ml.g5.8xlarge\n" +
                  "per_replica: {accelerators: 1}\nmax_retries: 3\ncheckpoint_interval: 1\n";
  if (*j.topology) y += std::string("topology: {required: ") + j.topology + "}\n";
  std::string script = replica_script(j.steps);
  std::string quoted;
  for (char c : script) quoted += c == '\'' ? std::string("''") : std::string(1, c);
  return y + "command: '" + quoted + "'\n";
}

std::string path_in(const Cluster& c, const std::string& rel) { return (fs::path(c.data_dir) / rel).string(); }

class Steps {
 public:
  Steps(ApiClient& api, const Cluster& c, std::ostream& out) : api_(api), c_(c), out_(out) {}

  void title(const std::string& t) { out_ << "\n" << t << "\n"; }
  void say(const std::string& t) { out_ << "   " << t << "\n"; }
  void command(const std::string& args) { out_ << "   $ " << c_.cli << " " << args << "\n"; }

  Status submit(const std::string& name) {
    const std::string file = path_in(c_, "jobs/" + name + ".yaml");
    command("submit " + file);
    std::ifstream in(file);
    std::stringstream text;
    text << in.rdbuf();
    auto doc = load_yaml(text.str(), {file, "", 0});
    if (!doc) return doc.error();
    auto spec = parse_job_spec(*doc, Catalog::builtin(), {file, "", 0});
    if (!spec) return spec.error();
    auto r = api_.post("/v1/jobs", job_body(*spec));
    if (!r) return r.error();
    return ok_status();
  }

  // Polls the job until its state is one of `states`; the error says what it was instead.
  Result<json> wait(const std::string& name, std::set<std::string> states, const std::string& what) {
    json last;
    for (auto deadline = std::chrono::steady_clock::now() + kStepTimeout; std::chrono::steady_clock::now() < deadline;
         std::this_thread::sleep_for(100ms)) {
      auto j = api_.get("/v1/jobs/" + url_encode(name));
      if (!j) return j.error();
      last = *j;
      if (states.count(last.value("state", ""))) return last;
    }
    return Error::internal("timed out after " + std::to_string(kStepTimeout.count()) + " s waiting for " + name + " to " +
                           what + "; it is " + last.value("state", "?") + " (" + last.value("reason", "") + ")");
  }

  void show(const json& j) {
    std::string state = j.value("state", "");
    if (j.value("borrowing", false)) state += ", borrowing";
    std::string nodes;
    for (const auto& n : j.value("nodes", json::array())) nodes += (nodes.empty() ? "" : ", ") + n.get<std::string>();
    say(j.value("name", "") + ": " + state + (nodes.empty() ? "" : " on " + nodes));
    say("  why: " + j.value("reason", ""));
  }

  // The first line rank `replica` printed in its current attempt: proof that a real process runs.
  void show_log(const std::string& name, int replica, const std::string& attempt) {
    const std::string want = "attempt " + attempt + ",";
    for (auto deadline = std::chrono::steady_clock::now() + 5s; std::chrono::steady_clock::now() < deadline;
         std::this_thread::sleep_for(100ms)) {
      auto t = api_.get_text(with_query("/v1/jobs/" + url_encode(name) + "/logs",
                                        {{"replica", std::to_string(replica)}, {"tail", "4096"}}));
      if (!t) return;
      auto at = t->rfind(want);
      if (at == std::string::npos) continue;
      auto start = t->rfind('\n', at);
      start = start == std::string::npos ? 0 : start + 1;
      say("  rank " + std::to_string(replica) + " printed: " + t->substr(start, t->find('\n', at) - start));
      return;
    }
    say("  (no output from rank " + std::to_string(replica) + " yet)");
  }

  Status cancel(const std::string& name) {
    command("cancel " + name);
    auto r = api_.post("/v1/jobs/" + url_encode(name) + "/cancel");
    return r ? ok_status() : Status(r.error());
  }

  // "gpu-1: nn-3a, gpu-2: nn-3a": where the job's nodes sit at one topology level.
  std::string domains_of(const json& job, const std::string& level) {
    auto nodes = api_.get("/v1/nodes");
    if (!nodes) return "";
    std::string out;
    for (const auto& n : job.value("nodes", json::array()))
      for (const auto& node : *nodes)
        if (node.value("name", "") == n.get<std::string>())
          out += (out.empty() ? "" : ", ") + n.get<std::string>() + " is under " +
                 node.value("topology", json::object()).value(level, std::string("?"));
    return out;
  }

  // Injects uncorrectable ECC errors on the node of the job's rank 1 and follows what happens: the agent's
  // check reports it, the node is rebooted, the job restarts once on healthy nodes and continues from its
  // checkpoint, and the reboot brings the node back.
  Status node_fault(const json& job) {
    const json nodes = job.value("nodes", json::array());
    if (nodes.size() < 2) return Error::internal("the demo's b-ring should run on two nodes");
    const std::string node = job["placement"][0]["replicas"][1].value("node", nodes[1].get<std::string>());
    const std::string faults = path_in(c_, "faults/" + node);
    say("Every agent runs its health checks each second; emulated nodes read injected faults from a file.");
    say("Uncorrectable ECC errors appear on GPU 0 of " + node + ", where b-ring's rank 1 runs:");
    out_ << "   $ echo 'ecc gpu 0' >> " << faults << "\n";
    std::ofstream(faults, std::ios::app) << "ecc gpu 0\n";
    const auto t0 = std::chrono::steady_clock::now();
    json j;
    for (auto deadline = t0 + kStepTimeout;; std::this_thread::sleep_for(100ms)) {
      if (std::chrono::steady_clock::now() > deadline)
        return Error::internal("timed out waiting for b-ring to restart after the fault on " + node + "; it is " +
                               j.value("state", "?") + " (" + j.value("reason", "") + ")");
      auto r = api_.get("/v1/jobs/b-ring");
      if (!r) return r.error();
      j = *r;
      if (j.value("restarts", 0) == 1 && j.value("state", "") == "Running") break;
    }
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count();
    if (auto n = api_.get("/v1/nodes/" + url_encode(node)); n) {
      say(node + ": " + n->value("health", "") + " (" + n->value("health_reason", "") + ")");
      if (n->value("health", "") == "Schedulable")
        for (const auto& h : n->value("health_history", json::array()))
          if (h.value("to", "") == "UnschedulablePendingReboot") say("  it was UnschedulablePendingReboot: " + h.value("reason", ""));
    }
    say("b-ring restarted once, " + std::to_string(ms) + " ms after the fault was written:");
    show(j);
    if (j.contains("restart_history") && !j["restart_history"].empty())
      say("  restart cause: " + j["restart_history"][0].value("cause", ""));
    show_resumed("b-ring", 1);
    for (auto deadline = std::chrono::steady_clock::now() + kStepTimeout; std::chrono::steady_clock::now() < deadline;
         std::this_thread::sleep_for(200ms)) {
      auto n = api_.get("/v1/nodes/" + url_encode(node));
      if (n && n->value("health", "") == "Schedulable") {
        say(node + " rebooted (its emulated devices reset), passed its checks and is Schedulable again: " +
            n->value("health_reason", ""));
        break;
      }
    }
    command("describe b-ring            # the restart, its cause and the work lost; goodput");
    command("describe node " + node + "     # the checks and the node's health history");
    return ok_status();
  }

  // The line where rank `replica` continued from its checkpoint after a restart.
  void show_resumed(const std::string& name, int replica) {
    for (auto deadline = std::chrono::steady_clock::now() + 10s; std::chrono::steady_clock::now() < deadline;
         std::this_thread::sleep_for(100ms)) {
      auto t = api_.get_text(with_query("/v1/jobs/" + url_encode(name) + "/logs", {{"replica", std::to_string(replica)}, {"tail", "4096"}}));
      if (!t) return;
      auto at = t->rfind("resumed from step");
      if (at == std::string::npos) continue;
      say("  rank " + std::to_string(replica) + " printed: " + t->substr(at, t->find('\n', at) - at));
      return;
    }
    say("  (rank " + std::to_string(replica) + " has not printed its resumed step yet)");
  }

  std::string team_line(const std::string& team) {
    auto t = api_.get("/v1/teams/" + url_encode(team));
    if (!t) return team + ": ?";
    auto acc = [&](const char* k) { return std::to_string((*t)[k].value("accelerators", 0)); };
    return team + ": nominal " + acc("nominal") + " GPUs, using " + acc("usage") + ", borrowed " + acc("borrowed") +
           ", lent " + acc("lent");
  }

 private:
  ApiClient& api_;
  const Cluster& c_;
  std::ostream& out_;
};

std::string attempt_of(const json& j) { return std::to_string(j.value("preemptions", 0) + j.value("restarts", 0)); }

}  // namespace

Status write_files(const Cluster& c) {
  std::error_code ec;
  fs::create_directories(path_in(c, "jobs"), ec);
  if (ec) return Error::internal("cannot create " + path_in(c, "jobs") + ": " + ec.message());
  std::ofstream(path_in(c, "teams.yaml")) << kTeams;
  for (const auto& j : kJobs) std::ofstream(path_in(c, std::string("jobs/") + j.name + ".yaml")) << job_yaml(j);
  if (!c.image.empty())
    std::ofstream(path_in(c, "jobs/c-hello.yaml"))
        << "name: c-hello\nteam: team-a\ninstance_type: ml.g5.8xlarge\nper_replica: {vcpu: 1}\n"
        << "image: " << c.image << "\nimage_pull_policy: Never\n"
        << "command:\n  - /bin/sh\n  - -c\n  - |\n"
        << "    echo \"attempt $ALLOT_ATTEMPT, in a container: $(cat /etc/allot-demo-image), uid $(id -u) inside, which is host uid "
           "$(tr -s ' ' </proc/self/uid_map | cut -d ' ' -f 3)\"\n";
  return ok_status();
}

Status apply_teams(ApiClient& api, const Cluster& c) {
  const std::string file = path_in(c, "teams.yaml");
  auto doc = load_yaml(kTeams, {file, "", 0});
  if (!doc) return doc.error();
  auto policy = parse_policy((*doc)["policy"], {file, "policy", 0});
  if (!policy) return policy.error();
  auto teams = parse_teams((*doc)["teams"], Catalog::builtin(), {file, "teams", 0});
  if (!teams) return teams.error();
  json body = {{"policy", policy_body(*policy)}, {"teams", json::array()}};
  for (const auto& t : *teams) body["teams"].push_back(team_body(t));
  auto r = api.post("/v1/apply", body);
  return r ? ok_status() : Status(r.error());
}

Status walkthrough(ApiClient& api, const Cluster& c, std::ostream& out) {
  Steps s(api, c, out);
#define TRY(expr)                           \
  do {                                      \
    if (auto st_ = (expr); !st_) return st_.error(); \
  } while (0)
#define WAIT(var, ...)                      \
  auto var = s.wait(__VA_ARGS__);           \
  if (!var) return var.error()

  s.title("1. Submission and borrowing");
  s.say("team-a submits a 3-GPU training job. Its quota is 2 GPUs; team-b is idle, so team-a borrows the third.");
  TRY(s.submit("a-train"));
  WAIT(train, "a-train", {"Running"}, "start");
  s.show(*train);
  s.show_log("a-train", 0, "0");
  s.say(s.team_line("team-a"));

  s.title("2. Reclaim: team-b takes its quota back");
  s.say("team-b submits a 2-GPU inference job. Only 1 GPU is free, and team-b's quota is lent to team-a,");
  s.say("so the scheduler preempts the borrower. a-train keeps its place in the queue and resumes later.");
  TRY(s.submit("b-serve"));
  WAIT(serve, "b-serve", {"Running"}, "start");
  s.show(*serve);
  WAIT(suspended, "a-train", {"Suspended"}, "be preempted");
  s.show(*suspended);
  s.say("b-serve works for a few seconds and exits 0; then a-train runs again.");
  WAIT(served, "b-serve", {"Succeeded"}, "finish");
  s.show(*served);
  WAIT(resumed, "a-train", {"Running"}, "resume");
  s.show(*resumed);
  s.show_log("a-train", 0, attempt_of(*resumed));

  s.title("3. Priorities inside a team");
  s.say("team-a submits an urgent 2-GPU inference job. Nothing of team-b's can be reclaimed, so it preempts");
  s.say("team-a's own lower-priority a-train.");
  TRY(s.submit("a-urgent"));
  WAIT(urgent, "a-urgent", {"Running"}, "start");
  s.show(*urgent);
  WAIT(again, "a-train", {"Suspended"}, "be preempted");
  s.show(*again);
  WAIT(urgent_done, "a-urgent", {"Succeeded"}, "finish");
  s.show(*urgent_done);
  WAIT(back, "a-train", {"Running"}, "resume");
  s.show(*back);

  s.title("4. Cancelling stops the processes");
  TRY(s.cancel("a-train"));
  WAIT(cancelled, "a-train", {"Cancelled"}, "be cancelled");
  s.show(*cancelled);

  s.title("5. Topology-aware placement");
  s.say("gpu-1 and gpu-2 share layer-3 network node nn-3a; gpu-3 and gpu-4 share nn-3b.");
  s.say("a-wide wants 3 ranks under one layer-3 node, but each has 2 nodes: it waits and says why.");
  TRY(s.submit("a-wide"));
  WAIT(wide, "a-wide", {"Pending"}, "be pending");
  std::this_thread::sleep_for(300ms);  // one scheduling pass, so the reason is the scheduler's verdict
  if (auto j = api.get("/v1/jobs/a-wide"); j) s.show(*j);
  TRY(s.cancel("a-wide"));
  s.say("b-ring asks for `topology: {required: network-node-layer-3}`: both ranks land under one network node.");
  TRY(s.submit("b-ring"));
  WAIT(ring, "b-ring", {"Running"}, "start");
  s.show(*ring);
  s.say("  " + s.domains_of(*ring, "network-node-layer-3"));
  s.show_log("b-ring", 1, "0");

  s.title("6. A node fails: reboot, restart elsewhere, resume from the checkpoint");
  TRY(s.node_fault(*ring));

  s.title("7. Jobs in containers");
  if (c.image.empty()) {
    s.say("skipped: " + c.no_image);
  } else {
    s.say("team-a runs a job in an OCI image built here from busybox (no registry is needed): podman runs it in");
    s.say("team-a's own user namespace, so container root is an unprivileged host uid of team-a's block.");
    TRY(s.submit("c-hello"));
    WAIT(hello, "c-hello", {"Succeeded", "Failed"}, "finish");
    s.show(*hello);
    s.show_log("c-hello", 0, "0");
  }
#undef TRY
#undef WAIT
  return ok_status();
}

}  // namespace allot::client::demo
