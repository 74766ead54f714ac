//! Models the futex wait/wake paths of `kernel/futex/waitwake.c` @ v6.10, and the sleep path
//! of `kernel/time/hrtimer.c` (`hrtimer_nanosleep()` / `do_nanosleep()`), as syscalls made by
//! user tasks.
//!
//! Simplifications: one hash bucket per futex word (no hash collisions), no PI futexes, no
//! timeouts on futex_wait, no signals.

use super::sched::core::{ScheduleCaller, TryToWakeUp};
use super::sched::{TASK_INTERRUPTIBLE, TASK_RUNNING};
use super::time::tick_sched::hrtimer_start_sleeper;
use crate::hw::cacheline::LineId;
use crate::linux::engine::{Frame, Next};
use crate::linux::{CpuId, Kernel, TaskId};
use crate::sim::Time;
use std::collections::VecDeque;

/// A futex word in user memory and its hash bucket's waiter queue.
#[derive(Debug, Clone)]
pub struct Futex {
    /// The 32-bit value at the user address.
    pub val: i64,
    /// Tasks queued in `futex_wait()`, in queueing order (`futex_q` plist, equal priorities).
    pub waiters: VecDeque<TaskId>,
    /// The line holding the futex word and the bucket lock.
    pub line: LineId,
}

/// Index of a futex in [`Kernel::futexes`].
pub type FutexId = u32;

/// Allocate a futex word with an initial value, homed on `cpu`.
pub fn futex_alloc(k: &mut Kernel, cpu: CpuId, val: i64) -> FutexId {
    let line = k.lines.alloc(cpu);
    k.futexes.push(Futex { val, waiters: VecDeque::new(), line });
    (k.futexes.len() - 1) as FutexId
}

/// Futex syscall resume points, in code order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FutexAt {
    /// Syscall entry: lock the hash bucket and read the word (FUTEX_WAIT queues and sleeps).
    Enter,
    /// FUTEX_WAIT: back from `schedule()`; FUTEX_WAKE: wake the next queued waiter.
    BucketDone,
}

/// A futex syscall in progress.
#[derive(Debug, Clone, Copy)]
pub struct FutexOp {
    pub futex: FutexId,
    pub op: FutexCmd,
    pub at: FutexAt,
    pub woken: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FutexCmd {
    /// FUTEX_WAIT: sleep if the word still holds this value.
    Wait { val: i64 },
    /// FUTEX_WAKE: wake up to this many waiters.
    Wake { nr: u32 },
}

impl FutexOp {
    pub fn wait(futex: FutexId, val: i64) -> Frame {
        Frame::Futex(FutexOp { futex, op: FutexCmd::Wait { val }, at: FutexAt::Enter, woken: 0 })
    }
    pub fn wake(futex: FutexId, nr: u32) -> Frame {
        Frame::Futex(FutexOp { futex, op: FutexCmd::Wake { nr }, at: FutexAt::Enter, woken: 0 })
    }
}

/// Models `futex_wait()` and `futex_wake()` — kernel/futex/waitwake.c @ v6.10, entered from
/// the `futex` syscall. The return value (0, -EAGAIN, or the number woken) is left in the
/// CPU's return register.
///
/// Context: task; the waker wakes each waiter with `try_to_wake_up()` (via the wake_q).
pub fn futex(k: &mut Kernel, cpu: CpuId, s: &mut FutexOp) -> Next {
    let me = k.curr(cpu);
    match (s.op, s.at) {
        (FutexCmd::Wait { val }, FutexAt::Enter) => {
            // futex_wait_setup(): lock the bucket, re-read the word.
            let line = k.futexes[s.futex as usize].line;
            let c = k.costs.syscall + k.costs.futex + k.line_write(cpu, line);
            if k.futexes[s.futex as usize].val != val {
                k.cpus[cpu as usize].x.ret = -11; // -EAGAIN
                return Next::Ret(c);
            }
            // futex_wait_queue(): queue, TASK_INTERRUPTIBLE, unlock, schedule().
            k.futexes[s.futex as usize].waiters.push_back(me);
            k.tasks[me as usize].state = TASK_INTERRUPTIBLE;
            s.at = FutexAt::BucketDone;
            Next::Call(c, Frame::ScheduleCaller(ScheduleCaller::schedule()))
        }
        (FutexCmd::Wait { .. }, FutexAt::BucketDone) => {
            // Woken (the waker unqueued us), or the wakeup raced the sleep and we never slept.
            k.futexes[s.futex as usize].waiters.retain(|&t| t != me);
            k.tasks[me as usize].state = TASK_RUNNING;
            k.cpus[cpu as usize].x.ret = 0;
            Next::Ret(k.costs.syscall)
        }
        (FutexCmd::Wake { nr }, FutexAt::Enter) => {
            let line = k.futexes[s.futex as usize].line;
            let c = k.costs.syscall + k.costs.futex + k.line_write(cpu, line);
            s.at = FutexAt::BucketDone;
            let _ = nr;
            Next::Cont(c)
        }
        (FutexCmd::Wake { nr }, FutexAt::BucketDone) => {
            if s.woken < nr {
                if let Some(w) = k.futexes[s.futex as usize].waiters.pop_front() {
                    s.woken += 1;
                    return Next::Call(0, Frame::TryToWakeUp(TryToWakeUp::new(w, 0)));
                }
            }
            k.cpus[cpu as usize].x.ret = s.woken as i64;
            Next::Ret(k.costs.syscall)
        }
    }
}

/// An `hrtimer_nanosleep()` in progress.
#[derive(Debug, Clone, Copy)]
pub struct Nanosleep {
    /// Requested sleep (relative), and the range slack.
    pub ns: Time,
    pub slack_ns: Time,
    /// Entered through a syscall (user task) rather than from a kernel thread.
    pub from_user: bool,
    /// `ns` is an absolute CLOCK_MONOTONIC expiry (`clock_nanosleep(TIMER_ABSTIME)`).
    pub abs: bool,
    pub at: NanosleepAt,
}

/// `do_nanosleep()` resume points, in code order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NanosleepAt {
    /// Arm the sleeper hrtimer and `schedule()`.
    Arm,
    /// Back from `schedule()`: the timer fired.
    Woken,
}

impl Nanosleep {
    /// `nanosleep()`/`clock_nanosleep()` from a SCHED_NORMAL task: the task's timer slack
    /// (default 50 us) widens the expiry range.
    pub fn with_timer_slack(ns: Time) -> Frame {
        Frame::Nanosleep(Nanosleep {
            ns,
            slack_ns: DEFAULT_TIMER_SLACK_NS,
            from_user: true,
            abs: false,
            at: NanosleepAt::Arm,
        })
    }
    /// `usleep_range(min, max)` from a kernel thread: an explicit range.
    pub fn range(min_ns: Time, max_ns: Time) -> Frame {
        Frame::Nanosleep(Nanosleep {
            ns: min_ns,
            slack_ns: max_ns.saturating_sub(min_ns),
            from_user: false,
            abs: false,
            at: NanosleepAt::Arm,
        })
    }
    /// `clock_nanosleep(CLOCK_MONOTONIC, flags, t)` from a user task: relative, or absolute
    /// with TIMER_ABSTIME (`t` is then the expiry). `hrtimer_nanosleep()` uses no slack for an
    /// RT task (`rt_task(current)`), the default timer slack otherwise.
    pub fn clock_nanosleep(t: Time, abs: bool, rt: bool) -> Frame {
        let slack_ns = if rt { 0 } else { DEFAULT_TIMER_SLACK_NS };
        Frame::Nanosleep(Nanosleep { ns: t, slack_ns, from_user: true, abs, at: NanosleepAt::Arm })
    }
}

/// `current->timer_slack_ns` default (`init_task.timer_slack_ns`), 50 us.
pub const DEFAULT_TIMER_SLACK_NS: Time = 50_000;

/// Models `hrtimer_nanosleep()` -> `do_nanosleep()` — kernel/time/hrtimer.c @ v6.10: arm a
/// sleeper hrtimer with range [t, t + slack] on this CPU, sleep, return when it fires. The
/// timer fires at the first timer interrupt after its soft expiry, at the latest at the hard
/// expiry.
pub fn nanosleep(k: &mut Kernel, cpu: CpuId, s: &mut Nanosleep) -> Next {
    let me = k.curr(cpu);
    let sc = if s.from_user { k.costs.syscall } else { 0 };
    if s.at == NanosleepAt::Arm {
        // HRTIMER_MODE_ABS: an expiry already past fires at once (the timer interrupt is
        // programmed for now).
        let soft = if s.abs { s.ns } else { k.now + s.ns };
        k.tasks[me as usize].state = TASK_INTERRUPTIBLE;
        hrtimer_start_sleeper(k, cpu, soft, soft + s.slack_ns, me);
        s.at = NanosleepAt::Woken;
        return Next::Call(sc + k.costs.hrtimer_start, Frame::ScheduleCaller(ScheduleCaller::schedule()));
    }
    k.tasks[me as usize].state = TASK_RUNNING;
    Next::Ret(sc)
}
