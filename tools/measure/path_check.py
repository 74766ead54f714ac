#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Check the model's shared software path costs (src/linux/cost.rs) against the real kernel's
path durations measured on this guest (docs/measured-paths.md).

For each path that both the real kernel and the model bracket with a pair of trace records:
- measured: the median over the TSC-clock repeats of each repeat's median (tools/measure/data/
  measured-paths.json), in the workload that matches a model workload (perf bench sched
  messaging -g 1 -l 100 <-> the model's `hackbench -- perf -g 1 -l 100`; the nanosleep loop <->
  the model's `nanosleep procs=1`);
- corrected: the measured median minus the cost of the trace records in the interval, scaled
  from this guest's 2.596 GHz clock to the model's ~3 GHz core. The records are counted in the
  raw captures (median number of records the same CPU wrote strictly inside the interval, plus
  one for the pair itself: the entry record's write after its timestamp and the exit record's
  write before it), each charged the smallest nonzero gap between two records of one CPU;
- model: the median of the same interval in the model's own trace (examples/path_durations.rs,
  ns precision), over seeds and both background choices;
- ratio = corrected / model. k = median ratio over the pure software paths (no VM exit inside);
  a path whose ratio is more than 2x away from k is flagged.

Usage:
  python3 tools/measure/path_check.py --captures /work/captures/paths-tsc \
      --run target/release/examples/path_durations --md docs/path-costs-check.md

--run BIN runs the model (BIN MACHINE BACKGROUND SEED WORKLOAD PARAMS...) and stores its output
in tools/measure/data/model-paths.json; without --run that stored file is used. --captures is
needed only to (re)count the records inside the measured intervals (stored in
tools/measure/data/measured-inner-records.json).
"""
import argparse
import bisect
import collections
import glob
import json
import os
import re
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import path_costs  # noqa: E402
import tracelib  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "data")
MEASURED = os.path.join(DATA, "measured-paths.json")
MODEL_OUT = os.path.join(DATA, "model-paths.json")
INNER_OUT = os.path.join(DATA, "measured-inner-records.json")

GUEST_GHZ = 2.596
MODEL_GHZ = 3.0
MACHINE = "docs/guest-2vcpu.toml"
SEEDS = (1, 2, 3)
BACKGROUNDS = ("none", "kvm-guest")
# model workload label -> (measured workload, model argv after SEED)
WORKLOADS = {
    "messaging": ["hackbench", "tool=perf", "args=-g 1 -l 100"],
    "nanosleep": ["nanosleep", "procs=1", "duration_ms=1000"],
}

# Rows: (label, measured path key, model path key, workloads (None = all), class, what the
# model's interval covers, PathCosts fields). Classes: "sw" pure software, its model duration
# built from src/linux/cost.rs (these set k); "profile" the model's duration is a run time drawn
# from the kvm-guest background profile (itself measured on this guest with tracing on, so it
# is compared but not corrected and not in k); "vm" the real interval has VM exits in it (APIC
# timer reprogramming, IPIs to or wakeups of a halted vCPU), so it is no software cost.
ROWS = [
    ("csd sched_ttwu_pending", "csd:sched_ttwu_pending", None, None, "sw",
     "per queued task: ttwu_do_activate (+ line transfers)", ["ttwu_activate"]),
    ("csd nohz_csd_func", "csd:nohz_csd_func", None, None, "sw",
     "raise SCHED softirq", ["csd_call"]),
    ("call_function_single entry->exit", "call_function_single", None, None, "sw",
     "flush_smp_call_function_queue + the csd functions", ["flush", "csd_call", "ttwu_activate"]),
    ("reschedule entry->exit", "reschedule", None, None, "sw",
     "scheduler_ipi", ["scheduler_ipi"]),
    ("softirq SCHED", "softirq:SCHED", None, None, "sw",
     "sched_balance_softirq: blocked averages, rebalance", ["update_blocked_averages", "balance_rq", "lb_stats_per_cpu"]),
    ("hrtimer tick_nohz_handler ~ model tick handler", "hrtimer:tick_nohz_handler", "local_timer", ["messaging"], "sw",
     "model: the local_timer interval without irq_entry, i.e. tick_sched_timer (sched_tick); real: the tick callback alone (no reprogram)",
     ["sched_tick"]),
    ("hrtimer hrtimer_wakeup ~ model sleeper expiry", "hrtimer:hrtimer_wakeup", "local_timer", ["nanosleep"], "sw",
     "model: the local_timer interval without irq_entry, i.e. hrtimer_wakeup's try_to_wake_up; real: the hrtimer_wakeup callback alone",
     ["ttwu", "ttwu_activate"]),
    ("softirq TIMER", "softirq:TIMER", None, None, "profile",
     "run_timer_softirq: the profile's timer callbacks", []),
    ("softirq RCU", "softirq:RCU", None, None, "profile",
     "rcu_core: the profile's RCU softirq run time", []),
    ("timer delayed_work_timer_fn", "timer:delayed_work_timer_fn", None, None, "sw",
     "the profile's delayed work timers: __queue_work and the kworker's wakeup", ["queue_work", "ttwu", "ttwu_activate"]),
    ("local_timer entry->exit", "local_timer", None, None, "vm",
     "model: hrtimer_interrupt work; real adds the TSC-deadline reprogram (VM exit)", ["sched_tick", "hrtimer_start"]),
    ("cpu_idle exit -> next record", "idle_exit_next", None, None, "vm",
     "do_idle exit; real: after HLT with the tick stopped (tick restart, VM exit)", ["do_idle_exit", "cpuidle_exit", "tick_restart"]),
    ("wake->run cross CPU, target idle", "wake:CROSS:idle", None, None, "vm",
     "ttwu, IPI to a halted vCPU (VM exits), idle exit, flush, activate, __schedule", []),
    ("wake->run same CPU, CPU busy", "wake:SAME:busy", None, None, "vm",
     "a latency: waits behind the running task", []),
    ("wake->run same CPU, CPU idle", "wake:SAME:idle", None, None, "vm",
     "timer interrupt wake from HLT (VM exits), idle exit, __schedule", []),
]
# The model writes a vector's entry record before it charges the machine's irq_entry_ns
# (arch/x86/mod.rs irq_handler); the kernel's trace_*_entry() is inside the sysvec handler,
# after the IDT entry code. The model's interval of these vectors is compared without it.
VECTOR_KEYS = ("call_function_single", "reschedule", "local_timer")


def irq_entry_ns(machine_file):
    with open(machine_file) as f:
        m = re.search(r"^irq_entry_ns\s*=\s*(\d+)", f.read(), re.M)
    if not m:
        raise SystemExit(f"{machine_file}: no irq_entry_ns")
    return int(m.group(1))


# The model names its timer_list callbacks after the background source (the work function);
# the real trace names the callback. The model's delayed-work sources' timers run
# delayed_work_timer_fn.
MODEL_ALIASES = {"timer:delayed_work_timer_fn": ["timer:vmstat_update", "timer:vmstat_shepherd"]}


class InnerCounter(path_costs.PathCollector):
    """path_costs' collector that also counts, for each interval, the records the closing CPU
    wrote strictly inside it."""

    def __init__(self):
        super().__init__()
        self.ts_by_cpu = collections.defaultdict(list)
        self.inner = collections.defaultdict(list)
        self._cpu = None
        self._ts = None

    def feed(self, r):
        self.ts_by_cpu[r.cpu].append(r.ts)
        self._cpu, self._ts = r.cpu, r.ts
        super().feed(r)

    def add(self, path, v):
        super().add(path, v)
        if v < 0 or self._cpu is None:
            return
        lst = self.ts_by_cpu[self._cpu]
        start = self._ts - v
        n = bisect.bisect_left(lst, self._ts) - bisect.bisect_right(lst, start)
        self.inner[path].append(max(n, 0))


def count_inner(cdir):
    tsc = tracelib.read_tsc_mhz(cdir)
    if tsc is None:
        raise SystemExit(f"{cdir}: no tsc-mhz.txt; the record count needs the x86-tsc captures")
    out = {}
    for wl in WORKLOADS:
        files = sorted(glob.glob(os.path.join(cdir, f"{wl}-*.trace.gz")))
        if not files:
            raise SystemExit(f"{cdir}: no {wl}-N.trace.gz")
        per = collections.defaultdict(list)
        for f in files:
            ic = InnerCounter()
            for r in tracelib.records(f, tsc):
                ic.feed(r)
            for k, v in ic.inner.items():
                per[k].extend(v)
            print(f"  counted {f}", file=sys.stderr)
        out[wl] = {k: {"n": len(v), "p50": statistics.median(v)} for k, v in sorted(per.items())}
    return out


def run_model(binary):
    runs = []
    for wl, argv in WORKLOADS.items():
        for bg in BACKGROUNDS:
            for seed in SEEDS:
                cmd = [binary, MACHINE, bg, str(seed)] + argv
                res = subprocess.run(cmd, capture_output=True, text=True)
                if res.returncode != 0:
                    raise SystemExit(f"{' '.join(cmd)}: exit {res.returncode}: {res.stderr.strip()}")
                d = json.loads(res.stdout)
                runs.append({"workload": wl, "background": bg, "seed": seed, "cmd": cmd[1:], **d})
                print(f"  model {wl} {bg} seed {seed}: {d['records']} records", file=sys.stderr)
    return {"machine": MACHINE, "runs": runs}


def measured_median(meas, wl, key):
    """Median over the TSC repeats of their medians, and the min..max of those medians."""
    cap = next(c for c in meas["captures"] if c["clock"] == "x86-tsc")
    p = cap["spread"].get(wl, {}).get("paths", {}).get(key)
    if not p:
        return None
    meds = [m for m, n in zip(p["medians"], p["counts"]) if m is not None and n >= 5]
    if not meds:
        return None
    return {"p50": statistics.median(meds), "lo": min(meds), "hi": max(meds), "n": sum(p["counts"])}


def record_cost(meas):
    cap = next(c for c in meas["captures"] if c["clock"] == "x86-tsc")
    gaps = [g for r in cap["runs"].values() for g in r["gap_min_nonzero_ns"].values()]
    return statistics.median(gaps), min(gaps), max(gaps)


def model_stats(model, wl, key, bg=None):
    keys = MODEL_ALIASES.get(key, [key])
    sub = irq_entry_ns(MACHINE) if key in VECTOR_KEYS else 0
    meds, p10, p90, inner, n = [], [], [], [], 0
    for r in model["runs"]:
        if r["workload"] != wl or (bg is not None and r["background"] != bg):
            continue
        for k in keys:
            s = r["paths"].get(k)
            if s and s["n"] >= 1:
                meds.append(s["p50"] - sub)
                p10.append(s["p10"] - sub)
                p90.append(s["p90"] - sub)
                inner.append(s["inner_p50"])
                n += s["n"]
    if not meds:
        return None
    return {"p50": statistics.median(meds), "p10": statistics.median(p10), "p90": statistics.median(p90),
            "inner": statistics.median(inner), "n": n}


def fmt(v):
    if v is None:
        return "-"
    if abs(v) >= 10000:
        return f"{v / 1000:.1f}us"
    return f"{v:.0f}"


def sensitivity(meas, inner, model, rec):
    """k and the flagged rows when the record cost is charged differently."""
    out = []
    for name, extra, cost in (("(in + 1) records, as above", 1, rec), ("in records only", 0, rec),
                              ("no record correction", 0, 0)):
        rows, k = build_rows(meas, inner, model, cost, extra)
        flagged = [f"{r['label']} ({r['workload']}, {r['ratio']:.2f})" for r in rows if r["flag"]]
        out.append((name, k, flagged))
    return out


def build_rows(meas, inner, model, rec, extra=1):
    rows = []
    for label, key, mkey, wls, cls, covers, fields in ROWS:
        mkey = mkey or key
        for wl in WORKLOADS:
            if wls and wl not in wls:
                continue
            m = measured_median(meas, wl, key)
            mo = model_stats(model, wl, mkey)
            if m is None or mo is None:
                continue
            k_in = inner.get(wl, {}).get(key, {}).get("p50")
            corrected = None
            if k_in is not None and cls != "profile":
                corrected = max(m["p50"] - (k_in + extra) * rec, 0) * GUEST_GHZ / MODEL_GHZ
            rows.append({
                "label": label, "key": key, "workload": wl, "pure": cls == "sw", "class": cls, "covers": covers, "fields": fields,
                "measured": m, "inner": k_in, "corrected": corrected, "model": mo,
                "model_none": model_stats(model, wl, mkey, "none"),
                "model_bg": model_stats(model, wl, mkey, "kvm-guest"),
                "ratio": (corrected if cls != "profile" else m["p50"]) / mo["p50"] if (corrected or cls == "profile") and mo["p50"] > 0 else None,
            })
    pure = [r["ratio"] for r in rows if r["pure"] and r["ratio"]]
    k = statistics.median(pure) if pure else None
    for r in rows:
        r["flag"] = bool(k and r["ratio"] and r["pure"] and (r["ratio"] > 2 * k or r["ratio"] < k / 2))
        r["target"] = r["corrected"] / k if k and r["corrected"] is not None else None
    return rows, k


def markdown(rows, k, rec, model, cmdline, sens):
    out = []
    w = out.append
    w("Generated by `tools/measure/path_check.py` (edit the script, not this part of the file):\n")
    w("```\n" + cmdline + "\n```\n")
    w("Measured: docs/measured-paths.md (x86-tsc captures, medians of the three repeats' medians; "
      "`messaging` is `perf bench sched messaging -g 1 -l 100`, `nanosleep` the 1 us nanosleep loop). "
      f"Model: `{MACHINE}` (2 vCPUs, haltpoll, HZ=250, icx-vm-32's VM IPI costs), "
      "`hackbench -- perf -g 1 -l 100` and `nanosleep procs=1 duration_ms=1000`, seeds "
      f"{', '.join(map(str, SEEDS))}, backgrounds {' and '.join(BACKGROUNDS)}; durations from the "
      "model's trace records at ns precision (examples/path_durations.rs).\n")
    w(f"Correction: one trace record costs {rec[0]:.0f} ns (median over the repeats and CPUs of the smallest "
      f"nonzero gap between two records of one CPU; range {rec[1]}-{rec[2]}). `in` is the median number of "
      "records the CPU wrote strictly inside the measured interval (counted in the raw captures); the "
      f"interval loses (in + 1) records, then is scaled by {GUEST_GHZ}/{MODEL_GHZ}. "
      "Ratio = corrected / model median. The model writes a vector's entry record before charging the "
      f"machine's irq_entry_ns ({irq_entry_ns(MACHINE)} ns here), the kernel after the IDT entry code, so the "
      "model's call_function_single, reschedule and local_timer intervals are shown without it.\n")
    w(f"**k = {k:.2f}** (median ratio over the pure software rows, class `sw`). Flag `!!`: ratio more "
      "than 2x away from k.\n" if k else "k: no pure software path had both figures.\n")
    w("| path | workload | measured median (spread) | in | corrected | model median (p10-p90) | model n | model none / kvm-guest | model in | ratio | flag |")
    w("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        m, mo = r["measured"], r["model"]
        mn, mb = r["model_none"], r["model_bg"]
        inn = "-" if r["inner"] is None else f"{r['inner']:g}"
        rat = "-" if r["ratio"] is None else f"{r['ratio']:.2f}"
        w(f"| {r['label']} ({r['class']}) | {r['workload']} | {fmt(m['p50'])} ({fmt(m['lo'])}..{fmt(m['hi'])}) "
          f"| {inn} | {fmt(r['corrected'])} "
          f"| {fmt(mo['p50'])} ({fmt(mo['p10'])}-{fmt(mo['p90'])}) "
          f"| {mo['n']} | {fmt(mn['p50'] if mn else None)} / {fmt(mb['p50'] if mb else None)} | {mo['inner']:g} "
          f"| {rat} | {'!!' if r['flag'] else ''} |")
    w("")
    w("Sensitivity of k and of the flags to the trace-record correction:\n")
    w("| correction | k | flagged (ratio) |")
    w("|---|---|---|")
    for name, kk, fl in sens:
        w(f"| {name} | {kk:.2f} | {'; '.join(fl) or 'none'} |")
    w("")
    flagged = [r for r in rows if r["flag"]]
    if flagged:
        w("Flagged paths (the model's cost is out of line with the others), with the value that would "
          "bring the model to corrected / k:\n")
        for r in flagged:
            w(f"- {r['label']} ({r['workload']}): model {fmt(r['model']['p50'])}, corrected {fmt(r['corrected'])}, "
              f"ratio {r['ratio']:.2f} vs k {k:.2f}; corrected / k = {fmt(r['target'])} ns. "
              f"Covers: {r['covers']}. Fields: {', '.join(r['fields']) or '-'}.")
        w("")
    return "\n".join(out)


BEGIN = "<!-- generated by tools/measure/path_check.py: begin -->"
END = "<!-- generated by tools/measure/path_check.py: end -->"


def splice(path, generated):
    """The file's text with the part between the markers replaced (the hand-written analysis
    around it is kept); the generated part alone if the file or its markers are missing."""
    block = BEGIN + "\n" + generated.rstrip("\n") + "\n" + END + "\n"
    if not os.path.exists(path):
        return block
    with open(path) as f:
        old = f.read()
    i, j = old.find(BEGIN), old.find(END)
    if i < 0 or j < i:
        raise SystemExit(f"{path}: expected the markers {BEGIN!r} and {END!r} around the generated part")
    return old[:i] + block + old[j + len(END) + 1:]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--captures", help="x86-tsc capture directory (re-count records inside intervals)")
    ap.add_argument("--run", help="path_durations example binary (re-run the model)")
    ap.add_argument("--json", default=os.path.join(DATA, "path-check.json"))
    ap.add_argument("--md", help="write the markdown table here (printed otherwise)")
    a = ap.parse_args()
    with open(MEASURED) as f:
        meas = json.load(f)
    if a.captures:
        tracelib.write_json(INNER_OUT, count_inner(a.captures))
    if not os.path.exists(INNER_OUT):
        raise SystemExit(f"{INNER_OUT} missing: run once with --captures DIR")
    with open(INNER_OUT) as f:
        inner = json.load(f)
    if a.run:
        tracelib.write_json(MODEL_OUT, run_model(a.run))
    if not os.path.exists(MODEL_OUT):
        raise SystemExit(f"{MODEL_OUT} missing: run once with --run BIN")
    with open(MODEL_OUT) as f:
        model = json.load(f)
    rec = record_cost(meas)
    rows, k = build_rows(meas, inner, model, rec[0])
    tracelib.write_json(a.json, {"k": k, "record_ns": rec, "rows": rows})
    cmdline = ("cargo build --release --example path_durations\n"
               "python3 tools/measure/path_check.py --captures /work/captures/paths-tsc \\\n"
               "    --run target/release/examples/path_durations --md docs/path-costs-check.md")
    text = markdown(rows, k, rec, model, cmdline, sensitivity(meas, inner, model, rec[0]))
    if a.md:
        tracelib.write_atomic(a.md, splice(a.md, text))
    else:
        print(text)


if __name__ == "__main__":
    main()
