//! The periodic kernel threads of a machine's background profile (`kind = "kthread"` sources of
//! `linux::background`, e.g. `rcu_preempt`): each loops as such a thread does, sleeping in
//! `schedule_timeout_idle()` (a timer-wheel timer, `process_timeout()`, so an idle CPU wakes
//! for it at a jiffy boundary), then running for a draw of its source's run-time distribution,
//! then passing `cond_resched()`. Simulator bookkeeping around kernel mechanisms: the thread's
//! body is data (its source), its sleep and wakeup are the kernel's own paths.

use crate::linux::engine::{Frame, Next};
use crate::linux::kernel::sched::core::{Schedule, ScheduleCaller};
use crate::linux::kernel::sched::{TaskKind, TASK_IDLE, TASK_RUNNING};
use crate::linux::kernel::time::timer::{add_timer_on, TimerFn};
use crate::linux::{CpuId, Kernel, TaskId};
use crate::sim::Time;

/// Where a periodic kernel thread resumes, in code order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum KthreadAt {
    /// Draw the next interval and sleep for it.
    #[default]
    Sleep,
    /// Woken: run for a draw of the run-time distribution.
    Run,
    /// The run is over: pass `cond_resched()`, then sleep again.
    CondResched,
}

/// A periodic kernel thread's own code in progress.
#[derive(Debug, Clone, Copy, Default)]
pub struct PeriodicKthread {
    pub at: KthreadAt,
    /// The background source this thread runs.
    pub src: u16,
}

/// `kthread_create_on_cpu()` (or unbound `kthread_create()`) of a thread that has been
/// running since boot and is asleep in `schedule_timeout_idle()` until `phase`: its saved stack
/// resumes in its body's run, and its `process_timeout()` timer is armed on `cpu`.
pub fn kthread_create_asleep(k: &mut Kernel, comm: String, pinned: Option<CpuId>, cpu: CpuId, src: u16, phase: Time) {
    let t = k.new_task(TaskKind::Kthread, comm, 0, 120, pinned);
    let task = &mut k.tasks[t as usize];
    task.state = TASK_IDLE;
    task.cpu = cpu;
    task.saved = vec![
        Frame::Kthread(PeriodicKthread { at: KthreadAt::Run, src }),
        Frame::ScheduleCaller(ScheduleCaller::asleep_in_schedule()),
        Frame::Schedule(Schedule::switched_out()),
    ];
    add_timer_on(k, cpu, phase, false, TimerFn::ProcessTimeout(t), src);
}

/// One step of a periodic kernel thread.
pub fn periodic_kthread(k: &mut Kernel, cpu: CpuId, s: &mut PeriodicKthread) -> Next {
    let me: TaskId = k.curr(cpu);
    let src = &k.cfg.background.sources[s.src as usize];
    match s.at {
        KthreadAt::Sleep => {
            let next = src.next_interval(&mut k.cpus[cpu as usize].bg_rng);
            s.at = KthreadAt::Run;
            // schedule_timeout_idle(): a timer-wheel timer wakes us (process_timeout()).
            k.tasks[me as usize].state = TASK_IDLE;
            add_timer_on(k, cpu, next, false, TimerFn::ProcessTimeout(me), s.src);
            Next::Call(k.costs.hrtimer_start, Frame::ScheduleCaller(ScheduleCaller::schedule()))
        }
        KthreadAt::Run => {
            k.tasks[me as usize].state = TASK_RUNNING;
            let run = src.runtime.draw(&mut k.cpus[cpu as usize].bg_rng);
            s.at = KthreadAt::CondResched;
            Next::Cont(run)
        }
        KthreadAt::CondResched => {
            s.at = KthreadAt::Sleep;
            if let Some(f) = crate::linux::kernel::sched::core::cond_resched(k, cpu) {
                return Next::Call(k.costs.cond_resched, f);
            }
            Next::Cont(0)
        }
    }
}
