#pragma once
// What every fuzz target asks of a parser beyond not crashing: a rejection is an ordinary error with a
// message a person can act on. An empty message, or an internal error (what guard() makes of an exception
// that escaped a reader), is a bug the target reports by aborting, which libFuzzer saves as a finding.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "core/model/result.h"

namespace allot::fuzz {

// The fuzzer's bytes as text.
inline std::string text_of(const uint8_t* data, size_t size) { return std::string(reinterpret_cast<const char*>(data), size); }

[[noreturn]] inline void fail(const char* what, const std::string& detail) {
  std::fprintf(stderr, "fuzz: %s: %s\n", what, detail.c_str());
  std::abort();
}

inline void check_rejection(const Error& e, const char* parser) {
  if (e.message.empty()) fail(parser, "rejected the input with an empty message");
  if (e.code == ErrorCode::kInternal) fail(parser, "internal error on user input: " + e.message);
}

// Checks the error of a rejected result; returns whether the input was accepted.
template <typename T>
bool accepted(const Result<T>& r, const char* parser) {
  if (r) return true;
  check_rejection(r.error(), parser);
  return false;
}

// Two outputs that must agree (a round trip); `what` says which.
inline void require(bool holds, const char* what, const std::string& detail = "") {
  if (!holds) fail(what, detail.empty() ? "does not hold" : detail);
}

}  // namespace allot::fuzz
