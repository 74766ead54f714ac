//! The fair class end to end: two CPU-bound tasks sharing one CPU are switched by the tick
//! (`sched_tick()` -> `task_tick_fair()` -> `resched_curr()`, then the return to user mode
//! schedules), on EEVDF (v6.10) and on CFS (v6.1).
//!
//! Setup: two spinners started on CPU 0 of smp-4 (HZ=250, so a 4 ms tick) and bound to it
//! right after they start, so balancing cannot separate them. The tunables scale with
//! 1 + ilog2(4) = 3: EEVDF's base slice is 2.25 ms, so a task runs until the first tick after
//! its deadline and the other one (if eligible) takes over — one tick each, occasionally two
//! while the other is not yet eligible. CFS's period is 18 ms, so each task's ideal slice is
//! 9 ms and `check_preempt_tick()` switches at the third tick of a run (12 ms).

mod support;

use schedsim::linux::TaskId;
use schedsim::run::build;
use schedsim::sim::Time;
use schedsim::trace::Event;
use support::*;

const TICK: Time = 4_000_000;
const DURATION_MS: u64 = 100;

struct TwoOnOne {
    k: schedsim::run::RunWorld,
    tasks: [TaskId; 2],
    pids: [u32; 2],
    /// (time, prev pid, next pid) of every switch on CPU 0 after the start.
    switches: Vec<(Time, u32, u32)>,
    /// When the spinners stop spinning and exit.
    end_ns: Time,
}

fn two_on_one(kernel: &str) -> TwoOnOne {
    let spec = spinners_spec("smp-4", kernel, "", 2, "0", DURATION_MS, None, true);
    let mut k = build(&spec).expect("valid spec");
    let tasks: [TaskId; 2] = match &k.progs.workload {
        schedsim::workload::Workload::Spinners(w) => [w.threads[0], w.threads[1]],
        _ => unreachable!(),
    };
    let mut per = per_cpu(&k);
    let st =
        step_until(&mut k, 50_000_000, &mut per, |_, _, _| {}, |k| tasks.iter().all(|&t| k.tasks[t as usize].on_rq));
    assert_eq!(st, Stop::Pred, "{kernel}: the spinners never started");
    for &t in &tasks {
        assert_eq!(k.tasks[t as usize].cpu, 0, "{kernel}: started on CPU 0");
        k.tasks[t as usize].pinned = Some(0);
    }
    let from = k.trace.records.len();
    let end = k.now + DURATION_MS * 1_000_000 + TICK;
    run_until(&mut k, end);
    assert!(k.finished(), "{kernel}: the spinners did not finish");
    let switches = k.trace.records[from..]
        .iter()
        .filter_map(|r| match r.event {
            Event::SchedSwitch { prev_pid, next_pid, .. } if r.cpu == 0 => Some((r.ts_ns, prev_pid, next_pid)),
            _ => None,
        })
        .collect();
    let pids = [pid_of(&k, tasks[0]), pid_of(&k, tasks[1])];
    let end_ns = match &k.progs.workload {
        schedsim::workload::Workload::Spinners(w) => w.start_ns + w.duration_ns,
        _ => unreachable!(),
    };
    TwoOnOne { k, tasks, pids, switches, end_ns }
}

impl TwoOnOne {
    /// The switches from one spinner to the other while both spin (the steady state, without
    /// the exits), checked to alternate.
    fn alternations(&self) -> Vec<Time> {
        let [a, b] = self.pids;
        let between: Vec<&(Time, u32, u32)> = self
            .switches
            .iter()
            .filter(|(t, p, n)| *t < self.end_ns && ((*p == a && *n == b) || (*p == b && *n == a)))
            .collect();
        for w in between.windows(2) {
            assert_eq!(w[0].2, w[1].1, "the task switched to is the next one switched away from: {w:?}");
        }
        between.iter().map(|s| s.0).collect()
    }

    fn check_common(&self, kernel: &str) {
        let [a, b] = self.pids;
        // Only the two spinners run on CPU 0 between the first switch and their exit.
        let spinners = |p: u32| p == a || p == b;
        let last = self.switches.iter().rposition(|(_, p, n)| spinners(*p) && spinners(*n)).expect("alternations");
        for (t, p, n) in &self.switches[1..last] {
            assert!(spinners(*p) && spinners(*n), "{kernel}: at {t} ns CPU 0 switched {p} -> {n}");
        }
        assert_eq!(self.k.stats.cpu_migrations, 0, "{kernel}: bound tasks never migrate");
        for c in 1..4 {
            assert!(
                !self.k.trace.records.iter().any(|r| r.cpu == c
                    && matches!(r.event, Event::SchedSwitch { next_pid, .. } if spinners(next_pid))),
                "{kernel}: a spinner ran on CPU {c}"
            );
        }
        // Every switch between them is a tick preemption: it follows a tick of CPU 0 closely.
        for t in self.alternations() {
            let since_tick = t % TICK;
            assert!(since_tick < 20_000, "{kernel}: switch at {t} ns is {since_tick} ns after a tick");
        }
    }

    fn runtimes(&self) -> (Time, Time) {
        let r = |t: TaskId| self.k.tasks[t as usize].sum_exec_runtime;
        (r(self.tasks[0]), r(self.tasks[1]))
    }
}

/// The run lengths between consecutive alternations, in whole ticks.
fn runs_in_ticks(alts: &[Time]) -> Vec<u64> {
    alts.windows(2).map(|w| (w[1] - w[0] + TICK / 2) / TICK).collect()
}

#[test]
fn eevdf_two_cpu_bound_tasks_alternate_every_tick() {
    let s = two_on_one("v6.10");
    s.check_common("v6.10");
    let alts = s.alternations();
    assert!(alts.len() >= 15, "v6.10: {} alternations in {DURATION_MS} ms", alts.len());
    let runs = runs_in_ticks(&alts);
    assert!(runs.iter().all(|&n| n == 1 || n == 2), "v6.10: runs of one tick, two at most: {runs:?}");
    let one = runs.iter().filter(|&&n| n == 1).count();
    assert!(one * 5 >= runs.len() * 4, "v6.10: mostly one tick: {runs:?}");
    let (x, y) = s.runtimes();
    assert!(x.abs_diff(y) <= 2 * TICK, "v6.10: fair shares: {x} vs {y} ns");
    assert!(x + y >= DURATION_MS * 1_000_000 * 95 / 100, "v6.10: CPU 0 busy throughout: {x} + {y} ns");
}

#[test]
fn cfs_two_cpu_bound_tasks_alternate_every_third_tick() {
    let s = two_on_one("v6.1");
    s.check_common("v6.1");
    let alts = s.alternations();
    assert!(alts.len() >= 6, "v6.1: {} alternations in {DURATION_MS} ms", alts.len());
    let runs = runs_in_ticks(&alts);
    assert!(runs.iter().all(|&n| n == 3), "v6.1: 12 ms runs (ideal slice 9 ms, checked at ticks): {runs:?}");
    let (x, y) = s.runtimes();
    assert!(x.abs_diff(y) <= 3 * TICK, "v6.1: fair shares within one slice: {x} vs {y} ns");
    assert!(x + y >= DURATION_MS * 1_000_000 * 95 / 100, "v6.1: CPU 0 busy throughout: {x} + {y} ns");
}

#[test]
fn eevdf_switches_more_often_than_cfs() {
    let eevdf = two_on_one("v6.10").alternations().len();
    let cfs = two_on_one("v6.1").alternations().len();
    assert!(eevdf >= 2 * cfs, "EEVDF {eevdf} vs CFS {cfs} alternations");
}
