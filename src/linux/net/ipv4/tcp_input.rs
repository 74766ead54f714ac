//! Models the TCP receive paths of `net/ipv4/tcp_ipv4.c` and `net/ipv4/tcp_input.c` @ v6.10
//! for an established loopback connection:
//!
//! - `tcp_v4_rcv()` (softirq): under `bh_lock_sock()`, a socket its owner holds
//!   (`sock_owned_by_user()`) gets the packet on its backlog (`tcp_add_backlog()`), processed
//!   later by the owner's `release_sock()`; otherwise `tcp_v4_do_rcv()` ->
//!   `tcp_rcv_established()` runs now.
//! - `tcp_rcv_established()`: data is queued (`tcp_queue_rcv()`), the delayed-ACK engine
//!   notes it (`tcp_event_data_recv()`, `tcp_measure_rcv_mss()`), the ACK it carries is
//!   processed (`tcp_ack()`: acknowledged skbs leave the retransmit queue and give their
//!   send memory back; the window moves), `tcp_data_snd_check()` sends what the new window
//!   and Nagle allow and, if a writer found no space (`SOCK_NOSPACE`), `tcp_check_space()` ->
//!   `sk_stream_write_space()` wakes it: this is the ACK clocking of a stream; then
//!   `__tcp_ack_snd_check()` sends an ACK now or arms the delayed ACK, and `tcp_data_ready()`
//!   -> `sock_def_readable()` wakes the reader (WF_SYNC).
//! - `__tcp_ack_snd_check()`: an ACK now when more than one full segment (`rcv_mss`) arrived
//!   since the last window advertisement and the window would not shrink, in quick-ACK mode
//!   (the first segments of a connection: `quick` up to 16, not in ping-pong mode), or when
//!   forced; otherwise a delayed ACK. A socket that answers within `ato` of receiving
//!   (`tcp_event_data_sent()`) is in ping-pong mode: request/response traffic carries its
//!   ACKs on the answers.
//! - The delayed-ACK timer (`tcp_delack_timer()`, TIMER softirq): sends the ACK, or, while the
//!   owner holds the socket, leaves it to `tcp_release_cb()`.
//!
//! Simplifications: segments arrive in order and are never lost (no out-of-order queue, no
//! SACK, no retransmission); receive skbs are not coalesced (`tcp_try_coalesce()`), each
//! keeps its own truesize; no receive-buffer autotuning (`tcp_rcv_space_adjust()`) nor
//! send-buffer growth (`tcp_sndbuf_expand()` after connection set-up); `ato` stays at
//! `TCP_ATO_MIN` outside quick-ACK adjustments.

use super::tcp_output::{
    __tcp_select_window, tcp_ato_min, tcp_mss_for_window, tcp_send_ack, tcp_send_delayed_ack, tcp_write_xmit,
};
use crate::linux::net::core::dev::{Pkt, TCPHDR_PSH};
use crate::linux::net::core::sock::{
    sk_stream_write_space, slock_section, sock_def_readable, InetId, RcvSkb, ICSK_ACK_NOW, ICSK_ACK_PUSHED,
    ICSK_ACK_PUSHED2, ICSK_ACK_SCHED, ICSK_ACK_TIMER,
};
use crate::linux::{CpuId, Kernel};
use crate::sim::Time;

/// `TCP_MAX_QUICKACKS`.
pub const TCP_MAX_QUICKACKS: u8 = 16;
/// `TCP_PINGPONG_THRESH` (1 again since v6.2).
pub const TCP_PINGPONG_THRESH: u8 = 1;
/// `TCP_MIN_MSS`.
const TCP_MIN_MSS: u32 = 88;
/// `tp->tcp_header_len` with timestamps.
const TCP_HEADER_LEN: u32 = 32;

/// `tcp_v4_rcv()` per packet: the socket lookup (`__inet_lookup_skb()`), the header checks,
/// `bh_lock_sock()` (docs/costs.md).
pub const TCP_V4_RCV_NS: Time = 150;
/// `tcp_rcv_established()` queueing a data segment: `tcp_queue_rcv()`,
/// `tcp_event_data_recv()`, `tcp_data_ready()`'s test.
pub const TCP_RCV_DATA_NS: Time = 120;
/// `tcp_ack()` with no skb to free (the window update, `tcp_ack_update_rtt()` ...), and per
/// skb it frees from the retransmit queue (`tcp_clean_rtx_queue()`).
pub const TCP_ACK_NS: Time = 80;
pub const TCP_CLEAN_RTX_NS: Time = 40;
/// `tcp_add_backlog()`.
pub const TCP_ADD_BACKLOG_NS: Time = 40;

/// Models `tcp_v4_rcv()` — net/ipv4/tcp_ipv4.c @ v6.10 (see the module doc). Returns its time
/// (the `bh_lock_sock()` section included).
///
/// Context: NET_RX softirq.
pub fn tcp_v4_rcv(k: &mut Kernel, cpu: CpuId, pkt: Pkt) -> Time {
    let sk = pkt.dst;
    let c = if crate::linux::net::core::sock::sock_owned_by_user(k, sk) {
        // tcp_add_backlog(): the owner processes it at release_sock().
        let s = k.ipc.net.sk_mut(sk);
        s.backlog_len += pkt.truesize;
        s.backlog.push_back(pkt);
        TCP_ADD_BACKLOG_NS
    } else {
        tcp_v4_do_rcv(k, cpu, sk, pkt)
    };
    TCP_V4_RCV_NS + slock_section(k, cpu, sk, c) + c
}

/// Models `tcp_v4_do_rcv()` -> `tcp_rcv_established()` — net/ipv4/tcp_ipv4.c, tcp_input.c @
/// v6.10 (see the module doc). Returns its time. Segments it sends go onto `cpu`'s backlog;
/// wakeups are queued for the running frame.
///
/// Context: NET_RX softirq, or the owner's `__release_sock()` (task context).
pub fn tcp_v4_do_rcv(k: &mut Kernel, cpu: CpuId, sk: InetId, pkt: Pkt) -> Time {
    let mut c = 0;
    if pkt.len > 0 {
        c += TCP_RCV_DATA_NS;
        // tcp_queue_rcv(): in order on loopback.
        let s = k.ipc.net.sk_mut(sk);
        debug_assert_eq!(pkt.seq, s.tcp.rcv_nxt, "socket {sk}: out-of-order segment on loopback");
        s.tcp.rcv_nxt += pkt.len as u64;
        s.rmem_alloc += pkt.truesize;
        s.receive_queue.push_back(RcvSkb { len: pkt.len, consumed: 0, truesize: pkt.truesize });
        tcp_event_data_recv(k, sk, &pkt);
        // The fast path's `ack_seq != snd_una` test; a segment whose window differs from the
        // predicted one takes the slow path, which also runs tcp_data_snd_check().
        let t = &k.ipc.net.sk(sk).tcp;
        let acked_new = pkt.ack != t.snd_una || pkt.wnd_end > t.snd_wnd_end;
        c += tcp_ack(k, cpu, sk, &pkt);
        if acked_new {
            c += tcp_data_snd_check(k, cpu, sk);
        }
        if k.ipc.net.sk(sk).tcp.ack.pending & ICSK_ACK_SCHED != 0 {
            c += __tcp_ack_snd_check(k, cpu, sk);
        }
        tcp_data_ready(k, cpu, sk);
    } else {
        c += tcp_ack(k, cpu, sk, &pkt);
        c += tcp_data_snd_check(k, cpu, sk);
    }
    c
}

/// Models `tcp_ack()` with `tcp_clean_rtx_queue()` and `tcp_ack_update_window()` —
/// net/ipv4/tcp_input.c @ v6.10: free the fully acknowledged skbs (their send memory goes back
/// to `sk_wmem_queued`), move `snd_una`, take the peer's new window; a larger window than
/// ever offered re-syncs the MSS (`tcp_sync_mss()`). Returns its time.
fn tcp_ack(k: &mut Kernel, _cpu: CpuId, sk: InetId, pkt: &Pkt) -> Time {
    let s = k.ipc.net.sk_mut(sk);
    let mut c = TCP_ACK_NS;
    if pkt.ack > s.tcp.snd_una {
        while let Some(&(end, truesize)) = s.tcp.rtx_queue.front() {
            if end > pkt.ack {
                break;
            }
            s.tcp.rtx_queue.pop_front();
            s.wmem_queued -= truesize;
            c += TCP_CLEAN_RTX_NS;
        }
        s.tcp.snd_una = pkt.ack;
    }
    if pkt.wnd_end > s.tcp.snd_wnd_end {
        s.tcp.snd_wnd_end = pkt.wnd_end;
    }
    let nwin = (pkt.wnd_end - pkt.ack) as u32;
    if nwin > s.tcp.max_window {
        s.tcp.max_window = nwin;
        s.tcp.mss = tcp_mss_for_window(nwin);
    }
    c
}

/// Models `tcp_data_snd_check()` -> `tcp_push_pending_frames()` and `tcp_check_space()` ->
/// `tcp_new_space()` -> `sk_stream_write_space()` — net/ipv4/tcp_input.c @ v6.10: send what
/// the window now allows (with the socket's Nagle setting), and wake a writer that found no
/// send space once the socket is writeable. Returns its time.
pub fn tcp_data_snd_check(k: &mut Kernel, cpu: CpuId, sk: InetId) -> Time {
    let (c, _) = tcp_write_xmit(k, cpu, sk, false);
    if k.ipc.net.sk(sk).tcp.nospace {
        sk_stream_write_space(k, cpu, sk);
    }
    c
}

/// Models `tcp_event_data_recv()` with `tcp_measure_rcv_mss()` and `tcp_incr_quickack()` —
/// net/ipv4/tcp_input.c @ v6.10: schedule an ACK, update the estimate of the peer's MSS and the
/// PUSHED flags, and adapt `ato` to the arrival gap (the first segment starts quick-ACK mode).
fn tcp_event_data_recv(k: &mut Kernel, sk: InetId, pkt: &Pkt) {
    let now_j = k.jiffies();
    let ato_min = tcp_ato_min(k);
    let rwin = super::tcp_output::tcp_receive_window(k, sk);
    let a = &mut k.ipc.net.sk_mut(sk).tcp.ack;
    a.pending |= ICSK_ACK_SCHED;
    tcp_measure_rcv_mss(a, pkt);
    if a.ato == 0 {
        // The first data segment: initialise the delayed-ACK engine.
        tcp_incr_quickack(a, rwin, TCP_MAX_QUICKACKS);
        a.ato = ato_min;
    } else {
        let m = now_j.saturating_sub(a.lrcvtime) as u32;
        if m <= ato_min / 2 {
            a.ato = (a.ato >> 1) + ato_min / 2;
        } else if m < a.ato {
            a.ato = (a.ato >> 1) + m;
        }
    }
    a.lrcvtime = now_j;
}

/// Models `tcp_incr_quickack()`.
fn tcp_incr_quickack(a: &mut crate::linux::net::core::sock::IcskAck, rwin: u32, max: u8) {
    let q = (rwin / (2 * a.rcv_mss.max(1))).max(2).min(max as u32) as u8;
    if q > a.quick {
        a.quick = q;
    }
}

/// Models `tcp_measure_rcv_mss()` — net/ipv4/tcp_input.c @ v6.10.
fn tcp_measure_rcv_mss(a: &mut crate::linux::net::core::sock::IcskAck, pkt: &Pkt) {
    let lss = a.last_seg_size;
    a.last_seg_size = 0;
    let len = pkt.len;
    let psh = pkt.flags & TCPHDR_PSH != 0;
    if len >= a.rcv_mss {
        a.rcv_mss = len.min(super::tcp_output::TCP_MSS_LO);
        if psh {
            a.pending |= ICSK_ACK_PUSHED;
        }
        return;
    }
    let tl = len + TCP_HEADER_LEN;
    if tl >= super::tcp_output::TCP_MSS_DEFAULT + 20 || (tl >= TCP_MIN_MSS + 20 && !psh) {
        let l = tl - TCP_HEADER_LEN;
        a.last_seg_size = l;
        if l == lss {
            a.rcv_mss = l;
            return;
        }
    }
    if a.pending & ICSK_ACK_PUSHED != 0 {
        a.pending |= ICSK_ACK_PUSHED2;
    }
    a.pending |= ICSK_ACK_PUSHED;
}

/// `tcp_in_quickack_mode()`.
#[inline]
fn tcp_in_quickack_mode(a: &crate::linux::net::core::sock::IcskAck) -> bool {
    a.quick > 0 && a.pingpong < TCP_PINGPONG_THRESH
}

/// Models `__tcp_ack_snd_check()` — net/ipv4/tcp_input.c @ v6.10 (see the module doc). Returns
/// its time.
fn __tcp_ack_snd_check(k: &mut Kernel, cpu: CpuId, sk: InetId) -> Time {
    let s = k.ipc.net.sk(sk);
    let t = &s.tcp;
    let full_frame = t.rcv_nxt - t.rcv_wup > t.ack.rcv_mss as u64
        && (t.rcv_nxt - t.copied_seq < 1 || __tcp_select_window(k, sk) >= t.rcv_wnd);
    if full_frame || tcp_in_quickack_mode(&t.ack) || t.ack.pending & ICSK_ACK_NOW != 0 {
        return tcp_send_ack(k, cpu, sk);
    }
    tcp_send_delayed_ack(k, cpu, sk)
}

/// Models `tcp_data_ready()` — net/ipv4/tcp_input.c @ v6.10: with data to read
/// (`tcp_epollin_ready()` at `SO_RCVLOWAT` 1), `sk_data_ready()` = `sock_def_readable()`.
fn tcp_data_ready(k: &mut Kernel, cpu: CpuId, sk: InetId) {
    let t = &k.ipc.net.sk(sk).tcp;
    if t.rcv_nxt > t.copied_seq {
        sock_def_readable(k, cpu, sk);
    }
}

/// Models `tcp_delack_timer()` -> `tcp_delack_timer_handler()` — net/ipv4/tcp_timer.c @ v6.10:
/// the delayed-ACK timer of `sk` expired on `cpu`. With the socket owned by a task, the work
/// is left to `tcp_release_cb()`; else, if the ACK is still pending, it goes now (leaving
/// ping-pong mode, which missed its ride). Returns its time.
///
/// Context: TIMER softirq.
pub fn tcp_delack_timer(k: &mut Kernel, cpu: CpuId, sk: InetId) -> Time {
    // The wheel no longer holds it.
    k.ipc.net.sk_mut(sk).tcp.ack.timer_cpu = None;
    let c = slock_section(k, cpu, sk, TCP_ACK_NS);
    if crate::linux::net::core::sock::sock_owned_by_user(k, sk) {
        k.ipc.net.sk_mut(sk).delack_deferred = true;
        return c;
    }
    c + tcp_delack_timer_handler(k, cpu, sk)
}

/// Models `tcp_delack_timer_handler()` — net/ipv4/tcp_timer.c @ v6.10.
pub fn tcp_delack_timer_handler(k: &mut Kernel, cpu: CpuId, sk: InetId) -> Time {
    let now_j = k.jiffies();
    let ato_min = tcp_ato_min(k);
    let a = k.ipc.net.sk(sk).tcp.ack;
    if a.pending & ICSK_ACK_TIMER == 0 {
        k.ipc.net.sk_mut(sk).tcp.ack.timeout = None;
        return 0;
    }
    if let Some(t) = a.timeout {
        if t > now_j {
            // sk_reset_timer() to the later expiry.
            if a.timer_cpu.is_none() {
                crate::linux::kernel::time::timer::mod_timer_tcp_delack(k, cpu, sk, t);
            }
            return 0;
        }
    }
    let a = &mut k.ipc.net.sk_mut(sk).tcp.ack;
    a.timeout = None;
    a.pending &= !ICSK_ACK_TIMER;
    if a.pending & ICSK_ACK_SCHED == 0 {
        return 0;
    }
    if a.pingpong >= TCP_PINGPONG_THRESH {
        // Delayed ACK missed: leave ping-pong mode and deflate ATO.
        a.pingpong = 0;
        a.ato = ato_min;
    } else {
        a.ato = (a.ato << 1).min(200 * ato_min);
    }
    k.ipc.net.stats.delack_timer_acks += 1;
    tcp_send_ack(k, cpu, sk)
}

/// Models `tcp_release_cb()` — net/ipv4/tcp_output.c @ v6.10, for the work the model defers to
/// it: a delayed ACK whose timer fired while the owner held the socket. Returns its time.
pub fn tcp_release_cb(k: &mut Kernel, cpu: CpuId, sk: InetId) -> Time {
    let s = k.ipc.net.sk_mut(sk);
    if !std::mem::take(&mut s.delack_deferred) {
        return 0;
    }
    tcp_delack_timer_handler(k, cpu, sk)
}
