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
use crate::linux::engine::{local_irq_disable, local_irq_enable, notify, Frame, Next, WaitOn};
use crate::linux::{CpuId, Kernel, TaskId};
use crate::sim::Time;

/// Index of a wait queue head in [`crate::linux::fs::Ipc::wqs`].
pub type WqId = u32;

/// No entry (the end of a list).
const NIL: u32 = u32::MAX;

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

/// A `wait_queue_entry`, linked into its queue (`entry.prev/next`, the kernel's `list_head`)
/// and into its task's chain of entries (so `is_queued()`/`remove_wait_queue()` look only at
/// the task's own few entries).
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
    wq: WqId,
    prev: u32,
    next: u32,
    /// Next entry of the same task (any queue), or the next free slot.
    task_next: u32,
}

/// Where a wake-up walk in progress on a queue resumes: `next` is the first entry it has not
/// examined yet. Valid while every mark on the queue since the walk's own last one is its own
/// (`marks`); otherwise the walk rescans from the head (see [`WaitQueues::walk_next`]).
#[derive(Debug, Clone, Copy)]
struct WalkCursor {
    walk: u32,
    next: u32,
    marks: u64,
}

/// A `wait_queue_head`: its entries from head to tail (a doubly linked list through the
/// entry slab of [`WaitQueues`]), and the line holding its lock.
#[derive(Debug, Clone)]
pub struct WaitQueueHead {
    pub line: LineId,
    head: u32,
    tail: u32,
    len: u32,
    /// Entries marked by any walk so far (walk cursors compare it with their own count).
    marks: u64,
    /// The walks in progress on this queue (at most one in a run: `wake_up()` holds the
    /// queue's lock for its walk).
    walks: Vec<WalkCursor>,
    /// `wq_head->lock`: the CPU holding it for a wake-up walk ([`NO_CPU`]: free), and the CPUs
    /// spinning for it in arrival order (a queued spinlock hands it to the first).
    lock_owner: CpuId,
    lock_waiters: Vec<CpuId>,
}

/// No CPU holds a wait queue's lock.
const NO_CPU: CpuId = CpuId::MAX;

impl WaitQueueHead {
    /// No entry queued (`!waitqueue_active()`).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Number of queued entries.
    pub fn len(&self) -> usize {
        self.len as usize
    }
}

/// Every wait queue head of a run and the slab their entries live in: O(1) queueing at either
/// end, O(1) unlinking, per-task chains for the lookups by task, and a resumable cursor per
/// wake-up walk, so no operation scans a queue from its head (the walk only after another
/// walk marked entries of the same queue meanwhile).
#[derive(Debug, Clone, Default)]
pub struct WaitQueues {
    heads: Vec<WaitQueueHead>,
    slab: Vec<WaitEntry>,
    /// First free slab slot (chained through `task_next`).
    free: Option<u32>,
    /// Per task id, its first entry (NIL: none).
    by_task: Vec<u32>,
}

impl std::ops::Index<usize> for WaitQueues {
    type Output = WaitQueueHead;
    fn index(&self, i: usize) -> &WaitQueueHead {
        &self.heads[i]
    }
}

impl WaitQueues {
    /// A new empty queue whose lock lives on `line`.
    pub fn push_head(&mut self, line: LineId) -> WqId {
        self.heads.push(WaitQueueHead {
            line,
            head: NIL,
            tail: NIL,
            len: 0,
            marks: 0,
            walks: Vec::new(),
            lock_owner: NO_CPU,
            lock_waiters: Vec::new(),
        });
        (self.heads.len() - 1) as WqId
    }

    /// Number of queue heads.
    pub fn len(&self) -> usize {
        self.heads.len()
    }

    /// No queue head exists.
    pub fn is_empty(&self) -> bool {
        self.heads.is_empty()
    }

    /// The queue heads in creation order.
    pub fn iter(&self) -> impl Iterator<Item = &WaitQueueHead> {
        self.heads.iter()
    }

    /// The entries of `wq` from head to tail.
    pub fn entries(&self, wq: WqId) -> impl Iterator<Item = &WaitEntry> + '_ {
        let mut i = self.heads[wq as usize].head;
        std::iter::from_fn(move || {
            if i == NIL {
                return None;
            }
            let e = &self.slab[i as usize];
            i = e.next;
            Some(e)
        })
    }

    /// Queue a new entry at the head (`__add_wait_queue()`) or the tail
    /// (`__add_wait_queue_entry_tail()`).
    pub fn insert(&mut self, wq: WqId, task: TaskId, exclusive: bool, func: WakeFn, seq: u64, at_tail: bool) {
        if self.by_task.len() <= task as usize {
            self.by_task.resize(task as usize + 1, NIL);
        }
        let e = WaitEntry {
            task,
            exclusive,
            func,
            seq,
            walk: 0,
            wq,
            prev: NIL,
            next: NIL,
            task_next: self.by_task[task as usize],
        };
        let i = match self.free {
            Some(i) => {
                let n = self.slab[i as usize].task_next;
                self.free = (n != NIL).then_some(n);
                self.slab[i as usize] = e;
                i
            }
            None => {
                self.slab.push(e);
                (self.slab.len() - 1) as u32
            }
        };
        self.by_task[task as usize] = i;
        let h = &mut self.heads[wq as usize];
        if h.head == NIL {
            h.head = i;
            h.tail = i;
        } else if at_tail {
            self.slab[i as usize].prev = h.tail;
            self.slab[h.tail as usize].next = i;
            h.tail = i;
        } else {
            self.slab[i as usize].next = h.head;
            self.slab[h.head as usize].prev = i;
            h.head = i;
        }
        h.len += 1;
    }

    /// Is `task` queued on `wq`?
    pub fn contains(&self, wq: WqId, task: TaskId) -> bool {
        let mut i = self.by_task.get(task as usize).copied().unwrap_or(NIL);
        while i != NIL {
            let e = &self.slab[i as usize];
            if e.wq == wq {
                return true;
            }
            i = e.task_next;
        }
        false
    }

    /// Take every entry of `task` off `wq`.
    pub fn remove_task(&mut self, wq: WqId, task: TaskId) {
        let mut i = self.by_task.get(task as usize).copied().unwrap_or(NIL);
        while i != NIL {
            let e = self.slab[i as usize];
            if e.wq == wq {
                self.unlink(i);
            }
            i = e.task_next;
        }
    }

    /// Unlink entry `i` from its queue and its task's chain and free its slot. Walk cursors
    /// standing on it move to its successor.
    fn unlink(&mut self, i: u32) {
        let e = self.slab[i as usize];
        let h = &mut self.heads[e.wq as usize];
        if e.prev == NIL {
            h.head = e.next;
        } else {
            self.slab[e.prev as usize].next = e.next;
        }
        if e.next == NIL {
            h.tail = e.prev;
        } else {
            self.slab[e.next as usize].prev = e.prev;
        }
        h.len -= 1;
        for c in h.walks.iter_mut() {
            if c.next == i {
                c.next = e.next;
            }
        }
        // The task's chain is short (one entry per queue the task waits on).
        let head = &mut self.by_task[e.task as usize];
        if *head == i {
            *head = e.task_next;
        } else {
            let mut j = *head;
            while self.slab[j as usize].task_next != i {
                j = self.slab[j as usize].task_next;
            }
            self.slab[j as usize].task_next = e.task_next;
        }
        self.slab[i as usize].task_next = self.free.unwrap_or(NIL);
        self.free = Some(i);
    }

    /// `spin_lock_irqsave(&wq_head->lock)` by `cpu` for a wake-up walk: true if `cpu` holds
    /// the lock now, false if it is queued behind the holder ([`WaitQueues::unlock`] hands it
    /// over).
    pub fn try_lock(&mut self, wq: WqId, cpu: CpuId) -> bool {
        let h = &mut self.heads[wq as usize];
        if h.lock_owner == NO_CPU || h.lock_owner == cpu {
            h.lock_owner = cpu;
            return true;
        }
        if !h.lock_waiters.contains(&cpu) {
            h.lock_waiters.push(cpu);
        }
        false
    }

    /// `spin_unlock_irqrestore(&wq_head->lock)` by its holder `cpu`: the CPU it is handed to,
    /// if one is spinning for it.
    pub fn unlock(&mut self, wq: WqId, cpu: CpuId) -> Option<CpuId> {
        let h = &mut self.heads[wq as usize];
        assert_eq!(h.lock_owner, cpu, "wait queue {wq} unlocked by CPU {cpu}, which does not hold it");
        if h.lock_waiters.is_empty() {
            h.lock_owner = NO_CPU;
            return None;
        }
        let next = h.lock_waiters.remove(0);
        h.lock_owner = next;
        Some(next)
    }

    /// A walk `walk` starts on `wq`.
    pub fn walk_begin(&mut self, wq: WqId, walk: u32) {
        let h = &mut self.heads[wq as usize];
        h.walks.push(WalkCursor { walk, next: h.head, marks: h.marks });
    }

    /// The CPU holding `wq`'s lock, if any.
    pub fn holder(&self, wq: WqId) -> Option<CpuId> {
        let o = self.heads[wq as usize].lock_owner;
        (o != NO_CPU).then_some(o)
    }

    /// A walk of `wq` is in progress.
    pub fn walking(&self, wq: WqId) -> bool {
        !self.heads[wq as usize].walks.is_empty()
    }

    /// The walk `walk` on `wq` has ended.
    pub fn walk_end(&mut self, wq: WqId, walk: u32) {
        let h = &mut self.heads[wq as usize];
        if let Some(p) = h.walks.iter().position(|c| c.walk == walk) {
            h.walks.swap_remove(p);
        }
    }

    /// The next entry the walk `walk` visits: the first from the head that is older than the
    /// walk (`seq < start_seq`) and not yet visited by it. Marks it visited and returns its
    /// slot. Resumes at the walk's cursor: the entries before it were visited by this walk or
    /// are newer than it (entries are only ever queued at either end with a fresh stamp), unless
    /// another walk re-marked some of them, which the queue's mark count reveals; then it
    /// rescans from the head, as a walk restarting from the head would find the same entry.
    pub fn walk_next(&mut self, wq: WqId, walk: u32, start_seq: u64) -> Option<u32> {
        let h = &self.heads[wq as usize];
        let ci = h.walks.iter().position(|c| c.walk == walk);
        let mut i = match ci {
            Some(ci) if h.walks[ci].marks == h.marks => h.walks[ci].next,
            _ => h.head,
        };
        while i != NIL {
            let e = &self.slab[i as usize];
            if e.seq < start_seq && e.walk != walk {
                break;
            }
            i = e.next;
        }
        if cfg!(debug_assertions) {
            let reference = self.entries(wq).position(|e| e.seq < start_seq && e.walk != walk);
            let got = (i != NIL).then(|| self.entries(wq).position(|e| std::ptr::eq(e, &self.slab[i as usize])));
            assert_eq!(got.flatten(), reference, "wait-queue walk cursor disagrees with a scan from the head");
        }
        let h = &mut self.heads[wq as usize];
        let next = if i == NIL { NIL } else { self.slab[i as usize].next };
        if i != NIL {
            self.slab[i as usize].walk = walk;
            h.marks += 1;
        }
        match ci {
            Some(ci) => h.walks[ci] = WalkCursor { walk, next, marks: h.marks },
            None => h.walks.push(WalkCursor { walk, next, marks: h.marks }),
        }
        (i != NIL).then_some(i)
    }

    /// The entry in slot `i`.
    pub fn entry(&self, i: u32) -> &WaitEntry {
        &self.slab[i as usize]
    }

    /// Dequeue the entry in slot `i` (`list_del_init()` of `autoremove_wake_function()`).
    pub fn remove(&mut self, i: u32) {
        self.unlink(i);
    }
}

/// Allocate a wait queue head whose lock line is homed on `cpu`.
pub fn init_waitqueue_head(k: &mut Kernel, cpu: CpuId) -> WqId {
    let line = k.lines.alloc(cpu);
    k.ipc.wqs.push_head(line)
}

fn next_seq(k: &mut Kernel) -> u64 {
    k.ipc.wq_seq += 1;
    k.ipc.wq_seq
}

/// Is `task` queued on `wq`?
pub fn is_queued(k: &Kernel, wq: WqId, task: TaskId) -> bool {
    k.ipc.wqs.contains(wq, task)
}

/// `waitqueue_active()` / `wq_has_sleeper()`.
pub fn waitqueue_active(k: &Kernel, wq: WqId) -> bool {
    !k.ipc.wqs[wq as usize].is_empty()
}

/// `add_wait_queue()`: a non-exclusive entry at the head (used by `poll_wait()` and
/// `do_wait()`).
pub fn add_wait_queue(k: &mut Kernel, wq: WqId, task: TaskId, func: WakeFn) {
    let seq = next_seq(k);
    k.ipc.wqs.insert(wq, task, false, func, seq, false);
}

/// `remove_wait_queue()` / the list_del of `finish_wait()`.
pub fn remove_wait_queue(k: &mut Kernel, wq: WqId, task: TaskId) {
    k.ipc.wqs.remove_task(wq, task);
}

/// `prepare_to_wait()` / `prepare_to_wait_exclusive()` / `prepare_to_wait_event()`: queue the
/// task unless it still is (non-exclusive at the head, exclusive at the tail), and set
/// TASK_INTERRUPTIBLE. The caller re-checks its condition, then schedules or calls
/// [`finish_wait`].
pub fn prepare_to_wait(k: &mut Kernel, wq: WqId, task: TaskId, exclusive: bool) {
    if !is_queued(k, wq, task) {
        let seq = next_seq(k);
        k.ipc.wqs.insert(wq, task, exclusive, WakeFn::Autoremove, seq, exclusive);
    }
    k.tasks[task as usize].state = TASK_INTERRUPTIBLE;
}

/// `finish_wait()`: TASK_RUNNING and off the queue.
pub fn finish_wait(k: &mut Kernel, wq: WqId, task: TaskId) {
    k.tasks[task as usize].state = TASK_RUNNING;
    remove_wait_queue(k, wq, task);
}

/// `__wake_up_common_lock()` resume points, in code order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WakeUpAt {
    /// About to save and disable IRQs, take the queue lock and start the walk.
    Lock,
    /// Spinning for the queue lock (another CPU's walk holds it): taken when handed over.
    Acquire,
    /// Walking the queue (`__wake_up_common()`): the next entry, or back from its
    /// `try_to_wake_up()`; unlock at the end.
    Walk,
    /// Back from the `preempt_schedule()` of the unlock's `preempt_enable()`.
    Done,
}

/// A `__wake_up_common_lock()` in progress.
#[derive(Debug, Clone, Copy)]
pub struct WakeUp {
    pub wq: WqId,
    /// The poll key (0: none).
    pub key: u32,
    pub nr_exclusive: u32,
    pub wake_flags: u32,
    pub at: WakeUpAt,
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
            at: WakeUpAt::Lock,
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
        WakeUpAt::Lock | WakeUpAt::Acquire => {
            if s.at == WakeUpAt::Lock {
                assert_ne!(
                    k.ipc.wqs.holder(s.wq),
                    Some(cpu),
                    "CPU {cpu} takes wait queue {}'s lock, which it holds (a self-deadlock in the kernel)",
                    s.wq
                );
                s.irqs_were_on = !k.cpus[cpu as usize].x.irqs_off;
                local_irq_disable(k, cpu);
                // spin_lock_irqsave() disables preemption too (not on PREEMPT_RT, where the
                // lock is a sleeping one; the model keeps it a spinning one there).
                if !k.cfg.preempt_rt {
                    k.cpus[cpu as usize].preempt_count += 1;
                }
            }
            // The lock is held for the whole walk, the wakeups it makes included: a second
            // waker of the same queue spins until it is handed over, so walks never interleave.
            if !k.ipc.wqs.try_lock(s.wq, cpu) {
                s.at = WakeUpAt::Acquire;
                k.ipc.wq_lock_waits += 1;
                return Next::Wait(WaitOn::Lock);
            }
            debug_assert!(!k.ipc.wqs.walking(s.wq), "two walks of wait queue {} at once", s.wq);
            let line = k.ipc.wqs[s.wq as usize].line;
            let c = k.line_write(cpu, line) + k.costs.wake_up_lock;
            k.ipc.wq_walks += 1;
            s.walk = k.ipc.wq_walks;
            s.start_seq = k.ipc.wq_seq + 1;
            k.ipc.wqs.walk_begin(s.wq, s.walk);
            s.at = WakeUpAt::Walk;
            Next::Cont(c)
        }
        WakeUpAt::Walk => {
            let mut c = std::mem::take(&mut s.carry) as Time;
            while s.nr_exclusive > 0 {
                let Some(i) = k.ipc.wqs.walk_next(s.wq, s.walk, s.start_seq) else { break };
                let e = *k.ipc.wqs.entry(i);
                c += k.costs.wake_entry;
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
                    k.ipc.wqs.remove(i);
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
            k.ipc.wqs.walk_end(s.wq, s.walk);
            // The unlock happens as this last step starts, before the time of the entries it
            // visited (`c`): a spinning waiter gets the lock after `c`, but a CPU that first
            // tries within those few ns finds it free a little early.
            if let Some(w) = k.ipc.wqs.unlock(s.wq, cpu) {
                // The handover, once the rest of the walk (`c`) is done: the lock word's line
                // reaches the spinning CPU.
                let lat = k.m.line_cost(cpu, w);
                let t = k.cpus[cpu as usize].rng.range(lat.lo_ns, lat.hi_ns);
                notify(k, w, c + t);
            }
            if s.irqs_were_on {
                local_irq_enable(k, cpu);
            }
            if !k.cfg.preempt_rt {
                if let Some(f) = crate::linux::kernel::sched::core::preempt_enable(k, cpu) {
                    s.at = WakeUpAt::Done;
                    return Next::Call(c, f);
                }
            }
            Next::Ret(c)
        }
        WakeUpAt::Done => Next::Ret(0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::VecDeque;

    /// The reference model: the queues as plain `VecDeque`s scanned from the head, as
    /// before the slab (what `walk_next` must agree with, walk for walk).
    #[derive(Default)]
    struct Reference {
        qs: Vec<VecDeque<(TaskId, u64, u32)>>,
    }

    impl Reference {
        fn walk_next(&mut self, wq: usize, walk: u32, start_seq: u64) -> Option<(TaskId, u64)> {
            let q = &mut self.qs[wq];
            let i = q.iter().position(|e| e.1 < start_seq && e.2 != walk)?;
            q[i].2 = walk;
            Some((q[i].0, q[i].1))
        }
    }

    #[derive(Debug, Clone)]
    enum Op {
        Add {
            wq: usize,
            task: TaskId,
            tail: bool,
        },
        Remove {
            wq: usize,
            task: TaskId,
        },
        Begin {
            wq: usize,
        },
        /// Advance the `n`-th walk in progress; `take`: dequeue the entry it visits.
        Step {
            n: usize,
            take: bool,
        },
    }

    fn op() -> impl proptest::strategy::Strategy<Value = Op> {
        use proptest::prelude::*;
        prop_oneof![
            3 => (0..3usize, 0..12u32, any::<bool>()).prop_map(|(wq, task, tail)| Op::Add { wq, task, tail }),
            2 => (0..3usize, 0..12u32).prop_map(|(wq, task)| Op::Remove { wq, task }),
            1 => (0..3usize).prop_map(|wq| Op::Begin { wq }),
            4 => (0..4usize, any::<bool>()).prop_map(|(n, take)| Op::Step { n, take }),
        ]
    }

    proptest::proptest! {
        /// Any interleaving of queueing at either end, removal by task, and several walks on
        /// the same queues (some dequeuing what they visit) visits the same entries in the
        /// same order as scanning a `VecDeque` from the head each time.
        #[test]
        fn walks_agree_with_a_scan_from_the_head(ops in proptest::collection::vec(op(), 1..200)) {
            let mut wqs = WaitQueues::default();
            let mut r = Reference::default();
            for _ in 0..3 {
                wqs.push_head(0);
                r.qs.push(VecDeque::new());
            }
            let mut seq = 0u64;
            let mut walk_ids = 0u32;
            let mut walks: Vec<(usize, u32, u64)> = Vec::new();
            for o in ops {
                match o {
                    Op::Add { wq, task, tail } => {
                        seq += 1;
                        wqs.insert(wq as WqId, task, tail, WakeFn::Autoremove, seq, tail);
                        if tail { r.qs[wq].push_back((task, seq, 0)) } else { r.qs[wq].push_front((task, seq, 0)) }
                    }
                    Op::Remove { wq, task } => {
                        proptest::prop_assert_eq!(wqs.contains(wq as WqId, task), r.qs[wq].iter().any(|e| e.0 == task));
                        wqs.remove_task(wq as WqId, task);
                        r.qs[wq].retain(|e| e.0 != task);
                    }
                    Op::Begin { wq } => {
                        walk_ids += 1;
                        wqs.walk_begin(wq as WqId, walk_ids);
                        walks.push((wq, walk_ids, seq + 1));
                    }
                    Op::Step { n, take } => {
                        if walks.is_empty() {
                            continue;
                        }
                        let (wq, walk, start) = walks[n % walks.len()];
                        let got = wqs.walk_next(wq as WqId, walk, start);
                        let want = r.walk_next(wq, walk, start);
                        proptest::prop_assert_eq!(got.map(|i| (wqs.entry(i).task, wqs.entry(i).seq)), want);
                        match got {
                            None => {
                                wqs.walk_end(wq as WqId, walk);
                                walks.retain(|w| w.1 != walk);
                            }
                            Some(i) if take => {
                                let s = wqs.entry(i).seq;
                                wqs.remove(i);
                                r.qs[wq].retain(|e| e.1 != s);
                            }
                            Some(_) => {}
                        }
                    }
                }
                for (wq, q) in r.qs.iter().enumerate() {
                    let got: Vec<(TaskId, u64)> = wqs.entries(wq as WqId).map(|e| (e.task, e.seq)).collect();
                    let want: Vec<(TaskId, u64)> = q.iter().map(|e| (e.0, e.1)).collect();
                    proptest::prop_assert_eq!(got, want);
                    proptest::prop_assert_eq!(wqs[wq].len(), q.len());
                }
            }
        }
    }
}
