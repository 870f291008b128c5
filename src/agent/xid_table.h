#pragma once
// What an NVIDIA XID error means for the node and the job (docs/resiliency.md, "XID errors"). ONE table for every
// source of XIDs: the kernel log (agent/kmsg.h) and emulated faults (agent/emulated_faults.h).
#include <string_view>

namespace allot::agent {

enum class XidAction {
  kIgnore,   // informational, or a consequence of an error reported by another XID: nothing to do
  kJobOnly,  // an application error (a bad kernel, an illegal address): the job's exit is the job's, the node stays
  kReboot,   // the GPU or its driver needs a reset: the node reboots
  kReplace,  // hardware a reboot does not fix: the node is replaced
};
const char* xid_action_name(XidAction a);

struct XidMeaning {
  XidAction action = XidAction::kReboot;
  std::string_view what;  // NVIDIA's short description ("GPU has fallen off the bus")
  bool known = false;     // false: not in the table, and treated as kReboot (an unknown GPU error is the node's)
};

XidMeaning xid_meaning(int xid);

}  // namespace allot::agent
