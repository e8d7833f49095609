#!/usr/bin/env python3
"""The operator console (prometheus/consoles/paypipe.html) rendered in headless Chromium, every panel with data.

  console_check.py PROMETHEUS_URL --targets [--timeout SECONDS]
  console_check.py PROMETHEUS_URL --artifacts DIR [--timeout SECONDS] [--chromium BINARY] [--grafana DASHBOARD.json]

--targets waits until Prometheus has scraped every target successfully (bounded by --timeout): the workers' series
start at zero, so what happens after that counts in rate() and increase(). Traffic sent before a (re)started
Prometheus first scrapes a (re)started worker would be the starting value of its series, invisible to them.

1. Waits, polling, until the console has data: the page Prometheus serves has every panel, each with at least one
   value cell (<td class="value" data-query=EXPR>), none in the "nodata" or "idle" state, and every cell's EXPR
   answers on Prometheus' query API with a finite number. Bounded by --timeout (default 300 s): data that never
   comes fails with each missing query named, and nothing is timed otherwise.
2. Renders the page in headless Chromium: --dump-dom (kept as DIR/console.html) and --screenshot (DIR/console.png).
3. Asserts on Chromium's DOM: every panel present, each with a value cell, no cell "no data", "NaN" or "idle", and a
   row for every stage in the stages panel.
With --grafana, step 1 also waits for every query of that Grafana dashboard (its panels' targets) to answer the
same way: the compose stack's dashboard (docker/grafana/dashboards/paypipe.json) asks this Prometheus what the
console asks, and no Grafana runs here.
Exit 0 when all hold, 1 otherwise.
"""
import argparse
import html
import json
import math
import os
import re
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request

PAGE = "/consoles/paypipe.html"
PANELS = ["alerts", "stages", "queues", "failures", "review", "circuits", "webhooks", "certificates"]
STAGES = ["decrypt", "authorize", "submit", "notify", "operations"]
SECTION = re.compile(r'<section class="panel[^"]*" data-panel="([a-z]+)">(.*?)</section>', re.S)
CELL = re.compile(r'<td class="value([^"]*)" data-query="([^"]*)">(.*?)</td>', re.S)
TAG = re.compile(r"<[^>]+>")


def fetch(url, timeout=10):
    with urllib.request.urlopen(url, timeout=timeout) as answer:
        return answer.read().decode()


def panels(page):
    """{panel: [(classes, query, text)]} of one page's HTML."""
    out = {}
    for name, body in SECTION.findall(page):
        out[name] = [(classes.split(), html.unescape(query), html.unescape(TAG.sub("", text)).strip())
                     for classes, query, text in CELL.findall(body)]
    return out


def answers(base, query):
    """Whether QUERY answers on Prometheus' API with at least one sample, all finite numbers."""
    body = json.loads(fetch(f"{base}/api/v1/query?" + urllib.parse.urlencode({"query": query})))
    data = body.get("data", {}) if body.get("status") == "success" else {}
    if data.get("resultType") == "scalar":
        values = [data["result"][1]]
    else:
        values = [sample["value"][1] for sample in data.get("result", [])] if data.get("resultType") == "vector" else []
    return bool(values) and all(math.isfinite(float(value)) for value in values)


def problems_of(found):
    """What keeps a page's panels from all having data."""
    problems = []
    for name in PANELS:
        cells = found.get(name)
        if cells is None:
            problems.append(f"panel {name}: missing")
        elif not cells:
            problems.append(f"panel {name}: no value cell")
        for classes, query, text in cells or []:
            if {"nodata", "idle"} & set(classes) or text.lower() in ("no data", "nan", "idle", "") or "NaN" in text:
                problems.append(f"panel {name}: '{text}' for {query}")
    stage_queries = " ".join(query for _, query, _ in found.get("stages", []))
    problems += [f"panel stages: no row for {stage}" for stage in STAGES if f'stage="{stage}"' not in stage_queries]
    return problems


def grafana_queries(path):
    with open(path) as dashboard:
        return {target["expr"] for panel in json.load(dashboard)["panels"] for target in panel.get("targets", [])}


def wait_for_data(base, timeout, extra_queries=()):
    deadline = time.monotonic() + timeout
    problems = ["the console never answered"]
    while True:
        try:
            found = panels(fetch(base + PAGE))
            problems = problems_of(found)
            queries = {query for cells in found.values() for _, query, _ in cells} | set(extra_queries)
            # A cell already named (no data, idle) is not named again for its query.
            problems += [f"query answers nothing finite: {query}" for query in sorted(queries)
                         if not any(query in problem for problem in problems) and not answers(base, query)]
        except OSError as error:
            problems = [f"{base}{PAGE}: {error}"]
        if not problems or time.monotonic() >= deadline:
            return problems
        time.sleep(2)


def wait_for_targets(base, timeout):
    deadline = time.monotonic() + timeout
    while True:
        try:
            targets = json.loads(fetch(f"{base}/api/v1/targets"))["data"]["activeTargets"]
            waiting = [f"{t['scrapeUrl']} {t['health']}" for t in targets if t["health"] != "up"] if targets else ["no targets"]
        except (OSError, KeyError, ValueError) as error:
            waiting = [f"{base}/api/v1/targets: {error}"]
        if not waiting or time.monotonic() >= deadline:
            return waiting
        time.sleep(1)


def chromium(binary, *arguments):
    with tempfile.TemporaryDirectory() as profile:
        command = [binary, "--headless", "--disable-gpu", "--no-sandbox", "--disable-dev-shm-usage", "--hide-scrollbars",
                   f"--user-data-dir={profile}", *arguments]
        return subprocess.run(command, capture_output=True, text=True, timeout=120, check=True).stdout


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("url")
    parser.add_argument("--targets", action="store_true")
    parser.add_argument("--artifacts")
    parser.add_argument("--timeout", type=float, default=300)
    parser.add_argument("--chromium", default="chromium")
    parser.add_argument("--grafana", metavar="DASHBOARD.json")
    arguments = parser.parse_args()
    if arguments.targets:
        waiting = wait_for_targets(arguments.url.rstrip("/"), arguments.timeout)
        print("console: " + ("every target scraped" if not waiting else "targets not up: " + ", ".join(waiting)))
        return 0 if not waiting else 1
    if not arguments.artifacts:
        parser.error("--artifacts DIR is required")
    base, url = arguments.url.rstrip("/"), arguments.url.rstrip("/") + PAGE
    os.makedirs(arguments.artifacts, exist_ok=True)
    screenshot = os.path.join(arguments.artifacts, "console.png")
    dom_file = os.path.join(arguments.artifacts, "console.html")

    started = time.monotonic()
    extra = grafana_queries(arguments.grafana) if arguments.grafana else set()
    problems = wait_for_data(base, arguments.timeout, extra)
    print(f"console: {url}: " + ("every panel has data" if not problems else "data still missing")
          + (f" (and every query of {arguments.grafana} answers)" if extra and not problems else "")
          + f" after {time.monotonic() - started:.0f}s")
    for problem in problems:
        print(f"  {problem}")

    # Rendered whatever the wait found, so a failure leaves its screenshot too.
    dom = chromium(arguments.chromium, "--dump-dom", url)
    with open(dom_file, "w") as out:
        out.write(dom)
    chromium(arguments.chromium, "--window-size=1400,1500", f"--screenshot={screenshot}", url)
    with open(screenshot, "rb") as image:
        is_png = image.read(8) == b"\x89PNG\r\n\x1a\n"
    rendered = problems_of(panels(dom))
    rendered += [] if is_png else [f"{screenshot} is not a PNG"]
    found = panels(dom)
    print(f"console: Chromium rendered {len(found)} panels, {sum(len(cells) for cells in found.values())} values;"
          f" DOM {dom_file}, screenshot {screenshot}")
    for problem in rendered:
        print(f"  rendered: {problem}")
    ok = not problems and not rendered
    print("console: " + ("OK, every panel has data" if ok else "FAILED"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
