//! Models `kernel/sched/core.c` @ v6.10: NEED_RESCHED and polling primitives, `__schedule()`
//! and its callers, the wakeup path, and `sched_tick()`. Class-specific work goes through the
//! class table (`class.rs`: stop, RT, fair, idle; no deadline class).

use super::{
    idle_cpu, need_resched, Task, TASK_DEAD, TASK_RUNNING, TASK_WAKING, TIF_NEED_RESCHED, TIF_NOTIFY_IPI,
    TIF_POLLING_NRFLAG, WF_FORK, WF_MIGRATED, WF_ON_CPU, WF_TTWU,
};
use crate::linux::engine::{local_irq_disable, local_irq_enable, notify, send_ipi, Frame, Next, WaitOn};
use crate::linux::kernel::sched::class::{SchedClass, SCHED_CLASSES};
use crate::linux::kernel::sched::fair::{IdleBalance, NewidleBalance};
use crate::linux::kernel::sched::fair_class::{DequeueFlags, EnqueueFlags};
use crate::linux::kernel::sched::features::SchedFeat;
use crate::linux::kernel::smp::__smp_call_single_queue;
use crate::linux::{CpuId, Kernel, TaskId};
use crate::sim::Time;
use crate::trace::{Event, Sym, Vector};

// ---------------------------------------------------------------------------------------
// Locks
// ---------------------------------------------------------------------------------------

/// Models `raw_spin_rq_lock()` (a queued spinlock) — kernel/sched/core.c @ v6.10. Returns
/// the acquisition cost, or `None` if `cpu` was queued behind the owner: the caller then
/// waits with [`WaitOn::Lock`] and re-runs its step, which finds the lock handed over.
pub fn raw_spin_rq_lock(k: &mut Kernel, cpu: CpuId, rq_cpu: CpuId) -> Option<Time> {
    let rq = &mut k.cpus[rq_cpu as usize].rq;
    match rq.lock_owner {
        Some(o) if o == cpu => {}
        None => rq.lock_owner = Some(cpu),
        Some(_) => {
            if !rq.lock_waiters.contains(&cpu) {
                rq.lock_waiters.push(cpu);
            }
            crate::linux::check::on_rq_lock_wait(k, cpu, rq_cpu);
            return None;
        }
    }
    crate::linux::check::on_rq_lock(k, cpu, rq_cpu);
    k.cpus[cpu as usize].preempt_count += 1;
    let line = k.cpus[rq_cpu as usize].rq.lock_line;
    Some(k.line_write(cpu, line))
}

/// Models `raw_spin_rq_unlock()`: hands the lock to the first queued waiter. Returns the cost.
pub fn raw_spin_rq_unlock(k: &mut Kernel, cpu: CpuId, rq_cpu: CpuId) -> Time {
    let rq = &mut k.cpus[rq_cpu as usize].rq;
    assert_eq!(
        rq.lock_owner,
        Some(cpu),
        "raw_spin_rq_unlock() by CPU {cpu} of CPU {rq_cpu}'s rq lock, which it does not hold"
    );
    crate::linux::check::on_rq_unlock(k, cpu, rq_cpu);
    k.cpus[cpu as usize].preempt_count -= 1;
    let rq = &mut k.cpus[rq_cpu as usize].rq;
    if rq.lock_waiters.is_empty() {
        rq.lock_owner = None;
        return 0;
    }
    let w = rq.lock_waiters.remove(0);
    rq.lock_owner = Some(w);
    let lat = k.m.line_cost(cpu, w);
    let t = k.cpus[cpu as usize].rng.range(lat.lo_ns, lat.hi_ns);
    notify(k, w, t);
    0
}

// ---------------------------------------------------------------------------------------
// NEED_RESCHED and polling
// ---------------------------------------------------------------------------------------

/// Models `set_nr_and_not_polling()` — kernel/sched/core.c @ v6.10: one atomic fetch-or of
/// NEED_RESCHED. Returns (the caller must send an IPI, cost).
pub fn set_nr_and_not_polling(k: &mut Kernel, cpu: CpuId, p: TaskId) -> (bool, Time) {
    let t = &mut k.tasks[p as usize];
    let old = t.ti_flags;
    t.ti_flags |= TIF_NEED_RESCHED;
    let line = t.ti_line;
    let c = k.line_write(cpu, line);
    (old & TIF_POLLING_NRFLAG == 0, c)
}

/// Models `set_nr_if_polling()` — kernel/sched/core.c @ v6.10: if `p` polls, set
/// NEED_RESCHED with a cmpxchg and return true (no IPI needed); otherwise return false. A
/// concurrent clear of POLL makes the cmpxchg fail and the answer false, so no wakeup is lost.
pub fn set_nr_if_polling(k: &mut Kernel, cpu: CpuId, p: TaskId) -> (bool, Time) {
    let t = &k.tasks[p as usize];
    let (flags, line) = (t.ti_flags, t.ti_line);
    if flags & TIF_POLLING_NRFLAG == 0 {
        return (false, k.line_read(cpu, line));
    }
    if flags & TIF_NEED_RESCHED != 0 {
        return (true, k.line_read(cpu, line));
    }
    k.tasks[p as usize].ti_flags |= TIF_NEED_RESCHED;
    (true, k.line_write(cpu, line))
}

/// Models `notify_ipi_if_polling()` of the TIF_NOTIFY_IPI RFC: like [`set_nr_if_polling`] but
/// sets TIF_NOTIFY_IPI, and returns true without writing if NEED_RESCHED or NOTIFY_IPI is set.
pub fn notify_ipi_if_polling(k: &mut Kernel, cpu: CpuId, p: TaskId) -> (bool, Time) {
    let t = &k.tasks[p as usize];
    let (flags, line) = (t.ti_flags, t.ti_line);
    if flags & TIF_POLLING_NRFLAG == 0 {
        return (false, k.line_read(cpu, line));
    }
    if flags & (TIF_NEED_RESCHED | TIF_NOTIFY_IPI) != 0 {
        return (true, k.line_read(cpu, line));
    }
    k.tasks[p as usize].ti_flags |= TIF_NOTIFY_IPI;
    (true, k.line_write(cpu, line))
}

/// Models `call_function_single_prep_ipi()` — kernel/sched/core.c @ v6.10 (with the RFC,
/// `notify_ipi_if_polling()` instead of `set_nr_if_polling()`). True: no IPI needed.
pub fn call_function_single_prep_ipi(k: &mut Kernel, cpu: CpuId, target: CpuId) -> (bool, Time) {
    let idle = k.cpus[target as usize].rq.idle;
    if k.cfg.tif_notify_ipi() {
        notify_ipi_if_polling(k, cpu, idle)
    } else {
        set_nr_if_polling(k, cpu, idle)
    }
}

/// Models `resched_curr()` — kernel/sched/core.c @ v6.10. Requires `rq_cpu`'s lock. Locally it
/// sets NEED_RESCHED and PREEMPT_NEED_RESCHED; remotely it sets NEED_RESCHED and sends a
/// RESCHEDULE IPI unless the target polls.
pub fn resched_curr(k: &mut Kernel, cpu: CpuId, rq_cpu: CpuId, callsite: Sym) -> Time {
    let curr = k.cpus[rq_cpu as usize].rq.curr;
    if k.tasks[curr as usize].ti_flags & TIF_NEED_RESCHED != 0 {
        return 0;
    }
    if rq_cpu == cpu {
        let t = &mut k.tasks[curr as usize];
        t.ti_flags |= TIF_NEED_RESCHED;
        let line = t.ti_line;
        k.cpus[cpu as usize].pnr = true;
        return k.line_write(cpu, line);
    }
    let (ipi, mut c) = set_nr_and_not_polling(k, cpu, curr);
    if ipi {
        k.tp(cpu, Event::IpiSendCpu { cpu: rq_cpu, callsite, callback: Sym::Null });
        k.stats.resched_ipis_sent += 1;
        c += send_ipi(k, cpu, rq_cpu, Vector::Reschedule);
    } else {
        crate::linux::check::on_ipi_elided(k, cpu, rq_cpu);
        k.tp(cpu, Event::SchedWakeIdleWithoutIpi { cpu: rq_cpu });
        k.stats.ipis_avoided += 1;
    }
    c
}

// ---------------------------------------------------------------------------------------
// __schedule() and its callers
// ---------------------------------------------------------------------------------------

/// `enum sched_mode` (v6.10 plus SM_IDLE from 3dcac251b066).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SchedMode {
    /// SM_IDLE (-1): `schedule_idle()` with 3dcac251b066.
    Idle,
    /// SM_NONE (0).
    None,
    /// SM_PREEMPT (1).
    Preempt,
    /// SM_RTLOCK_WAIT (2).
    RtlockWait,
}

/// Models `cond_resched()` -> `__cond_resched()` — kernel/sched/core.c @ v6.10: under
/// PREEMPT_NONE and PREEMPT_VOLUNTARY, reschedule here if NEED_RESCHED is set; under
/// PREEMPT_FULL (and PREEMPT_RT) it is a no-op, since preemption happens wherever it is
/// enabled. Returns the `preempt_schedule_common()` to call, if any.
pub fn cond_resched(k: &Kernel, cpu: CpuId) -> Option<Frame> {
    if full_preemption(k) || !need_resched(k, cpu) {
        return None;
    }
    Some(Frame::ScheduleCaller(ScheduleCaller::preempt_schedule_common()))
}

/// The kernel preempts kernel code wherever preemption is enabled (CONFIG_PREEMPT, a
/// PREEMPT_DYNAMIC boot with `preempt=full`, or PREEMPT_RT).
#[inline]
pub fn full_preemption(k: &Kernel) -> bool {
    k.cfg.preempt_rt || k.cfg.preempt.model == crate::linux::config::PreemptModel::Full
}

/// Models `preempt_enable()` — include/linux/preempt.h @ v6.10: drop one preemption level;
/// under full preemption, reaching zero with NEED_RESCHED set calls `preempt_schedule()`.
/// Returns that call, if any.
pub fn preempt_enable(k: &mut Kernel, cpu: CpuId) -> Option<Frame> {
    let c = &mut k.cpus[cpu as usize];
    c.preempt_count -= 1;
    if full_preemption(k) && k.cpus[cpu as usize].preempt_count == 0 && need_resched(k, cpu) {
        return Some(Frame::ScheduleCaller(ScheduleCaller::preempt_schedule_common()));
    }
    None
}

/// Which caller of `__schedule()`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Caller {
    /// `schedule()`.
    Schedule,
    /// `schedule_idle()`.
    ScheduleIdle,
    /// `preempt_schedule_common()` (from `cond_resched()`).
    PreemptScheduleCommon,
}

/// `schedule()` (and the other callers) resume points.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScheduleCallerAt {
    /// `preempt_disable()` and call `__schedule()`.
    Schedule,
    /// Back from `__schedule()`: `preempt_enable()`, loop while NEED_RESCHED.
    AfterSchedule,
}

#[derive(Debug, Clone, Copy)]
pub struct ScheduleCaller {
    pub caller: Caller,
    pub at: ScheduleCallerAt,
}

impl ScheduleCaller {
    pub fn schedule() -> Self {
        ScheduleCaller { caller: Caller::Schedule, at: ScheduleCallerAt::Schedule }
    }
    pub fn schedule_idle() -> Self {
        ScheduleCaller { caller: Caller::ScheduleIdle, at: ScheduleCallerAt::Schedule }
    }
    pub fn preempt_schedule_common() -> Self {
        ScheduleCaller { caller: Caller::PreemptScheduleCommon, at: ScheduleCallerAt::Schedule }
    }
    /// The frame of a task that is asleep inside `schedule()` (it resumes after the call).
    pub fn asleep_in_schedule() -> Self {
        ScheduleCaller { caller: Caller::Schedule, at: ScheduleCallerAt::AfterSchedule }
    }
}

/// Models `schedule()`, `schedule_idle()` and `preempt_schedule_common()` —
/// kernel/sched/core.c @ v6.10: loop `__schedule()` while NEED_RESCHED is set.
pub fn schedule_caller(k: &mut Kernel, cpu: CpuId, s: &mut ScheduleCaller) -> Next {
    let c = &mut k.cpus[cpu as usize];
    match s.at {
        ScheduleCallerAt::Schedule => {
            let mode = match s.caller {
                Caller::Schedule => SchedMode::None,
                Caller::ScheduleIdle => {
                    if k.cfg.sm_idle() {
                        SchedMode::Idle
                    } else {
                        SchedMode::None
                    }
                }
                Caller::PreemptScheduleCommon => SchedMode::Preempt,
            };
            if s.caller != Caller::ScheduleIdle {
                // preempt_disable() (the idle task runs with preemption disabled already).
                c.preempt_count += 1;
            }
            s.at = ScheduleCallerAt::AfterSchedule;
            Next::Call(0, Frame::Schedule(Schedule::new(mode)))
        }
        ScheduleCallerAt::AfterSchedule => {
            if s.caller != Caller::ScheduleIdle {
                c.preempt_count -= 1;
            }
            if need_resched(k, cpu) {
                s.at = ScheduleCallerAt::Schedule;
                return Next::Cont(0);
            }
            Next::Ret(0)
        }
    }
}

/// `__schedule()` resume points.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScheduleAt {
    Enter,
    Pick,
    AfterNewidle,
    /// Before 38033c37faab: `idle_balance()` from `__schedule()`, before the pick.
    IdleBalance,
    Picked,
    /// `finish_task_switch()` on the next task's stack.
    Finish,
    /// prev == next: callbacks and unlock.
    Unlock,
    /// Back from the post-schedule hook.
    AfterPostSchedule,
}

#[derive(Debug, Clone, Copy)]
pub struct Schedule {
    pub mode: SchedMode,
    pub at: ScheduleAt,
    pub prev: TaskId,
    pub next: TaskId,
}

impl Schedule {
    pub fn new(mode: SchedMode) -> Self {
        Schedule { mode, at: ScheduleAt::Enter, prev: 0, next: 0 }
    }
    /// A task that was switched out resumes here.
    pub fn switched_out() -> Self {
        Schedule { mode: SchedMode::None, at: ScheduleAt::Finish, prev: 0, next: 0 }
    }
}

/// Models `activate_task()` -> `enqueue_task()` — kernel/sched/core.c @ v6.10: the task's
/// class queues `p` on `rq_cpu`, then `add_nr_running()` (which each class's enqueue ends with
/// in the kernel) sets `rd->overloaded` when the rq reaches two runnable tasks, and `p->on_rq`.
/// The model also sets `task_cpu(p)` here. Performed by `cpu`, which writes the fair
/// runqueue's lines (`rq_lines::cfs_written`). Returns (true if the fair class asked for a
/// resched of the current task, the cost of those writes).
pub fn activate_task(k: &mut Kernel, cpu: CpuId, rq_cpu: CpuId, p: TaskId, flags: EnqueueFlags) -> (bool, Time) {
    crate::linux::check::on_enqueue(k, rq_cpu, p);
    let class = SchedClass::of(k, p);
    k.tasks[p as usize].cpu = rq_cpu;
    let r = class.enqueue_task(k, rq_cpu, p, flags);
    let c = if class == SchedClass::Fair {
        // for_each_sched_entity(): one level per task group above the task.
        let levels = Time::from(k.ents[p as usize].depth);
        super::rq_lines::cfs_written(k, cpu, rq_cpu) + levels * k.costs.enqueue_level
    } else {
        0
    };
    let rq = &mut k.cpus[rq_cpu as usize].rq;
    rq.nr_running += 1;
    if rq.nr_running >= 2 {
        super::set_rd_overloaded(k, true);
    }
    super::group_sums::rq_changed(k, rq_cpu);
    k.tasks[p as usize].on_rq = true;
    crate::linux::check::on_rq_changed(k, rq_cpu);
    (r, c)
}

/// Models `deactivate_task()` -> `dequeue_task()` — kernel/sched/core.c @ v6.10: the task's
/// class dequeues `p` (a running task going to sleep, DEQUEUE_SLEEP, or a queued task leaving
/// for another CPU), then `sub_nr_running()` and `p->on_rq = 0`. With DELAY_DEQUEUE (v6.12,
/// `block_task()`) a fair task the class keeps queued stays `on_rq` and counted, and the walk
/// over its group entities stops at it (`dequeue_entities()`). Performed by `cpu`, which writes
/// the fair runqueue's lines. Returns the cost of those writes and of the walk.
pub fn deactivate_task(k: &mut Kernel, cpu: CpuId, rq_cpu: CpuId, p: TaskId, flags: DequeueFlags) -> Time {
    crate::linux::check::on_dequeue(k, rq_cpu, p);
    let class = SchedClass::of(k, p);
    let dequeued = class.dequeue_task(k, rq_cpu, p, flags);
    let c = if class == SchedClass::Fair { super::rq_lines::cfs_written(k, cpu, rq_cpu) } else { 0 };
    if !dequeued {
        return c;
    }
    let c =
        if class == SchedClass::Fair { c + Time::from(k.ents[p as usize].depth) * k.costs.dequeue_level } else { c };
    k.cpus[rq_cpu as usize].rq.nr_running -= 1;
    super::group_sums::rq_changed(k, rq_cpu);
    k.tasks[p as usize].on_rq = false;
    crate::linux::check::on_rq_changed(k, rq_cpu);
    c
}

/// Models `move_queued_task_locked()` — kernel/sched/sched.h @ v6.10 (with both rq locks held):
/// deactivate `p` on `src`, `set_task_cpu()` (a `sched_migrate_task` record and a migration),
/// activate it on `dst`. Performed by `cpu`. Returns the fair enqueue's resched verdict (the
/// caller decides how `dst`'s current task learns of it: `wakeup_preempt()` when the fair
/// balancer attaches, an unconditional `resched_curr()` when RT pushes) and the cost of the
/// runqueue line writes.
pub fn move_queued_task_locked(k: &mut Kernel, cpu: CpuId, src: CpuId, dst: CpuId, p: TaskId) -> (bool, Time) {
    // The model never moves a delayed (sleeping, still queued) task: the balancer skips them
    // and affinity changes finish their dequeue first.
    debug_assert!(!k.ents[p as usize].sched_delayed, "move_queued_task_locked() of a delayed task");
    let c = deactivate_task(k, cpu, src, p, DequeueFlags { migrating: true, ..Default::default() });
    let (pid, prio) = (k.tasks[p as usize].pid, k.tasks[p as usize].prio);
    k.tp(cpu, Event::SchedMigrateTask { pid, prio, orig_cpu: src, dest_cpu: dst });
    k.stats.cpu_migrations += 1;
    let (r, ca) = activate_task(k, cpu, dst, p, EnqueueFlags { wakeup: false, migrated: true, initial: false });
    (r, c + ca)
}

/// Models `__schedule()` — kernel/sched/core.c @ v6.10, with SM_IDLE (3dcac251b066, v6.12).
///
/// Context: preemption disabled; IRQs are off from entry until the final unlock, including the
/// whole of `pick_next_task()` and a newidle balance. `prev == next` takes the unlock branch
/// with no switch. The pick is [`__pick_next_task`] over the class table (stop, RT, fair,
/// idle; `class.rs`); an empty fair pick runs the newidle balance (the fair class's `idle:`
/// path, or before 38033c37faab `idle_balance()` ahead of the pick), then picks the idle task.
pub fn __schedule(k: &mut Kernel, cpu: CpuId, s: &mut Schedule) -> Next {
    match s.at {
        ScheduleAt::Enter => {
            // schedule_debug(): exactly the caller's preempt_disable() (else "scheduling while
            // atomic"; the re-run of this step after waiting for the lock holds nothing more).
            assert_eq!(k.cpus[cpu as usize].preempt_count, 1, "__schedule() on CPU {cpu}: scheduling while atomic");
            local_irq_disable(k, cpu);
            let Some(lc) = raw_spin_rq_lock(k, cpu, cpu) else {
                return Next::Wait(WaitOn::Lock);
            };
            let rq = &mut k.cpus[cpu as usize].rq;
            rq.clock = k.now;
            let prev = rq.curr;
            s.prev = prev;
            // Only a plain schedule() (SM_NONE) deactivates a task that set a sleep state;
            // preemption, SM_IDLE and (on !RT) SM_RTLOCK_WAIT do not.
            let deactivates = match s.mode {
                SchedMode::None => true,
                SchedMode::RtlockWait => k.cfg.preempt_rt,
                SchedMode::Preempt | SchedMode::Idle => false,
            };
            let mut lc = lc;
            if deactivates && k.tasks[prev as usize].state != TASK_RUNNING && k.tasks[prev as usize].on_rq {
                // try_to_block_task(): a state outside TASK_NORMAL is DEQUEUE_SPECIAL (v6.12).
                let special =
                    k.tasks[prev as usize].state & (super::TASK_INTERRUPTIBLE | super::TASK_UNINTERRUPTIBLE) == 0;
                lc += deactivate_task(k, cpu, cpu, prev, DequeueFlags { sleep: true, special, ..Default::default() });
            }
            if s.mode == SchedMode::Idle && k.cpus[cpu as usize].rq.nr_running == 0 {
                // SM_IDLE fast path: nothing to pick, keep running the idle task.
                s.next = prev;
                s.at = ScheduleAt::Picked;
            } else if !k.cfg.has(crate::linux::patches::Patch::S38033c37faab) {
                s.at = ScheduleAt::IdleBalance;
            } else {
                s.at = ScheduleAt::Pick;
            }
            Next::Cont(k.costs.schedule_enter + lc)
        }
        ScheduleAt::Pick => {
            let c = match __pick_next_task(k, cpu, s.prev) {
                PickNext::Task(next, c) => {
                    s.next = next;
                    s.at = ScheduleAt::Picked;
                    return Next::Cont(k.costs.pick_fair_task + c);
                }
                PickNext::FairEmpty(c) => c,
            };
            if k.cfg.has(crate::linux::patches::Patch::Rostedt2013PostSchedule) {
                // Rostedt 2013: no balance here; pick idle, balance after the switch.
                k.cpus[cpu as usize].rq.post_schedule = true;
                k.cpus[cpu as usize].x.ret = 0;
                s.at = ScheduleAt::AfterNewidle;
                return Next::Cont(k.costs.pick_fair_empty + c);
            }
            if !k.cfg.has(crate::linux::patches::Patch::S38033c37faab) {
                // Before 38033c37faab the fair pick never balances: idle_balance() already ran.
                k.cpus[cpu as usize].x.ret = 0;
                s.at = ScheduleAt::AfterNewidle;
                return Next::Cont(k.costs.pick_fair_empty + c);
            }
            // pick_next_task_fair() found nothing: the `idle:` label runs the newidle balance.
            s.at = ScheduleAt::AfterNewidle;
            Next::Call(k.costs.pick_fair_empty + c, Frame::NewidleBalance(NewidleBalance::default()))
        }
        ScheduleAt::IdleBalance => {
            // v3.8 __schedule(): `if (unlikely(!rq->nr_running)) idle_balance(cpu, rq);` (not
            // with Rostedt's patch, which moves it to the idle class's post_schedule).
            s.at = ScheduleAt::Pick;
            let post = k.cfg.has(crate::linux::patches::Patch::Rostedt2013PostSchedule);
            if k.cpus[cpu as usize].rq.nr_running == 0 && !post {
                return Next::Call(0, Frame::IdleBalance(IdleBalance::default()));
            }
            Next::Cont(0)
        }
        ScheduleAt::AfterNewidle => {
            let pulled = k.cpus[cpu as usize].x.ret;
            if pulled != 0 {
                // Tasks appeared (pulled or enqueued while the lock was dropped), or RETRY_TASK.
                s.at = ScheduleAt::Pick;
                return Next::Cont(0);
            }
            // The fast path's put_prev_task() (the slow path put prev before its class walk),
            // then pick_next_task_idle() -> set_next_task_idle().
            let prev_class = SchedClass::of(k, s.prev);
            let mut c = 0;
            if !prev_class.above(SchedClass::Fair) {
                c += prev_class.put_prev_task(k, cpu, s.prev);
            }
            let next = SchedClass::Idle.pick_task(k, cpu).expect("the idle class always has a task");
            c += SchedClass::Idle.set_next_task(k, cpu, next);
            s.next = next;
            s.at = ScheduleAt::Picked;
            Next::Cont(k.costs.pick_idle + c)
        }
        ScheduleAt::Picked => {
            let (prev, next) = (s.prev, s.next);
            assert_eq!(
                k.cpus[cpu as usize].rq.lock_owner,
                Some(cpu),
                "__schedule(): the rq lock is held from the pick to the switch"
            );
            // clear_tsk_need_resched(prev); clear_preempt_need_resched().
            let line = k.tasks[prev as usize].ti_line;
            k.tasks[prev as usize].ti_flags &= !TIF_NEED_RESCHED;
            let mut c = k.line_write(cpu, line);
            k.cpus[cpu as usize].pnr = false;
            if prev == next {
                s.at = ScheduleAt::Unlock;
                return Next::Cont(c);
            }
            if next != k.cpus[cpu as usize].rq.idle {
                k.cpus[cpu as usize].rq.wakees_placed = 0;
            }
            k.cpus[cpu as usize].rq.nr_switches += 1;
            k.stats.context_switches += 1;
            let idle = k.cpus[cpu as usize].rq.idle;
            if next == idle {
                k.stats.switches_to_idle += 1;
            } else if prev == idle {
                k.stats.switches_from_idle += 1;
            } else if k.tasks[prev as usize].on_rq && !k.ents[prev as usize].sched_delayed {
                k.stats.switches_preempt += 1;
            }
            k.cpus[cpu as usize].rq.curr = next;
            // prepare_task(): a task is on one CPU at a time; ttwu waits for on_cpu to clear
            // before placing a task elsewhere.
            assert!(!k.tasks[next as usize].on_cpu, "prepare_task() on CPU {cpu}: task {next} is still on_cpu");
            k.tasks[next as usize].on_cpu = true;
            let pt = &k.tasks[prev as usize];
            let prev_state = task_state_index(pt, s.mode);
            let (prev_pid, prev_prio) = (pt.pid, pt.prio);
            let nt = &k.tasks[next as usize];
            let (next_pid, next_prio) = (nt.pid, nt.prio);
            // The switch record is taken on prev's side (curr is already next in the rq, but
            // the tracepoint runs in prev's context).
            k.cpus[cpu as usize].rq.curr = prev;
            k.tp(cpu, Event::SchedSwitch { prev_pid, prev_prio, prev_state, next_pid, next_prio });
            k.cpus[cpu as usize].rq.curr = next;
            super::group_sums::rq_changed(k, cpu);
            // rq->curr = next and ++rq->nr_switches: their lines.
            c += super::rq_lines::switched(k, cpu);
            // context_switch(): save prev's stack, switch to next's.
            let now = k.now;
            k.tasks[prev as usize].sum_exec_runtime += now - k.tasks[prev as usize].exec_start;
            k.tasks[next as usize].exec_start = now;
            if let Some(w) = k.tasks[next as usize].woken_at.take() {
                let _ = k.stats.wakeup_latency.record((now - w).max(1));
                k.tasks[next as usize].wake_to_run_ns = now - w;
            }
            // This frame, the running one (steps run in place, in the CPU's slot of
            // `engine::TopFrames`), resumes at Finish: the executor puts it on top of prev's
            // saved frames, and takes next's top frame out of them, when this step returns.
            s.at = ScheduleAt::Finish;
            let c_ = &mut k.cpus[cpu as usize];
            let saved = std::mem::take(&mut c_.x.stack);
            let saved_irq_phase = c_.x.irq_phase;
            c_.switch_prev = prev;
            k.tasks[prev as usize].saved = saved;
            k.tasks[prev as usize].saved_irq_phase = saved_irq_phase;
            let restored = std::mem::take(&mut k.tasks[next as usize].saved);
            assert!(!restored.is_empty(), "context_switch() to task {next}, which has no saved stack");
            let x = &mut k.cpus[cpu as usize].x;
            x.stack = restored;
            x.irq_phase = k.tasks[next as usize].saved_irq_phase;
            c += crate::linux::arch::x86::mm::switch_mm_irqs_off(k, cpu, next);
            c += k.costs.context_switch;
            crate::linux::check::on_switch(k, cpu, prev, next);
            Next::Switched(c)
        }
        ScheduleAt::Finish => {
            let c = finish_task_switch(k, cpu);
            post_schedule(k, cpu, s, k.costs.schedule_exit + c)
        }
        ScheduleAt::Unlock => {
            // __balance_callbacks(); raw_spin_rq_unlock_irq().
            let c = super::rt::balance_callbacks(k, cpu) + raw_spin_rq_unlock(k, cpu, cpu);
            local_irq_enable(k, cpu);
            post_schedule(k, cpu, s, k.costs.schedule_exit + c)
        }
        ScheduleAt::AfterPostSchedule => Next::Ret(0),
    }
}

/// What [`__pick_next_task`] found.
enum PickNext {
    /// The next task (already its class's running task), and the cost of the pick's balance.
    Task(TaskId, Time),
    /// No stop, RT or fair task: the fair class's `idle:` path (newidle balance, then the idle
    /// class) follows. The cost of the pick's balance.
    FairEmpty(Time),
}

/// Models `__pick_next_task()` — kernel/sched/core.c @ v6.10, up to the idle class. Fast path:
/// `prev` is fair or idle and every runnable task is fair (`rq->nr_running ==
/// rq->cfs.h_nr_running`), so `pick_next_task_fair()`. Otherwise `put_prev_task_balance()`
/// (`prev`'s class balances, then `put_prev_task()`) and the class walk in priority order
/// (`for_each_class()`), stopping at the fair class, whose empty pick the caller turns into
/// the newidle balance and the idle task, as the fast path does.
///
/// Context: `__schedule()` with the rq lock held and IRQs off.
fn __pick_next_task(k: &mut Kernel, cpu: CpuId, prev: TaskId) -> PickNext {
    let prev_class = SchedClass::of(k, prev);
    let rq = &k.cpus[cpu as usize].rq;
    // The fair runqueue has a curr only while a fair task runs (set_next_task_fair() and
    // put_prev_task_fair() pair up): what lets the other classes' put_prev_task() skip it.
    assert!(
        prev_class == SchedClass::Fair || rq.cfs.curr.is_none(),
        "__pick_next_task(): cfs_rq->curr set under a non-fair prev"
    );
    let mut c = 0;
    if prev_class.above(SchedClass::Fair) || rq.nr_running != rq.cfs_h_nr_running {
        // restart: put_prev_task_balance().
        c += prev_class.balance(k, cpu, prev);
        c += prev_class.put_prev_task(k, cpu, prev);
        for class in SCHED_CLASSES {
            if class == SchedClass::Fair {
                break;
            }
            if let Some(next) = class.pick_task(k, cpu) {
                c += class.set_next_task(k, cpu, next);
                return PickNext::Task(next, c);
            }
        }
    }
    // pick_next_task_fair().
    match SchedClass::Fair.pick_task(k, cpu) {
        Some(next) => {
            c += SchedClass::Fair.set_next_task(k, cpu, next);
            PickNext::Task(next, c)
        }
        None => PickNext::FairEmpty(c),
    }
}

/// The 2013 `post_schedule()` hook (today's balance callbacks run at the same point): with
/// Rostedt's patch, the idle class's `post_schedule_idle()` runs the newidle balance here.
fn post_schedule(k: &mut Kernel, cpu: CpuId, s: &mut Schedule, cost: Time) -> Next {
    if !std::mem::take(&mut k.cpus[cpu as usize].rq.post_schedule) {
        return Next::Ret(cost);
    }
    s.at = ScheduleAt::AfterPostSchedule;
    Next::Call(cost, Frame::PostScheduleIdle(PostScheduleIdle::default()))
}

/// `post_schedule_idle()` resume points.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum PostScheduleIdleAt {
    /// IRQs off, lock the rq, call the balance.
    #[default]
    Lock,
    /// Back from the balance: unlock with IRQs on.
    Unlock,
}

/// `post_schedule_idle()` in progress.
#[derive(Debug, Clone, Copy, Default)]
pub struct PostScheduleIdle {
    pub at: PostScheduleIdleAt,
}

/// Models the 2013 `post_schedule_idle()` -> `idle_balance()` of Steven Rostedt's patch 2/3
/// (kernel/sched/idle_task.c @ v3.8 + the patch), on the modern kernel: after the switch to
/// the idle task, lock the rq and run `sched_balance_newidle()` (with patch 3/3, dropping the
/// lock with IRQs on; with the follow-up, only if no task arrived). A pull sets NEED_RESCHED,
/// so the idle task schedules again: idle -> task is a second switch.
///
/// Context: the idle task, right after `__schedule()` released the rq lock.
pub fn post_schedule_idle(k: &mut Kernel, cpu: CpuId, s: &mut PostScheduleIdle) -> Next {
    use crate::linux::patches::Patch;
    match s.at {
        PostScheduleIdleAt::Lock => {
            local_irq_disable(k, cpu);
            let Some(lc) = raw_spin_rq_lock(k, cpu, cpu) else {
                return Next::Wait(WaitOn::Lock);
            };
            k.cpus[cpu as usize].rq.clock = k.now;
            s.at = PostScheduleIdleAt::Unlock;
            if k.cfg.has(Patch::Rostedt2013NrRunningCheck) && k.cpus[cpu as usize].rq.nr_running > 0 {
                return Next::Cont(lc);
            }
            let irqs_on = k.cfg.has(Patch::Rostedt2013IrqsOn);
            if !k.cfg.has(Patch::S38033c37faab) {
                // On v3.8 the hook calls that kernel's idle_balance().
                return Next::Call(lc, Frame::IdleBalance(IdleBalance { irqs_on, ..Default::default() }));
            }
            let nb = NewidleBalance { irqs_on, ..Default::default() };
            Next::Call(lc, Frame::NewidleBalance(nb))
        }
        PostScheduleIdleAt::Unlock => {
            // A task pulled here (attach_tasks -> wakeup_preempt) already set NEED_RESCHED.
            let c = raw_spin_rq_unlock(k, cpu, cpu);
            local_irq_enable(k, cpu);
            Next::Ret(c)
        }
    }
}

/// Models `finish_task_switch()` — kernel/sched/core.c @ v6.10, running on the new task's
/// stack: balance callbacks, unlock with IRQs on, `finish_task(prev)` (`prev->on_cpu = 0`).
/// Returns the cost of the balance callbacks.
fn finish_task_switch(k: &mut Kernel, cpu: CpuId) -> Time {
    // finish_lock_switch() -> __balance_callbacks(): the RT push queued by set_next_task_rt().
    let c = super::rt::balance_callbacks(k, cpu);
    raw_spin_rq_unlock(k, cpu, cpu);
    local_irq_enable(k, cpu);
    let prev = k.cpus[cpu as usize].switch_prev;
    // finish_task(): paired with prepare_task()'s set, once per switch.
    assert!(k.tasks[prev as usize].on_cpu, "finish_task() on CPU {cpu}: task {prev} was not on_cpu");
    k.tasks[prev as usize].on_cpu = false;
    // finish_task(): a release store in task_struct; a waker spinning on it sees it.
    let line = k.csds[k.tasks[prev as usize].wake_entry as usize].line;
    k.line_write(cpu, line);
    if k.tasks[prev as usize].state == TASK_DEAD {
        k.tasks[prev as usize].saved.clear();
    }
    c
}

/// Models `schedule_tail()` — kernel/sched/core.c @ v6.10: a new task's first run.
pub fn schedule_tail(k: &mut Kernel, cpu: CpuId) -> Next {
    let c = finish_task_switch(k, cpu);
    // preempt_enable() after the switch.
    k.cpus[cpu as usize].preempt_count -= 1;
    Next::Ret(k.costs.schedule_exit + c)
}

/// The `prev_state` field of `sched_switch` (`__trace_sched_switch_state`).
fn task_state_index(p: &Task, mode: SchedMode) -> u32 {
    if mode == SchedMode::Preempt {
        return 0x100; // TASK_REPORT_MAX: "R+"
    }
    match p.state {
        TASK_RUNNING | TASK_WAKING => 0,
        s if s == super::TASK_IDLE => 0x80,
        // An exiting thread reports its exit_state: EXIT_DEAD ("X"), reaped at once.
        TASK_DEAD => 0x10,
        s => s & 0x7f,
    }
}

// ---------------------------------------------------------------------------------------
// Wakeups
// ---------------------------------------------------------------------------------------

/// `try_to_wake_up()` resume points.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TtwuAt {
    Start,
    /// `ttwu_runnable()` for a delayed task (DELAY_DEQUEUE): lock its rq, requeue it there.
    Runnable,
    /// Waiting for `p->on_cpu` to clear, then placement.
    WaitOnCpu,
    /// `ttwu_queue()` direct path: taking the target rq lock.
    Locked,
    /// The enqueue's work done: activate and unlock.
    Activate,
    Done,
}

#[derive(Debug, Clone, Copy)]
pub struct TryToWakeUp {
    pub p: TaskId,
    pub wake_flags: u32,
    pub at: TtwuAt,
    pub target: CpuId,
    /// IRQs were on at entry (restored at the end, `raw_spin_unlock_irqrestore`).
    pub irqs_were_on: bool,
    pub cost: Time,
}

impl TryToWakeUp {
    pub fn new(p: TaskId, wake_flags: u32) -> Self {
        TryToWakeUp { p, wake_flags, at: TtwuAt::Start, target: 0, irqs_were_on: false, cost: 0 }
    }
}

/// Models `ttwu_queue_cond()` — kernel/sched/core.c @ v6.10 (after f3dd3f674555): use the
/// wakelist if the target does not share the LLC, or if it is idle (nr_running == 0) and not
/// this CPU.
///
/// Without f3dd3f674555 (before v6.0) a same-LLC target used the wakelist only for a task
/// still running on it (WF_ON_CPU) with at most one task queued there; without 2ebb17717550
/// too (before v5.8, as in v3.8) never: a same-LLC wakeup locks the target rq and enqueues.
pub fn ttwu_queue_cond(k: &Kernel, cpu: CpuId, target: CpuId, wake_flags: u32) -> bool {
    if !k.sd.cpus_share_cache(cpu, target) {
        return true;
    }
    if !k.cfg.has(crate::linux::patches::Patch::F3dd3f674555) {
        // Before 2ebb17717550 (v5.8), as since 518cd6234178 (v3.3): never within an LLC.
        return k.cfg.has(crate::linux::patches::Patch::S2ebb17717550)
            && wake_flags & WF_ON_CPU != 0
            && k.cpus[target as usize].rq.nr_running <= 1;
    }
    cpu != target && k.cpus[target as usize].rq.nr_running == 0
}

/// Models `ttwu_queue_wakelist()` + `__ttwu_queue_wakelist()` — kernel/sched/core.c @ v6.10:
/// write `ttwu_pending` first, then queue the task's wake_entry. Returns the cost if queued.
pub fn ttwu_queue_wakelist(k: &mut Kernel, cpu: CpuId, p: TaskId, target: CpuId, wake_flags: u32) -> Option<Time> {
    if !k.cfg.feat(SchedFeat::TTWU_QUEUE) || !ttwu_queue_cond(k, cpu, target, wake_flags) {
        return None;
    }
    k.tasks[p as usize].sched_remote_wakeup = wake_flags & WF_MIGRATED != 0;
    k.cpus[target as usize].rq.ttwu_pending = true;
    super::group_sums::rq_changed(k, target);
    let mut c = super::rq_lines::pending_written(k, cpu, target);
    let entry = k.tasks[p as usize].wake_entry;
    crate::linux::check::on_wakelist_queue(k, cpu, p, target);
    k.csds[entry as usize].flags = crate::linux::csd_flags::CSD_TYPE_TTWU;
    let (ipis, avoided) = (k.stats.ipis_sent, k.stats.ipis_avoided);
    c += __smp_call_single_queue(k, cpu, target, entry, Sym::TtwuQueueWakelist);
    if k.stats.ipis_sent > ipis {
        k.stats.wakeups_wakelist_ipi += 1;
    } else if k.stats.ipis_avoided > avoided {
        k.stats.wakeups_wakelist_polling += 1;
    } else {
        k.stats.wakeups_wakelist_coalesced += 1;
    }
    Some(c)
}

/// Models `ttwu_do_activate()` — kernel/sched/core.c @ v6.10: enqueue, `wakeup_preempt()`,
/// TASK_RUNNING, and the `avg_idle` sample. Requires `rq_cpu`'s lock. The caller charges the
/// enqueue's own work (`PathCosts::ttwu_activate`) *before* calling this: the task becomes
/// visible to other CPUs (nr_running) at the end of `enqueue_task_fair()`. Returns the cost of
/// the preemption check (a possible remote resched).
pub fn ttwu_do_activate(k: &mut Kernel, cpu: CpuId, rq_cpu: CpuId, p: TaskId, wake_flags: u32) -> Time {
    assert_eq!(k.cpus[rq_cpu as usize].rq.lock_owner, Some(cpu), "ttwu_do_activate(): lockdep_assert_rq_held(rq)");
    let migrated = wake_flags & WF_MIGRATED != 0;
    let (resched, mut c) = activate_task(k, cpu, rq_cpu, p, EnqueueFlags { wakeup: true, migrated, initial: false });
    if wakeup_preempt(k, rq_cpu, p, resched) {
        c += resched_curr(k, cpu, rq_cpu, Sym::WakeupPreempt);
    }
    k.tasks[p as usize].state = TASK_RUNNING;
    // Host cache hint, not a model of anything: a woken task is usually switched to within a
    // few steps of its CPU, which then takes the top frame of its saved stack, a block of its
    // own that is cold on a large machine.
    crate::linux::engine::prefetch_caller(&k.tasks[p as usize].saved);
    let (pid, prio) = (k.tasks[p as usize].pid, k.tasks[p as usize].prio);
    k.tp(cpu, Event::SchedWakeup { pid, prio, target_cpu: rq_cpu });
    // p->sched_class->task_woken() (RT: push it away if curr stays).
    c += SchedClass::of(k, p).task_woken(k, cpu, rq_cpu, p);
    let old_avg_idle = !k.cfg.has(crate::linux::patches::Patch::Abfafa54db9a);
    let rq = &mut k.cpus[rq_cpu as usize].rq;
    if rq.idle_stamp != 0 && old_avg_idle {
        // Before abfafa54db9a (v3.13): a sample above 2 * sysctl_sched_migration_cost sets
        // avg_idle to that cap; a shorter one is averaged in.
        let delta = rq.clock.saturating_sub(rq.idle_stamp);
        let max = 2 * super::SYSCTL_SCHED_MIGRATION_COST;
        rq.avg_idle =
            if delta > max { max } else { (rq.avg_idle as i64 + (delta as i64 - rq.avg_idle as i64) / 8) as u64 };
        rq.idle_stamp = 0;
    }
    if rq.idle_stamp != 0 {
        let delta = rq.clock.saturating_sub(rq.idle_stamp) as i64;
        let max = 2 * rq.max_idle_balance_cost as i64;
        // update_avg(): avg += (sample - avg) / 8.
        let avg = rq.avg_idle as i64;
        let new = (avg + (delta - avg) / 8).min(max).max(0);
        rq.avg_idle = new as u64;
        rq.idle_stamp = 0;
    }
    c
}

/// Models `wakeup_preempt()` — kernel/sched/core.c @ v6.10, after `p` was enqueued on
/// `rq_cpu`: a wakee of `curr`'s class lets the class decide (`wakeup_preempt_rt()`,
/// `check_preempt_wakeup_fair()`, the idle class always); a higher class always preempts a
/// lower one (stop > RT > fair > idle) and a lower one never does. `enqueue_resched` is the
/// fair enqueue's own `update_curr()` verdict. True to resched.
pub fn wakeup_preempt(k: &mut Kernel, rq_cpu: CpuId, p: TaskId, enqueue_resched: bool) -> bool {
    let curr = k.cpus[rq_cpu as usize].rq.curr;
    let (pc, cc) = (SchedClass::of(k, p), SchedClass::of(k, curr));
    if pc == cc {
        return cc.wakeup_preempt(k, rq_cpu, p, enqueue_resched);
    }
    pc.above(cc)
}

/// Models `try_to_wake_up()` — kernel/sched/core.c @ v6.10.
///
/// Context: any; takes `p->pi_lock` with IRQs saved. Placement: [`select_task_rq`] (the one
/// CPU a task may use, else its class's choice), after waiting for `p->on_cpu` to clear.
pub fn try_to_wake_up(k: &mut Kernel, cpu: CpuId, s: &mut TryToWakeUp) -> Next {
    let p = s.p;
    match s.at {
        TtwuAt::Start => {
            s.irqs_were_on = !k.cpus[cpu as usize].x.irqs_off;
            // preempt_disable(); raw_spin_lock_irqsave(&p->pi_lock).
            k.cpus[cpu as usize].preempt_count += 2;
            local_irq_disable(k, cpu);
            s.cost = k.costs.ttwu;
            let t = &k.tasks[p as usize];
            if t.state & (super::TASK_INTERRUPTIBLE | super::TASK_UNINTERRUPTIBLE) == 0 {
                // ttwu_state_match() fails: running, already being woken (TASK_WAKING) or dead.
                s.at = TtwuAt::Done;
                return Next::Cont(0);
            }
            let (pid, prio, tcpu) = (t.pid, t.prio, t.cpu);
            k.tp(cpu, Event::SchedWaking { pid, prio, target_cpu: tcpu });
            if k.tasks[p as usize].kind == super::TaskKind::Workload {
                k.tasks[p as usize].woken_at = Some(k.now);
            }
            if k.tasks[p as usize].kind == super::TaskKind::Ksoftirqd {
                k.stats.ksoftirqd_wakeups += 1;
            }
            if k.tasks[p as usize].on_rq {
                if k.ents[p as usize].sched_delayed {
                    // Asleep but still queued (DELAY_DEQUEUE): ttwu_runnable() under its rq lock.
                    s.target = k.tasks[p as usize].cpu;
                    s.at = TtwuAt::Runnable;
                    return Next::Cont(0);
                }
                // ttwu_runnable(): still queued, it has not scheduled out yet.
                k.tasks[p as usize].state = TASK_RUNNING;
                k.tasks[p as usize].woken_at = None;
                k.tasks[p as usize].wake_placement = super::WakePlacement::None;
                s.at = TtwuAt::Done;
                return Next::Cont(0);
            }
            ttwu_not_queued(k, cpu, s)
        }
        TtwuAt::Runnable => {
            let rq_cpu = s.target;
            let Some(lc) = raw_spin_rq_lock(k, cpu, rq_cpu) else {
                return Next::Wait(WaitOn::Lock);
            };
            s.cost += lc;
            if !k.tasks[p as usize].on_rq || k.tasks[p as usize].cpu != rq_cpu {
                // Its CPU finished the dequeue meanwhile (a pick): a plain wakeup after all.
                s.cost += raw_spin_rq_unlock(k, cpu, rq_cpu);
                return ttwu_not_queued(k, cpu, s);
            }
            k.cpus[rq_cpu as usize].rq.clock = k.now;
            if k.ents[p as usize].sched_delayed {
                // enqueue_task(ENQUEUE_DELAYED) -> requeue_delayed_entity().
                super::fair::requeue_delayed_task(k, rq_cpu, p);
                k.stats.wakeups_delayed += 1;
            }
            s.cost += k.costs.ttwu_activate;
            if !k.tasks[p as usize].on_cpu && wakeup_preempt(k, rq_cpu, p, false) {
                s.cost += resched_curr(k, cpu, rq_cpu, Sym::WakeupPreempt);
            }
            // ttwu_do_wakeup().
            k.tasks[p as usize].state = TASK_RUNNING;
            k.tasks[p as usize].wake_placement = super::WakePlacement::None;
            let (pid, prio) = (k.tasks[p as usize].pid, k.tasks[p as usize].prio);
            k.tp(cpu, Event::SchedWakeup { pid, prio, target_cpu: rq_cpu });
            s.cost += raw_spin_rq_unlock(k, cpu, rq_cpu);
            s.at = TtwuAt::Done;
            Next::Cont(0)
        }
        TtwuAt::WaitOnCpu => {
            // smp_cond_load_acquire(&p->on_cpu, !VAL): spin until the old CPU's
            // finish_task_switch() releases the task.
            if k.tasks[p as usize].on_cpu {
                let line = k.csds[k.tasks[p as usize].wake_entry as usize].line;
                crate::linux::engine::watch(k, cpu, line);
                return Next::Wait(WaitOn::Spin);
            }
            let prev_cpu = k.tasks[p as usize].cpu;
            let mut wf = s.wake_flags | WF_TTWU;
            let (target, c) = select_task_rq(k, cpu, p, prev_cpu, wf);
            s.cost += c;
            if target != prev_cpu {
                wf |= WF_MIGRATED;
                // set_task_cpu() -> class->migrate_task_rq().
                SchedClass::of(k, p).migrate_task_rq(k, p, prev_cpu);
                let (pid, prio) = (k.tasks[p as usize].pid, k.tasks[p as usize].prio);
                k.tp(cpu, Event::SchedMigrateTask { pid, prio, orig_cpu: prev_cpu, dest_cpu: target });
                k.tasks[p as usize].cpu = target;
                k.stats.cpu_migrations += 1;
            }
            note_placement(k, p, target);
            let selected = k.tasks[p as usize].single_cpu().is_none() && !super::rt::rt_task(k, p);
            crate::linux::check::on_wakee_placed(k, cpu, p, target, selected);
            s.target = target;
            s.wake_flags = wf;
            if let Some(c) = ttwu_queue_wakelist(k, cpu, p, target, wf) {
                s.cost += c;
                s.at = TtwuAt::Done;
                return Next::Cont(0);
            }
            s.at = TtwuAt::Locked;
            Next::Cont(0)
        }
        TtwuAt::Locked => {
            // ttwu_queue() direct path: lock the target rq, update its clock, enqueue.
            let Some(lc) = raw_spin_rq_lock(k, cpu, s.target) else {
                return Next::Wait(WaitOn::Lock);
            };
            k.cpus[s.target as usize].rq.clock = k.now;
            k.stats.wakeups_direct += 1;
            s.at = TtwuAt::Activate;
            Next::Cont(lc + k.costs.ttwu_activate)
        }
        TtwuAt::Activate => {
            let c = ttwu_do_activate(k, cpu, s.target, p, s.wake_flags);
            s.cost += c + raw_spin_rq_unlock(k, cpu, s.target);
            s.at = TtwuAt::Done;
            Next::Cont(0)
        }
        TtwuAt::Done => {
            k.cpus[cpu as usize].preempt_count -= 2;
            if s.irqs_were_on {
                local_irq_enable(k, cpu);
            }
            Next::Ret(s.cost)
        }
    }
}

/// The part of `try_to_wake_up()` after `ttwu_runnable()` found `p` off its runqueue:
/// TASK_WAKING, then the wakelist of a CPU it is still switching out on, or on to the wait for
/// `p->on_cpu` and placement.
fn ttwu_not_queued(k: &mut Kernel, cpu: CpuId, s: &mut TryToWakeUp) -> Next {
    let p = s.p;
    k.tasks[p as usize].state = TASK_WAKING;
    crate::linux::check::on_waking(k, p);
    let prev_cpu = k.tasks[p as usize].cpu;
    if k.tasks[p as usize].on_cpu && k.cfg.has(crate::linux::patches::Patch::C6e7bd7afaeb) {
        // Still switching out on its old CPU: queue there; it is activated when that
        // CPU takes the IPI after the switch (c6e7bd7afaeb; before it, always spin).
        if let Some(c) = ttwu_queue_wakelist(k, cpu, p, prev_cpu, s.wake_flags | WF_TTWU | WF_ON_CPU) {
            s.cost += c;
            s.at = TtwuAt::Done;
            return Next::Cont(0);
        }
    }
    s.at = TtwuAt::WaitOnCpu;
    Next::Cont(0)
}

/// `sched_ttwu_pending()` resume points.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum TtwuPendingAt {
    /// Before d6962c4fe8f9: clear `ttwu_pending` before the lock.
    #[default]
    Start,
    /// Lock the rq.
    Lock,
    /// Walk the flush list to the next TTWU entry (or unlock and return).
    Walk,
    /// Finish the enqueue of `cur`.
    Activate,
}

/// `sched_ttwu_pending()` in progress.
#[derive(Debug, Clone, Copy, Default)]
pub struct TtwuPending {
    pub at: TtwuPendingAt,
    /// Next index into the CPU's flush list.
    pub i: u16,
    /// The wakee whose enqueue is in progress.
    pub cur: u32,
}

/// Count a "stacking" wakeup: the target was idle, already chosen for another wakee that
/// has not started running, while another CPU of its LLC was idle at this instant; or, with no
/// other idle CPU there, a fallback onto such a CPU. Records on `p` what the target held.
fn note_placement(k: &mut Kernel, p: TaskId, target: CpuId) {
    let rq = &k.cpus[target as usize].rq;
    let placement = if rq.curr != rq.idle {
        super::WakePlacement::Busy
    } else if rq.wakees_placed > 0 {
        let llc = k.sd.sd_llc[target as usize];
        let other_idle =
            llc.is_some_and(|l| k.sd.domains(target)[l].span.iter().any(|c| c != target && idle_cpu(k, c)));
        if other_idle {
            k.stats.stacking_wakeups += 1;
            if k.stats.first_stacking.is_none() {
                k.stats.first_stacking = Some((k.now, target, k.tasks[p as usize].pid));
            }
            super::WakePlacement::IdleStacked
        } else {
            k.stats.stacking_fallback_wakeups += 1;
            super::WakePlacement::IdleStackedNoneLeft
        }
    } else {
        super::WakePlacement::Idle
    };
    k.tasks[p as usize].wake_placement = placement;
    k.cpus[target as usize].rq.wakees_placed += 1;
}

/// Models `sched_ttwu_pending()` — kernel/sched/core.c @ v6.10 (flush pass 3): activate the
/// queued wakees under the rq lock, then clear `ttwu_pending` (d6962c4fe8f9; without it the
/// flag is cleared first, before the lock).
///
/// Context: IRQs off, from `__flush_smp_call_function_queue()`.
pub fn sched_ttwu_pending(k: &mut Kernel, cpu: CpuId, s: &mut TtwuPending) -> Next {
    use crate::linux::csd_flags::{CSD_FLAG_TYPE_MASK, CSD_TYPE_TTWU};
    match s.at {
        TtwuPendingAt::Start => {
            if !k.cfg.has(crate::linux::patches::Patch::D6962c4fe8f9) {
                // Before d6962c4fe8f9: cleared before the lock and the enqueue, opening a
                // window where idle_cpu() says "idle" for a CPU about to receive tasks.
                k.cpus[cpu as usize].rq.ttwu_pending = false;
                super::group_sums::rq_changed(k, cpu);
                s.at = TtwuPendingAt::Lock;
                return Next::Cont(super::rq_lines::pending_written(k, cpu, cpu));
            }
            s.at = TtwuPendingAt::Lock;
            Next::Cont(0)
        }
        TtwuPendingAt::Lock => {
            let Some(lc) = raw_spin_rq_lock(k, cpu, cpu) else {
                return Next::Wait(WaitOn::Lock);
            };
            k.cpus[cpu as usize].rq.clock = k.now;
            s.at = TtwuPendingAt::Walk;
            Next::Cont(lc)
        }
        TtwuPendingAt::Activate => {
            // The enqueue's work is done: the task becomes visible (nr_running++ at the end of
            // enqueue_task_fair()), then wakeup_preempt.
            let p = s.cur;
            let wf = if k.tasks[p as usize].sched_remote_wakeup { WF_MIGRATED } else { 0 };
            let c = ttwu_do_activate(k, cpu, cpu, p, wf);
            crate::linux::check::on_wakelist_activate(k, cpu, p);
            s.at = TtwuPendingAt::Walk;
            Next::Cont(c)
        }
        TtwuPendingAt::Walk => {
            let list = &k.cpus[cpu as usize].flush_list;
            while (s.i as usize) < list.len() {
                let e = list[s.i as usize];
                s.i += 1;
                if k.csds[e as usize].flags & CSD_FLAG_TYPE_MASK != CSD_TYPE_TTWU {
                    continue;
                }
                let crate::linux::CsdFunc::TtwuEntry(p) = k.csds[e as usize].func else { continue };
                let entry_line = k.csds[e as usize].line;
                s.cur = p;
                s.at = TtwuPendingAt::Activate;
                return Next::Cont(k.line_read(cpu, entry_line) + k.costs.ttwu_activate);
            }
            let mut c = 0;
            if k.cfg.has(crate::linux::patches::Patch::D6962c4fe8f9) {
                k.cpus[cpu as usize].rq.ttwu_pending = false;
                super::group_sums::rq_changed(k, cpu);
                c += super::rq_lines::pending_written(k, cpu, cpu);
            }
            c += raw_spin_rq_unlock(k, cpu, cpu);
            Next::Ret(c)
        }
    }
}

/// Models `select_task_rq()` — kernel/sched/core.c @ v6.10, run by `cpu`: a task allowed on
/// one CPU goes there; otherwise its class chooses (`class->select_task_rq()`); a CPU the task
/// may not use falls back ([`select_fallback_rq`]). Returns (CPU, the class's cost).
pub fn select_task_rq(k: &mut Kernel, cpu: CpuId, p: TaskId, prev_cpu: CpuId, wake_flags: u32) -> (CpuId, Time) {
    let (target, c) = match k.tasks[p as usize].single_cpu() {
        Some(c) => (c, 0),
        None => SchedClass::of(k, p).select_task_rq(k, cpu, p, prev_cpu, wake_flags),
    };
    (select_fallback_rq(k, p, target), c)
}

/// The end of `select_task_rq()` — kernel/sched/core.c @ v6.10: if the class chose a CPU the
/// task may not use (`!is_cpu_allowed()`), `select_fallback_rq()` takes the first allowed CPU.
/// Simplification: the kernel tries the task's NUMA node first and every CPU is online here.
pub fn select_fallback_rq(k: &Kernel, p: TaskId, cpu: CpuId) -> CpuId {
    let t = &k.tasks[p as usize];
    if t.cpu_allowed(cpu) {
        return cpu;
    }
    (0..k.m.topo.nr_cpus).find(|&c| t.cpu_allowed(c)).unwrap_or(cpu)
}

/// Models the scheduler's part of `kernel_clone()` for a thread created by running code on
/// `cpu` (`pthread_create()`): `sched_fork()` starts the child on its parent's CPU
/// (`__set_task_cpu()`), then `wake_up_new_task()` places and wakes it.
pub fn sched_fork_and_wake(k: &mut Kernel, cpu: CpuId, p: TaskId) {
    k.tasks[p as usize].cpu = cpu;
    wake_up_new_task(k, cpu, p);
}

/// Models `wake_up_new_task()` — kernel/sched/core.c @ v6.10 for a task created by a workload:
/// place it (its bound CPU, or fork balancing), activate it and let `wakeup_preempt()` decide
/// whether it preempts the current task there.
/// Performed by `cpu` (the CPU running the creator).
pub fn wake_up_new_task(k: &mut Kernel, cpu: CpuId, p: TaskId) {
    // select_task_rq(p, WF_FORK): fork balancing for an unpinned task.
    let prev_cpu = k.tasks[p as usize].cpu;
    let (target, _) = select_task_rq(k, cpu, p, prev_cpu, WF_FORK);
    k.tasks[p as usize].cpu = target;
    k.tasks[p as usize].state = TASK_RUNNING;
    // The creator is not modelled as running code: the cost of the enqueue's line writes
    // has no step to go to (ARCHITECTURE.md, "What is simplified").
    let (r, _) = activate_task(k, cpu, target, p, EnqueueFlags { wakeup: false, migrated: false, initial: true });
    let (pid, prio) = (k.tasks[p as usize].pid, k.tasks[p as usize].prio);
    k.tp(cpu, Event::SchedWakeupNew { pid, prio, target_cpu: target });
    // wakeup_preempt(rq, p, WF_FORK).
    if wakeup_preempt(k, target, p, r) {
        resched_curr(k, cpu, target, Sym::WakeupPreempt);
    }
}

// ---------------------------------------------------------------------------------------
// The tick
// ---------------------------------------------------------------------------------------

/// Models `sched_tick()` — kernel/sched/core.c @ v6.10, from the tick's hardirq: clock update
/// and `task_tick` under the rq lock (uncontended here), then `rq->idle_balance = idle_cpu()`
/// and `sched_balance_trigger()`. Returns the cost.
pub fn sched_tick(k: &mut Kernel, cpu: CpuId) -> Time {
    k.cpus[cpu as usize].rq.clock = k.now;
    // curr->sched_class->task_tick(): the fair class's slice/deadline accounting, a SCHED_RR
    // task's slice; resched if curr must go.
    let curr = k.cpus[cpu as usize].rq.curr;
    let class = SchedClass::of(k, curr);
    let mut c = 0;
    if class.task_tick(k, cpu, curr) {
        resched_curr(k, cpu, cpu, Sym::ReschedCurr);
    }
    if class == SchedClass::Fair {
        // entity_tick(): update_curr() and update_load_avg() of the running entity.
        c += super::rq_lines::cfs_written(k, cpu, cpu);
    }
    if class != SchedClass::Fair {
        // Simplification: the fair runqueue's PELT average advances at every tick; with a
        // fair curr, task_tick_fair() has just done it.
        let now = k.now;
        k.with_cfs(cpu, |cfs, _| cfs.update_cfs_avg(now));
    }
    let ib = idle_cpu(k, cpu);
    k.cpus[cpu as usize].rq.idle_balance = ib;
    c += crate::linux::kernel::sched::fair::sched_balance_trigger(k, cpu);
    k.costs.sched_tick + c
}

/// Models `nohz_csd_func()` — kernel/sched/core.c @ v6.10: the idle load balancer's csd. Take
/// (and so release) the kick flags, snapshot `idle_cpu()`, and raise SCHED_SOFTIRQ for
/// `nohz_idle_balance()`. In v6.10 it also requires `!need_resched()`, which a polling kick
/// makes true only to deliver this very csd, so the kick is lost (fixed by ea9cffc0a154). It
/// raises with `raise_softirq_irqoff()`, which from the idle task's flush (not interrupt
/// context) wakes ksoftirqd (fixed by e932c4ab38f0). Returns (cost, a wakeup to call).
///
/// Context: the flush's pass 2 (ASYNC; the csd is already unlocked): hardirq for a real IPI,
/// the idle task for a polling delivery.
pub fn nohz_csd_func(k: &mut Kernel, cpu: CpuId) -> (Time, Option<Frame>) {
    use super::{NOHZ_KICK_MASK, NOHZ_NEWILB_KICK};
    use crate::linux::patches::Patch;
    // atomic_fetch_andnot() of nohz_flags: the `pending` line.
    let c = super::rq_lines::pending_written(k, cpu, cpu);
    let rq = &mut k.cpus[cpu as usize].rq;
    let flags = rq.nohz_flags & (NOHZ_KICK_MASK | NOHZ_NEWILB_KICK);
    rq.nohz_flags &= !(NOHZ_KICK_MASK | NOHZ_NEWILB_KICK);
    if flags & NOHZ_KICK_MASK == 0 {
        k.warn_on_once(cpu, crate::trace::WarnSite::NohzCsdFuncNoKick);
    }
    let idle = idle_cpu(k, cpu);
    k.cpus[cpu as usize].rq.idle_balance = idle;
    let go = if k.cfg.has(Patch::Ea9cffc0a154) { idle } else { idle && !need_resched(k, cpu) };
    if !go {
        k.stats.nohz_kicks_lost += 1;
        return (c, None);
    }
    k.cpus[cpu as usize].rq.nohz_idle_balance = flags;
    k.stats.nohz_kicks_raised_softirq += 1;
    let sched = crate::linux::kernel::softirq::SCHED_SOFTIRQ;
    if k.cfg.has(Patch::E932c4ab38f0) {
        crate::linux::kernel::softirq::__raise_softirq_irqoff(k, cpu, sched);
        (c, None)
    } else {
        (c, crate::linux::kernel::softirq::raise_softirq_irqoff(k, cpu, sched))
    }
}
