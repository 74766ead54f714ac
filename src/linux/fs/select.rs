//! Models `do_sys_poll()` -> `do_poll()` of `fs/select.c` @ v6.10 for one descriptor polled for
//! POLLIN with no timeout (`poll(&pfd, 1, -1)`), as hackbench's tasks wait for "GO".
//!
//! The first pass of `do_poll()` calls `vfs_poll()` with the poll table, which queues a
//! `pollwake()` entry at the **head** of the file's wait queue (`poll_wait()` ->
//! `add_wait_queue()`); `pipe_poll()` also sets `pipe->poll_usage`. With no event the task
//! sleeps (`poll_schedule_timeout()`, TASK_INTERRUPTIBLE); when woken it polls again without
//! queueing, and returns once the descriptor is readable. The entries stay queued until
//! `poll_freewait()` on the way out, so later wakeups of that queue still visit them (and find
//! the task running).
//!
//! Cost: [`POLL_NS`] = 200 ns beyond the syscall: copying the pollfd array in and out,
//! `poll_initwait()`/`poll_freewait()` (a poll_table_entry page) and one `vfs_poll()`; a few
//! hundred instructions, estimated at 2.5x the bare syscall of `PathCosts::syscall`.

use super::Fd;
use crate::linux::engine::{Frame, Next};
use crate::linux::kernel::entry::common::{syscall_enter, syscall_exit_to_user_mode};
use crate::linux::kernel::sched::core::ScheduleCaller;
use crate::linux::kernel::sched::{TASK_INTERRUPTIBLE, TASK_RUNNING};
use crate::linux::kernel::wait::{add_wait_queue, remove_wait_queue, WakeFn, EPOLLERR, EPOLLHUP, EPOLLIN};
use crate::linux::{CpuId, Kernel};
use crate::sim::Time;

/// `do_sys_poll()` fixed cost beyond the syscall (see the module doc).
pub const POLL_NS: Time = 200;
/// A repeated `vfs_poll()` after a wakeup.
pub const REPOLL_NS: Time = 30;

/// The key of a `poll()` entry for POLLIN: `do_pollfd()` sets `_key` to
/// `demangle_poll(events) | EPOLLERR | EPOLLHUP`; `pollwake()` ignores wakeups whose key does
/// not intersect it.
const POLLIN_EVENTS: u32 = EPOLLIN | EPOLLERR | EPOLLHUP;

/// `do_sys_poll()` resume points, in code order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PollAt {
    /// Syscall entry: queue the poll entry, then test.
    Enter,
    /// Back from `schedule()`: test again.
    Repoll,
}

/// A `poll()` in progress.
#[derive(Debug, Clone, Copy)]
pub struct PollOp {
    pub fd: Fd,
    pub at: PollAt,
}

impl PollOp {
    pub fn pollin(fd: Fd) -> Frame {
        Frame::Poll(PollOp { fd, at: PollAt::Enter })
    }
}

/// Models `do_sys_poll()` for one descriptor, POLLIN, infinite timeout. Returns 1.
pub fn do_sys_poll(k: &mut Kernel, cpu: CpuId, s: &mut PollOp) -> Next {
    let me = k.curr(cpu);
    let (wq, ready) = super::poll_in(k, s.fd);
    let line = k.ipc.wqs[wq as usize].line;
    let mut c = k.line_read(cpu, line);
    if s.at == PollAt::Enter {
        c += syscall_enter(k) + POLL_NS;
        // vfs_poll() with the table: queue the entry first, then test.
        if let Some(p) = super::pipe::pipe_of(s.fd) {
            k.ipc.pipes[p as usize].poll_usage = true;
        }
        add_wait_queue(k, wq, me, WakeFn::Poll { events: POLLIN_EVENTS });
        c += k.line_write(cpu, line);
        s.at = PollAt::Repoll;
    } else {
        c += REPOLL_NS;
    }
    if ready {
        // poll_freewait().
        remove_wait_queue(k, wq, me);
        k.tasks[me as usize].state = TASK_RUNNING;
        let r = 1;
        return Next::Ret(c + syscall_exit_to_user_mode(k, cpu, r));
    }
    // poll_schedule_timeout(): sleep until a pollwake().
    k.tasks[me as usize].state = TASK_INTERRUPTIBLE;
    Next::Call(c, Frame::ScheduleCaller(ScheduleCaller::schedule()))
}
