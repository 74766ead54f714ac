//! `net/ipv4/`: TCP (`tcp.rs`, `tcp_input.rs`, `tcp_output.rs`) and UDP (`udp.rs`) over the
//! loopback device, and `ip_rcv()`'s hand-over to them.
pub mod tcp;
pub mod tcp_input;
pub mod tcp_output;
pub mod udp;

use crate::linux::net::core::dev::Pkt;
use crate::linux::net::core::sock::Proto;
use crate::linux::{CpuId, Kernel};
use crate::sim::Time;

/// Models `ip_rcv()` -> `ip_local_deliver()` -> the protocol handler — net/ipv4/ip_input.c @
/// v6.10, for a packet of a loopback connection (no netfilter, no routing decision beyond the
/// cached input route): `tcp_v4_rcv()` or `udp_rcv()`. Returns the time the path takes.
///
/// Context: NET_RX softirq (BH disabled), from `process_backlog()`.
pub fn ip_rcv(k: &mut Kernel, cpu: CpuId, pkt: Pkt) -> Time {
    match k.ipc.net.sk(pkt.dst).proto {
        Proto::Tcp => tcp_input::tcp_v4_rcv(k, cpu, pkt),
        Proto::Udp => udp::udp_rcv(k, cpu, pkt),
    }
}
