#pragma once
// Faults of an emulated node's devices, injected for tests and demos (`allot agent --emulate-faults FILE`).
// The file is read again at every check interval, so a test appends a line and the next run of the check that
// watches that device reports it, as the real check would report a real fault. One fault per line:
//
//   xid 79 gpu 2        an XID error on GPU 2 (79: fallen off the bus)
//   ecc gpu 0           uncorrectable ECC errors on GPU 0
//   efa down            the EFA device is gone
//   hang                the node hangs: its agent stops heartbeating
//   deep-check fail     the deep health check's stress program finds a wrong result
//
// A line ending in `persistent` survives a reboot; every other fault is cleared by one (emulated reboot).
// Blank lines and lines starting with '#' are ignored.
#include <string>
#include <vector>

namespace allot::agent {

struct EmulatedFault {
  enum class Kind { kXid, kEcc, kEfaDown, kHang, kDeepCheckFail };
  Kind kind = Kind::kXid;
  int xid = 0;
  int gpu = -1;
  bool persistent = false;
  std::string line;  // as written (trimmed), for messages
  int line_number = 0;  // 1-based: a reboot clears the faults on the lines written before it
};

struct FaultFile {
  std::vector<EmulatedFault> faults;
  std::vector<std::string> errors;  // "line 3: ..." for lines that name no fault
  int lines = 0;                    // lines read
};

FaultFile parse_faults(const std::string& text);
// Reads `path` (a missing file has no faults) and drops the faults a reboot cleared: those on lines
// 1..cleared_through that are not persistent. A fault written again after the reboot is a new fault.
FaultFile read_faults(const std::string& path, int cleared_through);

// XIDs a reboot does not fix: the GPU has to be replaced (agent/xid_table.h says which).
bool xid_needs_replacement(int xid);

}  // namespace allot::agent
