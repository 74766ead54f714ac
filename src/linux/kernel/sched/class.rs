//! Models `struct sched_class` of `kernel/sched/sched.h` @ v6.10 (kept in its own file so the
//! class table reads in one place): the scheduling classes in priority order and the class
//! operations the model uses, each dispatched to its class's model (`stop_task.rs`, `rt.rs`,
//! `fair.rs`, `idle.rs`).
//!
//! The kernel links one `struct sched_class` of function pointers per class, in priority order
//! (`for_each_class()` walks them; `sched_class_above()` compares addresses). The model's
//! table is [`SCHED_CLASSES`] and the dispatch is one `match` per operation on
//! [`SchedClass`]: the classes are fixed at compile time, and a `match` lets the compiler
//! inline the fair operations into `__schedule()` and `try_to_wake_up()`, where a table of
//! function pointers would be an indirect call on every pick and enqueue (docs in
//! docs/design.md, "The class table", with the measured cost).
//!
//! The deadline class (`dl_sched_class`, between stop and RT) is not modelled: a
//! `SchedClass::Dl` variant between `Stop` and `Rt`, one arm per operation and an entry in
//! [`SCHED_CLASSES`] is where it would go. Operations the model has no use for
//! (`task_fork`, `task_dead`, `update_curr`, ...) are not listed; `switched_from`,
//! `switched_to` and `prio_changed` of a task changing its own policy are in `syscalls.rs`
//! (`check_class_changed()`).

use super::fair_class::{DequeueFlags, EnqueueFlags};
use super::rt::MAX_RT_PRIO;
use super::{TaskKind, WF_FORK, WF_SYNC};
use crate::linux::{CpuId, Kernel, TaskId};
use crate::sim::Time;

/// A scheduling class: the kernel's `p->sched_class`. Ordered by priority (`Stop` highest), so
/// `a < b` is `sched_class_above(a, b)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum SchedClass {
    /// `stop_sched_class` (kernel/sched/stop_task.c): the per-CPU stopper `migration/N`.
    Stop,
    // The deadline class (`dl_sched_class`) would sit here; not modelled.
    /// `rt_sched_class` (kernel/sched/rt.c): SCHED_FIFO and SCHED_RR.
    Rt,
    /// `fair_sched_class` (kernel/sched/fair.c): SCHED_NORMAL (EEVDF, or CFS before v6.6).
    Fair,
    /// `idle_sched_class` (kernel/sched/idle.c): the per-CPU idle task `swapper/N`.
    Idle,
}

/// The classes in priority order, as `for_each_class()` walks them (the linker's
/// `__sched_class_highest` .. `__sched_class_lowest`).
pub const SCHED_CLASSES: [SchedClass; 4] = [SchedClass::Stop, SchedClass::Rt, SchedClass::Fair, SchedClass::Idle];

impl SchedClass {
    /// `p->sched_class` as `__setscheduler_prio()` chooses it — kernel/sched/core.c @ v6.10:
    /// the stopper and the idle task have their own classes; an RT priority (`prio <
    /// MAX_RT_PRIO`) is the RT class; everything else is fair. The model derives it from the
    /// task's kind and priority; the priority changes only through
    /// `syscalls::__sched_setscheduler()` (which moves the task between the classes' queues).
    #[inline]
    pub fn of(k: &Kernel, p: TaskId) -> SchedClass {
        let t = &k.tasks[p as usize];
        match t.kind {
            TaskKind::Stopper => SchedClass::Stop,
            TaskKind::Idle => SchedClass::Idle,
            _ if t.prio < MAX_RT_PRIO => SchedClass::Rt,
            _ => SchedClass::Fair,
        }
    }

    /// `sched_class_above(self, other)` — kernel/sched/sched.h @ v6.10.
    #[inline]
    pub fn above(self, other: SchedClass) -> bool {
        self < other
    }

    /// `class->enqueue_task(rq, p, flags)`: queue `p` on `rq_cpu` (the caller,
    /// `activate_task()`, counts it in `nr_running`). Returns the fair class's verdict that the
    /// current task must be rescheduled (its `update_curr()`); false for the other classes.
    #[inline]
    pub fn enqueue_task(self, k: &mut Kernel, rq_cpu: CpuId, p: TaskId, flags: EnqueueFlags) -> bool {
        match self {
            SchedClass::Stop => {
                super::stop_task::enqueue_task_stop(k, rq_cpu);
                false
            }
            SchedClass::Rt => {
                super::rt::enqueue_task_rt(k, rq_cpu, p, false);
                false
            }
            SchedClass::Fair => super::fair::enqueue_task_fair(k, rq_cpu, p, flags),
            SchedClass::Idle => unreachable!("dequeue_task_idle/enqueue of the idle task: it is never queued"),
        }
    }

    /// `class->dequeue_task(rq, p, flags)` (the caller, `deactivate_task()`, uncounts it).
    /// False if the task stays queued: the fair class delayed its dequeue (DELAY_DEQUEUE).
    #[inline]
    pub fn dequeue_task(self, k: &mut Kernel, rq_cpu: CpuId, p: TaskId, flags: DequeueFlags) -> bool {
        match self {
            SchedClass::Stop => {
                super::stop_task::dequeue_task_stop(k, rq_cpu);
                true
            }
            SchedClass::Rt => {
                super::rt::dequeue_task_rt(k, rq_cpu, p);
                true
            }
            SchedClass::Fair => super::fair::dequeue_task_fair(k, rq_cpu, p, flags),
            SchedClass::Idle => unreachable!("dequeue_task_idle(): the idle task never sleeps"),
        }
    }

    /// `class->pick_task(rq)`: this class's best task on `cpu`, if it has one. The fair class
    /// picks by EEVDF (or CFS) without switching to it yet; see [`SchedClass::set_next_task`].
    #[inline]
    pub fn pick_task(self, k: &mut Kernel, cpu: CpuId) -> Option<TaskId> {
        match self {
            SchedClass::Stop => super::stop_task::pick_task_stop(k, cpu),
            SchedClass::Rt => super::rt::pick_task_rt(k, cpu),
            SchedClass::Fair => super::fair::pick_task_fair(k, cpu),
            SchedClass::Idle => Some(super::idle::pick_task_idle(k, cpu)),
        }
    }

    /// `class->set_next_task(rq, p, true)`: `p` becomes the class's running task. Returns the
    /// cost (the idle class's `__update_idle_core()`).
    #[inline]
    pub fn set_next_task(self, k: &mut Kernel, cpu: CpuId, p: TaskId) -> Time {
        match self {
            SchedClass::Stop => 0,
            SchedClass::Rt => {
                super::rt::set_next_task_rt(k, cpu, p);
                0
            }
            SchedClass::Fair => {
                super::fair::set_next_task_fair(k, cpu, p);
                // set_next_entity() (and the fast path's put_prev_entity()): update_curr(),
                // __dequeue_entity(), update_load_avg().
                super::rq_lines::cfs_written(k, cpu, cpu)
            }
            SchedClass::Idle => super::idle::set_next_task_idle(k, cpu),
        }
    }

    /// `class->put_prev_task(rq, prev)`: `prev` stops being the class's running task.
    #[inline]
    pub fn put_prev_task(self, k: &mut Kernel, cpu: CpuId, prev: TaskId) -> Time {
        match self {
            SchedClass::Stop | SchedClass::Idle => 0,
            SchedClass::Rt => {
                super::rt::put_prev_task_rt(k, cpu, prev);
                0
            }
            SchedClass::Fair => {
                super::fair::put_prev_task_fair(k, cpu);
                // put_prev_entity() of a still queued prev: update_curr(), update_load_avg();
                // a prev that blocked was dequeued already (and wrote them there).
                if k.tasks[prev as usize].on_rq {
                    super::rq_lines::cfs_written(k, cpu, cpu)
                } else {
                    0
                }
            }
        }
    }

    /// `class->balance(rq, prev, rf)` for `prev`'s own class, from `put_prev_task_balance()`.
    /// Only the RT class acts here (`balance_rt()` pulls when an RT `prev` leaves). The
    /// kernel goes on to the lower classes' `balance` while none reports a runnable task;
    /// the model runs the fair class's newidle balance from the fair pick's `idle:` path
    /// instead (after `put_prev_task()`, not before), and does not call `balance_rt()` after
    /// the stopper (which in the kernel may pull RT tasks). Returns the cost.
    #[inline]
    pub fn balance(self, k: &mut Kernel, cpu: CpuId, prev: TaskId) -> Time {
        match self {
            SchedClass::Rt => super::rt::balance_rt(k, cpu, prev),
            SchedClass::Stop | SchedClass::Fair | SchedClass::Idle => 0,
        }
    }

    /// `class->wakeup_preempt(rq, p, flags)` for a woken `p` of the same class as `curr`
    /// (`wakeup_preempt()` decides across classes). `enqueue_resched` is the fair enqueue's
    /// own `update_curr()` verdict. True to resched.
    #[inline]
    pub fn wakeup_preempt(self, k: &mut Kernel, rq_cpu: CpuId, p: TaskId, enqueue_resched: bool) -> bool {
        match self {
            // wakeup_preempt_stop() is empty: nothing preempts the stopper.
            SchedClass::Stop => false,
            SchedClass::Rt => super::rt::wakeup_preempt_rt(k, rq_cpu, p),
            SchedClass::Fair => super::fair::check_preempt_wakeup_fair(k, rq_cpu, p, enqueue_resched),
            // wakeup_preempt_idle(): anything preempts the idle task.
            SchedClass::Idle => true,
        }
    }

    /// `class->select_task_rq(p, prev_cpu, wake_flags)` run by `cpu` for a task allowed on
    /// several CPUs (WF_TTWU or WF_FORK). Returns (CPU, cost).
    #[inline]
    pub fn select_task_rq(
        self,
        k: &mut Kernel,
        cpu: CpuId,
        p: TaskId,
        prev_cpu: CpuId,
        wake_flags: u32,
    ) -> (CpuId, Time) {
        match self {
            // select_task_rq_stop()/_idle(): the task's own CPU (both are per-CPU threads).
            SchedClass::Stop | SchedClass::Idle => (prev_cpu, 0),
            SchedClass::Rt => (super::rt::select_task_rq_rt(k, cpu, p, prev_cpu), 0),
            SchedClass::Fair if wake_flags & WF_FORK != 0 => (super::fair::sched_balance_find_dst_cpu(k, cpu, p), 0),
            SchedClass::Fair => super::fair::select_task_rq_fair(k, cpu, p, prev_cpu, wake_flags & WF_SYNC != 0),
        }
    }

    /// `class->migrate_task_rq(p, new_cpu)`, from `set_task_cpu()` for a woken task leaving
    /// `prev_cpu` (only the fair class has one among the modelled classes).
    #[inline]
    pub fn migrate_task_rq(self, k: &mut Kernel, p: TaskId, prev_cpu: CpuId) {
        if self == SchedClass::Fair {
            super::fair::migrate_task_rq_fair(k, p, prev_cpu);
        }
    }

    /// `class->task_woken(rq, p)`, run by `cpu` on `rq_cpu` after `wakeup_preempt()` (only the
    /// RT class has one among the modelled classes). Returns the cost.
    #[inline]
    pub fn task_woken(self, k: &mut Kernel, cpu: CpuId, rq_cpu: CpuId, p: TaskId) -> Time {
        match self {
            SchedClass::Rt => super::rt::task_woken_rt(k, cpu, rq_cpu, p),
            _ => 0,
        }
    }

    /// `class->task_tick(rq, curr, 0)` from `sched_tick()`. True to resched.
    #[inline]
    pub fn task_tick(self, k: &mut Kernel, cpu: CpuId, curr: TaskId) -> bool {
        match self {
            SchedClass::Stop | SchedClass::Idle => false,
            SchedClass::Rt => super::rt::task_tick_rt(k, cpu, curr),
            SchedClass::Fair => super::fair::task_tick_fair(k, cpu),
        }
    }

    /// `class->yield_task(rq)` from `do_sched_yield()` (only user tasks, RT or fair, yield).
    #[inline]
    pub fn yield_task(self, k: &mut Kernel, cpu: CpuId) {
        match self {
            SchedClass::Rt => super::rt::yield_task_rt(k, cpu),
            SchedClass::Fair => super::fair::yield_task_fair(k, cpu),
            SchedClass::Stop | SchedClass::Idle => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes_are_listed_in_priority_order() {
        for w in SCHED_CLASSES.windows(2) {
            assert!(w[0].above(w[1]), "{:?} must rank above {:?}", w[0], w[1]);
        }
        assert!(!SchedClass::Fair.above(SchedClass::Fair));
        assert!(SchedClass::Rt.above(SchedClass::Idle));
    }
}
