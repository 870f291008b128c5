// Users' commands for jobs: `allot submit FILE|-` (an allot job spec, or a Kubernetes Job / PyTorchJob),
// `jobs`, `describe JOB`, `cancel JOB`, `logs JOB [--replica N]`.
#include <algorithm>
#include <cctype>
#include <cstring>
#include <iostream>
#include <thread>
#include <memory>

#include "cli/client_run.h"
#include "cli/commands.h"
#include "client/cli_flags.h"
#include "client/log_attempts.h"
#include "client/render.h"
#include "client/server_catalog.h"
#include "client/spec_json.h"
#include "client/warnings.h"
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
  std::vector<std::string> names;  // cancel: several jobs
  std::optional<int> replica;
  std::optional<int> attempt;  // logs: only this attempt's lines
  int64_t tail = 0;
  bool dry_run = false;
  std::string dry_run_mode;  // submit --dry-run[=server|client]: "" none
  bool watch = false, follow = false;
  double interval_s = 2;
  std::string queue_name, priority;  // submit: hyp-style overrides
  bool replace = false;              // submit: a job of the same name is cancelled and deleted first
  std::string selector;              // jobs, cancel: labels, as kubectl -l takes them
  bool tasks = false;                // jobs: every task of an array on its own line (docs/jobs.md, "Arrays")
};

const char* const kStates[] = {"Pending", "Running", "Suspended", "Succeeded", "Failed", "Cancelled"};

// `running`, `RUNNING` -> `Running`; anything else is left for the server to refuse with its own message.
std::string canonical_state(const std::string& s) {
  for (const char* st : kStates)
    if (std::equal(s.begin(), s.end(), st, st + std::strlen(st), [](char a, char b) { return std::tolower(a) == std::tolower(b); }))
      return st;
  return s;
}

bool finished(const std::string& state) { return state == "Succeeded" || state == "Failed" || state == "Cancelled"; }

// The last `n` lines of `text` (a last line without a newline counts as one).
std::string last_lines(const std::string& text, int64_t n) {
  if (n <= 0) return text;
  size_t end = text.size();
  if (end > 0 && text[end - 1] == '\n') --end;
  size_t start = end;
  for (int64_t seen = 0; start > 0; --start)
    if (text[start - 1] == '\n' && ++seen == n) break;
  return text.substr(start);
}

// Every document of the input as a job body; Kubernetes objects are recognised by apiVersion and kind.
// Several documents (`---`) submit several jobs, as `kubectl apply -f` would.
struct SubmitDoc {
  JobSpec spec;
  json body;
  std::string priority_label;  // a Kueue manifest's priority-class label as written
};

// `queue_name` (--queue-name) names the team of every job, and is the queue-name label of every manifest.
Result<std::vector<SubmitDoc>> read_jobs(const std::string& text, const std::string& origin, const std::string& queue_name,
                                         const Catalog& catalog) {
  auto loaded = load_yaml_documents(text, YamlContext{origin, "", 0});
  if (!loaded) return loaded.error();
  std::vector<YAML::Node> docs = std::move(*loaded);
  std::vector<SubmitDoc> out;
  for (size_t i = 0; i < docs.size(); ++i) {
    YAML::Node doc = docs[i];
    if (doc.IsNull()) continue;
    if (interop::is_k8s_manifest(doc)) {
      auto m = interop::job_from_manifest(doc, origin, queue_name);
      if (!m) return m.error();
      if (auto st = check_name(NameKind::kJob, m->spec.name); !st) return Error::invalid(origin + ": " + st.error().message);
      for (const auto& w : m->warnings) std::cerr << "allot submit: warning: " << origin << ": " << w << "\n";
      out.push_back({m->spec, client::job_body(m->spec), m->priority_label});
      // A JobSet with dependsOn: one job per replicated job, chained with after (submitted together, in order).
      for (const JobSpec& more : m->chained) {
        if (auto st = check_name(NameKind::kJob, more.name); !st) return Error::invalid(origin + ": " + st.error().message);
        out.push_back({more, client::job_body(more), m->priority_label});
      }
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
    out.push_back({*spec, client::job_body(*spec), ""});
  }
  if (out.empty()) return Error::invalid(origin + " holds no job");
  return out;
}

// submit --replace: a job of that name, if any, is cancelled when it has not finished, then deleted, so that
// the new one can take its name (kubectl replace --force).
Status replace_existing(Session& s, const std::string& name) {
  const std::string path = "/v1/jobs/" + client::url_encode(name);
  auto old = s.api().get(path);
  if (!old) return old.error().code == ErrorCode::kNotFound ? ok_status() : Status(old.error());
  if (!finished(client::text(*old, "state"))) {
    auto c = s.api().post(path + "/cancel");
    if (!c) return c.error();
    std::cerr << "allot submit: job " << name << " was " << client::text(*old, "state") << "; cancelled to replace it\n";
  }
  auto d = s.api().del(path);
  if (!d) return d.error();
  return ok_status();
}

int run_submit(Session& s, JobArgs& a) {
  if (a.file.empty()) return report("submit", Error::invalid("which file? allot submit FILE, or -f FILE; - for stdin"));
  auto text = client::read_input(a.file, client::kMaxInputBytes);
  if (!text) return report("submit", text.error());
  if (a.dry_run_mode != "" && a.dry_run_mode != "server" && a.dry_run_mode != "client")
    return report("submit", Error::invalid("--dry-run must be server or client, got '" + a.dry_run_mode + "'"));
  a.dry_run = a.dry_run_mode == "server";
  // The server's instance types (the built-in ones and its policy file's); the built-in ones alone for a client dry
  // run, or from a server that does not list them.
  const Catalog catalog = a.dry_run_mode != "client" ? client::server_catalog(s.api()) : Catalog::builtin();
  auto jobs = read_jobs(*text, a.file == "-" ? "<stdin>" : a.file, a.queue_name, catalog);
  if (!jobs) return report("submit", jobs.error());
  // hyp's vocabulary: --queue-name names the team's queue (hyperpod-ns-<team>-localqueue, or the team),
  // --priority the class; both apply to every job of the file.
  for (auto& d : *jobs) {
    if (!a.queue_name.empty()) d.body["team"] = interop::team_from_queue_name(a.queue_name);
    if (!a.priority.empty()) d.priority_label = a.priority, d.body["priority"] = interop::priority_from_class(a.priority);
  }
  if (a.dry_run_mode == "client") {
    // What the file becomes, as the server would be sent it; no server is asked.
    json list = json::array();
    for (const auto& d : *jobs) list.push_back(d.body);
    json all = list.size() == 1 ? list[0] : list;
    std::cout << client::render_data(all, s.format() == client::Format::kYaml ? client::Format::kYaml : client::Format::kJson);
    return 0;
  }
  // A label "inference-priority" names the class "inference-priority" when the server has one, else
  // "inference" (Kueue's WorkloadPriorityClass names often end in -priority, allot's need not).
  bool labelled = false;
  for (const auto& d : *jobs) labelled |= !d.priority_label.empty();
  if (labelled) {
    auto classes = s.api().get("/v1/priority-classes");
    std::vector<std::string> names;
    if (classes && classes->is_array())
      for (const auto& c : *classes) names.push_back(client::text(c, "name"));
    for (auto& d : *jobs)
      if (!d.priority_label.empty()) d.body["priority"] = interop::pick_priority_class(d.priority_label, names);
  }
  // What the server would accept but will not run as meant: a replica larger than its node, a team without
  // quota for the job's instance type (client/warnings.h).
  for (auto& d : *jobs) {
    d.spec.team = d.body.value("team", d.spec.team);
    auto team = s.api().get("/v1/teams/" + client::url_encode(d.spec.team));
    for (const auto& w : client::job_warnings(d.spec, team ? *team : json(), catalog))
      std::cerr << "allot submit: warning: job " << d.spec.name << ": " << w << "\n";
  }
  // The server checks every job (kubectl --dry-run=server): a dry run gets the same answer and exit code as the
  // submission, and changes nothing. A file of several jobs goes as one list, all or nothing.
  json list = json::array();
  for (const auto& d : *jobs) list.push_back(d.body);
  const json body = list.size() == 1 ? list[0] : json{{"jobs", list}};
  if (a.replace && !a.dry_run) {
    // Checked first, so that a file the server refuses replaces nothing.
    auto check = s.api().post("/v1/jobs?dry_run=true", body);
    if (!check && check.error().code != ErrorCode::kAlreadyExists) return report("submit", check.error());
    for (const auto& d : *jobs)
      if (auto st = replace_existing(s, client::text(d.body, "name")); !st) return report("submit", st.error());
  }
  auto r = s.api().post(a.dry_run ? "/v1/jobs?dry_run=true" : "/v1/jobs", body);
  if (!r) return report("submit", r.error());
  json submitted = r->is_array() ? *r : json::array({*r});
  return s.print(*r, [&](const json&) {
    std::string out;
    for (const auto& j : submitted) {
      if (client::text(j, "kind") == "array") {  // an array's view (view::array_json): its tasks counted by state
        const json& arr = j.value("array", json::object());
        out += "array " + client::text(j, "name") + " of " + std::to_string(arr.value("count", 0)) + " tasks (at most " +
               std::to_string(arr.value("parallel", 0)) + " running) submitted to team " + client::text(j, "team") +
               ": " + client::text(j, "summary");
      } else {
        out += "job " + client::text(j, "name") + " submitted to team " + client::text(j, "team") + ": " +
               client::text(j, "state");
        std::string reason = client::text(j, "reason");
        out += reason.empty() ? "" : " (" + reason + ")";
      }
      out += a.dry_run ? " (server dry run: nothing submitted)\n" : "\n";
    }
    return out;
  });
}

int run_jobs(Session& s, JobArgs& a) {
  const std::map<std::string, std::string> query = {{"team", a.team}, {"state", canonical_state(a.state)}, {"selector", a.selector},
                                                    {"arrays", a.tasks ? "tasks" : "summary"}};
  auto table = [&a](const json& j) { return client::jobs_table(j, client::unix_now(), a.flags.output == "wide"); };
  if (!a.watch) return s.show("jobs", client::get_all_pages(s.api(), "/v1/jobs", query), table);
  // --watch: the list again every interval, printed when it changed (kubectl get -w prints changes too);
  // until interrupted. JSON prints one list per line.
  std::string last;
  for (;;) {
    auto r = client::get_all_pages(s.api(), "/v1/jobs", query);
    if (!r) return report("jobs", r.error());
    std::string now = s.format() == client::Format::kTable ? table(*r) : s.format() == client::Format::kJson ? r->dump() + "\n"
                                                                                                            : "---\n" + client::to_yaml(*r);
    // Ages change every second; compare without them by comparing the data.
    const std::string key = r->dump();
    if (key != last) std::cout << (last.empty() ? "" : s.format() == client::Format::kTable ? "\n" : "") << now << std::flush;
    last = key;
    std::this_thread::sleep_for(std::chrono::milliseconds(static_cast<int64_t>(a.interval_s * 1000)));
  }
}

int run_describe(Session& s, JobArgs& a) {
  // `allot describe node NAME` describes a node, `describe team NAME` a team; `allot describe JOB` (or
  // `describe job JOB`) a job.
  if ((a.name == "node" || a.name == "job" || a.name == "team") && !a.second.empty()) {
    if (a.name == "node")
      return s.show("describe node", s.api().get("/v1/nodes/" + client::url_encode(a.second)),
                    [](const json& n) { return client::describe_node(n, client::unix_now()); });
    if (a.name == "team")
      return s.show("describe team", s.api().get("/v1/teams/" + client::url_encode(a.second)), client::describe_team);
    a.name = a.second;
  } else if (!a.second.empty()) {
    return report("describe", Error::invalid("describe takes JOB, job JOB, node NAME or team NAME; got \"" + a.name + " " + a.second + "\""));
  }
  return s.show("describe", s.api().get("/v1/jobs/" + client::url_encode(a.name)),
                [](const json& j) { return client::describe_job(j, client::unix_now()); });
}

// Several names, or every unfinished job of --team and/or --selector; each is cancelled on its own, and a failure
// does not stop the others (the exit code is the worst one).
int run_cancel(Session& s, JobArgs& a) {
  std::vector<std::string> names = a.names;
  const bool by_query = !a.team.empty() || !a.selector.empty();
  if (by_query) {
    auto jobs = client::get_all_pages(s.api(), "/v1/jobs", {{"team", a.team}, {"selector", a.selector}});
    if (!jobs) return report("cancel", jobs.error());
    for (const auto& j : *jobs)
      if (!finished(client::text(j, "state"))) names.push_back(client::text(j, "name"));
  }
  if (names.empty() && !by_query)
    return report("cancel", Error::invalid("name one or more jobs, or give --team TEAM or --selector KEY=VALUE"));
  json out = json::array();
  int rc = 0;
  for (const auto& name : names) {
    auto r = s.api().post("/v1/jobs/" + client::url_encode(name) + "/cancel");
    if (!r) {
      rc = std::max(rc, report("cancel", r.error()));
      continue;
    }
    out.push_back(*r);
  }
  s.print(out.size() == 1 && !by_query ? out[0] : out, [&](const json&) {
    std::string text;
    for (const auto& j : out) text += "job " + client::text(j, "name") + ": " + client::text(j, "state") + "\n";
    if (out.empty() && by_query)
      text = "no unfinished jobs" + (a.team.empty() ? "" : " of team " + a.team) +
             (a.selector.empty() ? "" : " match " + a.selector) + "\n";
    return text;
  });
  return rc;
}

// The logs of the replicas asked for (--replica, or every one): the whole kept log of each (the server
// counts --tail in bytes; lines are counted here).
Result<std::vector<std::pair<int, std::string>>> fetch_logs(Session& s, const JobArgs& a, const json& job) {
  const std::string base = "/v1/jobs/" + client::url_encode(a.name) + "/logs";
  std::vector<int> ranks;
  if (a.replica) {
    ranks.push_back(*a.replica);
  } else {
    int replicas = 0;
    for (const auto& ps : job.value("pod_sets", json::array())) replicas += ps.value("replicas", 0);
    for (int r = 0; r < replicas; ++r) ranks.push_back(r);
  }
  std::vector<std::pair<int, std::string>> out;
  for (int r : ranks) {
    auto t = s.api().get_text(client::with_query(base, {{"replica", std::to_string(r)}}));
    if (!t) return t.error();
    out.emplace_back(r, last_lines(*t, a.tail));
  }
  return out;
}

// One replica's log, or every replica's under a header each when --replica is not given. -o json: the job,
// and each attempt of each replica (attempt, rank, node, lines). -f: what is new in each log every second until
// the job has finished.
int run_logs(Session& s, JobArgs& a) {
  auto job = s.api().get("/v1/jobs/" + client::url_encode(a.name));
  if (!job) return report("logs", job.error());
  if (a.attempt && a.follow) return report("logs", Error::invalid("--attempt shows one attempt that has its lines; it does not go with --follow"));
  auto logs = fetch_logs(s, a, *job);
  if (!logs) return report("logs", logs.error());
  const bool headers = !a.replica && logs->size() > 1;
  // Only the attempt asked for (the server keeps every attempt of a replica in its log, between its lines
  // "allot: ==> attempt N of replica R on node NODE <=="; the oldest go first when the log passes 1 MiB).
  auto wanted = [&](const json& attempt) { return !a.attempt || (attempt["attempt"].is_number_integer() && attempt["attempt"] == *a.attempt); };
  if (s.format() != client::Format::kTable && !a.follow) {
    // One object per attempt of each replica, cut at the server's lines between attempts.
    json out = {{"job", a.name}, {"state", client::text(*job, "state")}, {"attempts", json::array()}};
    for (const auto& [rank, text] : *logs)
      for (auto& attempt : client::log_attempts(rank, text, /*from_start=*/a.tail <= 0))
        if (wanted(attempt)) out["attempts"].push_back(std::move(attempt));
    return s.print(out, [](const json&) { return std::string(); });
  }
  if (a.attempt) {
    for (auto& [rank, text] : *logs) {
      std::string kept;
      for (const auto& attempt : client::log_attempts(rank, text, /*from_start=*/a.tail <= 0))
        if (wanted(attempt))
          for (const auto& line : attempt["lines"]) kept += line.get<std::string>() + "\n";
      text = std::move(kept);
    }
  }
  std::map<int, std::string> shown;
  auto print_new = [&](const std::vector<std::pair<int, std::string>>& now) {
    for (const auto& [rank, text] : now) {
      std::string& before = shown[rank];
      // The server keeps the last 1 MiB: when the start moved, print from the end of what was shown.
      size_t from = 0;
      if (!before.empty()) {
        const std::string tail = before.substr(before.size() - std::min<size_t>(before.size(), 256));
        const size_t at = text.rfind(tail);
        from = text.compare(0, before.size(), before) == 0 ? before.size() : at != std::string::npos ? at + tail.size() : 0;
      }
      if (from >= text.size()) continue;
      if (headers) std::cout << "==> " << a.name << " replica " << rank << " <==\n";
      std::cout << text.substr(from);
      if (headers && text.back() != '\n') std::cout << "\n";
      before = text;
    }
    std::cout << std::flush;
  };
  print_new(*logs);
  while (a.follow && !finished(client::text(*job, "state"))) {
    std::this_thread::sleep_for(std::chrono::seconds(1));
    job = s.api().get("/v1/jobs/" + client::url_encode(a.name));
    if (!job) return report("logs", job.error());
    JobArgs whole = a;
    whole.tail = 0;  // new output is whole lines and bytes, whatever --tail cut at the start
    logs = fetch_logs(s, whole, *job);
    if (!logs) return report("logs", logs.error());
    print_new(*logs);
  }
  return 0;
}

}  // namespace

void add_client_job_commands(CLI::App& app, Context& ctx) {
  auto a = std::make_shared<JobArgs>();
  auto flags = [&](CLI::App* c) { client::add_client_flags(c, a->flags); return c; };

  auto* submit = flags(app.add_subcommand("submit", "Submit an allot job spec, a Kubernetes Job or a PyTorchJob"));
  auto* file = submit->add_option("file", a->file, "YAML file; - for stdin");
  submit->add_option("-f,--filename", a->file, "The YAML file, as kubectl apply -f takes it (instead of FILE)")->excludes(file);
  submit->add_option("--queue-name", a->queue_name,
                     "The team's queue, as hyp names it (hyperpod-ns-<team>-localqueue) or the team itself; overrides the file");
  submit->add_option("--priority", a->priority,
                     "Priority class (a Kueue name such as inference-priority maps to the server's class of that name, "
                     "else to the name without -priority); overrides the file");
  submit->add_flag("--replace", a->replace,
                   "A job of the same name is cancelled (if it has not finished) and deleted first, so this one takes its name");
  submit->add_flag("--dry-run{server}", a->dry_run_mode,
                   "server (the default): the server checks the jobs and answers as it would the submission, submitting "
                   "nothing; client: print the allot job spec each document becomes, asking no server");
  on_run(submit, ctx, a, "submit", run_submit);

  auto* jobs = flags(app.add_subcommand("jobs", "List jobs"));
  client::add_list_flags(jobs, a->flags);
  jobs->add_option("--team", a->team, "Only this team's jobs");
  jobs->add_option("--state", a->state, "Only jobs in this state (Pending, Running, Suspended, Succeeded, Failed, Cancelled; any case)");
  jobs->add_option("-l,--selector", a->selector, "Only jobs with these labels: key=value[,key!=value...]");
  jobs->add_flag("--tasks", a->tasks, "List every task of a job array on its own line (default: one line per array, its tasks counted per state)");
  jobs->add_flag("-w,--watch", a->watch, "Print the list again whenever it changes, until interrupted");
  jobs->add_option("--interval", a->interval_s, "With --watch: seconds between looks (default 2)")->check(CLI::Range(0.1, 3600.0));
  on_run(jobs, ctx, a, "jobs", run_jobs);

  auto* describe = flags(app.add_subcommand("describe", "A job's state, the reason for it, its placement, restarts and history; "
                                                        "`describe node NAME`: a node's health checks and history; "
                                                        "`describe team NAME`: a team's quota per instance type and fair share"));
  describe->add_option("job", a->name, "Job name (or `node` or `team`, then its name)")->required();
  describe->add_option("name", a->second, "With `node` or `team`: its name");
  on_run(describe, ctx, a, "describe", run_describe);

  auto* cancel = flags(app.add_subcommand("cancel", "Cancel jobs; their processes are stopped"));
  cancel->add_option("jobs", a->names, "Job names");
  cancel->add_option("--team", a->team, "Every unfinished job of this team");
  cancel->add_option("-l,--selector", a->selector, "Every unfinished job with these labels: key=value[,key!=value...]");
  on_run(cancel, ctx, a, "cancel", run_cancel);

  auto* logs = flags(app.add_subcommand("logs", "A job's output, as its replicas wrote it (-o json: one object per attempt: attempt, rank, node, lines)"));
  logs->add_option("job", a->name, "Job name")->required();
  logs->add_option("--replica", a->replica, "Only this replica (rank); default: all, one after another");
  logs->add_option("--tail", a->tail, "Only the last N lines of each log")->check(CLI::NonNegativeNumber);
  logs->add_option("--attempt", a->attempt, "Only this attempt's lines (0 is the first run; each restart is the next)")
      ->check(CLI::NonNegativeNumber);
  logs->add_flag("-f,--follow", a->follow, "Keep printing new output until the job has finished");
  on_run(logs, ctx, a, "logs", run_logs);

  add_client_job_change_commands(app, ctx);
}

}  // namespace allot::cli
