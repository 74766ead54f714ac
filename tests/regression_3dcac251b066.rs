// 3dcac251b066 "sched/core: Introduce SM_IDLE and an idle re-entry fast-path in
// __schedule()" (v6.12).
// See: 3dcac251b066
//
// Pins: `schedule_idle()` passes SM_IDLE, and `__schedule()` with nothing runnable keeps the
// idle task without `pick_next_task()`: no `pick_next_task_fair()`, no
// `sched_balance_newidle()` with IRQs off (docs/kernel-model.md §2.5, F4 "⇒ SM_IDLE"). On
// ipistorm (CPU8 -> CPU16, the published setup) the target's `schedule_idle()` calls never
// run a newidle balance and the run is faster than v6.10 for the same seed. With a task
// runnable, SM_IDLE still picks it.

mod support;

use schedsim::linux::engine::Phase;
use schedsim::run::{build, execute};
use schedsim::trace::Event;
use support::*;

const SENDER: u32 = 8;
const TARGET: u32 = 16;
const STORM: &[&str] = &["numipi=1000", "single=1", "offset=8", "cpulist=8"];

#[test]
fn schedule_idle_on_the_target_never_runs_newidle_balance() {
    let spec = ipistorm_spec("epyc-7763-2s", "v6.12", "", STORM, None, false);
    let mut k = build(&spec).expect("valid spec");
    let per = run_attributed(&mut k, spec.limit_ns, 0);
    let t = TARGET as usize;
    assert_eq!(ipistorm_of(&k).calls(), 1000);
    assert!(per.schedule_idle_calls[t] > 0, "scenario: the target must go through schedule_idle(): {per:?}");
    assert_eq!(per.newidle_calls[t], 0, "SM_IDLE: {per:?}");
    // Elsewhere newidle still runs when a task really goes idle (the sender's kthread exiting).
    assert_eq!(k.stats.phase_ns[t][Phase::Newidle as usize], 0);
}

#[test]
fn v6_10_schedule_idle_on_the_target_runs_newidle_balance() {
    let spec = ipistorm_spec("epyc-7763-2s", "v6.10", "", STORM, None, false);
    let mut k = build(&spec).expect("valid spec");
    let per = run_attributed(&mut k, spec.limit_ns, 0);
    let t = TARGET as usize;
    assert!(per.schedule_idle_calls[t] > 0, "{per:?}");
    // Each schedule_idle() with nothing runnable goes through pick_next_task_fair() and its
    // newidle balance (the last one may still be in progress when the run stops).
    assert!(per.newidle_calls[t] + 1 >= per.schedule_idle_calls[t], "{per:?}");
    assert!(k.stats.phase_ns[t][Phase::Newidle as usize] > 0);
}

#[test]
fn sm_idle_run_is_faster_than_v6_10_for_the_same_seed() {
    for seed in 1..=3 {
        let run = |kernel: &str| {
            let mut spec = ipistorm_spec("epyc-7763-2s", kernel, "", STORM, None, false);
            spec.seed = seed;
            let r = execute(&spec).expect("valid spec");
            assert!(r.finished);
            assert_eq!(ipistorm(&r).calls(), 1000);
            ipistorm(&r).total_ns()
        };
        let (old, new) = (run("v6.10"), run("v6.12"));
        assert!(new < old, "seed {seed}: v6.12 took {new} ns, v6.10 {old} ns");
    }
}

#[test]
fn sm_idle_still_switches_to_a_runnable_task() {
    // The sender CPU is woken by the module init for its kthread: schedule_idle() with
    // nr_running == 1 must pick the thread, not take the fast path.
    let spec =
        ipistorm_spec("epyc-7763-2s", "v6.12", "", &["numipi=10", "single=1", "offset=8", "cpulist=8"], None, true);
    let r = execute(&spec).expect("valid spec");
    assert!(r.finished);
    assert_eq!(ipistorm(&r).calls(), 10);
    let first = r.trace.iter().find(|x| is_switch(x, SENDER)).expect("a switch on the sender");
    match first.event {
        Event::SchedSwitch { prev_pid, next_pid, .. } => {
            assert_eq!(prev_pid, 0, "from the idle task");
            let comm = r.comms.iter().find(|(p, _)| *p == next_pid).map(|(_, c)| c.as_str());
            assert_eq!(comm, Some("ipistorm/8"));
        }
        _ => unreachable!(),
    }
    assert!(!r.trace.iter().any(|x| is_switch(x, TARGET)), "the target only ever runs its idle task");
}
