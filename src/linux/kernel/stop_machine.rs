//! Models the per-CPU stopper threads of `kernel/stop_machine.c` @ v6.10 (`migration/N`, the
//! stop scheduling class, above every other class), as used by the load balancer's active
//! balance: `stop_one_cpu_nowait()` queues work and wakes the stopper, which preempts whatever
//! runs on its CPU.

use super::sched::core::ScheduleCaller;
use super::sched::{TASK_INTERRUPTIBLE, TASK_RUNNING};
use crate::linux::engine::{Frame, Next};
use crate::linux::{CpuId, Kernel};

/// Work queued on a CPU's stopper.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopWork {
    /// `active_load_balance_cpu_stop()`: push one task from this CPU to `push_cpu`.
    ActiveLoadBalance { push_cpu: CpuId },
    /// `softlockup_fn()` of the softlockup watchdog (background source `src`).
    SoftlockupFn { src: u16 },
    /// `migration_cpu_stop()`: move task `p`, which may no longer run here, to `dest`.
    MigrationCpuStop { p: crate::linux::TaskId, dest: CpuId },
}

/// `cpu_stopper_thread()` resume points, in code order.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum StopperAt {
    /// About to look for queued work (and run it, or sleep).
    #[default]
    RunWork,
    /// Back from `schedule()`: woken for new work.
    Woken,
}

/// The stopper thread body in progress.
#[derive(Debug, Clone, Copy, Default)]
pub struct Stopper {
    pub at: StopperAt,
}

/// The saved stack of a stopper asleep in `schedule()` (its state at boot).
pub fn stopper_initial_stack() -> Vec<Frame> {
    vec![
        Frame::Stopper(Stopper { at: StopperAt::Woken }),
        Frame::ScheduleCaller(ScheduleCaller::asleep_in_schedule()),
        Frame::Schedule(super::sched::core::Schedule::switched_out()),
    ]
}

/// Models `stop_one_cpu_nowait()` -> `cpu_stop_queue_work()` — kernel/stop_machine.c @ v6.10,
/// run by `cpu`: queue `work` on `target`'s stopper and wake it (a stop-class task preempts
/// anything). Returns the cost, or `None` if work is already queued there.
pub fn stop_one_cpu_nowait(k: &mut Kernel, cpu: CpuId, target: CpuId, work: StopWork) -> Option<crate::sim::Time> {
    if k.cpus[target as usize].rq.stop_work.is_some() {
        return None;
    }
    k.cpus[target as usize].rq.stop_work = Some(work);
    let stopper = k.cpus[target as usize].rq.stopper;
    let mut c = k.costs.ttwu;
    if k.tasks[stopper as usize].state != TASK_RUNNING && !k.tasks[stopper as usize].on_rq {
        let (pid, prio) = (k.tasks[stopper as usize].pid, k.tasks[stopper as usize].prio);
        k.tp(cpu, crate::trace::Event::SchedWaking { pid, prio, target_cpu: target });
        // The stopper is pinned and not a fair task: a direct enqueue (wake_up_q ->
        // try_to_wake_up; the model skips the wakelist for it: activate_task() into the stop
        // class, `add_nr_running()` setting the overload flag whatever the class) and a
        // preemption.
        k.tasks[stopper as usize].state = TASK_RUNNING;
        let flags = super::sched::fair_class::EnqueueFlags { wakeup: true, migrated: false, initial: false };
        c += super::sched::core::activate_task(k, cpu, target, stopper, flags).1;
        k.tp(cpu, crate::trace::Event::SchedWakeup { pid, prio, target_cpu: target });
        let line = k.cpus[target as usize].rq.lock_line;
        c += k.line_write(cpu, line);
        c += super::sched::core::resched_curr(k, cpu, target, crate::trace::Sym::ReschedCurr);
    }
    Some(c)
}

/// Models the stopper thread (`smpboot_thread_fn` -> `cpu_stopper_thread()`) — kernel/
/// stop_machine.c @ v6.10: run queued work, then sleep.
pub fn cpu_stopper_thread(k: &mut Kernel, cpu: CpuId, s: &mut Stopper) -> Next {
    let me = k.curr(cpu) as usize;
    if s.at == StopperAt::Woken {
        s.at = StopperAt::RunWork;
        return Next::Cont(0);
    }
    if let Some(work) = k.cpus[cpu as usize].rq.stop_work.take() {
        let c = match work {
            StopWork::ActiveLoadBalance { push_cpu } => {
                super::sched::fair::active_load_balance_cpu_stop(k, cpu, push_cpu)
            }
            StopWork::SoftlockupFn { src } => super::watchdog::softlockup_fn(k, cpu, src),
            StopWork::MigrationCpuStop { p, dest } => super::sched::syscalls::migration_cpu_stop(k, cpu, p, dest),
        };
        return Next::Cont(c);
    }
    // Nothing queued: sleep (the stop class dequeues it in __schedule()).
    k.tasks[me].state = TASK_INTERRUPTIBLE;
    s.at = StopperAt::Woken;
    Next::Call(0, Frame::ScheduleCaller(ScheduleCaller::schedule()))
}
