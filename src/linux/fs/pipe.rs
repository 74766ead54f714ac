//! Models `fs/pipe.c` @ v6.10: an anonymous pipe of `PIPE_DEF_BUFFERS` (16) page slots,
//! `pipe_write()` and `pipe_read()` with their blocking and wakeup rules.
//!
//! - `pipe_write()` merges a write smaller than a page into the last slot when the pipe was
//!   not empty and it fits (`offset + len + chars <= PAGE_SIZE`, so 40 x 100-byte messages per
//!   page); otherwise it takes a new slot. When the ring is full it wakes the readers if the
//!   pipe was empty, then sleeps exclusively on `wr_wait` until `pipe_writable()`. On the way
//!   out it wakes `rd_wait` with a sync wakeup (WF_SYNC) if the pipe was empty (or anyone ever
//!   polled it, `poll_usage`), and the next writer if it had slept and left room.
//! - `pipe_read()` copies from the oldest slots, freeing each slot it empties. With nothing to
//!   read it wakes a writer if the pipe was full, then sleeps exclusively on `rd_wait`. On the
//!   way out it wakes a writer (sync) if the pipe **was full when the read started** — in
//!   v6.10 even if the read freed no slot, so the writer may find it still full and sleep
//!   again (fixed in 2025 by "pipe_read: don't wake up the writer if the pipe is still full")
//!   — and the next reader if it had slept and left data.
//!
//! Simplifications: the pipe always has readers and writers (no EPIPE/EOF paths, no
//! SIGPIPE), no O_NONBLOCK, no packet mode, no signals. `pipe->mutex` is modelled as an
//! optimistic spinner: a task locking it while another CPU holds it spins until the holder's
//! section ends (the holder is always running, so `mutex_lock()` never sleeps). Only the pipe's
//! control line (mutex, head/tail, wait-queue locks) is a modelled cache line; the data pages
//! are free.
//!
//! Costs (per call, beyond the syscall entry/exit of `PathCosts::syscall`):
//! - `PathCosts::pipe_write`, `pipe_read` = 300 ns each. From `perf bench sched pipe` with both
//!   tasks on one CPU: 2.79 us per loop, i.e. ~1.4 us per half (docs/workloads.md §9.4, Ingo Molnar
//!   2025, KVM guest). A half is a write + a read (2 x 80 ns syscall), a wakeup (`ttwu` 120 +
//!   `ttwu_activate` 100) and a switch (`schedule_enter` 60 + `pick_fair_task` 60 +
//!   `context_switch` 250): 750 ns in the model, leaving ~645 ns; perf's default form is two
//!   processes, so that also holds one `switch_mm` (82 ns, docs/costs.md "switch_mm"),
//!   leaving ~563 ns for the two pipe calls (vfs_write/vfs_read, fdget, the mutex,
//!   `file_update_time`, buffer bookkeeping). We take 300 ns each.
//! - [`copy_cost`]: 16 bytes/ns for `copy_page_{from,to}_iter` (~16 GB/s: a single core's
//!   `rep movsb` copy bandwidth for L1/L2-resident buffers on a ~3 GHz x86 core, ~5 B/cycle, a
//!   conservative figure below the 16-32 B/cycle fast-string peak). A 100-byte message costs
//!   7 ns: negligible next to the per-call costs.

use super::Fd;
use crate::hw::cacheline::LineId;
use crate::linux::engine::{Frame, Next};
use crate::linux::kernel::entry::common::{syscall_enter, syscall_exit_to_user_mode};
use crate::linux::kernel::sched::core::ScheduleCaller;
use crate::linux::kernel::wait::{
    finish_wait, init_waitqueue_head, prepare_to_wait, wake_up_interruptible_sync_poll, WqId, EPOLLIN, EPOLLOUT,
    EPOLLRDNORM, EPOLLWRNORM,
};
use crate::linux::{CpuId, Kernel};
use crate::sim::Time;
use std::collections::VecDeque;

/// Index of a pipe in [`super::Ipc::pipes`].
pub type PipeId = u32;

pub const PAGE_SIZE: u32 = 4096;
/// `PIPE_DEF_BUFFERS`: the default ring size (16 pages, 64 KiB).
pub const PIPE_DEF_BUFFERS: usize = 16;

/// Copy bandwidth for user copies (see the module doc).
pub const COPY_BYTES_PER_NS: u64 = 16;

/// Cost of copying `bytes` between user memory and a kernel buffer.
pub fn copy_cost(bytes: u32) -> Time {
    (bytes as u64).div_ceil(COPY_BYTES_PER_NS)
}

/// One slot of the ring (`struct pipe_buffer`): a page with `len` unread bytes at `offset`.
#[derive(Debug, Clone, Copy)]
pub struct PipeBuf {
    pub offset: u32,
    pub len: u32,
}

/// A `pipe_inode_info`.
#[derive(Debug, Clone)]
pub struct Pipe {
    /// Occupied slots from `tail` (front) to `head - 1` (back).
    pub bufs: VecDeque<PipeBuf>,
    pub max_usage: usize,
    pub rd_wait: WqId,
    pub wr_wait: WqId,
    /// Someone has polled the pipe (then every write wakes `rd_wait`).
    pub poll_usage: bool,
    /// The line of the mutex, head/tail and the wait-queue locks.
    pub line: LineId,
    /// The instant the current holder of `pipe->mutex` releases it.
    pub mutex_free_at: Time,
    /// Bytes that went through the pipe.
    pub bytes_written: u64,
    pub bytes_read: u64,
}

impl Pipe {
    /// `pipe_empty()`.
    pub fn is_empty(&self) -> bool {
        self.bufs.is_empty()
    }
    /// `pipe_full()`.
    pub fn is_full(&self) -> bool {
        self.bufs.len() >= self.max_usage
    }
    /// Unread bytes.
    pub fn unread(&self) -> u64 {
        self.bufs.iter().map(|b| b.len as u64).sum()
    }
}

/// `create_pipe_files()` / `alloc_pipe_info()`: a pipe homed on `cpu`.
pub fn create_pipe(k: &mut Kernel, cpu: CpuId) -> PipeId {
    let rd_wait = init_waitqueue_head(k, cpu);
    let wr_wait = init_waitqueue_head(k, cpu);
    let line = k.lines.alloc(cpu);
    k.ipc.pipes.push(Pipe {
        bufs: VecDeque::with_capacity(PIPE_DEF_BUFFERS),
        max_usage: PIPE_DEF_BUFFERS,
        rd_wait,
        wr_wait,
        poll_usage: false,
        line,
        mutex_free_at: 0,
        bytes_written: 0,
        bytes_read: 0,
    });
    (k.ipc.pipes.len() - 1) as PipeId
}

/// `mutex_lock(&pipe->mutex)` for a section of `hold` ns: the line transfer, plus the spin
/// while another CPU's section is still running.
fn pipe_lock(k: &mut Kernel, cpu: CpuId, p: PipeId, hold: Time) -> Time {
    let pipe = &k.ipc.pipes[p as usize];
    let (c, free_at) = super::lock_section(k, cpu, pipe.line, pipe.mutex_free_at, hold);
    k.ipc.pipes[p as usize].mutex_free_at = free_at;
    c
}

/// Resume points of a pipe call (`pipe_write()`/`pipe_read()`), in code order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PipeAt {
    /// Syscall entry: take the pipe mutex (a write first merges into the last slot).
    Enter,
    /// The copy loop (`for (;;)`), after a wait.
    Loop,
    /// The mutex dropped: test the wait condition; queue and `schedule()` if not ready.
    Sleep,
    /// Back from `schedule()`: test the condition again (`finish_wait()` once ready).
    Woken,
    /// Done copying: wake the other side (it was empty/full, or it polls).
    Out,
    /// Wake the next waiter of our own kind (`wake_next_writer`/`wake_next_reader`).
    Out2,
    /// Return to user space with the bytes copied.
    Ret,
}

/// A `write()`/`read()` on a pipe in progress.
#[derive(Debug, Clone, Copy)]
pub struct PipeOp {
    pub pipe: PipeId,
    pub write: bool,
    pub len: u32,
    /// Bytes copied so far.
    pub done: u32,
    pub at: PipeAt,
    /// `was_empty` (write) or `was_full` (read).
    pub was: bool,
    /// `wake_next_writer` (write) or `wake_next_reader` (read).
    pub wake_next: bool,
}

impl PipeOp {
    pub fn write(pipe: PipeId, len: u32) -> Frame {
        Frame::Pipe(PipeOp { pipe, write: true, len, done: 0, at: PipeAt::Enter, was: false, wake_next: false })
    }
    pub fn read(pipe: PipeId, len: u32) -> Frame {
        Frame::Pipe(PipeOp { pipe, write: false, len, done: 0, at: PipeAt::Enter, was: false, wake_next: false })
    }
}

/// Run one step of a pipe call.
pub fn pipe_op(k: &mut Kernel, cpu: CpuId, s: &mut PipeOp) -> Next {
    if s.write {
        pipe_write(k, cpu, s)
    } else {
        pipe_read(k, cpu, s)
    }
}

/// `pipe_writable()`: not full (readers always exist here).
fn writable(k: &Kernel, p: PipeId) -> bool {
    !k.ipc.pipes[p as usize].is_full()
}

/// `pipe_readable()`: not empty (writers always exist here).
fn readable(k: &Kernel, p: PipeId) -> bool {
    !k.ipc.pipes[p as usize].is_empty()
}

/// Models `pipe_write()` — fs/pipe.c @ v6.10 (see the module doc).
pub fn pipe_write(k: &mut Kernel, cpu: CpuId, s: &mut PipeOp) -> Next {
    let p = s.pipe;
    match s.at {
        PipeAt::Enter => {
            let hold = k.costs.pipe_write;
            let mut c = syscall_enter(k) + hold + pipe_lock(k, cpu, p, hold);
            let pipe = &mut k.ipc.pipes[p as usize];
            s.was = pipe.is_empty();
            // Merge the sub-page remainder into the last slot when it fits.
            let chars = s.len & (PAGE_SIZE - 1);
            if chars != 0 && !s.was {
                let last = pipe.bufs.back_mut().expect("not empty");
                if last.offset + last.len + chars <= PAGE_SIZE {
                    last.len += chars;
                    pipe.bytes_written += chars as u64;
                    s.done += chars;
                    c += copy_cost(chars);
                    if s.done == s.len {
                        s.at = PipeAt::Out;
                        return Next::Cont(c);
                    }
                }
            }
            s.at = PipeAt::Loop;
            write_loop(k, s, c)
        }
        PipeAt::Loop => write_loop(k, s, 0),
        // wait_event_interruptible_exclusive(pipe->wr_wait, pipe_writable(pipe)); woken while
        // still full (a reader's v6.10 `was_full` wakeup), it sleeps again.
        PipeAt::Sleep | PipeAt::Woken => {
            let (wq, ready) = (k.ipc.pipes[p as usize].wr_wait, writable(k, p));
            wait_event_step(k, cpu, s, wq, ready)
        }
        PipeAt::Out => {
            let pipe = &k.ipc.pipes[p as usize];
            if pipe.is_full() {
                s.wake_next = false;
            }
            s.at = PipeAt::Out2;
            if s.was || pipe.poll_usage {
                return Next::Call(0, wake_up_interruptible_sync_poll(pipe.rd_wait, EPOLLIN | EPOLLRDNORM));
            }
            Next::Cont(0)
        }
        PipeAt::Out2 => {
            s.at = PipeAt::Ret;
            if s.wake_next {
                let wq = k.ipc.pipes[p as usize].wr_wait;
                return Next::Call(0, wake_up_interruptible_sync_poll(wq, EPOLLOUT | EPOLLWRNORM));
            }
            Next::Cont(0)
        }
        PipeAt::Ret => {
            let r = s.done as i64;
            Next::Ret(syscall_exit_to_user_mode(k, cpu, r))
        }
    }
}

/// After a wait: lock again, re-read `was_empty` / `was_full`, and wake the next waiter of our
/// kind on the way out.
/// One test of `wait_event_interruptible_exclusive(wq, cond)` with the pipe mutex dropped:
/// if `ready`, leave the wait (`finish_wait` if queued) and retake the mutex; otherwise queue
/// exclusively on `wq` and schedule.
fn wait_event_step(k: &mut Kernel, cpu: CpuId, s: &mut PipeOp, wq: WqId, ready: bool) -> Next {
    let me = k.curr(cpu);
    if ready {
        if s.at == PipeAt::Woken {
            finish_wait(k, wq, me);
        }
        return relocked(k, cpu, s);
    }
    prepare_to_wait(k, wq, me, true);
    s.at = PipeAt::Woken;
    Next::Call(0, Frame::ScheduleCaller(ScheduleCaller::schedule()))
}

fn relocked(k: &mut Kernel, cpu: CpuId, s: &mut PipeOp) -> Next {
    let hold = k.costs.pipe_relock;
    let c = pipe_lock(k, cpu, s.pipe, hold) + hold;
    let pipe = &k.ipc.pipes[s.pipe as usize];
    s.was = if s.write { pipe.is_empty() } else { pipe.is_full() };
    s.wake_next = true;
    s.at = PipeAt::Loop;
    if s.write {
        write_loop(k, s, c)
    } else {
        read_loop(k, s, c)
    }
}

/// The `for (;;)` of `pipe_write()`: fill new slots while the ring has room; when full, wake the
/// readers if the pipe was empty and go to sleep.
fn write_loop(k: &mut Kernel, s: &mut PipeOp, mut c: Time) -> Next {
    let pipe = &mut k.ipc.pipes[s.pipe as usize];
    while !pipe.is_full() {
        let n = (s.len - s.done).min(PAGE_SIZE);
        pipe.bufs.push_back(PipeBuf { offset: 0, len: n });
        pipe.bytes_written += n as u64;
        s.done += n;
        c += copy_cost(n);
        if s.done == s.len {
            s.at = PipeAt::Out;
            return Next::Cont(c);
        }
    }
    // Full: unlock, wake the readers if we found it empty, then wait for room.
    s.at = PipeAt::Sleep;
    if s.was {
        let wq = pipe.rd_wait;
        return Next::Call(c, wake_up_interruptible_sync_poll(wq, EPOLLIN | EPOLLRDNORM));
    }
    Next::Cont(c)
}

/// Models `pipe_read()` — fs/pipe.c @ v6.10 (see the module doc).
pub fn pipe_read(k: &mut Kernel, cpu: CpuId, s: &mut PipeOp) -> Next {
    let p = s.pipe;
    match s.at {
        PipeAt::Enter => {
            let hold = k.costs.pipe_read;
            let c = syscall_enter(k) + hold + pipe_lock(k, cpu, p, hold);
            s.was = k.ipc.pipes[p as usize].is_full();
            s.at = PipeAt::Loop;
            read_loop(k, s, c)
        }
        PipeAt::Loop => read_loop(k, s, 0),
        // wait_event_interruptible_exclusive(pipe->rd_wait, pipe_readable(pipe)).
        PipeAt::Sleep | PipeAt::Woken => {
            let (wq, ready) = (k.ipc.pipes[p as usize].rd_wait, readable(k, p));
            wait_event_step(k, cpu, s, wq, ready)
        }
        PipeAt::Out => {
            let pipe = &k.ipc.pipes[p as usize];
            if pipe.is_empty() {
                s.wake_next = false;
            }
            s.at = PipeAt::Out2;
            if s.was {
                return Next::Call(0, wake_up_interruptible_sync_poll(pipe.wr_wait, EPOLLOUT | EPOLLWRNORM));
            }
            Next::Cont(0)
        }
        PipeAt::Out2 => {
            s.at = PipeAt::Ret;
            if s.wake_next {
                let wq = k.ipc.pipes[p as usize].rd_wait;
                return Next::Call(0, wake_up_interruptible_sync_poll(wq, EPOLLIN | EPOLLRDNORM));
            }
            Next::Cont(0)
        }
        PipeAt::Ret => {
            let r = s.done as i64;
            Next::Ret(syscall_exit_to_user_mode(k, cpu, r))
        }
    }
}

/// The `for (;;)` of `pipe_read()`: copy from the oldest slots; with nothing read, wake a
/// writer if the pipe was full and go to sleep.
fn read_loop(k: &mut Kernel, s: &mut PipeOp, mut c: Time) -> Next {
    let pipe = &mut k.ipc.pipes[s.pipe as usize];
    while let Some(buf) = pipe.bufs.front_mut() {
        let chars = buf.len.min(s.len - s.done);
        buf.offset += chars;
        buf.len -= chars;
        if buf.len == 0 {
            pipe.bufs.pop_front();
        }
        pipe.bytes_read += chars as u64;
        s.done += chars;
        c += copy_cost(chars);
        if s.done == s.len {
            break;
        }
    }
    if s.done > 0 {
        s.at = PipeAt::Out;
        return Next::Cont(c);
    }
    s.at = PipeAt::Sleep;
    if s.was {
        let wq = pipe.wr_wait;
        return Next::Call(c, wake_up_interruptible_sync_poll(wq, EPOLLOUT | EPOLLWRNORM));
    }
    Next::Cont(c)
}

/// The pipe behind a pipe end, if `fd` is one.
pub fn pipe_of(fd: Fd) -> Option<PipeId> {
    match fd {
        Fd::PipeRead(p) | Fd::PipeWrite(p) => Some(p),
        Fd::Sock(_) => None,
    }
}
