//! The bodies of the background tasks that are not kworkers: periodic kernel threads
//! (`kthread`, e.g. `rcu_preempt` waiting in `schedule_timeout_idle()`) and user daemons
//! (`daemon`, sleeping in `nanosleep()`). Each loops: sleep for the source's next interval,
//! then run for a draw of its run-time distribution. A kernel thread sleeps on a timer-wheel
//! timer (`process_timeout()`), so an idle CPU wakes for it at a jiffy boundary; a daemon
//! sleeps on an hrtimer with the default 50 us timer slack, and runs its share in user mode,
//! where a return from interrupt may preempt it. A pinned hog (`pinned-hog`) is a daemon that,
//! once its first timer has woken it, runs user code for ever (one run-time draw after another).
//!
//! Like the workloads, these tasks reach the kernel only through its entry points
//! (`schedule_timeout`, `nanosleep`, `cond_resched`, `schedule`).

use crate::background::Kind;
use crate::linux::engine::{Frame, Next};
use crate::linux::kernel::futex::Nanosleep;
use crate::linux::kernel::sched::core::ScheduleCaller;
use crate::linux::kernel::sched::{TASK_IDLE, TASK_RUNNING};
use crate::linux::kernel::time::timer::{add_timer_on, TimerFn};
use crate::linux::{CpuId, Kernel};
use crate::sim::Time;

/// Where a background task resumes, in code order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum BgTaskAt {
    /// Draw the next interval and sleep for it.
    #[default]
    Sleep,
    /// Woken: run for a draw of the run-time distribution.
    Run,
    /// The run is over: a kernel thread passes `cond_resched()`, then sleeps again.
    CondResched,
}

/// A background task's own code in progress.
#[derive(Debug, Clone, Copy, Default)]
pub struct BgTask {
    pub at: BgTaskAt,
    /// The background source this task runs.
    pub src: u16,
    /// In user mode for the current step (daemons): a return from interrupt may preempt.
    pub user: bool,
    /// A return to user mode found NEED_RESCHED: schedule before going on.
    pub preempt: bool,
    /// User time still to run of the step an interrupt preempted.
    pub remaining: Time,
}

/// The saved stack of a background task asleep at boot (its first wakeup is already armed).
pub fn initial_stack(kind: Kind, src: u16) -> Vec<Frame> {
    let mut v = vec![Frame::Background(BgTask { at: BgTaskAt::Run, src, ..Default::default() })];
    if matches!(kind, Kind::Daemon | Kind::PinnedHog) {
        v.push(Frame::Nanosleep(Nanosleep {
            ns: 0,
            slack_ns: 0,
            from_user: true,
            abs: false,
            at: crate::linux::kernel::futex::NanosleepAt::Woken,
        }));
    }
    v.push(Frame::ScheduleCaller(ScheduleCaller::asleep_in_schedule()));
    v.push(Frame::Schedule(crate::linux::kernel::sched::core::Schedule::switched_out()));
    v
}

/// Run one step of a background task.
pub fn task_step(k: &mut Kernel, cpu: CpuId, s: &mut BgTask) -> Next {
    if s.preempt {
        s.preempt = false;
        s.user = false;
        return Next::Call(0, Frame::ScheduleCaller(ScheduleCaller::schedule()));
    }
    if s.remaining > 0 {
        s.user = true;
        return Next::Cont(std::mem::take(&mut s.remaining));
    }
    s.user = false;
    let me = k.curr(cpu);
    let src = &k.cfg.background.sources[s.src as usize];
    let kind = src.kind;
    match s.at {
        BgTaskAt::Sleep => {
            let next = src.next_interval(&mut k.cpus[cpu as usize].bg_rng);
            s.at = BgTaskAt::Run;
            if kind == Kind::Daemon {
                return Next::Call(0, Nanosleep::with_timer_slack(next));
            }
            // schedule_timeout_idle(): a timer-wheel timer wakes us (process_timeout()).
            k.tasks[me as usize].state = TASK_IDLE;
            add_timer_on(k, cpu, next, false, TimerFn::ProcessTimeout(me), s.src);
            Next::Call(k.costs.hrtimer_start, Frame::ScheduleCaller(ScheduleCaller::schedule()))
        }
        BgTaskAt::Run => {
            k.tasks[me as usize].state = TASK_RUNNING;
            let run = src.runtime.draw(&mut k.cpus[cpu as usize].bg_rng);
            // A pinned hog never sleeps again: one user-mode stretch after another.
            s.at = if kind == Kind::PinnedHog { BgTaskAt::Run } else { BgTaskAt::CondResched };
            s.user = matches!(kind, Kind::Daemon | Kind::PinnedHog);
            Next::Cont(run)
        }
        BgTaskAt::CondResched => {
            s.at = BgTaskAt::Sleep;
            if kind == Kind::Kthread {
                if let Some(f) = crate::linux::kernel::sched::core::cond_resched(k, cpu) {
                    return Next::Call(k.costs.cond_resched, f);
                }
            }
            Next::Cont(0)
        }
    }
}
