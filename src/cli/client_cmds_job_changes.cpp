// Users' commands that change submitted jobs: `allot hold JOB...`, `release JOB...` (Slurm's scontrol hold and
// release), `set priority JOB CLASS` (kubectl's `set` verb: one field of an existing object), `delete JOB...`
// (a finished job, so that its name can be used again).
#include <algorithm>
#include <functional>
#include <iostream>
#include <memory>

#include "cli/client_run.h"
#include "cli/commands.h"
#include "client/cli_flags.h"
#include "client/render.h"
#include "config/yaml_stream.h"
#include "interop/k8s_manifest.h"

namespace allot::cli {
namespace {

using client::ClientFlags;
using client::report;
using client::Session;
using nlohmann::json;

struct ChangeArgs {
  ClientFlags flags;
  std::vector<std::string> names;
  std::string file;  // delete -f: the jobs a file submitted
  std::string field, job, value;
};

std::string path_of(const std::string& job) { return "/v1/jobs/" + client::url_encode(job); }

// One request per job; a failure does not stop the others (the exit code is the worst one). Prints each job's
// state after the change, or the list of them with -o json|yaml.
int for_each_job(Session& s, const std::string& command, const std::vector<std::string>& names,
                 const std::function<Result<json>(const std::string&)>& change, const std::string& done) {
  json out = json::array();
  int rc = 0;
  for (const auto& name : names) {
    auto r = change(name);
    if (!r) {
      rc = std::max(rc, report(command, r.error()));
      continue;
    }
    out.push_back(*r);
  }
  const int printed = s.print(out.size() == 1 && names.size() == 1 ? out[0] : out, [&](const json&) {
    std::string text;
    for (const auto& j : out)
      text += "job " + client::text(j, "name") + " " + done + (j.contains("state") ? ": " + client::text(j, "state") : "") + "\n";
    return text;
  });
  return std::max(rc, printed);
}

int run_hold(Session& s, ChangeArgs& a, bool held) {
  const std::string verb = held ? "hold" : "release";
  return for_each_job(s, verb, a.names, [&](const std::string& n) { return s.api().post(path_of(n) + "/" + verb); },
                      held ? "held" : "released");
}

int run_set(Session& s, ChangeArgs& a) {
  if (a.field != "priority")
    return report("set", Error::invalid("set changes `priority` (allot set priority JOB CLASS); got '" + a.field + "'"));
  // "none" or "" moves the job to the lowest priority; a Kueue name (inference-priority) maps as at submit.
  std::string cls = a.value == "none" ? "" : a.value;
  if (!cls.empty()) {
    auto classes = s.api().get("/v1/priority-classes");
    std::vector<std::string> names;
    if (classes && classes->is_array())
      for (const auto& c : *classes) names.push_back(client::text(c, "name"));
    cls = interop::pick_priority_class(cls, names);
  }
  return for_each_job(s, "set", {a.job},
                      [&](const std::string& n) { return s.api().put(path_of(n) + "/priority", json{{"priority", cls}}); },
                      "now has priority class " + (cls.empty() ? std::string("none") : cls));
}

// The names of the jobs a file holds, as `allot submit` reads it: a manifest's metadata.name, an allot job
// spec's name (a scenario's `submit:` entry too).
Result<std::vector<std::string>> job_names_in(const std::string& file) {
  auto text = client::read_input(file);
  if (!text) return text.error();
  const std::string origin = file == "-" ? "<stdin>" : file;
  auto docs = load_yaml_documents(*text, YamlContext{origin, "", 0});
  if (!docs) return docs.error();
  std::vector<std::string> names;
  for (const YAML::Node& doc : *docs) {
    if (doc.IsNull()) continue;
    auto name_of_doc = [](const YAML::Node& d) {
      if (!d.IsMap()) return YAML::Node(YAML::NodeType::Undefined);
      // A missing key is an invalid node, which throws when asked its type: test it first.
      if (interop::is_k8s_manifest(d))
        return d["metadata"] && d["metadata"].IsMap() ? d["metadata"]["name"] : YAML::Node(YAML::NodeType::Undefined);
      return d["submit"] && d["submit"].IsMap() ? d["submit"]["name"] : d["name"];
    };
    const YAML::Node name = name_of_doc(doc);
    if (!name || !name.IsScalar())
      return Error::invalid(origin + ": a document without a job name (metadata.name or name); generateName jobs are "
                                     "deleted by the name `allot submit` printed");
    names.push_back(name.Scalar());
  }
  if (names.empty()) return Error::invalid(origin + " holds no job");
  return names;
}

int run_delete(Session& s, ChangeArgs& a) {
  if (!a.file.empty()) {
    auto named = job_names_in(a.file);
    if (!named) return report("delete", named.error());
    a.names.insert(a.names.end(), named->begin(), named->end());
  }
  if (a.names.empty()) return report("delete", Error::invalid("which jobs? allot delete JOB..., or -f FILE"));
  return for_each_job(s, "delete", a.names, [&](const std::string& n) { return s.api().del(path_of(n)); },
                      "deleted (its name is free)");
}

}  // namespace

void add_client_job_change_commands(CLI::App& app, Context& ctx) {
  auto a = std::make_shared<ChangeArgs>();
  auto flags = [&](CLI::App* c) { client::add_client_flags(c, a->flags); return c; };

  auto* hold = flags(app.add_subcommand("hold", "Hold waiting jobs: the scheduler passes them over until released (state stays Pending)"));
  hold->add_option("jobs", a->names, "Job names")->required();
  on_run(hold, ctx, a, "hold", [](Session& s, ChangeArgs& x) { return run_hold(s, x, true); });

  auto* release = flags(app.add_subcommand("release", "Release held jobs: the scheduler considers them again"));
  release->add_option("jobs", a->names, "Job names")->required();
  on_run(release, ctx, a, "release", [](Session& s, ChangeArgs& x) { return run_hold(s, x, false); });

  auto* set = flags(app.add_subcommand("set", "Change a field of a waiting job: `set priority JOB CLASS` (CLASS none: the lowest)"));
  set->add_option("field", a->field, "What to change: priority")->required();
  set->add_option("job", a->job, "Job name")->required();
  set->add_option("value", a->value, "The new value: a priority class (a Kueue name such as inference-priority maps as at submit)")
      ->required();
  on_run(set, ctx, a, "set", run_set);

  auto* del = flags(app.add_subcommand("delete", "Delete finished jobs, so that their names can be used again"));
  del->add_option("jobs", a->names, "Job names (`delete job NAME` and `job/NAME` as in kubectl)");
  del->add_option("-f,--filename", a->file, "The jobs of this file (as allot submit reads it); - for stdin");
  on_run(del, ctx, a, "delete", run_delete);
}

}  // namespace allot::cli
