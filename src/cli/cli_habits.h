#pragma once
// What operators used to kubectl, Slurm and `hyp` type first, before any command runs: `allot help [COMMAND]`,
// `allot --version` / `allot version` (client and server), `allot completion bash|zsh`, an unknown command
// that names itself and suggests the closest known one, and the client flags (--server, --token, --context,
// --ca, -o) before the command as well as after it. Everything here reads the CLI11 definitions, so a
// command added anywhere is completed, suggested and helped without a second list.
#include <string>
#include <vector>

#include "cli/commands.h"

namespace allot::cli {

// The client flags given before the command moved after it (`allot --server URL jobs` -> `allot jobs
// --server URL`), where each command defines them. Other arguments keep their order.
std::vector<std::string> hoist_client_flags(const std::vector<std::string>& args);

// kubectl's words for allot's commands, rewritten before parsing: `get jobs|nodes|teams` (`get job NAME`:
// `describe NAME`), `describe jobs/NAME`, `job/NAME`, `node/NAME`, `team/NAME` and `describe jobs NAME`,
// `delete job NAME...` (and `job/NAME`), and `-o=FORMAT` as `-o FORMAT`. Arguments after `--` are left alone.
// `get` of anything else is left for unknown_command_message to name.
std::vector<std::string> kubectl_words(const std::vector<std::string>& args);

// When the words of `args` (after hoisting) lead to a command that does not exist, the message naming it
// and the closest existing one ("allot: unknown command 'nodes delete'; did you mean 'node delete'?"),
// else "". Only words where a subcommand is expected are looked at: a job name is never "unknown".
std::string unknown_command_message(CLI::App& app, const std::vector<std::string>& args);

// The closest of `candidates` to `word` by edit distance (prefixes count as close), or "" when none is
// within reach (at most a third of the word's length, at least 2 edits).
std::string closest(const std::string& word, const std::vector<std::string>& candidates);

// bash completion for every command and flag of `app`; zsh uses the same through bashcompinit.
std::string completion_script(CLI::App& app, const std::string& shell);

// The manual page (roff) of every command and flag of `app`.
std::string man_page(CLI::App& app);

// help, version, man, completion.
void add_habit_commands(CLI::App& app, Context& ctx);

}  // namespace allot::cli
