# The fault-injection harness of the end-to-end tests (source it after lib_e2e.sh): faults done to a process at any
# point of a test, a stream of writes to measure them by, and the figures of each run, printed as one line:
#   NAME figures: acknowledged=N lost=N unavailable_s=S failed_wrongly=N
# (acknowledged writes; acknowledged writes missing afterwards; the longest time without an acknowledged write
# while the stream ran; jobs failed or restarted that the fault should not have cost anything).
#
#   fault_freeze PID           SIGSTOP: the process keeps its sockets and database sessions but does nothing, as in
#                              a GC pause, on a stuck disk or during a VM migration
#   fault_thaw PID             SIGCONT
#   fault_kill PID             SIGKILL
#   fault_slow PID SECONDS     in the background, stops and resumes PID in turn (200 ms each) for SECONDS: a starved
#                              process; sets SLOW_PID
#   fault_small_disk DIR MB    mounts a tmpfs of MB megabytes on DIR (returns 1, saying why, where mounting is not
#                              allowed); it is unmounted when the test ends
#   fault_fill DIR             fills the file system of DIR to the last byte (DIR/fill); fault_unfill DIR frees it
#   stream_start [TEAM [N]]    submissions through the CLI (ALLOT_SERVER, ALLOT_TOKEN) in a loop, each line
#                              "MS NAME ok|fail" in $WORK/stream (NAME stream-N); jobs of 64 replicas, which never fit, so they
#                              stay Pending and change nothing else. With STREAM_URL set, each goes to that server
#                              alone with curl (2 s at most, redirects not followed): what one server acknowledges.
#                              Returns once N (5) were acknowledged
#   stream_stop
#   figures NAME FAILED_WRONGLY   checks every acknowledged submission is there and prints the line above
FAULT_MOUNTS=()

fault_freeze() { kill -STOP "$1"; }
fault_thaw() { kill -CONT "$1"; }
fault_kill() { kill -9 "$1" 2>/dev/null || true; }

fault_slow() {
  local pid=$1 seconds=$2
  (
    local end=$(( $(date +%s) + seconds ))
    while [ "$(date +%s)" -lt "$end" ]; do
      kill -STOP "$pid" 2>/dev/null || break
      sleep 0.2
      kill -CONT "$pid" 2>/dev/null || break
      sleep 0.2
    done
    kill -CONT "$pid" 2>/dev/null || true
  ) &
  SLOW_PID=$!
  PIDS+=("$SLOW_PID")
}

fault_small_disk() {
  local dir=$1 mb=$2
  mkdir -p "$dir"
  if [ "$(id -u)" != 0 ] || ! mount -t tmpfs -o "size=${mb}m" tmpfs "$dir" 2>"$WORK/mount.err"; then
    say "cannot mount a ${mb} MB tmpfs on $dir here: $(cat "$WORK/mount.err" 2>/dev/null || echo 'not root')"
    return 1
  fi
  FAULT_MOUNTS+=("$dir")
}
fault_fill() { dd if=/dev/zero of="$1/fill" bs=1M status=none 2>/dev/null || true; dd if=/dev/zero of="$1/fill2" bs=4k status=none 2>/dev/null || true; }
fault_unfill() { rm -f "$1/fill" "$1/fill2"; }
# Unmounts what fault_small_disk mounted; lib_e2e.sh's cleanup calls it before removing $WORK.
fault_cleanup() { for m in "${FAULT_MOUNTS[@]}"; do umount -l "$m" 2>/dev/null || true; done; }

stream_submit() {
  if [ -z "${STREAM_URL:-}" ]; then
    printf '%s' "$1" | "$ALLOT" submit - >/dev/null 2>>"$WORK/stream.err"
    return
  fi
  local code
  code=$(curl -s --max-time 2 -o /dev/null -w '%{http_code}' -X POST -H "Authorization: Bearer $ALLOT_TOKEN" \
    -H 'Content-Type: application/json' --data "$1" "$STREAM_URL/v1/jobs" 2>>"$WORK/stream.err" || true)
  [ "$code" = 201 ] || { echo "$(date +%s%3N) HTTP $code" >>"$WORK/stream.err"; return 1; }
}

stream_start() {
  local team=${1:-team-a} want=${2:-5}
  : >"$WORK/stream"
  rm -f "$WORK/stop-stream"
  (
    local i=0
    while [ ! -e "$WORK/stop-stream" ]; do
      i=$((i + 1))
      if stream_submit "$(printf '{"name": "stream-%d", "team": "%s", "replicas": 64, "per_replica": {"accelerators": 1}, "command": "true"}' "$i" "$team")"; then
        echo "$(( $(date +%s%N) / 1000000 )) stream-$i ok" >>"$WORK/stream"
      else
        echo "$(( $(date +%s%N) / 1000000 )) stream-$i fail" >>"$WORK/stream"
        sleep 0.05
      fi
    done
  ) &
  STREAM_PID=$!
  PIDS+=("$STREAM_PID")
  # Returns once N submissions were acknowledged (0: at once).
  for _ in $(seq 1 100); do [ "$(grep -c ' ok$' "$WORK/stream")" -ge "$want" ] && return 0; sleep 0.05; done
  fail "the submission stream did not get going: $(tail -3 "$WORK/stream.err" 2>/dev/null)"
}

stream_stop() {
  touch "$WORK/stop-stream"
  wait "$STREAM_PID" 2>/dev/null || true
}

# acked_after MS: how many submissions were acknowledged after MS (epoch milliseconds).
acked_after() { awk -v t="$1" '$3 == "ok" && $1 > t' "$WORK/stream" | wc -l; }

figures() {
  local name=$1 wrong=$2
  "$ALLOT" jobs -o json >"$WORK/figures-jobs.json" || fail "allot jobs failed"
  grep -o '"name": *"stream-[0-9]*"' "$WORK/figures-jobs.json" | grep -o 'stream-[0-9]*' | sort -u >"$WORK/figures-present"
  awk '$3 == "ok" {print $2}' "$WORK/stream" | sort -u >"$WORK/figures-acked"
  local acked lost gap
  acked=$(wc -l <"$WORK/figures-acked")
  lost=$(comm -23 "$WORK/figures-acked" "$WORK/figures-present" | wc -l)
  gap=$(awk '$3 == "ok" { if (last) { d = $1 - last; if (d > max) max = d } last = $1 } END { printf "%.1f", max / 1000 }' "$WORK/stream")
  echo "$name figures: acknowledged=$acked lost=$lost unavailable_s=$gap failed_wrongly=$wrong"
  [ "$lost" = 0 ] || fail "acknowledged submissions are missing: $(comm -23 "$WORK/figures-acked" "$WORK/figures-present" | head -5 | tr '\n' ' ')"
}
