#pragma once
// What every client command does around its body: open a session with the command's --server and -o flags,
// run the body, keep its exit code; a session that cannot be opened is reported under the command's name.
#include <memory>
#include <string>

#include "cli/commands.h"
#include "client/session.h"

namespace allot::cli {

// `Args` holds the command group's parsed flags, with the client flags as `flags`.
template <typename Args, typename F>
void on_run(CLI::App* cmd, Context& ctx, std::shared_ptr<Args> a, const std::string& name, F body) {
  cmd->callback([&ctx, a, name, body] {
    auto s = client::Session::open(a->flags);
    ctx.exit_code = s ? body(*s, *a) : client::report(name, s.error());
  });
}

}  // namespace allot::cli
