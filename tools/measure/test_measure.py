#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Self-tests of the measurement tools on small hand-written traces.

usage: python3 tools/measure/test_measure.py   (stdlib unittest; no captures needed)
"""
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import background  # noqa: E402
import path_check  # noqa: E402
import path_costs  # noqa: E402
import tracelib  # noqa: E402

HDR = "# tracer: nop\n#\n"


def line(comm, pid, cpu, flags, ts, ev, args):
    return f"{comm:>16}-{pid:<7} [{cpu:03d}] {flags} {ts}: {ev}: {args}\n"


class TraceLib(unittest.TestCase):
    def test_us_and_tsc_timestamps(self):
        with tempfile.TemporaryDirectory() as d:
            p = os.path.join(d, "t.txt")
            with open(p, "w") as f:
                f.write(HDR + line("a", 5, 0, "d.h1.", "310.230399", "local_timer_entry", "vector=236"))
                f.write(line("a", 5, 1, "..s1.", "2596124", "softirq_entry", "vec=1 [action=TIMER]"))
            recs = list(tracelib.records(p, tsc_mhz=2596.124))
            self.assertEqual(recs[0].ts, 310_230_399_000)
            self.assertEqual(recs[0].ctx, "h")
            self.assertEqual(recs[1].ts, 1_000_000)  # 2596124 counts at 2596.124 MHz = 1 ms
            self.assertEqual(recs[1].ctx, "s")
            with self.assertRaises(SystemExit):
                list(tracelib.records(p))  # raw counter without a TSC rate is an error

    def test_quantile(self):
        self.assertEqual(tracelib.quantile([1, 2, 3, 4, 5], 0.5), 3)
        self.assertEqual(tracelib.quantile([0, 10], 0.9), 9)


class Background(unittest.TestCase):
    def run_trace(self, text):
        with tempfile.TemporaryDirectory() as d:
            p = os.path.join(d, "t.txt")
            with open(p, "w") as f:
                f.write(HDR + text)
            an = background.Analyzer(p)
            for r in tracelib.records(p):
                an.feed(r)
            return an.result()

    def test_work_timer_wakeup_and_lost_switch(self):
        t = ""
        t += line("<idle>", 0, 1, "..s1.", "10.000000", "timer_start",
                  "timer=00a function=delayed_work_timer_fn expires=1 [timeout=1] flags=D|I")
        t += line("<idle>", 0, 1, "..s1.", "10.000010", "timer_expire_entry",
                  "timer=00a function=delayed_work_timer_fn now=4295000000 baseclk=4295000000")
        t += line("<idle>", 0, 1, "..s1.", "10.000011", "workqueue_queue_work",
                  "work struct=0b function=vmstat_update workqueue=mm_percpu_wq req_cpu=1 cpu=1")
        t += line("<idle>", 0, 1, "d.s4.", "10.000012", "sched_wakeup",
                  "comm=kworker/1:1 pid=41 prio=120 target_cpu=001")
        t += line("<idle>", 0, 1, "..s1.", "10.000014", "timer_expire_exit", "timer=00a")
        # the idle task's switch-out is missing (as on CPU 1 of the real captures)
        t += line("kworker/1:1", 41, 1, ".....", "10.000020", "workqueue_execute_start",
                  "work struct 0b: function vmstat_update")
        t += line("kworker/1:1", 41, 1, ".....", "10.000023", "workqueue_execute_end",
                  "work struct 0b: function vmstat_update")
        t += line("kworker/1:1", 41, 1, "d..2.", "10.000025", "sched_switch",
                  "prev_comm=kworker/1:1 prev_pid=41 prev_prio=120 prev_state=I ==> "
                  "next_comm=swapper/1 next_pid=0 next_prio=120")
        t += line("<idle>", 0, 1, "..s1.", "11.000000", "timer_expire_entry",
                  "timer=00c function=process_timeout now=4295000250 baseclk=4295000250")
        t += line("<idle>", 0, 1, "..s1.", "11.000002", "timer_expire_exit", "timer=00c")
        res = self.run_trace(t)
        w = res["workqueue"]["vmstat_update"]
        self.assertEqual(w["runs"], 1)
        self.assertEqual(w["duration_ns"]["p50"], 3000)
        self.assertEqual(w["workers"], {"bound": 1})
        self.assertEqual(w["delayed_timer_flags"], {"D|I": 1})
        self.assertEqual(w["queued_from"], {"timer:delayed_work_timer_fn": 1})
        self.assertEqual(res["timer"]["delayed_work_timer_fn"]["led_to"],
                         {"work:vmstat_update": 1, "wake:kworker/1": 1})
        k = res["tasks"]["kworker/1:1"]
        self.assertEqual(k["run_ns"]["p50"], 5000)  # 10.000020 (inferred start) .. 10.000025
        self.assertEqual(k["runs_with_inferred_start"], 1)
        self.assertEqual(k["woken_from"], {"timer:delayed_work_timer_fn": 1})
        self.assertAlmostEqual(res["hz_from_jiffies"], 250.0, places=3)


class PathCosts(unittest.TestCase):
    def test_ipi_wake_and_syscall(self):
        mhz = 1000.0  # 1 count = 1 ns
        t = ""
        t += line("<idle>", 0, 0, "d..1.", "100", "cpu_idle", "state=1 cpu_id=0")
        t += line("w", 7, 1, ".....", "1000", "sys_enter", "NR 1 (4, 0, 4, 0, 0, 0)")
        t += line("w", 7, 1, "d..3.", "1100", "sched_waking", "comm=r pid=8 prio=120 target_cpu=000")
        t += line("w", 7, 1, "d..3.", "1200", "ipi_send_cpu",
                  "cpu=0 callsite=ttwu_queue_wakelist+0x0/0x1 "
                  "callback=generic_smp_call_function_single_interrupt+0x0/0x10")
        t += line("w", 7, 1, ".....", "7200", "sys_exit", "NR 1 = 4")
        t += line("<idle>", 0, 0, "d.h1.", "15200", "call_function_single_entry", "vector=251")
        t += line("<idle>", 0, 0, "d.h1.", "15300", "csd_function_entry", "func=sched_ttwu_pending, csd=1")
        t += line("<idle>", 0, 0, "d.h1.", "16800", "csd_function_exit", "func=sched_ttwu_pending, csd=1")
        t += line("<idle>", 0, 0, "d.h1.", "17000", "call_function_single_exit", "vector=251")
        t += line("<idle>", 0, 0, "dN.1.", "18000", "cpu_idle", "state=4294967295 cpu_id=0")
        t += line("<idle>", 0, 0, "d..2.", "27000", "sched_switch",
                  "prev_comm=swapper/0 prev_pid=0 prev_prio=120 prev_state=R ==> "
                  "next_comm=r next_pid=8 next_prio=120")
        t += line("r", 8, 0, ".....", "27700", "sys_exit", "NR 0 = 4")
        pc = path_costs.PathCollector()
        with tempfile.TemporaryDirectory() as d:
            p = os.path.join(d, "t.txt")
            with open(p, "w") as f:
                f.write(HDR + t)
            for r in tracelib.records(p, tsc_mhz=mhz):
                pc.feed(r)
        self.assertEqual(pc.d["ipi:csd:idle"], [14000])
        self.assertEqual(pc.d["ipi:csd:idle:cpu1->cpu0"], [14000])
        self.assertEqual(pc.d["ipi_send->next_record_on_sender:csd"], [6000])
        self.assertEqual(pc.d["csd:sched_ttwu_pending"], [1500])
        self.assertEqual(pc.d["call_function_single"], [1800])
        self.assertEqual(pc.d["idle_exit_next"], [9000])
        self.assertEqual(pc.d["wake:CROSS:idle"], [25900])
        self.assertEqual(pc.d["sys:write:nonblock"], [6200])
        self.assertEqual(pc.d["cs:switch->next_first:task:sys_exit"], [700])

    def test_stdout_parse(self):
        with tempfile.TemporaryDirectory() as d:
            p = os.path.join(d, "pipe-1.stdout")
            with open(p, "w") as f:
                f.write("     Total time: 0.161 [sec]\n\n       8.077200 usecs/op\n         123805 ops/sec\n")
            self.assertEqual(path_costs.parse_stdout(p),
                             {"total_s": 0.161, "usecs_per_op": 8.0772, "ops_per_sec": 123805})


class PathCheck(unittest.TestCase):
    def test_records_inside_an_interval_are_counted(self):
        t = ""
        t += line("<idle>", 0, 0, "d.h1.", "1000", "csd_function_entry", "func=sched_ttwu_pending, csd=1")
        t += line("<idle>", 0, 1, "d.h1.", "1100", "local_timer_entry", "vector=236")  # other CPU
        t += line("<idle>", 0, 0, "d.h2.", "1200", "sched_wakeup", "comm=r pid=8 prio=120 target_cpu=000")
        t += line("<idle>", 0, 0, "d.h1.", "2000", "csd_function_exit", "func=sched_ttwu_pending, csd=1")
        ic = path_check.InnerCounter()
        with tempfile.TemporaryDirectory() as d:
            p = os.path.join(d, "t.txt")
            with open(p, "w") as f:
                f.write(HDR + t)
            for r in tracelib.records(p, tsc_mhz=1000.0):
                ic.feed(r)
        self.assertEqual(ic.d["csd:sched_ttwu_pending"], [1000])
        self.assertEqual(ic.inner["csd:sched_ttwu_pending"], [1])

    def test_a_path_out_of_line_is_flagged(self):
        keys = ["csd:sched_ttwu_pending", "call_function_single", "reschedule", "softirq:SCHED"]
        # Measured 10x the model everywhere except softirq:SCHED (2x): only that one is flagged.
        meas = {"captures": [{"clock": "x86-tsc", "spread": {"messaging": {"paths": {
            k: {"medians": [1000.0 * (2 if k == "softirq:SCHED" else 10)] * 3, "counts": [10] * 3}
            for k in keys}}}}]}
        inner = {"messaging": {k: {"n": 10, "p50": 0} for k in keys}}
        model = {"runs": [{"workload": "messaging", "background": "none",
                           "paths": {k: {"n": 10, "p10": 1000, "p50": 1000, "p90": 1000, "inner_p50": 0}
                                     for k in keys}}]}
        saved = path_check.irq_entry_ns
        path_check.irq_entry_ns = lambda _m: 0
        try:
            rows, k = path_check.build_rows(meas, inner, model, 0, 0)
        finally:
            path_check.irq_entry_ns = saved
        scale = path_check.GUEST_GHZ / path_check.MODEL_GHZ
        self.assertAlmostEqual(k, 10 * scale)
        self.assertEqual([r["key"] for r in rows if r["flag"]], ["softirq:SCHED"])


if __name__ == "__main__":
    unittest.main()
