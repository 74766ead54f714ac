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
use crate::linux::kernel::entry::common::{syscall_enter, syscall_exit_to_user_mode};
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
#[inline]
pub fn unix_skb_truesize(size: u32) -> u32 {
    // The common small skb: its head (data rounded up to 64 plus the shared info) fits the
    // small-head cache, and it has no pages.
    if size <= SKB_SMALL_HEAD_CACHE_SIZE - SKB_SHINFO_SIZE {
        return SKB_STRUCT_SIZE + SKB_SMALL_HEAD_CACHE_SIZE;
    }
    unix_skb_truesize_large(size)
}

fn unix_skb_truesize_large(size: u32) -> u32 {
    let data_len = if size > SKB_MAX_HEAD0 {
        (size - SKB_MAX_HEAD0).next_multiple_of(crate::linux::fs::pipe::PAGE_SIZE).min(size)
    } else {
        0
    };
    let head = (size - data_len).next_multiple_of(64) + SKB_SHINFO_SIZE;
    let alloc = if head <= SKB_SMALL_HEAD_CACHE_SIZE { SKB_SMALL_HEAD_CACHE_SIZE } else { head.next_power_of_two() };
    SKB_STRUCT_SIZE + alloc + data_len.next_multiple_of(crate::linux::fs::pipe::PAGE_SIZE)
}

/// A queued `sk_buff`, as [`Socks::receive_queue`] lists it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Skb {
    pub len: u32,
    /// Bytes already read (`UNIXCB(skb).consumed`).
    pub consumed: u32,
    pub truesize: u32,
    /// The sending socket (`skb->sk`, charged in its `sk_wmem_alloc`).
    pub owner: SockId,
}

/// `sk_sndbuf` of every socket (`sysctl_wmem_default`; the model has no `SO_SNDBUF`).
pub const SK_SNDBUF: u64 = SK_WMEM_MAX;

/// The peer of stream socket `sk`: [`unix_socketpair`] makes the two ends of a pair as ids
/// `2n` and `2n + 1`.
#[inline]
pub fn unix_peer(sk: SockId) -> SockId {
    sk ^ 1
}

/// Consecutive skbs of the same length on a receive queue (in queue order).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SkbRun {
    pub len: u32,
    pub count: u32,
}

/// Set in [`SkbQueueHead::count`] while more runs follow the head run (in the socket's
/// overflow queue).
const RQ_MORE: u32 = 1 << 31;

/// The head of an `sk_receive_queue`, kept inside the socket so that reading the first skb
/// touches no other host cache line.
///
/// Every skb on a stream socket's receive queue was sent by the socket's peer (no SCM/fd
/// passing is modelled) and its truesize is [`unix_skb_truesize`] of its length, and only the
/// first skb can be partly read; so the queue is the sequence of the skbs' lengths, stored as
/// runs of equal lengths: the head run here, the rest in an overflow queue passed in by the
/// caller (empty in the common case of equal-sized messages).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[repr(C)]
pub struct SkbQueueHead {
    /// Length of each skb of the head run.
    len: u32,
    /// Bytes already read from the first skb.
    consumed: u32,
    /// Skbs in the head run, plus [`RQ_MORE`] while the overflow queue holds runs.
    count: u32,
}

impl SkbQueueHead {
    /// No skb queued (`skb_queue_empty()`).
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// The first skb's length and bytes already read (`skb_peek()`).
    #[inline]
    pub fn front(&self) -> Option<(u32, u32)> {
        (self.count != 0).then_some((self.len, self.consumed))
    }

    /// Mark `n` more bytes of the first skb read (the queue is not empty).
    #[inline]
    pub fn consume(&mut self, n: u32) {
        debug_assert!(self.count != 0 && self.consumed + n <= self.len);
        self.consumed += n;
    }

    /// Queue an skb of `len` bytes at the tail (`skb_queue_tail()`).
    #[inline]
    pub fn push_back(&mut self, more: &mut VecDeque<SkbRun>, len: u32) {
        if self.count == 0 {
            *self = SkbQueueHead { len, consumed: 0, count: 1 };
        } else if self.count & RQ_MORE == 0 && self.len == len {
            self.count += 1;
        } else {
            self.push_back_slow(more, len);
        }
    }

    #[cold]
    fn push_back_slow(&mut self, more: &mut VecDeque<SkbRun>, len: u32) {
        match more.back_mut() {
            Some(r) if r.len == len => r.count += 1,
            _ => more.push_back(SkbRun { len, count: 1 }),
        }
        self.count |= RQ_MORE;
    }

    /// Unlink the first skb (`skb_unlink()`; the queue is not empty).
    #[inline]
    pub fn pop_front(&mut self, more: &mut VecDeque<SkbRun>) {
        debug_assert!(self.count & !RQ_MORE != 0);
        self.consumed = 0;
        self.count -= 1;
        if self.count == RQ_MORE {
            self.refill(more);
        }
    }

    #[cold]
    fn refill(&mut self, more: &mut VecDeque<SkbRun>) {
        let r = more.pop_front().expect("RQ_MORE set with no overflow run");
        self.len = r.len;
        self.count = r.count | if more.is_empty() { 0 } else { RQ_MORE };
    }

    /// The queued skbs' lengths and bytes read, head first.
    pub fn iter<'a>(&self, more: &'a VecDeque<SkbRun>) -> impl Iterator<Item = (u32, u32)> + 'a {
        let head = SkbRun { len: self.len, count: self.count & !RQ_MORE };
        let rest = if self.count & RQ_MORE != 0 { more.iter() } else { more.range(0..0) };
        let consumed = self.consumed;
        std::iter::once(head)
            .chain(rest.copied())
            .flat_map(|r| std::iter::repeat_n(r.len, r.count as usize))
            .enumerate()
            .map(move |(i, len)| (len, if i == 0 { consumed } else { 0 }))
    }
}

/// An AF_UNIX stream `struct sock` (with its `unix_sock` and `socket_wq`): the fields of the
/// send and receive paths, 32 bytes so that both ends of a pair share one host cache line
/// (a message touches both: the sender's `sk_wmem_alloc` and the receiver's queue).
#[derive(Debug, Clone, Copy, Default)]
#[repr(C)]
pub struct UnixSock {
    pub lock_free_at: Time,
    /// `sk_wmem_alloc` (bytes of truesize in flight from this socket; a 32-bit `refcount_t`
    /// in the kernel). `sk_sndbuf` is [`SK_SNDBUF`].
    pub wmem_alloc: u32,
    /// `sk_sleep(sk)`: readers and writers of this socket wait here.
    pub wq: WqId,
    /// The line of the state lock, the receive queue and `sk_wmem_alloc`.
    pub line: LineId,
    /// `sk_receive_queue` (its runs past the head are in [`Socks`]'s overflow queues).
    pub receive_queue: SkbQueueHead,
}

/// The two ends of a socketpair, in one host cache line.
#[derive(Debug, Clone, Copy, Default)]
#[repr(C, align(64))]
struct SockPair([UnixSock; 2]);

/// Every AF_UNIX socket of a run, indexed by [`SockId`].
#[derive(Debug, Clone, Default)]
pub struct Socks {
    pairs: Vec<SockPair>,
    /// Per socket, the receive queue's runs past the head run.
    more: Vec<VecDeque<SkbRun>>,
}

const _: () = assert!(std::mem::size_of::<SockPair>() == 2 * std::mem::size_of::<UnixSock>());

/// The sockets of `pairs` as one mutable slice (see [`Socks::flat`]).
#[inline]
fn flat_mut(pairs: &mut [SockPair]) -> &mut [UnixSock] {
    // SAFETY: as in `Socks::flat`, borrowed mutably for as long as `pairs` is.
    unsafe { std::slice::from_raw_parts_mut(pairs.as_mut_ptr().cast::<UnixSock>(), pairs.len() << 1) }
}

impl std::ops::Index<usize> for Socks {
    type Output = UnixSock;
    #[inline]
    fn index(&self, i: usize) -> &UnixSock {
        &self.flat()[i]
    }
}

impl std::ops::IndexMut<usize> for Socks {
    #[inline]
    fn index_mut(&mut self, i: usize) -> &mut UnixSock {
        &mut self.flat_mut()[i]
    }
}

impl Socks {
    /// The sockets as one slice (socket `i` at index `i`, without splitting the index into a
    /// pair and an end).
    #[inline]
    fn flat(&self) -> &[UnixSock] {
        // SAFETY: a `SockPair` is `repr(C)` around `[UnixSock; 2]` with no padding (asserted
        // above), so `n` pairs are `2n` contiguous, initialised, aligned `UnixSock`s, borrowed
        // for as long as `self`. (`<< 1`, not `* 2`: the doubling cannot overflow, a `Vec` holds
        // at most `isize::MAX` bytes, and a shift carries no overflow check.)
        unsafe { std::slice::from_raw_parts(self.pairs.as_ptr().cast::<UnixSock>(), self.pairs.len() << 1) }
    }

    #[inline]
    fn flat_mut(&mut self) -> &mut [UnixSock] {
        flat_mut(&mut self.pairs)
    }

    /// Ask the host to cache socket `sk`'s pair (no effect on the model; see
    /// [`crate::sim::prefetch`]).
    #[inline(always)]
    pub fn prefetch(&self, sk: SockId) {
        crate::sim::prefetch::prefetch(self.pairs.as_ptr().wrapping_add(sk as usize >> 1));
    }

    /// Add the two ends of a socketpair (ids `len()` and `len() + 1`).
    pub fn push_pair(&mut self, pair: [UnixSock; 2]) {
        self.pairs.push(SockPair(pair));
        self.more.extend([VecDeque::new(), VecDeque::new()]);
    }

    /// Number of sockets.
    pub fn len(&self) -> usize {
        self.pairs.len() * 2
    }

    /// No socket exists.
    pub fn is_empty(&self) -> bool {
        self.pairs.is_empty()
    }

    /// The sockets in id order.
    pub fn iter(&self) -> impl Iterator<Item = &UnixSock> {
        self.pairs.iter().flat_map(|p| p.0.iter())
    }

    /// The skbs on `sk`'s receive queue, head first.
    pub fn receive_queue(&self, sk: SockId) -> impl Iterator<Item = Skb> + '_ {
        let owner = unix_peer(sk);
        self[sk as usize].receive_queue.iter(&self.more[sk as usize]).map(move |(len, consumed)| Skb {
            len,
            consumed,
            truesize: unix_skb_truesize(len),
            owner,
        })
    }

    /// `skb_queue_tail(&sk->sk_receive_queue)` of an skb of `len` bytes.
    #[inline]
    pub fn queue_tail(&mut self, sk: SockId, len: u32) {
        flat_mut(&mut self.pairs)[sk as usize].receive_queue.push_back(&mut self.more[sk as usize], len);
    }

    /// Unlink the first skb of `sk`'s receive queue (not empty).
    #[inline]
    pub fn unlink_head(&mut self, sk: SockId) {
        flat_mut(&mut self.pairs)[sk as usize].receive_queue.pop_front(&mut self.more[sk as usize]);
    }
}

/// `unix_socketpair()` (`socketpair(AF_UNIX, SOCK_STREAM, 0)`): two connected sockets homed on
/// `cpu`.
pub fn unix_socketpair(k: &mut Kernel, cpu: CpuId) -> (SockId, SockId) {
    let a = k.ipc.socks.len() as SockId;
    let mut pair = [UnixSock::default(); 2];
    for sock in pair.iter_mut() {
        sock.wq = init_waitqueue_head(k, cpu);
        sock.line = k.lines.alloc(cpu);
    }
    k.ipc.socks.push_pair(pair);
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
            if k.ipc.socks[sk as usize].wmem_alloc as u64 >= SK_SNDBUF {
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
    let size = (s.len - s.done).min((SK_SNDBUF >> 1) as u32 - 64).min(SKB_MAX_HEAD0 + UNIX_SKB_FRAGS_SZ);
    if so.wmem_alloc as u64 >= SK_SNDBUF {
        // sock_alloc_send_pskb(): no write space; wait for it.
        s.at = UnixAt::Wait;
        return Next::Cont(c);
    }
    let truesize = unix_skb_truesize(size);
    // skb_set_owner_w(): charge the sender (an atomic on its line).
    let own_line = so.line;
    k.ipc.socks[sk as usize].wmem_alloc += truesize;
    c += k.line_write(cpu, own_line) + UNIX_SKB_NS + copy_cost(size);
    // unix_state_lock(other); skb_queue_tail(&other->sk_receive_queue); unlock.
    let other = unix_peer(sk);
    c += sock_lock(k, cpu, other);
    k.ipc.socks.queue_tail(other, size);
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
        let Some((len, consumed)) = k.ipc.socks[sk as usize].receive_queue.front() else {
            if s.done > 0 {
                s.at = UnixAt::Ret;
            } else {
                s.at = UnixAt::Wait;
            }
            return Next::Cont(c);
        };
        let chunk = (len - consumed).min(s.len - s.done);
        let emptied = consumed + chunk == len;
        s.done += chunk;
        c += copy_cost(chunk);
        if emptied {
            k.ipc.socks.unlink_head(sk);
            let (owner, truesize) = (unix_peer(sk), unix_skb_truesize(len));
            // consume_skb() -> sock_wfree(): uncharge the sender, then its sk_write_space.
            let oline = k.ipc.socks[owner as usize].line;
            c += k.line_write(cpu, oline) + UNIX_SKB_FREE_NS;
            let o = &mut k.ipc.socks[owner as usize];
            o.wmem_alloc -= truesize;
            let writable = o.wmem_alloc as u64 * 4 <= SK_SNDBUF;
            let owq = o.wq;
            if writable && waitqueue_active(k, owq) {
                s.at = if s.done == s.len { UnixAt::Ret } else { UnixAt::LoopLocked };
                return Next::Call(c, wake_up_interruptible_sync_poll(owq, EPOLLOUT | EPOLLWRNORM | EPOLLWRBAND));
            }
        } else {
            k.ipc.socks[sk as usize].receive_queue.consume(chunk);
        }
        if s.done == s.len {
            s.at = UnixAt::Ret;
            return Next::Cont(c);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Clone)]
    enum Op {
        /// Queue an skb of this length at the tail.
        Push(u32),
        /// Read this many bytes from the head skb (at most what is left in it); unlink it when
        /// it is emptied.
        Read(u32),
    }

    fn op() -> impl proptest::strategy::Strategy<Value = Op> {
        use proptest::prelude::*;
        prop_oneof![
            3 => prop_oneof![Just(100u32), Just(1), 1..300u32].prop_map(Op::Push),
            3 => (1..150u32).prop_map(Op::Read),
        ]
    }

    proptest::proptest! {
        /// Any sequence of queueing and (partial) reading sees the same head and the same
        /// queue contents as a `VecDeque` of (length, bytes read) skbs.
        #[test]
        fn skb_queue_head_behaves_like_a_vecdeque(ops in proptest::collection::vec(op(), 1..300)) {
            let mut q = SkbQueueHead::default();
            let mut more = VecDeque::new();
            let mut r: VecDeque<(u32, u32)> = VecDeque::new();
            for o in ops {
                match o {
                    Op::Push(len) => {
                        q.push_back(&mut more, len);
                        r.push_back((len, 0));
                    }
                    Op::Read(n) => {
                        proptest::prop_assert_eq!(q.front(), r.front().copied());
                        let Some((len, consumed)) = q.front() else { continue };
                        let n = n.min(len - consumed);
                        if consumed + n == len {
                            q.pop_front(&mut more);
                            r.pop_front();
                        } else {
                            q.consume(n);
                            r[0].1 += n;
                        }
                    }
                }
                proptest::prop_assert_eq!(q.is_empty(), r.is_empty());
                proptest::prop_assert_eq!(q.front(), r.front().copied());
                let got: Vec<(u32, u32)> = q.iter(&more).collect();
                proptest::prop_assert_eq!(got, r.iter().copied().collect::<Vec<_>>());
                proptest::prop_assert_eq!(q.count & RQ_MORE != 0, !more.is_empty());
            }
        }
    }

    #[test]
    fn truesize_fast_path_agrees_with_the_general_formula() {
        assert_eq!(unix_skb_truesize(100), 896);
        for size in (0..70_000).chain([106_432, 110_000]) {
            assert_eq!(unix_skb_truesize(size), unix_skb_truesize_large(size), "size {size}");
        }
    }

    #[test]
    fn both_ends_of_a_pair_share_one_host_cache_line() {
        assert_eq!(std::mem::size_of::<UnixSock>(), 32);
        assert_eq!(std::mem::size_of::<SockPair>(), 64);
        assert_eq!(std::mem::align_of::<SockPair>(), 64);
        let mut socks = Socks::default();
        for _ in 0..3 {
            socks.push_pair([UnixSock::default(); 2]);
        }
        for sk in 0..socks.len() {
            let a = &socks[sk] as *const UnixSock as usize;
            let b = &socks[unix_peer(sk as SockId) as usize] as *const UnixSock as usize;
            assert_eq!(a / 64, b / 64, "socket {sk} and its peer");
        }
    }

    #[test]
    fn receive_queue_lists_skbs_owned_by_the_peer_with_their_truesize() {
        let mut socks = Socks::default();
        socks.push_pair([UnixSock::default(); 2]);
        for len in [100, 100, 5000, 100] {
            socks.queue_tail(1, len);
        }
        socks[1].receive_queue.consume(40);
        let got: Vec<Skb> = socks.receive_queue(1).collect();
        let want: Vec<Skb> = [(100, 40), (100, 0), (5000, 0), (100, 0)]
            .map(|(len, consumed)| Skb { len, consumed, truesize: unix_skb_truesize(len), owner: 0 })
            .into();
        assert_eq!(got, want);
        socks.unlink_head(1);
        socks.unlink_head(1);
        assert_eq!(socks.receive_queue(1).map(|s| s.len).collect::<Vec<_>>(), [5000, 100]);
        assert_eq!(socks.receive_queue(0).count(), 0);
    }
}
