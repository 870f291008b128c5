#!/usr/bin/python3
"""The dashboard at scale: a server with 1,000 nodes (8 GPUs each, under network nodes and UltraServer blocks,
added through the API) and 50,000 submitted jobs of 20 teams; then headless Chromium opens every page and
measures how long each takes to show, and how long a change takes to appear on an open page (update latency).
Also the JSON endpoints' answer times. Never run by the tests; needs chromium, chromium-driver, python3-selenium
(bash scripts/deps.sh chromium chromium-driver python3-selenium).

Usage: /usr/bin/python3 bench/dashboard_scale.py build/allot [--nodes 1000] [--jobs 50000] [--keep] [--api-only]
"""
import argparse
import http.client
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By


class Api:
    """One keep-alive connection per thread."""

    def __init__(self, url, token):
        u = urllib.parse.urlparse(url)
        self.host, self.port, self.token = u.hostname, u.port, token
        self.local = threading.local()

    def call(self, method, path, body=None):
        conn = getattr(self.local, "conn", None)
        if conn is None:
            conn = self.local.conn = http.client.HTTPConnection(self.host, self.port, timeout=120)
        headers = {"Authorization": "Bearer " + self.token}
        data = None
        if body is not None:
            data = json.dumps(body)
            headers["Content-Type"] = "application/json"
        try:
            conn.request(method, path, body=data, headers=headers)
            r = conn.getresponse()
        except (http.client.HTTPException, OSError):  # the server closed an idle keep-alive connection
            conn = self.local.conn = http.client.HTTPConnection(self.host, self.port, timeout=120)
            conn.request(method, path, body=data, headers=headers)
            r = conn.getresponse()
        text = r.read().decode()
        if r.status >= 300:
            raise RuntimeError(f"{method} {path}: {r.status} {text[:300]}")
        return json.loads(text) if text and text[0] in "[{" else text


def start_server(allot, data):
    log = open(os.path.join(data, "server.log"), "w")
    proc = subprocess.Popen([allot, "server", "--listen", "127.0.0.1:0", "--data", os.path.join(data, "server")],
                            stdout=log, stderr=subprocess.STDOUT)
    for _ in range(200):
        m = re.search(r"http://127\.0\.0\.1:\d+", open(os.path.join(data, "server.log")).read())
        if m:
            token = open(os.path.join(data, "server", "admin-token")).read().strip()
            return proc, m.group(0), token
        time.sleep(0.05)
    proc.kill()
    sys.exit("the server did not start")


def populate(api, nodes, jobs, teams=20):
    sharing = {"strategy": "LendAndBorrow", "borrow_limit": 50}
    per_team = max(1, nodes // teams)
    api.call("POST", "/v1/apply", {
        "policy": {"task_prioritization": "task-ranking",
                   "priority_classes": [{"name": "inference", "weight": 100}, {"name": "training", "weight": 50},
                                        {"name": "batch", "weight": 10}]},
        "teams": [{"name": f"team-{t:02d}", "fair_share_weight": 1 + t % 4,
                   "allocation": [{"instance_type": "ml.p5.48xlarge", "instances": per_team}], "sharing": sharing}
                  for t in range(teams)]})
    t0 = time.time()
    batch = []
    for i in range(nodes):
        batch.append({"name": f"p5-{i:04d}", "instance_type": "ml.p5.48xlarge",
                      "labels": {"network-node-layer-2": f"nn2-{i // 128}", "network-node-layer-3": f"nn3-{i // 32}",
                                 "ultraserver": f"us-{i // 16}"}})
        if len(batch) == 100:
            api.call("POST", "/v1/nodes", batch)
            batch = []
    if batch:
        api.call("POST", "/v1/nodes", batch)
    print(f"nodes     {nodes} added in {time.time() - t0:.1f} s", flush=True)

    classes = ["inference", "training", "training", "batch"]
    sizes = [1, 1, 2, 4, 8, 8, 16, 32]

    def submit(worker, count, threads):
        for k in range(worker, count, threads):
            gpus = sizes[k % len(sizes)]
            replicas, per = (gpus // 8, 8) if gpus > 8 else (1, gpus)
            spec = {"name": f"job-{k:05d}", "team": f"team-{k % teams:02d}", "priority": classes[k % len(classes)],
                    "replicas": replicas, "per_replica": {"accelerators": per}, "command": "sleep 3600"}
            if replicas > 1:
                spec["topology"] = {"preferred": "network-node-layer-3"}
            api.call("POST", "/v1/jobs", spec)

    t0 = time.time()
    threads = [threading.Thread(target=submit, args=(w, jobs, 16)) for w in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    took = time.time() - t0
    print(f"jobs      {jobs} submitted in {took:.1f} s ({jobs / took:.0f}/s)", flush=True)


def timed(fn, repeat=5):
    out = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return statistics.median(out)


def browser():
    opts = webdriver.ChromeOptions()
    for a in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu", "--window-size=1400,1000"):
        opts.add_argument(a)
    opts.binary_location = "/usr/bin/chromium"
    return webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=opts)


def wait(pred, timeout=120):
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < timeout:
        try:
            if pred():
                return time.perf_counter() - t0
        except Exception:
            pass
        time.sleep(0.01)
    raise TimeoutError("timed out")


def page_loads(d, url, token, shots):
    t0 = time.perf_counter()
    d.get(url + "/")
    d.find_element(By.ID, "token").send_keys(token)
    d.find_element(By.CSS_SELECTOR, "#login-form button").click()
    wait(lambda: d.find_element(By.ID, "page").get_attribute("data-page") == "cluster")
    print(f"first load (page, login, cluster page drawn): {time.perf_counter() - t0:.2f} s", flush=True)
    # A full load of each page with the token already in the tab (a reload): from the start of navigation
    # (performance.timeOrigin) to the page drawn with its data, as the page itself notes the time.
    full = {}
    for page in ["cluster", "teams", "queue", "topology", "events", "job/job-00007"]:
        ms = []
        for _ in range(3):
            d.get("about:blank")  # a new document each time: a hash change alone would not load the page again
            d.get(url + "/#/" + page)
            name = page.split("/")[0]
            wait(lambda: d.find_element(By.ID, "page").get_attribute("data-page") == name and
                 d.find_element(By.ID, "page").get_attribute("data-updated"))
            ms.append(d.execute_script("return Number(document.getElementById('page').dataset.updated) - performance.timeOrigin"))
        full[page] = statistics.median(ms)
        print(f"full load {page:20s} {full[page]:7.0f} ms from navigation to drawn (median of 3)", flush=True)
    results = {}
    for page in ["cluster", "teams", "queue", "topology", "events", "job/job-00007", "cluster"]:
        times, drawn = [], []
        for _ in range(3):
            # From the empty Job page (it reads nothing), so each measure starts from a page at rest.
            d.execute_script("location.hash = '#/job'")
            wait(lambda: d.find_element(By.ID, "page").get_attribute("data-page") == "job" and
                 d.find_element(By.ID, "job-form"))
            before = d.find_element(By.ID, "page").get_attribute("data-updated")
            name = page.split("/")[0]
            t0 = time.perf_counter()
            d.execute_script("location.hash = arguments[0]", "#/" + page)
            wait(lambda: d.find_element(By.ID, "page").get_attribute("data-page") == name and
                 d.find_element(By.ID, "page").get_attribute("data-updated") != before)
            times.append(time.perf_counter() - t0)
            drawn.append(int(d.find_element(By.ID, "page").get_attribute("data-loaded-ms")))
        results[page] = (statistics.median(times), statistics.median(drawn))
        d.save_screenshot(os.path.join(shots, page.replace("/", "-") + ".png"))
    return results


def update_latency(d, api):
    """A job submitted through the API, until its submission shows on the open Events page (live, no reload). The
    page itself notes when the job's row is first in the document (a 5 ms check), against the wall clock: reading
    the page through the WebDriver after each change would add its own delay."""
    d.execute_script("location.hash = '#/events'")
    wait(lambda: d.find_element(By.ID, "page").get_attribute("data-page") == "events" and d.find_element(By.ID, "events"))
    out = []
    for i in range(7):
        name = f"probe-{i}"
        d.execute_script("""
            const name = arguments[0];
            window.seenAt = 0;
            const timer = setInterval(() => {
              if (document.querySelector(`#events a[href="#/job/${name}"]`)) { window.seenAt = Date.now(); clearInterval(timer); }
            }, 5);""", name)
        t0 = time.time()
        api.call("POST", "/v1/jobs", {"name": name, "team": "team-00", "replicas": 1, "per_replica": {"accelerators": 1},
                                      "command": "sleep 1"})
        wait(lambda: d.execute_script("return window.seenAt"))
        out.append(d.execute_script("return window.seenAt") / 1000 - t0)
        time.sleep(1.5)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("allot")
    ap.add_argument("--nodes", type=int, default=1000)
    ap.add_argument("--jobs", type=int, default=50000)
    ap.add_argument("--keep", action="store_true", help="keep the data directory")
    ap.add_argument("--api-only", action="store_true", help="the JSON answers only, no browser")
    args = ap.parse_args()
    data = tempfile.mkdtemp(prefix="allot-dashboard-bench.")
    shots = os.path.join(os.path.dirname(os.path.abspath(args.allot)), "bench-artifacts", "dashboard")
    os.makedirs(shots, exist_ok=True)
    proc, url, token = start_server(os.path.abspath(args.allot), data)
    try:
        api = Api(url, token)
        populate(api, args.nodes, args.jobs)
        time.sleep(2)
        c = api.call("GET", "/v1/dashboard/cluster")
        print(f"state     {c['nodes']} nodes, jobs {c['jobs']}", flush=True)
        for path in ["/v1/dashboard/cluster", "/v1/dashboard/teams", "/v1/dashboard/queue?limit=100",
                     "/v1/dashboard/queue?offset=40000&limit=100", "/v1/dashboard/queue?team=team-07&limit=100",
                     "/v1/dashboard/queue?limit=1&job=job-40000", "/v1/dashboard/topology", "/v1/jobs?limit=500",
                     "/v1/jobs?limit=100", "/v1/jobs?state=Running&limit=100",
                     "/v1/jobs?instance_type=ml.p5.48xlarge&state=Running&limit=100", "/v1/jobs?priority=none&limit=100",
                     "/v1/events?since=0", "/metrics"]:
            size = len(json.dumps(api.call("GET", path))) if not path.startswith("/metrics") else len(api.call("GET", path))
            print(f"api       {path:48s} {1000 * timed(lambda: api.call('GET', path)):7.1f} ms (median of 5), {size / 1024:.0f} KiB",
                  flush=True)
        if args.api_only:
            return
        d = browser()
        try:
            for page, (secs, ms) in page_loads(d, url, token, shots).items():
                print(f"page      {page:20s} {1000 * secs:7.0f} ms to show (median of 3; reading and drawing {ms} ms)", flush=True)
            lat = update_latency(d, api)
            print("update    a submitted job on the open events page: " + ", ".join(f"{1000 * x:.0f}" for x in lat) +
                  f" ms; median {1000 * statistics.median(lat):.0f} ms", flush=True)
        finally:
            d.quit()
        print(f"screenshots in {shots}")
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        if not args.keep:
            shutil.rmtree(data, ignore_errors=True)
        else:
            print(f"data kept in {data}")


if __name__ == "__main__":
    main()
