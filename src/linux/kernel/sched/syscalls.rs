//! Models the scheduler syscalls of `kernel/sched/syscalls.c` @ v6.10 that user workloads
//! (rt-app) make: `sched_setaffinity()` with the migration it may need, and `sched_yield()`.
//! The syscall entry/exit cost is the caller's (`PathCosts::syscall`); the rq lock these take
//! is treated as uncontended inside one step, as `sched_tick()` does.

use crate::hw::cpumask::CpuMask;
use crate::linux::kernel::stop_machine::{stop_one_cpu_nowait, StopWork};
use crate::linux::{CpuId, Kernel, TaskId};
use crate::sim::Time;

/// Models `sched_setaffinity()` -> `__set_cpus_allowed_ptr()` -> `affine_move_task()` —
/// kernel/sched/syscalls.c, kernel/sched/core.c @ v6.10, run by `cpu` for task `p`: install
/// the new `cpus_mask`; a task now on a CPU it may not use is moved: a running one by the
/// stopper of its CPU (`stop_one_cpu()` -> `migration_cpu_stop()`, which preempts it), a
/// queued one at once (`move_queued_task()`); a sleeping one is placed by its next wakeup.
/// The destination is the first allowed CPU (the kernel's `cpumask_any_and_distribute()`
/// spreads successive calls). `mask` must not be empty. Returns the cost.
pub fn sched_setaffinity(k: &mut Kernel, cpu: CpuId, p: TaskId, mask: &CpuMask) -> Time {
    let nr = k.m.topo.nr_cpus;
    assert!(!mask.is_empty(), "sched_setaffinity() with an empty mask (the syscall returns -EINVAL before this)");
    let t = &mut k.tasks[p as usize];
    if mask.weight() == nr {
        t.cpus_mask = None;
        t.mask_weight = 0;
    } else {
        t.mask_weight = mask.weight();
        t.cpus_mask = Some(mask.clone());
    }
    let (tcpu, on_rq) = (t.cpu, t.on_rq);
    if k.tasks[p as usize].cpu_allowed(tcpu) {
        return 0;
    }
    if on_rq && k.ents[p as usize].sched_delayed {
        // Asleep but still queued (DELAY_DEQUEUE): finish its dequeue, and its next wakeup
        // places it. Simplification: the kernel moves the delayed task as it is.
        super::fair::finish_delayed_dequeue(k, tcpu, p);
        return 0;
    }
    let Some(dest) = mask.first() else { return 0 };
    if k.cpus[tcpu as usize].rq.curr == p {
        return stop_one_cpu_nowait(k, cpu, tcpu, StopWork::MigrationCpuStop { p, dest }).unwrap_or(0);
    }
    if on_rq {
        return move_queued(k, cpu, tcpu, dest, p);
    }
    0
}

/// `move_queued_task()` under both rq locks, then `wakeup_preempt()` on the destination.
fn move_queued(k: &mut Kernel, cpu: CpuId, src: CpuId, dst: CpuId, p: TaskId) -> Time {
    use super::core::{move_queued_task_locked, resched_curr, wakeup_preempt};
    let mut c = k.line_write(cpu, k.cpus[dst as usize].rq.lock_line);
    k.cpus[dst as usize].rq.clock = k.now;
    let (r, cm) = move_queued_task_locked(k, cpu, src, dst, p);
    c += cm + k.costs.ttwu_activate;
    if wakeup_preempt(k, dst, p, r) {
        c += resched_curr(k, cpu, dst, crate::trace::Sym::ReschedCurr);
    }
    c
}

/// Models `migration_cpu_stop()` — kernel/sched/core.c @ v6.10, run by the stopper of `cpu`:
/// if `p` is still queued here (the stopper preempted it), move it to `dest`. Returns the cost.
pub fn migration_cpu_stop(k: &mut Kernel, cpu: CpuId, p: TaskId, dest: CpuId) -> Time {
    let t = &k.tasks[p as usize];
    if t.cpu != cpu || !t.on_rq || t.cpu_allowed(cpu) {
        return k.costs.balance_rq;
    }
    if k.ents[p as usize].sched_delayed {
        // It went to sleep meanwhile and is still queued (DELAY_DEQUEUE): as above.
        super::fair::finish_delayed_dequeue(k, cpu, p);
        return k.costs.balance_rq;
    }
    k.costs.balance_rq + move_queued(k, cpu, cpu, dest, p)
}

/// Models `do_sched_yield()` — kernel/sched/syscalls.c @ v6.10, up to its `schedule()`: under
/// the rq lock, the current task's class yields (`yield_task_rt()` requeues it behind its
/// peers, `yield_task_fair()` pushes its deadline). The caller then calls `schedule()`.
pub fn do_sched_yield(k: &mut Kernel, cpu: CpuId) {
    let curr = k.curr(cpu);
    k.cpus[cpu as usize].rq.clock = k.now;
    super::class::SchedClass::of(k, curr).yield_task(k, cpu);
}
