//! Models `struct sock` as the loopback TCP and UDP paths use it — net/core/sock.c,
//! net/core/stream.c, include/net/sock.h @ v6.10:
//!
//! - **The socket lock.** `lock_sock()` makes the calling task the owner
//!   (`sk_lock.owned`) under the `sk_lock.slock` spinlock; the softirq receive path takes only
//!   the spinlock (`bh_lock_sock()`) and, while a task owns the socket, appends the packet to
//!   the socket's backlog (`sk_add_backlog()`) instead of processing it. `release_sock()`
//!   processes that backlog in the owner's context (`__release_sock()`: each packet with bottom
//!   halves enabled, so the ACKs it sends run their NET_RX softirq right there), runs
//!   `tcp_release_cb()` and gives ownership up. `sk_flush_backlog()` does the same without
//!   giving it up.
//! - **Wakeups.** `sock_def_readable()` (`sk_data_ready`) wakes the socket's wait queue with
//!   `wake_up_interruptible_sync_poll()` (WF_SYNC) if anyone sleeps there;
//!   `sk_stream_write_space()` (TCP's `sk_write_space`) wakes it with
//!   `wake_up_interruptible_poll()` (no WF_SYNC) once `sk_stream_is_writeable()`: free send
//!   space of at least half of what is queued (`sk_stream_wspace() >= sk_stream_min_wspace()`).
//! - **Waiting.** `sk_wait_data()` and `sk_stream_wait_memory()` queue the task on the socket's
//!   wait queue, `release_sock()`, test the condition and sleep (`sk_wait_event()` with
//!   `wait_woken()`); woken, they `lock_sock()` again and re-test. The model queues the entry
//!   when it tests the condition (one step, so no wakeup can fall between the test and the
//!   sleep, which is what `woken_wake_function()` guarantees in the kernel); the entry is an
//!   autoremove one (the kernel's stays queued until `remove_wait_queue()`: a second wakeup
//!   finds the task running, which the model saves a visit for).
//!
//! Simplifications: one task uses a socket at a time (the owner never finds another task
//! owning it, so `__lock_sock()`'s sleep is not modelled), no `SO_RCVLOWAT`/`SO_RCVTIMEO`,
//! no signals, no socket errors or shutdown. `sk_lock.slock`, the backlog and the queues are
//! one modelled cache line per socket (its peer's is another).

use super::dev::Pkt;
use crate::hw::cacheline::LineId;
use crate::linux::kernel::wait::WqId;
use crate::linux::{CpuId, Kernel, TaskId};
use crate::sim::Time;
use std::collections::VecDeque;

/// Index of an AF_INET socket in [`crate::linux::net::Net::socks`].
pub type InetId = u32;

/// The protocol of a socket.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Proto {
    Tcp,
    Udp,
}

/// `SOCK_MIN_SNDBUF` and `SOCK_MIN_RCVBUF` on x86-64 v6.10 (`2 * TCP_SKB_MIN_TRUESIZE`, and
/// `TCP_SKB_MIN_TRUESIZE` = 2048 + `SKB_DATA_ALIGN(sizeof(struct sk_buff))`).
pub const SOCK_MIN_SNDBUF: u32 = 2 * (2048 + 256);
pub const SOCK_MIN_RCVBUF: u32 = 2048 + 256;
/// `sysctl_wmem_default` / `sysctl_rmem_default` (`SK_WMEM_MAX`, `SK_RMEM_MAX`): 212992.
pub const SK_MEM_DEFAULT: u32 = 212_992;

/// A received skb on a socket's receive queue: its length, bytes already read and truesize.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RcvSkb {
    pub len: u32,
    pub consumed: u32,
    pub truesize: u32,
}

/// The delayed-ACK engine of a TCP socket (`icsk->icsk_ack`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct IcskAck {
    /// `ICSK_ACK_*` bits of `pending`.
    pub pending: u8,
    /// Quick ACKs left (`quick`), the ping-pong count, the ACK timeout (jiffies, `ato`), the
    /// last data arrival (jiffies, `lrcvtime`), the estimated peer MSS (`rcv_mss`) and the
    /// size of the last small segment (`last_seg_size`).
    pub quick: u8,
    pub pingpong: u8,
    pub ato: u32,
    pub lrcvtime: u64,
    pub rcv_mss: u32,
    pub last_seg_size: u32,
    /// When the delayed-ACK timer expires (jiffies), and the CPU whose wheel holds it, while
    /// armed.
    pub timeout: Option<u64>,
    pub timer_cpu: Option<CpuId>,
}

/// `ICSK_ACK_*` (include/net/inet_connection_sock.h).
pub const ICSK_ACK_SCHED: u8 = 1;
pub const ICSK_ACK_TIMER: u8 = 2;
pub const ICSK_ACK_PUSHED: u8 = 4;
pub const ICSK_ACK_PUSHED2: u8 = 8;
pub const ICSK_ACK_NOW: u8 = 16;

/// The TCP part of a socket (`struct tcp_sock` and what of `inet_connection_sock` the
/// loopback paths use). Sequence numbers are 64-bit (they never wrap in a run).
#[derive(Debug, Clone, Default)]
pub struct TcpSock {
    // Sender.
    pub snd_una: u64,
    pub snd_nxt: u64,
    pub write_seq: u64,
    /// The right edge of the peer's advertised window (`snd_una + snd_wnd` at its last ACK).
    pub snd_wnd_end: u64,
    /// The largest window the peer offered (`max_window`).
    pub max_window: u32,
    /// `mss_cache` (also the send size goal: see `tcp_output.rs`).
    pub mss: u32,
    /// `TCP_NODELAY`.
    pub nodelay: bool,
    /// End of the last small segment sent (`snd_sml`, for Minshall's Nagle test).
    pub snd_sml: u64,
    /// Unsent skbs (`sk_write_queue`), their lengths; the tail may still grow.
    pub write_queue: VecDeque<u32>,
    /// Sent, unacknowledged skbs (`tcp_rtx_queue`): their end sequence and truesize.
    pub rtx_queue: VecDeque<(u64, u32)>,
    /// `SOCK_NOSPACE`: a writer found no send space.
    pub nospace: bool,
    // Receiver.
    pub rcv_nxt: u64,
    pub copied_seq: u64,
    /// `rcv_wup`: `rcv_nxt` when the window was last advertised; `rcv_wnd` its size.
    pub rcv_wup: u64,
    pub rcv_wnd: u32,
    pub ack: IcskAck,
}

/// An AF_INET socket (`struct sock` with its `inet_sock` and `tcp_sock`/`udp_sock`).
#[derive(Debug, Clone)]
pub struct InetSock {
    pub proto: Proto,
    /// The other end of the connection (a connected UDP socket's peer, for UDP).
    pub peer: InetId,
    /// `sk_sleep(sk)`: readers and writers wait here.
    pub wq: WqId,
    /// The line of `sk_lock.slock`, the backlog and the receive queue.
    pub line: LineId,
    /// When the current `sk_lock.slock` section ends.
    pub slock_free_at: Time,
    /// `sk_lock.owned` and its owner.
    pub owned: bool,
    pub owner: TaskId,
    /// `sk_backlog`: packets that arrived while the owner held the socket, and their
    /// truesize (`sk_backlog.len`).
    pub backlog: VecDeque<Pkt>,
    pub backlog_len: u32,
    /// `sk_sndbuf`, `sk_rcvbuf`, and whether `SO_SNDBUF`/`SO_RCVBUF` set them (locking out
    /// autotuning).
    pub sndbuf: u32,
    pub rcvbuf: u32,
    pub sndbuf_locked: bool,
    pub rcvbuf_locked: bool,
    /// `sk_wmem_queued` (TCP: the write and retransmit queues' truesize) and `sk_rmem_alloc`
    /// (the receive queue's).
    pub wmem_queued: u32,
    pub rmem_alloc: u32,
    /// `sk_wmem_alloc` beyond its base: the truesize of the socket's skbs below the protocol
    /// (TCP's clones, UDP's datagrams). On loopback it is back to 0 by the time any path reads
    /// it: `loopback_xmit()` orphans each skb inside the transmit call.
    pub wmem_alloc: u32,
    /// `sk_receive_queue`.
    pub receive_queue: VecDeque<RcvSkb>,
    pub tcp: TcpSock,
    /// Bytes the application handed to `sendmsg()` and got from `recvmsg()`.
    pub bytes_sent: u64,
    pub bytes_received: u64,
    /// Datagrams this socket dropped on receive (UDP, receive buffer full), and their bytes.
    pub drops: u64,
    pub drop_bytes: u64,
    /// `TCP_DELACK_TIMER_DEFERRED`: the delayed-ACK timer fired while a task owned the socket.
    pub delack_deferred: bool,
}

/// Cost of the `sk_lock.slock` section of `lock_sock()` or `release_sock()` (spin_lock_bh, the
/// owned flag, spin_unlock_bh), beyond the line transfer.
pub const SOCK_LOCK_NS: Time = 25;
/// Per packet an owner takes off its backlog in `__release_sock()` (the unlink and the
/// `sk_backlog_rcv()` call), beyond the protocol's own processing.
pub const BACKLOG_RCV_NS: Time = 20;

impl InetSock {
    pub fn new(proto: Proto, peer: InetId, wq: WqId, line: LineId) -> InetSock {
        InetSock {
            proto,
            peer,
            wq,
            line,
            slock_free_at: 0,
            owned: false,
            owner: 0,
            backlog: VecDeque::new(),
            backlog_len: 0,
            sndbuf: SK_MEM_DEFAULT,
            rcvbuf: SK_MEM_DEFAULT,
            sndbuf_locked: false,
            rcvbuf_locked: false,
            wmem_queued: 0,
            rmem_alloc: 0,
            wmem_alloc: 0,
            receive_queue: VecDeque::new(),
            tcp: TcpSock::default(),
            bytes_sent: 0,
            bytes_received: 0,
            drops: 0,
            drop_bytes: 0,
            delack_deferred: false,
        }
    }

    /// Bytes queued for reading.
    pub fn rcvq_bytes(&self) -> u64 {
        self.receive_queue.iter().map(|s| (s.len - s.consumed) as u64).sum()
    }
}

/// A short section under `sk_lock.slock` of `sk` lasting `hold` ns from when it is taken: the
/// line transfer plus the spin behind another CPU's section (a softirq delivering to the
/// socket, its owner locking or releasing it). Returns the time until the section starts.
pub fn slock_section(k: &mut Kernel, cpu: CpuId, sk: InetId, hold: Time) -> Time {
    let s = k.ipc.net.sk(sk);
    let (c, free_at) = crate::linux::fs::lock_section(k, cpu, s.line, s.slock_free_at, hold);
    k.ipc.net.sk_mut(sk).slock_free_at = free_at;
    c
}

/// Models `lock_sock()` — net/core/sock.c @ v6.10 (`lock_sock_nested()`): the current task
/// owns `sk`. Returns its time.
pub fn lock_sock(k: &mut Kernel, cpu: CpuId, sk: InetId) -> Time {
    let me = k.curr(cpu);
    let c = slock_section(k, cpu, sk, SOCK_LOCK_NS);
    let s = k.ipc.net.sk_mut(sk);
    assert!(!s.owned || s.owner == me, "socket {sk} locked by task {me} while task {} owns it", s.owner);
    s.owned = true;
    s.owner = me;
    c + SOCK_LOCK_NS
}

/// Models `sock_owned_by_user()`.
#[inline]
pub fn sock_owned_by_user(k: &Kernel, sk: InetId) -> bool {
    k.ipc.net.sk(sk).owned
}

/// Models `sock_def_readable()` — net/core/sock.c @ v6.10: if anyone sleeps on `sk`'s wait
/// queue (`skwq_has_sleeper()`), wake it with `wake_up_interruptible_sync_poll(EPOLLIN |
/// EPOLLPRI | EPOLLRDNORM | EPOLLRDBAND)`. The wakeup is queued for the running frame.
pub fn sock_def_readable(k: &mut Kernel, cpu: CpuId, sk: InetId) {
    use crate::linux::kernel::wait::{waitqueue_active, EPOLLIN, EPOLLPRI, EPOLLRDBAND, EPOLLRDNORM};
    let wq = k.ipc.net.sk(sk).wq;
    if waitqueue_active(k, wq) {
        k.ipc.net.queue_wake(
            cpu,
            crate::linux::net::PendingWake {
                wq,
                key: EPOLLIN | EPOLLPRI | EPOLLRDNORM | EPOLLRDBAND,
                wake_flags: crate::linux::kernel::sched::WF_SYNC,
                kind: crate::linux::net::WakeKind::DataReady,
            },
        );
    }
}

/// Models `sk_stream_wspace() >= sk_stream_min_wspace()` and `__sk_stream_memory_free()` —
/// include/net/sock.h @ v6.10 (`__sk_stream_is_writeable()`; `tcp_notsent_lowat` is at its
/// default, so TCP's `stream_memory_free` is true).
pub fn sk_stream_is_writeable(k: &Kernel, sk: InetId) -> bool {
    let s = k.ipc.net.sk(sk);
    let wspace = s.sndbuf as i64 - s.wmem_queued as i64;
    wspace >= (s.wmem_queued >> 1) as i64 && s.wmem_queued < s.sndbuf
}

/// Models `sk_stream_memory_free()` — include/net/sock.h @ v6.10: queued send memory below
/// `sk_sndbuf`.
pub fn sk_stream_memory_free(k: &Kernel, sk: InetId) -> bool {
    let s = k.ipc.net.sk(sk);
    s.wmem_queued < s.sndbuf
}

/// Models `sk_stream_write_space()` — net/core/stream.c @ v6.10: once writeable, clear
/// `SOCK_NOSPACE` and wake the socket's sleepers with `wake_up_interruptible_poll(EPOLLOUT |
/// EPOLLWRNORM | EPOLLWRBAND)` (not a sync wakeup). The wakeup is queued for the running frame.
pub fn sk_stream_write_space(k: &mut Kernel, cpu: CpuId, sk: InetId) {
    use crate::linux::kernel::wait::{waitqueue_active, EPOLLOUT, EPOLLWRBAND, EPOLLWRNORM};
    if !sk_stream_is_writeable(k, sk) {
        return;
    }
    k.ipc.net.sk_mut(sk).tcp.nospace = false;
    let wq = k.ipc.net.sk(sk).wq;
    if waitqueue_active(k, wq) {
        k.ipc.net.queue_wake(
            cpu,
            crate::linux::net::PendingWake {
                wq,
                key: EPOLLOUT | EPOLLWRNORM | EPOLLWRBAND,
                wake_flags: 0,
                kind: crate::linux::net::WakeKind::WriteSpace,
            },
        );
    }
}

/// Resume points of `release_sock()` / `__sk_flush_backlog()`, in code order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BacklogAt {
    /// `spin_lock_bh(&sk->sk_lock.slock)`.
    Lock,
    /// `__release_sock()`: the next packet of the backlog, or the end.
    Next,
    /// Make the wakeups the packet's processing decided on.
    Wake,
    /// The packet's transmits re-enable bottom halves: the softirq they raised runs here.
    BhEnable,
    /// Back from that softirq.
    AfterSoftirq,
    /// `cond_resched()` between packets.
    Resched,
    /// Bottom halves off again for the backlog's re-check.
    Relock,
    /// The final `spin_unlock_bh()` (after `tcp_release_cb()`).
    Unlock,
    /// Back from its softirq.
    Unlocked,
    /// Return (after a preemption at the unlock).
    Return,
}

/// `release_sock()` or `__sk_flush_backlog()` in progress.
#[derive(Debug, Clone, Copy)]
pub struct SockBacklog {
    pub sock: InetId,
    /// `release_sock()` (give ownership up) rather than `__sk_flush_backlog()`.
    pub release: bool,
    pub at: BacklogAt,
}

impl SockBacklog {
    /// `release_sock(sk)`.
    pub fn release(sk: InetId) -> crate::linux::engine::Frame {
        crate::linux::engine::Frame::SockBacklog(SockBacklog { sock: sk, release: true, at: BacklogAt::Lock })
    }

    /// `__sk_flush_backlog(sk)`.
    pub fn flush(sk: InetId) -> crate::linux::engine::Frame {
        crate::linux::engine::Frame::SockBacklog(SockBacklog { sock: sk, release: false, at: BacklogAt::Lock })
    }
}

/// `Next::Call` of `f` if there is one, else go on after `c`.
fn call_or_cont(f: Option<crate::linux::engine::Frame>, c: Time) -> crate::linux::engine::Next {
    match f {
        Some(f) => crate::linux::engine::Next::Call(c, f),
        None => crate::linux::engine::Next::Cont(c),
    }
}

/// Models `release_sock()` and `__sk_flush_backlog()` with `__release_sock()` — net/core/sock.c
/// @ v6.10: process the packets the receive path left on the backlog while the task owned the
/// socket, one at a time (the ACKs and data they send run their NET_RX softirq right after,
/// in this task), `cond_resched()` between them; then `tcp_release_cb()`, and for
/// `release_sock()` give ownership up (`sock_release_ownership()`).
///
/// The kernel processes each packet with the spinlock dropped and bottom halves enabled, each
/// transmit inside it running its softirq at its own `local_bh_enable()`; the model keeps
/// bottom halves off for the packet's step and runs that softirq right after it.
///
/// Context: task, the socket owned by the current task.
pub fn release_sock(k: &mut Kernel, cpu: CpuId, s: &mut SockBacklog) -> crate::linux::engine::Next {
    use crate::linux::engine::Next;
    use crate::linux::kernel::softirq::{local_bh_disable, local_bh_enable, local_bh_enable_done};
    let sk = s.sock;
    match s.at {
        BacklogAt::Lock => {
            local_bh_disable(k, cpu);
            let c = slock_section(k, cpu, sk, SOCK_LOCK_NS) + SOCK_LOCK_NS;
            s.at = BacklogAt::Next;
            Next::Cont(c)
        }
        BacklogAt::Next => {
            let so = k.ipc.net.sk_mut(sk);
            let Some(pkt) = so.backlog.pop_front() else {
                // tcp_release_cb(), then (release_sock()) ownership goes; spin_unlock_bh().
                let c = crate::linux::net::ipv4::tcp_input::tcp_release_cb(k, cpu, sk);
                if s.release {
                    k.ipc.net.sk_mut(sk).owned = false;
                }
                s.at = BacklogAt::Unlock;
                return Next::Cont(c);
            };
            so.backlog_len -= pkt.truesize;
            k.ipc.net.stats.rx_backlog += 1;
            let c = BACKLOG_RCV_NS + crate::linux::net::ipv4::tcp_input::tcp_v4_do_rcv(k, cpu, sk, pkt);
            s.at = BacklogAt::Wake;
            Next::Cont(c)
        }
        BacklogAt::Wake => {
            if let Some(f) = crate::linux::net::next_wake(k, cpu) {
                return Next::Call(0, f);
            }
            s.at = BacklogAt::BhEnable;
            Next::Cont(0)
        }
        BacklogAt::BhEnable | BacklogAt::Unlock => {
            let last = s.at == BacklogAt::Unlock;
            if let Some(f) = local_bh_enable(k, cpu) {
                s.at = if last { BacklogAt::Unlocked } else { BacklogAt::AfterSoftirq };
                return Next::Call(0, f);
            }
            let resched = local_bh_enable_done(k, cpu, false);
            if last {
                s.at = BacklogAt::Return;
                return match resched {
                    Some(f) => Next::Call(0, f),
                    None => Next::Ret(0),
                };
            }
            s.at = BacklogAt::Resched;
            call_or_cont(resched, 0)
        }
        BacklogAt::AfterSoftirq => {
            s.at = BacklogAt::Resched;
            call_or_cont(local_bh_enable_done(k, cpu, true), 0)
        }
        BacklogAt::Unlocked => {
            s.at = BacklogAt::Return;
            match local_bh_enable_done(k, cpu, true) {
                Some(f) => Next::Call(0, f),
                None => Next::Ret(0),
            }
        }
        BacklogAt::Resched => {
            s.at = BacklogAt::Relock;
            let c = k.costs.cond_resched;
            call_or_cont(crate::linux::kernel::sched::core::cond_resched(k, cpu), c)
        }
        BacklogAt::Relock => {
            local_bh_disable(k, cpu);
            s.at = BacklogAt::Next;
            Next::Cont(0)
        }
        BacklogAt::Return => Next::Ret(0),
    }
}
