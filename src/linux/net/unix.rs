//! Models AF_UNIX stream sockets of `net/unix/af_unix.c` @ v6.10 (with the `net/core/sock.c`
//! helpers they call): `socketpair()`, `unix_stream_sendmsg()` and `unix_stream_recvmsg()`.
//!
//! - `unix_stream_sendmsg()` cuts the data into skbs of at most `(sk_sndbuf >> 1) - 64` and
//!   `SKB_MAX_HEAD(0) + UNIX_SKB_FRAGS_SZ` bytes. Each skb is charged to the **sender's**
//!   `sk_wmem_alloc` by its truesize (`sock_alloc_send_pskb()` -> `skb_set_owner_w()`); the
//!   allocation blocks while `sk_wmem_alloc >= sk_sndbuf` (`sock_wait_for_wmem()`, a
//!   non-exclusive `prepare_to_wait()` on the sender's own wait queue). The skb is queued on
//!   the peer's receive queue under `unix_state_lock(other)`, then `other->sk_data_ready()` =
//!   `sock_def_readable()` wakes the peer's queue with `wake_up_interruptible_sync_poll()`
//!   (WF_SYNC) if anyone sleeps there.
//! - `unix_stream_recvmsg()` (`unix_stream_read_generic()`) copies from the head skbs; an
//!   emptied skb is unlinked and freed, and its destructor `sock_wfree()` uncharges the sender
//!   and calls `unix_write_space()`, which wakes the sender's queue (WF_SYNC) once
//!   `sk_wmem_alloc * 4 <= sk_sndbuf`. With nothing queued and nothing copied the reader sleeps
//!   in `unix_stream_data_wait()` (non-exclusive, on its own queue).
//! - `sk_sndbuf` = `sysctl_wmem_default` = `SK_WMEM_MAX` = 256 x `SKB_TRUESIZE(256)` = 212992.
//!   A 100-byte skb has truesize 896 on x86-64 v6.10 (`sk_buff` 256 after alignment + a
//!   640-byte head from the small-head cache that holds `skb_shared_info`), so a socket has
//!   ~238 such messages in flight before its senders block, and they are woken when ~59 are
//!   left.
//!
//! All the writers of a socket share its `sk_wmem_alloc` and its wait queue (hackbench's 20
//! senders write one socket end each per receiver), so a write-space wakeup wakes all of them.
//!
//! Simplifications: no credentials/SCM (`maybe_add_creds`, fds passing), no OOB, no peek, no
//! shutdown/EPIPE, no `SO_SNDBUF` changes, no `MSG_DONTWAIT`, no signals; `u->iolock` is
//! uncontended (one reader per socket). The state and queue locks are one modelled line per
//! socket with an optimistic-spin section (see `fs/pipe.rs`).
//!
//! Costs (beyond the syscall entry/exit): [`UNIX_SENDMSG_NS`] 250 per call + [`UNIX_SKB_NS`] 350
//! per skb (skb head and data allocation, the queueing, `sock_def_readable`);
//! [`UNIX_RECVMSG_NS`] 250 per call + [`UNIX_SKB_FREE_NS`] 250 per skb consumed (unlink,
//! `consume_skb`, `sock_wfree`); plus the copy at `fs::pipe::copy_cost`. That is 600 + 500 ns
//! for a 100-byte message, about twice the pipe's 300 + 300: LKP's hackbench (docs/workloads.md
//! §3.4) moves the same number of 100-byte messages 2.1-2.2x slower over sockets than over
//! pipes at 25-50% load on 128 CPUs (37.9 vs 17.7 s, 34.0 vs 15.4 s), where the per-message
//! CPU cost dominates.

use crate::hw::cacheline::LineId;
use crate::linux::engine::{Frame, Next};
use crate::linux::fs::pipe::copy_cost;
use crate::linux::kernel::entry::{syscall_enter, syscall_exit_to_user_mode};
use crate::linux::kernel::sched::core::ScheduleCaller;
use crate::linux::kernel::wait::{
    finish_wait, init_waitqueue_head, prepare_to_wait, waitqueue_active, wake_up_interruptible_sync_poll, WqId,
    EPOLLIN, EPOLLOUT, EPOLLPRI, EPOLLRDBAND, EPOLLRDNORM, EPOLLWRBAND, EPOLLWRNORM,
};
use crate::linux::{CpuId, Kernel};
use crate::sim::Time;
use std::collections::VecDeque;

/// Index of a socket in [`crate::linux::fs::Ipc::socks`].
pub type SockId = u32;

/// `sysctl_wmem_default` = `SK_WMEM_MAX` (include/net/sock.h): 256 * SKB_TRUESIZE(256).
pub const SK_WMEM_MAX: u64 = 212_992;
/// `SKB_DATA_ALIGN(sizeof(struct sk_buff))` on x86-64 (232 -> 256).
pub const SKB_STRUCT_SIZE: u32 = 256;
/// `SKB_DATA_ALIGN(sizeof(struct skb_shared_info))` on x86-64 (MAX_SKB_FRAGS 17).
pub const SKB_SHINFO_SIZE: u32 = 320;
/// `SKB_SMALL_HEAD_CACHE_SIZE`: `SKB_HEAD_ALIGN(MAX_TCP_HEADER)` = 320 + 320 (v6.3+).
pub const SKB_SMALL_HEAD_CACHE_SIZE: u32 = 640;
/// `SKB_MAX_HEAD(0)` = `SKB_WITH_OVERHEAD(PAGE_SIZE)`.
pub const SKB_MAX_HEAD0: u32 = crate::linux::fs::pipe::PAGE_SIZE - SKB_SHINFO_SIZE;
/// `UNIX_SKB_FRAGS_SZ` = `PAGE_SIZE << get_order(32768)`.
pub const UNIX_SKB_FRAGS_SZ: u32 = 32_768;

/// Per-call and per-skb costs (see the module doc).
pub const UNIX_SENDMSG_NS: Time = 250;
pub const UNIX_SKB_NS: Time = 350;
pub const UNIX_RECVMSG_NS: Time = 250;
pub const UNIX_SKB_FREE_NS: Time = 250;
/// The `unix_state_lock()` + receive-queue lock section.
pub const UNIX_LOCK_HOLD_NS: Time = 40;

/// The truesize of an skb carrying `size` bytes as `unix_stream_sendmsg()` allocates it: a
/// kmalloc'ed head for the first `SKB_MAX_HEAD(0)` bytes (the small-head cache, else the next
/// power-of-two kmalloc class) and whole pages for the rest.
pub fn unix_skb_truesize(size: u32) -> u32 {
    let data_len = if size > SKB_MAX_HEAD0 {
        (size - SKB_MAX_HEAD0).next_multiple_of(crate::linux::fs::pipe::PAGE_SIZE).min(size)
    } else {
        0
    };
    let head = (size - data_len).next_multiple_of(64) + SKB_SHINFO_SIZE;
    let alloc = if head <= SKB_SMALL_HEAD_CACHE_SIZE { SKB_SMALL_HEAD_CACHE_SIZE } else { head.next_power_of_two() };
    SKB_STRUCT_SIZE + alloc + data_len.next_multiple_of(crate::linux::fs::pipe::PAGE_SIZE)
}

/// A queued `sk_buff`.
#[derive(Debug, Clone, Copy)]
pub struct Skb {
    pub len: u32,
    /// Bytes already read (`UNIXCB(skb).consumed`).
    pub consumed: u32,
    pub truesize: u32,
    /// The sending socket (`skb->sk`, charged in its `sk_wmem_alloc`).
    pub owner: SockId,
}

/// An AF_UNIX stream `struct sock` (with its `unix_sock` and `socket_wq`).
#[derive(Debug, Clone)]
pub struct UnixSock {
    pub peer: SockId,
    pub receive_queue: VecDeque<Skb>,
    /// `sk_wmem_alloc` (bytes of truesize in flight from this socket) and `sk_sndbuf`.
    pub wmem_alloc: u64,
    pub sndbuf: u64,
    /// `sk_sleep(sk)`: readers and writers of this socket wait here.
    pub wq: WqId,
    /// The line of the state lock, the receive queue and `sk_wmem_alloc`.
    pub line: LineId,
    pub lock_free_at: Time,
    pub bytes_sent: u64,
    pub bytes_received: u64,
}

/// `unix_socketpair()` (`socketpair(AF_UNIX, SOCK_STREAM, 0)`): two connected sockets homed on
/// `cpu`.
pub fn unix_socketpair(k: &mut Kernel, cpu: CpuId) -> (SockId, SockId) {
    let a = k.ipc.socks.len() as SockId;
    for peer in [a + 1, a] {
        let wq = init_waitqueue_head(k, cpu);
        let line = k.lines.alloc(cpu);
        k.ipc.socks.push(UnixSock {
            peer,
            receive_queue: VecDeque::new(),
            wmem_alloc: 0,
            sndbuf: SK_WMEM_MAX,
            wq,
            line,
            lock_free_at: 0,
            bytes_sent: 0,
            bytes_received: 0,
        });
    }
    (a, a + 1)
}

/// Lock socket `sk`'s state/queue for a short section: the line, plus the spin behind
/// another CPU's section.
fn sock_lock(k: &mut Kernel, cpu: CpuId, sk: SockId) -> Time {
    let sock = &k.ipc.socks[sk as usize];
    let (c, free_at) = crate::linux::fs::lock_section(k, cpu, sock.line, sock.lock_free_at, UNIX_LOCK_HOLD_NS);
    k.ipc.socks[sk as usize].lock_free_at = free_at;
    c
}

/// Resume points of an AF_UNIX stream call (`unix_stream_sendmsg()`/`_recvmsg()`), in code
/// order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UnixAt {
    /// Syscall entry.
    Enter,
    /// The send or receive loop.
    Loop,
    /// Waiting for write space or data: re-check, else `schedule()` (and come back here).
    Wait,
    /// Return to user space.
    Ret,
    /// recvmsg: back in the loop after a write-space wakeup, still holding the locks.
    LoopLocked,
}

/// A `sendmsg()`/`write()` or `recvmsg()`/`read()` on an AF_UNIX stream socket in progress.
#[derive(Debug, Clone, Copy)]
pub struct UnixStreamOp {
    pub sock: SockId,
    pub send: bool,
    pub len: u32,
    pub done: u32,
    pub at: UnixAt,
}

impl UnixStreamOp {
    pub fn sendmsg(sock: SockId, len: u32) -> Frame {
        Frame::UnixStream(UnixStreamOp { sock, send: true, len, done: 0, at: UnixAt::Enter })
    }
    pub fn recvmsg(sock: SockId, len: u32) -> Frame {
        Frame::UnixStream(UnixStreamOp { sock, send: false, len, done: 0, at: UnixAt::Enter })
    }
}

/// Run one step of a socket call.
pub fn unix_stream_op(k: &mut Kernel, cpu: CpuId, s: &mut UnixStreamOp) -> Next {
    if s.send {
        unix_stream_sendmsg(k, cpu, s)
    } else {
        unix_stream_recvmsg(k, cpu, s)
    }
}

/// Models `unix_stream_sendmsg()` with `sock_alloc_send_pskb()` / `sock_wait_for_wmem()` and
/// `sock_def_readable()` — net/unix/af_unix.c, net/core/sock.c @ v6.10.
pub fn unix_stream_sendmsg(k: &mut Kernel, cpu: CpuId, s: &mut UnixStreamOp) -> Next {
    let sk = s.sock;
    let me = k.curr(cpu);
    let mut c = 0;
    match s.at {
        UnixAt::Enter => {
            c = syscall_enter(k) + UNIX_SENDMSG_NS;
            s.at = UnixAt::Loop;
        }
        UnixAt::Wait => {
            // sock_wait_for_wmem(): prepare_to_wait(); re-check; schedule().
            let wq = k.ipc.socks[sk as usize].wq;
            prepare_to_wait(k, wq, me, false);
            let so = &k.ipc.socks[sk as usize];
            if so.wmem_alloc >= so.sndbuf {
                return Next::Call(0, Frame::ScheduleCaller(ScheduleCaller::schedule()));
            }
            finish_wait(k, wq, me);
            s.at = UnixAt::Loop;
        }
        UnixAt::Ret => {
            let r = s.done as i64;
            return Next::Ret(syscall_exit_to_user_mode(k, cpu, r));
        }
        _ => {}
    }
    // while (sent < len)
    if s.done == s.len {
        s.at = UnixAt::Ret;
        return Next::Cont(c);
    }
    let so = &k.ipc.socks[sk as usize];
    let size = (s.len - s.done).min((so.sndbuf >> 1) as u32 - 64).min(SKB_MAX_HEAD0 + UNIX_SKB_FRAGS_SZ);
    if so.wmem_alloc >= so.sndbuf {
        // sock_alloc_send_pskb(): no write space; wait for it.
        s.at = UnixAt::Wait;
        return Next::Cont(c);
    }
    let truesize = unix_skb_truesize(size);
    // skb_set_owner_w(): charge the sender (an atomic on its line).
    let own_line = so.line;
    k.ipc.socks[sk as usize].wmem_alloc += truesize as u64;
    c += k.line_write(cpu, own_line) + UNIX_SKB_NS + copy_cost(size);
    // unix_state_lock(other); skb_queue_tail(&other->sk_receive_queue); unlock.
    let other = k.ipc.socks[sk as usize].peer;
    c += sock_lock(k, cpu, other);
    k.ipc.socks[other as usize].receive_queue.push_back(Skb { len: size, consumed: 0, truesize, owner: sk });
    k.ipc.socks[sk as usize].bytes_sent += size as u64;
    s.done += size;
    // other->sk_data_ready(other): sock_def_readable().
    let owq = k.ipc.socks[other as usize].wq;
    if waitqueue_active(k, owq) {
        return Next::Call(c, wake_up_interruptible_sync_poll(owq, EPOLLIN | EPOLLPRI | EPOLLRDNORM | EPOLLRDBAND));
    }
    Next::Cont(c)
}

/// Models `unix_stream_recvmsg()` -> `unix_stream_read_generic()` with
/// `unix_stream_data_wait()`, `consume_skb()` -> `sock_wfree()` -> `unix_write_space()` —
/// net/unix/af_unix.c, net/core/sock.c @ v6.10. Copies up to `len` bytes; returns once at
/// least one byte was copied and the queue is empty or `len` is reached.
pub fn unix_stream_recvmsg(k: &mut Kernel, cpu: CpuId, s: &mut UnixStreamOp) -> Next {
    let sk = s.sock;
    let me = k.curr(cpu);
    let mut c = 0;
    match s.at {
        UnixAt::Enter => {
            c = syscall_enter(k) + UNIX_RECVMSG_NS + sock_lock(k, cpu, sk);
        }
        UnixAt::Wait => {
            // unix_stream_data_wait(): prepare_to_wait(); re-check; schedule().
            let wq = k.ipc.socks[sk as usize].wq;
            prepare_to_wait(k, wq, me, false);
            if k.ipc.socks[sk as usize].receive_queue.is_empty() {
                return Next::Call(0, Frame::ScheduleCaller(ScheduleCaller::schedule()));
            }
            finish_wait(k, wq, me);
            c = sock_lock(k, cpu, sk);
        }
        UnixAt::Loop => {
            c = sock_lock(k, cpu, sk);
        }
        UnixAt::LoopLocked => {}
        _ => {
            let r = s.done as i64;
            return Next::Ret(syscall_exit_to_user_mode(k, cpu, r));
        }
    }
    loop {
        let Some(skb) = k.ipc.socks[sk as usize].receive_queue.front_mut() else {
            if s.done > 0 {
                s.at = UnixAt::Ret;
            } else {
                s.at = UnixAt::Wait;
            }
            return Next::Cont(c);
        };
        let chunk = (skb.len - skb.consumed).min(s.len - s.done);
        skb.consumed += chunk;
        let emptied = skb.consumed == skb.len;
        let (owner, truesize) = (skb.owner, skb.truesize);
        s.done += chunk;
        c += copy_cost(chunk);
        k.ipc.socks[sk as usize].bytes_received += chunk as u64;
        if emptied {
            k.ipc.socks[sk as usize].receive_queue.pop_front();
            // consume_skb() -> sock_wfree(): uncharge the sender, then its sk_write_space.
            let oline = k.ipc.socks[owner as usize].line;
            c += k.line_write(cpu, oline) + UNIX_SKB_FREE_NS;
            let o = &mut k.ipc.socks[owner as usize];
            o.wmem_alloc -= truesize as u64;
            let writable = o.wmem_alloc * 4 <= o.sndbuf;
            let owq = o.wq;
            if writable && waitqueue_active(k, owq) {
                s.at = if s.done == s.len { UnixAt::Ret } else { UnixAt::LoopLocked };
                return Next::Call(c, wake_up_interruptible_sync_poll(owq, EPOLLOUT | EPOLLWRNORM | EPOLLWRBAND));
            }
        }
        if s.done == s.len {
            s.at = UnixAt::Ret;
            return Next::Cont(c);
        }
    }
}
