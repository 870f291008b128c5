#!/usr/bin/env bash
# End to end (docs/resiliency.md, "A provisioned node's later boots"): a replacement's agent is stopped and booted again
# with the very command line its provisioner gave it (scripts/provision-emulated.sh writes it as the node's boot
# command, `--replaces gpu-2` included), as a real reboot of the machine does. It registers with its saved credential,
# is the same node (same name, same credential, still the replacement of gpu-2, boot 2), and takes work.
# Usage: resil_rejoin_test.sh PATH/TO/allot
ALLOT=${1:?usage: $0 PATH/TO/allot}
TEST_NAME=resil_rejoin
source "$(dirname "$0")/lib_e2e.sh"
source "$(dirname "$0")/lib_resil.sh"

# The reboot (the agent's stop, then its boot command's start and registration) took more than 4 s of silence on a
# loaded CI machine, and the silent node went to replacement: 30 s here, as the reboot is the test.
REPLACE_SILENT_AFTER=30 start_resil_server
start_faulty_agent gpu-1 network-node-layer-3=nn-a
start_faulty_agent gpu-2 network-node-layer-3=nn-a
write_teams
t0=$(now_ms)
inject gpu-2 "xid 79 gpu 0"
for _ in $(seq 1 400); do [ "$(node_health gpu-2-r1 || true)" = Schedulable ] && break; sleep 0.1; done
replaced=$(seconds $(( $(now_ms) - t0 )))
[ "$(node_health gpu-2-r1 || true)" = Schedulable ] || fail "the replacement gpu-2-r1 did not become Schedulable: $(cat "$WORK"/server/provision/*.log 2>/dev/null)"

boot="$WORK/emulated/boot-gpu-2-r1.sh"
[ -x "$boot" ] || fail "the provisioner should leave the node's boot command in $boot"
grep_q -- "--replaces gpu-2" "$boot" || fail "the boot command should be the provisioned one, --replaces included: $(cat "$boot")"
agent_dir="$WORK/emulated/agents/gpu-2-r1"
# The agent saves the credential once the registration is answered, so the node may be Schedulable a moment before.
for _ in $(seq 1 100); do [ -s "$agent_dir/credential" ] && break; sleep 0.1; done
credential=$(cat "$agent_dir/credential")
pidfile="$WORK/pids/agent-gpu-2-r1.pid"
pid=$(cat "$pidfile")
say "rebooting gpu-2-r1: its agent (pid $pid) stops, then $boot runs again"
old_agent=$pid t1=$(now_ms)
kill -TERM "$pid"
for _ in $(seq 1 100); do gone "$pid" && break; sleep 0.1; done
gone "$pid" || fail "the agent of gpu-2-r1 did not stop"
log="$WORK/emulated/agent-gpu-2-r1.log"
before=$(grep -c "registered as" "$log" || true)
setsid "$boot" >>"$log" 2>&1 </dev/null &
pid=$!
PIDS+=("$pid")
echo "$pid" >"$pidfile"
for _ in $(seq 1 100); do [ "$(grep -c "registered as" "$log" || true)" -gt "$before" ] && break; gone "$pid" && break; sleep 0.1; done
gone "$pid" && fail "the rebooted replacement's agent exited: $(tail -n 5 "$log")"
grep_q "only an agent-join token registers a replacement" "$log" && fail "the later boot was refused: $(tail -n 5 "$log")"
[ "$(grep -c "registered as" "$log")" -gt "$before" ] || fail "the rebooted agent did not register: $(tail -n 5 "$log")"
[ "$(cat "$agent_dir/credential")" = "$credential" ] || fail "the node should keep its credential across boots"
[ "$(cat "$agent_dir/boot")" = 2 ] || fail "the agent should count its second boot, not $(cat "$agent_dir/boot")"
node_json gpu-2-r1 | grep_q '"replaces": *"gpu-2"' || fail "gpu-2-r1 should still be the replacement of gpu-2"
[ "$("$ALLOT" nodes | grep -c '^gpu-2-r')" = 1 ] || fail "the reboot should not make another node: $("$ALLOT" nodes)"
wait_node gpu-2-r1 Schedulable 10
back=$(seconds $(( $(now_ms) - t1 )))
sleep 1
gone "$pid" && fail "the rebooted agent exited after registering: $(tail -n 5 "$log")"

cat >"$WORK/pair.yaml" <<'YAML'
name: pair
team: team-a
replicas: 2
per_replica: {accelerators: 1}
command: "sleep 30"
YAML
"$ALLOT" submit "$WORK/pair.yaml" >/dev/null
wait_state pair Running
case " $(job_nodes pair) " in *" gpu-2-r1 "*) ;; *) fail "the rebooted node should take work: $(job_nodes pair)";; esac
fault_row "xid 79 on an idle node, then its replacement rebooted" "$(restarts_charged pair) (no job ran during the fault)" "n/a (no job)" "n/a (no job)" \
  "gpu-2 replaced by gpu-2-r1 (Schedulable $replaced after the fault); gpu-2-r1 rebooted: the same node back (boot $(cat "$agent_dir/boot"), $(node_health gpu-2-r1 || true) $back after its agent's stop)" \
  "not sampled" "n/a (no job); the old boot's agent left running: $(gone "$old_agent" && echo 0 || echo 1)"
"$ALLOT" cancel pair >/dev/null
say PASS
