#pragma once
// Authentication on the request threads: the bearer token of a request checked against the latest token
// table the writer published. The writer owns the tokens (they are journaled like every change); after each
// durable batch that changed them it publishes an immutable copy here, so request threads never wait for the
// writer to learn who is calling, and a revoked token stops working as soon as its revocation is durable.
//
// Thread-safety: publish() from the writer, authenticate() from any thread.
#include <memory>
#include <mutex>
#include <string>

#include "auth/caller.h"
#include "core/model/result.h"
#include "server/writer/server_state.h"
#include "common/thread_annotations.h"

namespace allot::server {

class AuthGate {
 public:
  void publish(std::shared_ptr<const TokenTable> tokens);
  std::shared_ptr<const TokenTable> tokens() const;

  // The caller an `Authorization` header value stands for at `now_s` (Unix seconds). Errors are
  // kUnauthenticated and say what is missing or wrong without saying which tokens exist.
  Result<auth::Caller> authenticate(const std::string& authorization, int64_t now_s) const;

 private:
  mutable Mutex mu_;
  std::shared_ptr<const TokenTable> tokens_ GUARDED_BY(mu_) = std::make_shared<TokenTable>();
};

// The caller a live token record stands for.
auth::Caller caller_of(const store::TokenRecord& t);
// The actor that journal records of a caller name.
store::Actor actor_of(const auth::Caller& c);

}  // namespace allot::server
