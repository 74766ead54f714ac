//! tbench (dbench 4.0: `tbench` with its sockio backend, and `tbench_srv`), as LKP runs it
//! (docs/workloads.md §6): `tbench -t SECS NPROCS 127.0.0.1`, NPROCS clients each talking to
//! its own `tbench_srv` child over a loopback TCP connection (`TCP_NODELAY` on both ends).
//! The command line is the workload's own, after `--`: `schedsim run tbench -- -t 1 32`;
//! NPROCS may also be `N%` of the CPUs (LKP's `nr_threads`), or the parameter `clients=`.
//!
//! A client replays a NetBench loadfile line by line, in a loop; each operation is one
//! synchronous exchange, `do_packets(send, recv)`: `write()` the request, `read()` the 4-byte
//! header, `recv(MSG_WAITALL)` the rest of the response. The server child reads the 4-byte
//! header and the request (`read()` until each is complete) and writes the response. Sizes are
//! those of dbench 4.0's sockio backend (docs/workloads.md §6): unlink and rmdir 83/39,
//! NTCreateX 111/69, WriteX 51+size/41, ReadX 55/size+4, Close 45/39, Flush 41/39,
//! qpathinfo 41+len/80, qfileinfo and qfsinfo 41/80, findfirst 41+len/200, rename
//! 41+len(old)+len(new)/39; the table does not give Mkdir (taken as rmdir's), Sfileinfo,
//! LockX and UnlockX (taken as Flush's 41/39) [infer]; Deltree sends nothing. `len` is the
//! path's length as the client forms it (`./` + the loadfile's path, `client1` renamed).
//!
//! The loadfile is schedsim's own (`tbench-loadfile.txt`, made by
//! `tools/measure/make-tbench-loadfile.py`): 1000 operations in the proportions of dbench's
//! `client.txt`, with its ReadX/WriteX size and path-length distributions; `-c FILE` reads
//! another in the same syntax (dbench's own, for instance).
//!
//! Timing is dbench's: a report every second (`PRINT_FREQ`) from the release of the clients;
//! the first `timelimit / 5` seconds (integer division) are warm-up, after which the byte
//! counts and the operation statistics restart; once the time since then exceeds `-t` the
//! clients stop at their next loadfile line. Per-second lines: clients, loadfile lines done
//! per client, MB/s since the warm-up (ReadX and WriteX payload), the latency (the longest
//! operation in the last second, or the one still running). At the end: the operation table
//! and `Throughput ... MB/sec` (the last `execute` line's figure).
//!
//! **Shortened runs.** LKP runs 600 s; the model's default `-t` is 1 ([`DEFAULT_SECS`]), which
//! is one `execute` second (warm-up 0). `tests/tbench.rs` checks that the rate has converged:
//! with `-t 4` on a small machine, the MB/s of the last two seconds is within 2% of the first
//! two's.
//!
//! Simplifications: the connections, `tbench_srv`'s listener and its `fork()` per connection,
//! and the semaphore barrier are instant; tbench's parent process (which only sleeps and
//! prints) is not a task: its reports are taken at the report instants; the servers stay
//! blocked when the clients exit; `--target-rate`, `--clients-per-process` and the file
//! options (`-s`, `-S`, `-F`, `-x`) are refused.

use super::params::Params;
use super::TaskFrame;
use crate::linux::engine::{Action, Next};
use crate::linux::kernel::futex::Nanosleep;
use crate::linux::net::core::sock::{InetId, Proto};
use crate::linux::net::socket::{inet_connect_pair, sys_recvfrom, sys_sendto, SockOpts, MSG_WAITALL};
use crate::linux::programs::resume_points;
use crate::linux::{CpuId, Kernel, TaskId};
use crate::sim::{Time, NSEC_PER_SEC, NSEC_PER_USEC};

pub const PARAM_NAMES: &[&str] = &["clients", "args"];

/// The model's default `-t` (dbench's is 600; see the module doc).
pub const DEFAULT_SECS: u64 = 1;

/// The built-in loadfile.
pub const BUILTIN_LOADFILE: &str = include_str!("tbench-loadfile.txt");
/// Its name in the output.
pub const BUILTIN_LOADFILE_NAME: &str = "schedsim:tbench-loadfile.txt";

/// The operations of the report, in dbench 4.0's order.
pub const OPS: &[&str] = &[
    "NTCreateX",
    "Close",
    "Rename",
    "Unlink",
    "Deltree",
    "Mkdir",
    "Rmdir",
    "Qpathinfo",
    "Qfileinfo",
    "Qfsinfo",
    "Sfileinfo",
    "Find",
    "WriteX",
    "ReadX",
    "LockX",
    "UnlockX",
    "Flush",
];

/// One loadfile line as the client executes it: the operation (an index of [`OPS`], or
/// `Sleep`), its request and response sizes, the payload bytes it counts, the path lengths
/// (added to the request, with the client's own prefix) and a sleep.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LoadOp {
    pub op: u8,
    pub send: u32,
    pub recv: u32,
    /// ReadX/WriteX payload.
    pub bytes: u32,
    /// Paths named (0, 1 or 2), whose lengths the request includes.
    pub paths: u8,
    pub sleep_us: u32,
}

/// `Sleep` lines.
const OP_SLEEP: u8 = u8::MAX;

/// Parse a NetBench loadfile (dbench's syntax: an optional timestamp, the operation, its
/// parameters, the expected status). Errors name the file and line.
pub fn parse_loadfile(text: &str, name: &str) -> Result<Vec<LoadOp>, String> {
    let mut ops = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let t = tokens(line);
        if t.len() < 2 || t[0].starts_with('#') {
            continue;
        }
        let t = if t[0].as_bytes()[0].is_ascii_digit() { &t[1..] } else { &t[..] };
        let bad = |what: &str| format!("{name}:{}: {what}", n + 1);
        let num = |i: usize| -> Result<u32, String> {
            let v = t.get(i).ok_or_else(|| bad(&format!("{} needs parameter {i}", t[0])))?;
            let v = v.trim_start_matches("0x");
            u32::from_str_radix(v, if t[i].starts_with("0x") { 16 } else { 10 })
                .map_err(|_| bad(&format!("{}: parameter {i} '{}' is not a number", t[0], t[i])))
        };
        let path = |i: usize| -> Result<u32, String> {
            match t.get(i) {
                Some(p) if p.starts_with('"') => Ok(p.trim_matches('"').len() as u32),
                _ => Err(bad(&format!("{} needs a quoted path as parameter {i}", t[0]))),
            }
        };
        let idx = |name: &str| OPS.iter().position(|o| *o == name).expect("an op of the table") as u8;
        let mut o = LoadOp { op: 0, send: 0, recv: 0, bytes: 0, paths: 0, sleep_us: 0 };
        match t[0] {
            "NTCreateX" => {
                path(1)?;
                o = LoadOp { op: idx("NTCreateX"), send: 111, recv: 69, ..o };
            }
            "Close" => o = LoadOp { op: idx("Close"), send: 45, recv: 39, ..o },
            "Rename" => {
                let l = path(1)? + path(2)?;
                o = LoadOp { op: idx("Rename"), send: 41 + l, recv: 39, paths: 2, ..o };
            }
            "Unlink" => {
                path(1)?;
                o = LoadOp { op: idx("Unlink"), send: 83, recv: 39, ..o };
            }
            "Deltree" => o = LoadOp { op: idx("Deltree"), ..o },
            "Mkdir" => o = LoadOp { op: idx("Mkdir"), send: 83, recv: 39, ..o },
            "Rmdir" => o = LoadOp { op: idx("Rmdir"), send: 83, recv: 39, ..o },
            "QUERY_PATH_INFORMATION" => {
                o = LoadOp { op: idx("Qpathinfo"), send: 41 + path(1)?, recv: 80, paths: 1, ..o }
            }
            "QUERY_FILE_INFORMATION" => o = LoadOp { op: idx("Qfileinfo"), send: 41, recv: 80, ..o },
            "QUERY_FS_INFORMATION" => o = LoadOp { op: idx("Qfsinfo"), send: 41, recv: 80, ..o },
            "SET_FILE_INFORMATION" => o = LoadOp { op: idx("Sfileinfo"), send: 41, recv: 39, ..o },
            "FIND_FIRST" => o = LoadOp { op: idx("Find"), send: 41 + path(1)?, recv: 200, paths: 1, ..o },
            "WriteX" => {
                let size = num(3)?;
                o = LoadOp { op: idx("WriteX"), send: 51 + size, recv: 41, bytes: size, ..o };
            }
            "ReadX" => {
                let size = num(3)?;
                o = LoadOp { op: idx("ReadX"), send: 55, recv: size + 4, bytes: size, ..o };
            }
            "LockX" => o = LoadOp { op: idx("LockX"), send: 41, recv: 39, ..o },
            "UnlockX" => o = LoadOp { op: idx("UnlockX"), send: 41, recv: 39, ..o },
            "Flush" => o = LoadOp { op: idx("Flush"), send: 41, recv: 39, ..o },
            "Sleep" => o = LoadOp { op: OP_SLEEP, sleep_us: num(1)?, ..o },
            other => return Err(bad(&format!("unknown operation '{other}'"))),
        }
        // tbench_srv's buffer is 70000 bytes: dbench exits with "overflow in server!".
        if o.send.max(o.recv) + 8 >= 70_000 {
            return Err(bad(&format!(
                "{}: a {} byte message overflows tbench_srv's 70000-byte buffer",
                t[0],
                o.send.max(o.recv)
            )));
        }
        ops.push(o);
    }
    if !ops.iter().any(|o| o.op != OP_SLEEP && o.send > 0) {
        return Err(format!("{name}: no operation that sends anything"));
    }
    Ok(ops)
}

/// Split a loadfile line into tokens, a quoted path being one.
fn tokens(line: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let b = line.as_bytes();
    let mut i = 0;
    while i < b.len() {
        while i < b.len() && b[i].is_ascii_whitespace() {
            i += 1;
        }
        if i == b.len() {
            break;
        }
        let start = i;
        if b[i] == b'"' {
            i += 1;
            while i < b.len() && b[i] != b'"' {
                i += 1;
            }
            i = (i + 1).min(b.len());
        } else {
            while i < b.len() && !b[i].is_ascii_whitespace() {
                i += 1;
            }
        }
        out.push(&line[start..i]);
    }
    out
}

/// A tbench command line, parsed.
#[derive(Debug, Clone, PartialEq)]
pub struct TbenchOpts {
    pub timelimit: u64,
    pub nprocs: u32,
    pub loadfile_name: String,
    pub args: String,
}

const USAGE: &str = "usage: tbench [-t SECS] [-c LOADFILE] NPROCS [SERVER]";

impl TbenchOpts {
    /// Parse tbench's arguments; `nprocs` from `clients=` when NPROCS is not given. Errors name
    /// the option.
    pub fn parse(args: &[&str], nprocs: Option<u32>, nr_cpus: u32) -> Result<(TbenchOpts, Option<String>), String> {
        let mut o = TbenchOpts {
            timelimit: DEFAULT_SECS,
            nprocs: 0,
            loadfile_name: BUILTIN_LOADFILE_NAME.into(),
            args: args.join(" "),
        };
        let mut file = None;
        let mut pos = Vec::new();
        let mut it = args.iter();
        while let Some(&a) = it.next() {
            let mut val =
                |n: &str| it.next().copied().ok_or_else(|| format!("tbench: option {n} requires an argument; {USAGE}"));
            match a {
                "-t" | "--timelimit" => {
                    let v = val("-t")?;
                    o.timelimit = match v.parse::<u64>() {
                        Ok(n) if n > 0 && n <= crate::limits::MAX_SIM_NS / NSEC_PER_SEC / 2 => n,
                        _ => {
                            return Err(format!(
                                "tbench: -t {v}: expected whole seconds > 0 (at most {})",
                                crate::limits::MAX_SIM_NS / NSEC_PER_SEC / 2
                            ))
                        }
                    }
                }
                "-c" | "--loadfile" => {
                    let v = val("-c")?;
                    o.loadfile_name = v.to_string();
                    file = Some(v.to_string());
                }
                "-T" | "--tcp-options" => {
                    let v = val("-T")?;
                    if v != "TCP_NODELAY" && v != "TCP_NODELAY SO_REUSEADDR" {
                        return Err(format!("tbench: -T {v}: only the default TCP_NODELAY is modelled"));
                    }
                }
                x if x.starts_with('-') => {
                    return Err(format!("tbench: option '{x}' is not modelled (expected -t, -c); {USAGE}"))
                }
                x => pos.push(x),
            }
        }
        o.nprocs = match (pos.first(), nprocs) {
            (Some(n), _) if n.ends_with('%') => {
                let p = Params::from_pairs(vec![("clients".into(), n.to_string())], "tbench NPROCS");
                super::netperf::clients_param(&p, nr_cpus)?
            }
            (Some(n), _) => match n.parse::<u32>() {
                Ok(n) if n > 0 && (n as u64) <= crate::limits::MAX_TASKS / 2 => n,
                _ => {
                    return Err(format!(
                        "tbench: NPROCS '{n}' is not a number of clients (1..={})",
                        crate::limits::MAX_TASKS / 2
                    ))
                }
            },
            (None, Some(n)) => n,
            (None, None) => return Err(format!("tbench: You need to specify NPROCS (or clients=); {USAGE}")),
        };
        if let Some(server) = pos.get(1) {
            if !(server.starts_with("127.") || *server == "localhost") {
                return Err(format!("tbench: SERVER {server}: only a loopback address is modelled"));
            }
        }
        if let Some(x) = pos.get(2) {
            return Err(format!("tbench: unexpected argument '{x}'; {USAGE}"));
        }
        Ok((o, file))
    }

    /// dbench's `options.warmup = timelimit / 5`.
    pub fn warmup(&self) -> u64 {
        self.timelimit / 5
    }
}

/// Per-operation statistics (`struct op`).
#[derive(Debug, Clone, Copy, Default)]
pub struct OpStat {
    pub count: u64,
    pub total_ns: u64,
    pub max_ns: u64,
}

/// A client and what it counted (`struct child_struct`).
#[derive(Debug, Clone, Default)]
pub struct Child {
    pub task: TaskId,
    pub server: TaskId,
    pub csock: InetId,
    pub ssock: InetId,
    /// Loadfile lines done (cumulative), payload bytes and those done in the warm-up.
    pub line: u64,
    pub bytes: u64,
    pub bytes_done_warmup: u64,
    /// The current operation's start (`lasttime`), the longest since the last report and
    /// the worst of any report.
    pub lasttime: Time,
    pub max_latency: Time,
    pub worst_latency: Time,
    pub ops: Vec<OpStat>,
    pub done: bool,
    pub exited: bool,
}

/// Run state and results.
#[derive(Debug, Clone)]
pub struct Tbench {
    pub o: TbenchOpts,
    pub load: Vec<LoadOp>,
    pub children: Vec<Child>,
    /// `tv_start` (the release, then the end of the warm-up) and `tv_end`.
    pub tv_start: Time,
    pub warmup: u64,
    pub in_cleanup: bool,
    pub throughput: f64,
    pub reports: Vec<(f64, f64)>,
    pub output: String,
    pub exited: u32,
    pub done: bool,
    /// The network paths' counters at the end.
    pub net: crate::linux::net::NetStats,
}

impl Tbench {
    /// From the workload parameters `clients` and `args`, on a machine of `nr_cpus`.
    pub fn parse(p: &Params, nr_cpus: u32) -> Result<Tbench, String> {
        p.check_known("tbench", PARAM_NAMES)?;
        let clients = if p.get("clients").is_some() { Some(super::netperf::clients_param(p, nr_cpus)?) } else { None };
        let args: Vec<&str> = p.get("args").unwrap_or("").split_whitespace().collect();
        let (o, file) = TbenchOpts::parse(&args, clients, nr_cpus).map_err(|e| format!("{}: {e}", p.origin))?;
        let text = match &file {
            Some(f) => crate::input::read_input_file(std::path::Path::new(f), "tbench loadfile")?,
            None => BUILTIN_LOADFILE.to_string(),
        };
        let load = parse_loadfile(&text, &o.loadfile_name)?;
        let warmup = o.warmup();
        Ok(Tbench {
            o,
            load,
            children: Vec::new(),
            tv_start: 0,
            warmup,
            in_cleanup: false,
            throughput: 0.0,
            reports: Vec::new(),
            output: String::new(),
            exited: 0,
            done: false,
            net: Default::default(),
        })
    }

    /// The per-second MB/s of the `execute` lines, in order.
    pub fn execute_rates(&self) -> Vec<f64> {
        self.reports.iter().map(|r| r.1).collect()
    }
}

/// `%g` as C's printf formats it (6 significant digits, trailing zeros dropped).
pub fn fmt_g(v: f64) -> String {
    if v == 0.0 {
        return "0".into();
    }
    let exp = v.abs().log10().floor() as i32;
    if !(-4..6).contains(&exp) {
        let s = format!("{:.5e}", v);
        let (m, e) = s.split_once('e').expect("an exponent");
        let m = m.trim_end_matches('0').trim_end_matches('.');
        let e: i32 = e.parse().expect("a number");
        return format!("{m}e{}{:02}", if e < 0 { '-' } else { '+' }, e.abs());
    }
    let decimals = (5 - exp).max(0) as usize;
    let s = format!("{:.*}", decimals, v);
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// Workload actions: `0` releases the clients; `1` is the once-a-second report.
const REPORT: u32 = 1;

/// Create the processes; tbench starts at a seed-dependent instant after 1 ms.
pub fn start(w: &mut Tbench, k: &mut Kernel) {
    let load = super::load_time(k, 0x7BE4);
    for i in 0..w.o.nprocs {
        let task = crate::linux::kernel::fork::copy_process(k, "tbench".into(), 0, 120, None, 2 * i);
        let server = crate::linux::kernel::fork::copy_process(k, "tbench_srv".into(), 0, 120, None, 2 * i + 1);
        w.children.push(Child { task, server, ops: vec![OpStat::default(); OPS.len()], ..Default::default() });
    }
    w.output.push_str("dbench version 4.00 - Copyright Andrew Tridgell 1999-2004\n\n");
    w.output.push_str(&format!(
        "Running for {} seconds with load '{}' and minimum warmup {} secs\n",
        w.o.timelimit, w.o.loadfile_name, w.warmup
    ));
    k.q.push(load, Action::Program { what: 0 });
}

pub fn on_action(w: &mut Tbench, k: &mut Kernel, what: u32) {
    if what == REPORT {
        return sig_alarm(w, k);
    }
    // Connect each client to its own tbench_srv child (TCP_NODELAY both ends), start them,
    // release them at once (the semaphore barrier).
    let nodelay = SockOpts { nodelay: true, ..Default::default() };
    for c in w.children.iter_mut() {
        let (a, b) = inet_connect_pair(k, 0, Proto::Tcp, nodelay, nodelay);
        c.csock = a;
        c.ssock = b;
        c.lasttime = k.now;
    }
    let n = w.o.nprocs;
    w.output.push_str(&format!("{n} of {n} processes prepared for launch   0 sec\nreleasing clients\n"));
    w.tv_start = k.now;
    for c in w.children.clone() {
        super::spawn(k, 0, c.task);
        super::spawn(k, 0, c.server);
    }
    k.q.push(k.now + NSEC_PER_SEC, Action::Program { what: REPORT });
}

/// The parent's once-a-second `sig_alarm()` (dbench.c): warm-up end, stop, the status line.
fn sig_alarm(w: &mut Tbench, k: &mut Kernel) {
    if w.done {
        return;
    }
    let now = k.now;
    let nclients = w.children.len() as u64;
    let total_bytes: u64 = w.children.iter().map(|c| c.bytes - c.bytes_done_warmup).sum();
    let in_warmup_clients = w.children.iter().any(|c| c.bytes == 0);
    let num_active = w.children.iter().filter(|c| c.bytes > 0).count();
    let total_lines: u64 = w.children.iter().map(|c| c.line).sum();
    let num_finished = w.children.iter().filter(|c| c.exited).count() as u64;
    let t = (now - w.tv_start) as f64 / 1e9;
    let mut in_warmup = in_warmup_clients;
    let final_call = w.exited as u64 == nclients;
    if !final_call {
        k.q.push(now + NSEC_PER_SEC, Action::Program { what: REPORT });
    }
    if !in_warmup && w.warmup > 0 && t > w.warmup as f64 {
        w.tv_start = now;
        w.warmup = 0;
        for c in w.children.iter_mut() {
            c.bytes_done_warmup = c.bytes;
            c.worst_latency = 0;
            c.ops.iter_mut().for_each(|o| *o = OpStat::default());
        }
        return;
    }
    if t < w.warmup as f64 {
        in_warmup = true;
    } else if !in_warmup && !w.in_cleanup && t > w.o.timelimit as f64 {
        for c in w.children.iter_mut() {
            c.done = true;
        }
        w.in_cleanup = true;
    }
    if t < 1.0 {
        return;
    }
    let mut latency: Time = 0;
    if !w.in_cleanup {
        for c in w.children.iter_mut() {
            latency = latency.max(c.max_latency).max(now - c.lasttime);
            c.max_latency = 0;
            c.worst_latency = c.worst_latency.max(latency);
        }
    }
    let lat_ms = latency as f64 / 1e6;
    let rate = 1.0e-6 * total_bytes as f64 / t;
    if in_warmup {
        w.output.push_str(&format!(
            "{:4}  {:8}  {:7.2} MB/sec  warmup {:3.0} sec  latency {:.03} ms\n",
            num_active,
            total_lines / nclients,
            rate,
            t,
            lat_ms
        ));
    } else if w.in_cleanup {
        w.output.push_str(&format!("{:4}  cleanup {:3.0} sec\n", nclients - num_finished, t));
    } else {
        w.output.push_str(&format!(
            "{:4}  {:8}  {:7.2} MB/sec  execute {:3.0} sec  latency {:.03} ms\n",
            nclients,
            total_lines / nclients,
            rate,
            t,
            lat_ms
        ));
        w.throughput = rate;
        w.reports.push((t, rate));
    }
    if final_call {
        finish(w);
        w.net = k.ipc.net.stats.clone();
        super::all_exited(k);
    }
}

/// The end of `create_procs()` and `main()`: the operation table and the throughput line.
fn finish(w: &mut Tbench) {
    w.output.push_str("\n Operation      Count    AvgLat    MaxLat\n ----------------------------------------\n");
    for (i, name) in OPS.iter().enumerate() {
        let count: u64 = w.children.iter().map(|c| c.ops[i].count).sum();
        if count == 0 {
            continue;
        }
        let total: u64 = w.children.iter().map(|c| c.ops[i].total_ns).sum();
        let max: u64 = w.children.iter().map(|c| c.ops[i].max_ns).max().unwrap_or(0);
        w.output.push_str(&format!(
            " {:<12} {:7} {:9.3} {:9.3}\n",
            name,
            count,
            total as f64 / 1e6 / count as f64,
            max as f64 / 1e6
        ));
    }
    w.output.push('\n');
    let latency = w.children.iter().map(|c| c.worst_latency).max().unwrap_or(0);
    let n = w.children.len();
    w.output.push_str(&format!(
        "Throughput {} MB/sec  {n} clients  {n} procs  max_latency={:.3} ms\n",
        fmt_g(w.throughput),
        latency as f64 / 1e6
    ));
    w.done = true;
}

resume_points! {
    /// Where a tbench client or tbench_srv child resumes.
    enum TbAt {
        /// The client's next loadfile line / the server's next request header.
        Next,
        /// Client: the request was written; read the 4-byte header.
        Written,
        /// Client: header read (`read_sock()` until 4 bytes); server: header read.
        Header,
        /// Client: the rest read (`MSG_WAITALL`); server: the request read.
        Body,
        /// Server: the response was written.
        Answered,
        /// Client: back from a `Sleep` line.
        Slept,
        Exited = super::EXITED,
    }
}

fn user(k: &Kernel, s: &mut TaskFrame) -> Next {
    s.user = true;
    Next::Cont(k.costs.user_op)
}

/// The client's path prefix: `./` plus `clientN` for `client1` (one more digit per power of
/// ten).
fn path_extra(i: usize) -> u32 {
    1 + (i as u32 + 1).to_string().len() as u32 - 1
}

/// One step of a tbench client or server.
pub fn task_step(w: &mut Tbench, k: &mut Kernel, cpu: CpuId, s: &mut TaskFrame) -> Next {
    let i = (s.task / 2) as usize;
    let client = s.task % 2 == 0;
    let ret = k.tasks[k.curr(cpu) as usize].user_ret.max(0) as u64;
    if !client {
        return server_step(w, k, s, i, ret);
    }
    match TbAt::from_u8(s.at) {
        TbAt::Next | TbAt::Slept => {
            let c = &mut w.children[i];
            if s.at == TbAt::Slept as u8 {
                s.at = TbAt::Next as u8;
            }
            if c.done {
                c.exited = true;
                w.exited += 1;
                if w.exited as usize == w.children.len() {
                    // The parent's waitpid() returns: its last report, at once.
                    k.q.push(k.now, Action::Program { what: REPORT });
                }
                return super::exit_current(k, cpu, s);
            }
            c.line += 1;
            let op = w.load[s.i as usize % w.load.len()];
            s.i += 1;
            c.lasttime = k.now;
            if op.op == OP_SLEEP {
                s.at = TbAt::Slept as u8;
                return Next::Call(k.costs.user_op, Nanosleep::with_timer_slack(op.sleep_us as u64 * NSEC_PER_USEC));
            }
            if op.send == 0 {
                // Deltree: no packet.
                finish_op(c, op.op, k.now);
                return user(k, s);
            }
            let send = op.send + op.paths as u32 * path_extra(i);
            s.mark[0] = (s.i - 1) % w.load.len() as u64;
            s.mark[1] = 0;
            s.at = TbAt::Written as u8;
            Next::Call(k.costs.user_op, sys_sendto(c.csock, send))
        }
        TbAt::Written | TbAt::Header => {
            if s.at == TbAt::Header as u8 {
                s.mark[1] += ret;
            }
            let c = &w.children[i];
            if s.mark[1] < 4 {
                s.at = TbAt::Header as u8;
                return Next::Call(k.costs.user_op, sys_recvfrom(c.csock, (4 - s.mark[1]) as u32, 0));
            }
            let op = w.load[s.mark[0] as usize];
            s.at = TbAt::Body as u8;
            Next::Call(k.costs.user_op, sys_recvfrom(c.csock, op.recv - 4, MSG_WAITALL))
        }
        TbAt::Body => {
            let op = w.load[s.mark[0] as usize];
            let now = k.now;
            let c = &mut w.children[i];
            c.bytes += op.bytes as u64;
            finish_op(c, op.op, now);
            s.at = TbAt::Next as u8;
            user(k, s)
        }
        TbAt::Answered | TbAt::Exited => unreachable!("tbench client at {}", s.at),
    }
}

/// `finish_op()` and the latency bookkeeping of `nb_target_rate()` (dbench's child.c).
fn finish_op(c: &mut Child, op: u8, now: Time) {
    let t = now - c.lasttime;
    let o = &mut c.ops[op as usize];
    o.count += 1;
    o.total_ns += t;
    o.max_ns = o.max_ns.max(t);
    c.max_latency = c.max_latency.max(t);
}

/// `tbench_srv`'s `server()`: read the header, read the request, write the response.
fn server_step(w: &mut Tbench, k: &mut Kernel, s: &mut TaskFrame, i: usize, ret: u64) -> Next {
    let sock = w.children[i].ssock;
    match TbAt::from_u8(s.at) {
        TbAt::Next | TbAt::Answered => {
            s.mark[1] = 0;
            s.at = TbAt::Header as u8;
            Next::Call(k.costs.user_op, sys_recvfrom(sock, 4, 0))
        }
        TbAt::Header => {
            s.mark[1] += ret;
            if s.mark[1] < 4 {
                return Next::Call(k.costs.user_op, sys_recvfrom(sock, (4 - s.mark[1]) as u32, 0));
            }
            // The header says how much follows and what to answer: the model's client wrote
            // the operation's index, which the server's request loop knows from the stream's
            // order (each client and server walk the loadfile in step).
            let op = next_server_op(w, s, i);
            s.mark[1] = 0;
            s.mark[2] = (op.send - 4) as u64;
            s.at = TbAt::Body as u8;
            if s.mark[2] == 0 {
                return server_answer(w, k, s, i);
            }
            Next::Call(k.costs.user_op, sys_recvfrom(sock, s.mark[2] as u32, 0))
        }
        TbAt::Body => {
            s.mark[1] += ret;
            if s.mark[1] < s.mark[2] {
                return Next::Call(k.costs.user_op, sys_recvfrom(sock, (s.mark[2] - s.mark[1]) as u32, 0));
            }
            server_answer(w, k, s, i)
        }
        TbAt::Written | TbAt::Slept | TbAt::Exited => unreachable!("tbench_srv at {}", s.at),
    }
}

/// The server's view of the next request: the loadfile line after the one it answered last
/// (skipping lines that send nothing), with the client's path prefix.
fn next_server_op(w: &Tbench, s: &mut TaskFrame, i: usize) -> LoadOp {
    loop {
        let op = w.load[s.i as usize % w.load.len()];
        s.i += 1;
        if op.op != OP_SLEEP && op.send > 0 {
            return LoadOp { send: op.send + op.paths as u32 * path_extra(i), ..op };
        }
    }
}

fn server_answer(w: &mut Tbench, k: &mut Kernel, s: &mut TaskFrame, i: usize) -> Next {
    let op = w.load[(s.i as usize + w.load.len() - 1) % w.load.len()];
    s.at = TbAt::Answered as u8;
    Next::Call(k.costs.user_op, sys_sendto(w.children[i].ssock, op.recv))
}

impl super::Program for Tbench {
    fn parse(_name: &str, p: &Params, m: &crate::hw::Machine) -> Result<Tbench, String> {
        Tbench::parse(p, m.topo.nr_cpus)
    }
    fn own_args(words: &[String]) -> Option<Vec<(String, String)>> {
        Some(vec![("args".into(), words.join(" "))])
    }
    const OWN_ARGS_EXAMPLE: &'static str = "-- -t 1 8";
    fn planned_size(&self, _nr_cpus: u32) -> (u64, u64, &'static str) {
        (2 * self.o.nprocs as u64, 0, "tbench NPROCS / clients=")
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
        super::Metric { name: "throughput", unit: "MB/s", lower_is_better: false, value: self.throughput }
    }
    fn json(&self, _f: &super::RunFacts) -> serde_json::Value {
        serde_json::json!({
            "name": "tbench",
            "command": format!("tbench {}", self.o.args),
            "clients": self.o.nprocs,
            "timelimit_s": self.o.timelimit,
            "loadfile": self.o.loadfile_name,
            "throughput_mb_s": self.throughput,
            "execute_mb_s": self.execute_rates(),
            "operations": self.children.iter().map(|c| c.ops.iter().map(|o| o.count).sum::<u64>()).sum::<u64>(),
            "bytes": self.children.iter().map(|c| c.bytes).sum::<u64>(),
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

    #[test]
    fn the_builtin_loadfile_has_the_documented_mix() {
        let ops = parse_loadfile(BUILTIN_LOADFILE, BUILTIN_LOADFILE_NAME).unwrap();
        assert!(ops.len() > 1000, "{}", ops.len());
        let count = |name: &str| {
            let i = OPS.iter().position(|o| *o == name).unwrap() as u8;
            ops.iter().filter(|o| o.op == i).count()
        };
        // docs/workloads.md §6: ReadX 27.1%, NTCreateX 17.3%, WriteX 8.6% of 1000.
        assert_eq!((count("ReadX"), count("NTCreateX"), count("WriteX")), (271, 173, 86));
        let reads: Vec<&LoadOp> =
            ops.iter().filter(|o| o.op == OPS.iter().position(|x| *x == "ReadX").unwrap() as u8).collect();
        let mean = reads.iter().map(|o| o.bytes as u64).sum::<u64>() / reads.len() as u64;
        assert!((11_000..12_700).contains(&mean), "ReadX mean {mean}");
        assert!(reads.iter().all(|o| o.send == 55 && o.recv == o.bytes + 4));
    }

    #[test]
    fn loadfile_errors_name_the_line() {
        let e = parse_loadfile("Close 1 NT_STATUS_OK\nFrobnicate 3 NT_STATUS_OK\n", "f.txt").unwrap_err();
        assert!(e.starts_with("f.txt:2: unknown operation 'Frobnicate'"), "{e}");
        let e = parse_loadfile("ReadX 1 0 abc 4 NT_STATUS_OK\n", "f.txt").unwrap_err();
        assert!(e.starts_with("f.txt:1: ReadX: parameter 3 'abc'"), "{e}");
        let e = parse_loadfile("ReadX 1 0 80000 80000 NT_STATUS_OK\n", "f.txt").unwrap_err();
        assert!(e.contains("overflows tbench_srv's 70000-byte buffer"), "{e}");
        let e = parse_loadfile("Deltree \"\\\\x\" NT_STATUS_OK\n", "f.txt").unwrap_err();
        assert!(e.contains("no operation that sends"), "{e}");
        // A timestamped line (dbench's client.txt syntax) parses.
        let ops = parse_loadfile("0.000 NTCreateX \"\\\\a\\\\b\" 0x1 0x2 7 NT_STATUS_OK\n", "f.txt").unwrap();
        assert_eq!((ops[0].send, ops[0].recv), (111, 69));
    }

    #[test]
    fn options_and_their_errors() {
        let (o, f) = TbenchOpts::parse(&["-t", "4", "8", "127.0.0.1"], None, 16).unwrap();
        assert_eq!((o.timelimit, o.nprocs, o.warmup(), f), (4, 8, 0, None));
        let (o, _) = TbenchOpts::parse(&["-t", "30", "25%"], None, 128).unwrap();
        assert_eq!((o.nprocs, o.warmup()), (32, 6));
        let err = |a: &[&str]| TbenchOpts::parse(a, None, 4).unwrap_err();
        assert!(err(&["-t", "0", "2"]).contains("-t 0"));
        assert!(err(&["-t", "1"]).contains("NPROCS"));
        assert!(err(&["x"]).contains("NPROCS 'x'"));
        assert!(err(&["-s", "2"]).contains("'-s'"));
        assert!(err(&["2", "10.1.1.1"]).contains("SERVER 10.1.1.1"));
    }

    #[test]
    fn percent_g_prints_as_c_does() {
        assert_eq!(fmt_g(1244.0), "1244");
        assert_eq!(fmt_g(20853.4), "20853.4");
        assert_eq!(fmt_g(1680.13), "1680.13");
        assert_eq!(fmt_g(123456.7), "123457");
        assert_eq!(fmt_g(1234567.0), "1.23457e+06");
        assert_eq!(fmt_g(0.5), "0.5");
    }
}
