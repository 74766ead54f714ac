#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Kernel path durations measured from pairs of tracepoints in captures of trace-paths.sh.

usage: path_costs.py CAPTURE_DIR... [--json OUT.json] [--md OUT.md]

Each CAPTURE_DIR holds WORKLOAD-REPEAT.trace.gz (+ .stdout from perf bench) and, for the
x86-tsc trace clock, tsc-mhz.txt. For every trace, and for every path below, the durations
are collected and summarised (count, p10, median, p90 in ns); across the repeats of one
workload the spread is the min..max of the per-repeat medians.

Paths (same CPU unless said):
  csd:FUNC            csd_function_entry -> csd_function_exit
  softirq:VEC         softirq_entry -> softirq_exit
  local_timer         local_timer_entry -> local_timer_exit
  reschedule          reschedule_entry -> reschedule_exit
  call_function_single call_function_single_entry -> exit (also call_function)
  hrtimer:FUNC        hrtimer_expire_entry -> hrtimer_expire_exit (matched by hrtimer address)
  timer:FUNC          timer_expire_entry -> timer_expire_exit (matched by timer address)
  ipi:KIND:TARGETSTATE  ipi_send_cpu on the sender -> first matching handler entry on the
                      target (call_function_single_entry for the csd callback, reschedule_entry
                      for callback=0x0); TARGETSTATE idle/busy from the target's last cpu_idle
                      record, or (on a CPU that logs no cpu_idle) from whether idle was the
                      current task there
  wake:SAME|CROSS:idle|busy  sched_waking -> the sched_switch that switches that pid in;
                      SAME/CROSS compares the waker's CPU with the CPU it ran on; idle|busy is
                      that CPU's state at the waking. ":inferred" when the switch-in record is
                      missing and the pid's first record on that CPU stands in for it.
  idle_exit_next      cpu_idle exit (state=4294967295) -> next record on that CPU
  sys:NAME:nonblock|blocked  sys_enter -> sys_exit of one pid for futex, nanosleep,
                      clock_nanosleep, read, write; blocked = a sched_switch away in between
  cs:prev_last->switch  the switching-out task's last record on that CPU -> sched_switch,
                      by the kind of that record (e.g. sys_enter)
  cs:switch->next_first sched_switch -> the incoming task's first record on that CPU
  gap_min             the minimum gap between two consecutive records of one CPU (the cost of
                      writing one trace record, an upper bound)
"""
import argparse
import collections
import glob
import os
import re
import sys

import tracelib

SYSCALLS = {202: "futex", 35: "nanosleep", 230: "clock_nanosleep", 0: "read", 1: "write"}
VECTOR_PAIRS = {
    "local_timer_entry": "local_timer", "reschedule_entry": "reschedule",
    "call_function_single_entry": "call_function_single", "call_function_entry": "call_function",
}
VECTOR_EXITS = {k.replace("_entry", "_exit"): v for k, v in VECTOR_PAIRS.items()}
CSD_CB = "generic_smp_call_function_single_interrupt"


class PathCollector:
    def __init__(self):
        self.d = collections.defaultdict(list)  # path -> [ns]
        self.cpu_seen_idle_records = set()
        self.cur = {}  # cpu -> pid current (from records)
        self.idle_state = {}  # cpu -> True idle / False busy (from cpu_idle)
        self.csd = collections.defaultdict(list)  # cpu -> stack [(func, ts)]
        self.sirq = {}
        self.vec = {}  # (cpu, name) -> ts
        self.hr = {}  # (cpu, addr) -> (func, ts)
        self.tl = {}
        self.ipi_pending = collections.defaultdict(list)  # (target, kind) -> [(ts, state)]
        self.waking = {}  # pid -> (ts, waker cpu, {cpu: idle?} at waking)
        self.wake_target = {}  # pid -> target cpu from sched_wakeup
        self.idle_exit = {}  # cpu -> ts of cpu_idle exit awaiting next record
        self.sys = {}  # pid -> (nr, ts, blocked)
        self.last = {}  # cpu -> (ts, pid, event)
        self.after_switch = {}  # cpu -> (ts, next_pid)
        self.gaps_min = {}
        self.gaps_zero = 0
        self.gaps_small = []  # nonzero gaps under 2 us, for a low percentile
        self.ncomm = collections.Counter()
        self.nrec = 0
        self.last_kind = None
        self.t0 = None
        self.t1 = None

    def is_idle(self, cpu):
        if cpu in self.cpu_seen_idle_records:
            return self.idle_state.get(cpu, False)
        return self.cur.get(cpu) == 0

    def add(self, path, v):
        if v >= 0:
            self.d[path].append(v)

    def feed(self, r):
        self.nrec += 1
        cpu, ts, ev = r.cpu, r.ts, r.event
        if self.t0 is None:
            self.t0 = ts
        self.t1 = ts
        self.ncomm[r.comm] += 1
        prev = self.last.get(cpu)
        if prev is not None:
            g = ts - prev[0]
            if g == 0:
                self.gaps_zero += 1
            elif g > 0:
                self.gaps_small.append(g) if g < 2000 else None
                if cpu not in self.gaps_min or g < self.gaps_min[cpu]:
                    self.gaps_min[cpu] = g
            if prev[2] == "ipi_send_cpu":
                self.add(f"ipi_send->next_record_on_sender:{prev[3]}", g)
        # idle exit -> next record on that CPU
        if cpu in self.idle_exit and not (ev == "cpu_idle"):
            self.add("idle_exit_next", ts - self.idle_exit.pop(cpu))
        # switch -> first record of the incoming task on that CPU
        if cpu in self.after_switch and ev != "sched_switch":
            sts, npid = self.after_switch[cpu]
            if r.pid == npid:
                kind = "idle" if npid == 0 else "task"
                self.add(f"cs:switch->next_first:{kind}:{ev}", ts - sts)
                del self.after_switch[cpu]
        # first record of a woken pid on a CPU whose switch-in we never saw
        if r.pid != 0 and r.pid in self.waking and ev != "sched_switch" and r.ctx == "" \
                and self.cur.get(cpu) != r.pid:
            wts, wcpu, states = self.waking.pop(r.pid)
            same = "SAME" if wcpu == cpu else "CROSS"
            st = "idle" if states.get(cpu) else "busy"
            self.add(f"wake:{same}:{st}:inferred", ts - wts)
        if ev != "sched_switch" and r.ctx == "":
            self.cur[cpu] = r.pid
        elif ev != "sched_switch" and cpu not in self.cur:
            self.cur[cpu] = r.pid

        if ev == "csd_function_entry":
            self.csd[cpu].append((r.kv().get("func", "?").rstrip(","), ts))
        elif ev == "csd_function_exit":
            if self.csd[cpu]:
                f, s = self.csd[cpu].pop()
                self.add("csd:" + f, ts - s)
        elif ev == "softirq_entry":
            self.sirq[cpu] = (self.vecname(r), ts)
        elif ev == "softirq_exit":
            s = self.sirq.pop(cpu, None)
            if s:
                self.add("softirq:" + s[0], ts - s[1])
        elif ev in VECTOR_PAIRS:
            name = VECTOR_PAIRS[ev]
            self.vec[(cpu, name)] = ts
            kind = {"call_function_single": "csd", "reschedule": "resched"}.get(name)
            if kind:
                pend = self.ipi_pending.pop((cpu, kind), [])
                for sts, scpu, st in pend:
                    self.add(f"ipi:{kind}:{st}", ts - sts)
                    self.add(f"ipi:{kind}:{st}:cpu{scpu}->cpu{cpu}", ts - sts)
        elif ev in VECTOR_EXITS:
            name = VECTOR_EXITS[ev]
            s = self.vec.pop((cpu, name), None)
            if s is not None:
                self.add(name, ts - s)
        elif ev == "hrtimer_expire_entry":
            kv = r.kv()
            self.hr[(cpu, kv.get("hrtimer"))] = (kv.get("function", "?"), ts)
        elif ev == "hrtimer_expire_exit":
            s = self.hr.pop((cpu, r.kv().get("hrtimer")), None)
            if s:
                self.add("hrtimer:" + s[0], ts - s[1])
        elif ev == "timer_expire_entry":
            kv = r.kv()
            self.tl[(cpu, kv.get("timer"))] = (kv.get("function", "?"), ts)
        elif ev == "timer_expire_exit":
            s = self.tl.pop((cpu, r.kv().get("timer")), None)
            if s:
                self.add("timer:" + s[0], ts - s[1])
        elif ev == "ipi_send_cpu":
            kv = r.kv()
            try:
                tgt = int(kv.get("cpu", "-1"))
            except ValueError:
                tgt = -1
            cb = kv.get("callback", "")
            kind = "csd" if cb.startswith(CSD_CB) else ("resched" if cb.startswith("0x0") else None)
            self.last_kind = kind or "other"
            if kind and tgt >= 0:
                st = "idle" if self.is_idle(tgt) else "busy"
                self.ipi_pending[(tgt, kind)].append((ts, cpu, st))
        elif ev == "cpu_idle":
            kv = r.kv()
            try:
                state = int(kv.get("state", "0"))
                c = int(kv.get("cpu_id", cpu))
            except ValueError:
                return
            self.cpu_seen_idle_records.add(c)
            if state == tracelib.IDLE_EXIT_STATE:
                self.idle_state[c] = False
                self.idle_exit[c] = ts
            else:
                self.idle_state[c] = True
        elif ev == "sched_waking":
            m = tracelib.WAKE_RE.search(r.args)
            if m:
                pid = int(m.group(2))
                states = {c: self.is_idle(c) for c in set(self.cur) | self.cpu_seen_idle_records}
                self.waking[pid] = (ts, cpu, states)
        elif ev == "sched_switch":
            m = tracelib.SWITCH_RE.search(r.args)
            if not m:
                return
            ppid, npid = int(m.group(2)), int(m.group(6))
            # prev's last record -> switch
            if prev is not None and prev[1] == ppid and ppid != 0:
                self.add(f"cs:prev_last->switch:{prev[2]}", ts - prev[0])
            self.after_switch[cpu] = (ts, npid)
            if npid in self.waking:
                wts, wcpu, states = self.waking.pop(npid)
                same = "SAME" if wcpu == cpu else "CROSS"
                st = "idle" if states.get(cpu) else "busy"
                self.add(f"wake:{same}:{st}", ts - wts)
            sysent = self.sys.get(ppid)
            if sysent:
                self.sys[ppid] = (sysent[0], sysent[1], True)
            self.cur[cpu] = npid
        elif ev == "sys_enter":
            m = tracelib.SYS_ENTER_RE.search(r.args)
            if m:
                self.sys[r.pid] = (int(m.group(1)), ts, False)
        elif ev == "sys_exit":
            s = self.sys.pop(r.pid, None)
            if s:
                nr, sts, blocked = s
                if nr in SYSCALLS:
                    self.add(f"sys:{SYSCALLS[nr]}:{'blocked' if blocked else 'nonblock'}", ts - sts)
        self.last[cpu] = (ts, r.pid, ev, self.last_kind if ev == "ipi_send_cpu" else None)

    @staticmethod
    def vecname(r):
        m = re.search(r"action=(\w+)", r.args)
        return m.group(1) if m else r.args.strip()


def parse_stdout(path):
    """perf bench's own result: usecs/op and total seconds, or {} when absent."""
    out = {}
    if not os.path.exists(path):
        return out
    with open(path, errors="replace") as f:
        txt = f.read()
    m = re.search(r"Total time:\s*([0-9.]+)\s*\[sec\]", txt)
    if m:
        out["total_s"] = float(m.group(1))
    m = re.search(r"([0-9.]+)\s+usecs/op", txt)
    if m:
        out["usecs_per_op"] = float(m.group(1))
    m = re.search(r"(\d+)\s+ops/sec", txt)
    if m:
        out["ops_per_sec"] = int(m.group(1))
    return out


def analyse_dir(cdir):
    tsc = tracelib.read_tsc_mhz(cdir)
    files = sorted(glob.glob(os.path.join(cdir, "*.trace.gz")))
    if not files:
        raise SystemExit(f"{cdir}: no *.trace.gz (expected WORKLOAD-REPEAT.trace.gz from trace-paths.sh)")
    res = {"dir": cdir, "tsc_mhz": tsc, "clock": "x86-tsc" if tsc else "default (us)", "runs": {}}
    for f in files:
        base = os.path.basename(f)[: -len(".trace.gz")]
        m = re.match(r"^(.*)-(\d+)$", base)
        if not m:
            print(f"path_costs: {f}: name is not WORKLOAD-REPEAT.trace.gz; skipped", file=sys.stderr)
            continue
        wl, rep = m.group(1), int(m.group(2))
        pc = PathCollector()
        for r in tracelib.records(f, tsc):
            pc.feed(r)
        paths = {k: tracelib.summarize(v) for k, v in sorted(pc.d.items())}
        top = pc.ncomm.most_common(8)
        run = {
            "workload": wl, "repeat": rep, "records": pc.nrec,
            "duration_ms": round((pc.t1 - pc.t0) / 1e6, 3) if pc.nrec else 0,
            "gap_min_nonzero_ns": {str(c): g for c, g in sorted(pc.gaps_min.items())},
            "gap_zero_count": pc.gaps_zero,
            "gap_p01_ns": (round(tracelib.quantile(sorted(pc.gaps_small), 0.001))
                           if pc.gaps_small else None),
            "cpus_with_cpu_idle_records": sorted(pc.cpu_seen_idle_records),
            "top_comms": dict(top),
            "paths": paths,
            "bench": parse_stdout(f[: -len(".trace.gz")] + ".stdout"),
        }
        if wl == "nanosleep":
            # glibc's nanosleep() is the clock_nanosleep syscall
            n = sum(paths.get(f"sys:{c}:{b}", {}).get("n", 0) for c in ("nanosleep", "clock_nanosleep")
                    for b in ("blocked", "nonblock"))
            run["bench"]["loop_iterations_in_trace"] = n
            if n:
                run["bench"]["usecs_per_iteration"] = round(1e6 / n, 3)
        res["runs"][base] = run
        print(f"  {cdir}/{base}: {pc.nrec} records", file=sys.stderr)
    # across repeats
    by_wl = collections.defaultdict(list)
    for run in res["runs"].values():
        by_wl[run["workload"]].append(run)
    spread = {}
    for wl, runs in sorted(by_wl.items()):
        runs.sort(key=lambda r: r["repeat"])
        allpaths = sorted(set().union(*(r["paths"] for r in runs)))
        sp = {}
        for p in allpaths:
            meds = [r["paths"][p]["p50"] if p in r["paths"] and r["paths"][p]["n"] else None
                    for r in runs]
            ns = [r["paths"].get(p, {}).get("n", 0) for r in runs]
            present = [m for m in meds if m is not None]
            sp[p] = {"medians": meds, "counts": ns,
                     "p10": [r["paths"].get(p, {}).get("p10") for r in runs],
                     "p90": [r["paths"].get(p, {}).get("p90") for r in runs],
                     "median_min": min(present) if present else None,
                     "median_max": max(present) if present else None}
        bench = {}
        for key in ("usecs_per_op", "total_s", "usecs_per_iteration"):
            vals = [r["bench"].get(key) for r in runs]
            if any(v is not None for v in vals):
                bench[key] = vals
        spread[wl] = {"repeats": [r["repeat"] for r in runs], "paths": sp, "bench": bench}
    res["spread"] = spread
    return res


# Rows of the markdown table: (label, path key, workloads to show)
MD_ROWS = [
    ("csd_function sched_ttwu_pending", "csd:sched_ttwu_pending"),
    ("csd_function flush_tlb_func", "csd:flush_tlb_func"),
    ("csd_function nohz_csd_func", "csd:nohz_csd_func"),
    ("call_function_single entry->exit", "call_function_single"),
    ("reschedule entry->exit", "reschedule"),
    ("local_timer entry->exit", "local_timer"),
    ("softirq SCHED", "softirq:SCHED"),
    ("softirq RCU", "softirq:RCU"),
    ("softirq TIMER", "softirq:TIMER"),
    ("softirq HRTIMER", "softirq:HRTIMER"),
    ("softirq BLOCK", "softirq:BLOCK"),
    ("hrtimer tick_nohz_handler", "hrtimer:tick_nohz_handler"),
    ("hrtimer hrtimer_wakeup", "hrtimer:hrtimer_wakeup"),
    ("timer process_timeout", "timer:process_timeout"),
    ("timer delayed_work_timer_fn", "timer:delayed_work_timer_fn"),
    ("IPI csd send->handler, target idle", "ipi:csd:idle"),
    ("IPI csd send->handler, target busy", "ipi:csd:busy"),
    ("IPI resched send->handler, target idle", "ipi:resched:idle"),
    ("IPI resched send->handler, target busy", "ipi:resched:busy"),
    ("IPI csd idle target, CPU0->CPU1", "ipi:csd:idle:cpu0->cpu1"),
    ("IPI csd idle target, CPU1->CPU0", "ipi:csd:idle:cpu1->cpu0"),
    ("IPI resched busy target, CPU0->CPU1", "ipi:resched:busy:cpu0->cpu1"),
    ("IPI resched busy target, CPU1->CPU0", "ipi:resched:busy:cpu1->cpu0"),
    ("sender: ipi_send_cpu -> its next record (csd)", "ipi_send->next_record_on_sender:csd"),
    ("sender: ipi_send_cpu -> its next record (resched)", "ipi_send->next_record_on_sender:resched"),
    ("wake->run same CPU, CPU busy", "wake:SAME:busy"),
    ("wake->run same CPU, CPU idle", "wake:SAME:idle"),
    ("wake->run cross CPU, target idle", "wake:CROSS:idle"),
    ("wake->run cross CPU, target busy", "wake:CROSS:busy"),
    ("wake->first record, cross, idle (no switch rec)", "wake:CROSS:idle:inferred"),
    ("wake->first record, same, idle (no switch rec)", "wake:SAME:idle:inferred"),
    ("cpu_idle exit -> next record", "idle_exit_next"),
    ("sys read, not blocked", "sys:read:nonblock"),
    ("sys read, blocked", "sys:read:blocked"),
    ("sys write, not blocked", "sys:write:nonblock"),
    ("sys futex, not blocked", "sys:futex:nonblock"),
    ("sys futex, blocked", "sys:futex:blocked"),
    ("sys nanosleep, blocked", "sys:nanosleep:blocked"),
    ("sys clock_nanosleep, blocked", "sys:clock_nanosleep:blocked"),
    ("cs: sys_enter -> switch (block path)", "cs:prev_last->switch:sys_enter"),
    ("cs: switch -> sys_exit of next task", "cs:switch->next_first:task:sys_exit"),
    ("cs: switch -> idle's cpu_idle entry", "cs:switch->next_first:idle:cpu_idle"),
]
MIN_N = 5


def fmt(v):
    if v is None:
        return "-"
    if v >= 100000:
        return f"{v/1000:.0f}us"
    if v >= 10000:
        return f"{v/1000:.1f}us"
    return f"{v:.0f}"


def markdown(results, cmdline):
    L = []
    L.append("# Measured kernel path costs on this guest")
    L.append("")
    L.append("Generated by `tools/measure/path_costs.py` (edit the script, not this file):")
    L.append("")
    L.append("```")
    L.append(cmdline)
    L.append("```")
    L.append("")
    L.append(METHOD)
    head = results[0]
    L.append(f"## Headline: each path in the workload that exercised it most (`{head['dir']}`)")
    L.append("")
    L.append("ns unless marked; medians of the three repeats, their spread, and p10-p90 of the "
             "repeat with the most samples. Full tables per workload below.")
    L.append("")
    L.append("| path | workload | n (all repeats) | medians per repeat | spread | p10-p90 |")
    L.append("|---|---|---|---|---|---|")
    for label, key in MD_ROWS:
        best = None
        for wl, sp in head["spread"].items():
            p = sp["paths"].get(key)
            if p and (best is None or sum(p["counts"]) > sum(best[1]["counts"])):
                best = (wl, p)
        if not best or sum(best[1]["counts"]) < MIN_N:
            continue
        wl, p = best
        i = max(range(len(p["counts"])), key=lambda j: p["counts"][j])
        L.append(f"| {label} | {wl} | {sum(p['counts'])} | "
                 f"{' / '.join(fmt(m) for m in p['medians'])} | {fmt(p['median_min'])}..{fmt(p['median_max'])}"
                 f" | {fmt(p['p10'][i])}-{fmt(p['p90'][i])} |")
    L.append("")
    for res in results:
        L.append(f"## `{res['dir']}` (trace clock {res['clock']}"
                 + (f", TSC {res['tsc_mhz']} MHz" if res["tsc_mhz"] else "") + ")")
        L.append("")
        L.append("perf bench's own figures per repeat:")
        L.append("")
        L.append("| workload | figure | repeats | min..max |")
        L.append("|---|---|---|---|")
        for wl, sp in res["spread"].items():
            for k, vals in sp["bench"].items():
                present = [v for v in vals if v is not None]
                L.append(f"| {wl} | {k} | {' / '.join('-' if v is None else str(v) for v in vals)} "
                         f"| {min(present)}..{max(present)} |")
        L.append("")
        L.append("Durations in ns (`us` where marked). Per repeat: median (n); p10-p90 of the "
                 "repeat with the most samples; spread = min..max of the repeat medians.")
        L.append("")
        L.append("| path | workload | medians per repeat (n) | p10-p90 | spread of medians |")
        L.append("|---|---|---|---|---|")
        for label, key in MD_ROWS:
            for wl, sp in res["spread"].items():
                p = sp["paths"].get(key)
                if not p or sum(p["counts"]) < MIN_N:
                    continue
                best = max(range(len(p["counts"])), key=lambda i: p["counts"][i])
                meds = " / ".join(f"{fmt(m)} ({n})" for m, n in zip(p["medians"], p["counts"]))
                L.append(f"| {label} | {wl} | {meds} | {fmt(p['p10'][best])}-{fmt(p['p90'][best])}"
                         f" | {fmt(p['median_min'])}..{fmt(p['median_max'])} |")
        L.append("")
        L.append("Gaps between two consecutive records on one CPU (per repeat, ns): the smallest "
                 "nonzero one bounds the cost of writing one record from above. (On the TSC clock "
                 "a zero gap is a record written from an interrupt while another was being "
                 "reserved, rare; on the default clock every gap under 1 us reads as 0.)")
        L.append("")
        for name, run in sorted(res["runs"].items()):
            L.append(f"- {name}: min nonzero per CPU {run['gap_min_nonzero_ns']}, 0.1th percentile "
                     f"of gaps under 2 us {run['gap_p01_ns']}, zero gaps {run['gap_zero_count']}; CPUs with cpu_idle records: "
                     f"{run['cpus_with_cpu_idle_records']}; busiest comms: "
                     + ", ".join(f"{k} {v}" for k, v in list(run["top_comms"].items())[:5]))
        L.append("")
    gaps = [g for res in results if res["tsc_mhz"] for run in res["runs"].values()
            for g in run["gap_min_nonzero_ns"].values()]
    L.append(CAVEATS.replace("{gap_range}", f"{min(gaps)}-{max(gaps)} ns" if gaps else "n/a"))
    return "\n".join(L) + "\n"


METHOD = """## Method

Each capture (tools/measure/trace-paths.sh) enables, through tracefs, the tracepoint pairs that
bracket the paths the model charges, runs one workload, and saves the trace buffer:
`perf bench sched pipe -l 20000` (two processes, both CPUs), `perf bench sched messaging -g 1
-l 100` (40 processes), `taskset -c 0 perf bench sched pipe -l 20000` (one CPU) and a loop of
`nanosleep(1 us)` for 1 s, three repeats each. The `paths-tsc` set uses the `x86-tsc` trace clock
(raw TSC counts, converted with the `cpu MHz` of /proc/cpuinfo, so ns resolution); the older
`paths` set used the default clock (us resolution, so its figures are quantised to 1000 ns).

A path's duration is the time between its two records on one CPU: handler entry to exit
(csd function, softirq, local timer, reschedule and call-function-single vectors, hrtimer and
timer_list callbacks matched by address), a syscall's sys_enter to sys_exit of one pid (split by
whether a sched_switch away from that pid came in between), a cpu_idle exit to the next record
of that CPU. Two paths cross CPUs and use both CPUs' TSCs: an ipi_send_cpu to the first handler
entry of the right vector on the target (split by whether the target was idle), and a
sched_waking to the sched_switch that puts that pid on a CPU (split by same/cross CPU and by
whether that CPU was idle at the waking). On a busy CPU wake-to-run includes waiting behind the
running task (the rest of its time slice or syscall), so it is a latency, not a path cost.

The context switch itself cannot be isolated with tracepoints: there is no record at the start
of `__schedule()` nor at the end of `finish_task_switch()`. What can be measured is the time from
the outgoing task's last record (usually its `sys_enter` of the blocking read/futex, so this
includes the syscall's path to `schedule()`) to `sched_switch`, and from `sched_switch` to the
incoming task's first record (usually its `sys_exit`, so this includes `finish_task_switch()`
and the rest of the return from the syscall; for the idle task, its `cpu_idle` entry). The sum of
the two medians bounds from above what the model's context-switch cost should be.
"""

CAVEATS = """## Caveats

- **Virtualised, 2 vCPUs, shared host.** The guest's vCPUs are host threads; a vCPU can be
  descheduled by the host at any time, so every distribution has a long tail that is not the
  kernel's, and repeats move by the spread shown. Other engineers' processes share this guest
  (the busiest comms per trace are listed above; e.g. dpkg/apt-get ran during pipe-1).
- **Halted vCPUs.** With haltpoll and `guest_halt_poll_ns=0`, an idle vCPU executes HLT and exits
  to the host; an IPI to it is a host wakeup of a sleeping thread. The IPI and wake-to-run
  latencies to an idle target include that host round trip and are not a bare-metal figure.
- **Tracing overhead.** Every record costs the time to write it: the smallest nonzero gap
  between two records of one CPU, over all TSC-clock repeats, is {gap_range}, an upper bound
  on one record (it includes whatever code ran between the two tracepoints). A path with k
  records inside it is inflated by about k times that. Entry->exit pairs with nothing inside (an empty
  csd function) are close to one record's cost.
- **Missing records.** On these captures CPU 1 logs no `cpu_idle` and no `sched_switch` away from
  its idle task, and the session environment's own processes (tokio-rt-worker and others) log
  no task-context records at all. For CPU 1 the idle state is taken from whether idle is the current task, and a wakeup
  whose switch-in record is missing is measured to the woken pid's first record on that CPU
  (rows marked "no switch rec"): an upper bound of wake-to-run.
- **Cross-CPU times** assume the two vCPUs' TSCs agree. Check: an offset would shift the
  CPU0->CPU1 and CPU1->CPU0 IPI latencies in opposite directions by the same amount; their
  medians (rows "IPI csd idle target, CPU0->CPU1 / CPU1->CPU0") agree to within the repeat
  spread (e.g. pipe-2: 14.2 vs 13.8 us), so any offset is well under a microsecond.
- **perf bench's figures were taken with tracing on** (usecs/op includes the cost of every
  record written during the run); they are not the untraced benchmark result.
- **Placement decides the pipe figures.** In pipe-1 of the TSC set both tasks ended up on one
  CPU (8 us/op, few idle transitions); in pipe-2/3 and all of the older set they ran on
  different CPUs and every op crossed an IPI to a halted vCPU (45-54 us/op). The spread across
  repeats is this bimodality, not noise.
- **Idle transitions are expensive here.** `cpu_idle` exit -> next record and switch -> idle's
  `cpu_idle` entry are about 1-2 us in some runs and 7-10 us in others (pipe-2/3); tick_stop
  was not traced in this set, so whether the slow case is the NOHZ tick restart/stop
  (reprogramming the local timer, a VM exit) could not be confirmed.
- **The default-clock set** (`paths`) has 1 us resolution: its sub-microsecond paths read as 0 or
  1000 ns.
"""


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dirs", nargs="+")
    ap.add_argument("--json", default="measured-paths.json")
    ap.add_argument("--md", default=None)
    a = ap.parse_args()
    results = []
    for d in a.dirs:
        if not os.path.isdir(d):
            raise SystemExit(f"path_costs: {d}: not a directory")
        results.append(analyse_dir(d))
    tracelib.write_json(a.json, {"captures": results})
    cmd = "python3 tools/measure/path_costs.py " + " ".join(a.dirs) + \
        f" --json {a.json}" + (f" --md {a.md}" if a.md else "")
    md = markdown(results, cmd)
    if a.md:
        tracelib.write_atomic(a.md, md)
    else:
        sys.stdout.write(md)


if __name__ == "__main__":
    main()
