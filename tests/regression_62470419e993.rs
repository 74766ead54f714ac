// 62470419e993 "sched: Implement smarter wake-affine logic" (v3.12).
// See: 62470419e993
//
// Pins: `wake_wide()` in `select_task_rq_fair()`. A waker that switches wakees often
// (`wakee_flips` 1000) waking a wakee that does too (10, above the LLC size 8): with the patch
// the wakeup is not affine and the wakee stays on its previous CPU; without it (v3.8) the sync
// wakeup is pulled to the waker's CPU (which holds only the waker). Every CPU of the i7 is
// busy (a task each), so the idle-sibling search keeps whatever target it is given.

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
    let mut waker = 0;
    for c in 0..k.m.topo.nr_cpus {
        let t = sleeper(&mut k, "busy", c, Some(c));
        k.tasks[t as usize].state = TASK_RUNNING;
        activate_task(&mut k, c, c, t, EnqueueFlags::default());
        if c == 0 {
            waker = t;
        }
    }
    // The waker is the task current on CPU 0 (observed between two actions, as if it ran).
    k.cpus[0].rq.curr = waker;
    schedsim::linux::kernel::sched::group_sums::rq_changed(&mut k, 0);
    let p = sleeper(&mut k, "wakee", 2, None);
    k.tasks[waker as usize].wakee_flips = 1000;
    k.tasks[p as usize].wakee_flips = 10;
    // Keep the flips from decaying at this jiffy.
    let j = k.jiffies();
    k.tasks[waker as usize].wakee_flip_decay_ts = j;
    select_task_rq_fair(&mut k, 0, p, 2, true).0
}

#[test]
fn with_the_patch_a_wide_wakeup_stays_on_its_previous_cpu() {
    assert_eq!(placed("v6.10", ""), 2);
}

#[test]
fn without_it_the_sync_wakeup_is_affine() {
    assert_eq!(placed("v6.10", "-62470419e993"), 0);
    assert_eq!(placed("v3.8", ""), 0);
}
