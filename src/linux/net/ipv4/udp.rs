//! Models the UDP paths of `net/ipv4/udp.c` and `net/core/datagram.c` @ v6.10 for a connected
//! loopback socket:
//!
//! - `udp_sendmsg()` (uncorked, no `MSG_MORE`): `ip_make_skb()` allocates the datagram's skb
//!   with `sock_alloc_send_pskb()`, which waits for send space while `sk_wmem_alloc >=
//!   sk_sndbuf`; on lo that never happens, since `loopback_xmit()` orphans each skb inside
//!   the transmit (the test is kept). `udp_send_skb()` -> `ip_send_skb()` transmits it; the
//!   NET_RX softirq runs at the transmit's `local_bh_enable()`, in the sender's context. No
//!   socket lock is taken.
//! - `udp_rcv()` -> `__udp4_lib_rcv()` -> `udp_unicast_rcv_skb()` -> ... ->
//!   `__udp_enqueue_schedule_skb()`: drop when `sk_rmem_alloc` is already above `sk_rcvbuf`
//!   (`UDP_MIB_RCVBUFERRORS`), else charge the skb's truesize, queue it under the receive
//!   queue's lock and call `sk_data_ready()` = `sock_def_readable()` (WF_SYNC wakeup). UDP has
//!   no owner backlog: the receive path never waits for the reader.
//! - `udp_recvmsg()` -> `__skb_recv_udp()`: take the first datagram, or sleep in
//!   `__skb_wait_for_more_packets()` (an **exclusive** wait, `receiver_wake_function()`);
//!   copy up to `len` (the rest of a longer datagram is discarded), free it
//!   (`skb_consume_udp()` -> `udp_rmem_release()`).
//!
//! A datagram's truesize: up to `SKB_MAX_ALLOC` (16064 bytes) its data is in the kmalloc'ed
//! head (`sk_buff` 256 + the head rounded to the small-head cache or a power of two); beyond
//! it the head holds only the headers and the data is in page fragments, charged byte for
//! byte (`__ip_append_data()` on a device with scatter-gather).
//!
//! Simplifications: no GSO/GRO, no `MSG_PEEK`, no reader-queue splicing (`udp_recvmsg()`'s
//! `sk_reader_queue` batching only saves lock round trips), no busylock.

use crate::linux::engine::{Frame, Next};
use crate::linux::fs::pipe::copy_cost;
use crate::linux::kernel::entry::common::{syscall_enter, syscall_exit_to_user_mode};
use crate::linux::kernel::sched::core::ScheduleCaller;
use crate::linux::kernel::softirq::local_bh_disable;
use crate::linux::kernel::wait::{finish_wait, prepare_to_wait};
use crate::linux::net::core::dev::{dev_queue_xmit, Pkt};
use crate::linux::net::core::sock::{slock_section, sock_def_readable, RcvSkb};
use crate::linux::net::socket::{after_xmit, bh_enable_step, InetAt, InetOp};
use crate::linux::{CpuId, Kernel};
use crate::sim::Time;

/// `udp_sendmsg()` beyond the syscall: the route and flow set-up, `ip_make_skb()`'s
/// allocation, `udp_send_skb()`'s header and checksum (docs/costs.md).
pub const UDP_SENDMSG_NS: Time = 300;
/// `udp_rcv()` per datagram: the socket lookup, `__udp_enqueue_schedule_skb()`'s accounting.
pub const UDP_RCV_NS: Time = 150;
/// `udp_recvmsg()` beyond the syscall: `__skb_recv_udp()`, the address copy, and
/// `skb_consume_udp()`.
pub const UDP_RECVMSG_NS: Time = 200;
/// The receive queue's lock section.
pub const UDP_QUEUE_LOCK_NS: Time = 30;

/// `SKB_MAX_ALLOC`: `SKB_MAX_ORDER(0, 2)` = 16384 - `SKB_DATA_ALIGN(sizeof(skb_shared_info))`.
const SKB_MAX_ALLOC: u32 = 16_384 - 320;

/// A datagram of `len` bytes' truesize (see the module doc).
pub fn udp_skb_truesize(len: u32) -> u32 {
    // The IPv4 + UDP headers (28), the link-layer reserve and alignment (up to 16 + 15).
    let head = len + 28 + 31;
    if len + 28 > SKB_MAX_ALLOC {
        return 256 + 640 + len;
    }
    let alloc = head.next_multiple_of(64) + 320;
    256 + if alloc <= 640 { 640 } else { alloc.next_power_of_two() }
}

/// Models `udp_sendmsg()` — net/ipv4/udp.c @ v6.10 (see the module doc). Returns the count
/// sent.
pub fn udp_sendmsg(k: &mut Kernel, cpu: CpuId, s: &mut InetOp) -> Next {
    if let Some(n) = bh_enable_step(k, cpu, s) {
        return n;
    }
    let sk = s.sock;
    match s.at {
        InetAt::Enter => {
            let so = k.ipc.net.sk(sk);
            // sock_alloc_send_pskb(): on lo sk_wmem_alloc is back at its base (see the module
            // doc), so the wait for send space never happens.
            assert!(so.wmem_alloc < so.sndbuf, "socket {sk}: no UDP send space on loopback");
            let pkt = Pkt {
                dst: so.peer,
                len: s.len,
                seq: 0,
                ack: 0,
                wnd_end: 0,
                flags: 0,
                truesize: udp_skb_truesize(s.len),
            };
            let so = k.ipc.net.sk_mut(sk);
            so.bytes_sent += s.len as u64;
            so.wmem_alloc += pkt.truesize;
            s.done = s.len;
            let c = syscall_enter(k) + UDP_SENDMSG_NS + copy_cost(s.len);
            local_bh_disable(k, cpu);
            let x = dev_queue_xmit(k, cpu, sk, pkt);
            after_xmit(s, InetAt::Ret, c + x)
        }
        InetAt::Ret => {
            let r = s.done as i64;
            Next::Ret(syscall_exit_to_user_mode(k, cpu, r))
        }
        _ => unreachable!("udp_sendmsg at {:?}", s.at),
    }
}

/// Models `udp_rcv()` down to `__udp_enqueue_schedule_skb()` — net/ipv4/udp.c @ v6.10 (see the
/// module doc). Returns its time; the wakeup is queued for the running frame.
///
/// Context: NET_RX softirq.
pub fn udp_rcv(k: &mut Kernel, cpu: CpuId, pkt: Pkt) -> Time {
    let sk = pkt.dst;
    let so = k.ipc.net.sk(sk);
    if so.rmem_alloc > so.rcvbuf {
        let so = k.ipc.net.sk_mut(sk);
        so.drops += 1;
        so.drop_bytes += pkt.len as u64;
        k.ipc.net.stats.udp_rcvbuf_errors += 1;
        return UDP_RCV_NS;
    }
    let c = slock_section(k, cpu, sk, UDP_QUEUE_LOCK_NS);
    let so = k.ipc.net.sk_mut(sk);
    so.rmem_alloc += pkt.truesize;
    so.receive_queue.push_back(RcvSkb { len: pkt.len, consumed: 0, truesize: pkt.truesize });
    sock_def_readable(k, cpu, sk);
    UDP_RCV_NS + c + UDP_QUEUE_LOCK_NS
}

/// Models `udp_recvmsg()` with `__skb_recv_udp()` and `__skb_wait_for_more_packets()` —
/// net/ipv4/udp.c, net/core/datagram.c @ v6.10 (see the module doc). Returns the count copied.
pub fn udp_recvmsg(k: &mut Kernel, cpu: CpuId, s: &mut InetOp) -> Next {
    let sk = s.sock;
    let me = k.curr(cpu);
    let c = match s.at {
        InetAt::Enter => syscall_enter(k) + UDP_RECVMSG_NS,
        InetAt::Woken => {
            let wq = k.ipc.net.sk(sk).wq;
            finish_wait(k, wq, me);
            0
        }
        InetAt::Ret => {
            let r = s.done as i64;
            return Next::Ret(syscall_exit_to_user_mode(k, cpu, r));
        }
        _ => unreachable!("udp_recvmsg at {:?}", s.at),
    };
    let c = c + slock_section(k, cpu, sk, UDP_QUEUE_LOCK_NS);
    let so = k.ipc.net.sk_mut(sk);
    match so.receive_queue.pop_front() {
        Some(skb) => {
            let n = skb.len.min(s.len);
            so.rmem_alloc -= skb.truesize;
            so.bytes_received += n as u64;
            s.done = n;
            s.at = InetAt::Ret;
            Next::Cont(c + copy_cost(n))
        }
        None => {
            let wq = so.wq;
            prepare_to_wait(k, wq, me, true);
            s.at = InetAt::Woken;
            Next::Call(c, Frame::ScheduleCaller(ScheduleCaller::schedule()))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn datagram_truesize_is_head_then_pages() {
        // A 1-byte datagram fits the small-head cache.
        assert_eq!(udp_skb_truesize(1), 256 + 640);
        // 4000 bytes: a kmalloc'ed head rounded to a power of two.
        assert_eq!(udp_skb_truesize(4000), 256 + 8192);
        // Beyond SKB_MAX_ALLOC the payload is in page fragments, charged byte for byte.
        assert_eq!(udp_skb_truesize(65_507), 256 + 640 + 65_507);
    }
}
