//! `net/`: the socket families workloads use, mirroring the Linux tree:
//!
//! - `unix.rs`: AF_UNIX stream sockets (`net/unix/af_unix.c`);
//! - `core/`: `dev.rs` (the per-CPU backlog, `netif_rx()`, the NET_RX softirq's
//!   `net_rx_action()` and `process_backlog()`, `__dev_queue_xmit()` into the loopback device)
//!   and `sock.rs` (`struct sock` as the TCP and UDP paths use it: the socket lock and its
//!   backlog, the wakeups of `sock_def_readable()` and `sk_stream_write_space()`);
//! - `ipv4/`: `tcp.rs` (`tcp_sendmsg()`, `tcp_recvmsg()`), `tcp_input.rs` (`tcp_v4_rcv()`,
//!   `tcp_rcv_established()`, `tcp_ack()`, the delayed-ACK engine), `tcp_output.rs`
//!   (`tcp_write_xmit()` with Nagle, TSQ and autocorking, `tcp_send_ack()`, the receive window)
//!   and `udp.rs` (`udp_sendmsg()`, `udp_rcv()`, `udp_recvmsg()`);
//! - `socket.rs`: the system calls on an AF_INET socket (`sendto()`/`recvfrom()`, as
//!   `net/socket.c` dispatches them) and the connected pairs over 127.0.0.1 the workloads use.
//!
//! All traffic is loopback (docs/workloads.md §5): a packet sent on a CPU is queued on that
//! CPU's backlog by `loopback_xmit()` and received by the NET_RX softirq on the same CPU, which
//! the sender runs itself when it re-enables bottom halves after the transmit.
//!
//! [`Net`] is the state of it all: the sockets, each CPU's `softnet_data`, and the counters the
//! workloads and tests read.

pub mod core;
pub mod ipv4;
pub mod socket;
pub mod unix;

use self::core::dev::SoftnetData;
use self::core::sock::{InetId, InetSock};
use crate::linux::kernel::wait::WqId;
use crate::linux::{CpuId, Kernel};

/// A wakeup a network path decided on and its frame still has to make (see [`Net::wakes`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PendingWake {
    pub wq: WqId,
    /// The poll key.
    pub key: u32,
    /// `WF_SYNC` or 0.
    pub wake_flags: u32,
    /// Which path woke: [`WakeKind`].
    pub kind: WakeKind,
}

/// The network paths that wake a task.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WakeKind {
    /// `sock_def_readable()` (data arrived): WF_SYNC.
    DataReady,
    /// `sk_stream_write_space()` (an ACK freed send space): no WF_SYNC.
    WriteSpace,
}

/// Counters of the network paths (the whole run; the workloads start in the measured window).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct NetStats {
    /// Packets through `loopback_xmit()`, and those that carried data.
    pub packets: u64,
    pub data_packets: u64,
    /// Packets delivered by `process_backlog()` from softirq context.
    pub rx_softirq: u64,
    /// Packets a TCP socket's owner found in its backlog (`__release_sock()`).
    pub rx_backlog: u64,
    /// `net_rx_action()` runs, those run by ksoftirqd, and those that ran out of budget or
    /// time (`time_squeeze`).
    pub net_rx_actions: u64,
    pub net_rx_in_ksoftirqd: u64,
    pub time_squeeze: u64,
    /// Wakeups made by `sock_def_readable()` from softirq context and from task context, and by
    /// `sk_stream_write_space()`.
    pub data_ready_wakeups_softirq: u64,
    pub data_ready_wakeups_task: u64,
    pub write_space_wakeups: u64,
    /// Writers that slept in `sk_stream_wait_memory()`.
    pub wait_memory_sleeps: u64,
    /// Pure ACKs sent, delayed-ACK timers that fired and sent one.
    pub acks: u64,
    pub delack_timer_acks: u64,
    /// UDP datagrams dropped because the receive buffer was full.
    pub udp_rcvbuf_errors: u64,
}

/// The AF_INET sockets of a run and each CPU's `softnet_data` (kernel state; in
/// [`crate::linux::fs::Ipc`]).
#[derive(Debug, Default)]
pub struct Net {
    pub socks: Vec<InetSock>,
    /// Per CPU, made when the first socket is.
    pub softnet: Vec<SoftnetData>,
    pub stats: NetStats,
}

impl Net {
    /// The socket `sk`.
    #[inline]
    pub fn sk(&self, sk: InetId) -> &InetSock {
        &self.socks[sk as usize]
    }

    #[inline]
    pub fn sk_mut(&mut self, sk: InetId) -> &mut InetSock {
        &mut self.socks[sk as usize]
    }

    /// Queue a wakeup for the frame running on `cpu` to make.
    #[inline]
    pub fn queue_wake(&mut self, cpu: CpuId, w: PendingWake) {
        self.softnet[cpu as usize].wakes.push(w);
    }
}

/// The next wakeup a network path on `cpu` decided on, as the `__wake_up()` frame to call
/// (every frame that runs those paths makes them before it returns, in the order decided).
///
/// The kernel calls the wake function where the path decides to (inside `tcp_rcv_established()`,
/// after its ACK check); the model makes the decided wakeups right after the packet's
/// processing step, at the same instant. A packet makes at most two (write space, then data).
pub fn next_wake(k: &mut Kernel, cpu: CpuId) -> Option<crate::linux::engine::Frame> {
    let sd = &mut k.ipc.net.softnet[cpu as usize];
    if sd.wakes.is_empty() {
        return None;
    }
    let w = sd.wakes.remove(0);
    let in_softirq = crate::linux::kernel::softirq::in_serving_softirq(k, cpu);
    let st = &mut k.ipc.net.stats;
    match w.kind {
        WakeKind::DataReady if in_softirq => st.data_ready_wakeups_softirq += 1,
        WakeKind::DataReady => st.data_ready_wakeups_task += 1,
        WakeKind::WriteSpace => st.write_space_wakeups += 1,
    }
    Some(crate::linux::kernel::wait::WakeUp::frame(w.wq, w.key, 1, w.wake_flags))
}
