#!/usr/bin/env python3
"""The cost budget (scripts/bench --only cost): what one payment and one operation cost the parts that do not scale out,
PostgreSQL and RabbitMQ, in counters that are the same on every machine for the same run. scripts/lib/bench_cost.sh
drives the run; this file reads the counters, plans the operations, reports and guards.

  bench_cost.py prepare DBURL                       the measured database: pg_stat_statements on, autovacuum off
  bench_cost.py finish DBURL                        autovacuum back on (ALTER SYSTEM RESET)
  bench_cost.py checkpoint DBURL                    CHECKPOINT (from the postgres database), before every measured stage
  bench_cost.py snapshot DBURL PROMETHEUS OUT       every counter, into OUT (JSON)
  bench_cost.py wait-acked PROMETHEUS BEFORE N      until N deliveries were acknowledged since snapshot BEFORE
  bench_cost.py wait-backends DBURL                 until no session of the measured database is left (their statistics
                                                    are flushed when they end)
  bench_cost.py backend-cpu DBURL                   CPU seconds (utime + stime) of the measured database's sessions
  bench_cost.py publish-operations AMQPURL DBURL OUT.jsonl   the operations, planned from the authorised payments
  bench_cost.py report DIR OUT.json [--doc FILE]    per payment / per operation figures, the table; the doc section
  bench_cost.py check RESULT BASELINE               fails (exit 1) when a guarded counter rose by more than 5 %
  bench_cost.py update-baseline RESULT BASELINE     records RESULT's guarded counters as the baseline
  bench_cost.py waldump DBURL WALDIR BEFORE AFTER OUT   WAL bytes per relation between two snapshots (pg_waldump)
  bench_cost.py compare RESULT RESULT               two runs' counters side by side (exit 1 if any differs by > 1 %)

Python 3 and psycopg (PyPI, scripts/bootstrap); pika for the operations.
"""
import datetime
import glob
import json
import os
import re
import sys
import time
import urllib.request

import psycopg

# Every statement of the snapshot carries this marker, so its own pg_stat_statements entries are left out.
PROBE = "/* paypipe-cost-probe */"
# Guarded counters (per payment in the payments phase, per operation in the operations phase): a rise beyond the
# margin fails, a fall passes. They do not depend on the machine or its load.
GUARDED = ("statements", "commits", "walBytes", "messages")
MARGIN = 0.05


def connect(url, dbname=None):
    kwargs = {"autocommit": True}
    if dbname:
        kwargs["dbname"] = dbname
    return psycopg.connect(url, **kwargs)


def database_name(url):
    with connect(url) as c:
        return c.execute("SELECT current_database()").fetchone()[0]


# ------------------------------------------------------------------------------------------------------- prepare
def prepare(url):
    name = database_name(url)
    with connect(url) as c:
        loaded = c.execute("SHOW shared_preload_libraries").fetchone()[0]
        if "pg_stat_statements" not in loaded:
            sys.exit("bench_cost: PostgreSQL runs without pg_stat_statements preloaded (a server started by an older "
                     "scripts/services): run `scripts/services restart postgres` first")
        # The baseline's WAL bytes were counted with compressed full-page images (docs/scaling.md, "PostgreSQL settings
        # for the primary"); without them every stage's images would be counted at full size.
        compression = c.execute("SHOW wal_compression").fetchone()[0]
        if compression != "lz4":
            sys.exit(f"bench_cost: PostgreSQL runs with wal_compression = {compression}, the baseline with lz4 (a server "
                     "started by an older scripts/services): run `scripts/services restart postgres` first")
        c.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
        # Sessions opened from now on count their top-level statements (scripts/services tracks none elsewhere).
        c.execute(f"ALTER DATABASE {name} SET pg_stat_statements.track = 'top'")
        # Autovacuum and autoanalyze start when their thresholds are crossed and a worker is free: timing, not the
        # workload. Off for this database's tables, so the WAL and the rows counted are the pipeline's alone.
        for (table,) in c.execute("SELECT format('%I.%I', schemaname, relname) FROM pg_stat_user_tables").fetchall():
            c.execute(f"ALTER TABLE {table} SET (autovacuum_enabled = false, toast.autovacuum_enabled = false)")
        # The system catalogs cannot be excluded per table, and the migration left them enough dead rows for autovacuum
        # to start on pg_statistic or pg_class inside the first stage in one run of two (4 transactions, ~100 kB of
        # WAL): vacuumed and analysed now, and autovacuum off for the server until `finish` (scripts/bench calls it on
        # every exit). Snapshots count autovacuum runs anyway, and
        # the guard says when one happened inside a stage.
        c.execute("VACUUM (ANALYZE)")
        c.execute("ALTER SYSTEM SET autovacuum = off")
        c.execute("SELECT pg_reload_conf()")


def finish(url):
    """Autovacuum back to the server's configuration (prepare turned it off for the run)."""
    with connect(url, "postgres") as c:
        c.execute("ALTER SYSTEM RESET autovacuum")
        c.execute("SELECT pg_reload_conf()")


def checkpoint(url):
    with connect(url, "postgres") as c:
        c.execute("CHECKPOINT")


# ------------------------------------------------------------------------------------------------------ snapshot
def prometheus_counters(url):
    counters = {}
    for line in urllib.request.urlopen(f"{url}/metrics", timeout=30).read().decode().splitlines():
        m = re.match(r'rabbitmq_global_messages_([a-z_]+)_total(\{[^}]*\})? ([0-9.e+]+)$', line)
        if m:
            counters[m[1]] = counters.get(m[1], 0) + float(m[3])
    return counters


def prometheus(url):
    """RabbitMQ's counters: the global message counters of the Prometheus endpoint (live, and kept when channels
    close), and each queue's depth from rabbitmqctl (the endpoint's queue gauges lag by its statistics interval)."""
    import subprocess
    counters, depth = prometheus_counters(url), {}
    services = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "services")
    listing = subprocess.run([services, "rabbitmqctl", "list_queues", "-q", "name", "messages"], check=True,
                             capture_output=True, text=True, timeout=120).stdout
    for line in listing.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0].startswith("paypipe.") and parts[1].isdigit():
            depth[parts[0]] = int(parts[1])
    return {"counters": counters, "queueDepth": depth}


def snapshot(url, rabbit, out):
    with connect(url) as c:
        # First, before any statement of this session could have been counted: the database's transactions.
        xact = c.execute(f"{PROBE} SELECT xact_commit, xact_rollback FROM pg_stat_database WHERE datname = current_database()").fetchone()
        oid = c.execute(f"{PROBE} SELECT oid FROM pg_database WHERE datname = current_database()").fetchone()[0]
        lsn = c.execute(f"{PROBE} SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::bigint").fetchone()[0]
        wal = c.execute(f"{PROBE} SELECT wal_records, wal_fpi, wal_bytes::bigint FROM pg_stat_wal").fetchone()
        checkpoints = c.execute(f"{PROBE} SELECT checkpoints_timed + checkpoints_req FROM pg_stat_bgwriter").fetchone()[0]
        autovacuum = c.execute(f"{PROBE} SELECT coalesce(sum(autovacuum_count + autoanalyze_count), 0)::bigint "
                               "FROM pg_stat_all_tables").fetchone()[0]
        tables = {r[0]: {"inserted": r[1], "updated": r[2], "hotUpdated": r[3], "deleted": r[4]} for r in c.execute(
            f"{PROBE} SELECT relname, n_tup_ins, n_tup_upd, n_tup_hot_upd, n_tup_del FROM pg_stat_user_tables").fetchall()}
        statements = {}
        for queryid, toplevel, calls, rows, query, ms in c.execute(
                f"{PROBE} SELECT queryid, toplevel, calls, rows, query, total_exec_time FROM pg_stat_statements WHERE dbid = %s",
                (oid,)).fetchall():
            if PROBE in query:
                continue
            statements[f"{queryid}:{toplevel}"] = {"calls": calls, "rows": rows, "query": query, "execMs": ms}
        probe_statements = 8  # the autocommit statements above, each one transaction (subtracted from the next delta)
    json.dump({"xactCommit": xact[0], "xactRollback": xact[1], "walLsn": lsn, "walRecords": wal[0], "walFpi": wal[1],
               "walBytesStat": wal[2], "checkpoints": checkpoints, "autovacuumRuns": autovacuum, "tables": tables, "statements": statements,
               "probeTransactions": probe_statements, "rabbitmq": prometheus(rabbit), "at": time.time()}, open(out, "w"))


def wait_acked(rabbit, before_path, expected, timeout=900):
    """Until the broker has had `expected` acknowledgements since the snapshot BEFORE_PATH: the one worker running
    acks each delivery after its commit and its hand-offs' confirms, so then its stage is done. The broker's global
    counters are live; its queue depths (rabbitmqctl, the Prometheus queue gauges) lag by a statistics interval and
    could read empty early."""
    start = json.load(open(before_path))["rabbitmq"]["counters"].get("acknowledged", 0)
    expected, deadline = int(expected), time.time() + timeout
    while time.time() < deadline:
        acked = prometheus_counters(rabbit).get("acknowledged", 0) - start
        if acked >= expected:
            return 0
        time.sleep(0.5)
    sys.exit(f"bench_cost: {acked:.0f} of {expected} deliveries acknowledged after {timeout} s")


def wait_backends(url, timeout=60):
    name = database_name(url)
    deadline = time.time() + timeout
    with connect(url, "postgres") as c:
        while time.time() < deadline:
            left = c.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = %s AND backend_type = 'client backend'",
                             (name,)).fetchone()[0]
            if left == 0:
                return
            time.sleep(0.1)
    sys.exit(f"bench_cost: sessions of {name} still open after {timeout} s")


def backend_cpu(url):
    name = database_name(url)
    with connect(url, "postgres") as c:
        pids = [r[0] for r in c.execute("SELECT pid FROM pg_stat_activity WHERE datname = %s AND backend_type = 'client backend' "
                                        "AND pid <> pg_backend_pid()", (name,)).fetchall()]
    print(round(sum(process_cpu(pid) for pid in pids), 3))


def process_cpu(pid):
    try:
        fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return 0.0


def lsn_text(value):
    return f"{value >> 32:X}/{value & 0xFFFFFFFF:X}"


def waldump(url, wal_dir, before_path, after_path, out):
    """Where a stage's WAL bytes went, per relation: pg_waldump over the stage's LSN range (run before the next
    CHECKPOINT may recycle the segments), each record's total length counted against its first block's relation
    (records without one: by resource manager). Reported, not guarded; skipped where pg_waldump cannot read the WAL."""
    import shutil
    import subprocess
    before, after = json.load(open(before_path))["walLsn"], json.load(open(after_path))["walLsn"]
    binary = shutil.which("pg_waldump") or next(iter(sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_waldump"))[-1:]), None)
    if not binary or after <= before:
        return
    run = subprocess.run([binary, "-p", wal_dir, "-s", lsn_text(before), "-e", lsn_text(after)],
                         capture_output=True, text=True)
    with connect(url) as c:
        names = {str(r[0]): r[1] for r in c.execute(f"{PROBE} SELECT pg_relation_filenode(oid), relname FROM pg_class "
                                                    "WHERE pg_relation_filenode(oid) IS NOT NULL").fetchall()}
    per, fpi, fpi_bytes = {}, {}, {}
    for line in run.stdout.splitlines():
        m = re.match(r"rmgr: (\S+)\s+len \(rec/tot\):\s*(\d+)/\s*(\d+),.*?desc: (.*)$", line)
        if not m:
            continue
        rel = re.search(r"blkref #0: rel \d+/\d+/(\d+)", m[4])
        key = names.get(rel[1], f"relfilenode {rel[1]}") if rel else f"({m[1]})"
        per[key] = per.get(key, 0) + int(m[3])
        if "FPW" in m[4]:
            fpi[key] = fpi.get(key, 0) + 1
            # tot − rec: the record's block images (pg_waldump's rec excludes them), compressed if wal_compression is on.
            fpi_bytes[key] = fpi_bytes.get(key, 0) + int(m[3]) - int(m[2])
    json.dump({"bytes": per, "fullPageImages": fpi, "fullPageImageBytes": fpi_bytes, "error": run.stderr.strip()[-300:] or None},
              open(out, "w"))


# ---------------------------------------------------------------------------------------------------- operations
def publish_operations(amqp_url, url, out_path):
    """The fixed operations: per merchant, its authorised payments in job order, each getting one operation, so that
    no operation waits for another (an open operation of the same payment would be retried: timing).
      Trust Payments (automatic capture, never settled in the simulator): voids (TRANSACTIONUPDATE settlestatus 3);
      OPP (manual capture in this run, each AUTH a PA): captures (CP) and voids (RV), alternating;
      TapPay (automatic capture): full refunds.
    """
    import pika
    plan = []
    quota = {"sandbox-merchant": ("void",) * 170, "sandbox-merchant-opp": ("capture", "void") * 82 + ("capture",),
             "sandbox-merchant-tappay": ("refund",) * 165}
    with connect(url) as c:
        for merchant, kinds in quota.items():
            rows = c.execute("SELECT id FROM payments WHERE merchant_id = %s AND status = 'authorized' ORDER BY job_id LIMIT %s",
                             (merchant, len(kinds))).fetchall()
            if len(rows) < len(kinds):
                sys.exit(f"bench_cost: {merchant} has {len(rows)} authorised payments, {len(kinds)} needed")
            plan += [(merchant, kind, f"cost-{merchant}-{kind}-{n}", str(row[0])) for n, (kind, row) in enumerate(zip(kinds, rows))]
    connection = pika.BlockingConnection(pika.URLParameters(amqp_url))
    channel = connection.channel()
    channel.confirm_delivery()
    with open(out_path, "w") as out:
        for merchant, kind, operation_id, payment in plan:
            body = {"operationId": operation_id, "merchantId": merchant, "paymentId": payment}
            channel.basic_publish("paypipe.jobs", f"payment.{kind}.requested", json.dumps(body).encode(), pika.BasicProperties(
                delivery_mode=2, content_type="application/json", message_id=operation_id), mandatory=True)
            out.write(json.dumps({"kind": kind, "merchantId": merchant, "operationId": operation_id, "paymentId": payment}) + "\n")
    connection.close()
    print(len(plan))


# -------------------------------------------------------------------------------------------------------- report
def delta(before, after):
    """One stage's counters: after − before."""
    tables = {}
    for name, counts in after["tables"].items():
        old = before["tables"].get(name, {})
        changed = {k: v - old.get(k, 0) for k, v in counts.items()}
        if any(changed.values()):
            tables[name] = changed
    statements = {}
    for key, entry in after["statements"].items():
        calls = entry["calls"] - before["statements"].get(key, {}).get("calls", 0)
        if calls:
            statements[key] = {"calls": calls, "rows": entry["rows"] - before["statements"].get(key, {}).get("rows", 0),
                               "query": entry["query"],
                               "execMs": entry.get("execMs", 0) - before["statements"].get(key, {}).get("execMs", 0)}
    rb, ra = before["rabbitmq"], after["rabbitmq"]
    counters = {k: v - rb["counters"].get(k, 0) for k, v in ra["counters"].items()}
    depth = {q: ra["queueDepth"].get(q, 0) - rb["queueDepth"].get(q, 0)
             for q in set(ra["queueDepth"]) | set(rb["queueDepth"]) if ra["queueDepth"].get(q, 0) != rb["queueDepth"].get(q, 0)}
    return {
        "commits": after["xactCommit"] - before["xactCommit"] - before["probeTransactions"],
        "rollbacks": after["xactRollback"] - before["xactRollback"],
        "statements": sum(s["calls"] for s in statements.values()),
        # pg_stat_statements' execution time (planning and the commit's WAL flush not included): measured, not guarded.
        "statementMs": sum(s["execMs"] for s in statements.values()),
        "walBytes": after["walLsn"] - before["walLsn"],
        "walRecords": after["walRecords"] - before["walRecords"],
        "walFpi": after["walFpi"] - before["walFpi"],
        "checkpointsDuring": after["checkpoints"] - before["checkpoints"],
        "autovacuumRunsDuring": after.get("autovacuumRuns", 0) - before.get("autovacuumRuns", 0),
        "tables": tables,
        "statementCalls": statements,
        "published": counters.get("received", 0),
        "routed": counters.get("routed", 0),
        "delivered": counters.get("delivered", 0),
        "acknowledged": counters.get("acknowledged", 0),
        "redelivered": counters.get("redelivered", 0),
        "deadLettered": sum(v for k, v in counters.items() if k.startswith("dead_lettered")),
        "queueDepthChange": depth,
    }


def normalise(query):
    return re.sub(r"\s+", " ", query).strip()


def phase_summary(stages, units):
    """Totals over a phase's stages, per unit (payment or operation)."""
    total = {k: 0 for k in ("commits", "rollbacks", "statements", "statementMs", "walBytes", "walRecords", "walFpi", "checkpointsDuring",
                            "autovacuumRunsDuring",
                            "published", "routed", "delivered", "acknowledged", "redelivered", "deadLettered")}
    tables, statements, per_stage, wal_by_relation, fpi_by_relation = {}, {}, {}, {}, {}
    for name, d in stages.items():
        for k in total:
            total[k] += d[k]
        for table, counts in d["tables"].items():
            into = tables.setdefault(table, {})
            for k, v in counts.items():
                into[k] = into.get(k, 0) + v
        for entry in d["statementCalls"].values():
            into = statements.setdefault(normalise(entry["query"]), {"calls": 0, "rows": 0, "stages": []})
            into["calls"] += entry["calls"]
            into["rows"] += entry["rows"]
            if name not in into["stages"]:
                into["stages"].append(name)
        per_stage[name] = {k: round(d[k] / units, 3) for k in ("statements", "statementMs", "commits", "walBytes", "walRecords", "walFpi")}
        if "walByRelation" in d:
            for relation, size in d["walByRelation"]["bytes"].items():
                wal_by_relation[relation] = wal_by_relation.get(relation, 0) + size
            for relation, size in d["walByRelation"].get("fullPageImageBytes", {}).items():
                fpi_by_relation[relation] = fpi_by_relation.get(relation, 0) + size
        per_stage[name]["messages"] = round((d["published"] + d["delivered"] + d["acknowledged"]) / units, 3)
        per_stage[name].update({"published": round(d["published"] / units, 3), "delivered": round(d["delivered"] / units, 3),
                                "acknowledged": round(d["acknowledged"] / units, 3),
                                "queueDepthChange": d["queueDepthChange"], "cpuSeconds": d.get("cpuSeconds", {}),
                                "instructions": d.get("instructions", {})})
    per_unit = {k: round(v / units, 3) for k, v in total.items()}
    per_unit["messages"] = round((total["published"] + total["delivered"] + total["acknowledged"]) / units, 3)
    return {
        "units": units,
        "totals": total,
        "perUnit": per_unit,
        "perStage": per_stage,
        "walBytesPerUnitByRelation": {r: round(v / units) for r, v in sorted(wal_by_relation.items(), key=lambda i: -i[1])},
        # Of those, the full-page images' bytes (the first change of each page after a checkpoint).
        "fullPageImageBytesPerUnitByRelation": {r: round(fpi_by_relation.get(r, 0) / units)
                                                for r, _ in sorted(wal_by_relation.items(), key=lambda i: -i[1])},
        "rowsPerUnit": {t: {k: round(v / units, 3) for k, v in c.items()} for t, c in sorted(tables.items())},
        "statementsPerUnit": sorted(({"query": q, "calls": round(s["calls"] / units, 3), "rows": round(s["rows"] / units, 3),
                                      "stages": s["stages"]} for q, s in statements.items()), key=lambda s: -s["calls"]),
    }


def report(directory, out, doc=None):
    meta = json.load(open(os.path.join(directory, "meta.json")))
    result = {"date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"), "run": meta, "phases": {}}
    for phase, units in (("payments", meta["payments"]), ("operations", meta["operations"])):
        stages = {}
        for stage in meta["stages"][phase]:
            prefix = os.path.join(directory, f"{phase}-{stage}")
            d = delta(json.load(open(prefix + "-before.json")), json.load(open(prefix + "-after.json")))
            extra = json.load(open(prefix + "-process.json")) if os.path.exists(prefix + "-process.json") else {}
            d["cpuSeconds"] = {k: round(v / units, 6) for k, v in extra.get("cpuSeconds", {}).items()}
            d["instructions"] = {k: round(v / units) for k, v in extra.get("instructions", {}).items()}
            if os.path.exists(prefix + "-wal.json"):
                d["walByRelation"] = json.load(open(prefix + "-wal.json"))
            stages[stage] = d
        result["phases"][phase] = phase_summary(stages, units)
    outcomes = os.path.join(directory, "outcomes.json")
    if os.path.exists(outcomes):
        result["outcomes"] = json.load(open(outcomes))
    json.dump(result, open(out, "w"), indent=1)
    print(table(result))
    if doc:
        write_doc(result, doc)
    return result


def table(result):
    lines = []
    for phase, unit in (("payments", "payment"), ("operations", "operation")):
        p = result["phases"][phase]
        lines.append(f"\nper {unit} ({p['units']} {phase}; stages measured one after the other, each from a CHECKPOINT)")
        lines.append(f"{'stage':<12}{'statements':>11}{'commits':>9}{'WAL bytes':>11}{'WAL rec':>9}{'FPI':>7}{'published':>10}"
                     f"{'delivered':>10}{'acked':>7}{'worker CPU ms':>14}{'PG CPU ms':>10}{'PG exec ms':>11}")
        rows = list(p["perStage"].items()) + [("total", dict(p["perUnit"], cpuSeconds={}))]
        for stage, s in rows:
            cpu = s.get("cpuSeconds", {})
            worker = next((v for k, v in cpu.items() if k != "postgres"), None)
            pg = cpu.get("postgres")
            lines.append(f"{stage:<12}{s['statements']:>11.3f}{s['commits']:>9.3f}{s['walBytes']:>11.0f}{s['walRecords']:>9.1f}"
                         f"{s['walFpi']:>7.2f}{s['published']:>10.2f}{s['delivered']:>10.2f}{s['acknowledged']:>7.2f}"
                         f"{'' if worker is None else f'{worker * 1000:.2f}':>14}{'' if pg is None else f'{pg * 1000:.2f}':>10}"
                         f"{s.get('statementMs', 0):>11.3f}")
        lines.append("rows per " + unit + ": " + ", ".join(
            f"{t} +{c.get('inserted', 0):g}/~{c.get('updated', 0):g}(hot {c.get('hotUpdated', 0):g})/-{c.get('deleted', 0):g}"
            for t, c in p["rowsPerUnit"].items()))
        if p.get("walBytesPerUnitByRelation"):
            images = p.get("fullPageImageBytesPerUnitByRelation", {})
            lines.append(f"WAL bytes per {unit} by relation (pg_waldump; of which full-page images): " + ", ".join(
                f"{r} {v} ({images.get(r, 0)})" for r, v in list(p["walBytesPerUnitByRelation"].items())[:16]))
    return "\n".join(lines)


DOC_START = "<!-- cost budget: generated by scripts/bench --only cost; do not edit by hand -->"
DOC_END = "<!-- end of cost budget -->"


def write_doc(result, path):
    rows = []
    for phase, unit in (("payments", "payment"), ("operations", "operation")):
        p = result["phases"][phase]
        for stage, s in list(p["perStage"].items()) + [("**total**", p["perUnit"])]:
            rows.append(f"| {unit} | {stage} | {s['statements']:.3f} | {s['commits']:.3f} | {s['walBytes']:.0f} | {s['walRecords']:.1f} "
                        f"| {s['walFpi']:.2f} | {s['published']:.2f} | {s['delivered']:.2f} | {s['acknowledged']:.2f} |")
    text = "\n".join([DOC_START,
                      f"Run {result['date']} ({result['run']['commit']}): {result['phases']['payments']['units']} payments, "
                      f"{result['phases']['operations']['units']} operations, batch {result['run']['batchSize']}.",
                      "",
                      "| per | stage | statements | commits | WAL bytes | WAL records | full-page images | published | delivered | acked |",
                      "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|", *rows, DOC_END])
    doc = open(path).read()
    if DOC_START in doc and DOC_END in doc:
        doc = doc[:doc.index(DOC_START)] + text + doc[doc.index(DOC_END) + len(DOC_END):]
    else:
        sys.exit(f"bench_cost: {path} has no cost budget markers; add the section first")
    open(path, "w").write(doc)


# --------------------------------------------------------------------------------------------------------- guard
def guarded(result):
    return {f"{phase}.{k}": result["phases"][phase]["perUnit"][k] for phase in ("payments", "operations") for k in GUARDED}


def check(result_path, baseline_path):
    result, baseline = json.load(open(result_path)), json.load(open(baseline_path))
    failures = []
    print(f"{'counter':<24}{'baseline':>12}{'this run':>12}{'change':>9}")
    for key, value in guarded(result).items():
        base = baseline["counters"].get(key)
        if base is None:
            print(f"{key:<24}{'—':>12}{value:>12.3f}   (not in the baseline)")
            continue
        change = (value - base) / base if base else (0.0 if value == 0 else float("inf"))
        verdict = "FAIL" if change > MARGIN else "ok"
        print(f"{key:<24}{base:>12.3f}{value:>12.3f}{change * 100:>+8.1f}%  {verdict}")
        if verdict == "FAIL":
            failures.append(key)
    checkpoints = sum(result["phases"][p]["totals"]["checkpointsDuring"] for p in ("payments", "operations"))
    if checkpoints:
        print(f"note: {checkpoints} checkpoint(s) started inside measured stages: WAL bytes include extra full-page images")
    autovacuum = sum(result["phases"][p]["totals"].get("autovacuumRunsDuring", 0) for p in ("payments", "operations"))
    if autovacuum:
        print(f"note: {autovacuum} autovacuum/autoanalyze run(s) inside measured stages: their transactions and WAL are counted")
    if failures:
        # Which statements moved: the first place to look.
        by_query = {}
        for phase in ("payments", "operations"):
            for s in baseline.get("statements", {}).get(phase, []):
                by_query[(phase, s["query"])] = s["calls"]
        print("cost guard: FAILED, rose by more than 5 %: " + ", ".join(failures))
        for phase in ("payments", "operations"):
            for s in result["phases"][phase]["statementsPerUnit"]:
                before = by_query.get((phase, s["query"]), 0)
                if s["calls"] > before * (1 + MARGIN) + 1e-9:
                    print(f"  {phase}: {before:.3f} → {s['calls']:.3f} per unit: {s['query'][:150]}")
        print("A deliberate change: scripts/bench --only cost --update-baseline, and say why in the commit message.")
        return 1
    print("cost guard: passed (no guarded counter rose by more than 5 %)")
    return 0


def update_baseline(result_path, baseline_path):
    result = json.load(open(result_path))
    json.dump({"recorded": result["date"], "commit": result["run"]["commit"], "margin": MARGIN,
               "note": "per payment (payments.*) and per operation (operations.*); scripts/bench --only cost --check",
               "counters": guarded(result),
               "statements": {p: [{"query": s["query"], "calls": s["calls"]} for s in result["phases"][p]["statementsPerUnit"]]
                              for p in ("payments", "operations")}},
              open(baseline_path, "w"), indent=1)
    print(f"cost baseline updated: {baseline_path}")
    return 0


def compare(a_path, b_path):
    """Every counter of two runs side by side: the largest relative difference, and each one beyond 1 %."""
    a, b = json.load(open(a_path)), json.load(open(b_path))
    worst, beyond = 0.0, []
    def one(name, x, y):
        nonlocal worst
        difference = abs(x - y) / max(abs(x), abs(y)) if max(abs(x), abs(y)) else 0.0
        worst = max(worst, difference)
        if difference > 0.01:
            beyond.append(f"  {name}: {x} vs {y} ({difference * 100:.2f} %)")
    for phase in ("payments", "operations"):
        pa, pb = a["phases"][phase], b["phases"][phase]
        for k in pa["totals"]:
            if k != "statementMs":  # a time, not a counter
                one(f"{phase}.{k}", pa["totals"][k], pb["totals"].get(k, 0))
        for stage in pa["perStage"]:
            for k in ("statements", "commits", "walBytes", "walRecords", "walFpi", "messages"):
                one(f"{phase}.{stage}.{k}", pa["perStage"][stage][k], pb["perStage"][stage].get(k, 0))
        for table in set(pa["rowsPerUnit"]) | set(pb["rowsPerUnit"]):
            for k in ("inserted", "updated", "hotUpdated", "deleted"):
                one(f"{phase}.{table}.{k}", pa["rowsPerUnit"].get(table, {}).get(k, 0), pb["rowsPerUnit"].get(table, {}).get(k, 0))
        sa = {s["query"]: s["calls"] for s in pa["statementsPerUnit"]}
        sb = {s["query"]: s["calls"] for s in pb["statementsPerUnit"]}
        for q in set(sa) | set(sb):
            one(f"{phase} statement {q[:60]}", sa.get(q, 0), sb.get(q, 0))
    print(f"largest difference between the runs: {worst * 100:.3f} %")
    print("\n".join(beyond) if beyond else "no counter differs by more than 1 %")
    for phase in ("payments", "operations"):
        print(f"{phase}: " + ", ".join(f"{k} {a['phases'][phase]['perUnit'][k]} / {b['phases'][phase]['perUnit'][k]}"
                                       for k in ("statements", "commits", "walBytes", "walRecords", "walFpi", "messages")))
    return 1 if beyond else 0


COMMANDS = {
    "prepare": prepare, "finish": finish, "checkpoint": checkpoint, "snapshot": snapshot, "wait-backends": wait_backends,
    "backend-cpu": backend_cpu, "wait-acked": wait_acked, "publish-operations": publish_operations, "waldump": waldump, "check": check,
    "compare": compare, "update-baseline": update_baseline,
}


def main(argv):
    if len(argv) < 2 or (argv[1] not in COMMANDS and argv[1] != "report"):
        sys.exit(__doc__)
    command, args = argv[1], argv[2:]
    if command == "report":
        doc = args[args.index("--doc") + 1] if "--doc" in args else None
        report(args[0], args[1], doc)
        return 0
    return COMMANDS[command](*args) or 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
