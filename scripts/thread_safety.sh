#!/usr/bin/env bash
# Clang's thread-safety analysis (-Wthread-safety) over the code that shares state between threads: every source
# file that uses the annotations of src/common/thread_annotations.h (GUARDED_BY, REQUIRES, ...), and the .cpp of
# every header that does. GCC, which builds allot, ignores the annotations; this compiles those files with clang
# (syntax and analysis only, no object files) and fails on any warning: a member read or written without the
# mutex that guards it, a function called without the lock it requires.
#
#   bash scripts/thread_safety.sh
#
# Exit 0: no warning; 1: a warning or an error (printed); 77: clang cannot be installed here.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v clang++ >/dev/null; then
  echo "thread_safety.sh: installing clang" >&2
  if ! bash scripts/deps.sh clang || ! command -v clang++ >/dev/null; then
    echo "thread_safety.sh: SKIP: clang++ is not available and apt-get could not install clang here (root on Debian is needed)" >&2
    exit 77
  fi
fi
bash scripts/deps.sh  # the libraries' headers
# The files that use the annotations, and for each header among them its own .cpp (where its functions are).
mapfile -t users < <(grep -rl --include='*.h' --include='*.cpp' -E '^[^/]*\b(GUARDED_BY|REQUIRES|EXCLUDES)\(' src | grep -v 'thread_annotations.h$')
files=()
for f in "${users[@]}"; do
  case "$f" in
    *.cpp) files+=("$f") ;;
    *.h) [ -f "${f%.h}.cpp" ] && files+=("${f%.h}.cpp") ;;
  esac
done
mapfile -t files < <(printf '%s\n' "${files[@]}" | sort -u)
echo "thread_safety.sh: analysing ${#files[@]} files: ${files[*]}"
flags=(-std=c++20 -fsyntax-only -Isrc -DSPDLOG_FMT_EXTERNAL -DSPDLOG_COMPILED_LIB -DCPPHTTPLIB_OPENSSL_SUPPORT
       -Wthread-safety -Werror=thread-safety)
log=$(mktemp /tmp/allot-thread-safety.XXXXXX)
trap 'rm -f "$log"' EXIT
if ! printf '%s\n' "${files[@]}" | xargs -P "$(nproc)" -n 1 clang++ "${flags[@]}" >"$log" 2>&1; then
  grep -E 'warning|error' "$log" >&2 || cat "$log" >&2
  echo "thread_safety.sh: FAIL (see the lines above)" >&2
  exit 1
fi
echo "thread_safety.sh: no warning"
