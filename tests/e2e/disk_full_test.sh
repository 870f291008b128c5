#!/usr/bin/env bash
# End to end, with the fault harness (lib_faults.sh): the journal's disk fills up under a stream of submissions
# (docs/deployment.md, "A full disk"). The journal lives on a small tmpfs; it is filled to the last byte, then
# freed. While full, submissions are refused at once with 507 and Retry-After (no rebuild of the state per
# refusal), reads are answered, no acknowledged submission is lost; once freed, submissions are acknowledged again
# without a restart. Skipped where a tmpfs cannot be mounted (not root, or in a container that forbids it).
# Usage: disk_full_test.sh PATH/TO/allot
ALLOT=${1:?usage: $0 PATH/TO/allot}
TEST_NAME=disk_full
source "$(dirname "$0")/lib_e2e.sh"
source "$(dirname "$0")/lib_faults.sh"

fault_small_disk "$WORK/disk" 16 || { say "SKIP: no small file system for the journal"; exit 77; }
start_server --database "sqlite:$WORK/disk/allot.db"
write_teams
stream_start team-a

say "filling the journal's file system"
fault_fill "$WORK/disk"
t_full=$(( $(date +%s%N) / 1000000 ))
# submit NAME: one submission with curl; appends "STATUS SECONDS" to $WORK/refusals.
submit() {
  curl -s --max-time 10 -o "$WORK/refusal-body" -D "$WORK/refusal-head" -w '%{http_code} %{time_total}\n' -X POST \
    -H "Authorization: Bearer $ALLOT_TOKEN" -H 'Content-Type: application/json' \
    --data "{\"name\": \"$1\", \"team\": \"team-a\", \"replicas\": 64, \"per_replica\": {\"accelerators\": 1}, \"command\": \"true\"}" \
    "$ALLOT_SERVER/v1/jobs" >>"$WORK/refusals"
}
# SQLite writes into pages its log already has until it needs a new one: wait for the first refusal.
: >"$WORK/refusals"
for i in $(seq 1 300); do
  submit "w-$i"
  grep_q '^5' "$WORK/refusals" && break
  sleep 0.1
done
grep_q '^5' "$WORK/refusals" || fail "no submission was refused within 30 s of the disk filling"
rebuilds_before=$(cat "$WORK/server.log" "$WORK/server.err.log" | grep -c 'replayed .* journal records' || true)
# Refusals: status, Retry-After and how long each took, from curl.
: >"$WORK/refusals"
for i in $(seq 1 20); do
  submit "r-$i"
  sleep 0.1
done
refused=$(grep -c '^507 ' "$WORK/refusals" || true)
median_ms=$(awk '{print $2 * 1000}' "$WORK/refusals" | sort -n | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}')
"$ALLOT" jobs >/dev/null || fail "reads should be answered while the journal is full"
rebuilds=$(( $(cat "$WORK/server.log" "$WORK/server.err.log" | grep -c 'replayed .* journal records' || true) - rebuilds_before ))
say "full: 20 submissions answered $(cut -d' ' -f1 "$WORK/refusals" | sort | uniq -c | tr -s ' ' | tr '\n' ';') median ${median_ms} ms; reads answered; $rebuilds rebuild(s) of the state meanwhile"
[ "$refused" = 20 ] || fail "submissions to a full journal should be refused with 507"
grep_q -i '^Retry-After: 5' "$WORK/refusal-head" || fail "a 507 should carry Retry-After: $(cat "$WORK/refusal-head")"
grep_q 'no room' "$WORK/refusal-body" || fail "the 507 should say why: $(cat "$WORK/refusal-body")"
[ "$rebuilds" = 0 ] || fail "the state was rebuilt $rebuilds times while the journal was full and changes were refused"

say "freeing it"
fault_unfill "$WORK/disk"
t_free=$(( $(date +%s%N) / 1000000 ))
for _ in $(seq 1 100); do [ "$(acked_after "$t_free")" -gt 0 ] && break; sleep 0.1; done
[ "$(acked_after "$t_free")" -gt 0 ] || fail "submissions were not acknowledged again once space returned: $(tail -3 "$WORK/stream.err")"
stream_stop
say "refused while full: $(awk -v a="$t_full" -v b="$t_free" '$1 > a && $1 < b && $3 == "fail"' "$WORK/stream" | wc -l) stream submissions; full for $(( (t_free - t_full) / 1000 )) s"
figures disk_full 0
say PASS
