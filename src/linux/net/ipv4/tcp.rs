//! Models `tcp_sendmsg()` and `tcp_recvmsg()` — net/ipv4/tcp.c @ v6.10 — for a loopback
//! connection, with `sk_stream_wait_memory()` (net/core/stream.c) and `sk_wait_data()`
//! (net/core/sock.c):
//!
//! - `tcp_sendmsg()`: `lock_sock()`; copy the message into the tail skb of the write queue
//!   while it is shorter than the size goal, else into a new skb: a new skb needs send space
//!   (`sk_stream_memory_free()`: `sk_wmem_queued < sk_sndbuf`; appending to the tail does not
//!   test it), and every 16th new skb first flushes the socket's backlog
//!   (`sk_flush_backlog()`: ACKs that arrived meanwhile). A full skb goes out at once
//!   (`tcp_push_one()`); at the end `tcp_push()` sends what Nagle allows. Without space:
//!   `SOCK_NOSPACE`, push what is queued (`TCP_NAGLE_PUSH`), and `sk_stream_wait_memory()`:
//!   `release_sock()` (its backlog processing may free space), then sleep until
//!   `sk_stream_write_space()` wakes the writer (the peer's ACK freed space). `release_sock()`
//!   at the end processes the ACKs the receive path left on the backlog while we owned the
//!   socket.
//! - `tcp_recvmsg()` -> `tcp_recvmsg_locked()`: `lock_sock()`; copy from the receive queue up
//!   to `len`; once `target` bytes (1, or `len` with `MSG_WAITALL`) are copied and the backlog
//!   is empty, stop; with the target met but packets on the backlog, flush it and go on;
//!   short of the target, `tcp_cleanup_rbuf()` then `sk_wait_data()` (`release_sock()`, sleep
//!   until `sock_def_readable()` wakes us, `lock_sock()`). At the end `tcp_cleanup_rbuf()`
//!   sends an ACK if one is due (a read that drained a pushed segment, more than one MSS
//!   unacknowledged, or a window at least twice as large to offer) and `release_sock()`.
//!
//! Every transmit happens with bottom halves disabled (`__dev_queue_xmit()`), and the NET_RX
//! softirq it raises runs at their re-enabling, in the sending task's context: the
//! receiving socket's processing, and its wakeup, happen there (docs/workloads.md §5).
//!
//! Simplifications: no `MSG_MORE`/`MSG_EOR`/zerocopy/urgent data, no `forced_push()` (a full
//! skb is always the one `tcp_push_one()` sends), no `tcp_rcv_space_adjust()`; the segments
//! one `tcp_write_xmit()` sends reach the backlog together and their softirq runs once after
//! the last (the kernel runs it after each `__dev_queue_xmit()`).

use super::tcp_output::{tcp_push, tcp_receive_window, tcp_send_ack, tcp_write_xmit, TCP_SKB_OVERHEAD};
use crate::linux::engine::{Frame, Next};
use crate::linux::fs::pipe::copy_cost;
use crate::linux::kernel::entry::common::{syscall_enter, syscall_exit_to_user_mode};
use crate::linux::kernel::sched::core::ScheduleCaller;
use crate::linux::kernel::softirq::local_bh_disable;
use crate::linux::kernel::wait::{finish_wait, prepare_to_wait};
use crate::linux::net::core::sock::{
    lock_sock, sk_stream_memory_free, InetId, SockBacklog, ICSK_ACK_PUSHED, ICSK_ACK_PUSHED2, ICSK_ACK_SCHED,
};
use crate::linux::net::socket::{after_xmit, bh_enable_step, InetAt, InetOp};
use crate::linux::{CpuId, Kernel};
use crate::sim::Time;

/// `tcp_sendmsg()` per call beyond the syscall: `tcp_send_mss()`, the loop's set-up, the
/// timestamping and the return (docs/costs.md, "Loopback networking").
pub const TCP_SENDMSG_NS: Time = 200;
/// Per new skb: `tcp_stream_alloc_skb()`, `tcp_skb_entail()`, `sk_wmem_schedule()`.
pub const TCP_SKB_ALLOC_NS: Time = 80;
/// `tcp_recvmsg()` per call beyond the syscall: the loop, `tcp_rcv_space_adjust()`,
/// `tcp_cleanup_rbuf()`'s tests.
pub const TCP_RECVMSG_NS: Time = 200;
/// Per skb read to its end: unlink, `tcp_eat_recv_skb()` -> `__kfree_skb()` (its send memory
/// was the peer's; the receive memory goes back here).
pub const TCP_SKB_FREE_NS: Time = 60;

/// `tcp_sendmsg_locked()`'s `process_backlog` threshold.
const SENDMSG_FLUSH_EVERY: u8 = 16;

/// Models `tcp_sendmsg()` — net/ipv4/tcp.c @ v6.10 (see the module doc). Returns the count
/// sent.
pub fn tcp_sendmsg(k: &mut Kernel, cpu: CpuId, s: &mut InetOp) -> Next {
    if let Some(n) = bh_enable_step(k, cpu, s) {
        return n;
    }
    let sk = s.sock;
    let me = k.curr(cpu);
    match s.at {
        InetAt::Enter => {
            let c = syscall_enter(k) + TCP_SENDMSG_NS + lock_sock(k, cpu, sk);
            s.at = InetAt::Loop;
            Next::Cont(c)
        }
        InetAt::Loop => {
            let mut c = 0;
            loop {
                if s.done == s.len {
                    s.at = InetAt::Out;
                    return Next::Cont(c);
                }
                let t = &k.ipc.net.sk(sk).tcp;
                let goal = t.mss;
                let room = t.write_queue.back().map_or(0, |&l| goal.saturating_sub(l));
                if room == 0 {
                    // new_segment:
                    if !sk_stream_memory_free(k, sk) {
                        s.at = InetAt::WaitSpace;
                        return Next::Cont(c);
                    }
                    if s.n >= SENDMSG_FLUSH_EVERY {
                        s.n = 0;
                        if !k.ipc.net.sk(sk).backlog.is_empty() {
                            // sk_flush_backlog(), then restart.
                            return Next::Call(c, SockBacklog::flush(sk));
                        }
                    }
                    let so = k.ipc.net.sk_mut(sk);
                    so.tcp.write_queue.push_back(0);
                    so.wmem_queued += TCP_SKB_OVERHEAD;
                    s.n = s.n.saturating_add(1);
                    c += TCP_SKB_ALLOC_NS;
                    continue;
                }
                let copy = room.min(s.len - s.done);
                let so = k.ipc.net.sk_mut(sk);
                *so.tcp.write_queue.back_mut().expect("a tail skb") += copy;
                so.tcp.write_seq += copy as u64;
                so.wmem_queued += copy;
                so.bytes_sent += copy as u64;
                s.done += copy;
                c += copy_cost(copy);
                if s.done == s.len {
                    s.at = InetAt::Out;
                    return Next::Cont(c);
                }
                // The tail skb is full: tcp_push_one() if it is the send head.
                if k.ipc.net.sk(sk).tcp.write_queue.len() == 1 {
                    local_bh_disable(k, cpu);
                    let (x, _) = tcp_write_xmit(k, cpu, sk, false);
                    return after_xmit(s, InetAt::Loop, c + x);
                }
            }
        }
        InetAt::WaitSpace => {
            // wait_for_space: SOCK_NOSPACE; push what is queued (TCP_NAGLE_PUSH).
            k.ipc.net.sk_mut(sk).tcp.nospace = true;
            if s.done > 0 {
                local_bh_disable(k, cpu);
                let (x, _) = tcp_push(k, cpu, sk, true);
                return after_xmit(s, InetAt::WaitMem, x);
            }
            s.at = InetAt::WaitMem;
            Next::Cont(0)
        }
        InetAt::WaitMem => {
            // sk_stream_wait_memory(): done once memory is free; else release and wait.
            if sk_stream_memory_free(k, sk) {
                s.at = InetAt::Loop;
                return Next::Cont(0);
            }
            k.ipc.net.sk_mut(sk).tcp.nospace = true;
            s.at = InetAt::WaitCheck;
            Next::Call(0, SockBacklog::release(sk))
        }
        InetAt::WaitCheck => {
            // sk_wait_event(): the condition once more, with the socket released.
            if sk_stream_memory_free(k, sk) {
                s.at = InetAt::WaitMem;
                return Next::Cont(lock_sock(k, cpu, sk));
            }
            let wq = k.ipc.net.sk(sk).wq;
            prepare_to_wait(k, wq, me, false);
            k.ipc.net.stats.wait_memory_sleeps += 1;
            s.at = InetAt::Woken;
            Next::Call(0, Frame::ScheduleCaller(ScheduleCaller::schedule()))
        }
        InetAt::Woken => {
            let wq = k.ipc.net.sk(sk).wq;
            finish_wait(k, wq, me);
            s.at = InetAt::WaitMem;
            Next::Cont(lock_sock(k, cpu, sk))
        }
        InetAt::Out => {
            // tcp_push() with the socket's Nagle setting.
            local_bh_disable(k, cpu);
            let (x, _) = tcp_push(k, cpu, sk, false);
            after_xmit(s, InetAt::Release, x)
        }
        InetAt::Release => {
            s.at = InetAt::Ret;
            Next::Call(0, SockBacklog::release(sk))
        }
        InetAt::Ret => {
            let r = s.done as i64;
            Next::Ret(syscall_exit_to_user_mode(k, cpu, r))
        }
        InetAt::WaitData | InetAt::BhEnable | InetAt::AfterSoftirq => {
            unreachable!("tcp_sendmsg at {:?}", s.at)
        }
    }
}

/// Copy up to `s.len - s.done` bytes from `sk`'s receive queue (`tcp_recvmsg_locked()`'s copy
/// loop with `skb_copy_datagram_msg()` and `tcp_eat_recv_skb()`). Returns its time.
fn tcp_copy_from_queue(k: &mut Kernel, sk: InetId, s: &mut InetOp) -> Time {
    let mut c = 0;
    let so = k.ipc.net.sk_mut(sk);
    while s.done < s.len {
        let Some(skb) = so.receive_queue.front_mut() else { break };
        let chunk = (skb.len - skb.consumed).min(s.len - s.done);
        skb.consumed += chunk;
        s.done += chunk;
        so.tcp.copied_seq += chunk as u64;
        so.bytes_received += chunk as u64;
        c += copy_cost(chunk);
        if skb.consumed == skb.len {
            let t = skb.truesize;
            so.receive_queue.pop_front();
            so.rmem_alloc -= t;
            c += TCP_SKB_FREE_NS;
        }
    }
    c
}

/// Models `__tcp_cleanup_rbuf()` — net/ipv4/tcp.c @ v6.10: after a read that copied `copied`
/// bytes, is an ACK due? (A scheduled ACK when more than one MSS is unacknowledged, or the
/// read drained a pushed segment and the connection is not ping-pong; else a window at least
/// twice the one left to offer.)
fn tcp_cleanup_rbuf_due(k: &Kernel, sk: InetId, copied: u32) -> bool {
    let so = k.ipc.net.sk(sk);
    let t = &so.tcp;
    let a = &t.ack;
    if a.pending & ICSK_ACK_SCHED != 0 {
        let pingpong = a.pingpong >= super::tcp_input::TCP_PINGPONG_THRESH;
        if t.rcv_nxt - t.rcv_wup > a.rcv_mss as u64
            || (copied > 0
                && (a.pending & ICSK_ACK_PUSHED2 != 0 || (a.pending & ICSK_ACK_PUSHED != 0 && !pingpong))
                && so.rmem_alloc == 0)
        {
            return true;
        }
    }
    if copied > 0 {
        let now = tcp_receive_window(k, sk);
        let clamp = super::tcp_output::tcp_win_from_space(so.rcvbuf as i64) as u32;
        if 2 * now <= clamp {
            let new = super::tcp_output::__tcp_select_window(k, sk);
            if new > 0 && new >= 2 * now {
                return true;
            }
        }
    }
    false
}

/// Models `tcp_recvmsg()` — net/ipv4/tcp.c @ v6.10 (see the module doc). Returns the count
/// copied.
pub fn tcp_recvmsg(k: &mut Kernel, cpu: CpuId, s: &mut InetOp) -> Next {
    if let Some(n) = bh_enable_step(k, cpu, s) {
        return n;
    }
    let sk = s.sock;
    let me = k.curr(cpu);
    match s.at {
        InetAt::Enter => {
            let c = syscall_enter(k) + TCP_RECVMSG_NS + lock_sock(k, cpu, sk);
            s.at = InetAt::Loop;
            Next::Cont(c)
        }
        InetAt::Loop => {
            let c = tcp_copy_from_queue(k, sk, s);
            let backlog = !k.ipc.net.sk(sk).backlog.is_empty();
            if s.done >= s.target && (!backlog || s.done == s.len) {
                s.at = InetAt::Out;
                return Next::Cont(c);
            }
            if s.done >= s.target {
                // Do not sleep, just process the backlog (__sk_flush_backlog()), then copy on.
                return Next::Call(c, SockBacklog::flush(sk));
            }
            // tcp_cleanup_rbuf() before sleeping.
            if tcp_cleanup_rbuf_due(k, sk, s.done) {
                local_bh_disable(k, cpu);
                let x = tcp_send_ack(k, cpu, sk);
                return after_xmit(s, InetAt::WaitData, c + x);
            }
            s.at = InetAt::WaitData;
            Next::Cont(c)
        }
        InetAt::WaitData => {
            // sk_wait_data() -> sk_wait_event(): release_sock() first.
            s.at = InetAt::WaitCheck;
            Next::Call(0, SockBacklog::release(sk))
        }
        InetAt::WaitCheck => {
            if !k.ipc.net.sk(sk).receive_queue.is_empty() {
                s.at = InetAt::Loop;
                return Next::Cont(lock_sock(k, cpu, sk));
            }
            let wq = k.ipc.net.sk(sk).wq;
            prepare_to_wait(k, wq, me, false);
            s.at = InetAt::Woken;
            Next::Call(0, Frame::ScheduleCaller(ScheduleCaller::schedule()))
        }
        InetAt::Woken => {
            let wq = k.ipc.net.sk(sk).wq;
            finish_wait(k, wq, me);
            s.at = InetAt::Loop;
            Next::Cont(lock_sock(k, cpu, sk))
        }
        InetAt::Out => {
            if tcp_cleanup_rbuf_due(k, sk, s.done) {
                local_bh_disable(k, cpu);
                let x = tcp_send_ack(k, cpu, sk);
                return after_xmit(s, InetAt::Release, x);
            }
            s.at = InetAt::Release;
            Next::Cont(0)
        }
        InetAt::Release => {
            s.at = InetAt::Ret;
            Next::Call(0, SockBacklog::release(sk))
        }
        InetAt::Ret => {
            let r = s.done as i64;
            Next::Ret(syscall_exit_to_user_mode(k, cpu, r))
        }
        InetAt::WaitSpace | InetAt::WaitMem | InetAt::BhEnable | InetAt::AfterSoftirq => {
            unreachable!("tcp_recvmsg at {:?}", s.at)
        }
    }
}
