#include "agent/device_counters.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <utility>

#include <nlohmann/json.hpp>

namespace allot::agent {
namespace {

struct Row {
  std::string_view counter;
  XidAction action;
  std::string_view what;
};

// Written from the meanings in AWS's neuron-monitor user guide ("neuron_hw_counters", "execution_stats").
constexpr Row kNeuron[] = {
    {"mem_ecc_uncorrected", XidAction::kReplace, "uncorrectable ECC errors in device memory"},
    {"sram_ecc_uncorrected", XidAction::kReplace, "uncorrectable ECC errors in on-chip SRAM"},
    {"mem_ecc_corrected", XidAction::kIgnore, "corrected ECC errors in device memory"},
    {"sram_ecc_corrected", XidAction::kIgnore, "corrected ECC errors in on-chip SRAM"},
    {"hardware", XidAction::kReboot, "executions that failed on a hardware error"},
    {"generic", XidAction::kJobOnly, "executions that failed (generic error)"},
    {"numerical", XidAction::kJobOnly, "executions with numerical errors (NaN)"},
    {"model", XidAction::kJobOnly, "executions that failed on a model error"},
    {"runtime", XidAction::kJobOnly, "executions that failed in the Neuron runtime"},
    {"transient", XidAction::kIgnore, "recovered errors"},
};

// Written from the efa driver's counters (drivers/infiniband/hw/efa/efa_verbs.c) and AWS's EFA monitoring guide.
constexpr Row kEfa[] = {
    {"cmds_err", XidAction::kReboot, "admin commands the device failed"},
    {"no_completion_cmds", XidAction::kReboot, "admin commands the device never completed"},
    {"rdma_read_wr_err", XidAction::kJobOnly, "RDMA read work requests that failed"},
    {"rdma_write_wr_err", XidAction::kJobOnly, "RDMA write work requests that failed"},
    {"alloc_pd_err", XidAction::kJobOnly, "protection domains refused"},
    {"alloc_ucontext_err", XidAction::kJobOnly, "user contexts refused"},
    {"create_qp_err", XidAction::kJobOnly, "queue pairs refused"},
    {"create_cq_err", XidAction::kJobOnly, "completion queues refused"},
    {"create_ah_err", XidAction::kJobOnly, "address handles refused"},
    {"reg_mr_err", XidAction::kJobOnly, "memory registrations refused"},
    {"mmap_err", XidAction::kJobOnly, "mappings refused"},
    {"rx_drops", XidAction::kIgnore, "packets dropped on receive (congestion)"},
    {"retrans_pkts", XidAction::kIgnore, "packets sent again"},
    {"retrans_timeout_events", XidAction::kIgnore, "retransmission timeouts (the network or the peer)"},
    {"unresponsive_remote_events", XidAction::kIgnore, "peers that stopped answering (the peer's fault)"},
    {"impaired_remote_conn_events", XidAction::kIgnore, "impaired connections to peers (the peer's fault)"},
};

template <size_t N>
CounterMeaning look_up(const Row (&table)[N], std::string_view counter) {
  for (const Row& r : table)
    if (r.counter == counter) return {r.action, r.what, true};
  return {};
}

void add(std::string& to, const std::string& what) { to += (to.empty() ? "" : "; ") + what; }

// One counter's count (a rise, or a non-zero count) judged into `j`.
void judge(DeviceJudgement& j, const CounterMeaning& m, const std::string& where, uint64_t count) {
  if (count == 0 || !m.known) return;
  const std::string text = std::to_string(count) + " " + std::string(m.what) + " (" + where + ")";
  switch (m.action) {
    case XidAction::kIgnore: return;
    case XidAction::kJobOnly: add(j.jobs, text); return;
    case XidAction::kReboot: add(j.problems, text); return;
    case XidAction::kReplace:
      add(j.problems, text);
      j.replace = true;
      return;
  }
}

uint64_t count_of(const nlohmann::json& v) {
  if (v.is_number_unsigned()) return v.get<uint64_t>();
  if (v.is_number_integer()) return static_cast<uint64_t>(std::max<int64_t>(0, v.get<int64_t>()));
  return 0;
}

std::optional<std::string> read_line(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::string line;
  if (!in || !std::getline(in, line)) return std::nullopt;
  return line;
}

}  // namespace

CounterMeaning neuron_counter_meaning(std::string_view counter) { return look_up(kNeuron, counter); }
CounterMeaning efa_counter_meaning(std::string_view counter) { return look_up(kEfa, counter); }

Result<DeviceJudgement> judge_neuron_report(const std::string& output) {
  std::istringstream in(output);
  nlohmann::json report;
  for (std::string line; std::getline(in, line);) {
    auto j = nlohmann::json::parse(line, nullptr, false);
    if (!j.is_discarded() && j.is_object()) {
      report = std::move(j);
      break;
    }
  }
  if (!report.is_object()) {
    std::string head = output.substr(0, 200);
    return Error::invalid("no neuron-monitor report (a JSON object on one line) in its output: \"" + head + "\"");
  }
  DeviceJudgement out;
  if (auto hw = report.find("neuron_hardware_info"); hw != report.end() && hw->is_object()) {
    const std::string err = hw->value("error", std::string());
    if (!err.empty()) add(out.problems, "the Neuron driver does not answer: " + err);
  }
  const nlohmann::json* counters = nullptr;
  if (auto sys = report.find("system_data"); sys != report.end() && sys->is_object())
    if (auto hw = sys->find("neuron_hw_counters"); hw != sys->end() && hw->is_object()) counters = &*hw;
  if (counters) {
    for (const auto& dev : counters->value("neuron_devices", nlohmann::json::array())) {
      if (!dev.is_object()) continue;
      const std::string where = "Neuron device " + std::to_string(count_of(dev.value("neuron_device_index", nlohmann::json(0))));
      for (const auto& [k, v] : dev.items()) judge(out, neuron_counter_meaning(k), where, count_of(v));
    }
  }
  for (const auto& rt : report.value("neuron_runtime_data", nlohmann::json::array())) {
    if (!rt.is_object() || !rt.contains("report") || !rt["report"].is_object()) continue;
    const std::string where = "process " + std::to_string(count_of(rt.value("pid", nlohmann::json(0))));
    for (const char* group : {"execution_stats", "inference_stats"}) {
      const auto& r = rt["report"];
      if (!r.contains(group) || !r[group].is_object() || !r[group].contains("error_summary")) continue;
      const auto& errors = r[group]["error_summary"];
      if (!errors.is_object()) continue;
      for (const auto& [k, v] : errors.items()) judge(out, neuron_counter_meaning(k), where, count_of(v));
    }
  }
  return out;
}

Result<EfaReading> read_efa(const std::string& root) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::directory_iterator devices(root, ec);
  if (ec) return Error::invalid("cannot list " + root + ": " + ec.message());
  EfaReading out;
  auto read_counters = [&](const fs::path& dir, const std::string& prefix) {
    std::error_code e;
    for (const auto& f : fs::directory_iterator(dir, e)) {
      auto v = read_line(f.path());
      if (!v) continue;
      char* end = nullptr;
      const unsigned long long n = std::strtoull(v->c_str(), &end, 10);
      if (end == v->c_str()) continue;  // "N/A" and the like
      out.counters[prefix + "/" + f.path().filename().string()] = n;
    }
  };
  for (const auto& d : devices) {
    const fs::path dev = d.path();
    std::error_code e;
    // EFA's own counter tells its devices from other RDMA devices (an InfiniBand or RoCE card).
    if (!fs::exists(dev / "hw_counters" / "lifespan", e) && !fs::exists(dev / "ports" / "1" / "hw_counters" / "lifespan", e)) continue;
    ++out.devices;
    const std::string name = dev.filename().string();
    read_counters(dev / "hw_counters", name + "/-");
    for (const auto& p : fs::directory_iterator(dev / "ports", e)) {
      const std::string port = name + "/" + p.path().filename().string();
      read_counters(p.path() / "hw_counters", port);
      if (auto s = read_line(p.path() / "state")) out.port_states[port] = *s;
    }
  }
  return out;
}

DeviceJudgement judge_efa(const std::optional<EfaReading>& before, const EfaReading& now) {
  DeviceJudgement out;
  for (const auto& [port, state] : now.port_states)
    if (state.find("ACTIVE") == std::string::npos) add(out.problems, "EFA port " + port + " is " + state);
  if (!before) return out;
  for (const auto& [key, value] : now.counters) {
    auto it = before->counters.find(key);
    // A counter that went down was reset (the driver reloaded): it starts again from here.
    if (it == before->counters.end() || value <= it->second) continue;
    const size_t slash = key.rfind('/');
    const std::string where = "EFA " + key.substr(0, slash);
    judge(out, efa_counter_meaning(key.substr(slash + 1)), where, value - it->second);
  }
  return out;
}

}  // namespace allot::agent
