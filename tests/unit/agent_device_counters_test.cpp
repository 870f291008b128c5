// Neuron and EFA errors (agent/device_counters.h): a neuron-monitor report and a sysfs tree of EFA counters, as
// files, stand in for devices this machine does not have; the neuron and efa checks read them through their
// configurable source and root, and are skipped with the reason when the tool or the directory is absent.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "agent/device_counters.h"
#include "agent/health_checks.h"
#include "agent/health_config.h"

namespace allot::agent::agent_device_counters_test {
namespace {

namespace fs = std::filesystem;

// A neuron-monitor report (trimmed to what the check reads), with the given counters.
std::string report(int mem_uncorrected, int sram_uncorrected, int mem_corrected, int hardware, int numerical) {
  return R"({"neuron_runtime_data": [{"pid": 4242, "neuron_runtime_tag": "train", "error": "", "report": {"execution_stats": {"period": 1.0, "error_summary": {"generic": 0, "numerical": )" +
         std::to_string(numerical) + R"(, "transient": 3, "model": 0, "runtime": 0, "hardware": )" + std::to_string(hardware) +
         R"(}, "error": ""}}}], "system_data": {"neuron_hw_counters": {"period": 1.0, "neuron_devices": [{"neuron_device_index": 0, "mem_ecc_corrected": 0, "mem_ecc_uncorrected": 0, "sram_ecc_uncorrected": 0}, {"neuron_device_index": 1, "mem_ecc_corrected": )" +
         std::to_string(mem_corrected) + R"(, "mem_ecc_uncorrected": )" + std::to_string(mem_uncorrected) + R"(, "sram_ecc_corrected": 0, "sram_ecc_uncorrected": )" +
         std::to_string(sram_uncorrected) + R"(}], "error": ""}}, "neuron_hardware_info": {"neuron_device_count": 2, "neuroncore_per_device_count": 2, "error": ""}})";
}

class DeviceCounters : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("allot-device-counters-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  void write(const fs::path& rel, const std::string& text) {
    fs::create_directories((dir_ / rel).parent_path());
    std::ofstream(dir_ / rel) << text << "\n";
  }
  // An EFA device as the efa driver lays it out under /sys/class/infiniband.
  void efa_device(const std::string& dev, uint64_t rdma_read_wr_err, uint64_t cmds_err, uint64_t rx_drops, const std::string& state = "4: ACTIVE") {
    write(dev + "/hw_counters/lifespan", "12");
    write(dev + "/hw_counters/cmds_err", std::to_string(cmds_err));
    write(dev + "/hw_counters/keep_alive_rcvd", "99");
    write(dev + "/ports/1/hw_counters/rdma_read_wr_err", std::to_string(rdma_read_wr_err));
    write(dev + "/ports/1/hw_counters/rx_drops", std::to_string(rx_drops));
    write(dev + "/ports/1/hw_counters/tx_bytes", "123456");
    write(dev + "/ports/1/state", state);
  }
  CheckContext neuron_node() {
    CheckContext ctx;
    ctx.accelerator_kind = "neuron";
    ctx.accelerators = 2;
    return ctx;
  }
  fs::path dir_;
};

TEST_F(DeviceCounters, NeuronUncorrectableEccIsAReplacementAndApplicationErrorsAreTheJobs) {
  auto healthy = judge_neuron_report(report(0, 0, 7, 0, 0));
  ASSERT_TRUE(healthy.ok()) << healthy.error().message;
  EXPECT_TRUE(healthy->problems.empty()) << healthy->problems << " (corrected ECC and transient errors are ignored)";
  EXPECT_TRUE(healthy->jobs.empty()) << healthy->jobs;

  auto ecc = judge_neuron_report("neuron-monitor starting\n" + report(2, 0, 0, 0, 0));
  ASSERT_TRUE(ecc.ok()) << ecc.error().message;
  EXPECT_TRUE(ecc->replace);
  EXPECT_NE(ecc->problems.find("2 uncorrectable ECC errors in device memory (Neuron device 1)"), std::string::npos) << ecc->problems;

  auto sram = judge_neuron_report(report(0, 1, 0, 0, 0));
  ASSERT_TRUE(sram.ok());
  EXPECT_TRUE(sram->replace) << sram->problems;

  auto hardware = judge_neuron_report(report(0, 0, 0, 1, 0));
  ASSERT_TRUE(hardware.ok());
  EXPECT_FALSE(hardware->replace);
  EXPECT_NE(hardware->problems.find("hardware error (process 4242)"), std::string::npos) << hardware->problems;

  auto nan = judge_neuron_report(report(0, 0, 0, 0, 5));
  ASSERT_TRUE(nan.ok());
  EXPECT_TRUE(nan->problems.empty()) << nan->problems;
  EXPECT_NE(nan->jobs.find("5 executions with numerical errors"), std::string::npos) << nan->jobs;

  auto driver = judge_neuron_report(R"({"neuron_hardware_info": {"error": "Neuron driver not loaded"}})");
  ASSERT_TRUE(driver.ok());
  EXPECT_NE(driver->problems.find("Neuron driver not loaded"), std::string::npos);

  auto garbage = judge_neuron_report("command not found\n");
  ASSERT_FALSE(garbage.ok());
  EXPECT_NE(garbage.error().message.find("command not found"), std::string::npos) << garbage.error().message;
}

TEST_F(DeviceCounters, TheNeuronCheckReadsItsSourceAndSaysWhyItIsSkipped) {
  write("report.json", report(1, 0, 0, 0, 0));
  HealthCheck c{"neuron", Builtin::kNeuron, "", std::chrono::milliseconds(1000), std::chrono::milliseconds(5000), FailureAction::kReboot};
  c.source = "cat " + (dir_ / "report.json").string();
  CheckResult r = run_check(c, neuron_node());
  EXPECT_EQ(r.status, CheckStatus::kFailed) << r.detail;
  EXPECT_EQ(r.action, FailureAction::kReplace) << "replace wins over the check's on_failure";

  write("report.json", report(0, 0, 0, 0, 2));
  r = run_check(c, neuron_node());
  EXPECT_EQ(r.status, CheckStatus::kPassed) << r.detail;
  EXPECT_NE(r.detail.find("numerical"), std::string::npos) << r.detail;

  c.source = "echo not json";
  r = run_check(c, neuron_node());
  EXPECT_EQ(r.status, CheckStatus::kFailed) << r.detail;

  // Without a source of its own the check needs neuron-monitor, which this machine does not have.
  c.source.clear();
  if (!tool_exists("neuron-monitor")) {
    r = run_check(c, neuron_node());
    EXPECT_EQ(r.status, CheckStatus::kSkipped);
    EXPECT_EQ(r.detail, "neuron-monitor is not installed");
  }
  CheckContext gpu_node;
  gpu_node.accelerator_kind = "nvidia-gpu";
  EXPECT_EQ(run_check(c, gpu_node).status, CheckStatus::kSkipped);
}

TEST_F(DeviceCounters, EfaCountersAreJudgedByTheirRiseAndAPortThatIsNotActiveFails) {
  efa_device("rdmap16s27", 5, 1, 1000);
  write("mlx5_0/ports/1/hw_counters/rx_drops", "7");  // an RDMA device that is not EFA's: not read
  auto first = read_efa(dir_.string());
  ASSERT_TRUE(first.ok()) << first.error().message;
  EXPECT_EQ(first->devices, 1);
  EXPECT_EQ(first->counters.at("rdmap16s27/1/rdma_read_wr_err"), 5u);
  EXPECT_EQ(first->counters.at("rdmap16s27/-/cmds_err"), 1u);
  EXPECT_EQ(first->counters.count("mlx5_0/1/rx_drops"), 0u);
  // Counts since the driver loaded say nothing of now: the first reading judges port states only.
  EXPECT_TRUE(judge_efa(std::nullopt, *first).problems.empty());

  efa_device("rdmap16s27", 8, 1, 5000);  // 3 failed work requests (the job's), 4000 drops (ignored)
  auto second = read_efa(dir_.string());
  ASSERT_TRUE(second.ok());
  DeviceJudgement j = judge_efa(*first, *second);
  EXPECT_TRUE(j.problems.empty()) << j.problems;
  EXPECT_NE(j.jobs.find("3 RDMA read work requests that failed (EFA rdmap16s27/1)"), std::string::npos) << j.jobs;

  efa_device("rdmap16s27", 8, 4, 5000);  // admin commands failed: the device's
  auto third = read_efa(dir_.string());
  ASSERT_TRUE(third.ok());
  j = judge_efa(*second, *third);
  EXPECT_NE(j.problems.find("3 admin commands the device failed (EFA rdmap16s27/-)"), std::string::npos) << j.problems;

  efa_device("rdmap16s27", 0, 0, 0, "1: DOWN");  // the driver reloaded (counters reset) and the port is down
  auto fourth = read_efa(dir_.string());
  ASSERT_TRUE(fourth.ok());
  j = judge_efa(*third, *fourth);
  EXPECT_EQ(j.problems, "EFA port rdmap16s27/1 is 1: DOWN");
  EXPECT_TRUE(j.jobs.empty()) << j.jobs;
}

TEST_F(DeviceCounters, TheEfaCheckKeepsItsLastReadingAndIsSkippedWithoutDevices) {
  HealthCheck c{"efa", Builtin::kEfa, "", std::chrono::milliseconds(1000), std::chrono::milliseconds(5000), FailureAction::kReboot};
  c.root = (dir_ / "absent").string();
  CheckContext ctx;
  EfaWatch watch;
  ctx.efa = &watch;
  CheckResult r = run_check(c, ctx);
  EXPECT_EQ(r.status, CheckStatus::kSkipped);
  EXPECT_EQ(r.detail, "no " + c.root + " (no RDMA devices on this node)");

  c.root = dir_.string();
  r = run_check(c, ctx);
  EXPECT_EQ(r.status, CheckStatus::kSkipped);
  EXPECT_EQ(r.detail, "no EFA device under " + c.root);

  efa_device("efa0", 0, 0, 0);
  EXPECT_EQ(run_check(c, ctx).status, CheckStatus::kPassed);
  efa_device("efa0", 0, 2, 0);
  r = run_check(c, ctx);
  EXPECT_EQ(r.status, CheckStatus::kFailed) << r.detail;
  EXPECT_EQ(r.action, FailureAction::kReboot);
  // The rise is judged once: the next reading, with nothing new, passes.
  EXPECT_EQ(run_check(c, ctx).status, CheckStatus::kPassed);
}

TEST(DeviceCounterConfig, SourceAndRootAreReadForTheirChecksOnly) {
  auto c = parse_health_config(R"(
checks:
  - {name: neuron, builtin: neuron, source: "cat /tmp/report.json"}
  - {name: efa, builtin: efa, root: /tmp/sys}
)", "health.yaml");
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->checks[0].source, "cat /tmp/report.json");
  EXPECT_EQ(c->checks[1].root, "/tmp/sys");
  for (const char* bad : {"checks: [{name: a, builtin: efa, source: x}]", "checks: [{name: a, builtin: neuron, root: /x}]",
                          "checks: [{name: a, command: x, root: /x}]"}) {
    auto b = parse_health_config(bad, "health.yaml");
    ASSERT_FALSE(b.ok()) << bad;
    EXPECT_NE(b.error().message.find("only"), std::string::npos) << b.error().message;
  }
  // Every counter a table names has an action; one it does not name is ignored.
  EXPECT_EQ(neuron_counter_meaning("mem_ecc_uncorrected").action, XidAction::kReplace);
  EXPECT_EQ(efa_counter_meaning("rx_drops").action, XidAction::kIgnore);
  EXPECT_FALSE(efa_counter_meaning("tx_bytes").known);
}

}  // namespace
}  // namespace allot::agent::agent_device_counters_test
