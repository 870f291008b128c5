#pragma once
// The flags every client command takes (DESIGN.md, "Command-line contract": `allot <command> [--server URL]
// [--ca FILE] [-o table|json|yaml]`). Header-only so the client library itself does not depend on CLI11.
#include <CLI/CLI.hpp>

#include "client/session.h"

namespace allot::client {

// `extra_formats`: formats one command writes itself besides the usual ones (`allot usage -o csv`).
inline void add_client_flags(CLI::App* cmd, ClientFlags& f, std::vector<std::string> extra_formats = {}) {
  std::vector<std::string> formats = {"table", "wide", "json", "yaml", "name"};
  std::string help = "Output format: table, wide (tables in full), json, yaml or name (one name a line)";
  for (const auto& e : extra_formats) {
    formats.push_back(e);
    help += ", or " + e;
  }
  cmd->add_option("--server", f.server,
                  "allot server URL (default: $ALLOT_SERVER, then the config context's, then http://127.0.0.1:7070)");
  cmd->add_option("--token", f.token,
                  "Bearer token (default: $ALLOT_TOKEN, then the config context's); prefer those: flags show in ps");
  cmd->add_option("--context", f.context, "Config file context to use (default: $ALLOT_CONTEXT, then current-context)");
  cmd->add_option("--ca", f.ca_file,
                  "PEM CA certificate an https:// server's certificate must chain to (default: $ALLOT_CA, then the "
                  "system's CAs)");
  cmd->add_option("-o,--output", f.output, help)->check(CLI::IsMember(formats));
}

// A flag's comma-separated list (`--events job.failed,job.preempted`, `--teams a,b`) as the JSON array the API
// takes; empty items are dropped.
inline nlohmann::json comma_list(const std::string& text) {
  nlohmann::json out = nlohmann::json::array();
  size_t from = 0;
  for (;;) {
    const size_t comma = text.find(',', from);
    std::string item = text.substr(from, comma == std::string::npos ? std::string::npos : comma - from);
    if (!item.empty()) out.push_back(std::move(item));
    if (comma == std::string::npos) break;
    from = comma + 1;
  }
  return out;
}

// The list commands (jobs, nodes, teams): --no-headers as kubectl's, the table without its line of column names.
inline void add_list_flags(CLI::App* cmd, ClientFlags& f) {
  cmd->add_flag("--no-headers", f.no_headers, "The table without its line of column names (as kubectl's --no-headers)");
}

}  // namespace allot::client
