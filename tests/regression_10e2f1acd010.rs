// 10e2f1acd010 "sched/core: Rewrite and improve select_idle_siblings()" (v4.9).
// See: 10e2f1acd010
//
// Pins: the idle-sibling search of a wakeup onto its previous CPU (the waker's own, so no
// affine decision). CPU 0 and CPU 1 are busy, their SMT siblings and the other two cores idle,
// and the LLC's `has_idle_cores` hint is clear. With the patch (v6.10) the search takes the
// idle SMT sibling of CPU 0; without it (v3.8) the walk of the LLC's groups takes the first
// core whose CPUs are all idle.

mod support;

use schedsim::linux::kernel::sched::core::activate_task;
use schedsim::linux::kernel::sched::fair::select_task_rq_fair;
use schedsim::linux::kernel::sched::fair_class::EnqueueFlags;
use schedsim::linux::kernel::sched::TASK_RUNNING;
use schedsim::run::build;
use support::*;

/// (placed on, CPU 0's sibling, the first fully idle core's first CPU)
fn placed(kernel: &str, patches: &str) -> (u32, u32, u32) {
    let mut k = build(&idle_spec("i7-4c8t", kernel, patches)).expect("valid spec");
    run_until(&mut k, 5_000_000);
    for c in [0, 1] {
        let t = sleeper(&mut k, "busy", c, Some(c));
        k.tasks[t as usize].state = TASK_RUNNING;
        activate_task(&mut k, c, c, t, EnqueueFlags::default());
    }
    for l in k.llc_shared.iter_mut() {
        l.has_idle_cores = false;
    }
    let sib0 = k.m.topo.smt_mask(0).iter().find(|&c| c != 0).expect("SMT");
    let busy_cores = [k.m.topo.smt_mask(0), k.m.topo.smt_mask(1)];
    let first_idle_core = (0..k.m.topo.nr_cpus).find(|&c| !busy_cores.iter().any(|m| m.test(c))).unwrap();
    let p = sleeper(&mut k, "wakee", 0, None);
    (select_task_rq_fair(&mut k, 0, p, 0, false).0, sib0, first_idle_core)
}

#[test]
fn with_the_patch_the_idle_smt_sibling_is_taken() {
    let (placed, sib0, _) = placed("v6.10", "");
    assert_eq!(placed, sib0);
}

#[test]
fn without_it_the_first_fully_idle_core_is_taken() {
    for (kernel, patches) in [("v6.10", "-10e2f1acd010"), ("v3.8", "")] {
        let (placed, _, core) = placed(kernel, patches);
        assert_eq!(placed, core, "{kernel} {patches}");
    }
}
