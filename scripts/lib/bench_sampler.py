#!/usr/bin/env python3
"""Samples CPU time and memory of named process groups from /proc for scripts/bench (like `top -b`, but per group).

    bench_sampler.py OUT.jsonl INTERVAL NAME=PID [NAME=PID ...]

Every INTERVAL seconds it appends one JSON line: {"t": unix seconds, "cpu": {name: CPU seconds}, "rss": {name: kB},
"hwm": {name: kB}}. A group is the process and all its live descendants (PostgreSQL backends, Erlang port
programs), plus the CPU its exited, reaped children used (cutime/cstime). RSS is the group's sum; HWM (VmHWM, the
peak resident set) is the named process's own. Runs until SIGTERM.
"""
import json
import os
import signal
import sys
import time

TICKS = os.sysconf("SC_CLK_TCK")


def stat(pid):
    """(ppid, utime+stime, cutime+cstime) in seconds, or None if the process is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            text = f.read()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2:].split()
    # fields[0] is the state (stat field 3): ppid is field 4, utime 14, stime 15, cutime 16, cstime 17.
    return int(fields[1]), (int(fields[11]) + int(fields[12])) / TICKS, (int(fields[13]) + int(fields[14])) / TICKS


def status_kb(pid, key):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def main():
    out, interval, groups = sys.argv[1], float(sys.argv[2]), {}
    for arg in sys.argv[3:]:
        name, pid = arg.split("=", 1)
        groups[name] = int(pid)
    running = True

    def stop(*_):
        nonlocal running
        running = False

    signal.signal(signal.SIGTERM, stop)
    with open(out, "a") as sink:
        while running:
            stats = {}
            for entry in os.listdir("/proc"):
                if entry.isdigit():
                    s = stat(int(entry))
                    if s:
                        stats[int(entry)] = s
            children = {}
            for pid, (ppid, _, _) in stats.items():
                children.setdefault(ppid, []).append(pid)
            sample = {"t": time.time(), "cpu": {}, "rss": {}, "hwm": {}}
            for name, root in groups.items():
                if root not in stats:
                    continue
                cpu, rss, todo = stats[root][2], 0, [root]
                while todo:
                    pid = todo.pop()
                    cpu += stats[pid][1]
                    rss += status_kb(pid, "VmRSS")
                    todo.extend(children.get(pid, []))
                sample["cpu"][name] = round(cpu, 3)
                sample["rss"][name] = rss
                sample["hwm"][name] = status_kb(root, "VmHWM")
            sink.write(json.dumps(sample) + "\n")
            sink.flush()
            time.sleep(interval)


if __name__ == "__main__":
    main()
