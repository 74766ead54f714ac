//! netperf 2.7 (HewlettPackard/netperf, `netserver` + `netperf`) over loopback, as LKP runs it
//! (docs/workloads.md §5): `clients` concurrent `netperf -4 -H 127.0.0.1 -t TEST -c -C -l LEN`
//! processes (LKP's `nr_threads`: a count, or `N%` of the CPUs), each served by its own
//! `netserver` child. The netperf command line is the workload's own, after `--`, with the
//! number of processes first: `schedsim run netperf -- 25% -t TCP_RR -c -C -l 0.2` (or the
//! parameters `clients=25% args="-t TCP_RR ..."`).
//!
//! Tests (the omni code paths netperf 2.7 "migrates" the classic names to):
//!
//! - `TCP_RR`, `UDP_RR`: the client loops `send(req)`, `recv(rsp)` (receiving until the whole
//!   response is in); the server `recv(req)`, `send(rsp)`. Sizes `-r req[,rsp]` after the
//!   second `--`, 1 and 1 by default. One transaction is two wakeups, both made by the NET_RX
//!   softirq on the sender's CPU.
//! - `TCP_STREAM`: the client sends `-m` bytes (default: the send socket size netperf reads
//!   before connecting, 16384) back to back; the server receives `-M` bytes (default: its
//!   receive socket size, 131072) at a time.
//! - `UDP_STREAM`: the same with datagrams of `-m` (default: `min(send socket size, 65507)`),
//!   which the receiver may drop.
//!
//! Test-specific options: `-r`, `-m`, `-M`, `-s` and `-S` (`SO_SNDBUF`/`SO_RCVBUF` of the
//! local and remote socket: both directions' buffer at once, as netperf sets both), `-D`
//! (`TCP_NODELAY` on both ends). Global options: `-t`, `-l`, `-c`, `-C`, `-4`, `-H` (a
//! loopback address), `-P 0|1` (banner). Anything else is refused by name.
//!
//! **Shortened runs.** netperf's default test length is 10 s and LKP runs 300 s; the model's
//! default is [`DEFAULT_LEN_MS`] (0.2 s), and `-l` accepts fractions of a second (`-l 0.25`);
//! a negative `-l -N` is netperf's count mode (N transactions, or N bytes for a stream).
//! `tests/netperf.rs` checks that the rate has converged at the default: the second half of a
//! run's transactions per second is within 2% of the first half's. 0.1 s was not enough: one
//! `TCP_STREAM` pair on a 4-CPU machine changes regime after 60 ms (netserver woken 340 times
//! per 10 ms, then 1466, for 4% less throughput: second half / first half 0.964 at 0.1 s,
//! 0.991 at 0.2 s).
//!
//! **Warm-up** (`warmup=SECS`, the model's own parameter, not a netperf option; 0 by
//! default): each client runs its test for SECS first and then starts its clock and its counts
//! from zero, so the printed block (its elapsed time, rate and CPU columns) and the metric
//! cover only the `-l` window after it; the simulation itself is the same as one run of
//! `SECS + -l`. It is in the run line as the parameter. Runs that start from an idle machine
//! spend their first tenths of a second with the CPUs' idle governor still predicting long
//! idle periods (docs/unknowns.md §11); a warm-up measures past that.
//!
//! Output: each netperf prints its banner and result block when its test ends (the test
//! header, the data line and, for RR and UDP_STREAM, the remote line), with netperf's own
//! format strings; with `-c -C` the CPU columns hold the machine's utilization over that
//! client's test (netperf reads `/proc/stat`, which is machine-wide) and the service demand
//! derived from it as netperf does.
//!
//! Simplifications: the control connection, `netserver`'s daemon and its `fork()`, and the
//! data connection's set-up are instant (`net::socket::inet_connect_pair`); every client and
//! server process is created at the start and placed by fork balancing; a client stops at its
//! first loop test past the test length (netperf's `SIGALRM` sets `times_up`, tested there)
//! and does not wait for the server to drain; the servers stay blocked when the clients stop.

use super::params::Params;
use super::TaskFrame;
use crate::linux::engine::{Action, Next, Phase};
use crate::linux::net::core::sock::{InetId, Proto};
use crate::linux::net::socket::{
    inet_connect_pair, pair_accounting, sys_recvfrom, sys_sendto, Accounting, SockOpts, TCP_RMEM_DEFAULT,
    TCP_WMEM_DEFAULT,
};
use crate::linux::programs::resume_points;
use crate::linux::{CpuId, Kernel, TaskId};
use crate::sim::{Time, NSEC_PER_MSEC, NSEC_PER_SEC};

pub const PARAM_NAMES: &[&str] = &["clients", "args", "warmup"];

/// The model's default test length (netperf's is 10 s; see the module doc).
pub const DEFAULT_LEN_MS: u64 = 200;

/// A netperf test.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Test {
    TcpRr,
    UdpRr,
    TcpStream,
    UdpStream,
}

impl Test {
    pub const NAMES: &'static [&'static str] = &["TCP_RR", "UDP_RR", "TCP_STREAM", "UDP_STREAM"];

    pub fn parse(s: &str) -> Option<Test> {
        match s.to_ascii_uppercase().as_str() {
            "TCP_RR" => Some(Test::TcpRr),
            "UDP_RR" => Some(Test::UdpRr),
            "TCP_STREAM" => Some(Test::TcpStream),
            "UDP_STREAM" => Some(Test::UdpStream),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        Test::NAMES[self as usize]
    }

    pub fn proto(self) -> Proto {
        match self {
            Test::TcpRr | Test::TcpStream => Proto::Tcp,
            Test::UdpRr | Test::UdpStream => Proto::Udp,
        }
    }

    pub fn rr(self) -> bool {
        matches!(self, Test::TcpRr | Test::UdpRr)
    }
}

/// A netperf command line, parsed.
#[derive(Debug, Clone, PartialEq)]
pub struct NetperfOpts {
    pub test: Test,
    /// Test length (`-l`): a time, or with a negative `-l` (netperf's count mode) a number
    /// of transactions (RR) or bytes (STREAM), `len_count`.
    pub len_ns: Time,
    pub len_count: u64,
    /// `-c`, `-C`.
    pub cpu_local: bool,
    pub cpu_remote: bool,
    /// `-H`.
    pub host: String,
    /// `-P 0`: no banner.
    pub banner: bool,
    /// `-r req,rsp`.
    pub req: u32,
    pub rsp: u32,
    /// `-m`, `-M` (0: netperf's default for the test).
    pub send_size: u32,
    pub recv_size: u32,
    /// `-s`, `-S` (0: not set).
    pub lss: u32,
    pub rss: u32,
    /// `-D`.
    pub nodelay: bool,
    /// The command line as given.
    pub args: String,
}

/// The largest UDP payload over IPv4.
const UDP_MAX: u32 = 65_507;

impl NetperfOpts {
    /// Parse netperf's arguments (global options, then test-specific ones after `--`).
    /// Errors name the option.
    pub fn parse(args: &[&str]) -> Result<NetperfOpts, String> {
        let mut o = NetperfOpts {
            test: Test::TcpStream,
            len_ns: DEFAULT_LEN_MS * NSEC_PER_MSEC,
            len_count: 0,
            cpu_local: false,
            cpu_remote: false,
            host: "localhost".into(),
            banner: true,
            req: 1,
            rsp: 1,
            send_size: 0,
            recv_size: 0,
            lss: 0,
            rss: 0,
            nodelay: false,
            args: args.join(" "),
        };
        let (global, specific) = match args.iter().position(|a| *a == "--") {
            Some(i) => (&args[..i], &args[i + 1..]),
            None => (args, &[][..]),
        };
        let mut it = global.iter();
        while let Some(&a) = it.next() {
            let mut val = |name: &str| -> Result<&str, String> {
                it.next().copied().ok_or_else(|| format!("netperf: option {name} requires an argument"))
            };
            match a {
                "-t" => {
                    let v = val("-t")?;
                    o.test = Test::parse(v).ok_or_else(|| {
                        format!("netperf: -t {v}: not a modelled test (expected one of: {})", Test::NAMES.join(", "))
                    })?;
                }
                "-l" => {
                    let v = val("-l")?;
                    match v.strip_prefix('-') {
                        Some(n) => {
                            o.len_count = match n.parse::<u64>() {
                                Ok(n) if n > 0 => n,
                                _ => return Err(format!("netperf: -l {v}: a negative length is a count of transactions or bytes: expected -N with N > 0")),
                            };
                            o.len_ns = crate::limits::MAX_SIM_NS;
                        }
                        None => o.len_ns = parse_len(v)?,
                    }
                }
                "-c" => o.cpu_local = true,
                "-C" => o.cpu_remote = true,
                "-4" => {}
                "-6" => return Err("netperf: -6: only IPv4 over loopback (-4) is modelled".into()),
                "-H" => {
                    let h = val("-H")?;
                    if !matches!(h, "127.0.0.1" | "localhost") && !h.starts_with("127.") {
                        return Err(format!(
                            "netperf: -H {h}: only a loopback address is modelled (127.0.0.1 or localhost)"
                        ));
                    }
                    o.host = h.to_string();
                }
                "-P" => {
                    o.banner = match val("-P")? {
                        "0" => false,
                        "1" => true,
                        v => return Err(format!("netperf: -P {v}: expected 0 or 1")),
                    }
                }
                x => {
                    return Err(format!(
                        "netperf: option '{x}' is not modelled (global options: -t -l -c -C -4 -H -P; test options after --: -r -m -M -s -S -D)"
                    ))
                }
            }
        }
        let mut it = specific.iter();
        while let Some(&a) = it.next() {
            let mut val = |name: &str| -> Result<&str, String> {
                it.next().copied().ok_or_else(|| format!("netperf: test option {name} requires an argument"))
            };
            match a {
                "-r" => {
                    let v = val("-r")?;
                    let (r, s) = v.split_once(',').unwrap_or((v, ""));
                    o.req = parse_size("-r", r)?;
                    o.rsp = if s.is_empty() { o.req } else { parse_size("-r", s)? };
                }
                "-m" => o.send_size = parse_size("-m", val("-m")?)?,
                "-M" => o.recv_size = parse_size("-M", val("-M")?)?,
                "-s" => o.lss = parse_size("-s", val("-s")?)?,
                "-S" => o.rss = parse_size("-S", val("-S")?)?,
                "-D" => o.nodelay = true,
                x => return Err(format!("netperf: test option '{x}' is not modelled (expected -r -m -M -s -S -D)")),
            }
        }
        if o.test.proto() == Proto::Udp && o.send_size > UDP_MAX {
            return Err(format!("netperf: -m {}: a UDP datagram holds at most {UDP_MAX} bytes", o.send_size));
        }
        if o.test.proto() == Proto::Udp && o.test.rr() && o.req.max(o.rsp) > UDP_MAX {
            return Err(format!("netperf: -r {},{}: a UDP datagram holds at most {UDP_MAX} bytes", o.req, o.rsp));
        }
        Ok(o)
    }

    /// The send and receive socket sizes netperf prints for the local (client) and remote
    /// (server) ends: what `getsockopt(SO_SNDBUF/SO_RCVBUF)` reports before connecting.
    pub fn socket_sizes(&self) -> (u32, u32, u32, u32) {
        let (snd, rcv) = match self.test.proto() {
            Proto::Tcp => (TCP_WMEM_DEFAULT, TCP_RMEM_DEFAULT),
            Proto::Udp => {
                (crate::linux::net::core::sock::SK_MEM_DEFAULT, crate::linux::net::core::sock::SK_MEM_DEFAULT)
            }
        };
        use crate::linux::net::socket::so_buf;
        let set = |v: u32, d: u32, min: u32| if v > 0 { so_buf(v, min) } else { d };
        use crate::linux::net::core::sock::{SOCK_MIN_RCVBUF, SOCK_MIN_SNDBUF};
        // -s sets both buffers of the local socket, -S both of the remote one.
        (
            set(self.lss, snd, SOCK_MIN_SNDBUF),
            set(self.lss, rcv, SOCK_MIN_RCVBUF),
            set(self.rss, snd, SOCK_MIN_SNDBUF),
            set(self.rss, rcv, SOCK_MIN_RCVBUF),
        )
    }

    /// The message sizes a STREAM test uses: (send, receive).
    pub fn stream_sizes(&self) -> (u32, u32) {
        let (lss, _, _, rsr) = self.socket_sizes();
        let send = if self.send_size > 0 {
            self.send_size
        } else if self.test.proto() == Proto::Udp {
            lss.min(UDP_MAX)
        } else {
            lss
        };
        let recv = if self.recv_size > 0 { self.recv_size } else { rsr };
        (send, recv)
    }
}

/// `-l`: seconds, a fraction allowed in the model (see the module doc).
fn parse_len(v: &str) -> Result<Time, String> {
    let bad = || format!("netperf: -l {v}: expected a test length in seconds > 0 (fractions allowed, e.g. 0.2)");
    let (int, frac) = v.split_once('.').unwrap_or((v, ""));
    if int.is_empty() && frac.is_empty()
        || frac.len() > 9
        || !int.bytes().chain(frac.bytes()).all(|b| b.is_ascii_digit())
    {
        return Err(bad());
    }
    let secs: u64 = if int.is_empty() { 0 } else { int.parse().map_err(|_| bad())? };
    let nanos: u64 =
        if frac.is_empty() { 0 } else { frac.parse::<u64>().map_err(|_| bad())? * 10u64.pow(9 - frac.len() as u32) };
    let ns = secs.checked_mul(NSEC_PER_SEC).and_then(|s| s.checked_add(nanos)).ok_or_else(bad)?;
    if ns == 0 {
        return Err(bad());
    }
    if ns > crate::limits::MAX_SIM_NS {
        return Err(format!(
            "netperf: -l {v}: longer than schedsim simulates (at most {} s)",
            crate::limits::MAX_SIM_NS / NSEC_PER_SEC
        ));
    }
    Ok(ns)
}

/// A byte count (netperf accepts suffixes; the model takes plain numbers and K/M).
fn parse_size(opt: &str, v: &str) -> Result<u32, String> {
    let (num, mul) = match v.as_bytes().last() {
        Some(b'K' | b'k') => (&v[..v.len() - 1], 1024),
        Some(b'M') => (&v[..v.len() - 1], 1024 * 1024),
        _ => (v, 1),
    };
    match num.parse::<u32>().ok().and_then(|n| n.checked_mul(mul)) {
        Some(n) if n > 0 && n <= 64 * 1024 * 1024 => Ok(n),
        _ => Err(format!("netperf: {opt} {v}: expected a size in bytes between 1 and 64M")),
    }
}

/// One client/server pair and what each side counted.
#[derive(Debug, Clone, Default)]
pub struct Pair {
    pub client: TaskId,
    pub server: TaskId,
    pub csock: InetId,
    pub ssock: InetId,
    /// The client's test: start and end (ns), and the machine's busy CPU time at both.
    pub start_ns: Time,
    pub end_ns: Time,
    pub busy_start: u64,
    pub busy_end: u64,
    /// RR: transactions completed. STREAM: bytes and messages the client sent.
    pub trans: u64,
    pub bytes: u64,
    pub msgs: u64,
    /// STREAM: bytes and messages the server received.
    pub srv_bytes: u64,
    pub srv_msgs: u64,
    pub finished: bool,
    /// With `warmup=`: the end of this client's warm-up (0 once it is over, or without one).
    pub warm_until: Time,
    /// The first loop test past half the test length: its time and the transactions and
    /// bytes done by then (for the convergence check of the shortened runs).
    pub half_ns: Time,
    pub half_trans: u64,
    pub half_bytes: u64,
}

/// Run state and results.
#[derive(Debug, Clone)]
pub struct Netperf {
    pub o: NetperfOpts,
    pub clients: u32,
    /// `warmup=`: simulated time each client runs its test before the measured `-l` window
    /// (0: none). Not a netperf option: see the module doc.
    pub warmup_ns: Time,
    pub pairs: Vec<Pair>,
    pub nr_cpus: u32,
    /// What the netperf processes printed, each block as its test ended.
    pub output: String,
    pub finished: u32,
    pub done: bool,
    /// Where the bytes of every connection were when the last client stopped: client to
    /// server, and server to client (`net::socket::pair_accounting`, summed over the pairs).
    pub accounting: [Accounting; 2],
    /// The network paths' counters when the last client stopped.
    pub net: crate::linux::net::NetStats,
}

impl Netperf {
    /// From the workload parameters `clients` and `args` on a machine of `nr_cpus`.
    pub fn parse(p: &Params, nr_cpus: u32) -> Result<Netperf, String> {
        p.check_known("netperf", PARAM_NAMES)?;
        let clients = clients_param(p, nr_cpus)?;
        let args: Vec<&str> = p.get("args").unwrap_or("-t TCP_RR").split_whitespace().collect();
        let o = NetperfOpts::parse(&args).map_err(|e| format!("{}: {e}", p.origin))?;
        let warmup_ns = match p.get("warmup") {
            None | Some("0") => 0,
            Some(v) => parse_len(v).map_err(|_| {
                format!(
                    "{}: parameter warmup={v}: expected the seconds each client runs before its measured -l \
                     window (0, or fractions such as 0.8)",
                    p.origin
                )
            })?,
        };
        Ok(Netperf {
            o,
            clients,
            warmup_ns,
            pairs: Vec::new(),
            nr_cpus,
            output: String::new(),
            finished: 0,
            done: false,
            accounting: Default::default(),
            net: Default::default(),
        })
    }

    /// Transactions per second of all clients (RR), as LKP's `Throughput_total_tps` sums them.
    pub fn total_tps(&self) -> f64 {
        self.pairs.iter().filter(|p| p.finished).map(|p| p.trans as f64 / secs(p)).sum()
    }

    /// Megabits per second of all clients (STREAM, sender side), as LKP's
    /// `Throughput_total_Mbps` sums them.
    pub fn total_mbps(&self) -> f64 {
        self.pairs.iter().filter(|p| p.finished).map(|p| p.bytes as f64 * 8.0 / 1e6 / secs(p)).sum()
    }

    /// The rate of the second half of the clients' tests relative to the first half's
    /// (transactions for RR, bytes for STREAM), over all clients: 1.0 when the rate has
    /// converged by the test's length.
    pub fn half_ratio(&self) -> f64 {
        let rr = self.o.test.rr();
        let (mut a, mut ta, mut b, mut tb) = (0.0, 0.0, 0.0, 0.0);
        for p in self.pairs.iter().filter(|p| p.finished && p.half_ns > 0) {
            let (h, e) = if rr { (p.half_trans, p.trans) } else { (p.half_bytes, p.bytes) };
            a += h as f64;
            ta += (p.half_ns - p.start_ns) as f64;
            b += (e - h) as f64;
            tb += (p.end_ns - p.half_ns) as f64;
        }
        (b / tb.max(1.0)) / (a / ta.max(1.0)).max(1e-12)
    }

    /// The machine's CPU utilization (percent) over a pair's test.
    fn util(&self, p: &Pair) -> f64 {
        let span = (p.end_ns - p.start_ns).max(1) as f64 * self.nr_cpus as f64;
        (100.0 * (p.busy_end - p.busy_start) as f64 / span).min(100.0)
    }
}

/// Split a command line given after `--`: an optional first word `N` or `N%` is the number of
/// concurrent netperf processes (LKP's `nr_threads`), the rest netperf's own arguments.
pub fn command_line_params(words: &[String]) -> Vec<(String, String)> {
    let count = |w: &str| !w.is_empty() && w.trim_end_matches('%').bytes().all(|b| b.is_ascii_digit());
    match words.first() {
        Some(w) if count(w) => vec![("clients".into(), w.clone()), ("args".into(), words[1..].join(" "))],
        _ => vec![("args".into(), words.join(" "))],
    }
}

/// `clients=`: a count, or `N%` of the CPUs as LKP's `nr_threads` (`(N * nr_cpu / 100).to_i`,
/// at least 1).
pub fn clients_param(p: &Params, nr_cpus: u32) -> Result<u32, String> {
    let v = p.get("clients").unwrap_or("1");
    let n = match v.strip_suffix('%') {
        Some(pct) => {
            let pct: u64 =
                pct.parse().map_err(|_| format!("{}: parameter clients={v}: expected a count or N%", p.origin))?;
            (pct * nr_cpus as u64 / 100).max(1)
        }
        None => v.parse::<u64>().map_err(|_| format!("{}: parameter clients={v}: expected a count or N%", p.origin))?,
    };
    let max = crate::limits::MAX_TASKS / 2;
    if n == 0 || n > max {
        return Err(format!("{}: parameter clients={v} gives {n} clients (expected 1..={max})", p.origin));
    }
    Ok(n as u32)
}

fn secs(p: &Pair) -> f64 {
    (p.end_ns - p.start_ns).max(1) as f64 / 1e9
}

/// CPU time the machine spent outside idle up to now (what `/proc/stat` calls busy).
fn busy_ns(k: &Kernel) -> u64 {
    const BUSY: [Phase; 6] =
        [Phase::Task, Phase::Spin, Phase::Schedule, Phase::Newidle, Phase::HardIrq, Phase::Softirq];
    (0..k.m.topo.nr_cpus)
        .map(|c| BUSY.iter().map(|&ph| crate::linux::engine::phase_ns_now(k, c, ph)).sum::<u64>())
        .sum()
}

/// The banner line (`print_top_test_header()` of the omni tests).
fn banner(o: &NetperfOpts) -> String {
    let kind = match o.test {
        Test::TcpRr => "TCP REQUEST/RESPONSE",
        Test::UdpRr => "UDP REQUEST/RESPONSE",
        Test::TcpStream => "TCP STREAM",
        Test::UdpStream => "UDP STREAM",
    };
    let burst = if o.test.rr() { " : first burst 0" } else { "" };
    format!(
        "MIGRATED {kind} TEST from 0.0.0.0 (0.0.0.0) port 0 AF_INET to {} () port 0 AF_INET : demo{burst}\n",
        o.host
    )
}

/// What one netperf process prints at the end of its test (netperf 2.7's formats; the
/// numbers: the pair's counts, the CPU utilization `util` and the machine's `nr_cpus`).
pub fn result_block(o: &NetperfOpts, p: &Pair, util: f64, nr_cpus: u32) -> String {
    let (lss, lsr, rss, rsr) = o.socket_sizes();
    let el = secs(p);
    let cpu = o.cpu_local || o.cpu_remote;
    let lu = if o.cpu_local { util } else { -1.0 };
    let ru = if o.cpu_remote { util } else { -1.0 };
    let mut s = if o.banner { banner(o) } else { String::new() };
    match o.test {
        Test::TcpRr | Test::UdpRr => {
            let rate = p.trans as f64 / el;
            let sd = |u: f64| if u < 0.0 { -1.0 } else { u / 100.0 * nr_cpus as f64 * 1e6 / rate.max(1e-9) };
            if cpu {
                s.push_str("Local /Remote\nSocket Size   Request Resp.  Elapsed Trans.   CPU    CPU    S.dem   S.dem\nSend   Recv   Size    Size   Time    Rate     local  remote local   remote\nbytes  bytes  bytes   bytes  secs.   per sec  % S    % S    us/Tr   us/Tr\n\n");
                let gap = if o.test == Test::UdpRr { "   " } else { "  " };
                s.push_str(&format!(
                    "{:<6} {:<6} {:<6}  {:<6} {:<6.2}  {:<6.2}{gap}{:<6.2} {:<6.2} {:<6.3}  {:<6.3} \n",
                    lss,
                    lsr,
                    o.req,
                    o.rsp,
                    el,
                    rate,
                    lu,
                    ru,
                    sd(lu),
                    sd(ru)
                ));
            } else {
                s.push_str("Local /Remote\nSocket Size   Request  Resp.   Elapsed  Trans.\nSend   Recv   Size     Size    Time     Rate         \nbytes  Bytes  bytes    bytes   secs.    per sec   \n\n");
                s.push_str(&format!(
                    "{:<6} {:<6} {:<6}   {:<6}  {:<6.2}   {:<6.2}   \n",
                    lss, lsr, o.req, o.rsp, el, rate
                ));
            }
            s.push_str(&format!("{:<6} {:<6}\n", rss, rsr));
        }
        Test::TcpStream => {
            let (send, _) = o.stream_sizes();
            let mbps = p.bytes as f64 * 8.0 / 1e6 / el;
            let kbs = p.bytes as f64 / 1024.0 / el;
            let sd = |u: f64| if u < 0.0 { -1.0 } else { u / 100.0 * nr_cpus as f64 * 1e6 / kbs.max(1e-9) };
            if cpu {
                s.push_str("Recv   Send    Send                          Utilization       Service Demand\nSocket Socket  Message  Elapsed              Send     Recv     Send    Recv\nSize   Size    Size     Time     Throughput  local    remote   local   remote\nbytes  bytes   bytes    secs.    10^6bits/s  % S      % S      us/KB   us/KB\n\n");
                s.push_str(&format!(
                    "{:>6} {:>6} {:>6}    {:<6.2}     {:>7.2}   {:<6.2}   {:<6.2}   {:<6.3}  {:<6.3} \n",
                    rsr,
                    lss,
                    send,
                    el,
                    mbps,
                    lu,
                    ru,
                    sd(lu),
                    sd(ru)
                ));
            } else {
                s.push_str("Recv   Send    Send                          \nSocket Socket  Message  Elapsed              \nSize   Size    Size     Time     Throughput  \nbytes  bytes   bytes    secs.    10^6bits/sec  \n\n");
                s.push_str(&format!("{:>6} {:>6} {:>6}    {:<6.2}   {:>7.2}   \n", rsr, lss, send, el, mbps));
            }
        }
        Test::UdpStream => {
            let (send, _) = o.stream_sizes();
            let mbps = p.bytes as f64 * 8.0 / 1e6 / el;
            let rmbps = p.srv_bytes as f64 * 8.0 / 1e6 / el;
            let sd = |u: f64, bytes: u64| {
                if u < 0.0 {
                    -1.0
                } else {
                    u / 100.0 * nr_cpus as f64 * 1e6 / (bytes as f64 / 1024.0 / el).max(1e-9)
                }
            };
            if cpu {
                s.push_str("Socket  Message  Elapsed      Messages                   CPU      Service\nSize    Size     Time         Okay Errors   Throughput   Util     Demand\nbytes   bytes    secs            #      #   10^6bits/sec % SS     us/KB\n\n");
                s.push_str(&format!(
                    "{:>6}  {:>6}   {:<7.2}   {:>7} {:>6}    {:>7.1}     {:<6.2}   {:<6.3}\n",
                    lss,
                    send,
                    el,
                    p.msgs,
                    0,
                    mbps,
                    lu,
                    sd(lu, p.bytes)
                ));
                s.push_str(&format!(
                    "{:>6}           {:<7.2}   {:>7}           {:>7.1}     {:<6.2}   {:<6.3}\n\n",
                    rsr,
                    el,
                    p.srv_msgs,
                    rmbps,
                    ru,
                    sd(ru, p.bytes)
                ));
            } else {
                s.push_str("Socket  Message  Elapsed      Messages                \nSize    Size     Time         Okay Errors   Throughput\nbytes   bytes    secs            #      #   10^6bits/sec\n\n");
                s.push_str(&format!(
                    "{:>6}  {:>6}   {:<7.2}   {:>7} {:>6}    {:>7.2}\n",
                    lss, send, el, p.msgs, 0, mbps
                ));
                s.push_str(&format!(
                    "{:>6}           {:<7.2}   {:>7}           {:>7.2}\n\n",
                    rsr, el, p.srv_msgs, rmbps
                ));
            }
        }
    }
    s
}

/// Roles of [`TaskFrame::task`]: client `i` is `2i`, its server `2i + 1`.
fn pair_of(role: u32) -> (usize, bool) {
    ((role / 2) as usize, role % 2 == 0)
}

/// Create the processes; the shell starts them at a seed-dependent instant after 1 ms.
pub fn start(w: &mut Netperf, k: &mut Kernel) {
    let load = super::load_time(k, 0x4E7F);
    for i in 0..w.clients {
        let client = crate::linux::kernel::fork::copy_process(k, "netperf".into(), 0, 120, None, 2 * i);
        let server = crate::linux::kernel::fork::copy_process(k, "netserver".into(), 0, 120, None, 2 * i + 1);
        w.pairs.push(Pair { client, server, ..Default::default() });
    }
    k.q.push(load, Action::Program { what: 0 });
}

/// Connect every pair and start its two processes (LKP starts the clients at once with `&`;
/// netserver forks a child for each).
pub fn on_action(w: &mut Netperf, k: &mut Kernel, _what: u32) {
    let o = &w.o;
    let proto = o.test.proto();
    let client = SockOpts { nodelay: o.nodelay, sndbuf: o.lss, rcvbuf: o.lss };
    let server = SockOpts { nodelay: o.nodelay, sndbuf: o.rss, rcvbuf: o.rss };
    for p in w.pairs.iter_mut() {
        let (c, s) = inet_connect_pair(k, 0, proto, client, server);
        p.csock = c;
        p.ssock = s;
    }
    for p in w.pairs.clone() {
        super::spawn(k, 0, p.client);
        super::spawn(k, 0, p.server);
    }
}

resume_points! {
    /// Where a netperf or netserver process resumes.
    enum NetAt {
        /// The test starts (the client notes the time and the CPU counters).
        Start,
        /// The loop's head: client sends (or stops once the time is up), server receives.
        Loop,
        /// The first call of the loop returned.
        First,
        /// A receive returned (RR: loop until the whole message is in).
        Recvd,
        Exited = super::EXITED,
    }
}

fn user(k: &Kernel, s: &mut TaskFrame) -> Next {
    s.user = true;
    Next::Cont(k.costs.user_op)
}

/// One step of a netperf or netserver process.
pub fn task_step(w: &mut Netperf, k: &mut Kernel, cpu: CpuId, s: &mut TaskFrame) -> Next {
    let (i, is_client) = pair_of(s.task);
    let test = w.o.test;
    let ret = k.tasks[k.curr(cpu) as usize].user_ret.max(0) as u64;
    match NetAt::from_u8(s.at) {
        NetAt::Start => {
            if is_client {
                let now = k.now;
                let busy = busy_ns(k);
                let p = &mut w.pairs[i];
                p.start_ns = now;
                p.busy_start = busy;
                if w.warmup_ns > 0 {
                    p.warm_until = now + w.warmup_ns;
                }
            }
            s.at = NetAt::Loop as u8;
            user(k, s)
        }
        NetAt::Loop => {
            if is_client && w.pairs[i].warm_until != 0 && k.now >= w.pairs[i].warm_until {
                // The warm-up is over: the measured test starts here, from zero.
                let busy = busy_ns(k);
                let p = &mut w.pairs[i];
                (p.start_ns, p.busy_start, p.warm_until) = (k.now, busy, 0);
                (p.trans, p.bytes, p.msgs, p.srv_bytes, p.srv_msgs) = (0, 0, 0, 0, 0);
            }
            let p = &mut w.pairs[i];
            if is_client {
                // During a warm-up the client only loops; the test's clock starts after it.
                if p.warm_until == 0 {
                    let count = if test.rr() { p.trans } else { p.bytes };
                    let o = &w.o;
                    let (over, half) = if o.len_count > 0 {
                        (count >= o.len_count, count >= o.len_count / 2)
                    } else {
                        (k.now >= p.start_ns + o.len_ns, k.now >= p.start_ns + o.len_ns / 2)
                    };
                    if over {
                        return finish(w, k, cpu, s, i);
                    }
                    if p.half_ns == 0 && half {
                        p.half_ns = k.now;
                        p.half_trans = p.trans;
                        p.half_bytes = p.bytes;
                    }
                }
                let p = &mut w.pairs[i];
                let len = if test.rr() { w.o.req } else { w.o.stream_sizes().0 };
                s.at = NetAt::First as u8;
                return Next::Call(k.costs.user_op, sys_sendto(p.csock, len));
            }
            // The server: receive a request, or the stream's next chunk.
            let len = if test.rr() { w.o.req } else { w.o.stream_sizes().1 };
            s.mark[0] = 0;
            s.at = NetAt::Recvd as u8;
            Next::Call(k.costs.user_op, sys_recvfrom(p.ssock, len, 0))
        }
        NetAt::First => {
            // The client's send returned.
            let p = &mut w.pairs[i];
            if !test.rr() {
                p.bytes += ret;
                p.msgs += 1;
                s.at = NetAt::Loop as u8;
                return user(k, s);
            }
            s.mark[0] = 0;
            s.at = NetAt::Recvd as u8;
            Next::Call(k.costs.user_op, sys_recvfrom(p.csock, w.o.rsp, 0))
        }
        NetAt::Recvd => {
            let p = &mut w.pairs[i];
            if !is_client && !test.rr() {
                p.srv_bytes += ret;
                p.srv_msgs += 1;
                s.at = NetAt::Loop as u8;
                return user(k, s);
            }
            // RR: receive until the whole message is in (TCP may return it in parts).
            s.mark[0] += ret;
            let want = if is_client { w.o.rsp } else { w.o.req } as u64;
            let sock = if is_client { p.csock } else { p.ssock };
            if s.mark[0] < want && test == Test::TcpRr {
                return Next::Call(k.costs.user_op, sys_recvfrom(sock, (want - s.mark[0]) as u32, 0));
            }
            if is_client {
                p.trans += 1;
                s.at = NetAt::Loop as u8;
                return user(k, s);
            }
            // The server answers, then waits for the next request.
            s.at = NetAt::Loop as u8;
            Next::Call(k.costs.user_op, sys_sendto(p.ssock, w.o.rsp))
        }
        NetAt::Exited => unreachable!("netperf process ran after exit"),
    }
}

/// The client's test is over: note the end, print its block, exit.
fn finish(w: &mut Netperf, k: &mut Kernel, cpu: CpuId, s: &mut TaskFrame, i: usize) -> Next {
    let now = k.now;
    let busy = busy_ns(k);
    {
        let p = &mut w.pairs[i];
        p.end_ns = now;
        p.busy_end = busy;
        p.finished = true;
    }
    let util = w.util(&w.pairs[i]);
    let block = result_block(&w.o, &w.pairs[i], util, w.nr_cpus);
    w.output.push_str(&block);
    w.finished += 1;
    if w.finished == w.clients {
        w.done = true;
        w.net = k.ipc.net.stats.clone();
        for p in &w.pairs {
            for (dir, sk) in [p.csock, p.ssock].into_iter().enumerate() {
                let a = pair_accounting(k, sk);
                let t = &mut w.accounting[dir];
                t.sent += a.sent;
                t.received += a.received;
                t.unread += a.unread;
                t.socket_backlog += a.socket_backlog;
                t.cpu_backlogs += a.cpu_backlogs;
                t.unsent += a.unsent;
                t.dropped += a.dropped;
            }
        }
    }
    super::exit_current(k, cpu, s)
}

impl super::Program for Netperf {
    fn parse(_name: &str, p: &Params, m: &crate::hw::Machine) -> Result<Netperf, String> {
        Netperf::parse(p, m.topo.nr_cpus)
    }
    fn own_args(words: &[String]) -> Option<Vec<(String, String)>> {
        Some(command_line_params(words))
    }
    const OWN_ARGS_EXAMPLE: &'static str = "-- 4 -t TCP_RR -c -C -l 0.1";
    fn planned_size(&self, _nr_cpus: u32) -> (u64, u64, &'static str) {
        (2 * self.clients as u64, 0, "netperf clients=")
    }
    fn start(&mut self, k: &mut Kernel) {
        start(self, k)
    }
    fn on_action(&mut self, k: &mut Kernel, what: u32) {
        on_action(self, k, what)
    }
    #[inline]
    fn task_step(&mut self, k: &mut Kernel, cpu: CpuId, s: &mut TaskFrame) -> Next {
        task_step(self, k, cpu, s)
    }
    #[inline]
    fn done(&self) -> bool {
        self.done
    }
    fn metric(&self, _f: &super::RunFacts) -> super::Metric {
        if self.o.test.rr() {
            super::Metric { name: "throughput", unit: "tps", lower_is_better: false, value: self.total_tps() }
        } else {
            super::Metric { name: "throughput", unit: "Mbps", lower_is_better: false, value: self.total_mbps() }
        }
    }
    fn json(&self, _f: &super::RunFacts) -> serde_json::Value {
        serde_json::json!({
            "name": "netperf",
            "test": self.o.test.name(),
            "command": format!("netperf {}", self.o.args),
            "clients": self.clients,
            "len_ns": self.o.len_ns,
            "warmup_ns": self.warmup_ns,
            "total_tps": self.o.test.rr().then(|| self.total_tps()),
            "total_mbps": (!self.o.test.rr()).then(|| self.total_mbps()),
            "transactions": self.pairs.iter().map(|p| p.trans).sum::<u64>(),
            "bytes_sent": self.pairs.iter().map(|p| p.bytes).sum::<u64>(),
            "bytes_received": self.pairs.iter().map(|p| p.srv_bytes).sum::<u64>(),
            "second_half_rate_ratio": self.half_ratio(),
            "accounting": {"client_to_server": self.accounting[0], "server_to_client": self.accounting[1]},
            "net": self.net,
            "output": self.output,
        })
    }
    fn text(&self, _f: &super::RunFacts) -> String {
        self.output.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(args: &str) -> NetperfOpts {
        NetperfOpts::parse(&args.split_whitespace().collect::<Vec<_>>()).unwrap()
    }

    fn pair(secs: u64, trans: u64, bytes: u64, msgs: u64) -> Pair {
        Pair { start_ns: 0, end_ns: secs * NSEC_PER_SEC, trans, bytes, msgs, finished: true, ..Default::default() }
    }

    /// The result lines are netperf 2.7.0's, byte for byte: the expected lines are those of
    /// real runs on this project's guest (Debian's netperf 2.7.0-0.1), with the rate digits
    /// the given counts produce.
    #[test]
    fn result_lines_are_netperfs_own() {
        let o = opts("-H 127.0.0.1 -t TCP_RR -c -C");
        let b = result_block(&o, &pair(1, 111_467, 0, 0), 100.0, 2);
        assert!(b.starts_with("MIGRATED TCP REQUEST/RESPONSE TEST from 0.0.0.0 (0.0.0.0) port 0 AF_INET to 127.0.0.1 () port 0 AF_INET : demo : first burst 0\nLocal /Remote\nSocket Size   Request Resp.  Elapsed Trans.   CPU    CPU    S.dem   S.dem\n"), "{b}");
        assert!(
            b.ends_with(
                "\n16384  131072 1       1      1.00    111467.00  100.00 100.00 17.943  17.943 \n16384  131072\n"
            ),
            "{b}"
        );
        let o = opts("-H 127.0.0.1 -t UDP_RR -c -C");
        let b = result_block(&o, &pair(1, 114_652, 0, 0), 100.0, 2);
        assert!(
            b.ends_with(
                "\n212992 212992 1       1      1.00    114652.00   100.00 100.00 17.444  17.444 \n212992 212992\n"
            ),
            "{b}"
        );
        let o = opts("-H 127.0.0.1 -t TCP_RR");
        let b = result_block(&o, &pair(1, 12_583, 0, 0), 0.0, 2);
        assert!(b.ends_with("Socket Size   Request  Resp.   Elapsed  Trans.\nSend   Recv   Size     Size    Time     Rate         \nbytes  Bytes  bytes    bytes   secs.    per sec   \n\n16384  131072 1        1       1.00     12583.00   \n16384  131072\n"), "{b}");
        let o = opts("-H 127.0.0.1 -t TCP_STREAM -c -C");
        let b = result_block(&o, &pair(1, 0, 1_938_176_250, 0), 100.0, 2);
        assert!(
            b.ends_with("\n131072  16384  16384    1.00       15505.41   100.00   100.00   1.057   1.057  \n"),
            "{b}"
        );
        let o = opts("-H 127.0.0.1 -t TCP_STREAM");
        let b = result_block(&o, &pair(1, 0, 1_976_217_500, 0), 0.0, 2);
        assert!(
            b.ends_with(
                "bytes  bytes   bytes    secs.    10^6bits/sec  \n\n131072  16384  16384    1.00     15809.74   \n"
            ),
            "{b}"
        );
        let o = opts("-H 127.0.0.1 -t TCP_STREAM -c -C -- -s 8192 -S 8192");
        let b = result_block(&o, &pair(1, 0, 1_498_028_750, 0), 100.0, 2);
        assert!(
            b.ends_with("\n 16384  16384  16384    1.00       11984.23   100.00   100.00   1.367   1.367  \n"),
            "{b}"
        );
        let o = opts("-H 127.0.0.1 -t UDP_STREAM -c -C");
        let mut p = pair(1, 0, 13_774_812_500, 210_561);
        p.srv_bytes = 4_156_300_000;
        p.srv_msgs = 63_533;
        let b = result_block(&o, &p, 100.0, 2);
        assert!(b.ends_with("\n212992   65507   1.00       210561      0    110198.5     100.00   0.149 \n212992           1.00        63533           33250.4     100.00   0.149 \n\n"), "{b}");
        let o = opts("-H 127.0.0.1 -t UDP_STREAM");
        let mut p = pair(1, 0, 12_804_505_000, 195_482);
        p.srv_bytes = 3_764_085_000;
        p.srv_msgs = 57_465;
        let b = result_block(&o, &p, 0.0, 2);
        assert!(b.ends_with("\n212992   65507   1.00       195482      0    102436.04\n212992           1.00        57465           30112.68\n\n"), "{b}");
    }

    #[test]
    fn options_and_their_errors() {
        let o = opts("-4 -H 127.0.0.1 -t tcp_stream -l 0.25 -c -- -m 1K -s 8192 -D");
        assert_eq!((o.test, o.len_ns, o.cpu_local, o.cpu_remote), (Test::TcpStream, 250_000_000, true, false));
        assert_eq!((o.send_size, o.lss, o.nodelay), (1024, 8192, true));
        assert_eq!(o.socket_sizes(), (16384, 16384, 16384, 131072));
        assert_eq!(o.stream_sizes(), (1024, 131072));
        assert_eq!(opts("-t UDP_STREAM").stream_sizes(), (65507, 212992));
        assert_eq!(opts("-t TCP_RR -- -r 64,1024").rsp, 1024);
        let err = |a: &str| NetperfOpts::parse(&a.split_whitespace().collect::<Vec<_>>()).unwrap_err();
        assert!(err("-t SCTP_RR").contains("-t SCTP_RR"), "{}", err("-t SCTP_RR"));
        assert!(err("-l 0").contains("-l 0"));
        assert_eq!(opts("-t TCP_RR -l -20000").len_count, 20_000);
        assert!(err("-l -x").contains("-l -x"));
        assert!(err("-H 10.0.0.1").contains("-H 10.0.0.1"));
        assert!(err("-T 0,1").contains("'-T'"));
        assert!(err("-t TCP_RR -- -r x").contains("-r x"));
        assert!(err("-t UDP_STREAM -- -m 70000").contains("-m 70000"));
        assert!(err("-l").contains("-l requires an argument"));
    }

    #[test]
    fn clients_are_a_count_or_a_share_of_the_cpus() {
        let p = |v: &str| Params::from_pairs(vec![("clients".into(), v.into())], "test");
        assert_eq!(clients_param(&p("25%"), 128), Ok(32));
        assert_eq!(clients_param(&p("1%"), 4), Ok(1));
        assert_eq!(clients_param(&p("3"), 4), Ok(3));
        assert!(clients_param(&p("0"), 4).unwrap_err().contains("clients=0"));
        assert!(clients_param(&p("x%"), 4).unwrap_err().contains("clients=x%"));
        let w = |v: &[&str]| command_line_params(&v.iter().map(|s| s.to_string()).collect::<Vec<_>>());
        assert_eq!(
            w(&["25%", "-t", "TCP_RR"]),
            vec![("clients".into(), "25%".into()), ("args".into(), "-t TCP_RR".into())]
        );
        assert_eq!(w(&["-t", "TCP_RR"]), vec![("args".to_string(), "-t TCP_RR".to_string())]);
    }
}
