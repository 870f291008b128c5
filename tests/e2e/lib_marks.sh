# Marker files for the e2e tests that check when replicas run (source after lib_e2e.sh). Each replica started with
# mark_command appends "start NS PID" to $WORK/marks/JOB.RANK.ATTEMPT when it starts, then "alive NS" every 0.1 s
# until it is killed (it ignores SIGTERM, so a stop takes the agent's whole stop grace): samples of the processes'
# lives, from which check_marks tells whether an attempt started twice and whether two runs overlapped.
mkdir -p "$WORK/marks"
chmod 1777 "$WORK/marks"

# mark_command [SHELL]: the replica's command: SHELL (if any) runs first, after the start mark (it may exit).
mark_command() {
  printf '%s' "m=$WORK/marks/\$ALLOT_JOB.\$RANK.\$ALLOT_ATTEMPT; echo \"start \$(date +%s%N) \$\$\" >>\$m; $NODE_PID >$WORK/pids/\$ALLOT_JOB-\$RANK-\$ALLOT_ATTEMPT; ${1:-true}; trap \"\" TERM; while :; do echo \"alive \$(date +%s%N)\" >>\$m; sleep 0.1; done"
}

# mark_pid JOB RANK ATTEMPT: the pid of that replica's shell as the node names it, once it has started.
mark_pid() { cat "$WORK/pids/$1-$2-$3" 2>/dev/null || true; }

# wait_mark JOB RANK ATTEMPT [SECONDS]: waits until that replica has started.
wait_mark() {
  for _ in $(seq 1 $((${4:-20} * 10))); do
    [ -s "$WORK/marks/$1.$2.$3" ] && return 0
    sleep 0.1
  done
  fail "replica $2 of $1 (attempt $3) never started: $(ls "$WORK/marks")"
}

# check_marks RULE...: fails unless every rule holds. Rules:
#   once                 no attempt of any replica started twice
#   after:J1@A1:J2@A2    every replica of job J2's attempt A2 started after the last sign of life of every replica of
#                        job J1's attempt A1 (no overlap)
check_marks() {
  python3 - "$WORK/marks" "$@" <<'PY' || fail "the replicas' marks break a rule (above)"
import os, sys
d, rules = sys.argv[1], sys.argv[2:]
runs = {}
for f in os.listdir(d):
    job, rank, attempt = f.rsplit(".", 2)
    starts, alive = [], []
    for line in open(os.path.join(d, f)):
        w = line.split()
        if len(w) >= 2:
            (starts if w[0] == "start" else alive).append(int(w[1]))
    runs[(job, int(rank), int(attempt))] = (starts, alive)
bad = []
for rule in rules:
    if rule == "once":
        bad += [f"{k} started {len(s)} times" for k, (s, a) in runs.items() if len(s) != 1]
    elif rule.startswith("after:"):
        (j1, a1), (j2, a2) = [x.split("@") for x in rule[6:].split(":")]
        old = [max(s + a) for (j, r, at), (s, a) in runs.items() if j == j1 and at == int(a1)]
        new = [min(s) for (j, r, at), (s, a) in runs.items() if j == j2 and at == int(a2) and s]
        if not old or not new:
            bad.append(f"{rule}: no marks of one side ({len(old)} old, {len(new)} new)")
        elif min(new) <= max(old):
            bad.append(f"{rule}: overlap of {(max(old) - min(new)) / 1e6:.0f} ms")
    else:
        bad.append(f"unknown rule {rule}")
for b in bad:
    print("marks:", b)
sys.exit(1 if bad else 0)
PY
}

# marks_gap J1@A1 J2@A2: milliseconds from the last sign of life of any replica of job J1's attempt A1 to the first
# start of any replica of job J2's attempt A2 (negative: they overlapped by that much); empty when a side has none.
marks_gap() {
  python3 - "$WORK/marks" "$1" "$2" <<'PY'
import os, sys
d, (j1, a1), (j2, a2) = sys.argv[1], sys.argv[2].split("@"), sys.argv[3].split("@")
old, new = [], []
for f in os.listdir(d):
    job, rank, attempt = f.rsplit(".", 2)
    times = [(w[0], int(w[1])) for w in (line.split() for line in open(os.path.join(d, f))) if len(w) >= 2]
    if job == j1 and attempt == a1: old += [t for _, t in times]
    if job == j2 and attempt == a2: new += [t for k, t in times if k == "start"]
if old and new: print((min(new) - max(old)) // 1000000)
PY
}

# seen_waiting JOB RANK ATTEMPT PATTERN: polls JOB's description (every 0.05 s, at most 5 s) until it matches
# PATTERN (a grep pattern) or that replica has started; prints the description that matched, or nothing.
seen_waiting() {
  local j
  for _ in $(seq 1 100); do
    j=$(job_json "$1")
    if echo "$j" | grep_q "$4"; then echo "$j"; return 0; fi
    [ -s "$WORK/marks/$1.$2.$3" ] && return 0
    sleep 0.05
  done
}
