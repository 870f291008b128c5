#!/usr/bin/env python3
"""A stand-in agent for the fault tests: registers a node and heartbeats every INTERVAL seconds, reporting every
replica the server places on the node as running. It starts no process and never fences itself, so a test of the
server's own rules (a server stall, a disruption) sees the server's decisions alone, not an agent's reaction.
Usage: fake_agent.py SERVER_URL NAME JOIN_TOKEN_FILE [INTERVAL]"""
import json
import sys
import time
import urllib.error
import urllib.request


def call(server, path, token, body):
    req = urllib.request.Request(server + path, data=json.dumps(body).encode(), method="POST",
                                 headers={"Authorization": "Bearer " + token, "Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=2) as r:
        return json.loads(r.read() or b"{}")


def main():
    server, name, token_file = sys.argv[1], sys.argv[2], sys.argv[3]
    interval = float(sys.argv[4]) if len(sys.argv) > 4 else 0.2
    token = open(token_file).read().strip()
    body = {"name": name, "instance_type": "ml.g5.8xlarge", "labels": {"network-node-layer-3": "nn-a"},
            "heartbeat_interval_ms": int(interval * 1000)}
    credential = call(server, "/v1/agents/register", token, body)["credential"]
    print(f"fake agent {name}: registered", flush=True)
    running = []
    while True:
        time.sleep(interval)
        try:
            answer = call(server, f"/v1/agents/{name}/heartbeat", credential, {"replicas": running})
        except (urllib.error.URLError, OSError, ValueError) as e:
            print(f"fake agent {name}: heartbeat failed: {e}", flush=True)
            continue
        running = [{"job": a["job"], "rank": a["rank"], "attempt": a["attempt"], "state": "running"}
                   for a in answer.get("run", [])]


if __name__ == "__main__":
    main()
