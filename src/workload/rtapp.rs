//! rt-app (github.com/scheduler-tools/rt-app, the Debian `rt-app` 1.0 package): threads that
//! run the events of a JSON file (`rtapp_json.rs`) on the modelled machine, and rt-app's own
//! per-thread log (`-l` files: perf, run, period, start, end, rel_st, slack, c_duration,
//! c_period, wu_lat) so a model run can be diffed against a real one.
//!
//! The threads are user tasks reaching the kernel through its entry points:
//! - `run` is CPU work of exactly its duration (the model has no frequency or capacity
//!   scaling, so calibrated loops take their nominal time); `runtime` is CPU work in 32 us
//!   chunks until that much wall time has passed, as rt-app's loop of `loadwait(32)` does;
//! - `sleep` is `nanosleep()`, `timer` is `clock_nanosleep(TIMER_ABSTIME)` on the timer's next
//!   expiry (`kernel::futex::nanosleep` with an absolute expiry; no slack for RT threads);
//! - `lock`/`unlock` are glibc's low-level lock on a futex word (0 free, 1 locked, 2 locked
//!   with waiters: FUTEX_WAIT on 2, FUTEX_WAKE one on unlock of 2); `wait`/`signal`/`broad`/
//!   `sync`, `barrier` and `suspend`/`resume` are condition variables built the way rt-app
//!   builds them (rt-app.c `run_event()`), each a futex sequence word with a waiter count:
//!   `pthread_cond_wait()` registers, releases the mutex, FUTEX_WAITs on the sequence it read
//!   and retakes the mutex; signal/broadcast bump the sequence and FUTEX_WAKE one/all. (glibc's
//!   condvar uses two groups to rule out a spurious wakeup that this simpler word allows; POSIX
//!   permits it and rt-app does not depend on it);
//! - `yield` is `sched_yield()`, `cpus` per phase is `sched_setaffinity()`, `fork` is
//!   `pthread_create()` (clone: `wake_up_new_task()` from the forking CPU);
//! - `mem` and `iorun` are CPU time: a `memset()` of the bytes at the measured rate, and one
//!   `write()` syscall per `mem_buffer_size` chunk to `/dev/null`.
//!
//! What is not modelled: `nodes_membind` (memory placement has no cost in the model), and
//! `util_min`/`util_max` (no uclamp, EAS or frequency selection): both are accepted, checked
//! and reported as having no effect.
//!
//! The start is rt-app 1.0's (`main()` and `thread_body()` of src/rt-app.c @ v1.0): main,
//! SCHED_OTHER, creates every thread with `pthread_create()`, so each starts SCHED_OTHER at
//! nice 0 and is placed by fork balancing as a fair task; each thread then names itself, sets
//! its policy (`sched_setscheduler()`, or `setpriority()` for a SCHED_OTHER priority:
//! `kernel::sched::syscalls::__sched_setscheduler`), thread 0 takes `t_zero`, and every thread
//! waits on one `pthread_barrier_wait()` (a futex word: the last arriver wakes all) before its
//! delay and its phases. The task-level `cpus` are set at the first phase
//! (`set_thread_affinity()`), like a phase's. Forked threads (rt-app after 1.0) inherit the
//! forker's policy, set their own and skip the barrier.

use super::params::Params;
use super::rtapp_json::{Calibration, Event, Policy, RtAppConfig};
use super::rtapp_summary::RowSummary;
use super::TaskFrame;
use crate::hw::cpumask::CpuMask;
use crate::linux::engine::{Action, Frame, Next};
use crate::linux::kernel::futex::{futex_alloc, FutexId, FutexOp, Nanosleep};
use crate::linux::kernel::sched::core::ScheduleCaller;
use crate::linux::kernel::sched::{SCHED_FIFO, SCHED_NORMAL, SCHED_RR};
use crate::linux::programs::resume_points;
use crate::linux::{CpuId, Kernel, TaskId};
use crate::sim::{Time, NSEC_PER_SEC, NSEC_PER_USEC};

/// ns per loop used for `perf` when rt-app would calibrate (`"calibration": "CPUn"`): the
/// model runs `run` events for exactly their duration, so the figure only scales `perf`. Set
/// `global.calibration` to the host's `pLoad` to compare `perf` columns.
pub const NOMINAL_NS_PER_LOOP: u64 = 100;

/// `memset()` rate for `mem`, bytes per ns: measured on the 2-vCPU KVM host (Linux 6.18) with
/// 1000-byte `memset()`s in a loop, 29.6 and 40.4 B/ns in two runs (4 MB: 77-124 B/ns).
pub const MEMSET_BYTES_PER_NS: u64 = 35;

/// Creator-side cost of `pthread_create()` (clone, stack from glibc's cache, TLS setup):
/// measured on the same host, median 5.7-5.9 us over 2000 create+join pairs (p10 5.5 us).
pub const PTHREAD_CREATE_NS: Time = 5_800;

/// rt-app's own bookkeeping around each phase (rt-app.c `thread_body()`): a `clock_gettime()`
/// before and after the phase's events (vDSO), measured on the 2-vCPU KVM host at
/// 17 ns each (docs/rtapp.md, "rt-app's own costs").
pub const PHASE_CLOCKS_NS: Time = 2 * 17;
/// rt-app's log row (`log_timing()`: an `fprintf()` of eleven numbers into the thread's
/// buffered log file, and its share of the `write()` that flushes every few dozen rows), charged
/// at every phase end when logging is on (rt-app's default, `"log_size": "file"`); measured on the
/// same host, 393 and 422 ns a row in two runs (docs/rtapp.md).
pub const LOG_ROW_NS: Time = 390;

/// rt-app's `FORKS_LIMIT`: forks of one task beyond this are refused (rt-app exits).
pub const FORKS_LIMIT: u32 = 1024;

/// One row of rt-app's log (`timing_point_t`), times in us.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LogRow {
    pub ind: u32,
    pub perf: u64,
    pub run: u64,
    pub period: u64,
    pub start: u64,
    pub end: u64,
    pub rel_st: u64,
    pub slack: i64,
    pub c_duration: u64,
    pub c_period: u64,
    pub wu_lat: u64,
}

/// The column header rt-app writes (rt-app.c `thread_body()`).
pub fn log_header() -> String {
    format!(
        "{} {:>8} {:>8} {:>8} {:>15} {:>15} {:>15} {:>10} {:>10} {:>10} {:>10}",
        "#idx", "perf", "run", "period", "start", "end", "rel_st", "slack", "c_duration", "c_period", "wu_lat"
    )
}

impl LogRow {
    /// One line as rt-app's `log_timing()` prints it.
    pub fn line(&self) -> String {
        format!(
            "{:4} {:8} {:8} {:8} {:15} {:15} {:15} {:10} {:10} {:10} {:10}",
            self.ind,
            self.perf,
            self.run,
            self.period,
            self.start,
            self.end,
            self.rel_st,
            self.slack,
            self.c_duration,
            self.c_period,
            self.wu_lat
        )
    }
}

/// Per-phase accumulators (`log_data_t`).
#[derive(Debug, Clone, Copy, Default)]
struct LogData {
    perf: u64,
    duration: u64,
    c_duration: u64,
    c_period: u64,
    wu_lat: u64,
    slack: i64,
}

/// A futex-word pthread object.
#[derive(Debug, Clone)]
struct Cond {
    futex: FutexId,
    /// Waiters registered and not yet signalled.
    waiters: u32,
}

#[derive(Debug, Clone, Copy, Default)]
struct TimerState {
    t_next: Time,
    init: bool,
    relative: bool,
}

#[derive(Debug, Clone, Copy)]
struct BarrierState {
    mutex: usize,
    cond: usize,
    /// rt-app's `waiting`: -1 plus one per referencing thread instance.
    waiting: i64,
}

/// Resolved form of an event: resource names turned into indices.
#[derive(Debug, Clone, Copy)]
enum Ev {
    Run(u64),
    Runtime(u64),
    Sleep(u64),
    Timer { timer: TimerRef, period_us: u64 },
    Lock(usize),
    Unlock(usize),
    Wait { cond: usize, mutex: usize },
    Signal(usize),
    Broad(usize),
    Sync { cond: usize, mutex: usize },
    Barrier(usize),
    Suspend { cond: usize, mutex: usize },
    Resume { cond: usize, mutex: usize },
    Yield,
    Mem(u64),
    Iorun(u64),
    Fork(usize),
}

#[derive(Debug, Clone, Copy)]
enum TimerRef {
    Shared(usize),
    /// Index into the thread's own timers.
    Unique(usize),
}

/// A step of an event's user-level code (the glibc and rt-app code around the syscalls).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Lock(usize),
    Unlock(usize),
    CondWait { cond: usize, mutex: usize },
    Signal(usize),
    Broad(usize),
    BarrierCheck(usize),
    BarrierDone(usize),
}

/// One rt-app thread.
#[derive(Debug, Clone)]
pub struct Thread {
    pub def: usize,
    pub ind: u32,
    /// The task's name in the JSON file.
    pub name: String,
    /// The how-many-th fork of its task this thread is (rt-app's `nforks`), if forked.
    pub fork_id: Option<u32>,
    pub tid: TaskId,
    phase: usize,
    phase_loop: i64,
    thread_loop: i64,
    ev: usize,
    sub: u8,
    scratch: i64,
    ops: Vec<Op>,
    ev_t0: Time,
    t_start: Time,
    t_first: Time,
    ld: LogData,
    timers: Vec<TimerState>,
    cur_cpus: Option<Vec<u32>>,
    /// The log rows, kept when the run keeps them ([`RtApp::keep_rows`]).
    pub rows: Vec<LogRow>,
    /// Every logged row, summed (kept whether or not the rows are).
    pub sum: RowSummary,
    pub exited: bool,
}

/// The workload.
#[derive(Debug, Clone)]
pub struct RtApp {
    pub cfg: RtAppConfig,
    /// ns per loop for `perf`.
    pub p_load: u64,
    /// Resolved events per task definition and phase.
    evs: Vec<Vec<Vec<Ev>>>,
    /// Each definition's unique timers (their index is `TimerRef::Unique`): name, and whether
    /// some use of it asks for absolute mode.
    unique_timers: Vec<Vec<(String, bool)>>,
    mutexes: Vec<FutexId>,
    conds: Vec<Cond>,
    timers: Vec<TimerState>,
    barriers: Vec<BarrierState>,
    pub threads: Vec<Thread>,
    /// Forks made per task definition.
    nforks: Vec<u32>,
    /// rt-app's `t_zero`: thread 0's `clock_gettime()` just before the start barrier (the
    /// base of the timers and of a task's `delay`).
    pub t_zero: Time,
    /// main's `t_start` before it creates the threads (`main_app_start`: the base of `rel_st`).
    pub main_start: Time,
    /// The start barrier (`threads_barrier`, `pthread_barrier_wait()` of every thread created
    /// at start): its futex word (the round, bumped by the last arriver) and the arrivals.
    start_barrier: FutexId,
    start_arrived: u32,
    pub stop_at: Option<Time>,
    live: u32,
    /// Things the model did not do as rt-app would (fork limit), for the report.
    pub notes: Vec<String>,
    /// Whether each thread keeps its log rows (`logs=keep`, the default: for the log files,
    /// validation, tests) or only their summary (`logs=summary`: memory in proportion to the
    /// threads, not to the simulated time). The simulated run is the same either way.
    pub keep_rows: bool,
}

/// Names to indices, in first-use order.
fn intern(names: &mut Vec<String>, n: &str) -> usize {
    match names.iter().position(|x| x == n) {
        Some(i) => i,
        None => {
            names.push(n.to_string());
            names.len() - 1
        }
    }
}

impl RtApp {
    /// Resolve a parsed file (resources by name, as rt-app's `get_resource_index()` does).
    /// The rt-app workload of a JSON file, checked against machine `m`. Errors name the file,
    /// the line and the JSON path.
    pub fn from_file(path: &str, m: &crate::hw::Machine) -> Result<RtApp, String> {
        let text = crate::input::read_input_file(path, "rt-app file")?;
        let lim = super::rtapp_json::Limits { nr_cpus: m.topo.nr_cpus, nr_nodes: m.topo.nr_nodes() };
        let cfg = super::rtapp_json::parse_rtapp(&text, path, lim).map_err(|e| e.to_string())?;
        Ok(RtApp::new(cfg))
    }

    pub fn new(cfg: RtAppConfig) -> RtApp {
        let p_load = match cfg.global.calibration {
            Calibration::NsPerLoop(n) => n,
            Calibration::Cpu(_) => NOMINAL_NS_PER_LOOP,
        };
        let (mut mutex_names, mut cond_names, mut timer_names, mut barrier_names) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        let mut timer_abs: Vec<bool> = Vec::new();
        let mut barrier_count: Vec<i64> = Vec::new();
        let mut evs = Vec::new();
        let mut unique_timers = Vec::new();
        for t in &cfg.tasks {
            let mut uniq: Vec<String> = Vec::new();
            let mut uniq_abs: Vec<bool> = Vec::new();
            let mut phases = Vec::new();
            for ph in &t.phases {
                let mut v = Vec::new();
                for e in &ph.events {
                    v.push(match &e.ev {
                        Event::Run(u) => Ev::Run(*u),
                        Event::Runtime(u) => Ev::Runtime(*u),
                        Event::Sleep(u) => Ev::Sleep(*u),
                        Event::Timer { name, unique, period_us, absolute } => {
                            let timer = if *unique {
                                let i = intern(&mut uniq, name);
                                if uniq_abs.len() <= i {
                                    uniq_abs.push(false);
                                }
                                uniq_abs[i] |= *absolute;
                                TimerRef::Unique(i)
                            } else {
                                let i = intern(&mut timer_names, name);
                                if timer_abs.len() <= i {
                                    timer_abs.push(false);
                                }
                                TimerRef::Shared(i)
                            };
                            if let TimerRef::Shared(i) = timer {
                                timer_abs[i] |= *absolute;
                            }
                            Ev::Timer { timer, period_us: *period_us }
                        }
                        Event::Lock(m) => Ev::Lock(intern(&mut mutex_names, m)),
                        Event::Unlock(m) => Ev::Unlock(intern(&mut mutex_names, m)),
                        Event::Wait { cond, mutex } => {
                            Ev::Wait { cond: intern(&mut cond_names, cond), mutex: intern(&mut mutex_names, mutex) }
                        }
                        Event::Sync { cond, mutex } => {
                            Ev::Sync { cond: intern(&mut cond_names, cond), mutex: intern(&mut mutex_names, mutex) }
                        }
                        Event::Signal(c) => Ev::Signal(intern(&mut cond_names, c)),
                        Event::Broad(c) => Ev::Broad(intern(&mut cond_names, c)),
                        Event::Barrier(b) => {
                            let i = intern(&mut barrier_names, b);
                            if barrier_count.len() <= i {
                                barrier_count.push(-1);
                            }
                            barrier_count[i] += t.instance as i64;
                            Ev::Barrier(i)
                        }
                        Event::Suspend(n) => {
                            let n = if n.is_empty() { t.name.as_str() } else { n.as_str() };
                            Ev::Suspend { cond: intern(&mut cond_names, n), mutex: intern(&mut mutex_names, n) }
                        }
                        Event::Resume(n) => {
                            Ev::Resume { cond: intern(&mut cond_names, n), mutex: intern(&mut mutex_names, n) }
                        }
                        Event::Yield => Ev::Yield,
                        Event::Mem(b) => Ev::Mem(*b),
                        Event::Iorun(b) => Ev::Iorun(*b),
                        Event::Fork(n) => {
                            Ev::Fork(cfg.tasks.iter().position(|x| &x.name == n).expect("checked by the parser"))
                        }
                    });
                }
                phases.push(v);
            }
            evs.push(phases);
            unique_timers.push(uniq.into_iter().zip(uniq_abs).collect());
        }
        // A barrier's own mutex and condition live beside the named ones.
        let mut barriers = Vec::new();
        for (i, b) in barrier_names.iter().enumerate() {
            let m = intern(&mut mutex_names, &format!("\0barrier {b}"));
            let c = intern(&mut cond_names, &format!("\0barrier {b}"));
            barriers.push(BarrierState { mutex: m, cond: c, waiting: barrier_count[i] });
        }
        let timers = timer_abs.iter().map(|&a| TimerState { relative: !a, ..Default::default() }).collect();
        let n = cfg.tasks.len();
        RtApp {
            cfg,
            p_load,
            evs,
            unique_timers,
            mutexes: vec![0; mutex_names.len()],
            conds: cond_names.iter().map(|_| Cond { futex: 0, waiters: 0 }).collect(),
            timers,
            barriers,
            threads: Vec::new(),
            nforks: vec![0; n],
            t_zero: 0,
            main_start: 0,
            start_barrier: 0,
            start_arrived: 0,
            stop_at: None,
            live: 0,
            notes: Vec::new(),
            keep_rows: true,
        }
    }

    /// rt-app's own time between two phases of a thread ([`PHASE_CLOCKS_NS`], plus
    /// [`LOG_ROW_NS`] when it logs): never zero, so that every logged row costs simulated time.
    pub fn phase_cost(&self) -> Time {
        PHASE_CLOCKS_NS + if self.cfg.global.log_disabled { 0 } else { LOG_ROW_NS }
    }

    /// The most log rows a run of at most `limit_ns` on `nr_cpus` CPUs can keep, for the memory
    /// estimate: a row per phase, each phase at least [`RtApp::phase_cost`] of one CPU's time
    /// (so at most `min(threads, CPUs) x time / cost` rows), and at most `loop x phases` rows a
    /// thread when its loop is finite.
    pub fn log_rows_bound(&self, limit_ns: Time, nr_cpus: u32) -> u64 {
        let time = match self.cfg.global.duration_s {
            Some(d) => limit_ns.min(d.saturating_mul(NSEC_PER_SEC)),
            None => limit_ns,
        };
        let mut threads = 0u64;
        let mut by_loops = 0u64;
        for t in &self.cfg.tasks {
            let forks = t.phases.iter().flat_map(|p| &p.events).any(|e| matches!(e.ev, Event::Fork(_)));
            let n = u64::from(t.instance).saturating_mul(if forks { 1 + u64::from(FORKS_LIMIT) } else { 1 });
            threads = threads.saturating_add(n);
            let per_loop = t.phases.iter().map(|p| p.loop_.max(0) as u64).fold(0u64, u64::saturating_add);
            let rows = if t.loop_ < 0 || t.phases.iter().any(|p| p.loop_ < 0) {
                u64::MAX
            } else {
                (t.loop_ as u64).saturating_mul(per_loop)
            };
            by_loops = by_loops.saturating_add(n.saturating_mul(rows));
        }
        let by_time = (time / self.phase_cost() + 1).saturating_mul(threads.min(u64::from(nr_cpus)));
        by_loops.min(by_time)
    }

    /// The memory the log rows of [`RtApp::log_rows_bound`] take: a row's size, twice (a
    /// vector's growth by doubling).
    /// None when the rows are not kept.
    pub fn log_bytes_bound(&self, limit_ns: Time, nr_cpus: u32) -> u64 {
        if !self.keep_rows {
            return 0;
        }
        self.log_rows_bound(limit_ns, nr_cpus).saturating_mul(2 * std::mem::size_of::<LogRow>() as u64)
    }

    /// rt-app's name for a thread: `<name>-<ind>`, and `-<fork id>` for a forked one
    /// (rt-app.c `thread_data_set_unique_name()`).
    pub fn thread_name(th: &Thread) -> String {
        match th.fork_id {
            Some(f) => format!("{}-{}-{:04}", th.name, th.ind, f),
            None => format!("{}-{}", th.name, th.ind),
        }
    }

    /// rt-app's log file name for a thread (`<logdir>/<basename>-<thread name>.log`).
    pub fn log_file_name(&self, th: &Thread) -> String {
        format!("{}-{}.log", self.cfg.global.log_basename, Self::thread_name(th))
    }

    /// The log text of a thread, as rt-app 1.0 writes it: the policy line, the header, rows.
    pub fn log_text(&self, th: &Thread) -> String {
        let t = &self.cfg.tasks[th.def];
        let mut o = format!("# Policy : {} priority : {}\n{}\n", t.policy.name(), t.priority, log_header());
        for r in &th.rows {
            o.push_str(&r.line());
            o.push('\n');
        }
        o
    }

    /// Notes on keys the model accepts but that have no effect.
    pub fn inert_keys(&self) -> Vec<String> {
        let mut notes = Vec::new();
        for t in &self.cfg.tasks {
            let membind = t.nodes_membind.is_some() || t.phases.iter().any(|p| p.nodes_membind.is_some());
            let uclamp = t.util_min.is_some()
                || t.util_max.is_some()
                || t.phases.iter().any(|p| p.util_min.is_some() || p.util_max.is_some());
            if membind {
                notes.push(format!("tasks.{}: nodes_membind has no effect (memory placement is not modelled)", t.name));
            }
            if uclamp {
                notes.push(format!(
                    "tasks.{}: util_min/util_max have no effect (no uclamp, EAS or frequency selection in the model)",
                    t.name
                ));
            }
        }
        if self.cfg.global.gnuplot {
            notes.push("global.gnuplot: schedsim writes no gnuplot files".into());
        }
        notes
    }

    /// Summary lines: one per thread (rows, mean period, run, slack, wakeup latency).
    pub fn summary(&self) -> String {
        let mut o = format!(
            "rt-app: {} threads ({} forked), pLoad = {}ns{}\n",
            self.threads.len(),
            self.threads.iter().filter(|t| t.fork_id.is_some()).count(),
            self.p_load,
            match self.cfg.global.calibration {
                Calibration::Cpu(c) => format!(" (nominal: calibration CPU{c} is not simulated)"),
                Calibration::NsPerLoop(_) => String::new(),
            }
        );
        o.push_str(&format!(
            "{:<24} {:>6} {:>12} {:>12} {:>12} {:>12}\n",
            "thread", "rows", "period(us)", "run(us)", "slack(us)", "wu_lat(us)"
        ));
        // Threads started at creation one line each; forked threads one line per task.
        let mut lines: Vec<(String, RowSummary)> = Vec::new();
        for th in &self.threads {
            match th.fork_id {
                None => lines.push((Self::thread_name(th), th.sum.clone())),
                Some(_) => {
                    let label = format!("{} (forks)", th.name);
                    match lines.iter_mut().find(|(l, _)| *l == label) {
                        Some((_, sum)) => sum.merge(&th.sum),
                        None => lines.push((label, th.sum.clone())),
                    }
                }
            }
        }
        for (label, sum) in &lines {
            o.push_str(&format!(
                "{:<24} {:>6} {:>12.1} {:>12.1} {:>12.1} {:>12.1}\n",
                label,
                sum.rows,
                sum.mean(sum.period_sum as f64),
                sum.mean(sum.run_sum as f64),
                sum.mean(sum.slack_sum as f64),
                sum.mean(sum.wu_lat_sum as f64),
            ));
        }
        for n in &self.notes {
            o.push_str(&format!("rt-app: note: {n}\n"));
        }
        o
    }
}

fn mask_of(cpus: &[u32], nr: u32) -> CpuMask {
    let mut m = CpuMask::new(nr);
    for &c in cpus {
        m.set(c);
    }
    m
}

/// Create thread `ind` of definition `def` (not started), as `pthread_create()` does: with
/// the creator's policy and priority (`sched_fork()` copies them; rt-app's main is SCHED_OTHER
/// nice 0) and the creator's affinity (every CPU). The thread sets its own policy when it
/// starts ([`ThreadAt::Start`]) and its task-level `cpus` at its first phase, as rt-app 1.0's
/// `thread_body()` does.
fn new_thread(w: &mut RtApp, k: &mut Kernel, def: usize, fork_id: Option<u32>, inherit: (u32, i32)) -> usize {
    let t = &w.cfg.tasks[def];
    let ind = w.threads.len() as u32;
    let name = t.name.clone();
    let comm: String = t.name.chars().take(15).collect();
    let (policy, prio) = inherit;
    let timers: Vec<TimerState> =
        w.unique_timers[def].iter().map(|&(_, abs)| TimerState { relative: !abs, ..Default::default() }).collect();
    let idx = w.threads.len();
    let role = w.threads.len() as u32;
    // rt-app is one process: its threads share the first one's address space.
    let tid = match w.threads.first() {
        Some(first) => crate::linux::kernel::fork::copy_process_clone_vm(k, first.tid, comm, policy, prio, None, role),
        None => crate::linux::kernel::fork::copy_process(k, comm, policy, prio, None, role),
    };
    let th = Thread {
        def,
        ind,
        name,
        fork_id,
        tid,
        phase: 0,
        phase_loop: 0,
        thread_loop: 0,
        ev: 0,
        sub: 0,
        scratch: 0,
        ops: Vec::new(),
        ev_t0: 0,
        t_start: 0,
        t_first: 0,
        ld: LogData::default(),
        timers,
        cur_cpus: None,
        rows: Vec::new(),
        sum: RowSummary::default(),
        exited: false,
    };
    w.threads.push(th);
    w.live += 1;
    idx
}

pub fn start(w: &mut RtApp, k: &mut Kernel) {
    // Resources: one futex word per mutex and condition, homed on CPU 0 (rt-app's main
    // thread initialises them).
    let (nm, nc) = (w.mutexes.len(), w.conds.len());
    for i in 0..nm {
        let f = futex_alloc(k, 0, 0);
        w.mutexes[i] = f;
    }
    for i in 0..nc {
        let f = futex_alloc(k, 0, 0);
        w.conds[i].futex = f;
    }
    let defs: Vec<u32> = w.cfg.tasks.iter().map(|t| t.instance).collect();
    for (d, n) in defs.into_iter().enumerate() {
        for _ in 0..n {
            new_thread(w, k, d, None, (SCHED_NORMAL, 120));
        }
    }
    // pthread_barrier_init(&threads_barrier, NULL, nthreads): a futex word on main's CPU.
    w.start_barrier = futex_alloc(k, 0, 0);
    w.start_arrived = 0;
    let load = super::load_time(k, 0x27a9);
    w.main_start = load;
    w.t_zero = load;
    if let Some(d) = w.cfg.global.duration_s {
        let stop = load + d * NSEC_PER_SEC;
        w.stop_at = Some(stop);
        k.q.push(stop, Action::Program { what: super::FINISH });
    }
    k.q.push(load, Action::Program { what: 0 });
}

/// 0: rt-app's main creates every thread (`create_thread()`), from CPU 0.
pub fn on_action(w: &mut RtApp, k: &mut Kernel, _what: u32) {
    let tids: Vec<TaskId> = w.threads.iter().map(|t| t.tid).collect();
    for t in tids {
        super::spawn(k, 0, t);
    }
}

/// `loadwait(exec)` of rt-app 1.0: the loop count of its last (sub-second) burst.
fn loadwait_perf(exec_us: u64, p_load: u64) -> u64 {
    (exec_us % 1_000_000) * 1000 / p_load.max(1)
}

/// The thread exits: `pthread_exit()` -> `do_exit()`.
fn thread_exit(w: &mut RtApp, k: &mut Kernel, cpu: CpuId, s: &mut TaskFrame, ti: usize) -> Next {
    w.threads[ti].exited = true;
    w.live -= 1;
    if w.live == 0 {
        super::all_exited(k);
    }
    super::exit_current(k, cpu, s)
}

/// The policy call at a thread's start (rt-app 1.0 `thread_body()`): SCHED_FIFO/RR by
/// `pthread_setschedparam()` (`sched_setscheduler()`), SCHED_OTHER with a nonzero priority by
/// `setpriority()` (its nice); SCHED_OTHER at nice 0 makes no call. A forked thread (rt-app
/// after 1.0, `set_thread_param()`) always sets its policy, which it would otherwise inherit
/// from the thread that forked it. Returns the cost, syscall included.
fn thread_set_policy(w: &RtApp, k: &mut Kernel, cpu: CpuId, ti: usize) -> Time {
    use crate::linux::kernel::sched::rt::fifo_prio;
    use crate::linux::kernel::sched::syscalls::{__sched_setscheduler, set_user_nice};
    let th = &w.threads[ti];
    let t = &w.cfg.tasks[th.def];
    let (tid, forked) = (th.tid, th.fork_id.is_some());
    let syscall = k.costs.syscall;
    match t.policy {
        Policy::Fifo => syscall + __sched_setscheduler(k, cpu, tid, SCHED_FIFO, fifo_prio(t.priority)),
        Policy::Rr => syscall + __sched_setscheduler(k, cpu, tid, SCHED_RR, fifo_prio(t.priority)),
        Policy::Other if forked => syscall + __sched_setscheduler(k, cpu, tid, SCHED_NORMAL, 120 + t.priority),
        Policy::Other if t.priority != 0 => syscall + set_user_nice(k, cpu, tid, t.priority),
        Policy::Other => 0,
    }
}

/// Start the current phase: affinity if it changes (`set_thread_affinity()`), then the clock.
/// Returns the cost and whether the affinity call was made: rt-app reads the clock after that
/// call returns, which for a running task moved away is on its new CPU once it runs there
/// (`affine_move_task()` waits for the stopper's migration), so the caller takes the clock in
/// a later step ([`phase_clock`]).
fn phase_begin(w: &mut RtApp, k: &mut Kernel, cpu: CpuId, ti: usize) -> (Time, bool) {
    let nr = k.m.topo.nr_cpus;
    let (user_op, syscall) = (k.costs.user_op, k.costs.syscall);
    let th = &w.threads[ti];
    let def = &w.cfg.tasks[th.def];
    let want = def.phases[th.phase].cpus.clone().or_else(|| def.cpus.clone());
    let mut c = user_op;
    if want != th.cur_cpus {
        let tid = th.tid;
        w.threads[ti].cur_cpus = want.clone();
        let m = match &want {
            Some(v) => mask_of(v, nr),
            None => CpuMask::full(nr),
        };
        c += syscall + crate::linux::kernel::sched::syscalls::sched_setaffinity(k, cpu, tid, &m);
        return (c, true);
    }
    phase_clock(w, k, ti);
    (c, false)
}

/// The phase's `clock_gettime(t_start)` and its fresh log data.
fn phase_clock(w: &mut RtApp, k: &Kernel, ti: usize) {
    let now = k.now;
    let th = &mut w.threads[ti];
    th.t_start = now;
    th.ld = LogData::default();
    th.ev = 0;
    th.sub = 0;
}

/// End of the phase: log a row, advance the loops. Returns false when the thread is done.
fn phase_end(w: &mut RtApp, k: &mut Kernel, ti: usize) -> bool {
    let now = k.now;
    let t0 = w.main_start;
    let th = &w.threads[ti];
    let def = &w.cfg.tasks[th.def];
    let row = LogRow {
        ind: th.ind,
        perf: th.ld.perf,
        run: th.ld.duration,
        period: (now - th.t_start) / NSEC_PER_USEC,
        start: th.t_start / NSEC_PER_USEC,
        end: now / NSEC_PER_USEC,
        rel_st: th.t_start.saturating_sub(t0) / NSEC_PER_USEC,
        slack: th.ld.slack,
        c_duration: th.ld.c_duration,
        c_period: th.ld.c_period,
        wu_lat: th.ld.wu_lat,
    };
    let (nphases, ploop, tloop) = (def.phases.len(), def.phases[th.phase].loop_, def.loop_);
    let th = &mut w.threads[ti];
    th.sum.add(&row);
    if w.keep_rows {
        th.rows.push(row);
    }
    th.phase_loop += 1;
    if th.phase_loop == ploop {
        th.phase_loop = 0;
        th.phase += 1;
        if th.phase == nphases {
            th.phase = 0;
            th.thread_loop += 1;
        }
    }
    th.thread_loop != tloop
}

/// Begin event `ev` of the current phase: returns the next step, or None when it finished
/// within this step (its cost is then added to `cost`).
fn event_begin(
    w: &mut RtApp,
    k: &mut Kernel,
    cpu: CpuId,
    s: &mut TaskFrame,
    ti: usize,
    cost: &mut Time,
) -> Option<Next> {
    let now = k.now;
    let th = &w.threads[ti];
    let ev = w.evs[th.def][th.phase][th.ev];
    let p_load = w.p_load;
    let rt = k.tasks[k.curr(cpu) as usize].prio < crate::linux::kernel::sched::rt::MAX_RT_PRIO;
    let th = &mut w.threads[ti];
    th.ev_t0 = now;
    th.sub = 0;
    match ev {
        Ev::Run(us) => {
            th.ld.c_duration += us;
            th.ld.perf += loadwait_perf(us, p_load);
            s.user = true;
            Some(Next::Cont(*cost + us * NSEC_PER_USEC))
        }
        Ev::Runtime(us) => {
            th.ld.c_duration += us;
            th.ld.perf += loadwait_perf(32, p_load);
            s.user = true;
            Some(Next::Cont(*cost + 32 * NSEC_PER_USEC))
        }
        Ev::Sleep(us) => {
            Some(Next::Call(*cost + k.costs.user_op, Nanosleep::clock_nanosleep(us * NSEC_PER_USEC, false, rt)))
        }
        Ev::Timer { timer, period_us } => {
            let user_op = k.costs.user_op;
            let th = &mut w.threads[ti];
            let t_first = th.t_first;
            th.ld.c_period += period_us;
            let tm = match timer {
                TimerRef::Shared(i) => &mut w.timers[i],
                TimerRef::Unique(i) => &mut w.threads[ti].timers[i],
            };
            if !tm.init {
                tm.init = true;
                tm.t_next = t_first;
            }
            tm.t_next += period_us * NSEC_PER_USEC;
            let (t_next, relative) = (tm.t_next, tm.relative);
            // clock_gettime() (vDSO), then the slack rt-app logs.
            let slack = (t_next as i64 - now as i64) / 1000;
            let cumulative = w.cfg.global.cumulative_slack;
            let th = &mut w.threads[ti];
            th.ld.slack = if cumulative { th.ld.slack + slack } else { slack };
            *cost += user_op;
            if now < t_next {
                th.scratch = t_next as i64;
                th.sub = 1;
                return Some(Next::Call(*cost, Nanosleep::clock_nanosleep(t_next, true, rt)));
            }
            if relative {
                let tm = match timer {
                    TimerRef::Shared(i) => &mut w.timers[i],
                    TimerRef::Unique(i) => &mut w.threads[ti].timers[i],
                };
                tm.t_next = now;
            }
            w.threads[ti].ld.wu_lat = 0;
            None
        }
        Ev::Lock(m) => {
            th.ops = vec![Op::Lock(m)];
            Some(Next::Cont(*cost))
        }
        Ev::Unlock(m) => {
            th.ops = vec![Op::Unlock(m)];
            Some(Next::Cont(*cost))
        }
        Ev::Wait { cond, mutex } => {
            th.ops = vec![Op::CondWait { cond, mutex }];
            Some(Next::Cont(*cost))
        }
        Ev::Signal(c) => {
            th.ops = vec![Op::Signal(c)];
            Some(Next::Cont(*cost))
        }
        Ev::Broad(c) => {
            th.ops = vec![Op::Broad(c)];
            Some(Next::Cont(*cost))
        }
        Ev::Sync { cond, mutex } => {
            th.ops = vec![Op::Signal(cond), Op::CondWait { cond, mutex }];
            Some(Next::Cont(*cost))
        }
        Ev::Barrier(b) => {
            let bm = w.barriers[b].mutex;
            w.threads[ti].ops = vec![Op::Lock(bm), Op::BarrierCheck(b), Op::Unlock(bm)];
            Some(Next::Cont(*cost))
        }
        Ev::Suspend { cond, mutex } => {
            th.ops = vec![Op::Lock(mutex), Op::CondWait { cond, mutex }, Op::Unlock(mutex)];
            Some(Next::Cont(*cost))
        }
        Ev::Resume { cond, mutex } => {
            th.ops = vec![Op::Lock(mutex), Op::Broad(cond), Op::Unlock(mutex)];
            Some(Next::Cont(*cost))
        }
        Ev::Yield => {
            // sched_yield(): the class's yield_task() under the rq lock, then schedule().
            crate::linux::kernel::sched::syscalls::do_sched_yield(k, cpu);
            Some(Next::Call(*cost + k.costs.syscall, Frame::ScheduleCaller(ScheduleCaller::schedule())))
        }
        Ev::Mem(bytes) => {
            s.user = true;
            Some(Next::Cont(*cost + bytes.div_ceil(MEMSET_BYTES_PER_NS)))
        }
        Ev::Iorun(bytes) => {
            let buf = w.cfg.global.mem_buffer_size;
            let writes = bytes.div_ceil(buf);
            Some(Next::Cont(*cost + writes * k.costs.syscall))
        }
        Ev::Fork(def) => {
            if w.nforks[def] >= FORKS_LIMIT {
                let n = format!("task {} reached rt-app's fork limit ({FORKS_LIMIT})", w.cfg.tasks[def].name);
                if !w.notes.contains(&n) {
                    w.notes.push(n);
                }
                return None;
            }
            let fid = w.nforks[def];
            w.nforks[def] += 1;
            let me = &k.tasks[k.curr(cpu) as usize];
            let inherit = (me.policy, me.prio);
            let nt = new_thread(w, k, def, Some(fid), inherit);
            let tid = w.threads[nt].tid;
            crate::linux::kernel::sched::core::sched_fork_and_wake(k, cpu, tid);
            Some(Next::Cont(*cost + k.costs.syscall + PTHREAD_CREATE_NS))
        }
    }
}

/// The event in progress made its next step; finish it (`Ok(cost)`) or continue (`Err(next)`).
fn event_continue(w: &mut RtApp, k: &mut Kernel, cpu: CpuId, s: &mut TaskFrame, ti: usize) -> Result<Time, Next> {
    let now = k.now;
    let th = &w.threads[ti];
    let ev = w.evs[th.def][th.phase][th.ev];
    let p_load = w.p_load;
    match ev {
        Ev::Run(_) | Ev::Mem(_) => {
            let th = &mut w.threads[ti];
            if matches!(ev, Ev::Run(_)) {
                th.ld.duration += (now - th.ev_t0) / NSEC_PER_USEC;
            }
            Ok(k.costs.user_op)
        }
        Ev::Runtime(us) => {
            let th = &mut w.threads[ti];
            if (now - th.ev_t0) / NSEC_PER_USEC < us {
                th.ld.perf += loadwait_perf(32, p_load);
                s.user = true;
                return Err(Next::Cont(k.costs.user_op + 32 * NSEC_PER_USEC));
            }
            th.ld.duration += (now - th.ev_t0) / NSEC_PER_USEC;
            Ok(k.costs.user_op)
        }
        Ev::Timer { .. } => {
            let th = &mut w.threads[ti];
            if th.sub == 1 {
                th.ld.wu_lat += now.saturating_sub(th.scratch as Time) / NSEC_PER_USEC;
            }
            Ok(k.costs.user_op)
        }
        Ev::Sleep(_) | Ev::Yield | Ev::Iorun(_) | Ev::Fork(_) => Ok(0),
        _ => run_ops(w, k, cpu, ti),
    }
}

/// Run the event's user-level ops (locks and condition variables on futex words).
fn run_ops(w: &mut RtApp, k: &mut Kernel, cpu: CpuId, ti: usize) -> Result<Time, Next> {
    let Some(&op) = w.threads[ti].ops.first() else {
        return Ok(0);
    };
    let sub = w.threads[ti].sub;
    match op_step(w, k, cpu, ti, op, sub) {
        OpStep::Done(c) => {
            let th = &mut w.threads[ti];
            th.ops.remove(0);
            th.sub = 0;
            if th.ops.is_empty() {
                return Ok(c);
            }
            Err(Next::Cont(c))
        }
        OpStep::Replace(c, new) => {
            let th = &mut w.threads[ti];
            th.ops.splice(0..1, new);
            th.sub = 0;
            Err(Next::Cont(c))
        }
        OpStep::Next(sub, n) => {
            w.threads[ti].sub = sub;
            Err(n)
        }
    }
}

enum OpStep {
    /// The op finished after this cost.
    Done(Time),
    /// The op becomes these ops.
    Replace(Time, Vec<Op>),
    /// Go on at resume point `sub` after this step.
    Next(u8, Next),
}

fn op_step(w: &mut RtApp, k: &mut Kernel, cpu: CpuId, ti: usize, op: Op, sub: u8) -> OpStep {
    let atomic = |k: &mut Kernel, f: FutexId| -> Time {
        let line = k.futexes[f as usize].line;
        k.line_write(cpu, line) + k.costs.user_op
    };
    match op {
        Op::Lock(m) => {
            // lll_lock(): cmpxchg 0 -> 1; else xchg 2 and FUTEX_WAIT(2) until the xchg saw 0.
            let f = w.mutexes[m];
            let c = atomic(k, f);
            let old = k.futexes[f as usize].val;
            if sub == 0 && old == 0 {
                k.futexes[f as usize].val = 1;
                return OpStep::Done(c);
            }
            k.futexes[f as usize].val = 2;
            if old == 0 {
                return OpStep::Done(c);
            }
            OpStep::Next(1, Next::Call(c, FutexOp::wait(f, 2)))
        }
        Op::Unlock(m) => {
            // lll_unlock(): xchg 0; FUTEX_WAKE one if there were waiters (2).
            let f = w.mutexes[m];
            if sub == 1 {
                return OpStep::Done(0);
            }
            let c = atomic(k, f);
            let old = std::mem::replace(&mut k.futexes[f as usize].val, 0);
            if old == 2 {
                return OpStep::Next(1, Next::Call(c, FutexOp::wake(f, 1)));
            }
            OpStep::Done(c)
        }
        Op::CondWait { cond, mutex } => match sub {
            0 => {
                // Register, read the sequence, release the mutex.
                let cf = w.conds[cond].futex;
                let c = atomic(k, cf);
                w.conds[cond].waiters += 1;
                w.threads[ti].scratch = k.futexes[cf as usize].val;
                let mf = w.mutexes[mutex];
                let c = c + atomic(k, mf);
                let old = std::mem::replace(&mut k.futexes[mf as usize].val, 0);
                if old == 2 {
                    return OpStep::Next(1, Next::Call(c, FutexOp::wake(mf, 1)));
                }
                OpStep::Next(1, Next::Cont(c))
            }
            1 => {
                let cf = w.conds[cond].futex;
                let seq = w.threads[ti].scratch;
                OpStep::Next(2, Next::Call(k.costs.user_op, FutexOp::wait(cf, seq)))
            }
            _ => OpStep::Replace(k.costs.user_op, vec![Op::Lock(mutex)]),
        },
        Op::Signal(cnd) | Op::Broad(cnd) => {
            if sub == 1 {
                return OpStep::Done(0);
            }
            let cf = w.conds[cnd].futex;
            let c = atomic(k, cf);
            if w.conds[cnd].waiters == 0 {
                return OpStep::Done(c);
            }
            let nr = if matches!(op, Op::Signal(_)) {
                w.conds[cnd].waiters -= 1;
                1
            } else {
                w.conds[cnd].waiters = 0;
                u32::MAX
            };
            k.futexes[cf as usize].val += 1;
            OpStep::Next(1, Next::Call(c, FutexOp::wake(cf, nr)))
        }
        Op::BarrierCheck(b) => {
            let bs = w.barriers[b];
            if bs.waiting == 0 {
                return OpStep::Replace(k.costs.user_op, vec![Op::Broad(bs.cond)]);
            }
            w.barriers[b].waiting -= 1;
            OpStep::Replace(k.costs.user_op, vec![Op::CondWait { cond: bs.cond, mutex: bs.mutex }, Op::BarrierDone(b)])
        }
        Op::BarrierDone(b) => {
            w.barriers[b].waiting += 1;
            OpStep::Done(k.costs.user_op)
        }
    }
}

resume_points! {
    /// Where an rt-app thread resumes.
    enum ThreadAt {
        /// The thread's start: its name, its policy, `t_zero` (thread 0).
        Start,
        /// Arrive at the start barrier.
        Barrier,
        /// Woken from the start barrier's futex.
        BarrierWoken,
        /// Past the barrier: sleep until the thread's start delay has passed.
        Begin,
        /// Begin the current phase.
        Phase,
        /// Take the phase's start time after its affinity call returned.
        PhaseClock,
        /// Run the next event (or end the phase).
        Event,
        /// Continue the event in progress.
        InEvent,
        Exited = super::EXITED,
    }
}

pub fn task_step(w: &mut RtApp, k: &mut Kernel, cpu: CpuId, s: &mut TaskFrame) -> Next {
    // exit_to_user_mode_loop(): a syscall or interrupt return with NEED_RESCHED schedules.
    if crate::linux::kernel::sched::need_resched(k, cpu) {
        return Next::Call(0, Frame::ScheduleCaller(ScheduleCaller::schedule()));
    }
    let ti = s.task as usize;
    match ThreadAt::from_u8(s.at) {
        ThreadAt::Start => {
            // thread_body(): pthread_setname_np() (a prctl(PR_SET_NAME) syscall), the policy
            // line of the log (buffered), then the policy call.
            let (syscall, user_op) = (k.costs.syscall, k.costs.user_op);
            let mut c = syscall + user_op + thread_set_policy(w, k, cpu, ti);
            // The timing buffer's malloc() (user work, no page touched yet).
            c += user_op;
            let th = &w.threads[ti];
            if th.fork_id.is_some() {
                // A forked thread joins no barrier (rt-app after 1.0: `if (!data->forked)`).
                s.at = ThreadAt::Begin as u8;
                return Next::Cont(c);
            }
            if th.ind == 0 {
                // Only thread 0 sets t_zero (clock_gettime(), vDSO).
                w.t_zero = k.now + c;
                c += PHASE_CLOCKS_NS / 2;
            }
            s.at = ThreadAt::Barrier as u8;
            Next::Cont(c)
        }
        ThreadAt::Barrier => {
            // pthread_barrier_wait(&threads_barrier): an atomic increment of the arrivals; the
            // last arriver starts the next round and FUTEX_WAKEs every waiter, the others
            // FUTEX_WAIT on the round they read.
            let f = w.start_barrier;
            let c = k.line_write(cpu, k.futexes[f as usize].line) + k.costs.user_op;
            w.start_arrived += 1;
            let n = w.threads.iter().filter(|t| t.fork_id.is_none()).count() as u32;
            if w.start_arrived >= n {
                k.futexes[f as usize].val += 1;
                s.at = ThreadAt::Begin as u8;
                return Next::Call(c, FutexOp::wake(f, u32::MAX));
            }
            w.threads[ti].scratch = k.futexes[f as usize].val;
            s.at = ThreadAt::BarrierWoken as u8;
            Next::Call(c, FutexOp::wait(f, w.threads[ti].scratch))
        }
        ThreadAt::BarrierWoken => {
            // Back from FUTEX_WAIT: go on once the round moved (a wakeup that finds it
            // unchanged waits again).
            let f = w.start_barrier;
            let c = k.line_write(cpu, k.futexes[f as usize].line) + k.costs.user_op;
            let seq = w.threads[ti].scratch;
            if k.futexes[f as usize].val == seq {
                return Next::Call(c, FutexOp::wait(f, seq));
            }
            s.at = ThreadAt::Begin as u8;
            Next::Cont(c)
        }
        ThreadAt::Begin => {
            // t_first = t_zero (+ the task's delay, slept to as an absolute time); the log
            // header is buffered.
            let (delay, t0) = { (w.cfg.tasks[w.threads[ti].def].delay_us, w.t_zero) };
            let t_first = t0 + delay * NSEC_PER_USEC;
            w.threads[ti].t_first = t_first;
            s.at = ThreadAt::Phase as u8;
            if delay > 0 {
                let rt = k.tasks[k.curr(cpu) as usize].prio < crate::linux::kernel::sched::rt::MAX_RT_PRIO;
                return Next::Call(k.costs.user_op, Nanosleep::clock_nanosleep(t_first, true, rt));
            }
            Next::Cont(k.costs.user_op)
        }
        ThreadAt::Phase => {
            let (c, affinity) = phase_begin(w, k, cpu, ti);
            s.at = if affinity { ThreadAt::PhaseClock } else { ThreadAt::Event } as u8;
            Next::Cont(c)
        }
        ThreadAt::PhaseClock => {
            phase_clock(w, k, ti);
            s.at = ThreadAt::Event as u8;
            Next::Cont(0)
        }
        ThreadAt::Event => {
            let mut cost = 0;
            loop {
                let th = &w.threads[ti];
                if th.ev == w.evs[th.def][th.phase].len() {
                    if !phase_end(w, k, ti) {
                        return thread_exit(w, k, cpu, s, ti);
                    }
                    s.at = ThreadAt::Phase as u8;
                    // rt-app's own work between phases: the clocks and the log row. It is what
                    // makes a loop of zero-time events advance (rt-app spins, it does not refuse).
                    return Next::Cont(cost + w.phase_cost());
                }
                match event_begin(w, k, cpu, s, ti, &mut cost) {
                    Some(n) => {
                        s.at = ThreadAt::InEvent as u8;
                        return n;
                    }
                    None => {
                        cost += k.costs.user_op;
                        w.threads[ti].ev += 1;
                    }
                }
            }
        }
        ThreadAt::InEvent => {
            s.user = false;
            match event_continue(w, k, cpu, s, ti) {
                Ok(c) => {
                    w.threads[ti].ev += 1;
                    s.at = ThreadAt::Event as u8;
                    Next::Cont(c)
                }
                Err(n) => n,
            }
        }
        ThreadAt::Exited => unreachable!("rt-app thread ran after exit"),
    }
}

impl super::Program for RtApp {
    fn parse(_name: &str, p: &Params, m: &crate::hw::Machine) -> Result<RtApp, String> {
        p.check_known("rtapp", &["file", "logs"])?;
        let Some(f) = p.get("file") else {
            return Err(format!("{}: the rtapp workload needs file=PATH.json", p.origin));
        };
        let keep_rows = match p.get("logs") {
            None | Some("keep") => true,
            Some("summary") => false,
            Some(x) => {
                return Err(format!("{}: logs={x}: expected keep (every log row) or summary (per thread)", p.origin))
            }
        };
        Ok(RtApp { keep_rows, ..RtApp::from_file(f, m)? })
    }
    fn planned_size(&self, _nr_cpus: u32) -> (u64, u64, &'static str) {
        // Every instance, plus rt-app's fork limit for each instance that forks.
        let mut tasks = 0u64;
        for t in &self.cfg.tasks {
            let forks = t.phases.iter().flat_map(|p| &p.events).any(|e| matches!(e.ev, Event::Fork(_)));
            let per = if forks { 1 + u64::from(FORKS_LIMIT) } else { 1 };
            tasks = tasks.saturating_add(u64::from(t.instance).saturating_mul(per));
        }
        (tasks, 0, "the rt-app file's instances and forks, its log rows by its loops, duration and --limit-ms")
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
    fn metric(&self, _f: &super::RunFacts) -> super::Metric {
        // Mean wakeup latency after timers, over every logged phase.
        let mut all = RowSummary::default();
        self.threads.iter().for_each(|t| all.merge(&t.sum));
        let v = all.mean(all.wu_lat_sum as f64) / 1e3;
        super::Metric { name: "wakeup_latency", unit: "ms", lower_is_better: true, value: v }
    }
    fn json(&self, _f: &super::RunFacts) -> serde_json::Value {
        serde_json::json!({
            "name": "rtapp",
            "p_load_ns": self.p_load,
            "threads": self.threads.iter().map(|t| serde_json::json!({
                "name": t.name,
                "ind": t.ind,
                "forked": t.fork_id.is_some(),
                "log_file": self.log_file_name(t),
                "summary": t.sum.json(),
            })).collect::<Vec<_>>(),
            "notes": self.notes,
        })
    }
    fn text(&self, _f: &super::RunFacts) -> String {
        self.summary()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_lines_match_rt_app_format() {
        assert_eq!(
            log_header(),
            "#idx     perf      run   period           start             end          rel_st      slack c_duration   c_period     wu_lat"
        );
        let r = LogRow {
            ind: 0,
            perf: 92164,
            run: 19935,
            period: 98965,
            start: 504549567051,
            end: 504549666016,
            rel_st: 2443,
            slack: -78701,
            c_duration: 20000,
            c_period: 100000,
            wu_lat: 266,
        };
        assert_eq!(
            r.line(),
            "   0    92164    19935    98965    504549567051    504549666016            2443     -78701      20000     100000        266"
        );
    }

    #[test]
    fn loadwait_counts_the_last_burst() {
        assert_eq!(loadwait_perf(20000, 100), 200_000);
        assert_eq!(loadwait_perf(1_500_000, 1000), 500_000);
    }
}
