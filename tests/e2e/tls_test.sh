#!/usr/bin/env bash
# End to end over HTTPS, with a CA and a server certificate made here by the openssl command line: the
# server serves TLS; the CLI and an agent verify it (--ca, ALLOT_CA); the agent registers and runs a job; a
# client or agent trusting another CA is refused with a message about the certificate. Bad TLS flags and
# plain HTTP beyond loopback are refused before the server touches its data, a second server on a port in
# use exits while the first keeps answering.
# Usage: tls_test.sh PATH/TO/allot
ALLOT=${1:?usage: $0 PATH/TO/allot}
TEST_NAME=tls
source "$(dirname "$0")/lib_e2e.sh"
unset ALLOT_CA

if ! command -v openssl >/dev/null; then
  bash "$(dirname "$0")/../../scripts/deps.sh" openssl >/dev/null 2>&1 || true
  command -v openssl >/dev/null || { say "SKIP: the openssl command line is missing and cannot be installed"; exit 77; }
fi

# The test PKI: two self-signed CAs, and a certificate for 127.0.0.1 and localhost signed by the first.
PKI=$WORK/pki
mkdir -p "$PKI"
ec=(-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes)
for ca in test-ca other-ca; do
  openssl req -x509 "${ec[@]}" -days 2 -subj "/CN=$ca" -keyout "$PKI/$ca.key" -out "$PKI/$ca.pem" 2>"$WORK/openssl.log" \
    || fail "openssl could not make $ca: $(cat "$WORK/openssl.log")"
done
echo "subjectAltName=IP:127.0.0.1,DNS:localhost" >"$PKI/server.ext"
openssl req "${ec[@]}" -subj "/CN=allot-server" -keyout "$PKI/server.key" -out "$PKI/server.csr" 2>"$WORK/openssl.log" \
  && openssl x509 -req -days 2 -in "$PKI/server.csr" -CA "$PKI/test-ca.pem" -CAkey "$PKI/test-ca.key" -CAcreateserial \
       -extfile "$PKI/server.ext" -out "$PKI/server.pem" 2>"$WORK/openssl.log" \
  || fail "openssl could not make the server certificate: $(cat "$WORK/openssl.log")"
TLS=(--tls-cert "$PKI/server.pem" --tls-key "$PKI/server.key")

# refused_start WANT_RC TEXT FLAGS...: `allot server FLAGS` exits WANT_RC saying TEXT, and creates no data.
refused_start() {
  local want=$1 text=$2 rc; shift 2
  set +e
  timeout 20 "$ALLOT" server --data "$WORK/refused" "$@" >"$WORK/refused.out" 2>"$WORK/refused.err"
  rc=$?
  set -e
  [ "$rc" = "$want" ] || fail "'allot server $*' exited $rc, want $want: $(cat "$WORK/refused.err")"
  grep -qF -- "$text" "$WORK/refused.err" || fail "'allot server $*' should say '$text': $(cat "$WORK/refused.err")"
  [ ! -e "$WORK/refused" ] || fail "'allot server $*' created its data directory before refusing"
}
refused_start 2 "--tls-cert and --tls-key go together" --listen 127.0.0.1:0 --tls-cert "$PKI/server.pem"
refused_start 2 "--tls-cert $PKI/missing.pem cannot be read" --listen 127.0.0.1:0 --tls-cert "$PKI/missing.pem" \
  --tls-key "$PKI/server.key"
refused_start 2 "is not the private key of the certificate" --listen 127.0.0.1:0 --tls-cert "$PKI/server.pem" \
  --tls-key "$PKI/other-ca.key"
# 0.0.0.0 only for the refusal and for a start that is stopped at once; no traffic goes anywhere but loopback.
refused_start 2 "--tls-cert FILE --tls-key FILE" --listen 0.0.0.0:0
grep -qF -- "--insecure" "$WORK/refused.err" || fail "the refusal should name --insecure: $(cat "$WORK/refused.err")"
"$ALLOT" server --listen 0.0.0.0:0 --insecure --data "$WORK/insecure" >"$WORK/insecure.out" 2>"$WORK/insecure.err" &
insecure_pid=$!
PIDS+=("$insecure_pid")
for _ in $(seq 1 100); do
  grep -q "listening on http://0.0.0.0:" "$WORK/insecure.out" && break
  gone "$insecure_pid" && fail "allot server --insecure exited: $(cat "$WORK/insecure.err")"
  sleep 0.1
done
kill "$insecure_pid"
grep -q "listening on http://0.0.0.0:" "$WORK/insecure.out" || fail "allot server --listen 0.0.0.0:0 --insecure did not start"

E2E_CA=$PKI/test-ca.pem start_server "${TLS[@]}"
case $ALLOT_SERVER in https://127.0.0.1:*) ;; *) fail "the server should print an https:// URL, not $ALLOT_SERVER" ;; esac
port=${ALLOT_SERVER##*:}

# Clients that do not trust the server's CA are refused, and told it is the certificate.
expect_rc 2 "$ALLOT" nodes
grep -q "certificate of the allot server at $ALLOT_SERVER does not verify against the system's CA" "$WORK/last.err" \
  || fail "a client without --ca should be told the certificate does not verify: $(cat "$WORK/last.err")"
expect_rc 2 "$ALLOT" nodes --ca "$PKI/other-ca.pem"
grep -q "does not verify against the CA in $PKI/other-ca.pem" "$WORK/last.err" \
  || fail "a client with another CA should be told the certificate does not verify: $(cat "$WORK/last.err")"
grep -q "cannot reach" "$WORK/last.err" && fail "a certificate failure is not a connection failure: $(cat "$WORK/last.err")"
expect_rc 2 "$ALLOT" nodes --ca "$PKI/test-ca.pem" --server "http://127.0.0.1:$port"
grep -q "only for https://" "$WORK/last.err" || fail "--ca with an http:// URL should be refused: $(cat "$WORK/last.err")"
expect_rc 3 "$ALLOT" nodes --server "http://127.0.0.1:$port"
grep -q "use an https:// URL" "$WORK/last.err" || fail "plain HTTP to a TLS server should hint at https: $(cat "$WORK/last.err")"
expect_rc 0 "$ALLOT" nodes --ca "$PKI/test-ca.pem"
expect_rc 0 "$ALLOT" nodes --ca "$PKI/test-ca.pem" --server "https://localhost:$port"

# An agent trusting another CA does not register: it stops with the reason.
set +e
timeout 20 "$ALLOT" agent --server "$ALLOT_SERVER" --ca "$PKI/other-ca.pem" --name wrong-ca --instance-type ml.g5.8xlarge \
  --token-file "$WORK/join-token" --work-dir "$WORK/agents/wrong-ca" $AGENT_USER_FLAGS >"$WORK/agent-wrong-ca.log" 2>&1
rc=$?
set -e
[ "$rc" = 2 ] || fail "an agent with the wrong CA exited $rc, want 2: $(cat "$WORK/agent-wrong-ca.log")"
grep -q "does not verify against the CA in $PKI/other-ca.pem" "$WORK/agent-wrong-ca.log" \
  || fail "the agent should say the certificate does not verify: $(cat "$WORK/agent-wrong-ca.log")"

# With the right CA (the agents by flag, the CLI by ALLOT_CA) a 2-rank job of a team member runs over HTTPS, with
# tokens all the way: agents joined with the join token, the member submits, the admin reads the audit trail.
export ALLOT_CA=$PKI/test-ca.pem
start_agent gpu-1 network-node-layer-3=nn-a --ca "$PKI/test-ca.pem"
start_agent gpu-2 network-node-layer-3=nn-a --ca "$PKI/test-ca.pem"
write_teams
member=$("$ALLOT" token create --role member --team team-a 2>/dev/null) || fail "cannot make a member token"
cat >"$WORK/hello.yaml" <<'YAML'
name: hello-tls
team: team-a
replicas: 2
per_replica: {accelerators: 1}
command: 'echo "hello over tls from rank $RANK"'
YAML
ALLOT_TOKEN=$member "$ALLOT" submit "$WORK/hello.yaml" >/dev/null || fail "the member could not submit over HTTPS"
wait_state hello-tls Succeeded 30
for r in 0 1; do
  ALLOT_TOKEN=$member "$ALLOT" logs hello-tls --replica $r | grep_q "hello over tls from rank $r" \
    || fail "rank $r's log should come back over HTTPS"
done
# Into a file first: grep -q stops reading at its match, and under pipefail a longer output's SIGPIPE failed the test.
"$ALLOT" audit -o json >"$WORK/audit.json"
grep -q '"action": "POST /v1/jobs"' "$WORK/audit.json" || fail "the audit trail should show the member's submission"

# A second server on the same port is refused before it opens a journal; every connection still reaches the
# first one.
set +e
timeout 20 "$ALLOT" server --listen "127.0.0.1:$port" --data "$WORK/second" "${TLS[@]}" >"$WORK/second.out" 2>"$WORK/second.err"
rc=$?
set -e
[ "$rc" = 3 ] || fail "a second server on port $port exited $rc, want 3: $(cat "$WORK/second.err")"
grep -q "127.0.0.1:$port: the port is in use" "$WORK/second.err" || fail "the second server should say the port is in use: $(cat "$WORK/second.err")"
[ ! -e "$WORK/second" ] || fail "the second server should refuse before it opens a journal"
for _ in 1 2 3 4 5 6; do
  "$ALLOT" nodes | grep_q "^gpu-1 " || fail "the first server should still answer, with its node"
done
gone "$SERVER_PID" && fail "the first server should keep running"
say PASS
