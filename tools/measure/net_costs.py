#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Loopback networking path durations from tools/measure/trace-net.sh captures.

    python3 tools/measure/net_costs.py /work/captures/net-1 [--json OUT.json] [--md OUT.md]

Per capture (a netperf run between a client and a server pinned as trace-net.sh says) and per
CPU, the records are walked in order and these intervals taken, each between two consecutive
bracketing records of one task's system call (the letters are docs/costs.md's):

  A  sys_enter(send)          -> net_dev_queue        the protocol's send path, task context
  B  net_dev_queue            -> net_dev_xmit         __dev_queue_xmit() into loopback_xmit()
  C  net_dev_xmit             -> softirq_entry(NET_RX) local_bh_enable() -> do_softirq()
  D  softirq_entry(NET_RX)    -> netif_receive_skb    net_rx_action(), process_backlog()
  E  netif_receive_skb        -> sched_waking         ip_rcv() .. tcp_v4_rcv()/udp_rcv() .. the
                                                     receiver's wakeup up to try_to_wake_up()
  E0 netif_receive_skb        -> softirq_exit         a packet that wakes nobody (an ACK)
  G  softirq_exit(NET_RX)     -> sys_exit(send)       release_sock(), the return
  H  sys_enter(recv)          -> sched_switch (out)   a receive that sleeps, up to the switch
  I  sched_switch (in)        -> sys_exit(recv)       the same after its wakeup
  J  sys_enter(recv)          -> sys_exit(recv)       a receive that found data (no switch)

Every interval also reports `in`, the median number of records the CPU wrote strictly inside
it; the model's costs are derived from the corrected medians (docs/costs.md).

A capture in which tasks other than the program and the idle task used more than 5% of the
CPUs' time is discarded and counted (the rule of `schedsim validate --max-foreign 5`).
"""
import argparse
import collections
import json
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
import tracelib  # noqa: E402

SEND = {44, 1}
RECV = {45, 0}
MAX_FOREIGN = 0.05


def analyse(path, tsc_mhz):
    recs = list(tracelib.records(path, tsc_mhz))
    # The program: netperf/netserver (and their forks).
    prog = {r.pid for r in recs if r.comm in ("netperf", "netserver", "tbench", "tbench_srv")}
    iv = collections.defaultdict(list)
    inside = collections.defaultdict(list)
    per_cpu = collections.defaultdict(list)
    for r in recs:
        per_cpu[r.cpu].append(r)
    # Foreign CPU time: from sched_switch records, time other tasks ran.
    first = min((r.ts for r in recs if r.pid in prog), default=0)
    last = max((r.ts for r in recs if r.pid in prog), default=0)
    foreign = 0
    for cpu, rs in per_cpu.items():
        cur, since = None, None
        for r in rs:
            if r.event != "sched_switch":
                continue
            kv = r.kv()
            if cur is not None and cur not in prog and cur != 0 and since is not None:
                a, b = max(since, first), min(r.ts, last)
                if b > a:
                    foreign += b - a
            cur, since = int(kv.get("next_pid", "0")), r.ts
    span = max(1, last - first) * max(1, len(per_cpu))
    share = foreign / span
    # The syscall in progress per pid: (nr, enter ts), and where it is.
    sys_of = {}
    resumed = {}  # pid -> switch-in ts while inside a recv that slept
    for cpu, rs in per_cpu.items():
        # Per CPU: the last bracket record (name, ts, index) of the current task's send chain.
        chain = None
        for i, r in enumerate(rs):
            ev = r.event
            if ev == "sys_enter" and r.ctx == "":
                nr = int(r.args.split()[1]) if r.args.startswith("NR ") else None
                if nr is not None:
                    sys_of[r.pid] = (nr, r.ts, cpu, i)
                    resumed.pop(r.pid, None)
                    chain = ("enter", r.ts, i) if nr in SEND else None
                continue
            if ev == "sys_exit" and r.ctx == "":
                s = sys_of.pop(r.pid, None)
                if s is None:
                    continue
                nr, ts0, cpu0, i0 = s
                if nr in SEND and chain and chain[0] == "sirq_exit":
                    iv["G"].append(r.ts - chain[1])
                    inside["G"].append(i - chain[2] - 1)
                if nr in RECV:
                    if r.pid in resumed:
                        t_in, i_in, c_in = resumed.pop(r.pid)
                        if c_in == cpu:
                            iv["I"].append(r.ts - t_in)
                            inside["I"].append(i - i_in - 1)
                    elif cpu0 == cpu:
                        iv["J"].append(r.ts - ts0)
                        inside["J"].append(i - i0 - 1)
                chain = None
                continue
            if ev == "sched_switch":
                kv = r.kv()
                prev, nxt = int(kv.get("prev_pid", "-1")), int(kv.get("next_pid", "-1"))
                s = sys_of.get(prev)
                if s and s[0] in RECV and s[2] == cpu and prev not in resumed:
                    iv["H"].append(r.ts - s[1])
                    inside["H"].append(i - s[3] - 1)
                    sys_of[prev] = (s[0], s[1], -1, s[3])
                if nxt in sys_of and sys_of[nxt][0] in RECV:
                    resumed[nxt] = (r.ts, i, cpu)
                chain = None
                continue
            if chain is None:
                continue
            step = chain[0]
            if ev == "net_dev_queue" and step == "enter" and r.ctx == "":
                iv["A"].append(r.ts - chain[1])
                inside["A"].append(i - chain[2] - 1)
                chain = ("ndq", r.ts, i)
            elif ev == "net_dev_xmit" and step == "ndq" and r.ctx == "":
                iv["B"].append(r.ts - chain[1])
                inside["B"].append(i - chain[2] - 1)
                chain = ("ndx", r.ts, i)
            elif ev == "softirq_entry" and step == "ndx":
                iv["C"].append(r.ts - chain[1])
                inside["C"].append(i - chain[2] - 1)
                chain = ("sirq", r.ts, i)
            elif ev == "netif_receive_skb" and step == "sirq":
                iv["D"].append(r.ts - chain[1])
                inside["D"].append(i - chain[2] - 1)
                chain = ("nrs", r.ts, i)
            elif ev == "sched_waking" and step == "nrs":
                iv["E"].append(r.ts - chain[1])
                inside["E"].append(i - chain[2] - 1)
                chain = ("waking", r.ts, i)
            elif ev == "softirq_exit" and step == "nrs":
                iv["E0"].append(r.ts - chain[1])
                inside["E0"].append(i - chain[2] - 1)
                chain = ("sirq_exit", r.ts, i)
            elif ev == "netif_receive_skb" and step in ("waking", "nrs"):
                chain = ("nrs", r.ts, i)
            elif ev == "softirq_exit" and step == "waking":
                chain = ("sirq_exit", r.ts, i)
            elif ev in ("net_dev_queue", "net_dev_xmit", "softirq_entry") and step not in ("enter", "ndq", "ndx"):
                pass
    out = {}
    for k, v in iv.items():
        s = tracelib.summarize(v)
        s["in"] = sorted(inside[k])[len(inside[k]) // 2] if inside[k] else 0
        out[k] = s
    return out, share


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("captures")
    ap.add_argument("--json")
    a = ap.parse_args()
    mhz = tracelib.read_tsc_mhz(a.captures)
    res = {}
    discarded = []
    for f in sorted(os.listdir(a.captures)):
        if not f.endswith(".trace.gz"):
            continue
        name = f[: -len(".trace.gz")]
        r, share = analyse(os.path.join(a.captures, f), mhz)
        if share > MAX_FOREIGN:
            discarded.append((name, round(share * 100, 1)))
            continue
        res[name] = {"foreign_pct": round(share * 100, 2), "intervals": r}
    doc = {"tsc_mhz": mhz, "captures": res, "discarded": discarded}
    if a.json:
        tracelib.write_json(a.json, doc)
    for name, d in res.items():
        print(f"{name} (foreign {d['foreign_pct']}%):")
        for k in ("A", "B", "C", "D", "E", "E0", "G", "H", "I", "J"):
            s = d["intervals"].get(k)
            if s:
                print(f"  {k:2} n={s['n']:6} p10={s['p10']:8} p50={s['p50']:8} p90={s['p90']:8} in={s['in']}")
    print(f"discarded: {len(discarded)} {discarded}")


if __name__ == "__main__":
    main()
