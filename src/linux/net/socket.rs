//! The system calls on AF_INET sockets as `net/socket.c` @ v6.10 dispatches them
//! (`__sys_sendto()` -> `sock_sendmsg()` -> `inet_sendmsg()` -> `tcp_sendmsg()`/`udp_sendmsg()`,
//! and `__sys_recvfrom()` -> `sock_recvmsg()` -> `inet_recvmsg()` -> `tcp_recvmsg()`/
//! `udp_recvmsg()`), and the connected socket pairs over 127.0.0.1 the workloads use.
//!
//! **Connection set-up is instant**, as the model's `socketpair()` is: [`inet_connect_pair`]
//! makes both ends established at once (no SYN exchange, no `accept()`, no listener), with
//! the state the handshake would leave: sequence numbers at 0, each side's window offered to
//! the other, the MSS re-synced to half the offered window (`tcp_sync_mss()`), and the send
//! buffer `tcp_init_buffer_space()` -> `tcp_sndbuf_expand()` sets for lo's MSS and an initial
//! congestion window of 10: 2 x 10 x 131328 = 2626560 bytes (under `tcp_wmem[2]`, 4 MB), unless
//! `SO_SNDBUF` fixed it. The receive buffer is `tcp_rmem[1]` (131072) for TCP and
//! `rmem_default` (212992) for UDP, unless `SO_RCVBUF` fixed it; the UDP send buffer is
//! `wmem_default` (212992). `SO_SNDBUF`/`SO_RCVBUF` set twice the value asked for, capped at
//! `wmem_max`/`rmem_max` first (at least `SOCK_MIN_SNDBUF`/`SOCK_MIN_RCVBUF`), as
//! `sk_setsockopt()` does.

use super::core::sock::{InetId, InetSock, Proto, SK_MEM_DEFAULT, SOCK_MIN_RCVBUF, SOCK_MIN_SNDBUF};
use super::ipv4::tcp_output::{tcp_mss_for_window, tcp_win_from_space, TCP_MSS_DEFAULT, TCP_MSS_LO};
use crate::linux::engine::{Frame, Next};
use crate::linux::kernel::wait::init_waitqueue_head;
use crate::linux::{CpuId, Kernel};

/// `tcp_rmem[1]`: a TCP socket's initial receive buffer.
pub const TCP_RMEM_DEFAULT: u32 = 131_072;
/// `tcp_wmem[1]`: the send buffer `getsockopt(SO_SNDBUF)` reports before the connection (what
/// netperf prints as the local send socket size).
pub const TCP_WMEM_DEFAULT: u32 = 16_384;
/// `tcp_wmem[2]`.
pub const TCP_WMEM_MAX: u32 = 4_194_304;
/// `TCP_INIT_CWND`.
const TCP_INIT_CWND: u32 = 10;

/// Socket options of one end, as the program sets them before connecting.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SockOpts {
    /// `TCP_NODELAY`.
    pub nodelay: bool,
    /// `SO_SNDBUF` / `SO_RCVBUF` values asked for (0: not set).
    pub sndbuf: u32,
    pub rcvbuf: u32,
}

/// Models `SO_SNDBUF`/`SO_RCVBUF` in `sk_setsockopt()` — net/core/sock.c @ v6.10: the value
/// asked for, capped at `sysctl_wmem_max`/`sysctl_rmem_max` (212992), doubled, at least `min`.
pub fn so_buf(val: u32, min: u32) -> u32 {
    (val.min(SK_MEM_DEFAULT) * 2).max(min)
}

/// Models `tcp_sndbuf_expand()` — net/ipv4/tcp_input.c @ v6.10, at connection set-up: room for
/// twice the initial congestion window of worst-case skbs of lo's MSS.
pub fn tcp_sndbuf_initial() -> u32 {
    // per_mss = roundup_pow_of_two(mss_clamp + MAX_TCP_HEADER + shinfo) + sizeof(sk_buff).
    let per_mss = (65_495u32 + 320 + 320).next_power_of_two() + 256;
    (2 * TCP_INIT_CWND * per_mss).min(TCP_WMEM_MAX)
}

/// `socket(AF_INET, SOCK_STREAM or SOCK_DGRAM)` on both ends, `connect()` of the first to the
/// second's listener and `accept()` there, all instant (see the module doc): returns (client,
/// server). Both sockets' lines are homed on `cpu`.
pub fn inet_connect_pair(
    k: &mut Kernel,
    cpu: CpuId,
    proto: Proto,
    client: SockOpts,
    server: SockOpts,
) -> (InetId, InetId) {
    super::core::dev::ensure_softnet(k);
    let a = k.ipc.net.socks.len() as InetId;
    for (i, o) in [client, server].into_iter().enumerate() {
        let wq = init_waitqueue_head(k, cpu);
        let line = k.lines.alloc(cpu);
        let mut s = InetSock::new(proto, a + 1 - i as u32, wq, line);
        match proto {
            Proto::Tcp => {
                s.rcvbuf = TCP_RMEM_DEFAULT;
                s.sndbuf = tcp_sndbuf_initial();
                s.tcp.nodelay = o.nodelay;
                s.tcp.ack.rcv_mss = TCP_MSS_DEFAULT;
            }
            Proto::Udp => {
                s.rcvbuf = SK_MEM_DEFAULT;
                s.sndbuf = SK_MEM_DEFAULT;
            }
        }
        if o.sndbuf > 0 {
            s.sndbuf = so_buf(o.sndbuf, SOCK_MIN_SNDBUF);
            s.sndbuf_locked = true;
        }
        if o.rcvbuf > 0 {
            s.rcvbuf = so_buf(o.rcvbuf, SOCK_MIN_RCVBUF);
            s.rcvbuf_locked = true;
        }
        k.ipc.net.socks.push(s);
    }
    if proto == Proto::Tcp {
        // The handshake: each side offers its window (tcp_select_initial_window(): the free
        // space rounded down to the MSS) and learns the other's.
        for me in [a, a + 1] {
            let peer = k.ipc.net.sk(me).peer;
            let win = (tcp_win_from_space(k.ipc.net.sk(peer).rcvbuf as i64) as u32) / TCP_MSS_LO * TCP_MSS_LO;
            let win = if win == 0 { tcp_win_from_space(k.ipc.net.sk(peer).rcvbuf as i64) as u32 } else { win };
            let t = &mut k.ipc.net.sk_mut(me).tcp;
            t.snd_wnd_end = win as u64;
            t.max_window = win;
            t.mss = tcp_mss_for_window(win);
            let p = &mut k.ipc.net.sk_mut(peer).tcp;
            p.rcv_wnd = win;
        }
    }
    (a, a + 1)
}

/// Resume points of a socket call on an AF_INET socket (TCP and UDP share them; each uses
/// its own), in rough code order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum InetAt {
    /// Syscall entry and `lock_sock()`.
    Enter,
    /// The copy loop.
    Loop,
    /// `tcp_sendmsg_locked()`'s `wait_for_space:` (push what is queued first).
    WaitSpace,
    /// `sk_stream_wait_memory()`: test, then `release_sock()` and sleep.
    WaitMem,
    /// `sk_wait_event()` after `release_sock()`: test once more, else sleep.
    WaitCheck,
    /// Back from `schedule()` in a wait: `finish_wait()`, `lock_sock()`.
    Woken,
    /// `sk_wait_data()`: `release_sock()`, then test and sleep.
    WaitData,
    /// The end of the call: push (send) or clean up the read buffer (receive).
    Out,
    /// `release_sock()`.
    Release,
    /// `__dev_queue_xmit()`'s `rcu_read_unlock_bh()` after a transmit: run the softirq it
    /// raised (`do_softirq()`), then go on at `then`.
    BhEnable,
    /// Back from that softirq.
    AfterSoftirq,
    /// Return to user space.
    Ret,
}

/// A `sendto()`/`recvfrom()` on an AF_INET socket in progress.
#[derive(Debug, Clone, Copy)]
pub struct InetOp {
    pub sock: InetId,
    /// Bytes asked for, and bytes sent or copied so far.
    pub len: u32,
    pub done: u32,
    /// recv: bytes to wait for (1, or `len` with `MSG_WAITALL`).
    pub target: u32,
    pub send: bool,
    pub at: InetAt,
    /// Where to go on after [`InetAt::BhEnable`].
    pub then: InetAt,
    /// `tcp_sendmsg_locked()`'s `process_backlog` count (skbs allocated since the backlog was
    /// last flushed); the receive side's "waited already" mark.
    pub n: u8,
}

const _: () = assert!(std::mem::size_of::<InetOp>() <= 56);

/// `MSG_WAITALL`.
pub const MSG_WAITALL: u32 = 0x100;

/// `sendto(sk, buf, len, 0, NULL, 0)` (or `write()`/`send()`): the syscall frame; the count sent
/// is left in the return register.
pub fn sys_sendto(sk: InetId, len: u32) -> Frame {
    Frame::Inet(InetOp { sock: sk, len, done: 0, target: 0, send: true, at: InetAt::Enter, then: InetAt::Ret, n: 0 })
}

/// `recvfrom(sk, buf, len, flags, NULL, NULL)` (or `read()`/`recv()`): the syscall frame; the
/// count received is left in the return register. `flags`: 0 or [`MSG_WAITALL`].
pub fn sys_recvfrom(sk: InetId, len: u32, flags: u32) -> Frame {
    let target = if flags & MSG_WAITALL != 0 { len } else { 1 };
    Frame::Inet(InetOp { sock: sk, len, done: 0, target, send: false, at: InetAt::Enter, then: InetAt::Ret, n: 0 })
}

/// Run one step of a socket call.
pub fn inet_op(k: &mut Kernel, cpu: CpuId, s: &mut InetOp) -> Next {
    match (k.ipc.net.sk(s.sock).proto, s.send) {
        (Proto::Tcp, true) => super::ipv4::tcp::tcp_sendmsg(k, cpu, s),
        (Proto::Tcp, false) => super::ipv4::tcp::tcp_recvmsg(k, cpu, s),
        (Proto::Udp, true) => super::ipv4::udp::udp_sendmsg(k, cpu, s),
        (Proto::Udp, false) => super::ipv4::udp::udp_recvmsg(k, cpu, s),
    }
}

/// The shared [`InetAt::BhEnable`] and [`InetAt::AfterSoftirq`] steps: `local_bh_enable()` after
/// a transmit runs the NET_RX softirq the transmit raised, in this task's context; then the call
/// goes on at `s.then`. Returns `None` when `s.at` is neither.
pub fn bh_enable_step(k: &mut Kernel, cpu: CpuId, s: &mut InetOp) -> Option<Next> {
    use crate::linux::kernel::softirq::{local_bh_enable, local_bh_enable_done};
    match s.at {
        InetAt::BhEnable => {
            if let Some(f) = local_bh_enable(k, cpu) {
                s.at = InetAt::AfterSoftirq;
                return Some(Next::Call(0, f));
            }
            s.at = s.then;
            Some(match local_bh_enable_done(k, cpu, false) {
                Some(f) => Next::Call(0, f),
                None => Next::Cont(0),
            })
        }
        InetAt::AfterSoftirq => {
            s.at = s.then;
            Some(match local_bh_enable_done(k, cpu, true) {
                Some(f) => Next::Call(0, f),
                None => Next::Cont(0),
            })
        }
        _ => None,
    }
}

/// Go through a transmit's `local_bh_enable()` (the caller disabled bottom halves for it) and
/// then on at `then`, after `c` ns.
pub fn after_xmit(s: &mut InetOp, then: InetAt, c: crate::sim::Time) -> Next {
    s.at = InetAt::BhEnable;
    s.then = then;
    Next::Cont(c)
}

/// Where the bytes sent on one direction of a connection are (from socket `tx` to its peer):
/// what [`pair_accounting`] counts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct Accounting {
    /// Bytes `sendmsg()` accepted on `tx`.
    pub sent: u64,
    /// Bytes the peer's `recvmsg()` copied out.
    pub received: u64,
    /// Still on the peer's receive queue, on its owner backlog, on some CPU's backlog, and not
    /// yet sent (TCP's write queue).
    pub unread: u64,
    pub socket_backlog: u64,
    pub cpu_backlogs: u64,
    pub unsent: u64,
    /// Dropped by the peer (UDP, its receive buffer full, or a full CPU backlog).
    pub dropped: u64,
}

impl Accounting {
    /// Every byte sent is accounted for somewhere.
    pub fn balanced(&self) -> bool {
        self.sent == self.received + self.unread + self.socket_backlog + self.cpu_backlogs + self.unsent + self.dropped
    }
}

/// Count where the bytes sent from `tx` to its peer are now (tests and workloads check that
/// none is lost or made up).
pub fn pair_accounting(k: &Kernel, tx: InetId) -> Accounting {
    let s = k.ipc.net.sk(tx);
    let rx = k.ipc.net.sk(s.peer);
    Accounting {
        sent: s.bytes_sent,
        received: rx.bytes_received,
        unread: rx.receive_queue.iter().map(|b| (b.len - b.consumed) as u64).sum(),
        socket_backlog: rx.backlog.iter().map(|p| p.len as u64).sum(),
        cpu_backlogs: k
            .ipc
            .net
            .softnet
            .iter()
            .flat_map(|sd| sd.input_pkt_queue.iter())
            .filter(|p| p.dst == s.peer)
            .map(|p| p.len as u64)
            .sum(),
        unsent: s.tcp.write_queue.iter().map(|&l| l as u64).sum(),
        dropped: rx.drop_bytes,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffer_sizes_follow_the_kernels_rules() {
        // tcp_sndbuf_expand(): 2 x 10 x (roundup_pow_of_two(65495 + 640) + 256).
        assert_eq!(tcp_sndbuf_initial(), 2_626_560);
        // SO_SNDBUF doubles, caps at wmem_max first, and has a floor.
        assert_eq!(so_buf(8192, SOCK_MIN_SNDBUF), 16_384);
        assert_eq!(so_buf(1 << 20, SOCK_MIN_SNDBUF), 2 * SK_MEM_DEFAULT);
        assert_eq!(so_buf(1, SOCK_MIN_SNDBUF), SOCK_MIN_SNDBUF);
    }

    #[test]
    fn a_pair_is_two_connected_sockets() {
        let mut k = Kernel::for_test("smp-4");
        let o = SockOpts { nodelay: true, sndbuf: 4096, rcvbuf: 0 };
        let (a, b) = inet_connect_pair(&mut k, 1, Proto::Tcp, o, SockOpts::default());
        assert_eq!((k.ipc.net.sk(a).peer, k.ipc.net.sk(b).peer), (b, a));
        assert!(k.ipc.net.sk(a).tcp.nodelay && !k.ipc.net.sk(b).tcp.nodelay);
        assert_eq!((k.ipc.net.sk(a).sndbuf, k.ipc.net.sk(b).sndbuf), (8192, tcp_sndbuf_initial()));
        assert_eq!(k.ipc.net.softnet.len(), 4);
        assert!(pair_accounting(&k, a).balanced());
    }
}
