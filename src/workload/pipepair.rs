//! Two tasks passing a token through a pair of pipes, in the two forms `schedsim host-run`
//! also runs for real (so `schedsim validate` can compare them with the kernel):
//!
//! - `pingpong`: two threads pinned to two CPUs (`ping_cpu=`, `pong_cpu=`, default 0 and 1)
//!   bounce one byte `iters=` times (default 10000). The main thread creates the `pong` thread,
//!   pins itself and becomes `ping`, sleeps 1 ms (`usleep(1000)`, so `pong` is parked in
//!   `read()`), then per round trip writes the byte to pong's pipe, reads it back from its own
//!   and, with `sleep_us=N`, sleeps `usleep(N)` before the next one. `pong` reads and writes
//!   back `iters` times and exits; ping joins it. Output: `pingpong: N round trips in S s:
//!   U us per round trip` (timed from the first write to the last read).
//! - `perf-pipe`: `perf bench sched pipe` (tools/perf/bench/sched-pipe.c, perf 6.1):
//!   `loops=` (perf's `-l`, default 1000000) and `threaded=1` (`-T`). The main task makes two
//!   pipes, takes `gettimeofday()`, forks a child (or creates two threads) and both sides loop
//!   `loops` times: the child reads pipe 1 then writes pipe 2, the parent writes pipe 1 then
//!   reads pipe 2, 4-byte messages. The parent reaps the child (`waitpid`; `pthread_join` twice
//!   in thread mode), takes `gettimeofday()` again and prints perf's own lines.
//!
//! Simplifications as for hackbench (docs/design.md): creating pipes, threads and processes
//! is not modelled as running code (the tasks exist from the first step and are placed by fork
//! balancing, or on their pinned CPU); `pthread_setaffinity_np()` is in force from the start;
//! user code between syscalls costs `PathCosts::user_op`.

use super::params::Params;
use super::TaskFrame;
use crate::limits::MAX_LATENCY_NS;
use crate::linux::engine::{Action, Next};
use crate::linux::fs::{fdpair, sys_read, sys_write, Fd};
use crate::linux::kernel::exit::{link_child, signal_alloc, DoExit, SigId, Wait4};
use crate::linux::kernel::futex::{futex_alloc, FutexId, FutexOp, Nanosleep};
use crate::linux::programs::resume_points;
use crate::linux::{CpuId, Kernel, TaskId};
use crate::sim::{Time, NSEC_PER_USEC};

pub const PINGPONG_PARAMS: &[&str] = &["iters", "sleep_us", "ping_cpu", "pong_cpu"];
pub const PERF_PIPE_PARAMS: &[&str] = &["loops", "threaded"];

/// Which program.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Form {
    PingPong { ping_cpu: CpuId, pong_cpu: CpuId, sleep_us: u64 },
    PerfPipe { threaded: bool },
}

/// Run state and results.
#[derive(Debug, Clone)]
pub struct PipePair {
    pub form: Form,
    /// Round trips (pingpong `iters`, perf `loops`).
    pub loops: u64,
    /// perf: the main task (0 for pingpong, whose main thread is `ping`).
    pub main_task: Option<TaskId>,
    /// The two workers: [0] reads first (pong, perf's `nr == 0`), [1] writes first.
    pub workers: Vec<TaskId>,
    /// pipe 1 carries [1] -> [0], pipe 2 carries [0] -> [1]; (read end, write end).
    pub pipe1: Option<(Fd, Fd)>,
    pub pipe2: Option<(Fd, Fd)>,
    /// Process mode: the parent's signal_struct. Thread mode: the tid words joined on.
    pub parent_sig: Option<SigId>,
    pub tid_futex: Vec<FutexId>,
    /// Timed section, ns (pingpong) or whole us (perf's `gettimeofday()`).
    pub start_ns: Time,
    pub stop_ns: Time,
    /// Round trips completed by the writing side.
    pub done: u64,
    pub finished: bool,
    pub output: String,
}

impl PipePair {
    pub fn parse_pingpong(p: &Params, nr_cpus: u32) -> Result<PipePair, String> {
        p.check_known("pingpong", PINGPONG_PARAMS)?;
        let ping_cpu = p.u64_or("ping_cpu", 0)?;
        let pong_cpu = p.u64_or("pong_cpu", 1.min(nr_cpus as u64 - 1))?;
        for (k, c) in [("ping_cpu", ping_cpu), ("pong_cpu", pong_cpu)] {
            if c >= u64::from(nr_cpus) {
                return Err(format!("{}: {k}={c} but the machine has CPUs 0-{}", p.origin, nr_cpus - 1));
            }
        }
        let iters = p.u64_in("iters", 10_000, 1, i32::MAX as u64)?;
        let sleep_us = p.time_ns("sleep_us", 0, NSEC_PER_USEC, "us", MAX_LATENCY_NS)? / NSEC_PER_USEC;
        Ok(PipePair::new(Form::PingPong { ping_cpu: ping_cpu as u32, pong_cpu: pong_cpu as u32, sleep_us }, iters))
    }

    pub fn parse_perf_pipe(p: &Params) -> Result<PipePair, String> {
        p.check_known("perf-pipe", PERF_PIPE_PARAMS)?;
        let loops = p.u64_or("loops", 1_000_000)?;
        if loops == 0 || loops > i32::MAX as u64 {
            return Err(format!("{}: loops must be between 1 and {} (perf's int)", p.origin, i32::MAX));
        }
        Ok(PipePair::new(Form::PerfPipe { threaded: p.u64_or("threaded", 0)? != 0 }, loops))
    }

    fn new(form: Form, loops: u64) -> PipePair {
        PipePair {
            form,
            loops,
            main_task: None,
            workers: Vec::new(),
            pipe1: None,
            pipe2: None,
            parent_sig: None,
            tid_futex: Vec::new(),
            start_ns: 0,
            stop_ns: 0,
            done: 0,
            finished: false,
            output: String::new(),
        }
    }

    /// The workload's name.
    pub fn name(&self) -> &'static str {
        match self.form {
            Form::PingPong { .. } => "pingpong",
            Form::PerfPipe { .. } => "perf-pipe",
        }
    }

    /// The timed section, ns (perf: whole microseconds, as `gettimeofday()` gives them).
    pub fn elapsed_ns(&self) -> Option<Time> {
        self.finished.then(|| self.stop_ns - self.start_ns)
    }

    /// The program's own figure: us per round trip (pingpong) or per op (perf).
    pub fn us_per_op(&self) -> Option<f64> {
        Some(self.elapsed_ns()? as f64 / 1e3 / self.loops as f64)
    }
}

/// The lines `perf bench sched pipe` prints for `loops` round trips in `usec` microseconds
/// (perf 6.1, default format).
pub fn perf_pipe_output(loops: u64, threaded: bool, usec: u64) -> String {
    let mut o = String::from("# Running 'sched/pipe' benchmark:\n");
    o.push_str(&format!(
        "# Executed {loops} pipe operations between two {}\n\n",
        if threaded { "threads" } else { "processes" }
    ));
    o.push_str(&format!(" {:>14}: {}.{:03} [sec]\n\n", "Total time", usec / 1_000_000, usec % 1_000_000 / 1000));
    o.push_str(&format!(" {:>14.6} usecs/op\n", usec as f64 / loops as f64));
    o.push_str(&format!(" {:>14} ops/sec\n", (loops as f64 / (usec.max(1) as f64 / 1e6)) as i32));
    o
}

/// The line the ping-pong prints (both here and in `schedsim host-run pingpong`).
pub fn pingpong_output(iters: u64, elapsed_ns: u64) -> String {
    format!(
        "pingpong: {iters} round trips in {:.6} s: {:.3} us per round trip\n",
        elapsed_ns as f64 / 1e9,
        elapsed_ns as f64 / 1e3 / iters as f64
    )
}

fn new_task(k: &mut Kernel, comm: &str, role: u32, pinned: Option<CpuId>) -> TaskId {
    crate::linux::kernel::fork::copy_process(k, comm.to_string(), 0, 120, pinned, role)
}

/// Roles of [`TaskFrame::task`].
const ROLE_READER: u32 = 0;
const ROLE_WRITER: u32 = 1;
const ROLE_MAIN: u32 = 2;

/// The program starts at a seed-dependent instant after 1 ms.
pub fn start(w: &mut PipePair, k: &mut Kernel) {
    let form = w.form;
    let load = super::load_time(k, 0x9199);
    match form {
        Form::PingPong { ping_cpu, pong_cpu, .. } => {
            let pong = new_task(k, "pong", ROLE_READER, Some(pong_cpu));
            // One process: ping (its main thread) and the pong thread share an address space.
            let ping = crate::linux::kernel::fork::copy_process_clone_vm(
                k,
                pong,
                "ping".into(),
                0,
                120,
                Some(ping_cpu),
                ROLE_WRITER,
            );
            w.workers = vec![pong, ping];
        }
        Form::PerfPipe { .. } => {
            let main = new_task(k, "sched-pipe", ROLE_MAIN, None);
            w.main_task = Some(main);
        }
    }
    k.q.push(load, Action::Program { what: 0 });
}

pub fn on_action(w: &mut PipePair, k: &mut Kernel, _what: u32) {
    let first = match w.form {
        Form::PingPong { .. } => w.workers.clone(),
        Form::PerfPipe { .. } => vec![w.main_task.expect("created")],
    };
    // pingpong: the pipes exist before either thread runs.
    if matches!(w.form, Form::PingPong { .. }) {
        let p1 = fdpair(k, 0, true);
        let p2 = fdpair(k, 0, true);
        let f = futex_alloc(k, 0, 1);
        w.pipe1 = Some(p1);
        w.pipe2 = Some(p2);
        w.tid_futex = vec![f];
    }
    for t in first {
        super::spawn(k, 0, t);
    }
}

fn user(k: &Kernel, s: &mut TaskFrame) -> Next {
    s.user = true;
    Next::Cont(k.costs.user_op)
}

pub fn task_step(w: &mut PipePair, k: &mut Kernel, cpu: CpuId, s: &mut TaskFrame) -> Next {
    match s.task {
        ROLE_MAIN => perf_main(w, k, cpu, s),
        _ => worker(w, k, cpu, s),
    }
}

resume_points! {
    /// Where perf's main resumes.
    enum MainAt {
        /// Create the pipes and the workers.
        Setup,
        /// pthread_join() both workers, then print and exit.
        Join,
        Exited = super::EXITED,
    }
}

resume_points! {
    /// Where a reader or a writer resumes.
    enum WorkerAt {
        /// Start a round with its first syscall (or finish after the last round).
        Start,
        /// The first syscall of the round returned: make the second.
        Second,
        /// The second returned: count the round (ping may sleep).
        RoundDone,
        /// Back from ping's sleep.
        Slept,
        /// Done looping: exit, or join and print.
        Done,
        Exited = super::EXITED,
    }
}

/// perf's `bench_sched_pipe()` main: set up, start the workers, reap them, print.
fn perf_main(w: &mut PipePair, k: &mut Kernel, cpu: CpuId, s: &mut TaskFrame) -> Next {
    let Form::PerfPipe { threaded } = w.form else { unreachable!() };
    match MainAt::from_u8(s.at) {
        MainAt::Setup => {
            let p1 = fdpair(k, cpu, true);
            let p2 = fdpair(k, cpu, true);
            let now_us = k.now / NSEC_PER_USEC;
            let main = k.curr(cpu);
            let mut workers = Vec::new();
            let mut futexes = Vec::new();
            let mut sig = None;
            if threaded {
                for role in [ROLE_READER, ROLE_WRITER] {
                    let t = crate::linux::kernel::fork::copy_process_clone_vm(
                        k,
                        main,
                        "sched-pipe".into(),
                        0,
                        120,
                        None,
                        role,
                    );
                    let pid = k.tasks[t as usize].pid as i64;
                    futexes.push(futex_alloc(k, cpu, pid));
                    workers.push(t);
                }
            } else {
                let g = signal_alloc(k, cpu);
                let child = new_task(k, "sched-pipe", ROLE_READER, None);
                link_child(k, g, child);
                sig = Some(g);
                workers = vec![child, main];
            }
            w.pipe1 = Some(p1);
            w.pipe2 = Some(p2);
            w.start_ns = now_us * NSEC_PER_USEC;
            w.parent_sig = sig;
            w.tid_futex = futexes;
            w.workers = workers.clone();
            for t in workers.into_iter().filter(|&t| t != main) {
                super::spawn(k, cpu, t);
            }
            if threaded {
                s.at = MainAt::Join as u8;
                s.i = 0;
                user(k, s)
            } else {
                // The parent runs worker_thread(threads + 1) itself.
                s.task = ROLE_WRITER;
                s.at = WorkerAt::Start as u8;
                s.i = 0;
                user(k, s)
            }
        }
        MainAt::Join => {
            // pthread_join() both workers.
            if (s.i as usize) < w.tid_futex.len() {
                let f = w.tid_futex[s.i as usize];
                let v = k.futexes[f as usize].val;
                if v != 0 {
                    return Next::Call(k.costs.user_op, FutexOp::wait(f, v));
                }
                s.i += 1;
                return user(k, s);
            }
            finish(w, k, cpu, s)
        }
        MainAt::Exited => unreachable!("perf-pipe main ran after exit"),
    }
}

/// Print and exit (the timed section ends at the reap).
fn finish(w: &mut PipePair, k: &mut Kernel, cpu: CpuId, s: &mut TaskFrame) -> Next {
    let now = k.now;
    match w.form {
        Form::PerfPipe { threaded } => {
            w.stop_ns = now / NSEC_PER_USEC * NSEC_PER_USEC;
            let usec = (w.stop_ns - w.start_ns) / NSEC_PER_USEC;
            w.output = perf_pipe_output(w.loops, threaded, usec);
        }
        Form::PingPong { .. } => {
            w.output = pingpong_output(w.loops, w.stop_ns - w.start_ns);
        }
    }
    w.finished = true;
    super::all_exited(k);
    super::exit_current(k, cpu, s)
}

/// `worker_thread()` (perf) and the ping and pong loops: the reader reads the token from
/// pipe 1 and writes it to pipe 2; the writer writes pipe 1 then reads pipe 2 (resume points:
/// [`WorkerAt`]).
fn worker(w: &mut PipePair, k: &mut Kernel, cpu: CpuId, s: &mut TaskFrame) -> Next {
    let (form, loops) = (w.form, w.loops);
    let (p1, p2) = (w.pipe1.expect("set up"), w.pipe2.expect("set up"));
    let reader = s.task == ROLE_READER;
    let len = if matches!(form, Form::PingPong { .. }) { 1 } else { 4 };
    match WorkerAt::from_u8(s.at) {
        WorkerAt::Start => {
            if let (Form::PingPong { .. }, false, 0) = (form, reader, s.i) {
                if s.mark[0] == 0 {
                    // ping: usleep(1000) so that pong waits in read().
                    s.mark[0] = 1;
                    return Next::Call(k.costs.user_op, Nanosleep::with_timer_slack(1_000_000));
                }
                w.start_ns = k.now;
            }
            if s.i == loops {
                s.at = WorkerAt::Done as u8;
                return Next::Cont(0);
            }
            s.at = WorkerAt::Second as u8;
            let f = if reader { sys_read(p1.0, len) } else { sys_write(p1.1, len) };
            Next::Call(k.costs.user_op, f)
        }
        WorkerAt::Second => {
            s.at = WorkerAt::RoundDone as u8;
            let f = if reader { sys_write(p2.1, len) } else { sys_read(p2.0, len) };
            Next::Call(k.costs.user_op, f)
        }
        WorkerAt::RoundDone => {
            s.i += 1;
            if !reader {
                w.done = s.i;
            }
            s.at = WorkerAt::Start as u8;
            match form {
                Form::PingPong { sleep_us, .. } if !reader && sleep_us > 0 => {
                    if s.i == loops {
                        w.stop_ns = k.now;
                    }
                    s.at = WorkerAt::Slept as u8;
                    Next::Call(k.costs.user_op, Nanosleep::with_timer_slack(sleep_us * NSEC_PER_USEC))
                }
                _ => {
                    if matches!(form, Form::PingPong { .. }) && !reader && s.i == loops {
                        w.stop_ns = k.now;
                    }
                    user(k, s)
                }
            }
        }
        WorkerAt::Slept => {
            s.at = WorkerAt::Start as u8;
            user(k, s)
        }
        WorkerAt::Done => {
            // Done looping.
            match (form, reader) {
                (Form::PingPong { .. }, true) => {
                    let f = w.tid_futex[0];
                    s.at = WorkerAt::Exited as u8;
                    Next::Call(k.costs.user_op, DoExit::thread(f))
                }
                (Form::PingPong { .. }, false) => {
                    // pthread_join(pong).
                    let f = w.tid_futex[0];
                    let v = k.futexes[f as usize].val;
                    if v != 0 {
                        return Next::Call(k.costs.user_op, FutexOp::wait(f, v));
                    }
                    finish(w, k, cpu, s)
                }
                (Form::PerfPipe { threaded: true }, _) => {
                    let f = w.tid_futex[if reader { 0 } else { 1 }];
                    s.at = WorkerAt::Exited as u8;
                    Next::Call(k.costs.user_op, DoExit::thread(f))
                }
                (Form::PerfPipe { threaded: false }, true) => {
                    let sig = w.parent_sig.expect("process mode");
                    s.at = WorkerAt::Exited as u8;
                    Next::Call(k.costs.user_op, DoExit::process(sig))
                }
                (Form::PerfPipe { threaded: false }, false) => {
                    // The parent: waitpid(child), then print.
                    if s.mark[1] == 0 {
                        s.mark[1] = 1;
                        let sig = w.parent_sig.expect("process mode");
                        return Next::Call(k.costs.user_op, Wait4::any_child(sig));
                    }
                    finish(w, k, cpu, s)
                }
            }
        }
        WorkerAt::Exited => unreachable!("pipe worker ran after exit"),
    }
}

impl super::Program for PipePair {
    fn parse(name: &str, p: &Params, m: &crate::hw::Machine) -> Result<PipePair, String> {
        match name {
            "pingpong" => PipePair::parse_pingpong(p, m.topo.nr_cpus),
            _ => PipePair::parse_perf_pipe(p),
        }
    }
    fn planned_size(&self, _nr_cpus: u32) -> (u64, u64, &'static str) {
        (8, 0, "the workload")
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
    fn metric(&self, f: &super::RunFacts) -> super::Metric {
        let v = self.elapsed_ns().unwrap_or(f.sim_ns) as f64 / 1e6;
        super::Metric { name: "time", unit: "ms", lower_is_better: true, value: v }
    }
    fn json(&self, _f: &super::RunFacts) -> serde_json::Value {
        serde_json::json!({
            "name": self.name(),
            "loops": self.loops,
            "elapsed_ns": self.elapsed_ns(),
            "us_per_op": self.us_per_op(),
            "output": self.output,
        })
    }
    fn text(&self, _f: &super::RunFacts) -> String {
        self.output.clone()
    }
}
