//! Steven Rostedt's 2013 idle_balance changes (docs/kernel-model.md §5.4), modelled on today's
//! kernel: the newidle balance moved out of `__schedule()` into the idle class's post-schedule
//! hook (patch 2/3), run with IRQs enabled (patch 3/3), plus the `nr_running` re-check.
//! See: tip pull "sched: clean ups and a minor fix" (head 1db13ecf8905), 2013-02.

mod support;

use schedsim::linux::engine::{cpu_frames, Frame};
use schedsim::run::{build, execute};
use schedsim::spec::RunSpec;
use schedsim::workload::params::Params;
use support::*;

fn hackbench(patches: &str, seed: u64) -> RunSpec {
    let mut s = RunSpec::new("hackbench");
    s.machine = "i7-4c8t".into();
    s.kernel = "v6.10".into();
    s.patches = patches.into();
    s.seed = seed;
    s.params = Params::from_pairs(vec![("tool".into(), "old".into()), ("args".into(), "4".into())], "test");
    s
}

const POST: &str = "+rostedt-2013-post-schedule,+rostedt-2013-irqs-on";

/// Walk the run action by action and report, for every instant a CPU is inside a newidle
/// balance that dropped its rq lock (walking domains), whether its IRQs were on, and whether
/// an interrupt handler ran on top of it.
fn observe(patches: &str) -> (u64, u64, u64) {
    let mut k = build(&hackbench(patches, 1)).unwrap();
    no_run_ahead(&mut k);
    let (mut walks, mut irqs_on, mut nested) = (0, 0, 0);
    while !k.finished() && step_one(&mut k, u64::MAX) {
        for c in 0..k.m.topo.nr_cpus as usize {
            let st = &cpu_frames(&k, c);
            let Some(i) = st.iter().position(|f| matches!(f, Frame::NewidleBalance(n) if n.t0 != 0)) else { continue };
            walks += 1;
            if !k.cpus[c].x.irqs_off {
                irqs_on += 1;
            }
            if st[i + 1..].iter().any(|f| matches!(f, Frame::HardIrq(_))) {
                nested += 1;
            }
        }
    }
    (walks, irqs_on, nested)
}

#[test]
fn in_schedule_balance_keeps_irqs_off_and_takes_no_interrupt() {
    let (walks, irqs_on, nested) = observe("");
    assert!(walks > 0, "scenario: some newidle balances walk the domains");
    assert_eq!(irqs_on, 0, "IRQs stay off for the whole newidle balance inside __schedule()");
    assert_eq!(nested, 0, "no interrupt is serviced during it");
}

#[test]
fn post_schedule_balance_runs_with_irqs_on_and_services_interrupts() {
    let (walks, irqs_on, nested) = observe(POST);
    assert!(walks > 0);
    assert!(irqs_on > 0, "with patch 3/3 the balance drops the lock with IRQs enabled");
    assert!(nested > 0, "and interrupts are serviced during it");
}

/// For every task a CPU pulls for itself in a newidle balance: was it pulled by the task that
/// is going to sleep, inside `__schedule()`, and switched to directly (one switch)? Or pulled
/// by the idle task after the switch to idle, then switched to from idle (two switches)?
fn pull_sequences(patches: &str) -> (u32, u32) {
    use schedsim::trace::Event;
    let mut s = hackbench(patches, 1);
    s.trace = true;
    let r = execute(&s).unwrap();
    let (mut one, mut two) = (0, 0);
    for (i, rec) in r.trace.iter().enumerate() {
        let Event::SchedMigrateTask { pid, dest_cpu, .. } = rec.event else { continue };
        if dest_cpu != rec.cpu || rec.flags & schedsim::trace::flags::SOFTIRQ != 0 {
            continue; // a balance on behalf of another CPU, or a periodic (softirq) one
        }
        // A wakeup placement (sched_waking just before, on this CPU) is not a balance pull.
        let woken = r.trace[..i]
            .iter()
            .rev()
            .find(|x| x.cpu == rec.cpu)
            .is_some_and(|x| matches!(x.event, Event::SchedWaking { pid: w, .. } if w == pid));
        if woken {
            continue;
        }
        let next = r.trace[i + 1..].iter().find_map(|x| match x.event {
            Event::SchedSwitch { prev_pid, next_pid, .. } if x.cpu == rec.cpu => Some((prev_pid, next_pid)),
            _ => None,
        });
        let prev = r.trace[..i].iter().rev().find_map(|x| match x.event {
            Event::SchedSwitch { prev_pid, next_pid, .. } if x.cpu == rec.cpu => Some((prev_pid, next_pid)),
            _ => None,
        });
        match (rec.pid, prev, next) {
            // The sleeping task pulls and hands the CPU straight to the pulled one.
            (sleeper, _, Some((p, n))) if sleeper != 0 && p == sleeper && n == pid => one += 1,
            // A task switched to idle; idle pulls; idle switches to the pulled task.
            (0, Some((p0, 0)), Some((0, n))) if p0 != 0 && n == pid => two += 1,
            _ => {}
        }
    }
    (one, two)
}

#[test]
fn a_newidle_pull_costs_one_switch_in_schedule_and_two_via_the_post_schedule_hook() {
    let (one, two) = pull_sequences("");
    assert!(one > 0, "in __schedule(): task -> pulled task, one switch");
    // The idle task's own __schedule() (schedule_idle() for a NEED_RESCHED whose task was
    // placed elsewhere) finds nothing queued and runs the same newidle balance: that pull is
    // the idle task's, after a switch to idle, and rare.
    assert!(two * 20 <= one, "task -> idle -> pulled task is the exception: {two} against {one}");
    let (one, two) = pull_sequences(POST);
    assert_eq!(one, 0, "the balance no longer runs inside __schedule()");
    assert!(two > 0, "post-schedule: task -> idle, pull, idle -> pulled task");
}

#[test]
fn the_later_patches_require_the_first() {
    let err = schedsim::linux::KernelConfig::resolve("v6.10", "+rostedt-2013-irqs-on", 1000).unwrap_err();
    assert!(err.contains("requires rostedt-2013-post-schedule"), "{err}");
}

/// `reproduce hackbench-2013` builds its variants on v3.8 unless told otherwise, and reports
/// where the switches come from.
#[test]
fn the_experiment_runs_on_v3_8_by_default_and_on_v6_10_when_asked() {
    use schedsim::experiments::{hackbench2013, ExpOpts};
    let mut o = ExpOpts { runs: 1, params: vec![("args".into(), "2".into())], ..ExpOpts::default() };
    let c = hackbench2013::plan(&o).and_then(|p| p.run(2)).expect("runs");
    assert_eq!(c.rows.len(), 3);
    assert!(
        c.rows.iter().all(|r| r.kernel.starts_with("v3.8")),
        "{:?}",
        c.rows.iter().map(|r| &r.kernel).collect::<Vec<_>>()
    );
    assert!(c.notes.iter().any(|n| n.contains("task->idle")), "the switch breakdown is printed");
    o.kernel = Some("v6.10".into());
    let c = hackbench2013::plan(&o).and_then(|p| p.run(2)).expect("runs");
    assert!(c.rows.iter().all(|r| r.kernel.starts_with("v6.10")));
}

/// `reproduce rt-push` has a v3.8 row: without RT_PUSH_IPI the woken task waits for the pinned
/// task there, with or without ok_to_push_task.
#[test]
fn rt_push_has_v3_8_rows() {
    use schedsim::experiments::{rtpush, ExpOpts};
    let c = rtpush::plan(&ExpOpts { runs: 1, ..ExpOpts::default() }).and_then(|p| p.run(2)).expect("runs");
    let row = |name: &str| c.rows.iter().find(|r| r.variant == name).unwrap_or_else(|| panic!("row {name}"));
    for name in ["v3.8", "ok_to_push_task on v3.8"] {
        assert_eq!(row(name).extra["woken_task_cpu_is_pinned_cpu"], serde_json::json!(true), "{name}");
    }
    assert_eq!(row("ok_to_push_task").extra["woken_task_cpu_is_pinned_cpu"], serde_json::json!(false));
}
