// The body of POST /v1/agents/{node}/logs (server/api/log_upload.h), read as the endpoint reads it, then what an
// accepted body writes into the replica log store. An agent's log upload is the one body whose bytes are
// kept as they are (the replica's own output), and the job name in it picks a file: whatever the name, the
// file must stay inside the logs directory, and reading the log back must give the last bytes written. The
// first input byte picks the Content-Type (as in http_body_fuzz.cpp) and whether the store is written.
#include <httplib.h>
#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "fuzz_checks.h"
#include "server/api/api.h"
#include "server/lifecycle/log_store.h"
#include "server/api/log_upload.h"

namespace {

using namespace allot;
namespace fs = std::filesystem;

// A scratch directory for this process: <tmp>/allot-fuzz-logs-PID/logs holds the store, and nothing else
// may appear in <tmp>/allot-fuzz-logs-PID.
const fs::path& scratch() {
  static const fs::path dir = [] {
    fs::path d = fs::temp_directory_path() / ("allot-fuzz-logs-" + std::to_string(::getpid()));
    fs::create_directories(d / "logs");
    return d;
  }();
  return dir;
}

constexpr size_t kMaxBytes = 64;  // small, so that trimming is exercised too

void store_and_read_back(const server::LogUpload& up) {
  const fs::path logs = scratch() / "logs";
  server::LogStore store(logs.string(), kMaxBytes);
  // Twice, so that the second append trims a log past 2 x kMaxBytes.
  for (int i = 0; i < 2; ++i)
    if (auto st = store.append(up.job, up.rank, up.data); !st) fuzz::fail("LogStore::append", st.error().message);
  const std::string both = up.data + up.data;
  auto back = store.read(up.job, up.rank, 0);
  if (!back) fuzz::fail("LogStore::read", back.error().message);
  const std::string want = both.substr(both.size() - std::min(both.size(), kMaxBytes));
  // Reading gives the last kMaxBytes at least (more when the file was not trimmed yet), ending as written.
  fuzz::require(back->size() >= want.size() && back->compare(back->size() - want.size(), want.size(), want) == 0,
                "log read back", "job '" + up.job + "' rank " + std::to_string(up.rank));
  for (const auto& entry : fs::directory_iterator(scratch()))
    fuzz::require(entry.path().filename() == "logs", "log file outside the logs directory", entry.path().string());
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(logs, ec)) fs::remove_all(entry.path(), ec);
}

const char* const kContentTypes[] = {"application/json", "application/json; charset=utf-8", "text/plain", ""};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  httplib::Request req;
  req.body = fuzz::text_of(data + 1, size - 1);
  req.set_header("Content-Type", kContentTypes[data[0] % 4]);
  if (server::check_content_type(req)) return 0;
  auto body = server::json_body(req);
  if (!fuzz::accepted(body, "json_body")) return 0;
  auto upload = server::parse_log_upload(*body);
  if (!fuzz::accepted(upload, "parse_log_upload")) return 0;
  // The handler checks next that the job has that replica on the agent's node, so only names of existing jobs
  // (check_name) reach the store. Every name is given to it all the same: whatever its length or bytes, it must
  // be stored (a valid 129-character name of 64 dots could not be, issue 33) and kept inside the directory.
  if (data[0] & 0x10) store_and_read_back(*upload);
  return 0;
}
