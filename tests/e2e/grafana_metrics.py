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
  `instance_type` label with instance_type=~"$instance_type"; a panel references exactly the selectors its
  metrics have labels for, every panel that follows neither says "cluster-wide" in its title, and the panels
  with both labels include the decisions by rule and the submission-to-admission latency;
- the decision counters and the latency histogram carry the real team and instance type of each job;
- a real Prometheus (Debian's `prometheus`), scraping the server every second, answers every panel's queries:
  with the selectors at "All" each returns data; with a team or an instance type that does not exist, every query
  of a panel that follows that selector returns nothing (it filters), and with team "a" and the type the jobs ran
  on, the decisions panel shows team a's borrowing admission and reclaim, and not team b's admission.
The checker is first shown queries it must refuse (the old "Accelerators by state" among them), so that it
cannot pass by checking nothing.

Environment: ALLOT_SERVER, ALLOT_TOKEN (admin), DASHBOARD (the JSON file), PROMTOOL and PROMETHEUS (their
paths), WORK (a scratch directory).
"""
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.parse
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


class Prometheus:
    """A Prometheus of its own, scraping the server every second with the admin token (in a file, as
    deploy/prometheus/prometheus.yml has it), its data in WORK."""

    def __init__(self):
        work = os.path.join(os.environ["WORK"], "prometheus")
        os.makedirs(work, exist_ok=True)
        token = os.path.join(work, "token")
        with open(token, "w") as f:
            f.write(TOKEN)
        target = urllib.parse.urlparse(SERVER).netloc
        config = os.path.join(work, "prometheus.yml")
        with open(config, "w") as f:
            f.write(f"""global:
  scrape_interval: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: allot
    metrics_path: /metrics
    scheme: http
    authorization:
      type: Bearer
      credentials_file: {token}
    static_configs:
      - targets: ["{target}"]
""")
        with socket.socket() as sock:  # a free port, for Prometheus's own listener
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{port}"
        self.log = open(os.path.join(work, "prometheus.log"), "w")
        self.proc = subprocess.Popen([os.environ["PROMETHEUS"], f"--config.file={config}", f"--storage.tsdb.path={work}/data",
                                      f"--web.listen-address=127.0.0.1:{port}"], stdout=self.log, stderr=subprocess.STDOUT)
        with open(os.path.join(work, "pid"), "w") as f:  # for the test's cleanup, whatever becomes of this script
            f.write(str(self.proc.pid))
        self.wait("Prometheus to scrape the server", lambda: self.query('up{job="allot"} == 1'))

    def query(self, expr):
        url = self.url + "/api/v1/query?" + urllib.parse.urlencode({"query": expr})
        try:
            with urllib.request.urlopen(url, timeout=10) as r:
                body = json.loads(r.read().decode())
        except OSError:
            return None  # not listening yet
        assert body["status"] == "success", f"Prometheus refused {expr}: {body}"
        return body["data"]["result"]

    def wait(self, what, check, limit=60):
        deadline = time.time() + limit
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"Prometheus exited ({self.proc.returncode}); see its log in WORK/prometheus")
            if check():
                return
            time.sleep(0.3)
        raise AssertionError(f"timed out after {limit}s waiting for {what}")

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def with_selection(expr, team, instance_type):
    return expr.replace("$team", team).replace("$instance_type", instance_type)


def evaluate_panels(prom, dash, follows):
    """Every panel's queries against the scraped series: data with everything selected, nothing for a team or an
    instance type that does not exist (for the selectors the panel follows)."""
    bad = []
    for p in dash["panels"]:
        for t in p["targets"]:
            everything = prom.query(with_selection(t["expr"], ".*", ".*"))
            if not everything:
                bad.append(f"{p['title']}: {t['expr']} returns no data with every team and type selected")
            for label in follows[p["title"]]:
                none = prom.query(with_selection(t["expr"], "no-such-team" if label == "team" else ".*",
                                                 "no-such-type" if label == "instance_type" else ".*"))
                if none:
                    bad.append(f"{p['title']}: {t['expr']} returns data for a {label} that does not exist: {none}")
    return bad


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


# Panels that must follow both selectors (their metrics have both labels): the decisions by rule and the
# submission-to-admission latency among them, which once had neither label.
BOTH = {
    "Usage against quota (accelerators)",
    "Borrowed and lent (accelerators)",
    "Admissions and preemptions by rule and instance type (per minute)",
    "Submission to first admission (per instance type)",
    # The panels over teams' jobs (issue 30, item 10).
    "Queue length",
    "Waiting jobs by reason",
    "Queue wait p90 (admitted jobs)",
    "Jobs by state",
    "Goodput",
    "Restarts (per hour)",
    "Work lost (accelerators)",
}


def panel_selectors(title, exprs, labels):
    """What is wrong with one panel: a selector its metrics have a label for and a query does not reference, a
    selector referenced for a label none of its metrics has, or a panel that follows none without saying so."""
    out = []
    metrics = {m for e in exprs for m in re.findall(r"\ballot_[a-z0-9_]+", e) if m in labels}
    have = {label for label in SELECTORS if any(label in labels[m] for m in metrics)}
    for label, wanted in SELECTORS.items():
        used = [wanted in e for e in exprs]
        if label in have and not all(used):
            out.append(f"its metrics have `{label}` but not every query follows the {label} selector")
        if label not in have and any(used):
            out.append(f"it selects `{label}`, which none of its metrics ({', '.join(sorted(metrics))}) has")
    if not have and "cluster-wide" not in title:
        out.append("it follows neither selector and its title does not say cluster-wide")
    if title in BOTH and have != set(SELECTORS):
        out.append(f"it must follow both selectors; its metrics have only {sorted(have)}")
    return out, have


def self_test(labels):
    bad = [
        'sum by (state) (allot_accelerators{instance_type=~"$instance_type"})',  # the old "Accelerators by state"
        'sum(allot_usage{team=~"$team",instance_type=~"$instance_type"})',
        'sum without (instance_type) (allot_quota{team=~"$team",instance_type=~"$instance_type"})',
        'sum(allot_lent{team=~"$team",instance_type=~"$instance_type"}) by (team)',
        'sum by (team, instance_type) (allot_usage{instance_type=~"$instance_type"})',  # no team selector
        'allot_goodput_ratio',
        # The decisions by rule and the latency as they were, before their metrics had team and instance_type.
        '60 * sum by (rule) (rate(allot_admissions_by_rule_total[5m]))',
        'histogram_quantile(0.5, sum by (le) (rate(allot_scheduling_latency_seconds_bucket{team=~"$team",instance_type=~"$instance_type"}[1h])))',
        '60 * sum by (rule, instance_type) (rate(allot_preemptions_by_rule_total{instance_type=~"$instance_type"}[5m]))',
    ]
    for e in bad:
        assert problems(e, labels), f"the checker must refuse {e}"
    good = 'sum by (team, instance_type) (allot_usage{team=~"$team",instance_type=~"$instance_type"})'
    assert not problems(good, labels), problems(good, labels)
    old_panel = ["60 * sum by (rule) (rate(allot_admissions_by_rule_total[5m]))"]
    assert panel_selectors("Admissions and preemptions by rule (per minute, cluster-wide)", old_panel, labels)[0], \
        "the checker must refuse a panel whose metrics have selectors it does not follow"
    assert panel_selectors("Nodes by health", ['sum by (instance_type, health) (allot_nodes_by_type{team=~"$team",instance_type=~"$instance_type"})'], labels)[0], \
        "the checker must refuse a selector for a label the metric does not have"
    # The per-team job panels as they were, before their metrics had instance_type: they must follow it now.
    for title, old in [("Goodput", 'allot_goodput_ratio{team=~"$team"}'),
                       ("Queue length", 'sum by (team, priority) (allot_queue_length{team=~"$team"})'),
                       ("Jobs by state", 'sum by (state) (allot_jobs{team=~"$team"})')]:
        assert panel_selectors(title, [old], labels)[0], f"the checker must refuse the old {title} panel"
    assert panel_selectors("Scheduler pass duration", ["histogram_quantile(0.5, sum by (le) (rate(allot_scheduler_pass_seconds_bucket[5m])))"], labels)[0], \
        "the checker must refuse a panel that follows no selector without saying it is cluster-wide"


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

    prom = Prometheus()
    try:
        check(dash, queries, wanted, prom)
    finally:
        prom.stop()


def check(dash, queries, wanted, prom):
    sharing = {"strategy": "LendAndBorrow", "borrow_limit": 100}
    call("POST", "/v1/apply", {
        "policy": {"task_prioritization": "task-ranking",
                   "priority_classes": [{"name": "high", "weight": 90}, {"name": "low", "weight": 10}]},
        "teams": [{"name": "a", "allocation": [{"instance_type": "ml.g5.8xlarge", "instances": 1}], "sharing": sharing},
                  {"name": "b", "allocation": [{"instance_type": "ml.g5.8xlarge", "instances": 1}], "sharing": sharing}]})
    call("POST", "/v1/nodes", [{"name": "s[1-2]", "instance_type": "ml.g5.8xlarge"}])
    # Two scrapes of the decision counters at 0 before the decisions, so that their rates see them.
    prom.wait("two scrapes of the teams' counters", lambda: prom.query(
        'count_over_time(allot_admissions_by_rule_total{team="b",rule="within-nominal"}[1m]) >= 2'))
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

    panels, follows = [], {}
    for p in dash["panels"]:
        exprs = [t["expr"] for t in p["targets"]]
        why, have = panel_selectors(p["title"], exprs, labels)
        panels += [f"{p['title']}: {w}" for w in why]
        follows[p["title"]] = have
    missing_both = BOTH - set(follows)
    if panels or missing_both:
        print("grafana_metrics: FAIL: panels and their selectors:\n  " + "\n  ".join(panels + [f"no panel {t!r}" for t in sorted(missing_both)]))
        sys.exit(1)
    for title, have in follows.items():
        print(f"grafana_metrics:   {title}: follows {' and '.join(sorted(have)) or 'neither (cluster-wide)'}")

    # The new labels hold the real team and instance type: a-wide (team a) was admitted borrowing on
    # ml.g5.8xlarge and reclaimed; b-back (team b) admitted within its quota there.
    series = {line.rsplit(" ", 1)[0]: float(line.rsplit(" ", 1)[1]) for line in text.splitlines() if line and not line.startswith("#")}
    for name, want in [
            ('allot_admissions_by_rule_total{rule="borrowing",team="a",instance_type="ml.g5.8xlarge"}', 1),
            ('allot_admissions_by_rule_total{rule="within-nominal",team="b",instance_type="ml.g5.8xlarge"}', 1),
            ('allot_preemptions_by_rule_total{rule="reclaim",team="a",instance_type="ml.g5.8xlarge"}', 1),
            ('allot_preemptions_by_rule_total{rule="reclaim",team="b",instance_type="ml.g5.8xlarge"}', 0),
            ('allot_scheduling_latency_seconds_count{team="a",instance_type="ml.g5.8xlarge"}', 1),
            ('allot_scheduling_latency_seconds_count{team="b",instance_type="ml.g5.8xlarge"}', 1)]:
        if series.get(name) != want:
            print(f"grafana_metrics: FAIL: {name} is {series.get(name)}, not {want}")
            sys.exit(1)
    print("grafana_metrics: decisions by rule and the submission-to-admission latency carry each job's team and instance type")

    # Prometheus has scraped the decisions; a few more scrapes (one a second) and every rate sees them.
    prom.wait("a scrape after the reclaim", lambda: prom.query('allot_preemptions_by_rule_total{rule="reclaim",team="a"} == 1'))
    time.sleep(3)
    bad = evaluate_panels(prom, dash, follows)
    if bad:
        print("grafana_metrics: FAIL: Prometheus's answers to the panels' queries:\n  " + "\n  ".join(bad))
        sys.exit(1)
    print(f"grafana_metrics: Prometheus answers all {len(queries)} queries with data, and nothing for a team or type that does not exist")
    decisions = next(p for p in dash["panels"] if p["title"] == "Admissions and preemptions by rule and instance type (per minute)")
    def rates(expr, team):
        return {(r["metric"]["rule"], r["metric"]["instance_type"]): float(r["value"][1])
                for r in prom.query(with_selection(expr, team, "ml[.]g5[.]8xlarge"))}
    admit_a, preempt_a = (rates(t["expr"], "a") for t in decisions["targets"])
    admit_b = rates(decisions["targets"][0]["expr"], "b")
    assert admit_a.get(("borrowing", "ml.g5.8xlarge"), 0) > 0 and admit_a.get(("within-nominal", "ml.g5.8xlarge")) == 0, admit_a
    assert preempt_a.get(("reclaim", "ml.g5.8xlarge"), 0) > 0, preempt_a
    assert admit_b.get(("within-nominal", "ml.g5.8xlarge"), 0) > 0 and admit_b.get(("borrowing", "ml.g5.8xlarge")) == 0, admit_b
    print(f"grafana_metrics: the decisions panel for team a: admissions {admit_a}, preemptions {preempt_a}; for team b: {admit_b}")


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))  # `timeout` ends the script: Prometheus is stopped too
    main()
