#pragma once
// A real PostgreSQL server for the unit tests, started through tests/support/pg_instance.sh (the one place that
// knows how: initdb + pg_ctl in a temporary directory, as an unprivileged user, on a free loopback port) the
// first time a test of this process asks, and stopped when the process exits. Each test takes a fresh database
// on it. When PostgreSQL cannot be installed the helper says why, and the tests skip with that message.
#include <libpq-fe.h>
#include <stdlib.h>

#include <array>
#include <cstdio>
#include <memory>
#include <string>
#include <sys/wait.h>

namespace allot::testing {

class PgTestInstance {
 public:
  // The server of this process, started on first use; nullptr with `why` set when it cannot run here. A
  // failure other than "cannot be installed" (exit 77 of the script) is reported as a failure, not a skip.
  static PgTestInstance* get(std::string* why, bool* failed) {
    static std::unique_ptr<PgTestInstance> instance;
    static std::string error;
    static bool broken = false;
    static bool tried = false;
    if (!tried) {
      tried = true;
      char dir[] = "/tmp/allot-pg-XXXXXX";
      if (!mkdtemp(dir)) {
        error = "cannot make a temporary directory for PostgreSQL";
        broken = true;
      } else {
        const std::string cmd = "bash " ALLOT_SOURCE_DIR "/tests/support/pg_instance.sh start " + std::string(dir) +
                                " 2>" + std::string(dir) + ".err";
        std::string out;
        FILE* p = popen(cmd.c_str(), "r");
        std::array<char, 256> buf{};
        while (p && fgets(buf.data(), buf.size(), p)) out += buf.data();
        const int status = p ? pclose(p) : -1;
        const int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
        while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
        std::string err = slurp(std::string(dir) + ".err");
        std::remove((std::string(dir) + ".err").c_str());
        if (code == 0 && out.rfind("postgresql://", 0) == 0) {
          instance.reset(new PgTestInstance(dir, out));
        } else {
          error = (code == 77 ? "" : "cannot start PostgreSQL (tests/support/pg_instance.sh exit " + std::to_string(code) + "): ") + err;
          broken = code != 77;
          std::string stop = "bash " ALLOT_SOURCE_DIR "/tests/support/pg_instance.sh stop " + std::string(dir) + " >/dev/null 2>&1";
          (void)std::system(stop.c_str());
        }
      }
    }
    if (!instance) {
      *why = error;
      *failed = broken;
    }
    return instance.get();
  }

  ~PgTestInstance() {
    std::string stop = "bash " ALLOT_SOURCE_DIR "/tests/support/pg_instance.sh stop " + dir_ + " >/dev/null 2>&1";
    (void)std::system(stop.c_str());
  }

  // The URL of the server's `allot` database: postgresql://allot@127.0.0.1:PORT/allot.
  const std::string& url() const { return url_; }

  // A new empty database; its URL.
  std::string fresh_database() {
    const std::string name = "t" + std::to_string(++databases_);
    exec(url_, "CREATE DATABASE " + name);
    return url_.substr(0, url_.rfind('/') + 1) + name;
  }

  // Runs SQL on a database behind the store's back (to damage a record, end a session); "" or the error.
  static std::string exec(const std::string& url, const std::string& sql) {
    PGconn* c = PQconnectdb(url.c_str());
    std::string err;
    if (PQstatus(c) != CONNECTION_OK) {
      err = PQerrorMessage(c);
    } else {
      PGresult* r = PQexec(c, sql.c_str());
      if (PQresultStatus(r) != PGRES_COMMAND_OK && PQresultStatus(r) != PGRES_TUPLES_OK) err = PQerrorMessage(c);
      PQclear(r);
    }
    PQfinish(c);
    return err;
  }

 private:
  PgTestInstance(std::string dir, std::string url) : dir_(std::move(dir)), url_(std::move(url)) {}
  static std::string slurp(const std::string& path) {
    std::string out;
    if (FILE* f = std::fopen(path.c_str(), "r")) {
      std::array<char, 256> buf{};
      size_t n;
      while ((n = std::fread(buf.data(), 1, buf.size(), f)) > 0) out.append(buf.data(), n);
      std::fclose(f);
    }
    return out;
  }
  std::string dir_;
  std::string url_;
  int databases_ = 0;
};

}  // namespace allot::testing
