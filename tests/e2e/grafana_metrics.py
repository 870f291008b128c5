#!/usr/bin/python3
"""deploy/grafana/allot.json against a live server's /metrics. Driven by grafana_metrics_test.sh, which started the
server and an agent whose health checks run: this script gives it teams, nodes and jobs so that every series has
a sample (a borrowing team, a reclaim, a waiting job), reads /metrics and checks:

- the dashboard is well-formed (each panel has a data source and queries);
- every metric it queries is in /metrics;
- `promtool check metrics` (Prometheus's own linter) finds nothing wrong with /metrics;
- no query adds instance types together: an aggregation (sum, avg, count, ...) over a metric that has an
  `instance_type` label keeps it (`by (..., instance_type)`, never `without (instance_type)` or no clause), and
  no `on (...)`/`ignoring (...)` match drops it;
- every panel follows the selectors: each metric with a `team` label is selected with team=~"$team", each with an
  `instance_type` label with instance_type=~"$instance_type".
The checker is first shown queries it must refuse (the old "Accelerators by state" among them), so that it
cannot pass by checking nothing.

Environment: ALLOT_SERVER, ALLOT_TOKEN (admin), DASHBOARD (the JSON file), PROMTOOL (its path).
"""
import json
import os
import re
import subprocess
import sys
import time
import urllib.request

SERVER = os.environ["ALLOT_SERVER"]
TOKEN = os.environ["ALLOT_TOKEN"]
AGGREGATIONS = ("sum", "avg", "count", "min", "max", "group", "stddev", "stdvar", "topk", "bottomk", "quantile", "count_values")
SELECTORS = {"team": 'team=~"$team"', "instance_type": 'instance_type=~"$instance_type"'}


def call(method, path, body=None):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(SERVER + path, data=data, method=method,
                                 headers={"Authorization": "Bearer " + TOKEN, "Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as r:
        return r.read().decode()


def job(name, team, priority, replicas):
    return {"name": name, "team": team, "priority": priority, "replicas": replicas,
            "per_replica": {"accelerators": 1}, "command": "sleep 600"}


def labels_by_metric(text):
    """Metric name -> the label names its series carry (histogram series under their family's name too)."""
    out = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = re.match(r"([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*?)\})? ", line)
        names = set(re.findall(r'([a-zA-Z_][a-zA-Z0-9_]*)="', m.group(3) or "")) - {"le"}
        out.setdefault(m.group(1), set()).update(names)
        family = re.sub(r"_(bucket|sum|count)$", "", m.group(1))
        if family != m.group(1):
            out.setdefault(family, set()).update(names)
    return out


def closing(expr, i):
    """The index of the parenthesis that closes the one at expr[i]."""
    depth = 0
    for j in range(i, len(expr)):
        if expr[j] == "(":
            depth += 1
        elif expr[j] == ")":
            depth -= 1
            if depth == 0:
                return j
    raise ValueError(f"unbalanced parentheses in {expr!r}")


def problems(expr, labels):
    """What is wrong with one query: instance types added together, or a selector not followed."""
    out = []
    metrics = lambda text: [m for m in re.findall(r"\ballot_[a-z0-9_]+", text) if m in labels]
    # Aggregations: `op by (l) (arg)`, `op (arg) by (l)`, `op without (l) (arg)`, `op (arg)`.
    for m in re.finditer(r"\b(" + "|".join(AGGREGATIONS) + r")\s*(?:(by|without)\s*\(([^()]*)\))?\s*\(", expr):
        op, clause, grouping = m.group(1), m.group(2), m.group(3)
        start = m.end() - 1
        end = closing(expr, start)
        arg = expr[start:end + 1]
        if clause is None:  # a clause may follow the argument
            after = re.match(r"\s*(by|without)\s*\(([^()]*)\)", expr[end + 1:])
            if after:
                clause, grouping = after.group(1), after.group(2)
        kept = {g.strip() for g in (grouping or "").split(",") if g.strip()}
        for metric in metrics(arg):
            if "instance_type" not in labels[metric]:
                continue
            if clause is None or (clause == "by" and "instance_type" not in kept) or (clause == "without" and "instance_type" in kept):
                out.append(f"{op} over {metric} adds instance types together")
    for m in re.finditer(r"\b(on|ignoring)\s*\(([^()]*)\)", expr):
        kept = {g.strip() for g in m.group(2).split(",")}
        if (m.group(1) == "on") != ("instance_type" in kept) and any("instance_type" in labels[x] for x in metrics(expr)):
            out.append(f"{m.group(0)} drops instance_type")
    # Selectors: each metric with a team or instance_type label is selected by the dashboard's variable.
    for m in re.finditer(r"\b(allot_[a-z0-9_]+)(\{([^}]*)\})?", expr):
        metric, matchers = m.group(1), m.group(3) or ""
        if metric not in labels:
            continue
        for label, wanted in SELECTORS.items():
            if label in labels[metric] and wanted not in matchers:
                out.append(f"{metric} does not follow the {label} selector ({wanted})")
    return out


def self_test(labels):
    bad = [
        'sum by (state) (allot_accelerators{instance_type=~"$instance_type"})',  # the old "Accelerators by state"
        'sum(allot_usage{team=~"$team",instance_type=~"$instance_type"})',
        'sum without (instance_type) (allot_quota{team=~"$team",instance_type=~"$instance_type"})',
        'sum(allot_lent{team=~"$team",instance_type=~"$instance_type"}) by (team)',
        'sum by (team, instance_type) (allot_usage{instance_type=~"$instance_type"})',  # no team selector
        'allot_goodput_ratio',
    ]
    for e in bad:
        assert problems(e, labels), f"the checker must refuse {e}"
    good = 'sum by (team, instance_type) (allot_usage{team=~"$team",instance_type=~"$instance_type"})'
    assert not problems(good, labels), problems(good, labels)


def main():
    dash = json.load(open(os.environ["DASHBOARD"]))
    assert dash.get("uid") and dash.get("title") and dash.get("panels"), "the dashboard has a uid, a title and panels"
    queries = []
    for p in dash["panels"]:
        assert p.get("datasource") and p.get("targets"), f"panel {p.get('title')} has a data source and queries"
        queries += [(p["title"], t["expr"]) for t in p["targets"]]
    exprs = [e for _, e in queries]
    for v in dash.get("templating", {}).get("list", []):
        if v.get("type") == "query":
            exprs.append(v["definition"])
    wanted = sorted({m for e in exprs for m in re.findall(r"\ballot_[a-z0-9_]+", e)})
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
    deadline = time.time() + 30
    while True:  # the agent's health checks report with its heartbeats
        text = call("GET", "/metrics")
        if "allot_node_check_status{" in text or time.time() > deadline:
            break
        time.sleep(0.3)
    present = {line.split("{")[0].split(" ")[0] for line in text.splitlines() if line and not line.startswith("#")}
    missing = [m for m in wanted if m not in present and m + "_bucket" not in present]
    if missing:
        print("grafana_metrics: FAIL: the dashboard queries metrics /metrics does not have: " + ", ".join(missing))
        print(text)
        sys.exit(1)
    print(f"grafana_metrics: all {len(wanted)} metrics the dashboard queries are in /metrics: {', '.join(wanted)}")

    lint = subprocess.run([os.environ["PROMTOOL"], "check", "metrics"], input=text, capture_output=True, text=True, timeout=60)
    if lint.returncode != 0 or lint.stdout.strip() or lint.stderr.strip():
        print(f"grafana_metrics: FAIL: promtool check metrics (exit {lint.returncode}):\n{lint.stdout}{lint.stderr}")
        sys.exit(1)
    print(f"grafana_metrics: promtool check metrics passes ({len(text.splitlines())} lines)")

    labels = labels_by_metric(text)
    self_test(labels)
    bad = [f"{title}: {e}: {why}" for title, e in queries for why in problems(e, labels)]
    if bad:
        print("grafana_metrics: FAIL: panels add instance types together or do not follow the selectors:\n  " + "\n  ".join(bad))
        sys.exit(1)
    print(f"grafana_metrics: none of {len(queries)} queries adds instance types together; every one follows the selectors its metrics have")


if __name__ == "__main__":
    main()
