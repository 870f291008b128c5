#include "agent/emulated_faults.h"

#include <fstream>
#include <sstream>

#include "agent/xid_table.h"

namespace allot::agent {

namespace {

bool to_int(const std::string& s, int& out) {
  if (s.empty() || s.size() > 6) return false;
  for (char c : s)
    if (c < '0' || c > '9') return false;
  out = std::stoi(s);
  return true;
}

}  // namespace

bool xid_needs_replacement(int xid) { return xid_meaning(xid).action == XidAction::kReplace; }

FaultFile parse_faults(const std::string& text) {
  FaultFile out;
  std::istringstream in(text);
  std::string raw;
  for (int n = 1; std::getline(in, raw); ++n) {
    out.lines = n;
    std::istringstream words(raw);
    std::vector<std::string> w;
    for (std::string x; words >> x;) w.push_back(x);
    if (w.empty() || w[0][0] == '#') continue;
    EmulatedFault f;
    if (w.back() == "persistent") {
      f.persistent = true;
      w.pop_back();
    }
    for (size_t i = 0; i < w.size(); ++i) f.line += (i ? " " : "") + w[i];
    if (f.persistent) f.line += " persistent";
    bool ok = false;
    if (w.size() == 4 && w[0] == "xid" && w[2] == "gpu") {
      f.kind = EmulatedFault::Kind::kXid;
      ok = to_int(w[1], f.xid) && to_int(w[3], f.gpu);
    } else if (w.size() == 3 && w[0] == "ecc" && w[1] == "gpu") {
      f.kind = EmulatedFault::Kind::kEcc;
      ok = to_int(w[2], f.gpu);
    } else if (w.size() == 2 && w[0] == "efa" && w[1] == "down") {
      f.kind = EmulatedFault::Kind::kEfaDown;
      ok = true;
    } else if (w.size() == 1 && w[0] == "hang") {
      f.kind = EmulatedFault::Kind::kHang;
      ok = true;
    } else if (w.size() == 2 && w[0] == "deep-check" && w[1] == "fail") {
      f.kind = EmulatedFault::Kind::kDeepCheckFail;
      ok = true;
    }
    f.line_number = n;
    if (ok) out.faults.push_back(std::move(f));
    else
      out.errors.push_back("line " + std::to_string(n) + ": \"" + raw +
                           "\" names no fault (xid N gpu G, ecc gpu G, efa down, hang, deep-check fail; optionally "
                           "followed by persistent)");
  }
  return out;
}

FaultFile read_faults(const std::string& path, int cleared_through) {
  std::ifstream in(path);
  if (!in) return {};
  std::stringstream ss;
  ss << in.rdbuf();
  FaultFile f = parse_faults(ss.str());
  std::erase_if(f.faults, [&](const EmulatedFault& x) { return !x.persistent && x.line_number <= cleared_through; });
  return f;
}

}  // namespace allot::agent
