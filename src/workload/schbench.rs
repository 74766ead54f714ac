//! schbench (Chris Mason, masoncl/schbench @ 2eef447, 2021-12-03) as its threads behave
//! (docs/workloads.md §2.1): `m` message threads, each with `t` workers, all unpinned user
//! threads, talking through per-thread futex words.
//!
//! Worker loop: mark its futex BLOCKED and stamp `wake_time`; push itself on its message
//! thread's lock-free list (LIFO); `fpost` the message thread (a FUTEX_WAKE only if it was
//! BLOCKED); `fwait` on its own futex; spin 30 ms by the wall clock; record
//! `now - wake_time - cputime` (or 1) in its histogram.
//! Message thread loop: mark its futex BLOCKED; take the whole list and read the clock once
//! (T); for each worker, newest first, write T into its `wake_time` and `fpost` it; `fwait`;
//! spin 30 ms; `usleep(30000 + rand_r() % 7500)`.
//! Main thread: `sleep(1)` loop; the warmup reset after 5 s, cumulative reports every 10 s,
//! stop at the runtime; then the final percentile block.
//!
//! Timestamps are `gettimeofday()`: whole microseconds, floored.

use super::params::Params;
use super::schbench_stats::{rand_r, render_report, Histogram, MainLoop, SchbenchOpts, WARMUP_MESSAGE};
use super::TaskFrame;
use crate::limits::{MAX_SIM_NS, MAX_TASKS};
use crate::linux::engine::{Action, Next};
use crate::linux::kernel::futex::{futex_alloc, FutexId, FutexOp, Nanosleep};
use crate::linux::kernel::sched::WakePlacement;
use crate::linux::programs::resume_points;
use crate::linux::{CpuId, Kernel, TaskId};
use crate::sim::{Time, NSEC_PER_MSEC, NSEC_PER_SEC, NSEC_PER_USEC};

const BLOCKED: i64 = 0;
const RUNNING: i64 = 1;

/// A message thread.
#[derive(Debug, Clone)]
pub struct MsgThread {
    pub task: TaskId,
    pub futex: FutexId,
    /// The lock-free list of waiting workers (pushed at the end, taken whole).
    pub list: Vec<usize>,
    /// The batch taken from the list, in wake order (newest first), and the stamp T.
    pub batch: Vec<usize>,
    pub batch_t_us: u64,
    /// `rand_r` seed (the thread's id).
    pub seed: u32,
    /// The list line (the message thread's own record).
    pub line: crate::hw::cacheline::LineId,
    /// The final wake on stop has been done this many times.
    pub stop_wakes: u8,
}

/// A worker thread.
#[derive(Debug, Clone)]
pub struct Worker {
    pub task: TaskId,
    pub futex: FutexId,
    pub msg: usize,
    pub wake_time_us: u64,
    pub hist: Histogram,
}

/// Samples at or above this many microseconds count as the tail in [`TailCauses`].
pub const TAIL_US: u64 = 1000;

/// Why the tail samples (>= [`TAIL_US`]) were late: what the wakeup before the sample found
/// on its target CPU (`WakePlacement`) when most of the delay came before the worker first
/// ran, or a preemption during its spin otherwise. Counted over the same window as the
/// histogram (reset at the warmup). The simulator's own attribution, not schbench output.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TailCauses {
    /// Sent to an idle CPU that already had another wakee pending, with other CPUs idle.
    pub stacked: u64,
    /// The same with no idle CPU left in the LLC (overflow).
    pub stacked_none_left: u64,
    /// Sent to a CPU running a task.
    pub busy_target: u64,
    /// Sent to an idle CPU of its own, and still late to run.
    pub idle_target: u64,
    /// Ran promptly, then lost its CPU while spinning.
    pub preempted_in_spin: u64,
}

impl TailCauses {
    pub fn total(&self) -> u64 {
        self.stacked + self.stacked_none_left + self.busy_target + self.idle_target + self.preempted_in_spin
    }

    /// The total, then each cause, as (JSON key, table column, count): the one place the
    /// outputs (`run`, `reproduce schbench-ttwu`, both `--json`) take their names from.
    pub fn rows(&self) -> [(&'static str, &'static str, u64); 6] {
        [
            ("total", "tail samples", self.total()),
            ("stacked_idle_cpu_left", "stacked (idle CPU left)", self.stacked),
            ("stacked_no_idle_cpu", "stacked (none left)", self.stacked_none_left),
            ("onto_busy_cpu", "onto a busy CPU", self.busy_target),
            ("onto_own_idle_cpu", "onto its own idle CPU", self.idle_target),
            ("preempted_while_spinning", "preempted in spin", self.preempted_in_spin),
        ]
    }

    fn note(&mut self, lat_us: u64, wake_to_run_ns: Time, placement: WakePlacement) {
        if lat_us < TAIL_US {
            return;
        }
        let c = if wake_to_run_ns / NSEC_PER_USEC * 2 < lat_us {
            &mut self.preempted_in_spin
        } else {
            match placement {
                WakePlacement::IdleStacked => &mut self.stacked,
                WakePlacement::IdleStackedNoneLeft => &mut self.stacked_none_left,
                WakePlacement::Busy => &mut self.busy_target,
                WakePlacement::Idle | WakePlacement::None => &mut self.idle_target,
            }
        };
        *c += 1;
    }
}

/// Run state and results.
#[derive(Debug, Clone)]
pub struct Schbench {
    pub o: SchbenchOpts,
    pub main_task: TaskId,
    pub msgs: Vec<MsgThread>,
    pub workers: Vec<Worker>,
    pub stopping: bool,
    pub start_ns: Time,
    pub main_loop: MainLoop,
    /// What schbench printed (stderr), in order.
    pub output: String,
    /// The final combined histogram (after the run).
    pub final_hist: Option<Histogram>,
    /// Why its tail samples were late (same window as the histogram).
    pub tail: TailCauses,
    pub live: u32,
}

impl Schbench {
    pub fn new(o: SchbenchOpts) -> Result<Schbench, String> {
        if o.rps_mode() || o.pipe_bytes > 0 || o.operations > 0 || o.autobench || o.auto_rps > 0 {
            return Err("schbench: only the default spin mode is modelled (no -R, -p, -n, -a, -A)".into());
        }
        if o.runtime_s == 0 {
            return Err("schbench: -r 0 (run forever) cannot be simulated; give a runtime".into());
        }
        // The main thread, the message threads and their workers.
        let tasks = o.message_threads.saturating_mul(o.worker_threads.saturating_add(1)).saturating_add(1);
        if tasks > MAX_TASKS {
            return Err(format!(
                "schbench: -m {} x -t {} make {tasks} tasks; schedsim allows at most {MAX_TASKS}",
                o.message_threads, o.worker_threads
            ));
        }
        if o.runtime_s.saturating_add(o.warmup_s).saturating_mul(NSEC_PER_SEC) > MAX_SIM_NS {
            return Err(format!(
                "schbench: -r {} (with -w {}) is longer than schedsim simulates: at most {} s",
                o.runtime_s,
                o.warmup_s,
                MAX_SIM_NS / NSEC_PER_SEC
            ));
        }
        let ml = MainLoop::new(&o);
        Ok(Schbench {
            o,
            main_task: 0,
            msgs: Vec::new(),
            workers: Vec::new(),
            stopping: false,
            start_ns: 0,
            main_loop: ml,
            output: String::new(),
            final_hist: None,
            tail: TailCauses::default(),
            live: 0,
        })
    }

    /// The combined histogram as schbench's `combine_stats()` builds it: workers in creation
    /// order.
    pub fn combined(&self) -> Histogram {
        let mut h = Histogram::new();
        for w in &self.workers {
            h.merge(&w.hist);
        }
        h
    }
}

#[inline]
fn now_us(k: &Kernel) -> u64 {
    k.now / NSEC_PER_USEC
}

/// Create the threads: main, then each message thread followed by its workers, woken from
/// CPU 0 at a seed-dependent instant after 1 ms.
pub fn start(w: &mut Schbench, k: &mut Kernel) {
    let (m, t) = { (w.o.message_threads as usize, w.o.worker_threads as usize) };
    let mk = |k: &mut Kernel, comm: &str, role: u32| {
        crate::linux::kernel::fork::copy_process(k, comm.to_string(), 0, 120, None, role)
    };
    let main_task = mk(k, "schbench", 0);
    // The message threads and workers are pthreads of main's process.
    let mk = |k: &mut Kernel, comm: &str, role: u32| {
        crate::linux::kernel::fork::copy_process_clone_vm(k, main_task, comm.to_string(), 0, 120, None, role)
    };
    let mut msgs = Vec::new();
    let mut workers = Vec::new();
    for mi in 0..m {
        let task = mk(k, "schbench", 1 + mi as u32);
        let futex = futex_alloc(k, 0, BLOCKED);
        let line = k.lines.alloc(0);
        let seed = k.tasks[task as usize].pid;
        msgs.push(MsgThread {
            task,
            futex,
            list: Vec::new(),
            batch: Vec::new(),
            batch_t_us: 0,
            seed,
            line,
            stop_wakes: 0,
        });
    }
    for mi in 0..m {
        for _ in 0..t {
            let role = 1 + m as u32 + workers.len() as u32;
            let task = mk(k, "schbench", role);
            let futex = futex_alloc(k, 0, BLOCKED);
            workers.push(Worker { task, futex, msg: mi, wake_time_us: 0, hist: Histogram::new() });
        }
    }
    let tick = k.tick_nsec();
    let mut r = crate::sim::Prng::new(k.cpus[0].rng.next_u64(), 0x5CB);
    let load = k.measure_from + NSEC_PER_MSEC + r.range(0, tick - 1);
    w.main_task = main_task;
    w.live = (1 + msgs.len() + workers.len()) as u32;
    w.msgs = msgs;
    w.workers = workers;
    w.start_ns = load;
    k.q.push(load, Action::Program { what: 0 });
}

/// Wake all threads (pthread_create -> wake_up_new_task with fork balancing).
pub fn on_action(w: &mut Schbench, k: &mut Kernel, _what: u32) {
    let mut all = vec![w.main_task];
    all.extend(w.msgs.iter().map(|m| m.task));
    all.extend(w.workers.iter().map(|w| w.task));
    for t in all {
        super::spawn(k, 0, t);
    }
}

/// Exit the current thread (`pthread_exit` -> do_exit -> schedule()).
fn exit_thread(w: &mut Schbench, k: &mut Kernel, cpu: CpuId, s: &mut TaskFrame) -> Next {
    // A thread of schbench's process: the group lives on until its last thread.
    let last = w.live == 1;
    let dead = crate::linux::kernel::exit::do_exit_unwaited(k, cpu, last);
    w.live -= 1;
    if w.live == 0 {
        let h = w.combined();
        let runtime = w.o.runtime_s;
        w.output.push_str(&render_report(&h, runtime));
        w.final_hist = Some(h);
        super::all_exited(k);
    }
    s.at = super::EXITED;
    Next::Call(0, dead)
}

/// Cost of a user-space atomic (cmpxchg/xchg) on `line`.
fn user_atomic(k: &mut Kernel, cpu: CpuId, line: crate::hw::cacheline::LineId) -> Time {
    k.line_write(cpu, line) + k.costs.user_op
}

/// Spin until the wall clock passes `cputime` whole microseconds after now (schbench's
/// `usec_spin`: loop while `now - start <= cputime`).
fn spin(k: &mut Kernel, s: &mut TaskFrame, cputime_us: u64) -> Next {
    let start_us = now_us(k);
    let end = (start_us + cputime_us + 1) * NSEC_PER_USEC;
    s.spin_until = end;
    s.user = true;
    Next::Cont(end.saturating_sub(k.now))
}

/// One step of a schbench thread.
pub fn task_step(w: &mut Schbench, k: &mut Kernel, cpu: CpuId, s: &mut TaskFrame) -> Next {
    s.spin_until = 0;
    let m = w.msgs.len() as u32;
    if s.task == 0 {
        main_step(w, k, cpu, s)
    } else if s.task <= m {
        msg_step(w, k, cpu, s, (s.task - 1) as usize)
    } else {
        worker_step(w, k, cpu, s, (s.task - 1 - m) as usize)
    }
}

resume_points! {
    /// Where schbench's main thread resumes.
    enum MainAt {
        /// Once a second: report, reset after warm-up, stop at the end of the run.
        Loop,
        /// Back from `sleep(1)`.
        Slept,
        /// Stopping: post every message thread, then exit.
        Stop,
        Exited = super::EXITED,
    }
}

resume_points! {
    /// Where a schbench message thread resumes.
    enum MsgAt {
        /// M1: mark our futex BLOCKED.
        Block,
        /// M2: take the list of waiting workers.
        TakeList,
        /// M3: stamp and post each worker of the batch.
        PostBatch,
        /// M4: fwait (or start stopping).
        Wait,
        /// M5: spin.
        Spin,
        /// M6: usleep.
        Sleep,
        /// Stopping: post every worker of this message thread, then exit.
        PostStop,
        Exited = super::EXITED,
    }
}

resume_points! {
    /// Where a schbench worker resumes.
    enum WorkerAt {
        /// Mark BLOCKED and queue on the message thread's list (or exit when stopping).
        Queue,
        /// fpost the message thread.
        PostMsg,
        /// fwait for our turn.
        Wait,
        /// Spin.
        Spin,
        /// Record the wakeup latency.
        Record,
        Exited = super::EXITED,
    }
}

fn main_step(w: &mut Schbench, k: &mut Kernel, cpu: CpuId, s: &mut TaskFrame) -> Next {
    match MainAt::from_u8(s.at) {
        MainAt::Loop => {
            let elapsed_us = (k.now - w.start_ns) / NSEC_PER_USEC;
            let a = w.main_loop.tick(elapsed_us);
            if a.warmup_reset || a.zero_reset {
                for wk in &mut w.workers {
                    wk.hist.reset();
                }
                w.tail = TailCauses::default();
                if a.warmup_reset {
                    w.output.push_str(WARMUP_MESSAGE);
                }
            }
            if let Some(rt) = a.report_runtime_s {
                let h = w.combined();
                w.output.push_str(&render_report(&h, rt));
            }
            if a.stop {
                w.stopping = true;
                s.i = 0;
                s.at = MainAt::Stop as u8;
                return Next::Cont(k.costs.user_op);
            }
            s.at = MainAt::Slept as u8;
            // sleep(1): nanosleep with the task's timer slack.
            Next::Call(k.costs.user_op, Nanosleep::with_timer_slack(NSEC_PER_SEC))
        }
        MainAt::Slept => {
            s.at = MainAt::Loop as u8;
            Next::Cont(0)
        }
        MainAt::Stop => {
            // Post every message thread, then join (the main thread's exit ends nothing).
            let i = s.i as usize;
            if i >= w.msgs.len() {
                return exit_thread(w, k, cpu, s);
            }
            s.i += 1;
            let f = w.msgs[i].futex;
            fpost(k, cpu, f)
        }
        MainAt::Exited => unreachable!("schbench main ran after exit"),
    }
}

/// `fpost()`: CAS BLOCKED -> RUNNING, and FUTEX_WAKE one waiter only if that succeeded.
fn fpost(k: &mut Kernel, cpu: CpuId, f: FutexId) -> Next {
    let line = k.futexes[f as usize].line;
    let c = user_atomic(k, cpu, line);
    if k.futexes[f as usize].val == BLOCKED {
        k.futexes[f as usize].val = RUNNING;
        return Next::Call(c, FutexOp::wake(f, 1));
    }
    Next::Cont(c)
}

/// One try of `fwait()`: CAS RUNNING -> BLOCKED returns; otherwise FUTEX_WAIT(BLOCKED).
/// Returns `None` when the wait is over.
fn fwait(k: &mut Kernel, cpu: CpuId, f: FutexId) -> Result<Time, Next> {
    let line = k.futexes[f as usize].line;
    let c = user_atomic(k, cpu, line);
    if k.futexes[f as usize].val == RUNNING {
        k.futexes[f as usize].val = BLOCKED;
        return Ok(c);
    }
    Err(Next::Call(c, FutexOp::wait(f, BLOCKED)))
}

fn msg_step(w: &mut Schbench, k: &mut Kernel, cpu: CpuId, s: &mut TaskFrame, mi: usize) -> Next {
    match MsgAt::from_u8(s.at) {
        MsgAt::Block => {
            // M1: mark our futex BLOCKED (a plain store).
            let f = w.msgs[mi].futex;
            k.futexes[f as usize].val = BLOCKED;
            let line = k.futexes[f as usize].line;
            let c = k.line_write(cpu, line);
            s.at = MsgAt::TakeList as u8;
            Next::Cont(c + k.costs.user_op)
        }
        MsgAt::TakeList => {
            // M2: take the whole list (xchg with NULL), then read the clock once.
            let line = w.msgs[mi].line;
            let c = user_atomic(k, cpu, line);
            let t = now_us(k);
            let msg = &mut w.msgs[mi];
            let mut batch = std::mem::take(&mut msg.list);
            batch.reverse(); // a stack: newest first
            msg.batch = batch;
            msg.batch_t_us = t;
            s.i = 0;
            s.at = MsgAt::PostBatch as u8;
            Next::Cont(c + k.costs.user_op)
        }
        MsgAt::PostBatch => {
            // M3: stamp and post each worker of the batch.
            let msg = &w.msgs[mi];
            let i = s.i as usize;
            if i >= msg.batch.len() {
                s.at = MsgAt::Wait as u8;
                return Next::Cont(0);
            }
            s.i += 1;
            let wi = msg.batch[i];
            let t = msg.batch_t_us;
            w.workers[wi].wake_time_us = t;
            let f = w.workers[wi].futex;
            fpost(k, cpu, f)
        }
        MsgAt::Wait => {
            if w.stopping {
                // Wake the list again, post every worker, then exit.
                let msg = &mut w.msgs[mi];
                if msg.stop_wakes < 1 {
                    msg.stop_wakes += 1;
                    s.at = MsgAt::TakeList as u8;
                    return Next::Cont(0);
                }
                s.i = 0;
                s.at = MsgAt::PostStop as u8;
                return Next::Cont(0);
            }
            // M4: fwait.
            let f = w.msgs[mi].futex;
            match fwait(k, cpu, f) {
                Ok(c) => {
                    s.at = MsgAt::Spin as u8;
                    Next::Cont(c)
                }
                Err(call) => call, // FUTEX_WAIT, then try again
            }
        }
        MsgAt::Spin => {
            // M5: spin.
            s.at = MsgAt::Sleep as u8;
            let cpu_us = w.o.message_cputime_usec;
            spin(k, s, cpu_us)
        }
        MsgAt::Sleep => {
            // M6: usleep(sleeptime + rand_r(seed) % (sleeptime / 4)).
            let sleep = w.o.sleeptime_usec;
            let jitter = if sleep >= 4 { rand_r(&mut w.msgs[mi].seed) as u64 % (sleep / 4) } else { 0 };
            s.at = MsgAt::Block as u8;
            if sleep == 0 {
                return Next::Cont(0);
            }
            Next::Call(k.costs.user_op, Nanosleep::with_timer_slack((sleep + jitter) * NSEC_PER_USEC))
        }
        MsgAt::PostStop => {
            // Stop: post every worker of this message thread, then exit.
            let first = w.workers.iter().position(|w| w.msg == mi).unwrap_or(0);
            let n = w.o.worker_threads as usize;
            let i = s.i as usize;
            if i >= n {
                return exit_thread(w, k, cpu, s);
            }
            s.i += 1;
            let f = w.workers[first + i].futex;
            fpost(k, cpu, f)
        }
        MsgAt::Exited => unreachable!("schbench message thread ran after exit"),
    }
}

fn worker_step(w: &mut Schbench, k: &mut Kernel, cpu: CpuId, s: &mut TaskFrame, wi: usize) -> Next {
    match WorkerAt::from_u8(s.at) {
        WorkerAt::Queue => {
            if w.stopping {
                return exit_thread(w, k, cpu, s);
            }
            // Mark BLOCKED, stamp wake_time, push on the message thread's list.
            let t = now_us(k);
            let (f, mi) = {
                let w = &mut w.workers[wi];
                w.wake_time_us = t;
                (w.futex, w.msg)
            };
            k.futexes[f as usize].val = BLOCKED;
            let fl = k.futexes[f as usize].line;
            let mut c = k.line_write(cpu, fl);
            let ll = w.msgs[mi].line;
            c += user_atomic(k, cpu, ll);
            w.msgs[mi].list.push(wi);
            s.at = WorkerAt::PostMsg as u8;
            Next::Cont(c + 2 * k.costs.user_op)
        }
        WorkerAt::PostMsg => {
            // fpost the message thread.
            let mi = w.workers[wi].msg;
            let f = w.msgs[mi].futex;
            s.at = WorkerAt::Wait as u8;
            fpost(k, cpu, f)
        }
        WorkerAt::Wait => {
            if w.stopping {
                s.at = WorkerAt::Spin as u8;
                return Next::Cont(0);
            }
            let f = w.workers[wi].futex;
            match fwait(k, cpu, f) {
                Ok(c) => {
                    s.at = WorkerAt::Spin as u8;
                    Next::Cont(c)
                }
                Err(call) => call,
            }
        }
        WorkerAt::Spin => {
            s.at = WorkerAt::Record as u8;
            let c = w.o.cputime_usec;
            spin(k, s, c)
        }
        WorkerAt::Record => {
            // Record now - wake_time (less the spin) in our histogram.
            let t = now_us(k);
            let tid = w.workers[wi].task as usize;
            let (wake_to_run, placement) = (k.tasks[tid].wake_to_run_ns, k.tasks[tid].wake_placement);
            let delta = t.saturating_sub(w.workers[wi].wake_time_us);
            if let Some(lat) = w.o.recorded_latency(delta) {
                w.workers[wi].hist.add(lat);
                w.tail.note(lat, wake_to_run, placement);
            }
            s.at = WorkerAt::Queue as u8;
            Next::Cont(k.costs.user_op)
        }
        WorkerAt::Exited => unreachable!("schbench worker ran after exit"),
    }
}

impl super::Program for Schbench {
    fn parse(_name: &str, p: &Params, _m: &crate::hw::Machine) -> Result<Schbench, String> {
        p.check_known("schbench", &["args"])?;
        let args = p.get("args").unwrap_or("");
        let argv: Vec<&str> = args.split_whitespace().collect();
        let o = super::schbench_stats::SchbenchOpts::parse(&argv).map_err(|e| format!("{}: {e}", p.origin))?;
        Schbench::new(o)
    }
    fn own_args(words: &[String]) -> Option<Vec<(String, String)>> {
        Some(vec![("args".into(), words.join(" "))])
    }
    const OWN_ARGS_EXAMPLE: &'static str = "-- -m 2 -t 16";
    fn planned_size(&self, _nr_cpus: u32) -> (u64, u64, &'static str) {
        let workers = self.o.message_threads.saturating_mul(self.o.worker_threads);
        let tasks = self.o.message_threads.saturating_add(workers).saturating_add(1);
        // Each worker's latency histogram, kept twice (the run's and the result's copy).
        let hist = 2 * (super::schbench_stats::PLAT_NR * std::mem::size_of::<u32>()) as u64;
        (tasks, workers.saturating_mul(hist), "schbench -m x -t")
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
        let v = self.final_hist.as_ref().map_or(0, |h| h.percentile(990)) as f64;
        super::Metric { name: "p99_wakeup", unit: "us", lower_is_better: true, value: v }
    }
    fn json(&self, _f: &super::RunFacts) -> serde_json::Value {
        let h = self.final_hist.clone().unwrap_or_else(|| self.combined());
        let mut tail: serde_json::Map<String, serde_json::Value> =
            self.tail.rows().iter().map(|(key, _, n)| (key.to_string(), serde_json::json!(n))).collect();
        tail.insert("threshold_us".into(), serde_json::json!(TAIL_US));
        let pct: serde_json::Map<String, serde_json::Value> = super::schbench_stats::PERCENTILES
            .iter()
            .map(|p| (format!("{}", p.permille as f64 / 10.0), serde_json::json!(h.percentile(p.permille))))
            .collect();
        serde_json::json!({
            "name": "schbench",
            "samples": h.nr_samples(),
            "percentiles_us": pct,
            "min_us": h.min(),
            "max_us": h.max(),
            "tail_samples": tail,
            "output": self.output,
        })
    }
    fn text(&self, _f: &super::RunFacts) -> String {
        let mut o = self.output.clone();
        let rows = self.tail.rows();
        let causes: Vec<String> = rows[1..].iter().map(|(_, label, n)| format!("{label} {n}")).collect();
        o.push_str(&format!(
            "\nschedsim: {} samples of {} us or more, by what the wakeup found on its target CPU: {}\n",
            rows[0].2,
            TAIL_US,
            causes.join(", ")
        ));
        o
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tail_samples_are_attributed_by_where_the_delay_was() {
        let mut t = TailCauses::default();
        // Below the threshold: not counted.
        t.note(TAIL_US - 1, 5_000_000, WakePlacement::IdleStacked);
        assert_eq!(t.total(), 0);
        // Most of a 12.5 ms sample spent before first running: the placement decides.
        t.note(12_500, 12_400_000, WakePlacement::IdleStacked);
        t.note(12_500, 12_400_000, WakePlacement::IdleStackedNoneLeft);
        t.note(3_000, 2_900_000, WakePlacement::Busy);
        t.note(3_000, 2_900_000, WakePlacement::Idle);
        // Ran after 4 us, late anyway: it lost the CPU while spinning.
        t.note(3_000, 4_000, WakePlacement::IdleStacked);
        assert_eq!(
            t,
            TailCauses { stacked: 1, stacked_none_left: 1, busy_target: 1, idle_target: 1, preempted_in_spin: 1 }
        );
        assert_eq!(t.total(), 5);
    }
}
