#include "server/http/auth_gate.h"

#include "auth/token.h"

namespace allot::server {

void AuthGate::publish(std::shared_ptr<const TokenTable> tokens) {
  MutexLock lock(mu_);
  tokens_ = std::move(tokens);
}

std::shared_ptr<const TokenTable> AuthGate::tokens() const {
  MutexLock lock(mu_);
  return tokens_;
}

Result<auth::Caller> AuthGate::authenticate(const std::string& authorization, int64_t now_s) const {
  if (authorization.empty())
    return Error::unauthenticated("this endpoint needs a token: send 'Authorization: Bearer <token>' (allot --token, "
                                  "$ALLOT_TOKEN or a context in the config file; an admin makes tokens with "
                                  "`allot token create`)");
  constexpr std::string_view kScheme = "Bearer ";
  if (authorization.size() <= kScheme.size() || authorization.compare(0, kScheme.size(), kScheme) != 0)
    return Error::unauthenticated("the Authorization header must read 'Bearer <token>'");
  auto parts = auth::parse_bearer(std::string_view(authorization).substr(kScheme.size()));
  if (!parts) return Error::unauthenticated("the bearer token is malformed (allot tokens read allot_<id>_<secret>)");
  auto table = tokens();
  auto it = table->find(parts->id);
  // One message for unknown ids and wrong secrets: an attacker learns nothing about which ids exist.
  if (it == table->end() || !auth::same_hash(it->second.token.secret_hash, auth::hash_secret(parts->secret)))
    return Error::unauthenticated("the bearer token is not valid");
  const TokenInfo& info = it->second;
  if (info.revoked) return Error::unauthenticated("token " + info.token.id + " was revoked");
  if (info.token.expires_at != 0 && now_s >= info.token.expires_at)
    return Error::unauthenticated("token " + info.token.id + " expired");
  return caller_of(info.token);
}

auth::Caller caller_of(const store::TokenRecord& t) {
  auth::Caller c;
  c.token_id = t.id;
  c.role = t.role;
  c.teams = t.teams;
  c.node = t.node;
  c.user = t.user;
  return c;
}

store::Actor actor_of(const auth::Caller& c) {
  return store::Actor{.token = c.token_id, .role = c.role, .teams = c.teams, .node = c.node, .user = c.user};
}

}  // namespace allot::server
