#include "server/writer/bootstrap.h"

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "auth/secret_file.h"
#include "auth/token.h"
#include "server/http/auth_gate.h"

namespace allot::server {

Result<BootstrapOutcome> ensure_admin_token(Writer& writer, const std::string& file) {
  const auth::IssuedToken fresh = auth::issue_token();
  const std::string pending = file + ".new";
  bool wrote = false;
  const store::Actor server{.token = "server", .role = store::Tokenless::kServer};
  // The check and the token's creation run as one command, so two starts cannot both make one.
  Reply r = writer.call(
      [&](Txn& txn) -> Result<Render> {
        if (!txn.state().tokens->empty()) return Render([](const ServerState&) { return Reply{204, "", ""}; });
        if (auto st = auth::write_secret_file(pending, fresh.bearer + "\n", "the admin token file"); !st) return st.error();
        wrote = true;
        store::TokenRecord t{fresh.id, fresh.secret_hash, auth::Role::kAdmin, {}, {}, 0, "bootstrap admin token (" + file + ")"};
        if (auto st = txn.apply(store::CreateToken{std::move(t)}); !st) return st.error();
        return Render([](const ServerState&) { return Reply{201, "", ""}; });
      },
      CallContext{server, std::nullopt});
  if (r.status == 204) return BootstrapOutcome{false, file};
  if (r.status != 201) {
    if (wrote) std::remove(pending.c_str());
    return Error::internal("cannot make the bootstrap admin token: " + r.body);
  }
  if (std::rename(pending.c_str(), file.c_str()) != 0)
    return Error::internal("the admin token was made but " + pending + " could not be renamed to " + file + ": " +
                           std::strerror(errno) + "; it holds the token");
  return BootstrapOutcome{true, file};
}

}  // namespace allot::server
