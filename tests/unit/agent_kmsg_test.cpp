// XIDs from the kernel log (agent/kmsg.h, agent/xid_table.h): the driver's lines parsed, only what is written after
// the reader opens, bounded reads, one table of actions, the nvidia-gpu check judging them, and the health
// monitor's checks run at once after an abnormal exit (HealthMonitor::check_now).
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <fstream>

#include "agent/emulated_faults.h"
#include "agent/health_checks.h"
#include "agent/health_monitor.h"
#include "agent/kmsg.h"
#include "agent/xid_table.h"
#include "eventually.h"

namespace allot::agent::agent_kmsg_test {
namespace {

using allot::test::eventually;

std::string temp_path(const std::string& name) { return ::testing::TempDir() + "/allot-" + name + "-" + std::to_string(::getpid()); }

TEST(Kmsg, ParsesTheDriversXidLinesInKmsgAndDmesgForm) {
  auto x = parse_xid(kmsg_text("4,1234,5678901234,-;NVRM: Xid (PCI:0000:10:1c): 79, pid=1234, name=python, GPU has fallen off the bus.\n"));
  ASSERT_TRUE(x);
  EXPECT_EQ(x->xid, 79);
  EXPECT_EQ(x->device, "PCI:0000:10:1c");
  EXPECT_EQ(x->text.rfind("NVRM: Xid (PCI:0000:10:1c): 79", 0), 0u) << x->text;
  auto d = parse_xid("[ 1234.567890] NVRM: Xid (PCI:0000:3b:00): 13, pid=77, Graphics Exception: ESR 0x404600=0x80000001");
  ASSERT_TRUE(d);
  EXPECT_EQ(d->xid, 13);
  EXPECT_EQ(d->device, "PCI:0000:3b:00");
  EXPECT_FALSE(parse_xid("6,1,2,-;usb 1-1: new high-speed USB device"));
  EXPECT_FALSE(parse_xid("NVRM: Xid (PCI:0000:10:1c): abc"));
  EXPECT_FALSE(parse_xid("NVRM: Xid (PCI:0000:10:1c)"));
  EXPECT_EQ(kmsg_text(" DEVICE=+pci:0000:10:1c"), "") << "a record's dictionary line is no message";
  EXPECT_EQ(kmsg_text("6,1,2,-;hello"), "hello");
  EXPECT_EQ(kmsg_text("plain line"), "plain line");
}

TEST(Kmsg, OneTableSaysWhatEachXidAsks) {
  for (int job : {13, 31, 43}) EXPECT_EQ(xid_meaning(job).action, XidAction::kJobOnly) << job;
  for (int gone : {48, 63, 64, 74, 79, 94, 95}) {
    EXPECT_EQ(xid_meaning(gone).action, XidAction::kReplace) << gone;
    EXPECT_TRUE(xid_needs_replacement(gone)) << "emulated faults use the same table";
  }
  EXPECT_EQ(xid_meaning(45).action, XidAction::kIgnore);
  EXPECT_EQ(xid_meaning(119).action, XidAction::kReboot);
  EXPECT_FALSE(xid_meaning(9999).known);
  EXPECT_EQ(xid_meaning(9999).action, XidAction::kReboot) << "an unknown GPU error is the node's";
}

TEST(Kmsg, AFileIsReadFromWhereItEndedWhenOpenedInWholeLines) {
  const std::string path = temp_path("kmsg");
  std::ofstream(path) << "4,1,1,-;NVRM: Xid (PCI:0000:10:1c): 79, pid=1, before the agent started\n";
  auto r = KmsgReader::open(path);
  ASSERT_TRUE(r.ok()) << r.error().message;
  auto none = r->read_new();
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty()) << "a line from before the reader opened is not this agent's";
  std::ofstream(path, std::ios::app) << "6,2,2,-;eth0: link up\n4,3,3,-;NVRM: Xid (PCI:0000:10:1c): 48, pid=2, DBE\n4,4,4,-;NVRM: Xi";
  auto got = r->read_new();
  ASSERT_TRUE(got.ok());
  ASSERT_EQ(got->size(), 2u) << "the line being written waits for its end";
  EXPECT_EQ((*got)[0], "eth0: link up");
  EXPECT_EQ(parse_xid((*got)[1])->xid, 48);
  std::ofstream(path, std::ios::app) << "d (PCI:0000:10:1c): 31, pid=3, page fault\n";
  got = r->read_new();
  ASSERT_EQ(got->size(), 1u);
  EXPECT_EQ(parse_xid((*got)[0])->xid, 31);
  EXPECT_TRUE(r->read_new()->empty()) << "nothing is read twice";
  // Truncated (rotated): what it holds now is new.
  std::ofstream(path) << "NVRM: Xid (PCI:0000:10:1c): 13, pid=4, x\n";
  got = r->read_new();
  ASSERT_EQ(got->size(), 1u);
  EXPECT_EQ(parse_xid((*got)[0])->xid, 13);
  std::remove(path.c_str());
  EXPECT_TRUE(r->read_new()->empty()) << "a file that is gone has nothing new";
}

TEST(Kmsg, ReadsAreBounded) {
  const std::string path = temp_path("kmsg-big");
  std::remove(path.c_str());
  auto r = KmsgReader::open(path);  // not there yet: read from its start once it is
  ASSERT_TRUE(r.ok());
  {
    std::ofstream out(path);
    const std::string line(1000, 'x');
    for (size_t i = 0; i < 2 * KmsgReader::kMaxRead / 1001 + 10; ++i) out << line << "\n";
    out << "NVRM: Xid (PCI:0000:10:1c): 79, pid=1, last\n";
  }
  auto first = r->read_new();
  ASSERT_TRUE(first.ok());
  EXPECT_LE(first->size() * 1001, KmsgReader::kMaxRead);
  size_t reads = 1;
  std::optional<XidEvent> last;
  for (auto more = r->read_new(); more.ok() && !more->empty(); more = r->read_new(), ++reads)
    for (const auto& l : *more)
      if (auto x = parse_xid(l)) last = x;
  EXPECT_GE(reads, 3u);
  ASSERT_TRUE(last);
  EXPECT_EQ(last->xid, 79);
  std::ofstream(path) << std::string(KmsgReader::kMaxRead + 100, 'y');  // one line longer than a read, no newline
  auto cut = r->read_new();
  ASSERT_EQ(cut->size(), 1u);
  EXPECT_EQ((*cut)[0].size(), KmsgReader::kMaxLine);
  std::remove(path.c_str());
  EXPECT_FALSE(KmsgReader::open("/").ok()) << "a directory is no kernel log";
}

CheckContext gpus_with(std::vector<XidEvent> xids) {
  CheckContext c{true, "nvidia-gpu", 4, "/tmp", {}};
  c.xids = std::move(xids);
  return c;
}

TEST(Kmsg, TheGpuCheckFailsForTheNodesXidsAndNamesTheJobsOnes) {
  HealthCheck gpu{"gpu", Builtin::kNvidiaGpu, "", std::chrono::seconds(1), std::chrono::seconds(5), FailureAction::kReboot};
  auto job = run_check(gpu, gpus_with({*parse_xid("NVRM: Xid (PCI:0000:10:1c): 13, pid=5, x")}));
  EXPECT_EQ(job.status, CheckStatus::kPassed) << "an application's error does not take the node out";
  EXPECT_NE(job.detail.find("charged to the job"), std::string::npos) << job.detail;
  auto gone = run_check(gpu, gpus_with({*parse_xid("NVRM: Xid (PCI:0000:10:1c): 79, pid=5, x")}));
  EXPECT_EQ(gone.status, CheckStatus::kFailed);
  EXPECT_EQ(gone.action, FailureAction::kReplace);
  EXPECT_NE(gone.detail.find("XID 79 on PCI:0000:10:1c (GPU has fallen off the bus)"), std::string::npos) << gone.detail;
  auto reset = run_check(gpu, gpus_with({*parse_xid("NVRM: Xid (PCI:0000:10:1c): 119, pid=5, x")}));
  EXPECT_EQ(reset.status, CheckStatus::kFailed);
  EXPECT_EQ(reset.action, FailureAction::kReboot);
  EXPECT_EQ(run_check(gpu, gpus_with({*parse_xid("NVRM: Xid (PCI:0000:10:1c): 45, pid=5, x")})).status, CheckStatus::kPassed);
  // Emulated XIDs follow the same table.
  EXPECT_EQ(run_check(gpu, CheckContext{true, "nvidia-gpu", 4, "/tmp", parse_faults("xid 31 gpu 0").faults}).status, CheckStatus::kPassed);
}

// After an abnormal exit the checks run at once, whatever their interval, with the kernel log read first.
TEST(Kmsg, CheckNowRunsTheFastChecksAtOnceAfterReadingTheKernelLog) {
  const std::string kmsg = temp_path("kmsg-monitor");
  std::ofstream(kmsg) << "";
  MonitorOptions mo;
  mo.config.checks = {HealthCheck{"gpu", Builtin::kNvidiaGpu, "", std::chrono::seconds(30), std::chrono::seconds(5), FailureAction::kReboot},
                      HealthCheck{"slow", Builtin::kNone, "true", std::chrono::hours(2), std::chrono::seconds(5), FailureAction::kReboot},
                      // A fast check that takes a second: the round after check_now() is still running when it is asked.
                      HealthCheck{"second", Builtin::kNone, "sleep 1", std::chrono::seconds(30), std::chrono::seconds(5), FailureAction::kReboot}};
  mo.context = CheckContext{true, "nvidia-gpu", 2, "/tmp", {}};
  mo.kmsg_path = kmsg;
  HealthMonitor m(mo, [](const std::string&) {});
  m.start();
  auto gpu_status = [&] {
    const auto report = m.report();
    for (const auto& c : report["checks"])
      if (c["name"] == "gpu") return c["status"].get<std::string>() + ": " + c["detail"].get<std::string>();
    return std::string();
  };
  ASSERT_TRUE(eventually([&] { return gpu_status().rfind("passed", 0) == 0 && m.report()["checks"].size() == 3; })) << gpu_status();
  EXPECT_FALSE(m.report().value("exit_checks_running", false));
  const int64_t slow_at = m.report()["checks"][1]["at_ms"];
  std::ofstream(kmsg, std::ios::app) << "4,9,9,-;NVRM: Xid (PCI:0000:10:1c): 79, pid=42, name=python, GPU has fallen off the bus.\n";
  // The next run is 30 s away; the exit brings it forward (not the slow check's, two hours away: not a fast one).
  m.check_now();
  EXPECT_TRUE(m.exit_checks_running());
  EXPECT_TRUE(m.report().value("exit_checks_running", false));
  ASSERT_TRUE(eventually([&] { return !m.exit_checks_running(); }));
  EXPECT_EQ(gpu_status().rfind("failed: XID 79 on PCI:0000:10:1c", 0), 0u) << gpu_status();
  EXPECT_EQ(m.report()["checks"][0]["on_failure"], "replace");
  EXPECT_EQ(m.report()["checks"][1]["at_ms"], slow_at);
  // The node's XID stays for the boot; an emulated reboot clears it.
  m.check_now();
  ASSERT_TRUE(eventually([&] { return !m.exit_checks_running(); }));
  EXPECT_EQ(gpu_status().rfind("failed", 0), 0u) << gpu_status();
  m.reboot();
  ASSERT_TRUE(eventually([&] { return gpu_status().rfind("passed", 0) == 0; })) << gpu_status();
  std::remove(kmsg.c_str());
}

}  // namespace
}  // namespace allot::agent::agent_kmsg_test
