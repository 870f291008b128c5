#!/usr/bin/env bash
# End to end: usage reports survive kill -9. Two members of two teams run jobs on static nodes (team-a borrows
# one of team-b's idle nodes), the jobs end, and `allot usage` is read as JSON and CSV; the server is killed with SIGKILL
# and started again (from a snapshot written after every batch, then once more replaying the whole journal), and
# answers the same report. The report is derived from the journal, so nothing acknowledged is lost.
# Usage: usage_kill_test.sh PATH/TO/allot
ALLOT=${1:?usage: $0 PATH/TO/allot}
TEST_NAME=usage_kill
source "$(dirname "$0")/lib_e2e.sh"

start_server --snapshot-every 1 --snapshot-min-records 0
cat >"$WORK/teams.yaml" <<'YAML'
teams:
  - name: team-a
    allocation:
      - {instance_type: ml.g5.8xlarge, instances: 2}
  - name: team-b
    allocation:
      - {instance_type: ml.g5.8xlarge, instances: 2}
YAML
"$ALLOT" apply "$WORK/teams.yaml" >/dev/null || fail "allot apply failed"
code=$(curl -s -o "$WORK/nodes-answer" -w '%{http_code}' -H "Authorization: Bearer $ALLOT_TOKEN" -H 'Content-Type: application/json' \
  -X POST "$ALLOT_SERVER/v1/nodes" -d '[{"name": "n[1-4]", "instance_type": "ml.g5.8xlarge"}]')
[ "$code" = 201 ] || fail "cannot add the nodes: $code $(cat "$WORK/nodes-answer")"
A=$("$ALLOT" token create --role member --team team-a 2>/dev/null) || fail "no token for team-a"
B=$("$ALLOT" token create --role member --team team-b 2>/dev/null) || fail "no token for team-b"
cat >"$WORK/a.yaml" <<'YAML'
name: a-wide
team: team-a
replicas: 3
per_replica: {accelerators: 1}
command: "true"
YAML
ALLOT_TOKEN=$A "$ALLOT" submit "$WORK/a.yaml" >/dev/null || fail "cannot submit a-wide"
sleep 2
"$ALLOT" cancel a-wide >/dev/null || fail "cannot cancel a-wide"
sed -e 's/a-wide/b-one/; s/team-a/team-b/; s/replicas: 3/replicas: 1/' "$WORK/a.yaml" >"$WORK/b.yaml"
ALLOT_TOKEN=$B "$ALLOT" submit "$WORK/b.yaml" >/dev/null || fail "cannot submit b-one"
sleep 1
"$ALLOT" cancel b-one >/dev/null || fail "cannot cancel b-one"

report() { "$ALLOT" usage --since 1d --by team,user,priority,instance_type -o "$1"; }
report json >"$WORK/before.json" || fail "allot usage -o json failed"
report csv >"$WORK/before.csv" || fail "allot usage -o csv failed"
python3 - "$WORK/before.json" <<'PY' || fail "the report is not what ran: $(cat "$WORK/before.json")"
import json, sys
r = json.load(open(sys.argv[1]))
rows = {(x["team"], x["user"]): x for x in r["rows"]}
a = [x for (t, u), x in rows.items() if t == "team-a" and u != "(team)"]
b = [x for (t, u), x in rows.items() if t == "team-b" and u != "(team)"]
assert len(a) == 1 and a[0]["used_s"] >= 2 and a[0]["admitted"] == 1, a
assert len(b) == 1 and b[0]["used_s"] >= 1 and b[0]["admitted"] == 1, b
assert a[0]["user"] != b[0]["user"], "each member is its own user"
assert rows[("team-a", "(team)")]["borrowed_s"] >= 2 and rows[("team-b", "(team)")]["lent_s"] == rows[("team-a", "(team)")]["borrowed_s"], r
PY
head -n1 "$WORK/before.csv" | grep -q '^team,user,priority,instance_type,used_hours,' || fail "the CSV header: $(head -n1 "$WORK/before.csv")"
[ "$(wc -l <"$WORK/before.csv")" -ge 3 ] || fail "the CSV has no rows: $(cat "$WORK/before.csv")"
"$ALLOT" usage --by team,nope >/dev/null 2>"$WORK/bad.err" && fail "an unknown --by key was taken"
grep -q "unknown key 'nope'" "$WORK/bad.err" || fail "the refusal does not say why: $(cat "$WORK/bad.err")"

say "kill -9, then a start from the latest snapshot"
kill -9 "$SERVER_PID"
wait "$SERVER_PID" 2>/dev/null || true
start_server --snapshot-every 1 --snapshot-min-records 0
grep -q "after the snapshot at record" "$WORK/server.err.log" "$WORK/server.log" || fail "the server did not start from a snapshot"
report json >"$WORK/after.json" || fail "allot usage after the restart failed"
diff <(python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print(json.dumps(r["rows"]))' "$WORK/before.json") \
     <(python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print(json.dumps(r["rows"]))' "$WORK/after.json") \
  || fail "the report changed across kill -9 and a snapshot restore"

say "kill -9, then a start that replays the whole journal"
kill -9 "$SERVER_PID"
wait "$SERVER_PID" 2>/dev/null || true
start_server --no-snapshots
report csv >"$WORK/after.csv" || fail "allot usage after the second restart failed"
diff "$WORK/before.csv" "$WORK/after.csv" || fail "the report changed across kill -9 and a full replay"
say "PASS"
