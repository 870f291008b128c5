// Users' commands for jobs: `allot submit FILE|-` (an allot job spec, or a Kubernetes Job / PyTorchJob),
// `jobs`, `describe JOB`, `cancel JOB`, `logs JOB [--replica N]`.
#include <iostream>
#include <memory>

#include "cli/client_run.h"
#include "cli/commands.h"
#include "client/cli_flags.h"
#include "client/render.h"
#include "client/spec_json.h"
#include "config/spec_yaml.h"
#include "config/yaml_stream.h"
#include "interop/k8s_manifest.h"

namespace allot::cli {
namespace {

using client::ClientFlags;
using client::report;
using client::Session;
using nlohmann::json;

struct JobArgs {
  ClientFlags flags;
  std::string file, name, second, team, state;
  std::optional<int> replica;
  int64_t tail = 0;
  bool dry_run = false;
};

// Every document of the input as a job body; Kubernetes objects are recognised by apiVersion and kind.
// Several documents (`---`) submit several jobs, as `kubectl apply -f` would.
Result<std::vector<json>> read_jobs(const std::string& text, const std::string& origin) {
  auto loaded = load_yaml_documents(text, YamlContext{origin, "", 0});
  if (!loaded) return loaded.error();
  std::vector<YAML::Node> docs = std::move(*loaded);
  std::vector<json> out;
  Catalog catalog = Catalog::builtin();
  for (size_t i = 0; i < docs.size(); ++i) {
    YAML::Node doc = docs[i];
    if (doc.IsNull()) continue;
    if (interop::is_k8s_manifest(doc)) {
      auto m = interop::job_from_manifest(doc, origin);
      if (!m) return m.error();
      if (auto st = check_name(NameKind::kJob, m->spec.name); !st) return Error::invalid(origin + ": " + st.error().message);
      for (const auto& w : m->warnings) std::cerr << "allot submit: warning: " << origin << ": " << w << "\n";
      out.push_back(client::job_body(m->spec));
      continue;
    }
    // A scenario's `submit:` entry pasted with its key is accepted too.
    YamlContext ctx{origin, "", 0};
    if (doc.IsMap() && doc.size() == 1 && doc["submit"]) {
      doc = doc["submit"];
      ctx.path = "submit";
    }
    auto spec = parse_job_spec(doc, catalog, ctx);
    if (!spec) return spec.error();
    out.push_back(client::job_body(*spec));
  }
  if (out.empty()) return Error::invalid(origin + " holds no job");
  return out;
}

int run_submit(Session& s, JobArgs& a) {
  auto text = client::read_input(a.file, client::kMaxInputBytes);
  if (!text) return report("submit", text.error());
  auto jobs = read_jobs(*text, a.file == "-" ? "<stdin>" : a.file);
  if (!jobs) return report("submit", jobs.error());
  if (a.dry_run) {
    json all = jobs->size() == 1 ? (*jobs)[0] : json(*jobs);
    std::cout << client::render_data(all, s.format() == client::Format::kYaml ? client::Format::kYaml : client::Format::kJson);
    return 0;
  }
  json submitted = json::array();
  for (const auto& body : *jobs) {
    auto r = s.api().post("/v1/jobs", body);
    if (!r) return report("submit", r.error());
    submitted.push_back(*r);
  }
  return s.print(submitted.size() == 1 ? submitted[0] : submitted, [&](const json&) {
    std::string out;
    for (const auto& j : submitted) {
      out += "job " + client::text(j, "name") + " submitted to team " + client::text(j, "team") + ": " +
             client::text(j, "state");
      std::string reason = client::text(j, "reason");
      out += reason.empty() ? "\n" : " (" + reason + ")\n";
    }
    return out;
  });
}

int run_jobs(Session& s, JobArgs& a) {
  return s.show("jobs", client::get_all_pages(s.api(), "/v1/jobs", {{"team", a.team}, {"state", a.state}}),
                [](const json& j) { return client::jobs_table(j, client::unix_now()); });
}

int run_describe(Session& s, JobArgs& a) {
  // `allot describe node NAME` describes a node; `allot describe JOB` (or `describe job JOB`) a job.
  if ((a.name == "node" || a.name == "job") && !a.second.empty()) {
    if (a.name == "node")
      return s.show("describe node", s.api().get("/v1/nodes/" + client::url_encode(a.second)),
                    [](const json& n) { return client::describe_node(n, client::unix_now()); });
    a.name = a.second;
  } else if (!a.second.empty()) {
    return report("describe", Error::invalid("describe takes JOB, job JOB or node NAME; got \"" + a.name + " " + a.second + "\""));
  }
  return s.show("describe", s.api().get("/v1/jobs/" + client::url_encode(a.name)),
                [](const json& j) { return client::describe_job(j, client::unix_now()); });
}

int run_cancel(Session& s, JobArgs& a) {
  return s.show("cancel", s.api().post("/v1/jobs/" + client::url_encode(a.name) + "/cancel"),
                [](const json& j) { return "job " + client::text(j, "name") + ": " + client::text(j, "state") + "\n"; });
}

// One replica's log, or every replica's under a header each when --replica is not given.
int run_logs(Session& s, JobArgs& a) {
  const std::string base = "/v1/jobs/" + client::url_encode(a.name) + "/logs";
  std::map<std::string, std::string> q;
  if (a.tail > 0) q["tail"] = std::to_string(a.tail);
  if (a.replica) {
    q["replica"] = std::to_string(*a.replica);
    auto t = s.api().get_text(client::with_query(base, q));
    if (!t) return report("logs", t.error());
    std::cout << *t << std::flush;
    return 0;
  }
  auto job = s.api().get("/v1/jobs/" + client::url_encode(a.name));
  if (!job) return report("logs", job.error());
  int replicas = 0;
  for (const auto& ps : job->value("pod_sets", json::array())) replicas += ps.value("replicas", 0);
  for (int r = 0; r < replicas; ++r) {
    q["replica"] = std::to_string(r);
    auto t = s.api().get_text(client::with_query(base, q));
    if (!t) return report("logs", t.error());
    if (replicas > 1) std::cout << "==> " << a.name << " replica " << r << " <==\n";
    std::cout << *t;
    if (replicas > 1 && !t->empty() && t->back() != '\n') std::cout << "\n";
  }
  std::cout << std::flush;
  return 0;
}

}  // namespace

void add_client_job_commands(CLI::App& app, Context& ctx) {
  auto a = std::make_shared<JobArgs>();
  auto flags = [&](CLI::App* c) { client::add_client_flags(c, a->flags); return c; };

  auto* submit = flags(app.add_subcommand("submit", "Submit an allot job spec, a Kubernetes Job or a PyTorchJob"));
  submit->add_option("file", a->file, "YAML file; - for stdin")->required();
  submit->add_flag("--dry-run", a->dry_run, "Print the job spec the file becomes (JSON, or YAML with -o yaml); submit nothing");
  on_run(submit, ctx, a, "submit", run_submit);

  auto* jobs = flags(app.add_subcommand("jobs", "List jobs"));
  jobs->add_option("--team", a->team, "Only this team's jobs");
  jobs->add_option("--state", a->state, "Only jobs in this state (Pending, Running, Suspended, Succeeded, Failed, Cancelled)");
  on_run(jobs, ctx, a, "jobs", run_jobs);

  auto* describe = flags(app.add_subcommand("describe", "A job's state, the reason for it, its placement, restarts and history; "
                                                        "`describe node NAME`: a node's health checks and history"));
  describe->add_option("job", a->name, "Job name (or `node`, then the node's name)")->required();
  describe->add_option("name", a->second, "With `node`: the node's name");
  on_run(describe, ctx, a, "describe", run_describe);

  auto* cancel = flags(app.add_subcommand("cancel", "Cancel a job; its processes are stopped"));
  cancel->add_option("job", a->name, "Job name")->required();
  on_run(cancel, ctx, a, "cancel", run_cancel);

  auto* logs = flags(app.add_subcommand("logs", "A job's output, as its replicas wrote it"));
  logs->add_option("job", a->name, "Job name")->required();
  logs->add_option("--replica", a->replica, "Only this replica (rank); default: all, one after another");
  logs->add_option("--tail", a->tail, "Only the last BYTES of each log");
  on_run(logs, ctx, a, "logs", run_logs);
}

}  // namespace allot::cli
