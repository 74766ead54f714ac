#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Background activity of an idle (or lightly loaded) machine, from one ftrace capture.

usage: background.py TRACE[.gz] [--json OUT.json] [--quiet]

Reads a capture taken by tools/measure/trace-idle.sh (events: sched, workqueue, timer, rcu,
irq, irq_vectors, ipi, csd, power:cpu_idle) and reports, as data:
- per workqueue work function: runs/s per CPU, bound (kworker/N:M) or unbound (kworker/uN:M)
  worker, workqueue name, who queued it (which timer/irq/task), whether the delayed-work timer
  was deferrable (flags of its timer_start), interval and duration quantiles;
- per timer_list and hrtimer callback: expiries/s per CPU, callback duration quantiles, timer
  flags, and what each expiry led to (wakeups of which comm, work queued, softirqs raised);
- softirq raises per vector per second per CPU, who raised them (the tick or something else),
  and softirq duration quantiles;
- per comm of every woken task: wakeups/s, CPU placement, run length per wakeup, CPU time;
  kernel threads separated from user tasks;
- local_timer interrupts per second per CPU while idle and while busy, the tick period
  (HZ) derived from the jiffies in timer_expire_entry, cpu_idle entries by state, IPIs by kind.
All durations are in ns; the input resolution is whatever the trace clock gave (the default
clock prints us, so sub-us figures are quantised).
"""
import argparse
import collections
import re
import sys

import tracelib

KTHREAD_RE = re.compile(
    r"^(kworker/|rcu_|rcuog|rcuop|ksoftirqd/|migration/|watchdog|cpuhp/|kcompactd|kdamond|"
    r"khugepaged|kswapd|kthreadd|jbd2/|kauditd|oom_reaper|irq/|idle_inject/|khungtaskd|"
    r"kintegrityd|kblockd|writeback|ext4-|scsi_|hwrng|kstrp|ipv6_addrconf|psimon|"
    r"pool_workqueue|kerneloops|kdevtmpfs|kthrotld|ksmd|zswap|kmpath|napi/|vhost-|"
    r"khvcd|kpsmoused|ttm|card\d|krfcommd)"
)
VEC_NAMES = ["HI", "TIMER", "NET_TX", "NET_RX", "BLOCK", "IRQ_POLL", "TASKLET", "SCHED",
             "HRTIMER", "RCU"]
UNBOUND_RE = re.compile(r"^kworker/u\d+:")
BOUND_RE = re.compile(r"^kworker/(\d+):\d+H?$")
# A run is charged to the part of the trace with task context; idle's pid is 0.


def comm_group(comm):
    """Per-CPU kernel threads of one kind as one group: migration/N, ksoftirqd/N, kworker/N."""
    return re.sub(r"/\d+", "/N", comm_class(comm))


def is_kthread(comm):
    return bool(KTHREAD_RE.match(comm))


def comm_class(comm):
    """Group per-CPU kernel threads into one name: 'kworker/N:M' -> 'kworker/N', etc."""
    m = re.match(r"^(kworker/u?\d+):\d+(H?)$", comm)
    if m:
        return m.group(1) + (":H" if m.group(2) else "")
    return comm


class Analyzer:
    def __init__(self, path):
        self.path = path
        self.ncpu = 0
        self.t0 = None
        self.t1 = None
        # per CPU state
        self.cur = {}  # cpu -> pid currently running (task context)
        self.cur_comm = {}
        self.cur_start = {}
        self.cur_inferred = {}
        self.last_cur_ts = {}
        self.vecs = {}  # cpu -> IPI vector handler in progress
        self.hr = {}  # cpu -> [function, start]
        self.tl = {}  # cpu -> [function, start, timer]
        self.sirq = {}  # cpu -> [vec, start]
        self.ltimer = {}  # cpu -> start
        self.hirq = {}  # cpu -> [name, start]
        self.wq = {}  # cpu -> [func, start, comm]
        self.busy_ns = collections.Counter()
        self.inferred_switch_in = collections.Counter()
        # results
        self.wq_runs = collections.defaultdict(list)  # func -> [(cpu, start, dur, worker)]
        self.wq_queue = collections.defaultdict(collections.Counter)  # func -> Counter(origin)
        self.wq_name = collections.defaultdict(collections.Counter)
        self.wq_queue_ts = collections.defaultdict(list)  # func -> [(cpu, ts)]
        self.timer_flags = {}  # timer addr -> (function, flags)
        self.tflags_by_func = collections.defaultdict(collections.Counter)
        self.wq_timer_flags = collections.defaultdict(collections.Counter)
        self.tl_runs = collections.defaultdict(list)  # func -> [(cpu, start, dur)]
        self.hr_runs = collections.defaultdict(list)
        self.led_to = collections.defaultdict(collections.Counter)  # "timer:f" -> Counter
        self.sirq_raise = collections.defaultdict(collections.Counter)  # vec -> Counter(cpu)
        self.sirq_raise_origin = collections.defaultdict(collections.Counter)
        self.sirq_raise_ts = collections.defaultdict(list)  # (vec, cpu) -> [ts]
        self.sirq_runs = collections.defaultdict(list)  # vec -> [(cpu, start, dur)]
        self.wakeups = collections.defaultdict(list)  # comm -> [(ts, target_cpu, waker)]
        self.comm_pids = collections.defaultdict(set)
        self.comm_prio = {}
        self.runs = collections.defaultdict(list)  # comm -> [dur] (switch-in .. switch-out)
        self.runs_inferred = collections.Counter()
        self.runs_upper = collections.defaultdict(list)
        self.runs_upper_cpu = collections.defaultdict(list)
        self.group_runs = collections.defaultdict(list)  # group -> [(dur, origin)]
        self.pending_origin = {}  # pid -> origin of its last wakeup, taken at switch-in
        self.cur_origin = {}  # cpu -> origin of the wakeup that started the current run
        self.runs_by_origin = collections.defaultdict(lambda: collections.defaultdict(list))
        self.cpu_time = collections.Counter()  # comm -> ns on CPU
        self.ltimer_entries = collections.Counter()  # (cpu, 'idle'|'busy')
        self.ltimer_durs = collections.defaultdict(list)
        self.tick_hr_ts = collections.defaultdict(list)  # cpu -> [ts] tick_nohz_handler
        self.tick_raise = collections.Counter()  # (vec, cpu, idle|busy) raised in the tick
        self.jiffies_pts = []  # (ts, jiffies)
        self.cpu_idle = collections.Counter()  # (cpu, state)
        self.idle_switch_in = collections.Counter()  # cpu -> switches to swapper
        self.ipi_send = collections.Counter()  # (kind, callsite)
        self.vec_entries = collections.Counter()  # (event, cpu)
        self.csd_funcs = collections.Counter()
        self.wake_idle_no_ipi = 0
        self.rcu_util = collections.Counter()
        self.lost = 0
        self.last_ts_cpu = {}
        self.nrec = 0

    # -- helpers
    def origin(self, cpu, rec):
        """What this CPU is doing when `rec` happens: the innermost known handler."""
        if cpu in self.hr:
            return "hrtimer:" + self.hr[cpu][0]
        if rec.ctx == "h" and cpu in self.hirq:
            return "irq:" + self.hirq[cpu][0]
        if rec.ctx == "h" and cpu in self.vecs:
            return "ipi:" + self.vecs[cpu]
        if rec.ctx == "h" and cpu in self.ltimer:
            return "local_timer"
        if rec.ctx == "h":
            return "hardirq:other"
        if cpu in self.tl:
            return "timer:" + self.tl[cpu][0]
        if rec.ctx == "s" and cpu in self.sirq:
            return "softirq:" + self.sirq[cpu][0]
        if cpu in self.wq:
            return "work:" + self.wq[cpu][0]
        if rec.pid == 0:
            return "idle"
        return "task:" + comm_class(rec.comm)

    def switch_in(self, cpu, pid, comm, ts, inferred):
        self.cur[cpu] = pid
        self.cur_comm[cpu] = comm
        self.cur_start[cpu] = ts
        self.cur_inferred[cpu] = inferred
        self.cur_origin[cpu] = self.pending_origin.pop(pid, None) if pid else None
        if inferred:
            self.inferred_switch_in[cpu] += 1

    def switch_out(self, cpu, ts, ts_upper=None):
        """Close the current run at ts; ts_upper (when the switch was not seen) is the record
        that revealed it, so [ts, ts_upper] brackets the true end."""
        pid = self.cur.get(cpu)
        if pid is None or cpu not in self.cur_start:
            return
        d = ts - self.cur_start[cpu]
        if pid != 0:
            comm = self.cur_comm[cpu]
            up = (ts_upper if ts_upper is not None else ts) - self.cur_start[cpu]
            self.runs_upper[comm].append(up)
            self.runs_upper_cpu[(comm, cpu)].append(up)
            self.group_runs[comm_group(comm)].append(
                (d, self.cur_origin.get(cpu) or "(no wakeup: preempted/continuing)"))
            self.busy_ns[cpu] += d
            self.cpu_time[comm] += d
            self.runs[comm].append(d)
            o = self.cur_origin.get(cpu) or "(no wakeup: preempted/continuing)"
            self.runs_by_origin[comm][o].append(d)
            if self.cur_inferred[cpu]:
                self.runs_inferred[comm] += 1

    def feed(self, r):
        self.nrec += 1
        cpu, ts, ev = r.cpu, r.ts, r.event
        if self.t0 is None:
            self.t0 = ts
        self.t1 = ts
        self.ncpu = max(self.ncpu, cpu + 1)
        # Track the running task. Some captures lose every task-context record of some tasks
        # (CPU 1's idle task, the guest agent's threads): a record whose pid differs from the
        # task we think is current means a switch we did not see. The old task's run is closed
        # at its last visible record and the new one opened at this record (both bounds are
        # inner bounds of the true interval); counted in inferred_switch_in.
        if ev != "sched_switch":
            if cpu not in self.cur:
                self.switch_in(cpu, r.pid, r.comm, ts, False)
            elif self.cur[cpu] != r.pid:
                self.switch_out(cpu, self.last_cur_ts.get(cpu, ts), ts)
                self.switch_in(cpu, r.pid, r.comm, ts, True)
            self.last_cur_ts[cpu] = ts

        if ev == "sched_switch":
            m = tracelib.SWITCH_RE.search(r.args)
            if not m:
                return
            prev_pid, next_comm, next_pid = int(m.group(2)), m.group(5), int(m.group(6))
            if cpu in self.cur:
                if self.cur[cpu] != prev_pid:
                    # lost the switch to prev: close the run we knew at its last record
                    self.switch_out(cpu, self.last_cur_ts.get(cpu, ts), ts)
                    self.inferred_switch_in[cpu] += 1
                else:
                    self.switch_out(cpu, ts)
            self.switch_in(cpu, next_pid, next_comm, ts, False)
            self.last_cur_ts[cpu] = ts
            if next_pid == 0:
                self.idle_switch_in[cpu] += 1
        elif ev in ("sched_wakeup", "sched_wakeup_new"):
            m = tracelib.WAKE_RE.search(r.args)
            if m:
                comm, pid, prio, tcpu = m.group(1), int(m.group(2)), int(m.group(3)), int(m.group(4))
                o = self.origin(cpu, r)
                self.wakeups[comm].append((ts, tcpu, o, cpu, ev == "sched_wakeup_new"))
                self.pending_origin[pid] = o
                self.comm_pids[comm].add(pid)
                self.comm_prio[comm] = prio
                for key in self.active_keys(cpu, r):
                    self.led_to[key]["wake:" + comm_class(comm)] += 1
        elif ev == "sched_wake_idle_without_ipi":
            self.wake_idle_no_ipi += 1
        elif ev == "workqueue_queue_work":
            kv = r.kv()
            f = kv.get("function", "?")
            self.wq_queue[f][self.origin(cpu, r)] += 1
            self.wq_name[f][kv.get("workqueue", "?")] += 1
            self.wq_queue_ts[f].append((cpu, ts))
            if cpu in self.tl and self.tl[cpu][0] == "delayed_work_timer_fn":
                fl = self.timer_flags.get(self.tl[cpu][2], (None, "?"))[1]
                self.wq_timer_flags[f][fl] += 1
            for key in self.active_keys(cpu, r):
                self.led_to[key]["work:" + f] += 1
        elif ev == "workqueue_execute_start":
            m = re.search(r"function (\S+)", r.args)
            self.wq[cpu] = [m.group(1) if m else "?", ts, r.comm]
        elif ev == "workqueue_execute_end":
            w = self.wq.pop(cpu, None)
            if w:
                self.wq_runs[w[0]].append((cpu, w[1], ts - w[1], w[2]))
        elif ev == "timer_start":
            kv = r.kv()
            fl = kv.get("flags", "")
            self.timer_flags[kv.get("timer")] = (kv.get("function"), fl)
            self.tflags_by_func[kv.get("function")][fl] += 1
        elif ev == "timer_expire_entry":
            kv = r.kv()
            self.tl[cpu] = [kv.get("function", "?"), ts, kv.get("timer")]
            if "now" in kv:
                try:
                    self.jiffies_pts.append((ts, int(kv["now"])))
                except ValueError:
                    pass
        elif ev == "timer_expire_exit":
            t = self.tl.pop(cpu, None)
            if t:
                self.tl_runs[t[0]].append((cpu, t[1], ts - t[1]))
        elif ev == "hrtimer_expire_entry":
            kv = r.kv()
            f = kv.get("function", "?")
            self.hr[cpu] = [f, ts]
            if f == "tick_nohz_handler" or f == "tick_sched_timer":
                self.tick_hr_ts[cpu].append((ts, r.pid == 0))
        elif ev == "hrtimer_expire_exit":
            h = self.hr.pop(cpu, None)
            if h:
                self.hr_runs[h[0]].append((cpu, h[1], ts - h[1]))
        elif ev == "softirq_raise":
            v = self.vec(r)
            self.sirq_raise[v][cpu] += 1
            self.sirq_raise_origin[v][self.origin(cpu, r)] += 1
            self.sirq_raise_ts[(v, cpu)].append(ts)
            if cpu in self.hr and self.hr[cpu][0] in ("tick_nohz_handler", "tick_sched_timer"):
                self.tick_raise[(v, cpu, "idle" if r.pid == 0 else "busy")] += 1
            for key in self.active_keys(cpu, r):
                self.led_to[key]["softirq:" + v] += 1
        elif ev == "softirq_entry":
            self.sirq[cpu] = [self.vec(r), ts]
        elif ev == "softirq_exit":
            s = self.sirq.pop(cpu, None)
            if s:
                self.sirq_runs[s[0]].append((cpu, s[1], ts - s[1]))
        elif ev == "local_timer_entry":
            self.ltimer[cpu] = ts
            self.ltimer_entries[(cpu, "idle" if r.pid == 0 else "busy")] += 1
        elif ev == "local_timer_exit":
            s = self.ltimer.pop(cpu, None)
            if s is not None:
                self.ltimer_durs[cpu].append(ts - s)
        elif ev == "irq_handler_entry":
            kv = r.kv()
            self.hirq[cpu] = [kv.get("name", "irq" + kv.get("irq", "?")), ts]
            self.vec_entries[("irq:" + self.hirq[cpu][0], cpu)] += 1
        elif ev == "irq_handler_exit":
            self.hirq.pop(cpu, None)
        elif ev == "cpu_idle":
            kv = r.kv()
            st = int(kv.get("state", "-1"))
            c = int(kv.get("cpu_id", cpu))
            self.cpu_idle[(c, "exit" if st == tracelib.IDLE_EXIT_STATE else str(st))] += 1
        elif ev == "ipi_send_cpu":
            kv = r.kv()
            cb = kv.get("callback", "?").split("+")[0]
            cs = kv.get("callsite", "?").split("+")[0]
            self.ipi_send[("ipi_send_cpu", cs, cb)] += 1
        elif ev == "ipi_send_cpumask":
            kv = r.kv()
            cb = kv.get("callback", "?").split("+")[0]
            cs = kv.get("callsite", "?").split("+")[0]
            self.ipi_send[("ipi_send_cpumask", cs, cb)] += 1
        elif ev == "csd_queue_cpu":
            self.csd_funcs[r.kv().get("func", "?")] += 1
        elif ev == "rcu_utilization":
            self.rcu_util[r.args.strip()] += 1
        elif ev.endswith("_entry") and ev not in ("csd_function_entry",):
            self.vec_entries[(ev, cpu)] += 1
            self.vecs[cpu] = ev[: -len("_entry")]
        elif ev.endswith("_exit") and ev not in ("csd_function_exit",):
            self.vecs.pop(cpu, None)

    def vec(self, r):
        m = re.search(r"action=(\w+)", r.args)
        if m:
            return m.group(1)
        m = re.search(r"vec=(\d+)", r.args)
        return VEC_NAMES[int(m.group(1))] if m and int(m.group(1)) < len(VEC_NAMES) else "?"

    def active_keys(self, cpu, r):
        keys = []
        if cpu in self.hr:
            keys.append("hrtimer:" + self.hr[cpu][0])
        if cpu in self.tl and not (r.ctx == "h"):
            keys.append("timer:" + self.tl[cpu][0])
        if cpu in self.wq and r.ctx == "":
            keys.append("work:" + self.wq[cpu][0])
        if r.ctx == "h" and cpu in self.hirq:
            keys.append("irq:" + self.hirq[cpu][0])
        return keys

    # -- results
    def result(self):
        dur_s = (self.t1 - self.t0) / 1e9
        ncpu = self.ncpu
        out = {"trace": self.path, "duration_s": round(dur_s, 3), "ncpu": ncpu,
               "records": self.nrec}
        # HZ from jiffies of timer_expire_entry (now= is jiffies for timer_list expiries)
        hz = None
        if len(self.jiffies_pts) >= 2:
            (ta, ja), (tb, jb) = self.jiffies_pts[0], self.jiffies_pts[-1]
            if tb > ta:
                hz = (jb - ja) / ((tb - ta) / 1e9)
        out["hz_from_jiffies"] = round(hz, 2) if hz else None
        # tick period from consecutive tick hrtimer expiries while the CPU was busy
        gaps = []
        for cpu, lst in self.tick_hr_ts.items():
            for (a, ia), (b, ib) in zip(lst, lst[1:]):
                if not ia and not ib:
                    gaps.append(b - a)
        out["tick_gap_busy_ns"] = tracelib.summarize(gaps)
        ticks = {}
        for c in range(ncpu):
            lst = self.tick_hr_ts.get(c, [])
            n_idle = sum(1 for _, i in lst if i)
            n_busy = len(lst) - n_idle
            d = {"ticks_idle": n_idle, "ticks_busy": n_busy,
                 "ticks_per_s": round(len(lst) / dur_s, 3)}
            for (v, cc, st), n in sorted(self.tick_raise.items()):
                if cc == c:
                    base = n_idle if st == "idle" else n_busy
                    d[f"{v}_per_tick_{st}"] = round(n / base, 4) if base else None
            ticks[str(c)] = d
        out["tick"] = ticks
        out["busy_fraction"] = {str(c): round(self.busy_ns[c] / (self.t1 - self.t0), 5)
                                for c in range(ncpu)}
        out["inferred_switch_in"] = {str(c): self.inferred_switch_in[c] for c in range(ncpu)}
        out["idle_switch_in"] = {str(c): self.idle_switch_in[c] for c in range(ncpu)}

        def per_cpu_rate(counter):
            return {str(c): round(counter.get(c, 0) / dur_s, 4) for c in range(ncpu)}

        # workqueue
        wq = {}
        for f, runs in sorted(self.wq_runs.items(), key=lambda kv: -len(kv[1])):
            per_cpu = collections.Counter(c for c, _, _, _ in runs)
            workers = collections.Counter(
                "unbound" if UNBOUND_RE.match(w) else ("bound" if BOUND_RE.match(w) else w)
                for _, _, _, w in runs)
            by_cpu = collections.defaultdict(list)
            for c, s, _, _ in runs:
                by_cpu[c].append(s)
            ivals_cpu = []
            for c, l in by_cpu.items():
                l.sort()
                ivals_cpu += [b - a for a, b in zip(l, l[1:])]
            alls = sorted(s for _, s, _, _ in runs)
            ivals_all = [b - a for a, b in zip(alls, alls[1:])]
            wq[f] = {
                "runs": len(runs),
                "runs_per_s": round(len(runs) / dur_s, 4),
                "runs_per_s_per_cpu": per_cpu_rate(per_cpu),
                "workers": dict(workers),
                "workqueue": dict(self.wq_name.get(f, {})),
                "queued_from": dict(self.wq_queue.get(f, {}).most_common(6)),
                "delayed_timer_flags": dict(self.wq_timer_flags.get(f, {})),
                "duration_ns": tracelib.summarize([d for _, _, d, _ in runs]),
                "duration_raw_ns": [d for _, _, d, _ in runs],
                "interval_same_cpu_ns": tracelib.summarize(ivals_cpu),
                "interval_any_cpu_ns": tracelib.summarize(ivals_all),
            }
        out["workqueue"] = wq

        def timers(runs_map, prefix):
            res = {}
            for f, runs in sorted(runs_map.items(), key=lambda kv: -len(kv[1])):
                per_cpu = collections.Counter(c for c, _, _ in runs)
                by_cpu = collections.defaultdict(list)
                for c, s, _ in runs:
                    by_cpu[c].append(s)
                iv = []
                for l in by_cpu.values():
                    l.sort()
                    iv += [b - a for a, b in zip(l, l[1:])]
                led = self.led_to.get(prefix + f, collections.Counter())
                res[f] = {
                    "expiries": len(runs),
                    "per_s": round(len(runs) / dur_s, 4),
                    "per_s_per_cpu": per_cpu_rate(per_cpu),
                    "duration_ns": tracelib.summarize([d for _, _, d in runs]),
                    "interval_same_cpu_ns": tracelib.summarize(iv),
                    "led_to": dict(led.most_common(10)),
                }
                if prefix == "timer:":
                    res[f]["start_flags"] = dict(self.tflags_by_func.get(f, {}))
            return res

        out["timer"] = timers(self.tl_runs, "timer:")
        out["hrtimer"] = timers(self.hr_runs, "hrtimer:")

        sirq = {}
        for v in sorted(set(self.sirq_raise) | set(self.sirq_runs)):
            runs = self.sirq_runs.get(v, [])
            per_cpu = collections.Counter(c for c, _, _ in runs)
            sirq[v] = {
                "raises": sum(self.sirq_raise[v].values()),
                "raises_per_s_per_cpu": per_cpu_rate(self.sirq_raise[v]),
                "raised_from": dict(self.sirq_raise_origin[v].most_common(8)),
                "runs_per_s_per_cpu": per_cpu_rate(per_cpu),
                "duration_ns": tracelib.summarize([d for _, _, d in runs]),
            }
        out["softirq"] = sirq

        tasks = {}
        for comm, w in sorted(self.wakeups.items(), key=lambda kv: -len(kv[1])):
            runs = self.runs.get(comm, [])
            tasks[comm] = {
                "kthread": is_kthread(comm),
                "pids": sorted(self.comm_pids[comm])[:8],
                "prio": self.comm_prio.get(comm),
                "wakeups": len(w),
                "wakeups_per_s": round(len(w) / dur_s, 4),
                "forks": sum(1 for x in w if x[4]),
                "target_cpus": {str(k): v for k, v in sorted(collections.Counter(
                    x[1] for x in w).items())},
                "woken_from": dict(collections.Counter(x[2] for x in w).most_common(6)),
                "run_ns": tracelib.summarize(runs),
                "run_ns_upper": tracelib.summarize(self.runs_upper.get(comm, [])),
                "run_ns_upper_by_cpu": {str(c): tracelib.summarize(self.runs_upper_cpu[(comm, c)])
                                        for c in range(ncpu) if (comm, c) in self.runs_upper_cpu},
                "wakeup_interval_ns": tracelib.summarize(
                    [b[0] - a[0] for a, b in zip(w, w[1:])]),
                "runs_with_inferred_start": self.runs_inferred.get(comm, 0),
                "run_ns_by_wakeup_origin": {
                    o: tracelib.summarize(v) for o, v in sorted(
                        self.runs_by_origin.get(comm, {}).items(), key=lambda kv: -len(kv[1]))[:6]},
                "cpu_time_ms": round(self.cpu_time.get(comm, 0) / 1e6, 3),
            }
        out["tasks"] = tasks
        groups = {}
        gw = collections.defaultdict(list)
        for comm, w in self.wakeups.items():
            gw[comm_group(comm)] += [x[0] for x in w]
        for g, runs in sorted(self.group_runs.items(), key=lambda kv: -len(kv[1])):
            byo = collections.defaultdict(list)
            for d, o in runs:
                byo[o].append(d)
            wts = sorted(gw.get(g, []))
            groups[g] = {
                "kthread": is_kthread(g.replace("/N", "/0")),
                "wakeups": len(wts),
                "wakeups_per_s": round(len(wts) / dur_s, 4),
                "wakeup_interval_ns": tracelib.summarize([b - a for a, b in zip(wts, wts[1:])]),
                "run_ns": tracelib.summarize([d for d, _ in runs]),
                "cpu_time_ms": round(sum(d for d, _ in runs) / 1e6, 3),
                "run_ns_by_wakeup_origin": {o: tracelib.summarize(v) for o, v in sorted(
                    byo.items(), key=lambda kv: -len(kv[1]))[:6]},
            }
        out["task_groups"] = groups
        out["cpu_time_ms_by_comm"] = {k: round(v / 1e6, 3)
                                      for k, v in self.cpu_time.most_common()}
        lt = {}
        for c in range(ncpu):
            lt[str(c)] = {
                "per_s_idle": round(self.ltimer_entries[(c, "idle")] / dur_s, 3),
                "per_s_busy": round(self.ltimer_entries[(c, "busy")] / dur_s, 3),
                "per_s": round((self.ltimer_entries[(c, "idle")]
                                + self.ltimer_entries[(c, "busy")]) / dur_s, 3),
                "duration_ns": tracelib.summarize(self.ltimer_durs[c]),
            }
        out["local_timer"] = lt
        out["cpu_idle_per_s"] = {f"cpu{c}/{s}": round(n / dur_s, 3)
                                 for (c, s), n in sorted(self.cpu_idle.items())}
        out["cpu_idle_counts"] = {f"cpu{c}/{s}": n for (c, s), n in sorted(self.cpu_idle.items())}
        out["ipi_send_per_s"] = {f"{k}|{cs}|{cb}": round(n / dur_s, 4)
                                 for (k, cs, cb), n in self.ipi_send.most_common()}
        out["csd_queued_per_s"] = {k: round(n / dur_s, 4) for k, n in self.csd_funcs.most_common()}
        out["vector_entries_per_s"] = {f"{ev}/cpu{c}": round(n / dur_s, 4)
                                       for (ev, c), n in sorted(self.vec_entries.items())}
        out["wake_idle_without_ipi"] = self.wake_idle_no_ipi
        out["rcu_utilization_per_s"] = {k: round(n / dur_s, 3) for k, n in self.rcu_util.items()}
        return out


def fmt_ns(x):
    if x is None:
        return "-"
    if x >= 1e6:
        return f"{x/1e6:.2f}ms"
    if x >= 1e3:
        return f"{x/1e3:.1f}us"
    return f"{x:.0f}ns"


def q(d, k):
    return fmt_ns(d.get(k)) if d else "-"


def print_summary(res, f=sys.stdout):
    p = lambda *a: print(*a, file=f)
    dur = res["duration_s"]
    p(f"trace {res['trace']}: {dur:.1f} s, {res['ncpu']} CPUs, {res['records']} records")
    p(f"HZ from jiffies in timer_expire_entry: {res['hz_from_jiffies']};"
      f" tick gap while busy: p50 {q(res['tick_gap_busy_ns'], 'p50')}"
      f" (n={res['tick_gap_busy_ns']['n']})")
    p(f"busy fraction per CPU: {res['busy_fraction']}; switch-ins inferred (lost switch"
      f" record): {res['inferred_switch_in']}; switches to idle: {res['idle_switch_in']}")
    p("\n== workqueue work functions (runs/s per CPU; duration p50/p90/max; same-CPU interval p50)")
    for fn, w in res["workqueue"].items():
        p(f"  {fn:32s} {w['runs']:5d} runs {w['runs_per_s_per_cpu']} {w['workers']}"
          f" wq={','.join(w['workqueue'])} dur {q(w['duration_ns'],'p50')}/"
          f"{q(w['duration_ns'],'p90')}/{q(w['duration_ns'],'max')}"
          f" ival {q(w['interval_same_cpu_ns'],'p50')} flags={w['delayed_timer_flags']}"
          f" from={list(w['queued_from'])[:2]}")
    for kind in ("timer", "hrtimer"):
        p(f"\n== {kind} callbacks (per s per CPU; duration p50/p90/max; led to)")
        for fn, t in res[kind].items():
            p(f"  {fn:28s} {t['expiries']:5d} {t['per_s_per_cpu']} dur {q(t['duration_ns'],'p50')}/"
              f"{q(t['duration_ns'],'p90')}/{q(t['duration_ns'],'max')}"
              f" ival {q(t['interval_same_cpu_ns'],'p50')} {t.get('start_flags','')}"
              f" -> {dict(list(t['led_to'].items())[:4])}")
    p("\n== softirqs (raises/s per CPU; duration p50/p90/max; raised from)")
    for v, s in res["softirq"].items():
        p(f"  {v:8s} {s['raises']:6d} {s['raises_per_s_per_cpu']} dur {q(s['duration_ns'],'p50')}/"
          f"{q(s['duration_ns'],'p90')}/{q(s['duration_ns'],'max')}"
          f" from {dict(list(s['raised_from'].items())[:4])}")
    for kt in (True, False):
        p(f"\n== woken tasks: {'kernel threads' if kt else 'user tasks'}"
          " (wakeups/s, target CPUs, run p50/p90/max, CPU ms)")
        for comm, t in res["tasks"].items():
            if t["kthread"] != kt:
                continue
            p(f"  {comm:20s} {t['wakeups_per_s']:8.3f}/s cpus={t['target_cpus']}"
              f" run {q(t['run_ns'],'p50')}/{q(t['run_ns'],'p90')}/{q(t['run_ns'],'max')}"
              f" cpu {t['cpu_time_ms']}ms prio={t['prio']} from={list(t['woken_from'])[:3]}")
    p("\n== tick (tick_nohz_handler) per CPU and softirqs raised per tick: " + str(res["tick"]))
    p("== local_timer per CPU: " + ", ".join(
        f"cpu{c}: {v['per_s']}/s ({v['per_s_idle']} idle, {v['per_s_busy']} busy),"
        f" dur p50 {q(v['duration_ns'],'p50')}" for c, v in res["local_timer"].items()))
    p(f"== cpu_idle per s: {res['cpu_idle_per_s']}")
    p(f"== IPIs sent per s: {res['ipi_send_per_s']}")
    p(f"== vector/irq entries per s: {res['vector_entries_per_s']}")
    p(f"== csd queued per s: {res['csd_queued_per_s']}; wake_idle_without_ipi:"
      f" {res['wake_idle_without_ipi']}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("trace")
    ap.add_argument("--json", help="write the result here (default: TRACE minus .trace.gz + .background.json)")
    ap.add_argument("--quiet", action="store_true")
    a = ap.parse_args()
    an = Analyzer(a.trace)
    try:
        for r in tracelib.records(a.trace):
            an.feed(r)
    except OSError as e:
        raise SystemExit(f"{a.trace}: {e}")
    if an.nrec == 0:
        raise SystemExit(f"{a.trace}: no trace records (expected ftrace text output)")
    res = an.result()
    if a.json:
        tracelib.write_json(a.json, res)
    if not a.quiet:
        print_summary(res)


if __name__ == "__main__":
    main()
