#!/usr/bin/env python3
"""Turn a tracefs `trace` text capture into Perfetto protobuf traces, expanded and compact_sched,
with Perfetto's own Python proto classes (PyPI package `perfetto`), for `schedsim import`'s tests.

    python3 -m venv /tmp/pf && /tmp/pf/bin/pip install perfetto protobuf
    /tmp/pf/bin/python tools/perfetto-fixture.py tests/fixtures/import/pipe.dat.report.txt.gz \
        tests/fixtures/import/pipe.expanded.pftrace tests/fixtures/import/pipe.compact.pftrace
    /tmp/pf/bin/python tools/perfetto-fixture.py --synthetic 10000000 --cpus 64 big.pftrace

What traced_probes would write for the same ring buffers (protos/perfetto/trace/ftrace/
ftrace_event_bundle.proto and its neighbours): a ProcessTree packet with every task's name (the
text's task column, i.e. the kernel's saved command lines), FtraceStats at the start and the end,
then per-CPU FtraceEventBundles in read cycles of `--cycle-us` (each CPU's events of the cycle,
at most `--bundle-events` a bundle, CPU by CPU), on one packet sequence whose first packet clears
the incremental state. Timer callbacks are interned kernel symbols (`symbolize_ksyms`). With
compact_sched, sched_switch and sched_waking go to the bundle's CompactSched columns (interned
comms, delta-encoded timestamps) and every other event stays expanded.

Timestamps are the text's: nanoseconds from `trace-cmd report -N -t`, microseconds from tracefs
(there events of two CPUs in the same microsecond may merge in another order than the text's).
The flags column, when the text has one, becomes common_flags (TRACE_FLAG_* of
include/linux/trace_events.h); without it the events carry none, as the text.
Syscall events have no typed Perfetto message and are left out (counted on stderr).
"""

import argparse
import gzip
import re
import sys

from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb

LINE = re.compile(r"^\s*(?P<comm>.*?)-(?P<pid>\d+)\s+(?:\(\s*\S+\)\s+)?\[(?P<cpu>\d+)\]\s+(?:(?P<flags>\S{4,5})\s+)?"
                  r"(?P<s>\d+)\.(?P<frac>\d{6}|\d{9}):\s+(?P<ev>\w+):\s+(?P<args>.*)$")
ARGS = {
    "sched_switch": r"prev_comm=(.*) prev_pid=(\d+) prev_prio=(\d+) prev_state=(\S+) ==> "
                    r"next_comm=(.*) next_pid=(\d+) next_prio=(\d+)$",
    "sched_waking": r"comm=(.*) pid=(\d+) prio=(\d+) target_cpu=(\d+)$",
    "sched_wakeup": r"comm=(.*) pid=(\d+) prio=(\d+) target_cpu=(\d+)$",
    "sched_wakeup_new": r"comm=(.*) pid=(\d+) prio=(\d+) target_cpu=(\d+)$",
    "sched_process_fork": r"comm=(.*) pid=(\d+) child_comm=(.*) child_pid=(\d+)$",
    "sched_process_exit": r"comm=(.*) pid=(\d+) prio=(\d+)",
    "sched_process_free": r"comm=(.*) pid=(\d+) prio=(\d+)",
    "sched_migrate_task": r"comm=(.*) pid=(\d+) prio=(\d+) orig_cpu=(\d+) dest_cpu=(\d+)$",
    "irq_handler_entry": r"irq=(\d+) name=(.*)$",
    "irq_handler_exit": r"irq=(\d+) ret=(\S+)$",
    "softirq_entry": r"vec=(\d+)",
    "softirq_exit": r"vec=(\d+)",
    "hrtimer_expire_entry": r"hrtimer=(\S+) function=(\S+) now=(\d+)",
    "hrtimer_expire_exit": r"hrtimer=(\S+)",
    "timer_expire_entry": r"timer=(\S+) function=(\S+) now=(\d+)",
    "timer_expire_exit": r"timer=(\S+)",
}
ARGS = {k: re.compile(v) for k, v in ARGS.items()}

# sched_switch's prev_state letters as the kernel's TASK_REPORT bits (v6.x); `+`: preempted.
STATE = {"R": 0, "S": 1, "D": 2, "T": 4, "t": 8, "X": 16, "Z": 32, "P": 64, "I": 128}


def prev_state(s):
    if s.startswith("R"):
        return 0x100 if s.endswith("+") else 0
    v = 0
    for part in s.split("|"):
        v |= STATE.get(part[:1], 0)
    return v


def common_flags(f):
    v = 0
    v |= {"d": 0x01, "b": 0x80, "D": 0x81}.get(f[0], 0)
    v |= {"N": 0x24, "n": 0x04, "p": 0x20}.get(f[1], 0)
    v |= {"h": 0x08, "s": 0x10, "H": 0x18, "z": 0x48, "Z": 0x58}.get(f[2], 0)
    return v


def parse_text(path):
    """(events, names): events as (ts_ns, cpu, pid, flags, name, args-match), in text order."""
    op = gzip.open if path.endswith(".gz") else open
    events, names, skipped = [], {}, {}
    with op(path, "rt") as f:
        for line in f:
            m = LINE.match(line.rstrip("\n"))
            if not m:
                continue
            ev = m["ev"]
            rx = ARGS.get(ev)
            a = rx.match(m["args"]) if rx else None
            if a is None:
                skipped[ev] = skipped.get(ev, 0) + 1
                continue
            frac = m["frac"]
            ns = int(m["s"]) * 1_000_000_000 + int(frac) * (1000 if len(frac) == 6 else 1)
            pid = int(m["pid"])
            if pid != 0:
                names[pid] = m["comm"]
            flags = common_flags(m["flags"]) if m["flags"] else None
            events.append((ns, int(m["cpu"]), pid, flags, ev, a))
    if skipped:
        print(f"{path}: left out {skipped}", file=sys.stderr)
    return events, names


class Writer:
    """TracePackets written one at a time (field 1 of Trace, length-delimited)."""

    def __init__(self, path):
        self.f = open(path, "wb")

    def put(self, p):
        b = p.SerializeToString()
        n = len(b)
        head = bytearray([0x0A])
        while n > 0x7F:
            head.append(0x80 | (n & 0x7F))
            n >>= 7
        head.append(n)
        self.f.write(bytes(head) + b)

    def close(self):
        self.f.close()


SEQ_PROCESS, SEQ_FTRACE = 1, 2


def fill_event(e, ts, pid, flags, ev, a, sym):
    e.timestamp = ts
    e.pid = pid
    if flags is not None:
        e.common_flags = flags
    if ev == "sched_switch":
        s = e.sched_switch
        s.prev_comm, s.prev_pid, s.prev_prio = a[1], int(a[2]), int(a[3])
        s.prev_state = prev_state(a[4])
        s.next_comm, s.next_pid, s.next_prio = a[5], int(a[6]), int(a[7])
    elif ev in ("sched_waking", "sched_wakeup", "sched_wakeup_new"):
        s = getattr(e, ev)
        s.comm, s.pid, s.prio, s.target_cpu = a[1], int(a[2]), int(a[3]), int(a[4])
        s.success = 1
    elif ev == "sched_process_fork":
        s = e.sched_process_fork
        s.parent_comm, s.parent_pid, s.child_comm, s.child_pid = a[1], int(a[2]), a[3], int(a[4])
    elif ev in ("sched_process_exit", "sched_process_free"):
        s = getattr(e, ev)
        s.comm, s.pid, s.prio = a[1], int(a[2]), int(a[3])
    elif ev == "sched_migrate_task":
        s = e.sched_migrate_task
        s.comm, s.pid, s.prio, s.orig_cpu, s.dest_cpu = a[1], int(a[2]), int(a[3]), int(a[4]), int(a[5])
    elif ev == "irq_handler_entry":
        e.irq_handler_entry.irq, e.irq_handler_entry.name = int(a[1]), a[2]
    elif ev == "irq_handler_exit":
        e.irq_handler_exit.irq, e.irq_handler_exit.ret = int(a[1]), 1 if a[2] == "handled" else 0
    elif ev in ("softirq_entry", "softirq_exit"):
        getattr(e, ev).vec = int(a[1])
    elif ev in ("hrtimer_expire_entry", "timer_expire_entry"):
        s = getattr(e, ev)
        setattr(s, "hrtimer" if ev.startswith("hr") else "timer", int(a[1], 16))
        s.function = sym(a[2])
        s.now = int(a[3])
    elif ev in ("hrtimer_expire_exit", "timer_expire_exit"):
        setattr(getattr(e, ev), "hrtimer" if ev.startswith("hr") else "timer", int(a[1], 16))


def write_trace(path, events, names, compact, cycle_ns, bundle_events, nr_cpus, t0):
    w = Writer(path)
    p = pb.TracePacket()
    p.timestamp = t0
    p.trusted_packet_sequence_id = SEQ_PROCESS
    p.first_packet_on_sequence = True
    p.previous_packet_dropped = 1
    for pid in sorted(names):
        t = p.process_tree.threads.add()
        t.tid, t.name = pid, names[pid]
    w.put(p)

    def stats(phase, ts):
        p = pb.TracePacket()
        p.timestamp = ts
        p.trusted_packet_sequence_id = SEQ_PROCESS
        p.ftrace_stats.phase = phase
        for c in range(nr_cpus):
            s = p.ftrace_stats.cpu_stats.add()
            s.cpu, s.overrun = c, 0
        w.put(p)

    stats(pb.FtraceStats.Phase.START_OF_TRACE, t0)
    symbols = {}
    state = {"first": True}

    def flush(cpu, evs):
        p = pb.TracePacket()
        p.timestamp = evs[-1][0]
        p.trusted_packet_sequence_id = SEQ_FTRACE
        if state["first"]:
            p.first_packet_on_sequence = True
            p.previous_packet_dropped = 1
            p.sequence_flags = pb.TracePacket.SequenceFlags.SEQ_INCREMENTAL_STATE_CLEARED
            state["first"] = False
        else:
            p.sequence_flags = pb.TracePacket.SequenceFlags.SEQ_NEEDS_INCREMENTAL_STATE

        def sym(name):
            if name not in symbols:
                symbols[name] = len(symbols) + 1
                k = p.interned_data.kernel_symbols.add()
                k.iid, k.str = symbols[name], name.encode()
            return symbols[name]

        b = p.ftrace_events
        b.cpu = cpu
        cs = b.compact_sched
        table, last_sw, last_wk = {}, 0, 0

        def intern(s):
            if s not in table:
                table[s] = len(table)
                cs.intern_table.append(s)
            return table[s]

        for ts, _, pid, flags, ev, a in evs:
            if compact and ev == "sched_switch":
                cs.switch_timestamp.append(ts - last_sw)
                last_sw = ts
                cs.switch_prev_state.append(prev_state(a[4]))
                cs.switch_next_pid.append(int(a[6]))
                cs.switch_next_prio.append(int(a[7]))
                cs.switch_next_comm_index.append(intern(a[5]))
            elif compact and ev == "sched_waking":
                cs.waking_timestamp.append(ts - last_wk)
                last_wk = ts
                cs.waking_pid.append(int(a[2]))
                cs.waking_target_cpu.append(int(a[4]))
                cs.waking_prio.append(int(a[3]))
                cs.waking_comm_index.append(intern(a[1]))
                if flags is not None:
                    cs.waking_common_flags.append(flags)
            else:
                fill_event(b.event.add(), ts, pid, flags, ev, a, sym)
        w.put(p)

    # Read cycles: each CPU's events of the cycle, CPU by CPU, in bundles of at most N events
    # (events read as a stream: one cycle held at a time).
    per_cpu, end, last = {}, None, t0

    def cycle():
        for cpu in sorted(per_cpu):
            evs = per_cpu[cpu]
            for k in range(0, len(evs), bundle_events):
                flush(cpu, evs[k:k + bundle_events])
        per_cpu.clear()

    for e in events:
        if end is not None and e[0] >= end:
            cycle()
            end = None
        if end is None:
            end = e[0] - e[0] % cycle_ns + cycle_ns
        per_cpu.setdefault(e[1], []).append(e)
        last = e[0]
    cycle()
    stats(pb.FtraceStats.Phase.END_OF_TRACE, last)
    w.close()


def synthetic(n, nr_cpus):
    """A pipe-like ping-pong of task pairs, each pair on its own CPU: n events in all."""
    names = {}
    pairs = max(1, nr_cpus)
    for c in range(pairs):
        names[1000 + 2 * c] = "pp-a"
        names[1001 + 2 * c] = "pp-b"
    ts, k, cur = 1_000_000_000, 0, {}
    while k < n:
        for c in range(pairs):
            a, b = 1000 + 2 * c, 1001 + 2 * c
            run, nxt = cur.get(c, (a, b))
            ts += 1000
            yield (ts, c, run, 0x01, "sched_waking", ["", names[nxt], str(nxt), "120", str(c)])
            ts += 1000
            yield (ts, c, run, 0x01, "sched_switch",
                   ["", names[run], str(run), "120", "S", names[nxt], str(nxt), "120"])
            cur[c] = (nxt, run)
            k += 2
            if k >= n:
                return


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("inputs", nargs="+", help="TRACE.txt[.gz] EXPANDED COMPACT, or with --synthetic: OUT")
    ap.add_argument("--cycle-us", type=int, default=2000, help="read cycle length (default 2000)")
    ap.add_argument("--bundle-events", type=int, default=64, help="events per bundle at most (default 64)")
    ap.add_argument("--synthetic", type=int, help="write N events of ping-pong pairs, compact_sched")
    ap.add_argument("--cpus", type=int, default=4, help="CPUs of --synthetic (default 4)")
    o = ap.parse_args()
    if o.synthetic:
        names = {1000 + 2 * c + d: ("pp-a", "pp-b")[d] for c in range(o.cpus) for d in range(2)}
        write_trace(o.inputs[0], synthetic(o.synthetic, o.cpus), names, True, o.cycle_us * 1000, 4096, o.cpus,
                    1_000_000_000)
        return
    if len(o.inputs) != 3:
        ap.error("expected TRACE EXPANDED COMPACT")
    events, names = parse_text(o.inputs[0])
    nr_cpus = 1 + max(e[1] for e in events)
    t0 = events[0][0]
    write_trace(o.inputs[1], events, names, False, o.cycle_us * 1000, o.bundle_events, nr_cpus, t0)
    write_trace(o.inputs[2], events, names, True, o.cycle_us * 1000, o.bundle_events, nr_cpus, t0)


if __name__ == "__main__":
    main()
