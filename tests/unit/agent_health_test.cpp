// The agent's health checks: the config file, the emulated faults file, nvidia-smi's answer, commands with a
// deadline, the built-in checks on emulated devices, and the deep check's stress program.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include "agent/emulated_faults.h"
#include "agent/health_checks.h"
#include "agent/health_config.h"
#include "agent/stress.h"

namespace allot::agent::agent_health_test {
namespace {

TEST(HealthConfig, ReadsChecksAndTheDeepCheck) {
  auto c = parse_health_config(R"(
checks:
  - {name: gpu, builtin: nvidia-gpu, interval: 0.5, timeout: 3, on_failure: replace}
  - {name: disk, command: "test -w /tmp"}
deep_check: {command: "dcgmi diag -r 3", timeout: 60}
)", "health.yaml");
  ASSERT_TRUE(c.ok()) << c.error().message;
  ASSERT_EQ(c->checks.size(), 2u);
  EXPECT_EQ(c->checks[0].builtin, Builtin::kNvidiaGpu);
  EXPECT_EQ(c->checks[0].interval.count(), 500);
  EXPECT_EQ(c->checks[0].timeout.count(), 3000);
  EXPECT_EQ(c->checks[0].on_failure, FailureAction::kReplace);
  EXPECT_EQ(c->checks[1].command, "test -w /tmp");
  EXPECT_EQ(c->checks[1].on_failure, FailureAction::kReboot);
  EXPECT_EQ(c->deep.command, "dcgmi diag -r 3");
  EXPECT_EQ(c->deep.timeout.count(), 60000);
}

TEST(HealthConfig, RefusesWhatItCannotRun) {
  for (const char* bad : {"checks: [{name: a}]",                                        // neither builtin nor command
                          "checks: [{name: a, builtin: efa, command: x}]",              // both
                          "checks: [{name: a, builtin: nvme}]",                         // unknown builtin
                          "checks: [{name: a, builtin: efa, interval: 0}]",             // no interval
                          "checks: [{name: a, builtin: efa, on_failure: ignore}]",      // unknown action
                          "checks: [{name: a, builtin: efa}, {name: a, builtin: dcgm}]",  // duplicate
                          "probes: []"}) {
    auto c = parse_health_config(bad, "health.yaml");
    EXPECT_FALSE(c.ok()) << bad;
    if (!c.ok()) {
      EXPECT_NE(c.error().message.find("health.yaml"), std::string::npos) << c.error().message;
    }
  }
}

TEST(HealthConfig, TheDefaultCoversEveryBuiltin) {
  auto c = default_health_config();
  std::set<Builtin> seen;
  for (const auto& k : c.checks) seen.insert(k.builtin);
  EXPECT_EQ(seen, (std::set<Builtin>{Builtin::kNodeBasics, Builtin::kNvidiaGpu, Builtin::kDcgm, Builtin::kNeuron, Builtin::kEfa}));
}

TEST(EmulatedFaults, ParsesEveryKindAndReportsBadLines) {
  auto f = parse_faults("# injected\nxid 79 gpu 2\necc gpu 0 persistent\nefa down\n\nhang\ndeep-check fail\nxid gpu 2\n");
  ASSERT_EQ(f.faults.size(), 5u);
  EXPECT_EQ(f.faults[0].kind, EmulatedFault::Kind::kXid);
  EXPECT_EQ(f.faults[0].xid, 79);
  EXPECT_EQ(f.faults[0].gpu, 2);
  EXPECT_TRUE(f.faults[1].persistent);
  EXPECT_EQ(f.faults[2].kind, EmulatedFault::Kind::kEfaDown);
  EXPECT_EQ(f.faults[3].kind, EmulatedFault::Kind::kHang);
  EXPECT_EQ(f.faults[4].kind, EmulatedFault::Kind::kDeepCheckFail);
  ASSERT_EQ(f.errors.size(), 1u);
  EXPECT_NE(f.errors[0].find("line 8"), std::string::npos) << f.errors[0];
  EXPECT_EQ(f.lines, 8);
  EXPECT_EQ(f.faults[4].line_number, 7);
  EXPECT_TRUE(xid_needs_replacement(79));
  EXPECT_FALSE(xid_needs_replacement(13));
}

TEST(EmulatedFaults, ARebootClearsTheLinesBeforeItButPersistentOnesAndNewOnes) {
  const std::string path = ::testing::TempDir() + "/allot-faults-" + std::to_string(::getpid());
  std::ofstream(path) << "ecc gpu 0\nxid 13 gpu 1 persistent\n";
  EXPECT_EQ(read_faults(path, 0).faults.size(), 2u);
  auto after = read_faults(path, 2);  // rebooted after two lines
  ASSERT_EQ(after.faults.size(), 1u);
  EXPECT_TRUE(after.faults[0].persistent);
  std::ofstream(path, std::ios::app) << "ecc gpu 0\n";  // the same fault again, after the reboot
  EXPECT_EQ(read_faults(path, 2).faults.size(), 2u);
  std::remove(path.c_str());
  EXPECT_TRUE(read_faults(path, 0).faults.empty()) << "a missing file has no faults";
}

CheckContext emulated_gpus(std::vector<EmulatedFault> faults) {
  return CheckContext{true, "nvidia-gpu", 4, "/tmp", std::move(faults)};
}

TEST(BuiltinChecks, EmulatedGpusReportInjectedFaultsAndTheActionTheyNeed) {
  HealthCheck gpu{"gpu", Builtin::kNvidiaGpu, "", std::chrono::seconds(1), std::chrono::seconds(5), FailureAction::kReboot};
  EXPECT_EQ(run_check(gpu, emulated_gpus({})).status, CheckStatus::kPassed);
  auto ecc = run_check(gpu, emulated_gpus(parse_faults("ecc gpu 1").faults));
  EXPECT_EQ(ecc.status, CheckStatus::kFailed);
  EXPECT_EQ(ecc.action, FailureAction::kReboot);
  EXPECT_NE(ecc.detail.find("GPU 1"), std::string::npos);
  auto xid = run_check(gpu, emulated_gpus(parse_faults("xid 79 gpu 2").faults));
  EXPECT_EQ(xid.status, CheckStatus::kFailed);
  EXPECT_EQ(xid.action, FailureAction::kReplace) << "XID 79 is not fixed by a reboot";
  // A GPU the node does not have is no fault of it.
  EXPECT_EQ(run_check(gpu, emulated_gpus(parse_faults("ecc gpu 7").faults)).status, CheckStatus::kPassed);
  HealthCheck efa{"efa", Builtin::kEfa, "", std::chrono::seconds(1), std::chrono::seconds(5), FailureAction::kReboot};
  EXPECT_EQ(run_check(efa, emulated_gpus(parse_faults("efa down").faults)).status, CheckStatus::kFailed);
  // Hardware the node does not have is skipped, never passed.
  HealthCheck neuron{"neuron", Builtin::kNeuron, "", std::chrono::seconds(1), std::chrono::seconds(5), FailureAction::kReboot};
  EXPECT_EQ(run_check(neuron, emulated_gpus({})).status, CheckStatus::kSkipped);
  EXPECT_EQ(run_check(gpu, CheckContext{false, "none", 0, "/tmp", {}}).status, CheckStatus::kSkipped);
}

TEST(BuiltinChecks, CommandsPassFailAndTimeOut) {
  HealthCheck c{"c", Builtin::kNone, "true", std::chrono::seconds(1), std::chrono::seconds(5), FailureAction::kReboot};
  EXPECT_EQ(run_check(c, {}).status, CheckStatus::kPassed);
  c.command = "echo broken fan; exit 3";
  auto r = run_check(c, {});
  EXPECT_EQ(r.status, CheckStatus::kFailed);
  EXPECT_NE(r.detail.find("exited with code 3: broken fan"), std::string::npos) << r.detail;
  c.command = "sleep 5";
  c.timeout = std::chrono::milliseconds(200);
  r = run_check(c, {});
  EXPECT_EQ(r.status, CheckStatus::kFailed);
  EXPECT_NE(r.detail.find("took longer"), std::string::npos) << r.detail;
}

TEST(BuiltinChecks, NvidiaQueryFindsEccHeatAndLostGpus) {
  EXPECT_EQ(judge_nvidia_query("0, 0, 45\n1, 0, 50\n", 2), "");
  EXPECT_EQ(judge_nvidia_query("0, [N/A], 45\n", 1), "");
  EXPECT_NE(judge_nvidia_query("0, 3, 45\n1, 0, 50\n", 2).find("3 uncorrectable ECC errors on GPU 0"), std::string::npos);
  EXPECT_NE(judge_nvidia_query("0, 0, 95\n", 1).find("GPU 0 at 95 C"), std::string::npos);
  EXPECT_NE(judge_nvidia_query("0, 0, 45\n", 8).find("lost GPUs: nvidia-smi shows 1 of 8"), std::string::npos);
}

TEST(Stress, AgreesWithItselfAndFindsAnInjectedBitFlip) {
  std::ostringstream out;
  EXPECT_EQ(run_stress(0.05, false, out), 0) << out.str();
  std::ostringstream bad;
  EXPECT_EQ(run_stress(0.05, true, bad), 1);
  EXPECT_NE(bad.str().find("mismatch"), std::string::npos) << bad.str();
}

}  // namespace
}  // namespace allot::agent::agent_health_test
