//! Models the TCP output paths of `net/ipv4/tcp_output.c` @ v6.10 for a loopback connection:
//! `tcp_write_xmit()` (window and Nagle tests, TCP Small Queues), `tcp_push()` (autocorking),
//! `tcp_transmit_skb()`, `tcp_send_ack()`, `tcp_send_delayed_ack()` and the receive window a
//! segment advertises (`tcp_select_window()`).
//!
//! - **Segments.** On lo the MSS is 65483 (MTU 65536, 20 + 20 header bytes, 12 of timestamp
//!   option), bounded by half the largest window the peer offered (`tcp_bound_to_half_wnd()`);
//!   the send size goal is one MSS (lo's GSO limit, 64 KB less headers, is below two MSS), so
//!   every skb goes out as one packet.
//! - **Nagle** (`tcp_nagle_test()` with Minshall's variant): without `TCP_NODELAY` an skb
//!   shorter than the MSS waits while an earlier short segment is unacknowledged, unless the
//!   push is forced (`TCP_NAGLE_PUSH`).
//! - **TCP Small Queues and autocorking** never hold a segment on lo: both test
//!   `sk_wmem_alloc`, the truesize of the socket's skbs below TCP, and `loopback_xmit()` gives
//!   it back (`skb_orphan()`) inside the transmit call, before TCP looks again. The model
//!   evaluates both tests with that value, so they are there but do not change when a wakeup
//!   happens.
//! - **Windows.** A segment advertises `tcp_select_window()`: the free receive space
//!   (`tcp_space()`: `(sk_rcvbuf - sk_rmem_alloc)` at the default `scaling_ratio` of one half)
//!   rounded down to the MSS, never shrinking the right edge already offered, and 0 when less
//!   than an MSS is free and less than half the buffer is. The sender sends an skb only if it
//!   fits the peer's window (`tcp_snd_wnd_test()`).
//! - **ACKs.** Every segment carries an ACK; sending one clears a scheduled ACK and counts
//!   down the quick-ACK budget (`tcp_event_ack_sent()`). A delayed ACK arms the per-socket
//!   timer at `ato` (`tcp_send_delayed_ack()`; an ACK due within a quarter of `ato` of an armed
//!   timer is sent at once).
//!
//! Simplifications: no congestion window (loopback loses nothing: after slow start's first
//! round trips `cwnd` stops limiting), no retransmission, no SACK, no TSO splitting, no
//! urgent data. See `tcp_input.rs` for the receive side.

use crate::linux::net::core::dev::{dev_queue_xmit, Pkt, TCPHDR_PSH};
use crate::linux::net::core::sock::{InetId, ICSK_ACK_SCHED, ICSK_ACK_TIMER};
use crate::linux::{CpuId, Kernel};
use crate::sim::Time;

/// lo's MSS with timestamps (see the module doc).
pub const TCP_MSS_LO: u32 = 65_483;
/// `TCP_MSS_DEFAULT`.
pub const TCP_MSS_DEFAULT: u32 = 536;
/// `TCP_ATO_MIN` = `TCP_DELACK_MIN` = HZ/25 (40 ms), in ns (converted to jiffies at use).
pub const TCP_ATO_MIN_NS: Time = 40_000_000;
/// The truesize of a TCP skb beyond its payload on the sender: `sk_buff` (256) plus the
/// `MAX_TCP_HEADER` head from the small-head cache (640); payload goes to page fragments and
/// is charged byte for byte (`sk_wmem_queued_add(copy)`).
pub const TCP_SKB_OVERHEAD: u32 = 256 + 640;

/// Cost of `tcp_transmit_skb()` and `__tcp_transmit_skb()` for one segment: the clone, the
/// header and options, `tcp_select_window()`, the ACK bookkeeping (docs/costs.md).
pub const TCP_TRANSMIT_NS: Time = 200;
/// The rest of `tcp_write_xmit()` per segment sent (the tests, `tcp_event_new_data_sent()`,
/// moving the skb to the retransmit queue, `tcp_rearm_rto()`).
pub const TCP_WRITE_XMIT_NS: Time = 60;
/// `tcp_send_ack()` building a pure ACK (its allocation; the transmit is `TCP_TRANSMIT_NS`).
pub const TCP_SEND_ACK_NS: Time = 60;
/// Arming the delayed-ACK timer (`sk_reset_timer()` -> `mod_timer()`).
pub const TCP_DELACK_ARM_NS: Time = 40;

/// `tcp_win_from_space()` at the default `scaling_ratio` (`TCP_DEFAULT_SCALING_RATIO`, half).
#[inline]
pub fn tcp_win_from_space(space: i64) -> i64 {
    space / 2
}

/// Models `__tcp_select_window()` — net/ipv4/tcp_output.c @ v6.10 (without window scaling's
/// rounding): the free receive space, rounded down to a multiple of the MSS; 0 when less than
/// half the full space and less than one MSS is free.
pub fn __tcp_select_window(k: &Kernel, sk: InetId) -> u32 {
    let s = k.ipc.net.sk(sk);
    let mss = s.tcp.ack.rcv_mss.max(1);
    let free = tcp_win_from_space(s.rcvbuf as i64 - s.rmem_alloc as i64).max(0) as u32;
    let full = tcp_win_from_space(s.rcvbuf as i64) as u32;
    if free < full / 2 && free < mss {
        return 0;
    }
    if free > mss {
        free / mss * mss
    } else {
        free
    }
}

/// The window left of the last one advertised (`tcp_receive_window()`).
#[inline]
pub fn tcp_receive_window(k: &Kernel, sk: InetId) -> u32 {
    let t = &k.ipc.net.sk(sk).tcp;
    (t.rcv_wup + t.rcv_wnd as u64).saturating_sub(t.rcv_nxt) as u32
}

/// Models `tcp_select_window()` — net/ipv4/tcp_output.c @ v6.10: the window a segment sent now
/// advertises, never moving the right edge left; records it (`rcv_wnd`, `rcv_wup`). Returns
/// the right edge.
pub fn tcp_select_window(k: &mut Kernel, sk: InetId) -> u64 {
    let cur = tcp_receive_window(k, sk);
    let new = __tcp_select_window(k, sk).max(cur);
    let t = &mut k.ipc.net.sk_mut(sk).tcp;
    t.rcv_wnd = new;
    t.rcv_wup = t.rcv_nxt;
    t.rcv_nxt + new as u64
}

/// Models `tcp_event_ack_sent()` -> `tcp_dec_quickack_mode()` and `inet_csk_clear_xmit_timer(
/// ICSK_TIME_DACK)` — net/ipv4/tcp_output.c @ v6.10: an ACK went out; a scheduled one is
/// done, one quick ACK is used. (The timer itself stays armed and finds nothing to do.)
fn tcp_event_ack_sent(k: &mut Kernel, sk: InetId) {
    let ato_min = tcp_ato_min(k);
    let a = &mut k.ipc.net.sk_mut(sk).tcp.ack;
    if a.quick > 0 && a.pending & ICSK_ACK_SCHED != 0 {
        a.quick -= 1;
        if a.quick == 0 {
            a.ato = ato_min;
        }
    }
    a.pending = 0;
}

/// `TCP_ATO_MIN` in jiffies (HZ/25).
#[inline]
pub fn tcp_ato_min(k: &Kernel) -> u32 {
    (TCP_ATO_MIN_NS / k.tick_nsec()).max(1) as u32
}

/// Models `__tcp_transmit_skb()` of a segment of `len` payload bytes starting at `seq` (0: a
/// pure ACK), followed by `ip_queue_xmit()` down to `loopback_xmit()`: the segment carries an
/// ACK of everything received and the window [`tcp_select_window`] offers, and goes onto
/// `cpu`'s backlog. Returns its time.
pub fn tcp_transmit_skb(k: &mut Kernel, cpu: CpuId, sk: InetId, seq: u64, len: u32, flags: u8) -> Time {
    let wnd_end = tcp_select_window(k, sk);
    let s = k.ipc.net.sk(sk);
    let pkt = Pkt {
        dst: s.peer,
        len,
        seq,
        ack: s.tcp.rcv_nxt,
        wnd_end,
        flags,
        truesize: if len > 0 { len + TCP_SKB_OVERHEAD } else { TCP_SKB_OVERHEAD },
    };
    tcp_event_ack_sent(k, sk);
    // The clone goes below TCP charged to sk_wmem_alloc (skb_set_owner_w()).
    k.ipc.net.sk_mut(sk).wmem_alloc += pkt.truesize;
    TCP_TRANSMIT_NS + dev_queue_xmit(k, cpu, sk, pkt)
}

/// Models `tcp_send_ack()` — net/ipv4/tcp_output.c @ v6.10: a pure ACK now. Returns its time.
pub fn tcp_send_ack(k: &mut Kernel, cpu: CpuId, sk: InetId) -> Time {
    k.ipc.net.stats.acks += 1;
    let seq = k.ipc.net.sk(sk).tcp.snd_nxt;
    TCP_SEND_ACK_NS + tcp_transmit_skb(k, cpu, sk, seq, 0, 0)
}

/// Models `tcp_send_delayed_ack()` — net/ipv4/tcp_output.c @ v6.10: arm the delayed-ACK timer
/// `ato` from now, or send the ACK at once if an armed timer is due within a quarter of `ato`;
/// an earlier armed expiry is kept. Returns the time spent.
pub fn tcp_send_delayed_ack(k: &mut Kernel, cpu: CpuId, sk: InetId) -> Time {
    let now_j = k.jiffies();
    let a = k.ipc.net.sk(sk).tcp.ack;
    let ato = a.ato.max(tcp_ato_min(k)) as u64;
    let mut timeout = now_j + ato;
    if a.pending & ICSK_ACK_TIMER != 0 {
        if let Some(t) = a.timeout {
            if t <= now_j + (ato >> 2) {
                return tcp_send_ack(k, cpu, sk);
            }
            timeout = timeout.min(t);
        }
    }
    let a = &mut k.ipc.net.sk_mut(sk).tcp.ack;
    a.pending |= ICSK_ACK_SCHED | ICSK_ACK_TIMER;
    let rearm = a.timeout != Some(timeout);
    a.timeout = Some(timeout);
    if rearm {
        crate::linux::kernel::time::timer::mod_timer_tcp_delack(k, cpu, sk, timeout);
    }
    TCP_DELACK_ARM_NS
}

/// Models `tcp_nagle_test()` with `tcp_nagle_check()` and `tcp_minshall_check()` —
/// net/ipv4/tcp_output.c @ v6.10: may an skb of `len` bytes go now?
fn tcp_nagle_test(k: &Kernel, sk: InetId, len: u32, push: bool) -> bool {
    let t = &k.ipc.net.sk(sk).tcp;
    if push || t.nodelay {
        return true;
    }
    let partial = len < t.mss;
    let packets_out = t.snd_nxt > t.snd_una;
    let minshall = t.snd_sml > t.snd_una && t.snd_sml <= t.snd_nxt;
    !(partial && packets_out && minshall)
}

/// Models `tcp_small_queue_check()` — net/ipv4/tcp_output.c @ v6.10: throttle when
/// `sk_wmem_alloc` exceeds the TSQ limit, `max(2 * skb->truesize, sk_pacing_rate >>
/// sk_pacing_shift)` (the model takes its floor, the smaller). On lo the skbs below TCP were
/// orphaned in the transmit (see the module doc), so the test never throttles.
fn tcp_small_queue_check(k: &Kernel, sk: InetId, len: u32) -> bool {
    k.ipc.net.sk(sk).wmem_alloc > 2 * (len + TCP_SKB_OVERHEAD)
}

/// Models `tcp_write_xmit()` — net/ipv4/tcp_output.c @ v6.10: send the write queue's skbs in
/// order while each fits the peer's window, passes Nagle (unless `push`) and TSQ; each goes to
/// the retransmit queue. Returns (time, segments sent). The segments are queued on `cpu`'s
/// backlog; the caller runs the softirq (task context) or the running `net_rx_action()` finds
/// them (softirq context).
pub fn tcp_write_xmit(k: &mut Kernel, cpu: CpuId, sk: InetId, push: bool) -> (Time, u32) {
    let mut c = 0;
    let mut sent = 0;
    loop {
        let t = &k.ipc.net.sk(sk).tcp;
        let Some(&len) = t.write_queue.front() else { break };
        let seq = t.snd_nxt;
        if seq + len as u64 > t.snd_wnd_end {
            // tcp_snd_wnd_test(): wait for the window.
            break;
        }
        // Nagle applies to the queue's last skb only (the others go with TCP_NAGLE_PUSH); it
        // is the one a writer may still be filling, and it carries its sendmsg()'s PSH.
        let last = t.write_queue.len() == 1;
        if last && !tcp_nagle_test(k, sk, len, push) {
            break;
        }
        if tcp_small_queue_check(k, sk, len) {
            break;
        }
        let mss = k.ipc.net.sk(sk).tcp.mss;
        let s = k.ipc.net.sk_mut(sk);
        s.tcp.write_queue.pop_front();
        s.tcp.snd_nxt += len as u64;
        if len < mss {
            s.tcp.snd_sml = s.tcp.snd_nxt;
        }
        s.tcp.rtx_queue.push_back((s.tcp.snd_nxt, len + TCP_SKB_OVERHEAD));
        let flags = if last { TCPHDR_PSH } else { 0 };
        tcp_event_data_sent(k, sk);
        c += TCP_WRITE_XMIT_NS + tcp_transmit_skb(k, cpu, sk, seq, len, flags);
        sent += 1;
    }
    (c, sent)
}

/// Models `tcp_event_data_sent()` — net/ipv4/tcp_output.c @ v6.10: data sent within `ato` of
/// the last data received counts towards ping-pong mode (`inet_csk_inc_pingpong_cnt()`).
fn tcp_event_data_sent(k: &mut Kernel, sk: InetId) {
    let now_j = k.jiffies();
    let a = &mut k.ipc.net.sk_mut(sk).tcp.ack;
    if a.lrcvtime > 0 && now_j.saturating_sub(a.lrcvtime) < a.ato as u64 {
        a.pingpong = a.pingpong.saturating_add(1);
    }
}

/// Models `tcp_should_autocork()` — net/ipv4/tcp.c @ v6.10: a short tail skb waits while
/// earlier skbs of the socket are still below TCP (`sk_wmem_alloc > skb->truesize`), never on lo
/// (see the module doc).
pub fn tcp_should_autocork(k: &Kernel, sk: InetId, tail_len: u32) -> bool {
    let s = k.ipc.net.sk(sk);
    let t = &s.tcp;
    tail_len < t.mss && t.snd_nxt > t.snd_una && s.wmem_alloc > tail_len + TCP_SKB_OVERHEAD
}

/// Models `tcp_push()` -> `__tcp_push_pending_frames()` — net/ipv4/tcp.c, tcp_output.c @
/// v6.10: mark the tail skb PSH, skip the push if autocorking holds it, else
/// `tcp_write_xmit()` with the socket's Nagle setting (`nonagle`) or `TCP_NAGLE_PUSH`
/// (`push`). Returns (time, segments sent).
pub fn tcp_push(k: &mut Kernel, cpu: CpuId, sk: InetId, push: bool) -> (Time, u32) {
    let Some(&tail) = k.ipc.net.sk(sk).tcp.write_queue.back() else { return (0, 0) };
    if tcp_should_autocork(k, sk, tail) {
        return (0, 0);
    }
    tcp_write_xmit(k, cpu, sk, push)
}

/// Models `tcp_bound_to_half_wnd()` applied to lo's MSS (`tcp_sync_mss()`): the MSS the
/// sender uses once the peer has offered `max_window`.
pub fn tcp_mss_for_window(max_window: u32) -> u32 {
    let cutoff = if max_window > TCP_MSS_DEFAULT { max_window >> 1 } else { max_window };
    if cutoff > 0 && TCP_MSS_LO > cutoff {
        cutoff.max(68 - 32)
    } else {
        TCP_MSS_LO
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mss_is_los_bounded_by_half_the_largest_window() {
        assert_eq!(tcp_mss_for_window(6 << 20), TCP_MSS_LO);
        // tcp_rmem[1] = 131072 offers 65536 rounded down to an MSS: 65483, half of it.
        assert_eq!(tcp_mss_for_window(65_483), 32_741);
        assert_eq!(tcp_mss_for_window(500), 500);
    }

    #[test]
    fn the_window_is_the_free_space_never_shrinking() {
        let mut k = crate::linux::Kernel::for_test("smp-4");
        let o = crate::linux::net::socket::SockOpts::default();
        let (c, s) =
            crate::linux::net::socket::inet_connect_pair(&mut k, 0, crate::linux::net::core::sock::Proto::Tcp, o, o);
        // The handshake offered 65483 both ways.
        assert_eq!(k.ipc.net.sk(c).tcp.snd_wnd_end, 65_483);
        assert_eq!(tcp_receive_window(&k, s), 65_483);
        // 40000 bytes queued and unread: the free space is half of what is left, rounded down
        // to rcv_mss (536), and the edge moves right.
        let so = k.ipc.net.sk_mut(s);
        so.tcp.rcv_nxt = 40_000;
        so.rmem_alloc = 40_000 + TCP_SKB_OVERHEAD;
        assert_eq!(__tcp_select_window(&k, s), (131_072 - 40_896) / 2 / 536 * 536);
        assert_eq!(tcp_select_window(&mut k, s), 40_000 + 45_024);
        // Little data in much truesize: the free space is below what is left of the window
        // offered, whose right edge stays.
        let so = k.ipc.net.sk_mut(s);
        so.tcp.rcv_nxt = 41_000;
        so.rmem_alloc = 125_000;
        assert_eq!(__tcp_select_window(&k, s), (131_072 - 125_000) / 2 / 536 * 536);
        assert_eq!(tcp_select_window(&mut k, s), 40_000 + 45_024);
    }
}
