#pragma once
// What every client command shares: the server it talks to, the output format, and the rule that turns an
// Error into a message on stderr and an exit code (2: the request was wrong; 3: the server failed or cannot
// be reached).
#include <functional>
#include <iosfwd>
#include <string>

#include <nlohmann/json.hpp>

#include "client/http_client.h"
#include "client/output.h"

namespace allot::client {

struct ClientFlags {
  std::string server;            // empty: $ALLOT_SERVER, then the context's, then http://127.0.0.1:7070
  std::string token;             // empty: $ALLOT_TOKEN, then the context's
  std::string context;           // empty: $ALLOT_CONTEXT, then the config file's current context
  std::string ca_file;           // https: the CA to verify the server with; empty: $ALLOT_CA, then the system's
  std::string output = "table";  // table | wide | json | yaml | name
  bool no_headers = false;       // tables: leave out the line of column names
};

class Session {
 public:
  static Result<Session> open(const ClientFlags& flags);

  ApiClient& api() { return api_; }
  Format format() const { return format_; }

  // Prints `data` in the chosen format; `table` renders it for people.
  int print(const nlohmann::json& data, const std::function<std::string(const nlohmann::json&)>& table);
  // The answer of an API call, printed as print() does; or, when the call failed, the error reported as
  // report() does for `command`. Returns the exit code either way.
  int show(const std::string& command, const Result<nlohmann::json>& answer,
           const std::function<std::string(const nlohmann::json&)>& table);
  // DELETE `collection`/NAME (the name URL-encoded); then {"deleted": NAME} in the chosen format, or `done` for
  // people; or the error reported for `command`.
  int delete_named(const std::string& command, const std::string& collection, const std::string& name, const std::string& done);

 private:
  Session(ApiClient api, Format f, bool no_headers) : api_(std::move(api)), format_(f), no_headers_(no_headers) {}
  ApiClient api_;
  Format format_;
  bool no_headers_ = false;
};

// "allot <command>: <message>" on stderr; returns the exit code for the error.
int report(const std::string& command, const Error& e);

// The text of a file, or of standard input for "-", of at most `max_bytes`: a longer input is an error
// naming the limit, and no more than that is read.
inline constexpr size_t kMaxInputBytes = 1 << 20;  // the server's default request body limit
Result<std::string> read_input(const std::string& path, size_t max_bytes = kMaxInputBytes);

// Unix time now, for ages in tables.
int64_t unix_now();

}  // namespace allot::client
