// 38033c37faab "sched: Push down pre_schedule() and idle_balance()" (v3.15).
// See: 38033c37faab
//
// Pins: where the newidle balance runs. With the patch (v6.10) it is `sched_balance_newidle()`
// from inside `pick_next_task_fair()`; without it (v3.8) `__schedule()` calls `idle_balance()`
// itself, before the pick, when the runqueue is empty, and the fair pick never balances. Both
// drop the rq lock for the domain walk with IRQs off.

mod support;

use schedsim::linux::engine::{cpu_frames, Frame};
use schedsim::linux::kernel::sched::fair::IdleBalanceAt;
use schedsim::run::build;
use schedsim::spec::RunSpec;
use schedsim::workload::params::Params;
use support::*;

fn hackbench(kernel: &str, patches: &str) -> RunSpec {
    let mut s = RunSpec::new("hackbench");
    s.machine = "i7-4c8t".into();
    s.kernel = kernel.into();
    s.patches = patches.into();
    s.params = Params::from_pairs(vec![("tool".into(), "old".into()), ("args".into(), "2".into())], "test");
    s
}

/// Step the run and count, per step and CPU: stacks holding a modern newidle balance, stacks
/// holding a 3.8 `idle_balance()` (and of those, the ones walking domains with the rq lock
/// dropped and IRQs on, or whose caller is not `__schedule()`).
fn observe(kernel: &str, patches: &str) -> (u64, u64, u64, u64) {
    let mut k = build(&hackbench(kernel, patches)).unwrap();
    no_run_ahead(&mut k);
    let (mut modern, mut old, mut irqs_on_walks, mut not_from_schedule) = (0, 0, 0, 0);
    while !k.finished() && step_one(&mut k, u64::MAX) {
        for c in 0..k.m.topo.nr_cpus as usize {
            let st = &cpu_frames(&k, c);
            if st.iter().any(|f| matches!(f, Frame::NewidleBalance(_))) {
                modern += 1;
            }
            let Some(i) = st.iter().position(|f| matches!(f, Frame::IdleBalance(_))) else { continue };
            old += 1;
            if !matches!(st[i - 1], Frame::Schedule(_)) {
                not_from_schedule += 1;
            }
            if matches!(st[i], Frame::IdleBalance(b) if b.at == IdleBalanceAt::Domain) && !k.cpus[c].x.irqs_off {
                irqs_on_walks += 1;
            }
        }
    }
    assert!(k.finished(), "{kernel} {patches}: hackbench finished");
    (modern, old, irqs_on_walks, not_from_schedule)
}

#[test]
fn with_the_patch_the_balance_runs_inside_the_fair_pick() {
    let (modern, old, _, _) = observe("v6.10", "");
    assert!(modern > 0, "sched_balance_newidle() ran");
    assert_eq!(old, 0, "no idle_balance() from __schedule()");
    let (modern, old, _, _) = observe("v3.8", "+38033c37faab,+9bd721c55c8a,+4486edd12b5a");
    assert!(modern > 0 && old == 0, "v3.8 with the patch: {modern} {old}");
}

#[test]
fn without_it_schedule_calls_idle_balance_before_the_pick() {
    let (modern, old, irqs_on, not_from_schedule) = observe("v3.8", "");
    assert_eq!(modern, 0, "the fair pick never balances");
    assert!(old > 0, "idle_balance() ran");
    assert_eq!(not_from_schedule, 0, "always called by __schedule()");
    assert_eq!(irqs_on, 0, "its domain walk keeps IRQs off");
}

#[test]
fn the_modern_placement_carries_the_later_gates() {
    let e = schedsim::linux::KernelConfig::resolve("v6.10", "-4486edd12b5a", 250).unwrap_err();
    assert!(e.contains("38033c37faab requires 4486edd12b5a"), "{e}");
}
