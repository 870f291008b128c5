#!/usr/bin/env bash
# The agent links only what it uses (docs/architecture.md, issue 26): no symbol of allot's the agent's library
# leaves undefined may be one that the state's views (allot_view), the other formats (allot_interop) or the CLI's
# output (allot_client) define. What it needs of view and interop is in their one-file libraries
# (allot_replica_failure, allot_nvidia_smi).
#
#   agent_links_test.sh AGENT_LIB OTHER_LIB...
set -euo pipefail
agent=$1
shift
undefined=$(mktemp)
defined=$(mktemp)
trap 'rm -f "$undefined" "$defined"' EXIT
nm -C --undefined-only "$agent" | sed -E 's/^ *U //' | grep '^allot::' | sort -u >"$undefined"
[ -s "$undefined" ] || { echo "no allot symbol undefined in $agent: nm did not read it"; exit 1; }
bad=0
for lib in "$@"; do
  nm -C --defined-only "$lib" | grep -E ' [TWVBDR] ' | cut -d' ' -f3- | sort -u >"$defined"
  used=$(comm -12 "$undefined" "$defined")
  if [ -n "$used" ]; then
    echo "the agent uses $(basename "$lib"), which it must not link:"
    echo "$used" | head -20
    bad=1
  fi
done
[ "$bad" = 0 ] && echo "the agent uses nothing of: $(for l in "$@"; do basename "$l"; done | tr '\n' ' ')"
exit "$bad"
