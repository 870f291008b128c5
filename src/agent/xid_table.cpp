#include "agent/xid_table.h"

#include <array>

namespace allot::agent {

const char* xid_action_name(XidAction a) {
  switch (a) {
    case XidAction::kIgnore: return "ignore";
    case XidAction::kJobOnly: return "job-only";
    case XidAction::kReboot: return "reboot";
    case XidAction::kReplace: return "replace";
  }
  return "reboot";
}

namespace {

struct Row {
  int xid;
  XidAction action;
  std::string_view what;
};

// Written for allot from the semantics of NVIDIA's public XID catalogue ("Xid Errors" and "Analyzing Xid Errors
// with the Xid Catalog", docs.nvidia.com/deploy/xid-errors/): its "Resolution Bucket (Immediate Action)" column
// reads RESTART_APP (job-only here), RESET_GPU or RESTART_BM (reboot here), IGNORE (ignore). allot replaces, rather
// than reboots, the node for the XIDs that mean lost or failing hardware (fallen off the bus, double-bit ECC and
// page retirement or row remapping failures, NVLink, uncontained ECC), which the operators of large clusters
// (HyperPod's health agent among them) send to replacement because a reset does not keep them away.
// An XID that is not here is treated as a reboot: an unknown GPU error is the node's until someone says otherwise.
constexpr std::array kRows{
    Row{8, XidAction::kJobOnly, "GPU stopped processing (idle timeout)"},
    Row{13, XidAction::kJobOnly, "graphics engine exception (an application's illegal access or bad kernel)"},
    Row{31, XidAction::kJobOnly, "GPU memory page fault (an application's illegal address)"},
    Row{32, XidAction::kJobOnly, "invalid or corrupted push buffer stream"},
    Row{38, XidAction::kReboot, "driver firmware error"},
    Row{43, XidAction::kJobOnly, "GPU stopped processing (the application's channel was reset)"},
    Row{45, XidAction::kIgnore, "preemptive cleanup after an earlier error"},
    Row{48, XidAction::kReplace, "double-bit ECC error"},
    Row{56, XidAction::kIgnore, "display engine error"},
    Row{61, XidAction::kReboot, "internal micro-controller breakpoint"},
    Row{62, XidAction::kReboot, "internal micro-controller halt"},
    Row{63, XidAction::kReplace, "ECC page retirement or row remapping event"},
    Row{64, XidAction::kReplace, "ECC page retirement or row remapping failure"},
    Row{68, XidAction::kJobOnly, "video processor exception"},
    Row{69, XidAction::kJobOnly, "graphics engine class error"},
    Row{74, XidAction::kReplace, "NVLink error"},
    Row{79, XidAction::kReplace, "GPU has fallen off the bus"},
    Row{92, XidAction::kReboot, "high single-bit ECC error rate"},
    Row{94, XidAction::kReplace, "contained ECC error"},
    Row{95, XidAction::kReplace, "uncontained ECC error"},
    Row{109, XidAction::kJobOnly, "context switch timeout"},
    Row{119, XidAction::kReboot, "GSP RPC timeout"},
    Row{120, XidAction::kReboot, "GSP error"},
    Row{121, XidAction::kIgnore, "corrected C2C link error"},
    Row{140, XidAction::kReplace, "unrecovered ECC error"},
    Row{143, XidAction::kReplace, "GPU initialization failure"},
};

}  // namespace

XidMeaning xid_meaning(int xid) {
  for (const Row& r : kRows)
    if (r.xid == xid) return XidMeaning{r.action, r.what, true};
  return XidMeaning{XidAction::kReboot, "not in allot's XID table", false};
}

}  // namespace allot::agent
