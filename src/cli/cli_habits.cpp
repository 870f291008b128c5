#include "cli/cli_habits.h"

#include <algorithm>
#include <iostream>
#include <memory>
#include <optional>
#include <set>

#include "cli/client_run.h"
#include "client/cli_flags.h"
#include "server/version.h"

namespace allot::cli {
namespace {

std::vector<CLI::App*> subcommands_of(CLI::App& app) {
  return app.get_subcommands([](CLI::App*) { return true; });
}

CLI::App* find_subcommand(CLI::App& app, const std::string& word) {
  for (CLI::App* sub : subcommands_of(app)) {
    if (sub->get_name() == word) return sub;
    const auto& aliases = sub->get_aliases();
    if (std::find(aliases.begin(), aliases.end(), word) != aliases.end()) return sub;
  }
  return nullptr;
}

bool takes_value(CLI::App& app, const std::string& flag) {
  if (flag.find('=') != std::string::npos) return false;
  const CLI::Option* opt = app.get_option_no_throw(flag);
  return opt != nullptr && opt->get_items_expected_min() > 0 && opt->get_type_size() != 0;
}

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

std::string names_of(CLI::App& app) {
  std::string out;
  for (CLI::App* sub : subcommands_of(app)) out += (out.empty() ? "" : " ") + sub->get_name();
  return out;
}

std::string flags_of(CLI::App& app) {
  std::set<std::string> out;
  for (const CLI::Option* opt : app.get_options()) {
    for (const auto& l : opt->get_lnames()) out.insert("--" + l);
    for (const auto& s : opt->get_snames()) out.insert("-" + s);
  }
  std::string text;
  for (const auto& f : out) text += (text.empty() ? "" : " ") + f;
  return text;
}

// One `case` entry per command path, for the subcommands and for the flags.
void completion_cases(CLI::App& app, const std::string& path, std::string& subs, std::string& flags) {
  subs += "    \"" + path + "\") echo \"" + names_of(app) + "\" ;;\n";
  flags += "    \"" + path + "\") echo \"" + flags_of(app) + "\" ;;\n";
  for (CLI::App* sub : subcommands_of(app))
    completion_cases(*sub, path.empty() ? sub->get_name() : path + " " + sub->get_name(), subs, flags);
}

// roff escapes: a leading '.' or '\'' would start a request, '\\' an escape, '-' should be a minus in options.
std::string roff(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '\\') out += "\\e";
    else if (c == '-') out += "\\-";
    else out += c;
  }
  if (!out.empty() && (out[0] == '.' || out[0] == '\'')) out = "\\&" + out;
  return out;
}

void man_commands(CLI::App& app, const std::string& path, std::string& out) {
  for (CLI::App* sub : subcommands_of(app)) {
    const std::string full = path + " " + sub->get_name();
    out += ".SS " + roff(full) + "\n" + roff(sub->get_description()) + "\n";
    for (const CLI::Option* opt : sub->get_options()) {
      if (opt->get_name().empty()) continue;
      std::string names = opt->get_name(false, true);
      if (names.empty()) continue;
      out += ".TP\n.B " + roff(names) + "\n" + roff(opt->get_description().empty() ? "(see allot help" + full.substr(5) + ")"
                                                                                     : opt->get_description()) + "\n";
    }
    man_commands(*sub, full, out);
  }
}

struct HabitArgs {
  client::ClientFlags flags;
  std::vector<std::string> words;
  std::string shell;
};

// The server's version from GET /v1/health (which needs no token); the client's is this binary's.
int run_version(client::Session& s, HabitArgs&) {
  auto health = s.api().get("/v1/health");
  nlohmann::json out = {{"client", {{"version", server::kVersion}}},
                        {"server", {{"url", s.api().url()}}}};
  if (health) out["server"]["version"] = health->value("version", "");
  else out["server"]["error"] = health.error().message;
  s.print(out, [&](const nlohmann::json& j) {
    std::string text = "client: allot " + std::string(server::kVersion) + "\n";
    text += j["server"].contains("version") ? "server: allot " + j["server"]["version"].get<std::string>() + " at " + s.api().url() + "\n"
                                            : "server: cannot tell (" + j["server"]["error"].get<std::string>() + ")\n";
    return text;
  });
  return health ? 0 : client::exit_code_for(health.error());
}

}  // namespace

std::vector<std::string> hoist_client_flags(const std::vector<std::string>& args) {
  static const std::set<std::string> kValued = {"--server", "--token", "--context", "--ca", "-o", "--output"};
  std::vector<std::string> hoisted, rest;
  size_t i = 0;
  for (; i < args.size(); ++i) {
    const std::string& a = args[i];
    const std::string name = a.substr(0, a.find('='));
    if (!kValued.count(name)) break;
    hoisted.push_back(a);
    if (name == a && i + 1 < args.size()) hoisted.push_back(args[++i]);
  }
  if (hoisted.empty() || i == args.size()) return args;  // nothing to move, or no command to move it after
  rest.assign(args.begin() + static_cast<std::ptrdiff_t>(i), args.end());
  // After a `--`, everything is positional: put the flags before it.
  auto dashes = std::find(rest.begin(), rest.end(), "--");
  rest.insert(dashes, hoisted.begin(), hoisted.end());
  return rest;
}

namespace {

// kubectl's resource words (plural, singular, short) for the three kinds allot lists.
enum class Kind { kJob, kNode, kTeam };
std::optional<Kind> kind_of(const std::string& w) {
  static const std::vector<std::pair<std::vector<std::string>, Kind>> kWords = {
      {{"jobs", "job", "jobs.batch", "job.batch"}, Kind::kJob},
      {{"nodes", "node", "no"}, Kind::kNode},
      {{"teams", "team"}, Kind::kTeam}};
  for (const auto& [words, kind] : kWords)
    if (std::find(words.begin(), words.end(), w) != words.end()) return kind;
  return std::nullopt;
}

const char* list_command(Kind k) {
  switch (k) {
    case Kind::kJob: return "jobs";
    case Kind::kNode: return "nodes";
    case Kind::kTeam: return "teams";
  }
  return "jobs";
}

// "jobs/NAME" -> (kJob, NAME); nullopt when `w` is not KIND/NAME.
std::optional<std::pair<Kind, std::string>> kind_slash_name(const std::string& w) {
  const size_t slash = w.find('/');
  if (slash == std::string::npos || slash + 1 >= w.size()) return std::nullopt;
  auto k = kind_of(w.substr(0, slash));
  if (!k) return std::nullopt;
  return std::pair{*k, w.substr(slash + 1)};
}

// `describe` wants JOB, `node NAME` or `team NAME`.
void describe_words(Kind k, const std::string& name, std::vector<std::string>& out) {
  switch (k) {
    case Kind::kJob: out.push_back(name); return;
    case Kind::kNode: out.insert(out.end(), {"node", name}); return;
    case Kind::kTeam: out.insert(out.end(), {"team", name}); return;
  }
}

}  // namespace

std::vector<std::string> kubectl_words(const std::vector<std::string>& in) {
  std::vector<std::string> args;
  // -o=json: CLI11 takes `=` after long options only.
  bool positional = false;
  for (const auto& a : in) {
    positional |= a == "--";
    if (!positional && a.rfind("-o=", 0) == 0) {
      args.push_back("-o");
      args.push_back(a.substr(3));
    } else {
      args.push_back(a);
    }
  }
  if (args.empty()) return args;
  const auto end = std::find(args.begin(), args.end(), "--");
  const std::vector<std::string> rest(args.begin() + 1, args.end());
  const std::string& command = args[0];
  // The first word after the command that is neither a flag nor a client flag's value, and what follows it.
  static const std::set<std::string> kValued = {"--server", "--token", "--context", "--ca", "-o", "--output"};
  auto first_word = rest.begin();
  while (first_word != rest.end() && !first_word->empty() && (*first_word)[0] == '-')
    first_word += kValued.count(*first_word) && first_word + 1 != rest.end() ? 2 : 1;
  if (first_word == rest.end() || args.begin() + 1 + (first_word - rest.begin()) >= end) return args;
  const std::string word = *first_word;
  std::vector<std::string> before(rest.begin(), first_word), after(first_word + 1, rest.end());
  std::vector<std::string> out;
  if (command == "get") {
    const auto k = kind_of(word);
    if (!k) return args;
    // `get job NAME`: one job's details; `get jobs`: the list.
    const bool named = !after.empty() && !after[0].empty() && after[0][0] != '-';
    if (named && *k == Kind::kJob && after.size() == 1) {
      out = {"describe"};
      out.insert(out.end(), before.begin(), before.end());
      out.push_back(after[0]);
      return out;
    }
    out = {list_command(*k)};
    out.insert(out.end(), before.begin(), before.end());
    out.insert(out.end(), after.begin(), after.end());
    return out;
  }
  if (command == "describe" || command == "delete") {
    out = {command};
    out.insert(out.end(), before.begin(), before.end());
    if (auto ks = kind_slash_name(word)) {
      if (command == "delete" && ks->first != Kind::kJob) return args;  // `node delete`, `team delete` are elsewhere
      if (command == "describe") describe_words(ks->first, ks->second, out);
      else out.push_back(ks->second);
    } else if (auto k = kind_of(word); k && !after.empty() && (command == "describe" || *k == Kind::kJob)) {
      // `describe jobs NAME`, `delete job NAME...`: the kind word goes (describe keeps node and team).
      if (command == "describe") {
        describe_words(*k, after[0], out);
        after.erase(after.begin());
      }
    } else {
      return args;
    }
    // Later KIND/NAME words of `delete job/a job/b`.
    for (const auto& w : after) {
      auto ks = kind_slash_name(w);
      out.push_back(ks && ks->first == Kind::kJob ? ks->second : w);
    }
    return out;
  }
  return args;
}

std::string closest(const std::string& word, const std::vector<std::string>& candidates) {
  std::string best;
  size_t best_d = std::string::npos;
  for (const auto& c : candidates) {
    size_t d = edit_distance(word, c);
    if (word.size() >= 2 && c.rfind(word, 0) == 0) d = std::min<size_t>(d, 1);  // a prefix: `allot desc`
    if (d < best_d) best_d = d, best = c;
  }
  const size_t reach = std::max<size_t>(2, word.size() / 3);
  return best_d <= reach ? best : "";
}

std::string unknown_command_message(CLI::App& app, const std::vector<std::string>& args) {
  CLI::App* cur = &app;
  std::string path;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& w = args[i];
    if (w == "--") break;
    if (!w.empty() && w[0] == '-') {
      if (takes_value(*cur, w)) ++i;
      continue;
    }
    auto subs = subcommands_of(*cur);
    if (subs.empty()) break;
    if (CLI::App* next = find_subcommand(*cur, w)) {
      cur = next;
      path += (path.empty() ? "" : " ") + w;
      continue;
    }
    if (cur->get_require_subcommand_min() == 0) break;  // a positional of a command with optional subcommands
    std::vector<std::string> names;
    for (CLI::App* s : subs) names.push_back(s->get_name());
    const std::string full = path.empty() ? w : path + " " + w;
    std::string msg = "allot: unknown command '" + full + "'";
    std::string guess = closest(w, names);
    if (!guess.empty()) {
      msg += "; did you mean '" + (path.empty() ? guess : path + " " + guess) + "'?";
    }
    msg += "\n" + std::string(path.empty() ? "commands" : "subcommands of '" + path + "'") + ": " + names_of(*cur) +
           "\n(allot help " + (path.empty() ? "" : path + " ") + "for more)\n";
    return msg;
  }
  return "";
}

std::string man_page(CLI::App& app) {
  std::string out = ".TH ALLOT 1 \"\" \"allot " + std::string(server::kVersion) + "\" \"allot manual\"\n";
  out += ".SH NAME\nallot \\- " + roff(app.get_description()) + "\n";
  out += ".SH SYNOPSIS\n.B allot\n[\\-\\-server URL] [\\-o table|wide|json|yaml] COMMAND [ARGS]\n";
  out += ".SH DESCRIPTION\nOne binary for the server, the node agent, the simulator and the client. Client commands "
         "find the server and token in their flags, then ALLOT_SERVER and ALLOT_TOKEN, then the config file's "
         "current context. Exit codes: 0 success, 1 a check failed, 2 invalid input or a refused request, 3 the "
         "server failed or cannot be reached.\n";
  out += ".SH COMMANDS\n";
  man_commands(app, "allot", out);
  out += ".SH SEE ALSO\nallot help COMMAND; the docs/ directory of the allot source tree.\n";
  return out;
}

std::string completion_script(CLI::App& app, const std::string& shell) {
  std::string subs, flags;
  completion_cases(app, "", subs, flags);
  std::string s;
  if (shell == "zsh") s += "#compdef allot\n# zsh: allot's bash completion through bashcompinit.\nautoload -U +X bashcompinit && bashcompinit\n";
  s += "# allot shell completion (generated by `allot completion " + shell + "` from the command definitions)\n";
  s += "_allot_subcommands() {\n  case \"$1\" in\n" + subs + "  esac\n}\n";
  s += "_allot_flags() {\n  case \"$1\" in\n" + flags + "  esac\n}\n";
  s += R"SH(_allot() {
  local cur="${COMP_WORDS[COMP_CWORD]}" path="" w i subs
  for ((i = 1; i < COMP_CWORD; i++)); do
    w="${COMP_WORDS[i]}"
    [[ "$w" == -* ]] && continue
    subs=" $(_allot_subcommands "$path") "
    [[ "$subs" == *" $w "* ]] && path="${path:+$path }$w"
  done
  if [[ "$cur" == -* ]]; then
    COMPREPLY=($(compgen -W "$(_allot_flags "$path")" -- "$cur"))
  else
    COMPREPLY=($(compgen -W "$(_allot_subcommands "$path")" -- "$cur"))
  fi
}
complete -o default -F _allot allot
)SH";
  return s;
}

void add_habit_commands(CLI::App& app, Context& ctx) {
  if (app.get_name().empty()) app.name("allot");  // main parses a vector, where CLI11 learns no program name
  app.set_version_flag("--version", std::string("allot ") + server::kVersion);
  auto a = std::make_shared<HabitArgs>();

  auto* help = app.add_subcommand("help", "Help for allot or for a command: allot help [COMMAND...]");
  help->add_option("command", a->words, "Command path, such as `node drain`");
  help->callback([&app, &ctx, a] {
    CLI::App* cur = &app;
    std::string path = "allot";
    for (const auto& w : a->words) {
      CLI::App* next = find_subcommand(*cur, w);
      if (next == nullptr) {
        std::vector<std::string> args(a->words);
        std::string msg = unknown_command_message(app, args);
        std::cerr << (msg.empty() ? "allot help: no command '" + w + "'\n" : msg);
        ctx.exit_code = 2;
        return;
      }
      cur = next;
      path += " " + w;
    }
    // Not cur->help(): CLI11 answers that with the help of the command being run, `help` itself.
    std::cout << cur->get_formatter()->make_help(cur, path, CLI::AppFormatMode::Normal);
    ctx.exit_code = 0;
  });

  auto* version = app.add_subcommand("version", "The versions of this client and of the server it talks to");
  client::add_client_flags(version, a->flags);
  on_run(version, ctx, a, "version", run_version);

  auto* man = app.add_subcommand("man", "The manual page of every command, as roff: allot man > allot.1; man ./allot.1");
  man->callback([&app, &ctx] {
    std::cout << man_page(app);
    ctx.exit_code = 0;
  });

  auto* completion = app.add_subcommand("completion",
                                        "Shell completion: source <(allot completion bash), or for zsh "
                                        "allot completion zsh > \"${fpath[1]}/_allot\"");
  completion->add_option("shell", a->shell, "bash or zsh")->required()->check(CLI::IsMember({"bash", "zsh"}));
  completion->callback([&app, &ctx, a] {
    std::cout << completion_script(app, a->shell);
    ctx.exit_code = 0;
  });
}

}  // namespace allot::cli
