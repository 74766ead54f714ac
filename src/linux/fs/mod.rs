//! `fs/`: the file objects workloads talk through (pipes, `poll()`), and [`Ipc`], the kernel
//! state of every IPC object of a run (pipes, AF_UNIX stream sockets, their wait queues and
//! the processes' child-exit waits).

pub mod pipe;
pub mod select;

use crate::linux::kernel::exit::SignalStruct;
use crate::linux::kernel::wait::{WaitQueues, WakeRecord, WqId};
use crate::linux::net::unix::{SockId, Socks};
use crate::linux::{Frame, Kernel};
use pipe::{Pipe, PipeId};

/// The IPC objects of a run (the model's view of the files and sockets the workload opened).
#[derive(Debug, Default)]
pub struct Ipc {
    pub wqs: WaitQueues,
    pub pipes: Vec<Pipe>,
    pub socks: Socks,
    /// AF_INET sockets and the per-CPU network state (`net/`).
    pub net: crate::linux::net::Net,
    pub signals: Vec<SignalStruct>,
    /// Wait-queue entry stamps and walk ids (see `kernel/wait.rs`).
    pub wq_seq: u64,
    pub wq_walks: u32,
    /// Wake-up walks that found their queue's lock held by another CPU's walk and spun.
    pub wq_lock_waits: u64,
    /// Tasks woken through wait queues, and those woken with WF_SYNC.
    pub wakeups: u64,
    pub sync_wakeups: u64,
    /// The first wakeups of the run (`kernel::wait::WAKE_LOG_LIMIT`).
    pub wake_log: Vec<WakeRecord>,
}

/// A short section under a sleeping lock of an IPC object (`pipe->mutex`, the AF_UNIX socket
/// locks) whose word lives on `line`: taking it costs the line transfer plus the spin behind
/// another CPU's section that ends at `free_at`. Returns the cost and the lock's new free time
/// (this section ends `hold` ns after it is taken).
pub fn lock_section(
    k: &mut Kernel,
    cpu: crate::linux::CpuId,
    line: crate::hw::cacheline::LineId,
    free_at: crate::sim::Time,
    hold: crate::sim::Time,
) -> (crate::sim::Time, crate::sim::Time) {
    let c = k.line_write(cpu, line);
    let spin = free_at.saturating_sub(k.now);
    (c + spin, k.now + c + spin + hold)
}

/// An open file descriptor of a workload task: a pipe end or an AF_UNIX stream socket.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fd {
    /// `pipe()`'s `fds[0]` (read end) or `fds[1]` (write end).
    PipeRead(PipeId),
    PipeWrite(PipeId),
    /// One end of a `socketpair(AF_UNIX, SOCK_STREAM)`.
    Sock(SockId),
}

impl Fd {
    /// The descriptor as one integer (for a workload frame's scratch words): the kind in bits
    /// 32-33, the object id below.
    pub fn to_bits(self) -> u64 {
        match self {
            Fd::PipeRead(p) => p as u64,
            Fd::PipeWrite(p) => 1 << 32 | p as u64,
            Fd::Sock(s) => 2 << 32 | s as u64,
        }
    }

    /// The descriptor [`Fd::to_bits`] made `bits` from.
    #[inline]
    pub fn from_bits(bits: u64) -> Fd {
        let id = bits as u32;
        match bits >> 32 {
            0 => Fd::PipeRead(id),
            1 => Fd::PipeWrite(id),
            2 => Fd::Sock(id),
            _ => unreachable!("not an Fd::to_bits value: {bits:#x}"),
        }
    }
}

/// `pipe()` or `socketpair(AF_UNIX, SOCK_STREAM, 0)`, as hackbench's `fdpair()` makes them:
/// (read end, write end). Objects are homed on `cpu` (the creator's).
pub fn fdpair(k: &mut Kernel, cpu: crate::linux::CpuId, use_pipes: bool) -> (Fd, Fd) {
    if use_pipes {
        let p = pipe::create_pipe(k, cpu);
        (Fd::PipeRead(p), Fd::PipeWrite(p))
    } else {
        let (a, b) = crate::linux::net::unix::unix_socketpair(k, cpu);
        (Fd::Sock(a), Fd::Sock(b))
    }
}

/// Ask the host to cache the object behind `fd` ahead of a syscall on it (no effect on the
/// model; see [`crate::sim::prefetch`]).
#[inline(always)]
pub fn prefetch_fd(k: &Kernel, fd: Fd) {
    match fd {
        Fd::Sock(s) => k.ipc.socks.prefetch(s),
        Fd::PipeRead(p) | Fd::PipeWrite(p) => {
            crate::sim::prefetch::prefetch(k.ipc.pipes.as_ptr().wrapping_add(p as usize))
        }
    }
}

/// `write(fd, buf, len)`: the syscall frame (the count written is left in the return register).
pub fn sys_write(fd: Fd, len: u32) -> Frame {
    match fd {
        Fd::PipeWrite(p) => pipe::PipeOp::write(p, len),
        Fd::Sock(s) => crate::linux::net::unix::UnixStreamOp::sendmsg(s, len),
        Fd::PipeRead(_) => panic!("write() on a pipe's read end"),
    }
}

/// `read(fd, buf, len)`: the syscall frame (the count read is left in the return register).
pub fn sys_read(fd: Fd, len: u32) -> Frame {
    match fd {
        Fd::PipeRead(p) => pipe::PipeOp::read(p, len),
        Fd::Sock(s) => crate::linux::net::unix::UnixStreamOp::recvmsg(s, len),
        Fd::PipeWrite(_) => panic!("read() on a pipe's write end"),
    }
}

/// `poll(&{fd, POLLIN}, 1, -1)`.
pub fn sys_poll_in(fd: Fd) -> Frame {
    select::PollOp::pollin(fd)
}

/// The wait queue `poll()` waits on for input on `fd`, and whether input is there now
/// (`pipe_poll()` / `unix_poll()` for EPOLLIN).
pub fn poll_in(k: &Kernel, fd: Fd) -> (WqId, bool) {
    match fd {
        Fd::PipeRead(p) => {
            let pipe = &k.ipc.pipes[p as usize];
            (pipe.rd_wait, !pipe.is_empty())
        }
        Fd::Sock(s) => {
            let sk = &k.ipc.socks[s as usize];
            (sk.wq, !sk.receive_queue.is_empty())
        }
        Fd::PipeWrite(_) => panic!("poll for input on a pipe's write end"),
    }
}

#[cfg(test)]
mod tests {
    use super::Fd;

    #[test]
    fn fd_bits_round_trip() {
        for fd in [Fd::PipeRead(0), Fd::PipeWrite(7), Fd::Sock(u32::MAX), Fd::PipeRead(u32::MAX), Fd::Sock(3)] {
            assert_eq!(Fd::from_bits(fd.to_bits()), fd);
        }
        assert_ne!(Fd::PipeRead(3).to_bits(), Fd::Sock(3).to_bits());
    }
}
