#!/usr/bin/env python3
"""The alert rules against a real Prometheus scraping a running stack (scripts/lib/prometheus.sh, scripts/demo).

  prometheus_check.py PROMETHEUS_URL ALERTS_YML [--timeout SECONDS]

Waits until every scrape target is up, then asserts, for every metric the rules' expressions name (paypipe_*,
rabbitmq_*, up), that Prometheus holds at least one series of it, and that every rule evaluated without error.
A rule on a series nobody exports would never fire: that is what this catches (renamed metrics, a plugin not
enabled, a worker not scraped). Exit 0 when all hold, 1 otherwise (each missing series named).
"""
import argparse
import json
import re
import sys
import time
import urllib.parse
import urllib.request

import yaml

METRIC = re.compile(r"\b(paypipe_[a-z0-9_]+|rabbitmq_[a-z0-9_]+|up)\b")


def api(base, path, **params):
    url = f"{base}/api/v1/{path}" + ("?" + urllib.parse.urlencode(params) if params else "")
    with urllib.request.urlopen(url, timeout=5) as answer:
        body = json.load(answer)
    if body.get("status") != "success":
        raise RuntimeError(f"{path}: {body}")
    return body["data"]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("url")
    parser.add_argument("rules")
    parser.add_argument("--timeout", type=float, default=60)
    arguments = parser.parse_args()

    groups = yaml.safe_load(open(arguments.rules))["groups"]
    rules = [rule for group in groups for rule in group["rules"]]
    metrics = sorted({name for rule in rules for name in METRIC.findall(rule["expr"])})

    deadline = time.monotonic() + arguments.timeout
    targets, rule_health, missing = [], {}, metrics
    while time.monotonic() < deadline:
        try:
            targets = api(arguments.url, "targets")["activeTargets"]
            rule_health = {rule["name"]: (rule.get("health"), rule.get("lastError", ""))
                           for group in api(arguments.url, "rules")["groups"] for rule in group["rules"]}
            missing = [name for name in metrics if not api(arguments.url, "query", query=f"count({name})")["result"]]
        except (OSError, RuntimeError):
            time.sleep(1)
            continue
        down = [t for t in targets if t["health"] != "up"]
        unevaluated = [name for name, (health, _) in rule_health.items() if health != "ok"]
        if targets and not down and not missing and len(rule_health) == len(rules) and not unevaluated:
            break
        time.sleep(1)

    failures = 0
    print(f"prometheus: {len(targets)} targets, {len(rules)} rules, {len(metrics)} metrics used by the rules")
    for target in targets:
        ok = target["health"] == "up"
        failures += not ok
        print(f"  target {target['labels'].get('job', '?'):<18} {target['scrapeUrl']:<48} {target['health']}"
              + ("" if ok else f"  ({target.get('lastError', '')})"))
    for name in metrics:
        ok = name not in missing
        failures += not ok
        print(f"  series {name:<44} {'present' if ok else 'MISSING'}")
    for rule in rules:
        health, error = rule_health.get(rule["alert"], (None, "not loaded"))
        if health != "ok":
            failures += 1
            print(f"  rule   {rule['alert']:<44} {health or 'missing'} {error}")
    print("prometheus: " + ("OK, every series the alert rules use exists" if failures == 0 else f"FAILED ({failures})"))
    return 0 if failures == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
