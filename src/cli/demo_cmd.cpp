// `allot demo [--data DIR] [--listen HOST:PORT] [--no-keep] | allot demo --stop [--data DIR]`: starts a server
// (SQLite in DIR) and four emulated ml.g5.8xlarge agents on this machine as child processes of this same
// binary, walks through teams, borrowing, reclaim, priorities and topology with real processes, and leaves
// the cluster running for the user (or stops it with --no-keep). The pids go to DIR/pids so that
// `allot demo --stop` can end it later. Exit codes: 0 done, 2 invalid use, 3 something did not start or a
// step did not happen in time (the message says which, and the logs are in DIR).
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <thread>

#include "agent/container.h"
#include "agent/health_checks.h"
#include "auth/secret_file.h"
#include "cli/commands.h"
#include "client/config_file.h"
#include "client/demo_script.h"
#include "client/http_client.h"

namespace allot::cli {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

constexpr const char* kMarker = ".allot-demo";  // a data dir with it is ours to wipe

struct DemoArgs {
  std::string data = "allot-demo";
  std::string listen;
  bool no_keep = false;
  bool stop = false;
};

struct Proc {
  std::string role;  // "server" or "agent gpu-1"
  pid_t pid = 0;
};

std::string self_exe() {
  std::error_code ec;
  auto p = fs::read_symlink("/proc/self/exe", ec);
  return ec ? "allot" : p.string();
}

// How to show the binary in printed commands: `allot` when that is what PATH finds, else its path.
std::string cli_name(const std::string& exe) {
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "");
  std::string dir;
  std::error_code ec;
  while (std::getline(dirs, dir, ':'))
    if (!dir.empty() && fs::equivalent(fs::path(dir) / "allot", exe, ec)) return "allot";
  return exe;
}

// A child in its own session, so it outlives the demo (and a Ctrl-C in its terminal), logging to `log`.
Result<pid_t> spawn(const std::string& exe, std::vector<std::string> args, const std::string& log) {
  args.insert(args.begin(), exe);
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  // Logs name jobs and their errors: the owner's alone, like the server's data (docs/security.md, "Files at rest").
  int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return Error::internal("cannot write " + log);
  pid_t pid = fork();
  if (pid < 0) return close(fd), Error::internal("fork failed");
  if (pid == 0) {
    setsid();
    int null_fd = open("/dev/null", O_RDONLY);
    dup2(null_fd, 0), dup2(fd, 1), dup2(fd, 2);
    execv(exe.c_str(), argv.data());
    _exit(127);
  }
  close(fd);
  return pid;
}

bool gone(pid_t pid) {
  int status = 0;
  if (waitpid(pid, &status, WNOHANG) == pid) return true;  // our own child
  if (kill(pid, 0) != 0) return true;
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string s((std::istreambuf_iterator<char>(stat)), {});
  auto close = s.rfind(')');
  return close != std::string::npos && close + 2 < s.size() && s[close + 2] == 'Z';
}

// Only processes that still are allot's server or agent are signalled, never a pid reused by something else.
bool is_allot(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/cmdline");
  std::string cmd((std::istreambuf_iterator<char>(in)), {});
  return cmd.find("allot") != std::string::npos &&
         (cmd.find(std::string("server\0", 7)) != std::string::npos || cmd.find(std::string("agent\0", 6)) != std::string::npos);
}

// Agents first (they stop their replicas, 2 s grace), then the server; SIGKILL whatever is left after 8 s.
void stop_all(const std::vector<Proc>& procs) {
  auto signal_all = [&](bool agents, int sig) {
    for (const auto& p : procs)
      if ((p.role != "server") == agents && !gone(p.pid) && is_allot(p.pid)) kill(p.pid, sig);
  };
  auto wait_all = [&](bool agents, std::chrono::milliseconds limit) {
    for (auto until = std::chrono::steady_clock::now() + limit; std::chrono::steady_clock::now() < until;) {
      bool left = false;
      for (const auto& p : procs) left |= (p.role != "server") == agents && !gone(p.pid);
      if (!left) return;
      std::this_thread::sleep_for(50ms);
    }
  };
  signal_all(true, SIGTERM);
  wait_all(true, 5s);
  signal_all(true, SIGKILL);
  signal_all(false, SIGTERM);
  wait_all(false, 3s);
  signal_all(false, SIGKILL);
  wait_all(false, 1s);
}

std::vector<Proc> read_pids(const std::string& dir) {
  std::vector<Proc> out;
  std::ifstream in(fs::path(dir) / "pids");
  std::string line;
  while (std::getline(in, line)) {
    auto sp = line.rfind(' ');
    if (sp == std::string::npos) continue;
    try {
      out.push_back({line.substr(0, sp), static_cast<pid_t>(std::stol(line.substr(sp + 1)))});
    } catch (...) {
    }
  }
  return out;
}

void write_pids(const std::string& dir, const std::vector<Proc>& procs) {
  std::ofstream out(fs::path(dir) / "pids");
  for (const auto& p : procs) out << p.role << " " << p.pid << "\n";
}

int run_stop(const DemoArgs& a) {
  auto procs = read_pids(a.data);
  if (procs.empty()) {
    std::cout << "allot demo: nothing to stop in " << a.data << "\n";
    return 0;
  }
  stop_all(procs);
  std::error_code ec;
  fs::remove(fs::path(a.data) / "pids", ec);
  std::cout << "allot demo: stopped the server and " << procs.size() - 1 << " agents of " << a.data << "\n";
  return 0;
}

bool port_free(int port) {
  int s = socket(AF_INET, SOCK_STREAM, 0);
  if (s < 0) return false;
  int one = 1;
  setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bool ok = bind(s, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  close(s);
  return ok;
}

// The server prints "allot server listening on URL" once it serves; with port 0 that is how we learn it.
Result<std::string> wait_for_url(const std::string& log, pid_t server) {
  for (auto until = std::chrono::steady_clock::now() + 10s; std::chrono::steady_clock::now() < until;) {
    std::ifstream in(log);
    std::string line;
    while (std::getline(in, line)) {
      auto at = line.find("listening on http://");
      if (at == std::string::npos) continue;
      std::string url = line.substr(at + 13);
      return url.substr(0, url.find(' '));
    }
    if (gone(server)) return Error::internal("allot server exited at start; see " + log);
    std::this_thread::sleep_for(50ms);
  }
  return Error::internal("allot server did not start listening within 10 s; see " + log);
}

Status wait_for_nodes(client::ApiClient& api, size_t want) {
  size_t seen = 0;
  for (auto until = std::chrono::steady_clock::now() + 15s; std::chrono::steady_clock::now() < until;) {
    if (auto nodes = api.get("/v1/nodes"); nodes && nodes->is_array()) {
      seen = 0;
      for (const auto& n : *nodes) seen += n.value("health", "") == "Schedulable";
      if (seen >= want) return ok_status();
    }
    std::this_thread::sleep_for(100ms);
  }
  return Error::internal("only " + std::to_string(seen) + " of " + std::to_string(want) +
                         " agents registered within 15 s; see the agent-*.log files");
}

Status prepare_dir(const std::string& dir, const std::string& cli) {
  for (const auto& p : read_pids(dir))
    if (!gone(p.pid) && is_allot(p.pid))
      return Error::precondition("a demo is already running from " + dir + "; stop it with `" + cli + " demo --stop" +
                                 (dir == "allot-demo" ? "" : " --data " + dir) + "` or use --data OTHER_DIR");
  std::error_code ec;
  if (fs::exists(dir) && !fs::is_empty(dir, ec) && !fs::exists(fs::path(dir) / kMarker))
    return Error::invalid(dir + " exists and is not an allot demo directory; pass --data with a new directory");
  fs::remove_all(dir, ec);  // a fresh database each time: the walkthrough starts from an empty cluster
  fs::create_directories(dir, ec);
  if (ec) return Error::internal("cannot create " + dir + ": " + ec.message());
  // Others may pass through (the replicas, run as nobody when the demo runs as root, reach their work and
  // checkpoint directories below it) but not list it; every file the demo and its server write in it is 0600.
  fs::permissions(dir, fs::perms::owner_all | fs::perms::group_exec | fs::perms::others_exec, ec);
  if (ec) return Error::internal("cannot set the mode of " + dir + ": " + ec.message());
  std::ofstream(fs::path(dir) / kMarker) << "allot demo data; `allot demo` deletes and recreates this directory\n";
  return ok_status();
}

int fail(const std::string& dir, const std::vector<Proc>& procs, const Error& e) {
  std::cerr << "\nallot demo: " << e.message << "\nallot demo: logs are in " << dir << "; stopping the demo cluster\n";
  stop_all(procs);
  std::error_code ec;
  fs::remove(fs::path(dir) / "pids", ec);
  return e.code == ErrorCode::kInvalidArgument ? 2 : 3;
}

// Makes the CLI's context allot-demo point at this server with the admin token file, and current. Returns the
// context that was current before, so the demo can say how to switch back.
Result<std::string> save_demo_context(const std::string& url, const std::string& admin_file) {
  const std::string path = client::config_path();
  auto cfg = client::load_config(path);
  if (!cfg) return cfg.error();
  const std::string before = cfg->current;
  client::ConfigContext& c = cfg->upsert("allot-demo");
  c.server = url;
  c.token.clear();
  c.token_file = admin_file;
  cfg->current = "allot-demo";
  if (auto st = client::save_config(path, *cfg); !st) return st.error();
  return before;
}

// Step 7's image, built here from Debian's busybox-static (`podman import` of a root file system: no registry is
// reachable from many clusters, and none is needed), where the agents can run containers: as root, with podman.
// Empty, with the reason in `why`, where they cannot.
std::string demo_image(const std::string& dir, std::string& why) {
  const std::string image = "localhost/allot-demo-busybox:1";
  if (geteuid() != 0) {
    why = "the agents run containers only as root (podman rootful, a uid block per team), and this demo is not root";
    return "";
  }
  const agent::ContainerOptions opt;
  if (auto facts = agent::detect_podman(opt); !facts.usable) {
    why = facts.problem;
    return "";
  }
  // The agents run containers only with allot-container-init beside the binary (agent/container.h).
  if (auto problem = agent::container_init_problem(agent::default_container_init()); !problem.empty()) {
    why = problem;
    return "";
  }
  if (!fs::exists("/bin/busybox")) {
    why = "the demo builds its image from busybox-static, which is not installed (apt-get install busybox-static)";
    return "";
  }
  const fs::path root = fs::path(dir) / "image-rootfs";
  std::error_code ec;
  fs::create_directories(root / "bin", ec);
  fs::create_directories(root / "etc", ec);
  fs::copy_file("/bin/busybox", root / "bin/busybox", fs::copy_options::overwrite_existing, ec);
  for (const char* tool : {"sh", "cat", "id", "tr", "cut", "echo", "sleep"}) fs::create_symlink("busybox", root / "bin" / tool, ec);
  std::ofstream(root / "etc/allot-demo-image") << "the allot demo's busybox image\n";
  const std::string tar = (fs::path(dir) / "image.tar").string();
  auto t = agent::run_with_timeout({"/bin/tar", "-C", root.string(), "-cf", tar, "."}, std::chrono::seconds(60));
  auto imp = t.exit_code == 0 ? agent::run_with_timeout({opt.podman, "import", tar, image}, std::chrono::seconds(120)) : t;
  fs::remove_all(root, ec);
  fs::remove(tar, ec);
  if (imp.exit_code != 0) {
    why = "cannot build the demo's image: " + imp.output;
    return "";
  }
  return image;
}

int run_demo(const DemoArgs& a) {
  if (a.stop) return run_stop(a);
  const std::string exe = self_exe(), cli = cli_name(exe), dir = a.data;
  if (auto st = prepare_dir(dir, cli); !st) {
    std::cerr << "allot demo: " << st.error().message << "\n";
    return st.error().code == ErrorCode::kInvalidArgument ? 2 : 3;
  }
  const std::string listen = !a.listen.empty() ? a.listen : port_free(7070) ? "127.0.0.1:7070" : "127.0.0.1:0";
  std::vector<Proc> procs;
  std::cout << "allot demo: a server and 4 emulated GPU nodes on this machine, running real processes\n"
            << "   (data, logs and job files in " << dir << "/; stop at any time with `" << cli << " demo --stop"
            << (dir == "allot-demo" ? "" : " --data " + dir) << "`)\n" << std::flush;

  auto server = spawn(exe, {"server", "--listen", listen, "--data", dir + "/server", "--heartbeat-timeout", "5"},
                      dir + "/server.log");
  if (!server) return fail(dir, procs, server.error());
  procs.push_back({"server", *server});
  write_pids(dir, procs);
  auto url = wait_for_url(dir + "/server.log", *server);
  if (!url) return fail(dir, procs, url.error());
  // The server wrote its first admin token into its data directory; the demo acts as that admin, gives the
  // agents a short-lived join token and leaves a CLI context behind so `allot jobs` works afterwards.
  const std::string admin_file = fs::absolute(dir + "/server/admin-token").string();
  auto admin = auth::read_token_file(admin_file);
  if (!admin) return fail(dir, procs, admin.error());
  auto api = client::ApiClient::connect(*url, client::ConnectOptions{.ca_file = {}, .token = *admin});
  if (!api) return fail(dir, procs, api.error());
  auto join = api->post("/v1/tokens", {{"role", "agent-join"}, {"ttl_s", 3600}, {"description", "allot demo agents"}});
  if (!join) return fail(dir, procs, join.error());
  const std::string join_file = dir + "/join-token";
  if (auto st = auth::write_secret_file(join_file, (*join)["token"].get<std::string>() + "\n", "the join token file"); !st)
    return fail(dir, procs, st.error());

  // Two layer-3 network nodes of two hosts each under one spine: the smallest tree where placement matters.
  std::error_code faults_ec;
  fs::create_directories(dir + "/faults", faults_ec);
  for (int i = 1; i <= 4; ++i) {
    const std::string name = "gpu-" + std::to_string(i);
    const std::string labels = std::string("network-node-layer-1=nn-1,network-node-layer-2=nn-2,network-node-layer-3=") +
                               (i <= 2 ? "nn-3a" : "nn-3b");
    std::vector<std::string> args = {"agent", "--server", *url, "--name", name, "--instance-type", "ml.g5.8xlarge",
                                     "--labels", labels, "--work-dir", dir + "/agents/" + name, "--token-file", join_file,
                                     "--heartbeat-interval", "0.3", "--stop-grace", "2",
                                     // Step 6 injects a fault here (docs/resiliency.md, "Emulated nodes").
                                     "--emulate-faults", fs::absolute(dir + "/faults/" + name).string(), "--health-interval", "1"};
    // Run as root, each team's replicas run as a uid of its own (docs/security.md, "Teams never share a uid"),
    // from a range no account uses: agents refuse to run jobs as root unless told to.
    if (geteuid() == 0) args.insert(args.end(), {"--run-as-range", "1000000000-1999999999"});
    auto agent = spawn(exe, args, dir + "/agent-" + name + ".log");
    if (!agent) return fail(dir, procs, agent.error());
    procs.push_back({"agent " + name, *agent});
  }
  write_pids(dir, procs);
  if (auto st = wait_for_nodes(*api, 4); !st) return fail(dir, procs, st.error());
  std::cout << "\n   server  " << *url << " (pid " << *server << ")\n"
            << "   web     " << *url << "/  (the dashboard: log in with the admin token, `cat " << admin_file << "`)\n"
            << "   nodes   gpu-1 gpu-2 under network node nn-3a, gpu-3 gpu-4 under nn-3b; ml.g5.8xlarge, 1 GPU each\n";

  auto context = save_demo_context(*url, admin_file);
  if (!context) return fail(dir, procs, context.error());
  std::cout << "   access  admin token in " << admin_file << "; CLI context allot-demo is now current"
            << (context->empty() || *context == "allot-demo" ? "" : " (was " + *context + ": `" + cli + " config use-context " + *context + "` switches back)")
            << "\n";

  client::demo::Cluster cluster{dir, cli};
  cluster.image = demo_image(dir, cluster.no_image);
  if (auto st = client::demo::write_files(cluster); !st) return fail(dir, procs, st.error());
  std::cout << "   $ " << cli << " apply " << dir << "/teams.yaml\n";
  if (auto st = client::demo::apply_teams(*api, cluster); !st) return fail(dir, procs, st.error());
  std::cout << "   teams   team-a and team-b: 2 GPUs each, LendAndBorrow up to 100%; priority classes inference "
               "(100) > training (50)\n";
  if (auto st = client::demo::walkthrough(*api, cluster, std::cout); !st) return fail(dir, procs, st.error());

  if (a.no_keep) {
    stop_all(procs);
    std::error_code ec;
    fs::remove(fs::path(dir) / "pids", ec);
    std::cout << "\nallot demo: done; the server and agents are stopped (--no-keep)\n";
    return 0;
  }
  std::string pids;
  for (const auto& p : procs) pids += " " + std::to_string(p.pid);
  std::cout << "\nThe cluster keeps running, with b-ring still at work. Try:\n"
            << "   " << cli << " jobs                  # every job, its state and why\n"
            << "   " << cli << " describe b-ring       # placement (GPUs, NUMA, CPUs) and history\n"
            << "   " << cli << " logs b-ring           # what its two ranks print\n"
            << "   " << cli << " teams                 # quota, usage, borrowed and lent\n"
            << "   " << cli << " nodes                 # " << cli << " topology show; " << cli << " events\n"
            << "   " << cli << " submit " << dir << "/jobs/a-train.yaml   # then: " << cli << " cancel a-train\n"
            << "Or watch it in a browser: " << *url << "/ (paste the token printed by `cat " << admin_file << "`)\n"
            << "Stop it with: " << cli << " demo --stop" << (dir == "allot-demo" ? "" : " --data " + dir)
            << "   (or: kill" << pids << ")\n";
  return 0;
}

}  // namespace

void add_demo_command(CLI::App& app, Context& ctx) {
  auto a = std::make_shared<DemoArgs>();
  auto* cmd = app.add_subcommand("demo", "Start a server and emulated GPU nodes here and walk through allot's scheduling");
  cmd->add_option("--data", a->data, "Demo directory: database, logs, job files (recreated each run)")->capture_default_str();
  cmd->add_option("--listen", a->listen, "Server address (default 127.0.0.1:7070, or any free port if it is taken)");
  cmd->add_flag("--no-keep", a->no_keep, "Stop the server and agents at the end instead of leaving them running");
  cmd->add_flag("--stop", a->stop, "Stop a demo left running in --data");
  cmd->callback([a, &ctx] { ctx.exit_code = run_demo(*a); });
}

}  // namespace allot::cli
