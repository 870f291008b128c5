#!/usr/bin/python3
"""Every metric that deploy/grafana/allot.json queries exists in a live server's /metrics, and the dashboard is
well-formed (each panel has a data source and queries). Driven by grafana_metrics_test.sh, which started the
server: this script gives it teams, nodes and jobs so that every series has a sample (a borrowing team, a reclaim,
a waiting job), then reads /metrics.

Environment: ALLOT_SERVER, ALLOT_TOKEN (admin), DASHBOARD (the JSON file).
"""
import json
import os
import re
import sys
import time
import urllib.request

SERVER = os.environ["ALLOT_SERVER"]
TOKEN = os.environ["ALLOT_TOKEN"]


def call(method, path, body=None):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(SERVER + path, data=data, method=method,
                                 headers={"Authorization": "Bearer " + TOKEN, "Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as r:
        return r.read().decode()


def job(name, team, priority, replicas):
    return {"name": name, "team": team, "priority": priority, "replicas": replicas,
            "per_replica": {"accelerators": 1}, "command": "sleep 600"}


def main():
    dash = json.load(open(os.environ["DASHBOARD"]))
    assert dash.get("uid") and dash.get("title") and dash.get("panels"), "the dashboard has a uid, a title and panels"
    exprs = []
    for p in dash["panels"]:
        assert p.get("datasource") and p.get("targets"), f"panel {p.get('title')} has a data source and queries"
        exprs += [t["expr"] for t in p["targets"]]
    for v in dash.get("templating", {}).get("list", []):
        if v.get("type") == "query":
            exprs.append(v["definition"])
    wanted = sorted({m for e in exprs for m in re.findall(r"\ballot_[a-z_]+", e)})
    assert len(wanted) >= 10, f"the dashboard queries allot's metrics: {wanted}"

    sharing = {"strategy": "LendAndBorrow", "borrow_limit": 100}
    call("POST", "/v1/apply", {
        "policy": {"task_prioritization": "task-ranking",
                   "priority_classes": [{"name": "high", "weight": 90}, {"name": "low", "weight": 10}]},
        "teams": [{"name": "a", "allocation": [{"instance_type": "ml.g5.8xlarge", "instances": 1}], "sharing": sharing},
                  {"name": "b", "allocation": [{"instance_type": "ml.g5.8xlarge", "instances": 1}], "sharing": sharing}]})
    call("POST", "/v1/nodes", [{"name": "s[1-2]", "instance_type": "ml.g5.8xlarge"}])
    call("POST", "/v1/jobs", job("a-wide", "a", "low", 2))   # borrows b's GPU
    call("POST", "/v1/jobs", job("b-back", "b", "high", 1))  # reclaims it: a-wide is preempted and waits
    call("PUT", "/v1/nodes/s2/health", {"health": "UnschedulablePendingReboot"})
    time.sleep(0.5)
    text = call("GET", "/metrics")
    present = {line.split("{")[0].split(" ")[0] for line in text.splitlines() if line and not line.startswith("#")}
    missing = [m for m in wanted if m not in present]
    if missing:
        print("grafana_metrics: FAIL: the dashboard queries metrics /metrics does not have: " + ", ".join(missing))
        print(text)
        sys.exit(1)
    print(f"grafana_metrics: all {len(wanted)} metrics the dashboard queries are in /metrics: {', '.join(wanted)}")


if __name__ == "__main__":
    main()
