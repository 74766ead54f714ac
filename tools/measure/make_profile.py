#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Write a background profile (TOML) from background.py's JSON of an idle capture.

usage: make_profile.py IDLE.json [LIGHT.json] --out src/background/profiles/kvm-guest.toml

Which sources are listed, and of which kind, is decided here in SOURCES (a reviewed list, one
line per source with the reason); every number is computed from the JSON, and each source's
comment names the figure it came from and the same figure in the light capture when given.
"""
import argparse
import json
import sys

import tracelib

# (profile name, kind, cpus, where: (section, key), note)
# section: workqueue | hrtimer | task | group | tick
SOURCES = [
    ("vmstat_update", "percpu-work", "all", ("workqueue", "vmstat_update"),
     "per-CPU delayed work on mm_percpu_wq, queued by its own deferrable timer or by vmstat_shepherd"),
    ("vmstat_shepherd", "percpu-work", "0", ("workqueue", "vmstat_shepherd"),
     "one delayed work on system_wq; its timer was armed on CPU 0 and it ran only there"),
    ("psi_avgs_work", "unbound-work", "any", ("workqueue", "psi_avgs_work"),
     "one delayed work (root PSI group) on system_wq: a bound kworker of whichever CPU's timer "
     "fired, spread over both CPUs, so modelled as one instance on any CPU"),
    ("flush_memcg_stats_dwork", "unbound-work", "any", ("workqueue", "flush_memcg_stats_dwork"),
     "memcg stats flush, events_unbound"),
    ("neigh_managed_work", "percpu-work", "all", ("workqueue", "neigh_managed_work"),
     "really one item per neighbour table (IPv4, IPv6); on this 2-CPU guest they sat one per CPU"),
    ("kfree_rcu_monitor", "unbound-work", "any", ("workqueue", "kfree_rcu_monitor"),
     "kvfree_rcu batching monitor"),
    ("update_balloon_stats_func", "percpu-work", "1", ("workqueue", "update_balloon_stats_func"),
     "virtio-balloon stats: the host polls, the virtio0-stats irq (on CPU 1) queues the work; "
     "not timer-driven in the guest"),
    ("virtio_transport_tx_work", "percpu-work", "1", ("workqueue", "virtio_transport_tx_work"),
     "vsock tx completion: virtio3-tx irq on CPU 1 queues it (the guest agent's traffic); each run "
     "queues virtio_transport_send_pkt_work once more (merged here, <1 us)"),
    ("virtio_transport_rx_work", "percpu-work", "0", ("workqueue", "virtio_transport_rx_work"),
     "vsock rx: virtio3-rx irq on CPU 0 queues it"),
    ("watchdog", "watchdog", "all", ("hrtimer", "watchdog_timer_fn"),
     "softlockup hrtimer; every expiry woke migration/N (stopper runs softlockup_fn)"),
    ("RCU", "tick-softirq", "all", ("tick", "RCU"), "RCU_SOFTIRQ raised from the tick"),
    ("TIMER", "tick-softirq", "all", ("tick", "TIMER"),
     "TIMER_SOFTIRQ raised from the tick when a timer-wheel bucket is due"),
    ("rcu_preempt", "kthread", "any", ("task", "rcu_preempt"),
     "RCU grace-period kthread; woken by its own process_timeout timer, by RCU softirq and by IPI"),
    ("kcompactd0", "kthread", "any", ("task", "kcompactd0"),
     "proactive compaction check, woken by process_timeout (500 ms)"),
    ("kdamond.0", "kthread", "any", ("task", "kdamond.0"),
     "DAMON monitoring kthread (enabled on this guest), woken by process_timeout; the largest "
     "kernel CPU consumer of the idle capture"),
    ("ksoftirqd", "kthread", "all", ("group", "ksoftirqd/N"),
     "softirq overflow into ksoftirqd/N (rare when idle)"),
    ("other-kworker", "unbound-work", "any", ("other-work", None),
     "every other work function of the capture merged (I/O completion, writeback, cgroup "
     "release, neighbour GC, ...): runs of all of them pooled"),
    ("memfd:sealed-91", "daemon", "any", ("task", "memfd:sealed-91"),
     "a user-space process of this guest's session environment, woken mostly by an hrtimer "
     "(hrtimer_wakeup: a nanosleep/poll timeout), nearly always on CPU 0"),
    ("tokio-rt-worker", "daemon", "any", ("task", "tokio-rt-worker"),
     "the guest agent's threads (prio 110 = nice -10), woken by timerfd every 1 s, by hrtimer "
     "sleeps and by vsock work. Their task-context records are missing from the trace, so their "
     "run length is bounded, not measured: runtime_ns is the CPU 0 bound (switch-in seen, end = "
     "next record of another task on CPU 0)"),
]
# Work functions listed individually above; the rest is 'other-kworker'.
LISTED_WORK = {s[3][1] for s in SOURCES if s[3][0] == "workqueue"} | {
    "virtio_transport_send_pkt_work"}


def top(dct, n=6):
    """A {name: count} dict as 'name count' text, largest first (JSON sorts keys by name)."""
    items = sorted(dct.items(), key=lambda kv: (-kv[1], kv[0]))[:n]
    return "{" + ", ".join(f"{k}: {v}" for k, v in items) + "}"


def us(ns):
    return int(round(ns / 1000.0))


def rt(summary):
    return [int(round(summary[k])) for k in ("min", "p50", "p90", "p99", "max")]


def jitter_from(ival, period_ns):
    """Half-width of a uniform [P-J, P+J] that covers the measured p10..p90 of the interval."""
    if not ival or ival.get("n", 0) < 2:
        return 0
    j = max(period_ns - ival["p10"], ival["p90"] - period_ns)
    return max(0, min(j, period_ns))


def fmt_q(s):
    if not s or not s.get("n"):
        return "n=0"
    return (f"n={s['n']} p0 {s['min']:.0f} p50 {s['p50']:.0f} p90 {s['p90']:.0f} "
            f"p99 {s['p99']:.0f} p100 {s['max']:.0f} ns")


def pooled_other_work(d):
    runs = []
    names = []
    for f, w in d["workqueue"].items():
        if f in LISTED_WORK:
            continue
        runs += w["duration_raw_ns"]
        names.append(f"{f}({w['runs']})")
    return len(runs), names, tracelib.summarize(runs)


def source_entry(d, light, spec):
    name, kind, cpus, (sec, key), note = spec
    dur_ns = d["duration_s"] * 1e9
    ncpu = d["ncpu"]
    L = light
    lines = [f"# {note}."]
    e = {"name": name, "kind": kind, "cpus": cpus}
    if sec == "workqueue":
        w = d["workqueue"][key]
        if cpus == "all":
            n = w["runs"]
            period = dur_ns * ncpu / n
            ival = w["interval_same_cpu_ns"]
            how = f"{n} runs in {d['duration_s']:.0f} s on {ncpu} CPUs"
        elif cpus == "any":
            n = w["runs"]
            period = dur_ns / n
            ival = w["interval_any_cpu_ns"]
            how = f"{n} runs in {d['duration_s']:.0f} s (any CPU)"
        else:
            n = round(w["runs_per_s_per_cpu"][cpus] * d["duration_s"])
            period = dur_ns / n
            ival = w["interval_same_cpu_ns"]
            how = f"{n} runs on CPU {cpus} in {d['duration_s']:.0f} s"
        e["period_us"] = us(period)
        e["jitter_us"] = us(jitter_from(ival, period))
        fl = w["delayed_timer_flags"]
        if fl:
            dflag = sum(v for k, v in fl.items() if "D" in k)
            known = sum(v for k, v in fl.items() if k != "?")
            e["deferrable"] = dflag * 2 > known
            lines.append(f"# deferrable: {dflag} of {known} queueing timers had flag D "
                         f"(timer_start flags {fl}).")
        else:
            e["deferrable"] = False
            lines.append("# deferrable = false: not queued by a timer (irq or softirq driven).")
        e["runtime_ns"] = rt(w["duration_ns"])
        lines.append(f"# period: {how} -> mean {period/1e6:.1f} ms; interval p10/p50/p90 "
                     f"{ival.get('p10',0)/1e6:.1f}/{ival.get('p50',0)/1e6:.1f}/"
                     f"{ival.get('p90',0)/1e6:.1f} ms -> jitter covers p10..p90.")
        lines.append(f"# runtime: workqueue_execute_start->end, {fmt_q(w['duration_ns'])}; "
                     f"workers {w['workers']}, wq {list(w['workqueue'])}, queued from "
                     f"{top(w['queued_from'])}.")
        if L and key in L["workqueue"]:
            lw = L["workqueue"][key]
            lines.append(f"# light capture: {lw['runs']} runs in {L['duration_s']:.0f} s, per CPU/s "
                         f"{lw['runs_per_s_per_cpu']}, runtime {fmt_q(lw['duration_ns'])}.")
        elif L:
            lines.append("# light capture: not seen.")
    elif sec == "other-work":
        n, names, qs = pooled_other_work(d)
        period = dur_ns / n
        e["period_us"] = us(period)
        e["jitter_us"] = us(period)
        e["deferrable"] = False
        e["runtime_ns"] = [int(round(qs[k])) for k in ("min", "p50", "p90", "p99", "max")]
        lines.append(f"# {n} runs in {d['duration_s']:.0f} s -> mean {period/1e6:.0f} ms; not "
                     "periodic as a whole, so jitter = period (uniform in [0, 2*period]).")
        lines.append(f"# runtime: all their runs pooled, {fmt_q(qs)}.")
        lines.append("# merged: " + ", ".join(names) + ".")
    elif sec == "hrtimer":
        h = d["hrtimer"][key]
        ival = h["interval_same_cpu_ns"]
        period = ival["p50"]
        e["period_us"] = us(period)
        e["jitter_us"] = us(jitter_from(ival, period))
        e["deferrable"] = False
        g = d["task_groups"]["migration/N"]["run_ns_by_wakeup_origin"].get(
            "hrtimer:watchdog_timer_fn")
        e["runtime_ns"] = rt(g)
        lines.append(f"# period: hrtimer_expire_entry function={key}, {h['expiries']} expiries, "
                     f"per CPU/s {h['per_s_per_cpu']}, same-CPU interval {fmt_q(ival)}.")
        lines.append(f"# led to: {top(h['led_to'])}; runtime = run of migration/N after those "
                     f"wakeups (switch-in->out), {fmt_q(g)}.")
        lines.append(f"# hrtimer callback itself: {fmt_q(h['duration_ns'])}.")
        if L:
            lh = L["hrtimer"][key]
            lg = L["task_groups"]["migration/N"]["run_ns_by_wakeup_origin"].get(
                "hrtimer:watchdog_timer_fn")
            lines.append(f"# light capture: interval p50 {lh['interval_same_cpu_ns']['p50']/1e6:.1f}"
                         f" ms, stopper run {fmt_q(lg)}.")
    elif sec == "tick":
        vec = key
        tb = tn = 0.0
        for c, t in d["tick"].items():
            r = t.get(f"{vec}_per_tick_busy")
            if r is not None:
                tb += r * t["ticks_busy"]
                tn += t["ticks_busy"]
        per_tick = tb / tn
        tick_ns = d["tick_gap_busy_ns"]["p50"]
        period = tick_ns / per_tick
        e["period_us"] = us(period)
        e["jitter_us"] = 0
        e["vec"] = vec
        s = d["softirq"][vec]
        e["runtime_ns"] = rt(s["duration_ns"])
        lines.append(f"# HZ {d['hz_from_jiffies']:.0f} (jiffies of timer_expire_entry vs time), tick "
                     f"gap while busy p50 {tick_ns/1e6:.2f} ms. While a CPU is busy, "
                     f"{per_tick:.3f} of its ticks raised {vec} ({int(tn)} busy ticks) -> one every "
                     f"{period/1e3:.0f} us; per tick when idle: "
                     + ", ".join(f"cpu{c} {t.get(vec + '_per_tick_idle')}" for c, t in d["tick"].items())
                     + ". Period is in whole ticks in reality; jitter 0 here, the model should "
                     "raise it on a tick with probability tick/period.")
        lines.append(f"# runtime: softirq_entry->exit vec={vec} (all its runs), {fmt_q(s['duration_ns'])}.")
        if L:
            lb = ln = 0.0
            for c, t in L["tick"].items():
                r = t.get(f"{vec}_per_tick_busy")
                if r is not None:
                    lb += r * t["ticks_busy"]
                    ln += t["ticks_busy"]
            lines.append(f"# light capture: {lb/ln:.3f} per busy tick ({int(ln)} busy ticks), "
                         f"runtime {fmt_q(L['softirq'][vec]['duration_ns'])}.")
    elif sec in ("task", "group"):
        t = d["tasks"][key] if sec == "task" else d["task_groups"][key]
        n = t["wakeups"]
        if cpus == "all":
            period = dur_ns * ncpu / n
            how = f"{n} wakeups in {d['duration_s']:.0f} s on {ncpu} CPUs"
        else:
            period = dur_ns / n
            how = f"{n} wakeups in {d['duration_s']:.0f} s"
        e["period_us"] = us(period)
        iv = t["wakeup_interval_ns"]
        e["jitter_us"] = us(jitter_from(iv, period))
        if key == "tokio-rt-worker":
            run = t["run_ns_upper_by_cpu"]["0"]
            lines.append(f"# runtime: bound from CPU 0 runs only ({run['n']} runs): "
                         f"{fmt_q(run)}; lower bound from visible records is "
                         f"{fmt_q(t['run_ns'])}.")
        else:
            run = t["run_ns"]
            lines.append(f"# runtime: switch-in->switch-out per run, {fmt_q(run)}; CPU time "
                         f"{t['cpu_time_ms']} ms in {d['duration_s']:.0f} s.")
        e["runtime_ns"] = rt(run)
        lines.append(f"# period: {how} -> mean {period/1e6:.1f} ms; interval between wakeups "
                     f"p10/p50/p90 {iv.get('p10',0)/1e6:.1f}/{iv.get('p50',0)/1e6:.1f}/"
                     f"{iv.get('p90',0)/1e6:.1f} ms.")
        if sec == "task":
            lines.append(f"# placement (target_cpu of its wakeups): {t['target_cpus']}; woken from "
                         f"{top(t['woken_from'])}.")
        if L:
            lt = (L["tasks"] if sec == "task" else L["task_groups"]).get(key)
            if lt:
                lines.append(f"# light capture: {lt['wakeups_per_s']}/s wakeups, run "
                             f"{fmt_q(lt['run_ns'])}.")
    return e, lines


def rate_of(d, spec):
    """(rate text, runtime summary) of one source in one capture, or None when absent."""
    name, kind, cpus, (sec, key), _ = spec
    try:
        if sec == "workqueue":
            w = d["workqueue"][key]
            return (", ".join(f"cpu{c} {v:.2f}" for c, v in w["runs_per_s_per_cpu"].items()) + " /s",
                    w["duration_ns"])
        if sec == "other-work":
            n, _, qs = pooled_other_work(d)
            return (f"{n / d['duration_s']:.2f} /s", qs)
        if sec == "hrtimer":
            h = d["hrtimer"][key]
            g = d["task_groups"]["migration/N"]["run_ns_by_wakeup_origin"][
                "hrtimer:watchdog_timer_fn"]
            return (", ".join(f"cpu{c} {v:.2f}" for c, v in h["per_s_per_cpu"].items()) + " /s", g)
        if sec == "tick":
            parts = []
            for c, t in d["tick"].items():
                parts.append(f"cpu{c} {t.get(key + '_per_tick_busy')}/{t.get(key + '_per_tick_idle')}")
            return ("per busy/idle tick: " + ", ".join(parts), d["softirq"][key]["duration_ns"])
        if sec == "task":
            t = d["tasks"][key]
            run = t["run_ns_upper_by_cpu"]["0"] if key == "tokio-rt-worker" else t["run_ns"]
            return (f"{t['wakeups_per_s']:.2f} /s", run)
        if sec == "group":
            t = d["task_groups"][key]
            return (f"{t['wakeups_per_s']:.2f} /s", t["run_ns"])
    except KeyError:
        return None
    return None


def q3(s):
    if not s or not s.get("n"):
        return "-"
    f = lambda v: f"{v/1000:.0f}" if v >= 1000 else f"{v/1000:.1f}"
    return f"{f(s['p50'])} / {f(s['p90'])} / {f(s['max'])} (n={s['n']})"


def markdown(d, L, profile_entries, cmd):
    out = []
    w = out.append
    w("# Background activity measured on this guest")
    w("")
    w("Generated by `tools/measure/make_profile.py` from `tools/measure/background.py` output "
      "(edit the scripts, not this file). The profile it feeds is "
      "`src/background/profiles/kvm-guest.toml`.")
    w("")
    w("## Method")
    w("")
    w(MD_METHOD.format(cmd=cmd))
    w("## Sources (idle capture vs light capture)")
    w("")
    w("Rates are per CPU per second unless a single figure; runtimes are p50 / p90 / max in us. "
      "Tick-softirq rows give the fraction of ticks that raised the vector on a busy / an idle CPU, "
      "and the softirq's own duration.")
    w("")
    w(f"| source | kind | idle {d['duration_s']:.0f} s: rate | idle: runtime us | "
      f"light {L['duration_s']:.0f} s: rate | light: runtime us | profile period / jitter |")
    w("|---|---|---|---|---|---|---|")
    for spec, (e, _) in zip(SOURCES, profile_entries):
        a = rate_of(d, spec)
        b = rate_of(L, spec)
        w(f"| {spec[0]} | {spec[1]} ({spec[2]}) | {a[0] if a else '-'} | {q3(a[1]) if a else '-'} | "
          f"{b[0] if b else 'not seen'} | {q3(b[1]) if b else '-'} | "
          f"{e['period_us']/1000:.1f} ms / {e['jitter_us']/1000:.1f} ms |")
    w("")
    w("## Machine-wide figures")
    w("")
    w("| figure | idle | light |")
    w("|---|---|---|")
    rows = [
        ("HZ (jiffies vs time in timer_expire_entry)", lambda x: x["hz_from_jiffies"]),
        ("tick gap while busy, p50 ms", lambda x: x["tick_gap_busy_ns"].get("p50", 0) / 1e6),
        ("tick_nohz_handler runs per s, per CPU", lambda x: {c: t["ticks_per_s"] for c, t in x["tick"].items()}),
        ("local_timer interrupts per s while idle, per CPU", lambda x: {c: v["per_s_idle"] for c, v in x["local_timer"].items()}),
        ("local_timer interrupts per s while busy, per CPU", lambda x: {c: v["per_s_busy"] for c, v in x["local_timer"].items()}),
        ("local_timer duration p50 us, per CPU", lambda x: {c: v["duration_ns"].get("p50", 0) / 1000 for c, v in x["local_timer"].items()}),
        ("cpu_idle entries per s by state (CPU 0 only logs them)", lambda x: x["cpu_idle_per_s"]),
        ("busy fraction per CPU (from visible switches)", lambda x: x["busy_fraction"]),
        ("softirq raises per s per CPU, RCU", lambda x: x["softirq"].get("RCU", {}).get("raises_per_s_per_cpu")),
        ("softirq raises per s per CPU, TIMER", lambda x: x["softirq"].get("TIMER", {}).get("raises_per_s_per_cpu")),
        ("softirq raises per s per CPU, SCHED", lambda x: x["softirq"].get("SCHED", {}).get("raises_per_s_per_cpu")),
        ("softirq raises per s per CPU, BLOCK", lambda x: x["softirq"].get("BLOCK", {}).get("raises_per_s_per_cpu")),
        ("softirq duration p50/p90 us, RCU", lambda x: (x["softirq"]["RCU"]["duration_ns"]["p50"] / 1000, x["softirq"]["RCU"]["duration_ns"]["p90"] / 1000)),
        ("softirq duration p50/p90 us, TIMER", lambda x: (x["softirq"]["TIMER"]["duration_ns"]["p50"] / 1000, x["softirq"]["TIMER"]["duration_ns"]["p90"] / 1000)),
        ("softirq duration p50/p90 us, SCHED", lambda x: (x["softirq"]["SCHED"]["duration_ns"]["p50"] / 1000, x["softirq"]["SCHED"]["duration_ns"]["p90"] / 1000)),
        ("IPIs sent per s (ipi_send_cpu by callsite)", lambda x: {k.split("|")[1]: v for k, v in x["ipi_send_per_s"].items()}),
        ("IPI handler entries per s", lambda x: {k: v for k, v in x["vector_entries_per_s"].items() if not k.startswith("irq:")}),
        ("device irqs per s", lambda x: {k[4:]: v for k, v in x["vector_entries_per_s"].items() if k.startswith("irq:")}),
        ("wakeups of an idle CPU without IPI (count)", lambda x: x["wake_idle_without_ipi"]),
    ]
    for label, f in rows:
        try:
            a = f(d)
        except (KeyError, TypeError):
            a = "-"
        try:
            b = f(L)
        except (KeyError, TypeError):
            b = "-"
        w(f"| {label} | {fmt_cell(a)} | {fmt_cell(b)} |")
    w("")
    w("## Woken tasks in the idle capture")
    w("")
    w("| task | kernel thread | wakeups/s | CPUs (wakeups) | run p50 / p90 / max us | CPU ms | woken from |")
    w("|---|---|---|---|---|---|---|")
    for comm, t in sorted(d["tasks"].items(), key=lambda kv: -kv[1]["wakeups"]):
        if t["wakeups"] < 5:
            continue
        w(f"| {comm} | {'yes' if t['kthread'] else 'no'} | {t['wakeups_per_s']:.2f} | "
          f"{t['target_cpus']} | {q3(t['run_ns'])} | {t['cpu_time_ms']:.1f} | "
          f"{top(t['woken_from'], 3)} |")
    w("")
    w(MD_CANNOT)
    return "\n".join(out) + "\n"


def fmt_cell(v):
    if isinstance(v, float):
        return f"{v:.3g}"
    if isinstance(v, dict):
        return ", ".join(f"{k}: {fmt_cell(x)}" for k, x in v.items())
    if isinstance(v, tuple):
        return " / ".join(fmt_cell(x) for x in v)
    return str(v)


MD_METHOD = """Captures, as root through tracefs, with `tools/measure/trace-idle.sh` (events: sched_switch,
sched_wakeup/waking/wakeup_new, sched_migrate_task, sched_wake_idle_without_ipi, all of
workqueue, timer and rcu, irq softirq_raise/entry/exit and irq_handler_entry/exit, all of
irq_vectors, ipi, csd, power:cpu_idle; default trace clock, us resolution; 64 MB per-CPU buffer,
no overruns):

```
tools/measure/trace-idle.sh idle-180s.trace.gz 180
tools/measure/trace-idle.sh light-90s.trace.gz 90 LOOP   # LOOP: a shell loop of
    #   head -c 2000000 /dev/urandom | md5sum; sleep 0.2   (exact invocation not recorded)
python3 tools/measure/background.py idle-180s.trace.gz --json tools/measure/data/background-idle.json
python3 tools/measure/background.py light-90s.trace.gz --json tools/measure/data/background-light.json
{cmd}
```

Machine: this project's KVM guest, Linux 6.18, 2 vCPUs (AMD EPYC, TSC 2596 MHz), cpuidle
haltpoll with `guest_halt_poll_ns=0` (one idle state, HLT), HZ=250 (measured), NOHZ idle. The
"idle" machine is not empty: the session environment's agent (tokio-rt-worker threads, talking
to the host over vsock) and a helper process (`memfd:sealed-91`) run in it, and the shells of
the other engineers sharing the guest were waiting in polling loops; the profile keeps the agent
and leaves the shells out (see the profile's header for the share).

How each figure is taken: a work function's run is `workqueue_execute_start` -> `_end` on one
CPU, its worker comm says bound (`kworker/N:M`) or unbound (`kworker/uN:M`), and what queued it is
the handler in progress on the queueing CPU (a timer callback, an irq, a softirq, a task);
whether its timer is deferrable is the `flags=` of the `timer_start` of the timer that queued it.
A callback's duration is `timer_expire_entry`/`hrtimer_expire_entry` -> exit, and "what it led
to" counts the wakeups, work items and softirq raises recorded inside it. A task's run is
switch-in -> switch-out, attributed to the wakeup that preceded it. The tick-softirq rates are
the fraction of `tick_nohz_handler` expiries inside which `softirq_raise` of that vector was
recorded, split by whether the CPU was idle or busy.
"""

MD_CANNOT = """## What could not be measured

- **No function-level timing.** The guest kernel has tracepoints only: no function_graph, no
  kprobes, no osnoise/timerlat tracer. What runs inside a softirq or a kworker is timed as a whole
  (e.g. vmstat_update's refresh, the RCU core), and what the tick handler spends on each part
  (scheduler_tick, RCU, timer wheel) is not separable.
- **1 us resolution.** The idle and light captures use the default trace clock: durations under a
  microsecond read as 0, and every quantile is a whole number of microseconds.
- **Missing task-context records.** CPU 1's idle task and the session environment's own
  processes (in the idle capture pids 68, 69, 75 tokio-rt-worker and 78 damon-regions; in the
  light one also pid 1 process_api, 58 vsock-console, 59 spawner) log no task-context records:
  they are switched in by a visible sched_switch but never seen switching out, and CPU 1 has no
  cpu_idle records. Their switch-out is inferred from the next record of another task on that
  CPU, so the agent's run lengths are bounds (the profile uses the CPU 0 bound, where the idle
  task is visible), CPU 1's busy fraction is an undercount, and cpu_idle figures cover CPU 0
  only.
- **One machine, short windows.** One 180 s idle and one 90 s light capture; sources with a
  period over a minute (crng_reseed 60 s, check_lifetime and addrconf 120 s) were seen a few
  times only and are merged into other-kworker. The profile's rates are this guest's (DAMON is
  enabled on it, which a stock distro kernel does not do), not a general KVM guest's.
- **The host is shared.** A vCPU can be descheduled by the host at any time; long tails of run
  lengths include that.
"""


def toml_value(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, list):
        return "[" + ", ".join(toml_value(x) for x in v) + "]"
    return json.dumps(v)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("idle_json")
    ap.add_argument("light_json", nargs="?")
    ap.add_argument("--out", required=True)
    ap.add_argument("--command", default="tools/measure/trace-idle.sh idle-180s.trace.gz 180")
    ap.add_argument("--md", help="also write the measurement summary (docs/background-measured.md)")
    a = ap.parse_args()
    try:
        with open(a.idle_json) as f:
            d = json.load(f)
        L = None
        if a.light_json:
            with open(a.light_json) as f:
                L = json.load(f)
    except (OSError, ValueError) as e:
        raise SystemExit(f"make_profile: {e}")
    entries = []
    for spec in SOURCES:
        try:
            entries.append(source_entry(d, L, spec))
        except KeyError as e:
            print(f"make_profile: source {spec[0]}: figure {e} not in {a.idle_json}; skipped",
                  file=sys.stderr)
    # coverage: wakeups and CPU time of what the listed sources stand for
    groups = d["task_groups"]
    tot_w = sum(g["wakeups"] for g in groups.values())
    tot_t = sum(g["cpu_time_ms"] for g in groups.values())
    covered_groups = {"kworker/N", "kworker/uN", "kworker/u8", "kworker/N:H", "migration/N",
                      "ksoftirqd/N", "rcu_preempt", "kcompactd0", "kdamond.0",
                      "memfd:sealed-91", "tokio-rt-worker"}
    cw = sum(g["wakeups"] for k, g in groups.items() if k in covered_groups)
    ct = sum(g["cpu_time_ms"] for k, g in groups.items() if k in covered_groups)
    shell = {k: g for k, g in groups.items() if not g["kthread"] and k not in covered_groups}
    sw = sum(g["wakeups"] for g in shell.values())
    st = sum(g["cpu_time_ms"] for g in shell.values())
    out = []
    out.append("# Background profile of this project's KVM guest, measured (generated by")
    out.append("# tools/measure/make_profile.py from tools/measure/background.py output; edit the")
    out.append("# generator, not this file). All times in the trace's resolution (1 us clock: a 0 in")
    out.append("# runtime_ns means under 1 us).")
    out.append(f"# Coverage: the sources below stand for {cw} of {tot_w} wakeups "
               f"({100*cw/tot_w:.0f}%) and {ct:.0f} of {tot_t:.0f} ms non-idle CPU time "
               f"({100*ct/tot_t:.0f}%) of the idle capture. Left out: other user-space processes, "
               f"mostly shells and short-lived commands of the sessions sharing this machine ({sw} wakeups, "
               f"{st:.0f} ms: {', '.join(sorted(shell))}); with them out of the total the "
               f"coverage is {100*cw/(tot_w-sw):.1f}% of wakeups and {100*ct/(tot_t-st):.1f}% of CPU time "
               "(the rest: hwrng, khungtaskd).")
    quiet_timers = [(f, t) for f, t in d["timer"].items() if not t["led_to"]]
    out.append("# Timer callbacks that wake no task and queue no work are not listed as sources: "
               "while a CPU is busy their")
    out.append("# expiries are inside the TIMER tick-softirq entry's runtime. On an idle CPU the "
               "non-deferrable ones end an idle period")
    out.append("# (start flags without D). Per s, all CPUs: " + ", ".join(
        f"{f} {t['per_s']:.2f} (flags {','.join(k or '-' for k in t.get('start_flags', {}))})"
        for f, t in quiet_timers) + ".")
    out.append(f"# Not modelled here: the tick itself ({d['hz_from_jiffies']:.0f} Hz while busy; "
               "idle ticks per s " + ", ".join(f"cpu{c} {t['ticks_per_s']}" for c, t in d["tick"].items())
               + "), which the simulator already has.")
    out.append("# Format note: the brief's top-level `source = \"...\"` cannot sit next to the")
    out.append("# `[[source]]` array of tables (TOML forbids redefining a key), so the measurement")
    out.append("# note is under `measured` instead.")
    out.append('name = "kvm-guest"')
    out.append('description = "2-vCPU KVM guest, Linux 6.18, idle: per-CPU vmstat/psi/memcg work, '
               'watchdog, RCU, DAMON, vsock agent"')
    out.append(f'measured = "{a.command}: {d["duration_s"]:.0f} s idle '
               f'trace (tracefs, default clock), Linux 6.18 KVM guest, 2 vCPUs AMD EPYC 2596 MHz, '
               f'haltpoll; cross-checked with a {L["duration_s"]:.0f} s lightly loaded trace"'
               if L else f'measured = "{a.command}"')
    for e, lines in entries:
        out.append("")
        out.append("[[source]]")
        out += lines
        for k in ("name", "kind", "period_us", "jitter_us", "deferrable", "cpus", "runtime_ns", "vec"):
            if k in e:
                out.append(f"{k} = {toml_value(e[k])}")
    tracelib.write_atomic(a.out, "\n".join(out) + "\n")
    if a.md:
        if not L:
            raise SystemExit("make_profile: --md needs the light capture's JSON too")
        cmd = "python3 tools/measure/make_profile.py tools/measure/data/background-idle.json tools/measure/data/background-light.json --out " + a.out + \
            " --md " + a.md
        tracelib.write_atomic(a.md, markdown(d, L, entries, cmd))
    print(f"wrote {a.out}: {len(entries)} sources, coverage {100*cw/tot_w:.0f}% wakeups, "
          f"{100*ct/tot_t:.0f}% CPU time")


if __name__ == "__main__":
    main()
