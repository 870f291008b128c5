#include "client/session.h"

#include "client/config_file.h"

#include <ctime>
#include <fstream>
#include <iterator>
#include <sstream>
#include <iostream>

namespace allot::client {

Result<Session> Session::open(const ClientFlags& flags) {
  auto format = parse_format(flags.output);
  if (!format) return format.error();
  auto conn = resolve_connection(flags.server, flags.token, flags.context);
  if (!conn) return conn.error();
  // --ca, else $ALLOT_CA, else the context's CA.
  std::string ca = resolve_ca_file(flags.ca_file);
  if (ca.empty()) ca = conn->ca;
  auto api = ApiClient::connect(conn->server, {.ca_file = ca, .token = conn->token});
  if (!api) return api.error();
  return Session(std::move(*api), *format, flags.no_headers);
}

int Session::print(const nlohmann::json& data, const std::function<std::string(const nlohmann::json&)>& table) {
  if (format_ != Format::kTable) {
    std::cout << render_data(data, format_) << std::flush;
    return 0;
  }
  std::string text = table(data);
  // --no-headers: every table allot prints starts with its line of column names.
  if (no_headers_) text.erase(0, text.find('\n') == std::string::npos ? text.size() : text.find('\n') + 1);
  std::cout << text << std::flush;
  return 0;
}

int Session::show(const std::string& command, const Result<nlohmann::json>& answer,
                  const std::function<std::string(const nlohmann::json&)>& table) {
  if (!answer) return report(command, answer.error());
  return print(*answer, table);
}

int Session::delete_named(const std::string& command, const std::string& collection, const std::string& name,
                          const std::string& done) {
  auto r = api_.del(collection + "/" + url_encode(name));
  if (!r) return report(command, r.error());
  return print(nlohmann::json{{"deleted", name}}, [&](const nlohmann::json&) { return done; });
}

int report(const std::string& command, const Error& e) {
  std::cerr << "allot " << command << ": " << e.message << "\n";
  return exit_code_for(e);
}

Result<std::string> read_input(const std::string& path, size_t max_bytes) {
  std::ifstream file;
  if (path != "-") {
    file.open(path, std::ios::binary);
    if (!file) return Error::invalid("cannot read " + path);
  }
  std::istream& in = path == "-" ? std::cin : file;
  // One byte more than allowed tells a file at the limit from a longer one, without reading the rest.
  std::string text(max_bytes + 1, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  if (in.bad()) return Error::invalid("cannot read " + path);
  text.resize(static_cast<size_t>(in.gcount()));
  if (text.size() > max_bytes)
    return Error::invalid((path == "-" ? std::string("standard input") : path) + " is larger than " + std::to_string(max_bytes) +
                          " bytes, the most a request to the server may carry; split it into several files");
  return text;
}

int64_t unix_now() { return static_cast<int64_t>(std::time(nullptr)); }

}  // namespace allot::client
