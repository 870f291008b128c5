// Slurm-style host lists (core/model/hostlist.h), read wherever nodes are named (nodes YAML, scenario events,
// `allot nodes` arguments). An expanded list, compressed the way topology.conf writes it
// (interop/hostlist_compress.h), must expand to the same set of names; natural_less must be a strict order.
#include <algorithm>
#include <set>

#include "core/model/hostlist.h"
#include "fuzz_checks.h"
#include "interop/hostlist_compress.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace allot;
  const std::string text = fuzz::text_of(data, size);
  auto names = expand_hostlist(text);
  if (!fuzz::accepted(names, "expand_hostlist")) return 0;
  // Compressing is quadratic in places; large expansions are checked by the unit tests instead.
  if (names->size() > 2000) return 0;
  for (size_t i = 0; i + 1 < names->size(); ++i) {
    const std::string &a = (*names)[i], &b = (*names)[i + 1];
    fuzz::require(!(natural_less(a, b) && natural_less(b, a)), "natural_less is asymmetric", a + " / " + b);
    fuzz::require(!natural_less(a, a), "natural_less is irreflexive", a);
  }
  const std::string compressed = interop::compress_hostlist(*names);
  auto again = expand_hostlist(compressed);
  if (!again) fuzz::fail("a compressed host list does not expand", compressed + ": " + again.error().message);
  std::set<std::string> want(names->begin(), names->end()), got(again->begin(), again->end());
  fuzz::require(want == got, "host list -> compress -> expand", text + " -> " + compressed);
  return 0;
}
