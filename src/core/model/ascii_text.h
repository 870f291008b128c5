#pragma once
// Lower-casing for the protocol words the server and the simulator compare without regard to case (HTTP header
// names and values, hosts, trace fields): ASCII only, whatever the process's locale.
#include <string>
#include <string_view>

namespace allot {

inline std::string ascii_lower(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return out;
}

}  // namespace allot
