# SPDX-License-Identifier: GPL-2.0-only
"""Shared reader for ftrace text output (tracefs `trace` file, optionally gzipped).

Each record becomes a Rec(comm, pid, cpu, flags, ts, event, args, ctx) with ts in ns (int):
- default trace clocks print seconds with a fraction ("310.230399", us resolution);
- x86-tsc prints raw TSC counts ("1693655409890"); pass tsc_mhz to convert them to ns.
ctx is the execution context decoded from the latency flags column: 'h' hardirq (also
'H' = hardirq inside softirq), 's' softirq, 'n' NMI, '' task context.
"""
import gzip
import json
import math
import os
import re

LINE_RE = re.compile(
    r"^\s*(.*?)-(\d+)\s+\[(\d+)\]\s+(\S{4,5})\s+(\d+(?:\.\d+)?): ([a-zA-Z_0-9]+): ?(.*)$"
)
KV_RE = re.compile(r"([A-Za-z_][A-Za-z_0-9]*)=(\S*)")
SWITCH_RE = re.compile(
    r"prev_comm=(.*?) prev_pid=(\d+) prev_prio=(-?\d+) prev_state=(\S+) ==> "
    r"next_comm=(.*?) next_pid=(\d+) next_prio=(-?\d+)"
)
WAKE_RE = re.compile(r"comm=(.*?) pid=(\d+) prio=(-?\d+) target_cpu=(\d+)")
SYS_ENTER_RE = re.compile(r"NR (-?\d+)")
IDLE_EXIT_STATE = 4294967295


class Rec:
    __slots__ = ("comm", "pid", "cpu", "flags", "ts", "event", "args", "ctx", "lineno")

    def __init__(self, comm, pid, cpu, flags, ts, event, args, lineno):
        self.comm = comm
        self.pid = pid
        self.cpu = cpu
        self.flags = flags
        self.ts = ts
        self.event = event
        self.args = args
        self.lineno = lineno
        f2 = flags[2] if len(flags) > 2 else "."
        self.ctx = {"h": "h", "H": "h", "s": "s", "z": "n", "Z": "n"}.get(f2, "")

    def kv(self):
        return dict(KV_RE.findall(self.args))


def read_tsc_mhz(capture_dir):
    p = os.path.join(capture_dir, "tsc-mhz.txt")
    if not os.path.exists(p):
        return None
    with open(p) as f:
        txt = f.read()
    m = re.search(r"([0-9]+\.[0-9]+)", txt)
    if not m:
        raise SystemExit(f"{p}: expected a 'cpu MHz : N.N' line, got {txt!r}")
    return float(m.group(1))


def records(path, tsc_mhz=None):
    """Yield Rec for every trace line of `path` (text or .gz). Header lines are skipped.
    Raises SystemExit naming the file and line on a timestamp format that does not fit."""
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", errors="replace") as f:
        for lineno, line in enumerate(f, 1):
            if line.startswith("#") or not line.strip():
                continue
            m = LINE_RE.match(line)
            if not m:
                continue  # e.g. "CPU:1 [LOST n EVENTS]" lines; counted by callers if needed
            comm, pid, cpu, flags, tss, ev, args = m.groups()
            if "." in tss:
                sec, frac = tss.split(".")
                ts = int(sec) * 1_000_000_000 + int((frac + "000000000")[:9])
            else:
                if tsc_mhz is None:
                    raise SystemExit(
                        f"{path}:{lineno}: raw counter timestamp {tss} but no tsc-mhz.txt "
                        "next to the trace (expected 'cpu MHz : N' from /proc/cpuinfo)"
                    )
                ts = int(round(int(tss) * 1000.0 / tsc_mhz))
            yield Rec(comm, int(pid), int(cpu), flags, ts, ev, args.rstrip("\n"), lineno)


def quantile(sorted_vals, q):
    """Linear-interpolated quantile of an already sorted list (q in [0,1])."""
    n = len(sorted_vals)
    if n == 0:
        return None
    if n == 1:
        return sorted_vals[0]
    x = q * (n - 1)
    lo = int(math.floor(x))
    hi = min(lo + 1, n - 1)
    return sorted_vals[lo] + (sorted_vals[hi] - sorted_vals[lo]) * (x - lo)


def summarize(vals, qs=(0.0, 0.1, 0.5, 0.9, 0.99, 1.0)):
    v = sorted(vals)
    out = {"n": len(v)}
    if not v:
        return out
    names = {0.0: "min", 0.1: "p10", 0.5: "p50", 0.9: "p90", 0.99: "p99", 1.0: "max"}
    for q in qs:
        out[names.get(q, f"p{int(q*100)}")] = round(quantile(v, q), 1)
    out["mean"] = round(sum(v) / len(v), 1)
    return out


def write_atomic(path, text):
    tmp = path + ".partial"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def write_json(path, obj):
    write_atomic(path, json.dumps(obj, indent=1, sort_keys=True) + "\n")
