//! `schedsim host-run PROGRAM`: the built-in programs run for real on this machine, with the
//! same parameters and the same output as their models (`schedsim run PROGRAM`), so that
//! `schedsim validate` can trace one and simulate the other:
//!
//! - `pingpong iters= sleep_us= ping_cpu= pong_cpu=` ([`crate::workload::pipepair`]),
//! - `perf-pipe loops= threaded=` (`perf bench sched pipe`, written again here),
//! - `messaging -- [-p] [-t] [-g N] [-l N]` (`perf bench sched messaging`, written again here),
//! - `nanosleep procs= ns= duration_ms=` ([`crate::workload::nanosleep`]);
//! - `netperf -- [N|N%] NETPERF-ARGS` and `tbench -- TBENCH-ARGS`: the real programs (Debian's
//!   `netperf`, non-free, and `dbench` packages), not written again: a `netserver` (or
//!   `tbench_srv`) of our own in its own process group, N concurrent `netperf` clients (or one
//!   `tbench`), their output in the order they end, then the server group is killed. The
//!   arguments are checked by the model's parsers first, so both sides run the same test.
//!
//! Threads and processes are made with `pthread_create` (std threads) and `fork()`, pinned with
//! `sched_setaffinity()`, and talk through `pipe()` or `socketpair()` with plain `read()` and
//! `write()`; forked children only make system calls and leave with `_exit()`.

use crate::workload::hackbench::{Hackbench, HackbenchOpts, Tool};
use crate::workload::params::Params;
use crate::workload::pipepair::{perf_pipe_output, pingpong_output, Form, PipePair};
use std::time::Instant;

/// `schedsim host-run`.
#[derive(clap::Args, Debug)]
pub struct HostRunArgs {
    /// The program: pingpong, perf-pipe, messaging or nanosleep.
    pub program: String,
    /// Its parameters: key=value as for `schedsim run` (messaging: perf's own options after --).
    pub params: Vec<String>,
}

/// The programs `host-run` knows.
pub const PROGRAMS: &[&str] = &["pingpong", "perf-pipe", "messaging", "nanosleep", "netperf", "tbench"];

pub fn cmd_host_run(a: HostRunArgs) -> Result<(), String> {
    let out = run_program(&a.program, &a.params)?;
    super::emit(&out);
    Ok(())
}

/// Run a program for real and return what it prints.
pub fn run_program(program: &str, params: &[String]) -> Result<String, String> {
    let nr_cpus = online_cpus();
    match program {
        "pingpong" => {
            let p = Params::parse(params.iter().map(String::as_str), "host-run pingpong")?;
            let w = PipePair::parse_pingpong(&p, nr_cpus)?;
            let Form::PingPong { ping_cpu, pong_cpu, sleep_us } = w.form else { unreachable!() };
            pingpong(w.loops, sleep_us, ping_cpu, pong_cpu)
        }
        "perf-pipe" => {
            let p = Params::parse(params.iter().map(String::as_str), "host-run perf-pipe")?;
            let w = PipePair::parse_perf_pipe(&p)?;
            let Form::PerfPipe { threaded } = w.form else { unreachable!() };
            perf_pipe(w.loops, threaded)
        }
        "messaging" => {
            let args: Vec<&str> = params.iter().map(String::as_str).collect();
            let o = HackbenchOpts::parse(Tool::Perf, &args)?;
            messaging(o)
        }
        "nanosleep" => {
            let p = Params::parse(params.iter().map(String::as_str), "host-run nanosleep")?;
            let w = crate::workload::nanosleep::NanosleepLoop::parse(&p, nr_cpus)?;
            nanosleep(w.procs, w.ns, w.duration_ns)
        }
        "netperf" => real_netperf(params, nr_cpus),
        "tbench" => real_tbench(params, nr_cpus),
        other => Err(format!("host-run: unknown program '{other}' (expected one of: {})", PROGRAMS.join(", "))),
    }
}

/// The path of `prog` on `$PATH` (or in /usr/bin), or an error saying how to install it.
fn find_program(prog: &str, package: &str) -> Result<std::path::PathBuf, String> {
    let dirs = std::env::var("PATH").unwrap_or_default();
    std::env::split_paths(&dirs)
        .chain(std::iter::once(std::path::PathBuf::from("/usr/bin")))
        .map(|d| d.join(prog))
        .find(|p| p.is_file())
        .ok_or_else(|| format!("host-run: {prog} is not installed (Debian: apt-get install {package})"))
}

/// A server started in a process group of its own, killed (with the children it forked) when
/// dropped.
struct ServerGroup(std::process::Child);

impl ServerGroup {
    fn start(path: &std::path::Path, args: &[&str]) -> Result<ServerGroup, String> {
        use std::os::unix::process::CommandExt;
        let mut cmd = std::process::Command::new(path);
        cmd.args(args).stdout(std::process::Stdio::null()).stderr(std::process::Stdio::null()).process_group(0);
        // SAFETY: the hook only calls pthread_sigmask(), which is async-signal-safe. Without it
        // the server inherits our blocked SIGTERM and `drop` waits for it forever.
        unsafe { cmd.pre_exec(crate::cli::signals::unblock_in_child) };
        let child = cmd.spawn().map_err(|e| format!("host-run: cannot start {}: {e}", path.display()))?;
        // Give it time to listen.
        std::thread::sleep(std::time::Duration::from_millis(200));
        Ok(ServerGroup(child))
    }
}

impl Drop for ServerGroup {
    fn drop(&mut self) {
        // SAFETY: signalling the process group this module created.
        unsafe { libc::killpg(self.0.id() as libc::pid_t, libc::SIGTERM) };
        let _ = self.0.wait();
    }
}

/// Run `cmd` with its stdout captured; its output, or an error naming it.
fn run_capture(cmd: &mut std::process::Command, what: &str) -> Result<String, String> {
    let out = cmd.stderr(std::process::Stdio::inherit()).output().map_err(|e| format!("host-run: {what}: {e}"))?;
    if !out.status.success() {
        return Err(format!("host-run: {what} failed ({})", out.status));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The port our netserver listens on (not netserver's default 12865, which another may hold).
const NETSERVER_PORT: &str = "22865";

/// The real netperf: `-- [N|N%] ARGS`, N concurrent clients (the model's `netperf` workload's
/// command line, checked by its parser).
fn real_netperf(words: &[String], nr_cpus: u32) -> Result<String, String> {
    use crate::workload::netperf::{clients_param, command_line_params, NetperfOpts};
    let netperf = find_program("netperf", "netperf")?;
    let netserver = find_program("netserver", "netperf")?;
    let pairs = command_line_params(words);
    let p = Params::from_pairs(pairs, "host-run netperf");
    let clients = clients_param(&p, nr_cpus)?;
    let args: Vec<&str> = p.get("args").unwrap_or("").split_whitespace().collect();
    NetperfOpts::parse(&args)?;
    let _server = ServerGroup::start(&netserver, &["-D", "-p", NETSERVER_PORT])?;
    let (tx, rx) = std::sync::mpsc::channel();
    for _ in 0..clients {
        let (netperf, args, tx) = (netperf.clone(), args.iter().map(|s| s.to_string()).collect::<Vec<_>>(), tx.clone());
        std::thread::spawn(move || {
            let mut cmd = std::process::Command::new(&netperf);
            cmd.arg("-p").arg(NETSERVER_PORT).args(&args);
            let _ = tx.send(run_capture(&mut cmd, "netperf"));
        });
    }
    drop(tx);
    let mut out = String::new();
    for r in rx {
        out.push_str(&r?);
    }
    Ok(out)
}

/// The real tbench: `-- ARGS` (checked by the model's `tbench` parser), against a `tbench_srv`
/// of our own.
fn real_tbench(words: &[String], nr_cpus: u32) -> Result<String, String> {
    use crate::workload::tbench::TbenchOpts;
    let tbench = find_program("tbench", "dbench")?;
    let srv = find_program("tbench_srv", "dbench")?;
    let args: Vec<&str> = words.iter().map(String::as_str).collect();
    let (o, _) = TbenchOpts::parse(&args, None, nr_cpus)?;
    // NPROCS as a share of the CPUs is the model's: give tbench the count.
    let mut real: Vec<String> = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        if *a == "-t" || *a == "-c" || *a == "-T" {
            real.push(a.to_string());
            real.extend(it.next().map(|s| s.to_string()));
        } else if a.ends_with('%') {
            real.push(o.nprocs.to_string());
        } else {
            real.push(a.to_string());
        }
    }
    let _server = ServerGroup::start(&srv, &[])?;
    run_capture(std::process::Command::new(&tbench).args(&real), "tbench")
}

fn online_cpus() -> u32 {
    std::thread::available_parallelism().map_or(1, |n| n.get() as u32)
}

fn errno_text(what: &str) -> String {
    format!("{what}: {}", std::io::Error::last_os_error())
}

/// `pipe()` or `socketpair(AF_UNIX, SOCK_STREAM)`: (read end, write end).
fn fdpair(use_pipe: bool) -> Result<(i32, i32), String> {
    let mut fds = [0i32; 2];
    // SAFETY: fds has room for the two descriptors both calls write.
    let r = unsafe {
        if use_pipe {
            libc::pipe(fds.as_mut_ptr())
        } else {
            libc::socketpair(libc::AF_UNIX, libc::SOCK_STREAM, 0, fds.as_mut_ptr())
        }
    };
    if r != 0 {
        return Err(errno_text(if use_pipe { "pipe()" } else { "socketpair()" }));
    }
    Ok((fds[0], fds[1]))
}

/// Write all of `buf` (retrying partial writes and EINTR). Only system calls: fork-safe.
fn write_all(fd: i32, buf: &[u8]) -> bool {
    let mut off = 0;
    while off < buf.len() {
        // SAFETY: the pointer and length describe the rest of `buf`.
        let n = unsafe { libc::write(fd, buf[off..].as_ptr().cast(), buf.len() - off) };
        if n < 0 {
            if std::io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
                continue;
            }
            return false;
        }
        off += n as usize;
    }
    true
}

/// Fill all of `buf` (retrying partial reads and EINTR); false at EOF or on an error.
fn read_all(fd: i32, buf: &mut [u8]) -> bool {
    let mut off = 0;
    while off < buf.len() {
        // SAFETY: the pointer and length describe the rest of `buf`.
        let n = unsafe { libc::read(fd, buf[off..].as_mut_ptr().cast(), buf.len() - off) };
        if n < 0 {
            if std::io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
                continue;
            }
            return false;
        }
        if n == 0 {
            return false;
        }
        off += n as usize;
    }
    true
}

/// Pin the calling thread to `cpu` (`sched_setaffinity(0, ...)`).
fn pin_self(cpu: u32) -> Result<(), String> {
    // SAFETY: a zeroed cpu_set_t is the empty set; CPU_SET stays inside it for cpu < 1024.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if cpu as usize >= 8 * std::mem::size_of::<libc::cpu_set_t>() {
            return Err(format!("CPU {cpu} is beyond the cpu_set_t"));
        }
        libc::CPU_SET(cpu as usize, &mut set);
        if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
            return Err(errno_text(&format!("sched_setaffinity(CPU {cpu})")));
        }
    }
    Ok(())
}

/// Name the calling thread (`prctl(PR_SET_NAME)`), as the trace's comm shows it.
fn set_comm(name: &str) {
    let mut b = [0u8; 16];
    let n = name.len().min(15);
    b[..n].copy_from_slice(&name.as_bytes()[..n]);
    // SAFETY: b is NUL-terminated and outlives the call.
    unsafe {
        libc::prctl(libc::PR_SET_NAME, b.as_ptr() as libc::c_ulong, 0, 0, 0);
    }
}

fn gettimeofday_us() -> u64 {
    let mut tv = libc::timeval { tv_sec: 0, tv_usec: 0 };
    // SAFETY: tv is a valid timeval; a NULL timezone is allowed.
    unsafe { libc::gettimeofday(&mut tv, std::ptr::null_mut()) };
    tv.tv_sec as u64 * 1_000_000 + tv.tv_usec as u64
}

fn fork() -> Result<i32, String> {
    // SAFETY: the callers' children only make system calls and leave with _exit().
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(errno_text("fork()"));
    }
    Ok(pid)
}

fn child_exit(ok: bool) -> ! {
    // SAFETY: _exit() ends the child without running the parent's atexit handlers or flushing
    // its copied stdio buffers.
    unsafe { libc::_exit(if ok { 0 } else { 1 }) }
}

fn waitpid(pid: i32) -> bool {
    let mut status = 0;
    loop {
        // SAFETY: status is a valid int.
        let r = unsafe { libc::waitpid(pid, &mut status, 0) };
        if r == pid {
            return libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0;
        }
        if r < 0 && std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            return false;
        }
    }
}

fn close(fd: i32) {
    // SAFETY: closing a descriptor this module opened.
    unsafe { libc::close(fd) };
}

/// The pinned ping-pong: `pong` on `pong_cpu` echoes, the main thread (`ping`, on `ping_cpu`)
/// sends, then `usleep(sleep_us)` between round trips.
fn pingpong(iters: u64, sleep_us: u64, ping_cpu: u32, pong_cpu: u32) -> Result<String, String> {
    let (p1r, p1w) = fdpair(true)?;
    let (p2r, p2w) = fdpair(true)?;
    let pong = std::thread::Builder::new()
        .name("pong".into())
        .spawn(move || -> Result<(), String> {
            pin_self(pong_cpu)?;
            set_comm("pong");
            let mut c = [0u8; 1];
            for _ in 0..iters {
                if !read_all(p1r, &mut c) || !write_all(p2w, &c) {
                    return Err(errno_text("pong: pipe"));
                }
            }
            Ok(())
        })
        .map_err(|e| format!("cannot start the pong thread: {e}"))?;
    pin_self(ping_cpu)?;
    set_comm("ping");
    std::thread::sleep(std::time::Duration::from_micros(1000));
    let mut c = [b'x'; 1];
    let t0 = Instant::now();
    let mut elapsed = 0;
    for i in 0..iters {
        if !write_all(p1w, &c) || !read_all(p2r, &mut c) {
            return Err(errno_text("ping: pipe"));
        }
        if i + 1 == iters {
            elapsed = t0.elapsed().as_nanos() as u64;
        }
        if sleep_us > 0 {
            // SAFETY: plain libc call.
            unsafe { libc::usleep(sleep_us.min(u32::MAX as u64) as u32) };
        }
    }
    pong.join().map_err(|_| "the pong thread panicked".to_string())??;
    for fd in [p1r, p1w, p2r, p2w] {
        close(fd);
    }
    Ok(pingpong_output(iters, elapsed))
}

/// perf's `worker_thread()`: `nr == 0` reads first.
fn pipe_worker(reads_first: bool, loops: u64, rd: i32, wr: i32) -> bool {
    let mut m = [0u8; 4];
    for _ in 0..loops {
        if reads_first && !read_all(rd, &mut m) {
            return false;
        }
        if !write_all(wr, &m) {
            return false;
        }
        if !reads_first && !read_all(rd, &mut m) {
            return false;
        }
    }
    true
}

/// `perf bench sched pipe -l loops [-T]`.
fn perf_pipe(loops: u64, threaded: bool) -> Result<String, String> {
    set_comm("sched-pipe");
    let (p1r, p1w) = fdpair(true)?;
    let (p2r, p2w) = fdpair(true)?;
    let start = gettimeofday_us();
    let ok = if threaded {
        let a = std::thread::spawn(move || pipe_worker(true, loops, p1r, p2w));
        let b = std::thread::spawn(move || pipe_worker(false, loops, p2r, p1w));
        a.join().unwrap_or(false) & b.join().unwrap_or(false)
    } else {
        let pid = fork()?;
        if pid == 0 {
            child_exit(pipe_worker(true, loops, p1r, p2w));
        }
        let mine = pipe_worker(false, loops, p2r, p1w);
        waitpid(pid) && mine
    };
    let stop = gettimeofday_us();
    for fd in [p1r, p1w, p2r, p2w] {
        close(fd);
    }
    if !ok {
        return Err("perf-pipe: a worker failed to read or write its pipe".into());
    }
    Ok(perf_pipe_output(loops, threaded, stop - start))
}

/// perf's `ready()`: say so, then wait for the start signal.
fn messaging_ready(ready_w: i32, wake_r: i32) -> bool {
    if !write_all(ready_w, b"R") {
        return false;
    }
    let mut p = libc::pollfd { fd: wake_r, events: libc::POLLIN, revents: 0 };
    // SAFETY: one valid pollfd.
    unsafe { libc::poll(&mut p, 1, -1) == 1 }
}

/// One sender or receiver of `perf bench sched messaging`.
#[derive(Clone)]
struct Role {
    sender: bool,
    /// Receiver: its read end. Sender: the write ends of its group's receivers.
    fds: Vec<i32>,
}

fn messaging_child(r: &Role, o: &HackbenchOpts, ready_w: i32, wake_r: i32) -> bool {
    if !messaging_ready(ready_w, wake_r) {
        return false;
    }
    let mut buf = [0u8; 4096];
    let data = &mut buf[..o.datasize.min(4096) as usize];
    if r.sender {
        for _ in 0..o.loops {
            for &fd in &r.fds {
                if !write_all(fd, data) {
                    return false;
                }
            }
        }
    } else {
        for _ in 0..o.loops as u64 * o.fds as u64 {
            if !read_all(r.fds[0], data) {
                return false;
            }
        }
    }
    true
}

/// `perf bench sched messaging` (perf 6.1's sched-messaging.c, with its output).
fn messaging(o: HackbenchOpts) -> Result<String, String> {
    set_comm("sched-messaging");
    let (ready_r, ready_w) = fdpair(o.pipe)?;
    let (wake_r, wake_w) = fdpair(o.pipe)?;
    let mut roles = Vec::new();
    let mut opened = vec![ready_r, ready_w, wake_r, wake_w];
    for _ in 0..o.groups {
        let mut outs = Vec::new();
        for _ in 0..o.fds {
            let (rd, wr) = fdpair(o.pipe)?;
            opened.extend([rd, wr]);
            roles.push(Role { sender: false, fds: vec![rd] });
            outs.push(wr);
        }
        for _ in 0..o.fds {
            roles.push(Role { sender: true, fds: outs.clone() });
        }
    }
    let mut pids = Vec::new();
    let mut threads = Vec::new();
    for r in &roles {
        if o.threads {
            let (r, o2) = (r.clone(), o.clone());
            let t = std::thread::Builder::new()
                .stack_size(64 * 1024)
                .spawn(move || messaging_child(&r, &o2, ready_w, wake_r))
                .map_err(|e| format!("cannot create a thread: {e}"))?;
            threads.push(t);
        } else {
            let pid = fork()?;
            if pid == 0 {
                child_exit(messaging_child(r, &o, ready_w, wake_r));
            }
            pids.push(pid);
        }
    }
    let mut b = [0u8; 1];
    for _ in 0..roles.len() {
        if !read_all(ready_r, &mut b) {
            return Err(errno_text("messaging: reading the ready pipe"));
        }
    }
    let start = gettimeofday_us();
    if !write_all(wake_w, b"!") {
        return Err(errno_text("messaging: writing the wake pipe"));
    }
    let mut ok = true;
    for p in pids {
        ok &= waitpid(p);
    }
    for t in threads {
        ok &= t.join().unwrap_or(false);
    }
    let stop = gettimeofday_us();
    for fd in opened {
        close(fd);
    }
    if !ok {
        return Err("messaging: a sender or receiver failed".into());
    }
    let mut h = Hackbench::new(o);
    h.start_us = Some(start);
    h.stop_us = Some(stop);
    Ok(format!("{}{}", h.header(), h.footer()))
}

/// `procs` processes, each looping `nanosleep(ns)` until `duration_ns` has passed.
fn nanosleep(procs: u32, ns: u64, duration_ns: u64) -> Result<String, String> {
    let (rd, wr) = fdpair(true)?;
    let mut pids = Vec::new();
    for _ in 0..procs {
        let pid = fork()?;
        if pid == 0 {
            set_comm("nanosleep");
            let t0 = Instant::now();
            let req =
                libc::timespec { tv_sec: (ns / 1_000_000_000) as libc::time_t, tv_nsec: (ns % 1_000_000_000) as _ };
            let mut loops: u64 = 0;
            loop {
                // SAFETY: req is a valid timespec; no remainder is asked for.
                unsafe { libc::nanosleep(&req, std::ptr::null_mut()) };
                loops += 1;
                if t0.elapsed().as_nanos() as u64 >= duration_ns {
                    break;
                }
            }
            child_exit(write_all(wr, &loops.to_le_bytes()));
        }
        pids.push(pid);
    }
    let mut total = 0u64;
    for _ in 0..procs {
        let mut b = [0u8; 8];
        if !read_all(rd, &mut b) {
            return Err(errno_text("nanosleep: reading a child's count"));
        }
        total += u64::from_le_bytes(b);
    }
    let mut ok = true;
    for p in pids {
        ok &= waitpid(p);
    }
    close(rd);
    close(wr);
    if !ok {
        return Err("nanosleep: a child failed".into());
    }
    Ok(format!("nanosleep: {procs} processes, {total} sleeps\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn the_programs_run_for_real_and_print_what_their_models_print() {
        let o = run_program("pingpong", &p(&["iters=200", "ping_cpu=0", "pong_cpu=0"])).unwrap();
        assert!(o.starts_with("pingpong: 200 round trips in "), "{o}");
        let o = run_program("perf-pipe", &p(&["loops=200"])).unwrap();
        assert!(o.contains("# Executed 200 pipe operations between two processes"), "{o}");
        assert!(o.contains("usecs/op"), "{o}");
        let o = run_program("perf-pipe", &p(&["loops=200", "threaded=1"])).unwrap();
        assert!(o.contains("between two threads"), "{o}");
        let o = run_program("messaging", &p(&["-g", "1", "-l", "2", "-p"])).unwrap();
        assert!(o.contains("# 20 sender and receiver processes per group"), "{o}");
        assert!(o.contains("Total time: "), "{o}");
        let o = run_program("messaging", &p(&["-g", "1", "-l", "2", "-t"])).unwrap();
        assert!(o.contains("# 1 groups == 40 threads run"), "{o}");
        let o = run_program("nanosleep", &p(&["procs=2", "duration_ms=5"])).unwrap();
        assert!(o.starts_with("nanosleep: 2 processes, "), "{o}");
        let e = run_program("pingpong", &p(&["iters=1", "pong_cpu=4096"])).unwrap_err();
        assert!(e.contains("pong_cpu=4096"), "{e}");
        assert!(run_program("bogus", &[]).unwrap_err().contains("expected one of"));
    }
}
