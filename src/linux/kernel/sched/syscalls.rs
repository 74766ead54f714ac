//! Models the scheduler syscalls of `kernel/sched/syscalls.c` @ v6.10 that user workloads
//! (rt-app) make: `sched_setaffinity()` with the migration it may need, `sched_yield()`, and a
//! task's change of its own policy (`__sched_setscheduler()`, `set_user_nice()`).
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

/// Models `__sched_setscheduler()` — kernel/sched/syscalls.c @ v6.10 (with
/// `__setscheduler_params()`, `__setscheduler_prio()` and `check_class_changed()` of
/// kernel/sched/core.c), for the task `p` running on `cpu` changing its own policy
/// (`sched_setscheduler(0, ..)`, glibc's `pthread_setschedparam(pthread_self(), ..)`): under
/// its rq lock, take it off its class (`dequeue_task()` and `put_prev_task()`, so its fair
/// entity leaves `cfs_rq->curr`), set the policy and priority (`prio` as the kernel's `p->prio`:
/// `rt::fifo_prio()` for FIFO/RR, `120 + nice` for SCHED_NORMAL; a fair target also gets that
/// nice's weight, `set_load_weight()`), put it back on its new class (`enqueue_task()` with
/// ENQUEUE_HEAD if its priority dropped, `set_next_task()`), then the class hooks
/// ([`switched_from`], [`switched_to`], or `prio_changed` within a class) and the rq's balance
/// callbacks after the unlock. The task stays counted in `nr_running` throughout (the kernel's
/// DEQUEUE_SAVE/ENQUEUE_RESTORE pair), and the RT class's bookkeeping (its priority queue,
/// cpupri, the pushable list and the overload mask) follows its own enqueue and
/// `set_next_task_rt()`. The permission and RLIMIT_RTPRIO checks always pass (root), and a
/// call that changes nothing returns at once, as the kernel's does. Only a task changing
/// itself is modelled. The syscall entry/exit is the caller's; returns the cost of the lock
/// and the runqueue lines written.
pub fn __sched_setscheduler(k: &mut Kernel, cpu: CpuId, p: TaskId, policy: u32, prio: i32) -> Time {
    use super::class::SchedClass;
    use super::fair_class::{sched_prio_to_weight, DequeueFlags, EnqueueFlags};
    use super::rt::MAX_RT_PRIO;
    assert_eq!(k.curr(cpu), p, "__sched_setscheduler(): the model has a task change only its own policy");
    let (old_policy, oldprio) = (k.tasks[p as usize].policy, k.tasks[p as usize].prio);
    let fair_target = prio >= MAX_RT_PRIO;
    let weight = sched_prio_to_weight(prio - 120);
    // task_rq_lock(), update_rq_clock().
    let mut c = k.line_write(cpu, k.cpus[cpu as usize].rq.lock_line);
    k.cpus[cpu as usize].rq.clock = k.now;
    if old_policy == policy && oldprio == prio && (!fair_target || k.ents[p as usize].weight == weight) {
        return c;
    }
    let old_class = SchedClass::of(k, p);
    let queued = k.tasks[p as usize].on_rq;
    if queued {
        old_class.dequeue_task(k, cpu, p, DequeueFlags::default());
        if old_class == SchedClass::Fair {
            c += super::rq_lines::cfs_written(k, cpu, cpu);
        }
    }
    c += old_class.put_prev_task(k, cpu, p);
    // __setscheduler_params(): the policy, and set_load_weight() for a fair task's nice;
    // __setscheduler_prio(): the class follows the priority (SchedClass::of).
    if fair_target {
        k.with_cfs(cpu, |cfs, ents| cfs.reweight_dequeued_entity(ents, p, weight));
    }
    let t = &mut k.tasks[p as usize];
    t.policy = policy;
    t.prio = prio;
    let new_class = SchedClass::of(k, p);
    if queued {
        if new_class == SchedClass::Rt {
            super::rt::enqueue_task_rt(k, cpu, p, oldprio < prio);
        } else {
            new_class.enqueue_task(k, cpu, p, EnqueueFlags::default());
            if new_class == SchedClass::Fair {
                c += super::rq_lines::cfs_written(k, cpu, cpu);
            }
        }
    }
    c += new_class.set_next_task(k, cpu, p);
    super::group_sums::rq_changed(k, cpu);
    crate::linux::check::on_rq_changed(k, cpu);
    // check_class_changed().
    let mut pull = false;
    if old_class != new_class {
        pull = switched_from(k, cpu, p, old_class);
        c += switched_to(k, cpu, p, new_class);
    } else if oldprio != prio && new_class == SchedClass::Rt {
        // prio_changed_rt() for the running task: a lowered priority that no longer leads its
        // rq reschedules (the pull it also queues when the task was the rq's highest is not
        // modelled).
        if prio > oldprio && k.cpus[cpu as usize].rq.rt.highest_prio_curr() < prio {
            c += super::core::resched_curr(k, cpu, cpu, crate::trace::Sym::ReschedCurr);
        }
    } else if oldprio != prio && new_class == SchedClass::Fair && prio > oldprio {
        // prio_changed_fair() for the running task: a lower priority reschedules.
        c += super::core::resched_curr(k, cpu, cpu, crate::trace::Sym::ReschedCurr);
    }
    // balance_callbacks(): the RT push head set_next_task_rt() may have queued, and the pull
    // switched_from_rt() queues.
    c += super::rt::balance_callbacks(k, cpu);
    if pull {
        c += super::rt::pull_rt_task(k, cpu);
    }
    c
}

/// `class->switched_from(rq, p)` for the running `p` leaving `class`: `switched_from_fair()`
/// -> `detach_task_cfs_rq()` takes its PELT average off the cfs_rq (it was updated by the
/// dequeue at this instant); `switched_from_rt()` asks for a pull when the rq has no RT task
/// left (`rt_queue_pull_task()`; returned as true, the caller runs it after the unlock).
fn switched_from(k: &mut Kernel, cpu: CpuId, p: TaskId, class: super::class::SchedClass) -> bool {
    use super::class::SchedClass;
    match class {
        SchedClass::Fair => {
            k.with_cfs(cpu, |cfs, ents| {
                let se = &mut ents[p as usize];
                if se.avg_attached {
                    super::fair_class::detach_entity_load_avg(&mut cfs.avg, &mut se.avg, se.weight);
                    se.avg_attached = false;
                }
            });
            false
        }
        SchedClass::Rt => k.tasks[p as usize].on_rq && k.cpus[cpu as usize].rq.rt.nr_running() == 0,
        SchedClass::Stop | SchedClass::Idle => false,
    }
}

/// `class->switched_to(rq, p)` for the running `p` joining `class`: `switched_to_rt()` does
/// nothing for the current task beyond its RT PELT (not modelled); `switched_to_fair()` ->
/// `attach_task_cfs_rq()` (the fair enqueue attached its average already) and, the task being
/// current and queued, `resched_curr()`. Returns the cost.
fn switched_to(k: &mut Kernel, cpu: CpuId, p: TaskId, class: super::class::SchedClass) -> Time {
    use super::class::SchedClass;
    match class {
        SchedClass::Fair if k.tasks[p as usize].on_rq => {
            super::core::resched_curr(k, cpu, cpu, crate::trace::Sym::ReschedCurr)
        }
        _ => 0,
    }
}

/// Models `set_user_nice()` — kernel/sched/syscalls.c @ v6.10, from `setpriority(PRIO_PROCESS,
/// 0, nice)` by the fair task `p` running on `cpu` (rt-app's SCHED_OTHER threads with a
/// priority): [`__sched_setscheduler`] to SCHED_NORMAL at `120 + nice`, the same dequeue,
/// `set_load_weight()` (`reweight_entity()`), enqueue and `prio_changed_fair()` sequence.
/// Returns the cost (the syscall entry/exit is the caller's).
/// An RT task keeps its priority and class: only the weight it would have as a fair task
/// changes (`static_prio`; the model keeps it as the entity's weight).
pub fn set_user_nice(k: &mut Kernel, cpu: CpuId, p: TaskId, nice: i32) -> Time {
    let nice = nice.clamp(-20, 19);
    if super::rt::rt_task(k, p) {
        let w = super::fair_class::sched_prio_to_weight(nice);
        k.with_cfs(cpu, |cfs, ents| cfs.reweight_dequeued_entity(ents, p, w));
        return k.line_write(cpu, k.cpus[cpu as usize].rq.lock_line);
    }
    let policy = k.tasks[p as usize].policy;
    __sched_setscheduler(k, cpu, p, policy, 120 + nice)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::linux::kernel::sched::class::SchedClass;
    use crate::linux::kernel::sched::core::activate_task;
    use crate::linux::kernel::sched::fair_class::{sched_prio_to_weight, EnqueueFlags};
    use crate::linux::kernel::sched::rt::fifo_prio;
    use crate::linux::kernel::sched::{TaskKind, SCHED_FIFO, SCHED_NORMAL, TIF_NEED_RESCHED};

    /// Two new fair tasks queued on CPU 0, the first one running there.
    fn running_fair_pair() -> (Kernel, TaskId, TaskId) {
        let mut k = Kernel::for_test("smp-4");
        k.now = crate::sim::NSEC_PER_SEC;
        let new = EnqueueFlags { initial: true, ..Default::default() };
        let a = k.new_task(TaskKind::Workload, "a".into(), SCHED_NORMAL, 120, None);
        let b = k.new_task(TaskKind::Workload, "b".into(), SCHED_NORMAL, 120, None);
        activate_task(&mut k, 0, 0, a, new);
        activate_task(&mut k, 0, 0, b, new);
        k.cpus[0].rq.curr = a;
        SchedClass::Fair.set_next_task(&mut k, 0, a);
        k.now += 1_000_000;
        (k, a, b)
    }

    /// The runqueue's counts: (nr_running, fair h_nr_running, cfs nr_running, rt_nr_running,
    /// cpupri level of CPU 0, cfs curr).
    fn counts(k: &Kernel) -> (u32, u32, u32, u32, i32, Option<u32>) {
        let rq = &k.cpus[0].rq;
        (
            rq.nr_running,
            rq.cfs_h_nr_running,
            rq.cfs.nr_running,
            rq.rt.nr_running(),
            k.rd.rt.cpupri.level(0),
            rq.cfs.curr,
        )
    }

    #[test]
    fn a_running_fair_task_that_sets_fifo_moves_to_the_rt_class_and_back() {
        let (mut k, a, b) = running_fair_pair();
        assert_eq!(counts(&k), (2, 2, 2, 0, 0, Some(a)));
        let load_before = k.cpus[0].rq.cfs.load_weight;
        assert!(k.ents[a as usize].avg_attached);
        __sched_setscheduler(&mut k, 0, a, SCHED_FIFO, fifo_prio(50));
        assert_eq!(SchedClass::of(&k, a), SchedClass::Rt);
        assert_eq!(k.tasks[a as usize].policy, SCHED_FIFO);
        // Still counted once in nr_running, now on the RT queue; the fair queue keeps b alone,
        // with no curr; CPU 0's cpupri level is the task's (FIFO 50).
        assert_eq!(counts(&k), (2, 1, 1, 1, 50, None));
        assert!(k.tasks[a as usize].on_rq && !k.ents[a as usize].on_rq);
        assert_eq!(k.cpus[0].rq.cfs.load_weight, load_before - 1024);
        // switched_from_fair(): its PELT average left the cfs_rq.
        assert!(!k.ents[a as usize].avg_attached);
        // The running task is not pushable: no overload.
        assert!(!k.cpus[0].rq.rt.overloaded && k.rd.rt.rto_count == 0);
        assert_eq!(super::super::rt::pick_task_rt(&k, 0), Some(a));
        // The running FIFO task is not preempted by the change.
        assert_eq!(k.tasks[a as usize].ti_flags & TIF_NEED_RESCHED, 0);
        assert!(k.tasks[b as usize].on_rq);

        // Back to SCHED_NORMAL: fair again, current on the fair queue, and rescheduled
        // (switched_to_fair() of the running task).
        __sched_setscheduler(&mut k, 0, a, SCHED_NORMAL, 120);
        assert_eq!(SchedClass::of(&k, a), SchedClass::Fair);
        assert_eq!(counts(&k), (2, 2, 2, 0, 0, Some(a)));
        assert!(k.ents[a as usize].avg_attached);
        assert_ne!(k.tasks[a as usize].ti_flags & TIF_NEED_RESCHED, 0);
    }

    #[test]
    fn an_rt_task_changing_its_priority_moves_its_cpus_cpupri_level() {
        let (mut k, a, b) = running_fair_pair();
        __sched_setscheduler(&mut k, 0, a, SCHED_FIFO, fifo_prio(50));
        assert!(!k.cpus[0].rq.rt.overloaded);
        __sched_setscheduler(&mut k, 0, a, SCHED_FIFO, fifo_prio(10));
        assert_eq!(counts(&k), (2, 1, 1, 1, 10, None));
        // prio_changed_rt(): still the rq's highest, so no resched.
        assert_eq!(k.tasks[a as usize].ti_flags & TIF_NEED_RESCHED, 0);
        assert!(k.tasks[b as usize].on_rq);
    }

    #[test]
    fn setpriority_reweights_the_running_fair_task() {
        let (mut k, a, _) = running_fair_pair();
        set_user_nice(&mut k, 0, a, 5);
        assert_eq!(k.ents[a as usize].weight, sched_prio_to_weight(5));
        assert_eq!(k.tasks[a as usize].prio, 125);
        assert_eq!(k.cpus[0].rq.cfs.load_weight, 1024 + sched_prio_to_weight(5));
        assert_eq!(counts(&k), (2, 2, 2, 0, 0, Some(a)));
        // A lower priority for the running task reschedules (prio_changed_fair()).
        assert_ne!(k.tasks[a as usize].ti_flags & TIF_NEED_RESCHED, 0);
        // The same call again changes nothing.
        let w = k.cpus[0].rq.cfs.load_weight;
        set_user_nice(&mut k, 0, a, 5);
        assert_eq!(k.cpus[0].rq.cfs.load_weight, w);
    }
}
