#!/usr/bin/env bash
# Builds the libFuzzer targets in fuzz/ with clang (AddressSanitizer + UndefinedBehaviorSanitizer) in
# build-fuzz/ and runs them one after another (docs/fuzzing.md).
#
#   bash scripts/fuzz.sh                         smoke run: every target for a few seconds (what CTest runs)
#   bash scripts/fuzz.sh --seconds 600 [TARGET]  a long run of every target, or of the ones named
#   bash scripts/fuzz.sh --list                  the target names
#
# TARGET is a name from --list (scenario, job_spec, ...). Each target starts from its seeds (files of the
# repository: tests/scenarios, tests/data, examples, excerpts of traces/, and fuzz/corpus/TARGET) plus what
# earlier runs kept in build-fuzz/corpus/TARGET. Crashes, leaks, timeouts and out-of-memory inputs go to
# build-fuzz/findings/TARGET/; replay one with `build-fuzz/fuzz/TARGET_fuzz FILE`.
# Exit 0: nothing found; 1: something found (or the build failed); 77: clang's libFuzzer cannot be installed.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
OUT=$ROOT/build-fuzz

SMOKE_SECONDS=13  # eleven targets, one per core at a time: about a minute and a half on two cores
seconds=$SMOKE_SECONDS
targets=()
TIMEOUT_S=10        # one input taking longer than this is a finding (a parser must not hang on its input)
RSS_LIMIT_MB=2048   # and so is one that needs more memory than this
MAX_LEN=16384       # the seeds are smaller; room for mutations that grow them

all_targets() { sed -n 's/^allot_fuzz_target(\([a-z0-9_]*\) .*/\1/p' fuzz/CMakeLists.txt; }

while [ $# -gt 0 ]; do
  case "$1" in
    --smoke) seconds=$SMOKE_SECONDS ;;
    --seconds) seconds=${2:?--seconds needs a number}; shift ;;
    --list) all_targets; exit 0 ;;
    -h|--help) sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "fuzz.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    *) targets+=("${1%_fuzz}") ;;
  esac
  shift
done
case "$seconds" in ''|*[!0-9]*) echo "fuzz.sh: --seconds takes a whole number, not '$seconds'" >&2; exit 2 ;; esac
known=$(all_targets)
if [ ${#targets[@]} -eq 0 ]; then mapfile -t targets <<<"$known"; fi
for t in "${targets[@]}"; do
  grep -qx "$t" <<<"$known" || { echo "fuzz.sh: no target '$t'; targets: $(echo $known)" >&2; exit 2; }
done

# --- clang with libFuzzer -------------------------------------------------------------------------------
# Debian ships libFuzzer and the sanitizer runtimes in libclang-rt-14-dev, apart from the compiler (clang).
libfuzzer_works() {
  local probe
  probe=$(mktemp -d /tmp/allot-fuzz-probe.XXXXXX)
  echo 'extern "C" int LLVMFuzzerTestOneInput(const unsigned char*, unsigned long) { return 0; }' >"$probe/p.cpp"
  clang++ -fsanitize=fuzzer,address,undefined "$probe/p.cpp" -o "$probe/p" >/dev/null 2>&1
  local rc=$?
  rm -rf "$probe"
  return $rc
}
if ! command -v clang++ >/dev/null || ! libfuzzer_works; then
  echo "fuzz.sh: installing clang and libclang-rt-14-dev (libFuzzer)" >&2
  if ! bash scripts/deps.sh clang libclang-rt-14-dev || ! libfuzzer_works; then
    echo "fuzz.sh: SKIP: clang++ with -fsanitize=fuzzer is not available and apt-get could not install" \
         "clang and libclang-rt-14-dev here (root on Debian is needed)" >&2
    exit 77
  fi
fi
bash scripts/deps.sh  # the libraries allot itself builds with

# --- build --------------------------------------------------------------------------------------------------
# -O1 with line tables: fast to compile, fast enough to fuzz, and stack traces that name file and line.
launcher=()
if command -v ccache >/dev/null; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi
cmake -S . -B "$OUT" -G Ninja -DCMAKE_CXX_COMPILER=clang++ -DALLOT_FUZZ=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -gline-tables-only" "${launcher[@]}" >/dev/null
build_targets=()
for t in "${targets[@]}"; do build_targets+=("${t}_fuzz"); done
echo "fuzz.sh: building ${build_targets[*]} in build-fuzz/"
if ! cmake --build "$OUT" -j "$(nproc)" --target "${build_targets[@]}" >"$OUT/build.log" 2>&1; then
  tail -n 40 "$OUT/build.log" >&2
  echo "fuzz.sh: FAIL: the fuzz build failed (build-fuzz/build.log)" >&2
  exit 1
fi

# --- seeds ----------------------------------------------------------------------------------------------------
# Copied fresh each run, so the repository's files are never written to; fuzz/corpus/TARGET holds hand-made
# seeds and every input that once found a bug (the regression corpus).
seed_files() {
  case "$1" in
    scenario) find tests/scenarios examples -name '*.yaml' ;;
    job_spec|k8s_manifest) find tests/data/k8s -name '*.yaml' ;;
    ec2_topology) find tests/data/topology -name '*.json' ;;
    nodes) find tests/data/topology -name '*.yaml'; echo examples/cluster-640gpu.yaml ;;
    *) ;;
  esac
}
make_seeds() {
  local t=$1 dir=$OUT/seeds/$1
  rm -rf "$dir"
  mkdir -p "$dir"
  local f
  while read -r f; do [ -n "$f" ] && cp "$f" "$dir/$(echo "$f" | tr '/' '_')"; done < <(seed_files "$t")
  if [ "$t" = trace ]; then
    # The first rows of each bundled trace: the real headers and cells, small enough to mutate.
    head -n 20 traces/itp/cluster04.csv >"$dir/itp_head.csv"
    head -n 20 traces/philly/philly_103959.csv >"$dir/philly_head.csv"
  fi
  if [ -d "fuzz/corpus/$t" ]; then cp fuzz/corpus/"$t"/* "$dir/" 2>/dev/null || true; fi
}

# --- run ------------------------------------------------------------------------------------------------------
export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:detect_stack_use_after_return=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1}
# Runs one target; writes its summary line to build-fuzz/logs/TARGET.summary, exits 1 when it found something.
run_target() {
  local t=$1
  local bin=$OUT/fuzz/${t}_fuzz corpus=$OUT/corpus/$t findings=$OUT/findings/$t log=$OUT/logs/$t.log
  local dict=() rc execs units artifact
  if [ -f "fuzz/dicts/$t.dict" ]; then dict=(-dict="fuzz/dicts/$t.dict"); fi
  echo "fuzz.sh: $t for ${seconds}s (log build-fuzz/logs/$t.log)"
  set +e
  # The first corpus directory is where libFuzzer adds inputs that reach new code; the seeds are read only.
  "$bin" -max_total_time="$seconds" -timeout="$TIMEOUT_S" -rss_limit_mb="$RSS_LIMIT_MB" -max_len="$MAX_LEN" \
    -print_final_stats=1 -artifact_prefix="$findings/" "${dict[@]}" "$corpus" "$OUT/seeds/$t" >"$log" 2>&1
  rc=$?
  set -e
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
  units=$(find "$corpus" -type f | wc -l)
  # libFuzzer exits non-zero on a crash, a sanitizer report, a leak, a timeout or running out of memory, and
  # names the input it saved ("Test unit written to ...").
  if [ "$rc" -ne 0 ]; then
    artifact=$(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$log" | tail -n 1)
    printf '%-14s %10s execs  %5s corpus  FOUND (exit %s): %s\n' "$t" "${execs:-?}" "$units" "$rc" "${artifact:-see the log}" >"$OUT/logs/$t.summary"
    grep -m 3 -E 'ERROR: |runtime error|fuzz: ' "$log" | sed "s/^/    $t: /" >&2 || true
    return 1
  fi
  printf '%-14s %10s execs  %5s corpus  nothing found\n' "$t" "${execs:-?}" "$units" >"$OUT/logs/$t.summary"
}

# One target per core at a time: a libFuzzer run is one process on one core, so on two cores the smoke run takes
# half as long and each target still gets its seconds to itself.
mkdir -p "$OUT/logs"
for t in "${targets[@]}"; do
  mkdir -p "$OUT/corpus/$t" "$OUT/findings/$t"
  rm -f "$OUT/logs/$t.summary"
  make_seeds "$t"
done
source scripts/parallel.sh
run_parallel "$(nproc)" run_target "${targets[@]}"
found=0
for rc in "${PARALLEL_EXIT[@]}"; do [ "$rc" -eq 0 ] || found=1; done
summary=()
for t in "${targets[@]}"; do summary+=("$(cat "$OUT/logs/$t.summary" 2>/dev/null || echo "$t: no summary (see build-fuzz/logs/$t.log)")"); done

echo
echo "fuzz.sh: ${seconds}s per target"
printf '%s\n' "${summary[@]}"
if [ "$found" -ne 0 ]; then
  echo "fuzz.sh: FAIL: findings are in build-fuzz/findings/ (replay: build-fuzz/fuzz/TARGET_fuzz FILE)"
  exit 1
fi
echo "fuzz.sh: ${#targets[@]} targets, nothing found"
