// b92486cbf2aa "sched: Compute runnable load avg in cpu_load and cpu_avg_load_per_task"
// (v3.11), with the later wake_affine_idle()/wake_affine_weight() form folded in.
// See: b92486cbf2aa
//
// Pins: the load `wake_affine()` compares. The waker's CPU 0 holds one queued task, the
// wakee's previous CPU 2 holds two, but their PELT history says the opposite (CPU 0 2000, CPU
// 2 100). With the patch (PELT) the wakee stays on CPU 2; without it (v3.8: instantaneous
// `rq->load.weight`) CPU 0 is the lighter one and the wakeup is affine. Every CPU is busy so
// the idle-sibling search keeps the target.

mod support;

use schedsim::linux::kernel::sched::core::activate_task;
use schedsim::linux::kernel::sched::fair::select_task_rq_fair;
use schedsim::linux::kernel::sched::fair_class::EnqueueFlags;
use schedsim::linux::kernel::sched::TASK_RUNNING;
use schedsim::run::build;
use support::*;

fn placed(kernel: &str, patches: &str) -> u32 {
    let mut k = build(&idle_spec("i7-4c8t", kernel, patches)).expect("valid spec");
    run_until(&mut k, 5_000_000);
    for c in 0..k.m.topo.nr_cpus {
        let n = if c == 2 { 2 } else { 1 };
        for _ in 0..n {
            let t = sleeper(&mut k, "busy", c, Some(c));
            k.tasks[t as usize].state = TASK_RUNNING;
            activate_task(&mut k, c, c, t, EnqueueFlags::default());
        }
    }
    k.cpus[0].rq.cfs.avg.load_avg = 2000;
    k.cpus[2].rq.cfs.avg.load_avg = 100;
    let p = sleeper(&mut k, "wakee", 2, None);
    select_task_rq_fair(&mut k, 0, p, 2, false).0
}

#[test]
fn with_the_patch_pelt_load_keeps_the_wakee_on_its_previous_cpu() {
    assert_eq!(placed("v6.10", ""), 2);
}

#[test]
fn without_it_the_instantaneous_weight_makes_the_wakeup_affine() {
    assert_eq!(placed("v6.10", "-b92486cbf2aa"), 0);
    assert_eq!(placed("v3.8", ""), 0);
}
