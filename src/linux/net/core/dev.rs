//! Models the parts of `net/core/dev.c` and `drivers/net/loopback.c` @ v6.10 a loopback packet
//! goes through: `__dev_queue_xmit()` -> `loopback_xmit()` -> `__netif_rx()` ->
//! `enqueue_to_backlog()` on the sending CPU, and the NET_RX softirq's `net_rx_action()`
//! polling that CPU's backlog NAPI (`process_backlog()`), which hands each packet to
//! `ip_rcv()`.
//!
//! - `loopback_xmit()` orphans the skb (`skb_orphan()`: the sender's `sk_wmem_alloc` is given
//!   back inside the transmit call) and queues it on the **current CPU's** `input_pkt_queue`
//!   (no RPS). If the queue was empty and the backlog NAPI not yet scheduled,
//!   `____napi_schedule()` lists it and raises NET_RX_SOFTIRQ, unless `net_rx_action()` is
//!   already running on this CPU (`sd->in_net_rx_action`, which will find it). The queue holds
//!   at most `netdev_max_backlog` (1000) packets; a UDP datagram beyond that is dropped.
//! - `__dev_queue_xmit()` runs under `rcu_read_lock_bh()`: from task context the softirq
//!   raised by the transmit runs at its `rcu_read_unlock_bh()` (`local_bh_enable()` ->
//!   `do_softirq()`), in the sender's context, on the sender's CPU; from softirq context (an
//!   ACK sent while receiving) the packet waits on the backlog for the running
//!   `net_rx_action()`.
//! - `net_rx_action()`: a budget of `netdev_budget` (300) packets and `netdev_budget_usecs`
//!   (2 jiffies: `2 * USEC_PER_SEC / HZ`); the backlog NAPI is polled with a quota of
//!   `dev_rx_weight` (64). `process_backlog()` completes the NAPI when it finds the queue
//!   empty; a poll that used its whole quota puts the NAPI back on the list, and
//!   `net_rx_action()` re-raises NET_RX_SOFTIRQ and returns, so `handle_softirqs()` restarts
//!   (at most 10 times within 2 ms without NEED_RESCHED) or hands the rest to ksoftirqd.
//!
//! Simplifications: one device (lo), no qdisc (lo is `noqueue`), no GRO (the backlog NAPI
//! does none), no RPS/RFS, no `skb_defer_free`; the per-CPU `softnet_data` is written only by
//! its own CPU here, so it is not a modelled cache line. A TCP segment beyond
//! `netdev_max_backlog` is queued anyway and counted (the model has no retransmission).

use super::sock::InetId;
use crate::linux::engine::Next;
use crate::linux::kernel::softirq::{__raise_softirq_irqoff, NET_RX_SOFTIRQ};
use crate::linux::net::PendingWake;
use crate::linux::{CpuId, Kernel};
use crate::sim::Time;
use std::collections::VecDeque;

/// `netdev_budget`: packets per `net_rx_action()`.
pub const NETDEV_BUDGET: i32 = 300;
/// `netdev_budget_usecs` = `2 * USEC_PER_SEC / HZ`: two jiffies at any HZ.
pub const NETDEV_BUDGET_JIFFIES: u64 = 2;
/// `dev_rx_weight` (`weight_p` 64 x `dev_weight_rx_bias` 1): the backlog NAPI's quota.
pub const DEV_RX_WEIGHT: u32 = 64;
/// `netdev_max_backlog`.
pub const NETDEV_MAX_BACKLOG: usize = 1000;

/// TCP header flag: PSH (the last segment of a `sendmsg()`).
pub const TCPHDR_PSH: u8 = 0x08;

/// A packet on a CPU's backlog or a socket's backlog: the fields the receive paths read
/// (the demultiplexed destination socket, TCP's sequence, ACK and window fields).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pkt {
    /// The socket `__inet_lookup_skb()` finds for it.
    pub dst: InetId,
    /// Payload bytes.
    pub len: u32,
    /// TCP: the first payload byte's sequence number (64-bit: the model never wraps).
    pub seq: u64,
    /// TCP: the acknowledged sequence and the right edge of the sender's receive window.
    pub ack: u64,
    pub wnd_end: u64,
    /// TCP flags ([`TCPHDR_PSH`]).
    pub flags: u8,
    /// `skb->truesize` (what the receiving socket is charged).
    pub truesize: u32,
}

/// `struct softnet_data` of one CPU: the backlog NAPI's queue and state.
#[derive(Debug, Default)]
pub struct SoftnetData {
    /// `input_pkt_queue` (the model merges it with `process_queue`).
    pub input_pkt_queue: VecDeque<Pkt>,
    /// The backlog NAPI is scheduled (`NAPI_STATE_SCHED`, on `poll_list`).
    pub backlog_sched: bool,
    /// `sd->in_net_rx_action`.
    pub in_net_rx_action: bool,
    /// Wakeups the paths running on this CPU decided on and its running frame still has to
    /// make ([`crate::linux::net::next_wake`]).
    pub wakes: Vec<PendingWake>,
    /// `sd->time_squeeze`, and packets dropped at `enqueue_to_backlog()`.
    pub time_squeeze: u64,
    pub dropped: u64,
    /// TCP segments queued beyond `netdev_max_backlog` (see the module doc).
    pub over_backlog: u64,
}

/// Cost of the transmit path of one packet below the protocol: `ip_queue_xmit()` /
/// `ip_send_skb()` -> `ip_output()` -> `ip_finish_output2()` -> `neigh_output()` ->
/// `__dev_queue_xmit()` -> `loopback_xmit()` -> `__netif_rx()` (docs/costs.md, "Loopback
/// networking").
pub const DEV_XMIT_NS: Time = 150;
/// `net_rx_action()`'s own work per run (the NAPI list, the budget, `skb_defer_free_flush()`).
pub const NET_RX_ACTION_NS: Time = 40;
/// Per packet delivered: `process_backlog()` dequeue, `__netif_receive_skb()`, `ip_rcv()`,
/// `ip_local_deliver()` up to the protocol handler (docs/costs.md).
pub const NETIF_RECEIVE_NS: Time = 120;

/// Make the per-CPU state on first use (a machine that never opens a socket has none).
pub fn ensure_softnet(k: &mut Kernel) {
    let nr = k.m.topo.nr_cpus as usize;
    if k.ipc.net.softnet.len() < nr {
        k.ipc.net.softnet.resize_with(nr, SoftnetData::default);
    }
}

/// Models `__dev_queue_xmit()` on lo -> `loopback_xmit()` -> `__netif_rx()` ->
/// `enqueue_to_backlog()` — net/core/dev.c, drivers/net/loopback.c @ v6.10: the skb `src`
/// charged to its socket's `sk_wmem_alloc` is orphaned (`skb_orphan()`: the charge goes back)
/// and `pkt` is queued on `cpu`'s backlog, scheduling its NAPI and raising NET_RX_SOFTIRQ as
/// the module doc says. Returns the transmit path's time. The caller has bottom halves
/// disabled (the `rcu_read_lock_bh()` of `__dev_queue_xmit()`, or softirq context) and runs
/// the softirq at its `local_bh_enable()`.
pub fn dev_queue_xmit(k: &mut Kernel, cpu: CpuId, src: InetId, pkt: Pkt) -> Time {
    // loopback_xmit(): skb_orphan() -> sock_wfree().
    let s = k.ipc.net.sk_mut(src);
    s.wmem_alloc -= pkt.truesize;
    let udp = k.ipc.net.sk(pkt.dst).proto == super::sock::Proto::Udp;
    let st = &mut k.ipc.net.stats;
    st.packets += 1;
    if pkt.len > 0 {
        st.data_packets += 1;
    }
    let sd = &mut k.ipc.net.softnet[cpu as usize];
    if sd.input_pkt_queue.len() > NETDEV_MAX_BACKLOG {
        if udp {
            sd.dropped += 1;
            k.ipc.net.sk_mut(pkt.dst).drop_bytes += pkt.len as u64;
            return DEV_XMIT_NS;
        }
        sd.over_backlog += 1;
    }
    sd.input_pkt_queue.push_back(pkt);
    if !sd.backlog_sched {
        // ____napi_schedule(): list the backlog NAPI; raise unless net_rx_action() runs.
        sd.backlog_sched = true;
        if !sd.in_net_rx_action {
            __raise_softirq_irqoff(k, cpu, NET_RX_SOFTIRQ);
        }
    }
    DEV_XMIT_NS
}

/// `net_rx_action()` resume points, in code order.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum NetRxAt {
    /// Set `in_net_rx_action`, take the budget.
    #[default]
    Start,
    /// `process_backlog()`: deliver the next packet, or complete the NAPI / hit the quota.
    Poll,
    /// Make the wakeups the last packet's processing decided on.
    Wake,
}

/// `net_rx_action()` in progress (with the backlog NAPI's `process_backlog()` poll).
#[derive(Debug, Clone, Copy, Default)]
pub struct NetRxAction {
    pub at: NetRxAt,
    pub budget: i32,
    pub time_limit: u64,
    /// Packets the current `process_backlog()` poll has delivered.
    pub work: u32,
}

/// Models `net_rx_action()` with the backlog NAPI's `napi_poll()` -> `process_backlog()` —
/// net/core/dev.c @ v6.10 (see the module doc). One packet per step, each handed to
/// `ip_rcv()`; the wakeups a packet's processing decides on are made before the next packet.
///
/// Context: NET_RX softirq, IRQs on.
pub fn net_rx_action(k: &mut Kernel, cpu: CpuId, s: &mut NetRxAction) -> Next {
    match s.at {
        NetRxAt::Start => {
            let ksoftirqd = k.curr(cpu) == k.cpus[cpu as usize].rq.ksoftirqd;
            let st = &mut k.ipc.net.stats;
            st.net_rx_actions += 1;
            if ksoftirqd {
                st.net_rx_in_ksoftirqd += 1;
            }
            s.budget = NETDEV_BUDGET;
            s.time_limit = k.jiffies() + NETDEV_BUDGET_JIFFIES;
            s.work = 0;
            k.ipc.net.softnet[cpu as usize].in_net_rx_action = true;
            s.at = NetRxAt::Poll;
            Next::Cont(NET_RX_ACTION_NS)
        }
        NetRxAt::Poll => {
            let jiffies = k.jiffies();
            let sd = &mut k.ipc.net.softnet[cpu as usize];
            if !sd.backlog_sched {
                // Nothing listed (another run took it): the loop ends.
                sd.in_net_rx_action = false;
                return Next::Ret(0);
            }
            if s.work == DEV_RX_WEIGHT {
                // The poll used its whole quota: the NAPI goes back on the list; the budget
                // and time are checked, and with the repoll list non-empty the loop ends
                // either way: net_rx_action() re-raises NET_RX_SOFTIRQ.
                s.budget -= s.work as i32;
                if s.budget <= 0 || jiffies >= s.time_limit {
                    sd.time_squeeze += 1;
                    k.ipc.net.stats.time_squeeze += 1;
                }
                __raise_softirq_irqoff(k, cpu, NET_RX_SOFTIRQ);
                return Next::Ret(0);
            }
            let Some(pkt) = sd.input_pkt_queue.pop_front() else {
                // process_backlog(): the queue is empty, the NAPI completes; the loop finds
                // both lists empty and leaves.
                sd.backlog_sched = false;
                sd.in_net_rx_action = false;
                return Next::Ret(0);
            };
            s.work += 1;
            k.ipc.net.stats.rx_softirq += 1;
            let c = NETIF_RECEIVE_NS + crate::linux::net::ipv4::ip_rcv(k, cpu, pkt);
            s.at = NetRxAt::Wake;
            Next::Cont(c)
        }
        NetRxAt::Wake => {
            if let Some(f) = crate::linux::net::next_wake(k, cpu) {
                return Next::Call(0, f);
            }
            s.at = NetRxAt::Poll;
            Next::Cont(0)
        }
    }
}
