//! Models the wait-queue primitives of `kernel/sched/wait.c` and `include/linux/wait.h` @ v6.10
//! that the IPC objects (pipes, AF_UNIX sockets, `poll()`, child-exit waits) sleep on.
//!
//! Kept outside `kernel/sched/` because that directory belongs to the scheduler proper; the
//! functions here only queue tasks and call `try_to_wake_up()`.
//!
//! - `add_wait_queue()` / `prepare_to_wait()` queue a non-exclusive entry at the head;
//!   `prepare_to_wait_exclusive()` (and `wait_event_*_exclusive`) queue at the tail.
//! - `__wake_up_common()` walks the queue from the head, wakes every non-exclusive entry and
//!   stops after `nr_exclusive` exclusive ones were woken. `autoremove_wake_function()`
//!   dequeues an entry it woke; `pollwake()` leaves it queued (until `poll_freewait()`) and
//!   skips entries whose poll mask does not intersect the key.
//!
//! A task still descheduling on another CPU is handled by `try_to_wake_up()` itself (it waits
//! for `p->on_cpu` when the wakelist cannot take the wakeup).
//!
//! The kernel holds the queue's spinlock (IRQs off) for the whole walk, so no entry can join
//! or leave during it. The model walks one wakeup per step; entries queued after the walk
//! started are not visited (their queueing would have waited for the lock), and each walk has
//! an id so an entry is visited at most once.

use super::sched::core::TryToWakeUp;
use super::sched::{TASK_INTERRUPTIBLE, TASK_RUNNING};
use crate::hw::cacheline::LineId;
use crate::linux::engine::{local_irq_disable, local_irq_enable, Frame, Next};
use crate::linux::{CpuId, Kernel, TaskId};
use crate::sim::Time;
use std::collections::VecDeque;

/// Index of a wait queue head in [`crate::linux::fs::Ipc::wqs`].
pub type WqId = u32;

// Poll event bits (include/uapi/asm-generic/poll.h).
pub const EPOLLIN: u32 = 0x001;
pub const EPOLLPRI: u32 = 0x002;
pub const EPOLLOUT: u32 = 0x004;
pub const EPOLLERR: u32 = 0x008;
pub const EPOLLHUP: u32 = 0x010;
pub const EPOLLRDNORM: u32 = 0x040;
pub const EPOLLRDBAND: u32 = 0x080;
pub const EPOLLWRNORM: u32 = 0x100;
pub const EPOLLWRBAND: u32 = 0x200;

/// The wake function of an entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WakeFn {
    /// `autoremove_wake_function()` (DEFINE_WAIT, `wait_event*()`): dequeued when it wakes.
    Autoremove,
    /// `pollwake()` for a `poll()` table entry interested in `events`.
    Poll { events: u32 },
    /// `child_wait_callback()` of `do_wait()` (any child is eligible).
    ChildWait,
}

/// A `wait_queue_entry`.
#[derive(Debug, Clone, Copy)]
pub struct WaitEntry {
    pub task: TaskId,
    /// WQ_FLAG_EXCLUSIVE.
    pub exclusive: bool,
    pub func: WakeFn,
    /// Queueing order stamp (walks only visit entries older than themselves).
    pub seq: u64,
    /// The last walk that visited this entry.
    pub walk: u32,
}

/// A `wait_queue_head`: its entries from head to tail, and the line holding its lock.
#[derive(Debug, Clone)]
pub struct WaitQueueHead {
    pub entries: VecDeque<WaitEntry>,
    pub line: LineId,
}

/// Cost of `__wake_up_common_lock()` around the walk: irqsave, the lock, the unlock (ns;
/// the line transfer is charged separately).
pub const WAKE_UP_LOCK_NS: Time = 20;
/// Cost of calling one entry's wake function before `try_to_wake_up()` (ns).
pub const WAKE_ENTRY_NS: Time = 5;

/// Allocate a wait queue head whose lock line is homed on `cpu`.
pub fn init_waitqueue_head(k: &mut Kernel, cpu: CpuId) -> WqId {
    let line = k.lines.alloc(cpu);
    k.ipc.wqs.push(WaitQueueHead { entries: VecDeque::new(), line });
    (k.ipc.wqs.len() - 1) as WqId
}

fn new_entry(k: &mut Kernel, task: TaskId, exclusive: bool, func: WakeFn) -> WaitEntry {
    k.ipc.wq_seq += 1;
    WaitEntry { task, exclusive, func, seq: k.ipc.wq_seq, walk: 0 }
}

/// Is `task` queued on `wq`?
pub fn is_queued(k: &Kernel, wq: WqId, task: TaskId) -> bool {
    k.ipc.wqs[wq as usize].entries.iter().any(|e| e.task == task)
}

/// `waitqueue_active()` / `wq_has_sleeper()`.
pub fn waitqueue_active(k: &Kernel, wq: WqId) -> bool {
    !k.ipc.wqs[wq as usize].entries.is_empty()
}

/// `add_wait_queue()`: a non-exclusive entry at the head (used by `poll_wait()` and
/// `do_wait()`).
pub fn add_wait_queue(k: &mut Kernel, wq: WqId, task: TaskId, func: WakeFn) {
    let e = new_entry(k, task, false, func);
    k.ipc.wqs[wq as usize].entries.push_front(e);
}

/// `remove_wait_queue()` / the list_del of `finish_wait()`.
pub fn remove_wait_queue(k: &mut Kernel, wq: WqId, task: TaskId) {
    k.ipc.wqs[wq as usize].entries.retain(|e| e.task != task);
}

/// `prepare_to_wait()` / `prepare_to_wait_exclusive()` / `prepare_to_wait_event()`: queue the
/// task unless it still is (non-exclusive at the head, exclusive at the tail), and set
/// TASK_INTERRUPTIBLE. The caller re-checks its condition, then schedules or calls
/// [`finish_wait`].
pub fn prepare_to_wait(k: &mut Kernel, wq: WqId, task: TaskId, exclusive: bool) {
    if !is_queued(k, wq, task) {
        let e = new_entry(k, task, exclusive, WakeFn::Autoremove);
        let q = &mut k.ipc.wqs[wq as usize].entries;
        if exclusive {
            q.push_back(e);
        } else {
            q.push_front(e);
        }
    }
    k.tasks[task as usize].state = TASK_INTERRUPTIBLE;
}

/// `finish_wait()`: TASK_RUNNING and off the queue.
pub fn finish_wait(k: &mut Kernel, wq: WqId, task: TaskId) {
    k.tasks[task as usize].state = TASK_RUNNING;
    remove_wait_queue(k, wq, task);
}

/// A `__wake_up_common_lock()` in progress.
#[derive(Debug, Clone, Copy)]
pub struct WakeUp {
    pub wq: WqId,
    /// The poll key (0: none).
    pub key: u32,
    pub nr_exclusive: u32,
    pub wake_flags: u32,
    pub at: u8,
    pub irqs_were_on: bool,
    pub walk: u32,
    pub start_seq: u64,
    /// Walk time not yet charged (charged after the wakeup it preceded).
    pub carry: u32,
}

/// No task.
pub const NO_TASK: TaskId = TaskId::MAX;

impl WakeUp {
    /// `__wake_up_common_lock(wq, TASK_INTERRUPTIBLE, nr_exclusive, wake_flags, key)`
    /// (`nr_exclusive` >= 1).
    pub fn frame(wq: WqId, key: u32, nr_exclusive: u32, wake_flags: u32) -> Frame {
        Frame::WakeUp(WakeUp {
            wq,
            key,
            nr_exclusive,
            wake_flags,
            at: 0,
            irqs_were_on: false,
            walk: 0,
            start_seq: 0,
            carry: 0,
        })
    }
}

/// `wake_up_interruptible_sync_poll(wq, key)`: one exclusive waiter, WF_SYNC.
pub fn wake_up_interruptible_sync_poll(wq: WqId, key: u32) -> Frame {
    WakeUp::frame(wq, key, 1, crate::linux::kernel::sched::WF_SYNC)
}

/// A wakeup the model performed through a wait queue (kept for tests and reports; the first
/// [`WAKE_LOG_LIMIT`] of a run).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WakeRecord {
    pub at: Time,
    pub waker_cpu: CpuId,
    pub waker: TaskId,
    pub wakee: TaskId,
    pub wq: WqId,
    pub wake_flags: u32,
}

/// How many wakeups [`WakeRecord`]s keep.
pub const WAKE_LOG_LIMIT: usize = 4096;

/// Models `__wake_up_common_lock()` + `__wake_up_common()` — kernel/sched/wait.c @ v6.10.
///
/// Context: any; the queue lock is taken with IRQs saved. A wake function's return value is
/// `ttwu_state_match()`: whether the task was still sleeping interruptibly.
pub fn wake_up(k: &mut Kernel, cpu: CpuId, s: &mut WakeUp) -> Next {
    match s.at {
        0 => {
            s.irqs_were_on = !k.cpus[cpu as usize].x.irqs_off;
            local_irq_disable(k, cpu);
            let line = k.ipc.wqs[s.wq as usize].line;
            let c = k.line_write(cpu, line) + WAKE_UP_LOCK_NS;
            k.ipc.wq_walks += 1;
            s.walk = k.ipc.wq_walks;
            s.start_seq = k.ipc.wq_seq + 1;
            s.at = 1;
            Next::Cont(c)
        }
        _ => {
            let mut c = std::mem::take(&mut s.carry) as Time;
            while s.nr_exclusive > 0 {
                let q = &mut k.ipc.wqs[s.wq as usize].entries;
                let Some(i) = q.iter().position(|e| e.seq < s.start_seq && e.walk != s.walk) else { break };
                q[i].walk = s.walk;
                let e = q[i];
                c += WAKE_ENTRY_NS;
                if let WakeFn::Poll { events } = e.func {
                    if s.key != 0 && s.key & events == 0 {
                        continue;
                    }
                }
                let woken = k.tasks[e.task as usize].state & TASK_INTERRUPTIBLE != 0;
                if !woken {
                    continue;
                }
                if e.func == WakeFn::Autoremove {
                    k.ipc.wqs[s.wq as usize].entries.remove(i);
                }
                if e.exclusive {
                    s.nr_exclusive -= 1;
                }
                k.ipc.wakeups += 1;
                if s.wake_flags & crate::linux::kernel::sched::WF_SYNC != 0 {
                    k.ipc.sync_wakeups += 1;
                }
                if k.ipc.wake_log.len() < WAKE_LOG_LIMIT {
                    let waker = k.curr(cpu);
                    k.ipc.wake_log.push(WakeRecord {
                        at: k.now,
                        waker_cpu: cpu,
                        waker,
                        wakee: e.task,
                        wq: s.wq,
                        wake_flags: s.wake_flags,
                    });
                }
                // try_to_wake_up() starts at this instant: its state check (and TASK_WAKING)
                // is atomic with ours, so a concurrent walker on another CPU cannot wake the
                // same task twice. The walk's time is charged after it.
                s.carry = c as u32;
                return Next::Call(0, Frame::TryToWakeUp(TryToWakeUp::new(e.task, s.wake_flags)));
            }
            if s.irqs_were_on {
                local_irq_enable(k, cpu);
            }
            Next::Ret(c)
        }
    }
}
