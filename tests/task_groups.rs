// The cpu controller's task-group hierarchy (issue 31 item 5): `enqueue_task_fair()` and
// `dequeue_task_fair()` walk one sched_entity per level above a task, and the blocked-load
// update walks every leaf cfs_rq with load. Two run-wide knobs of `KernelConfig`:
// `cgroup_depth` (the workload's user tasks; kthreads stay in the root group) and
// `nr_leaf_cfs_rqs`. Their defaults (0 and 1) are the model without groups.

mod support;

use schedsim::linux::kernel::fork::{copy_process, kthread_create};
use schedsim::linux::kernel::sched::core::{activate_task, deactivate_task};
use schedsim::linux::kernel::sched::fair::sched_balance_update_blocked_averages;
use schedsim::linux::kernel::sched::fair_class::{DequeueFlags, EnqueueFlags};
use schedsim::linux::kernel::sched::TASK_RUNNING;
use schedsim::linux::{CpuId, Kernel};
use schedsim::run::build;
use schedsim::sim::Time;
use support::*;

fn kernel(depth: u32, leaves: u32) -> Kernel {
    let mut k = build(&idle_spec("smp-4", "v6.10", "")).expect("valid spec").k;
    k.cfg.set_task_groups(depth, leaves).expect("in range");
    k
}

/// The cost of enqueueing and then dequeueing a fresh task on CPU 1, performed by CPU 1.
fn enqueue_dequeue(k: &mut Kernel, kthread: bool) -> (Time, Time) {
    let cpu: CpuId = 1;
    let t = if kthread {
        kthread_create(k, "kthread".into(), 0, 120, Some(cpu), 0)
    } else {
        copy_process(k, "user".into(), 0, 120, Some(cpu), 0)
    };
    k.tasks[t as usize].state = TASK_RUNNING;
    let (_, enq) = activate_task(k, cpu, cpu, t, EnqueueFlags::default());
    let deq = deactivate_task(k, cpu, cpu, t, DequeueFlags { sleep: true, ..Default::default() });
    (enq, deq)
}

#[test]
fn enqueue_and_dequeue_walk_one_entity_per_level_above_a_user_task() {
    let (enq0, deq0) = enqueue_dequeue(&mut kernel(0, 1), false);
    let mut k = kernel(3, 1);
    let (enq3, deq3) = enqueue_dequeue(&mut k, false);
    assert!(k.costs.enqueue_level > 0 && k.costs.dequeue_level > 0);
    assert_eq!(enq3 - enq0, 3 * k.costs.enqueue_level);
    assert_eq!(deq3 - deq0, 3 * k.costs.dequeue_level);
}

#[test]
fn kthreads_stay_in_the_root_group() {
    let (enq0, deq0) = enqueue_dequeue(&mut kernel(0, 1), true);
    let mut k = kernel(3, 1);
    assert_eq!(enqueue_dequeue(&mut k, true), (enq0, deq0));
    let t = kthread_create(&mut k, "ipistorm/1".into(), 0, 120, Some(1), 0);
    let u = copy_process(&mut k, "user".into(), 0, 120, None, 0);
    assert_eq!((k.ents[t as usize].depth, k.ents[u as usize].depth), (0, 3));
}

#[test]
fn the_blocked_load_update_walks_every_leaf_cfs_rq() {
    let one = sched_balance_update_blocked_averages(&mut kernel(0, 1), 2, 2);
    let mut k = kernel(0, 5);
    assert!(k.costs.blocked_leaf > 0);
    assert_eq!(sched_balance_update_blocked_averages(&mut k, 2, 2) - one, 4 * k.costs.blocked_leaf);
}

#[test]
fn the_knobs_are_range_checked() {
    let mut k = kernel(0, 1);
    assert!(k.cfg.set_task_groups(17, 1).unwrap_err().contains("expected 0..=16"));
    assert!(k.cfg.set_task_groups(0, 0).unwrap_err().contains("expected 1..=10000"));
    assert_eq!((k.cfg.cgroup_depth, k.cfg.nr_leaf_cfs_rqs), (0, 1));
}
