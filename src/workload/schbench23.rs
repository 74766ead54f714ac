//! schbench as rewritten in 2023 (Chris Mason, masoncl/schbench @ 48aed1d, 2023-04-21), the
//! version LKP ran for Chen Yu's 2024 matrix, as its threads behave (docs/workloads.md section 2.2).
//! Its options, main loop and report text are [`super::schbench23_stats`]; the histogram is
//! the 2021 version's ([`super::schbench_stats::Histogram`]).
//!
//! Threads (all unpinned, one process): `main`; `m` message threads, which `main` creates;
//! `t` workers per message thread, which their message thread creates.
//!
//! Worker loop (`worker_thread()`): `msg_and_wait()` marks its futex BLOCKED, stamps
//! `wake_time`, pushes itself on its message thread's lock-free list and posts the message
//! thread (`fpost`: a FUTEX_WAKE only if that thread's word was BLOCKED), then waits on its own
//! futex (`fwait`) and records `now - wake_time` as its wakeup latency (`wake_time` was
//! overwritten by the message thread's stamp when it posted us). The request: take
//! `work_start`, `usleep(100)` (a nanosleep with the task's 50 us timer slack), then
//! `do_work()`: take the per-CPU lock of the CPU it runs on (`lock_this_cpu()`: spin on
//! `pthread_mutex_trylock()` with `rep;nop`; if it moved to another CPU meanwhile, unlock and
//! start again), `-n` naive multiplications of `-F`-sized matrices, unlock; record
//! `now - work_start` as the request latency and count the request (`loop_count`).
//!
//! Message thread loop (`run_msg_thread()`): mark its futex BLOCKED, take the whole list and
//! read the clock once, stamp and post every worker on it (newest first), then `fwait`. On
//! stop: one more pass over the list, then post and join each worker.
//!
//! Main thread (`sleep_for_runtime()`): a round a second (`sleep(1)`), each taking a
//! requests-per-second sample and, every `-i` seconds, printing the three blocks; then it posts
//! and joins each message thread and prints the final blocks and `average rps`.
//!
//! Also modelled: `-R` (`run_rps_thread()`: the message thread queues requests to the workers
//! round-robin and sleeps every 8, a second's worth per round; workers take their whole
//! request list and run each), `-p` (pipe mode: each side `memset()`s the transfer size into
//! the worker's page per message, no usleep and no matrix work), `-C` (the usleep before
//! `work_start`, no lock) and `-L` (no lock). Not modelled: `-A` (it reads `/proc/stat`),
//! refused with an error.
//!
//! Costs: timestamps are `gettimeofday()` (whole microseconds, floored; a vDSO read, `user_op`);
//! atomics on a line pay its transfer (`line_write`) and `user_op`; the matrix work is CPU time
//! measured on this project's host ([`MATH_PS_PER_MULADD`]); `pthread_create()` and `memset()`
//! are rt-app's measured costs (`super::rtapp`). What is simplified: the matrices' cache state
//! (the work takes the same CPU time after a migration), the reads `main` makes of every
//! worker's counters and histograms (uncharged beyond `user_op` each), `malloc()`/`free()`.

use super::params::Params;
use super::rtapp::{MEMSET_BYTES_PER_NS, PTHREAD_CREATE_NS};
use super::schbench23_stats::{
    render_final, render_pipe_final, render_three, MainLoop23, Schbench23Opts, WARMUP_MESSAGE,
};
use super::schbench_stats::Histogram;
use super::TaskFrame;
use crate::hw::cacheline::LineId;
use crate::limits::{MAX_SIM_NS, MAX_TASKS};
use crate::linux::engine::{Action, Next, WaitOn};
use crate::linux::kernel::exit::DoExit;
use crate::linux::kernel::futex::{futex_alloc, FutexId, FutexOp, Nanosleep};
use crate::linux::kernel::sched::core::sched_fork_and_wake;
use crate::linux::kernel::sched::need_resched;
use crate::linux::programs::resume_points;
use crate::linux::{CpuId, Kernel, TaskId};
use crate::sim::{Time, NSEC_PER_SEC, NSEC_PER_USEC};

const BLOCKED: i64 = 0;
const RUNNING: i64 = 1;

/// CPU time of one multiply-add of `do_some_math()`'s inner loop, in picoseconds, measured on
/// this project's host (docs/costs.md, "Workload costs (schbench 2023)"): 48aed1d built as its
/// Makefile builds it (gcc -O2), run in its calibration mode.
pub const MATH_PS_PER_MULADD: u64 = 470;

/// `usleep(100)` of every request.
pub const REQUEST_USLEEP_NS: Time = 100 * NSEC_PER_USEC;

/// The size of glibc's `pthread_mutex_t` on x86-64 (40 bytes), padded by
/// `__attribute__((aligned))` to 48: the per-CPU locks are packed 4 to 3 cache lines, so
/// neighbouring CPUs' locks share lines. (The array's placement within its first line is
/// not known; it is taken as line-aligned.)
pub const LOCK_STRIDE_BYTES: u64 = 48;

/// The per-thread fields of `struct stats` besides its buckets, folded as `combine_stats()`
/// folds them (their buckets are summed in one [`Histogram`] per statistic: a sum does not
/// depend on the order; `min` does).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Summary {
    pub nr_samples: u64,
    pub min: u32,
    pub max: u32,
}

impl Summary {
    /// `add_lat()`'s bookkeeping (`min == 0` means unset).
    fn add(&mut self, us: u32) {
        if us > self.max {
            self.max = us;
        }
        if self.min == 0 || us < self.min {
            self.min = us;
        }
        self.nr_samples += 1;
    }

    /// `combine_stats(self, o)` for these fields.
    fn merge(&mut self, o: &Summary) {
        self.nr_samples += o.nr_samples;
        if o.max > self.max {
            self.max = o.max;
        }
        if self.min == 0 || o.min < self.min {
            self.min = o.min;
        }
    }
}

/// One of the two per-worker latency statistics: every worker's buckets summed, and each
/// worker's own count, min and max.
#[derive(Debug, Clone)]
pub struct LatStats {
    pub buckets: Histogram,
    pub per_worker: Vec<Summary>,
}

impl LatStats {
    fn new(workers: usize) -> Self {
        LatStats { buckets: Histogram::new(), per_worker: vec![Summary::default(); workers] }
    }

    /// `add_lat(&worker->stats, us)` (the value truncated to `unsigned int`).
    fn add(&mut self, worker: usize, us: u64) {
        let us = us as u32;
        self.buckets.add(us as u64);
        self.per_worker[worker].add(us);
    }

    /// `combine_message_thread_stats()` into a zeroed `struct stats`: workers in creation
    /// order.
    pub fn combined(&self) -> Histogram {
        let mut s = Summary::default();
        for w in &self.per_worker {
            s.merge(w);
        }
        self.buckets.clone().with_summary(s.nr_samples, s.min, s.max)
    }

    fn reset(&mut self) {
        self.buckets.reset();
        self.per_worker.iter_mut().for_each(|s| *s = Summary::default());
    }
}

/// A message thread.
#[derive(Debug, Clone)]
pub struct Msg23 {
    pub task: TaskId,
    /// Its futex word; the same line holds its list head (`thread_data->next`).
    pub futex: FutexId,
    /// Its `pthread` tid word, cleared and woken at its exit (`pthread_join()` waits on it).
    pub tid: FutexId,
    /// Workers pushed on its list, oldest first (the list is a stack).
    pub list: Vec<usize>,
    /// The batch taken from the list, in wake order (newest first), and its stamp.
    pub batch: Vec<usize>,
    pub batch_t_us: u64,
    /// RPS mode: the next worker to get a request (`cur_tid`), and the round's start.
    pub cur_tid: u64,
    pub round_start_us: u64,
}

/// A worker thread.
#[derive(Debug, Clone)]
pub struct Worker23 {
    pub task: TaskId,
    /// Its futex word; the same line holds `next`, `request` and `wake_time`.
    pub futex: FutexId,
    pub tid: FutexId,
    pub msg: usize,
    pub wake_time_us: u64,
    pub work_start_us: u64,
    /// `gettimeofday()` at the thread's start, and `td->runtime` (us since then, as of its
    /// last request).
    pub start_us: u64,
    pub runtime_us: u64,
    pub loop_count: u64,
    /// RPS mode: requests queued on it (`td->request`), and `td->pending`.
    pub queued: u64,
    pub pending: u64,
    /// The per-CPU lock `lock_this_cpu()` is taking or holds (`NO_LOCK`: none).
    pub lock: u32,
}

const NO_LOCK: u32 = u32::MAX;

/// A per-CPU lock (`per_cpu_locks[cpu]`: a `pthread_mutex_t` taken only with trylock).
#[derive(Debug, Clone)]
pub struct CpuLock {
    /// The worker holding it.
    pub owner: Option<usize>,
    /// The line of its lock word.
    pub line: LineId,
    /// Workers spinning on it (`while (trylock) nop;`), each on the CPU it ran on when it
    /// started waiting. The unlock notifies those still spinning there.
    pub spinners: Vec<usize>,
}

/// Run state and results.
#[derive(Debug, Clone)]
pub struct Schbench23 {
    pub o: Schbench23Opts,
    /// Workers per message thread, and requests per second per message thread (0: not RPS
    /// mode), as `main()` sets them.
    pub t: u64,
    pub rps: u64,
    pub main_task: TaskId,
    pub msgs: Vec<Msg23>,
    pub workers: Vec<Worker23>,
    pub locks: Vec<CpuLock>,
    pub stopping: bool,
    pub main_loop: Option<MainLoop23>,
    pub wakeup: LatStats,
    pub request: LatStats,
    /// `rps_stats`.
    pub rps_stats: Histogram,
    /// The sum of every worker's `loop_count`.
    pub loops: u64,
    /// What schbench printed (stderr), in order.
    pub output: String,
    /// The final combined histograms (after the run).
    pub final_wakeup: Option<Histogram>,
    pub final_request: Option<Histogram>,
    /// CPU time of one request's matrix work.
    pub math_ns: Time,
    /// Lock acquisitions that found the lock held, and that found the holder's CPU changed.
    pub lock_contended: u64,
    pub lock_migrated: u64,
    /// Workers a message thread stamped and posted (one per `msg_and_wait()` queueing), and
    /// `msg_and_wait()` returns in workers: the run's message accounting.
    pub posted: u64,
    pub woken: u64,
}

impl Schbench23 {
    pub fn new(o: Schbench23Opts, nr_cpus: u32) -> Result<Schbench23, String> {
        if o.auto_rps != 0 {
            return Err("schbench: option -A (--auto-rps) is not modelled (it steers by /proc/stat)".into());
        }
        if o.runtime_s == 0 {
            return Err(
                "schbench: option -r (--runtime) 0 runs forever, which cannot be simulated; give a runtime".into()
            );
        }
        if o.runtime_s.saturating_add(o.warmup_s).saturating_mul(NSEC_PER_SEC) > MAX_SIM_NS {
            return Err(format!(
                "schbench: option -r (--runtime) {} is longer than schedsim simulates: at most {} s",
                o.runtime_s,
                MAX_SIM_NS / NSEC_PER_SEC
            ));
        }
        let t = o.workers_per_message_thread(nr_cpus);
        let tasks = o.message_threads.saturating_mul(t.saturating_add(1)).saturating_add(1);
        if tasks > MAX_TASKS {
            return Err(format!(
                "schbench: options -m {} x -t {t} make {tasks} tasks; schedsim allows at most {MAX_TASKS}",
                o.message_threads
            ));
        }
        let n = o.matrix_size() as u128;
        let math_ps = n * n * n * o.operations as u128 * MATH_PS_PER_MULADD as u128;
        if math_ps / 1000 > MAX_SIM_NS as u128 {
            return Err(format!(
                "schbench: options -F {} and -n {} make each request's work longer than schedsim simulates ({} s)",
                o.cache_footprint_kb,
                o.operations,
                MAX_SIM_NS / NSEC_PER_SEC
            ));
        }
        let rps = o.rps_per_message_thread();
        let mut output = String::new();
        if o.pipe_clamped {
            output.push_str(&format!("pipe size too big, using {}\n", super::schbench23_stats::PIPE_TRANSFER_BUFFER));
        }
        if o.worker_threads == 0 {
            output.push_str(&format!("setting worker threads to {t}\n"));
        }
        let nw = (o.message_threads * t) as usize;
        Ok(Schbench23 {
            t,
            rps,
            main_task: 0,
            msgs: Vec::new(),
            workers: Vec::new(),
            locks: Vec::new(),
            stopping: false,
            main_loop: None,
            wakeup: LatStats::new(nw),
            request: LatStats::new(nw),
            rps_stats: Histogram::new(),
            loops: 0,
            output,
            final_wakeup: None,
            final_request: None,
            math_ns: (math_ps / 1000) as Time,
            lock_contended: 0,
            lock_migrated: 0,
            posted: 0,
            woken: 0,
            o,
        })
    }

    fn reset_stats(&mut self) {
        self.rps_stats.reset();
        self.wakeup.reset();
        self.request.reset();
    }

    /// Whether the workers run `usleep` and matrix work (not in pipe mode).
    fn does_work(&self) -> bool {
        self.o.pipe_bytes == 0
    }
}

#[inline]
fn now_us(k: &Kernel) -> u64 {
    k.now / NSEC_PER_USEC
}

/// Create the tasks (main, then each message thread followed by its workers, in the order of
/// schbench's `thread_data` array), the futex words and the per-CPU locks; main starts from
/// CPU 0 at a seed-dependent instant after the warm-up. Main creates the message threads and
/// each message thread its workers when they run.
pub fn start(w: &mut Schbench23, k: &mut Kernel) {
    let nr = k.m.topo.nr_cpus;
    let mk =
        |k: &mut Kernel, role: u32| crate::linux::kernel::fork::copy_process(k, "schbench".into(), 0, 120, None, role);
    let tid_of = |k: &mut Kernel, t: TaskId| {
        let pid = k.tasks[t as usize].pid as i64;
        futex_alloc(k, 0, pid)
    };
    w.main_task = mk(k, 0);
    // The message threads and workers are pthreads of main's process.
    let main_task = w.main_task;
    let mk = |k: &mut Kernel, role: u32| {
        crate::linux::kernel::fork::copy_process_clone_vm(k, main_task, "schbench".into(), 0, 120, None, role)
    };
    let m = w.o.message_threads as usize;
    let t = w.t as usize;
    for mi in 0..m {
        let task = mk(k, 1 + mi as u32);
        let futex = futex_alloc(k, 0, BLOCKED);
        let tid = tid_of(k, task);
        w.msgs.push(Msg23 {
            task,
            futex,
            tid,
            list: Vec::new(),
            batch: Vec::new(),
            batch_t_us: 0,
            cur_tid: 0,
            round_start_us: 0,
        });
    }
    for mi in 0..m {
        for _ in 0..t {
            let role = 1 + m as u32 + w.workers.len() as u32;
            let task = mk(k, role);
            let futex = futex_alloc(k, 0, BLOCKED);
            let tid = tid_of(k, task);
            w.workers.push(Worker23 {
                task,
                futex,
                tid,
                msg: mi,
                wake_time_us: 0,
                work_start_us: 0,
                start_us: 0,
                runtime_us: 0,
                loop_count: 0,
                queued: 0,
                pending: 0,
                lock: NO_LOCK,
            });
        }
    }
    // The lock words, LOCK_STRIDE_BYTES apart.
    let nlines = (nr as u64 * LOCK_STRIDE_BYTES).div_ceil(64) as usize;
    let lines: Vec<LineId> = (0..nlines).map(|_| k.lines.alloc(0)).collect();
    w.locks = (0..nr as u64)
        .map(|c| CpuLock { owner: None, line: lines[(c * LOCK_STRIDE_BYTES / 64) as usize], spinners: Vec::new() })
        .collect();
    let load = super::load_time(k, 0x5CB23);
    k.q.push(load, Action::Program { what: 0 });
}

/// Start main (`exec` of schbench), from CPU 0.
pub fn on_action(w: &mut Schbench23, k: &mut Kernel, _what: u32) {
    super::spawn(k, 0, w.main_task);
}

/// Cost of a user-space atomic (cmpxchg/xchg) on `line`.
fn user_atomic(k: &mut Kernel, cpu: CpuId, line: LineId) -> Time {
    k.line_write(cpu, line) + k.costs.user_op
}

/// `pthread_create()` of `t` from the running task: `clone()` (`sched_fork()` on this CPU,
/// `wake_up_new_task()`), with the creator's cost measured for rt-app; a wakeup that preempts
/// us takes effect at the syscall's return.
fn pthread_create(k: &mut Kernel, cpu: CpuId, s: &mut TaskFrame, t: TaskId) -> Next {
    sched_fork_and_wake(k, cpu, t);
    if need_resched(k, cpu) {
        s.preempt = true;
    }
    Next::Cont(k.costs.syscall + PTHREAD_CREATE_NS)
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

/// One try of `fwait()`: CAS RUNNING -> BLOCKED returns (`Ok` with its cost); otherwise
/// FUTEX_WAIT on BLOCKED, after which the caller tries again.
fn fwait(k: &mut Kernel, cpu: CpuId, f: FutexId) -> Result<Time, Next> {
    let line = k.futexes[f as usize].line;
    let c = user_atomic(k, cpu, line);
    if k.futexes[f as usize].val == RUNNING {
        k.futexes[f as usize].val = BLOCKED;
        return Ok(c);
    }
    Err(Next::Call(c, FutexOp::wait(f, BLOCKED)))
}

/// `pthread_join()`: FUTEX_WAIT on the thread's tid word until its exit clears it. `Ok` once
/// it is 0.
fn join(k: &Kernel, tid: FutexId) -> Result<(), Next> {
    let v = k.futexes[tid as usize].val;
    if v != 0 {
        return Err(Next::Call(k.costs.user_op, FutexOp::wait(tid, v)));
    }
    Ok(())
}

/// `usleep(us)`: `nanosleep()` with the task's timer slack.
fn usleep(k: &Kernel, ns: Time) -> Next {
    Next::Call(k.costs.user_op, Nanosleep::with_timer_slack(ns))
}

/// One step of a schbench thread.
pub fn task_step(w: &mut Schbench23, k: &mut Kernel, cpu: CpuId, s: &mut TaskFrame) -> Next {
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
        /// Create message thread `s.i`.
        Create,
        /// `sleep_for_runtime()`: its start timestamp.
        Start,
        /// One round: sample, report, reset; stop when the runtime is up.
        Round,
        /// Back from `sleep(1)`.
        Slept,
        /// Stopping: post message thread `s.i`.
        StopPost,
        /// Join message thread `s.i`.
        StopJoin,
        Exited = super::EXITED,
    }
}

resume_points! {
    /// Where a message thread resumes.
    enum MsgAt {
        /// Create worker `s.i` of ours.
        Create,
        /// Mark our futex BLOCKED.
        Block,
        /// Take the list of waiting workers and read the clock.
        TakeList,
        /// Stamp and post worker `s.i` of the batch.
        PostBatch,
        /// The batch is posted: stop, or wait.
        Posted,
        /// fwait.
        Wait,
        /// RPS mode: a second's round begins.
        RpsRound,
        /// RPS mode: queue request `s.i` of the round.
        RpsPost,
        /// RPS mode: after a request's post, sleep every 8.
        RpsPosted,
        /// RPS mode: sleep out the rest of the second.
        RpsEnd,
        /// RPS mode stopping: post worker `s.i`.
        RpsStop,
        /// Stopping: post worker `s.i` of ours, then join it.
        FinalPost,
        FinalJoin,
        Exited = super::EXITED,
    }
}

resume_points! {
    /// Where a worker resumes.
    enum WorkerAt {
        /// The thread's start timestamp.
        Start,
        /// Loop top: exit when stopping; `msg_and_wait()`'s queueing.
        Top,
        /// Post the message thread.
        PostMsg,
        /// fwait for our turn.
        WaitTurn,
        /// Woken: record the wakeup latency.
        Woke,
        /// A request: `work_start` and the usleep.
        Request,
        /// Calibration mode: `work_start` after the usleep.
        CalStart,
        /// `lock_this_cpu()`: the CPU we run on names the lock.
        Lock,
        /// `pthread_mutex_trylock()` until it succeeds; then check we did not move.
        TryLock,
        /// The matrix work.
        Math,
        /// Unlock.
        Unlock,
        /// The request is done: record its latency.
        Finish,
        Exited = super::EXITED,
    }
}

fn main_step(w: &mut Schbench23, k: &mut Kernel, cpu: CpuId, s: &mut TaskFrame) -> Next {
    match MainAt::from_u8(s.at) {
        MainAt::Create => {
            let i = s.i as usize;
            if i >= w.msgs.len() {
                s.at = MainAt::Start as u8;
                return Next::Cont(k.costs.user_op);
            }
            s.i += 1;
            let t = w.msgs[i].task;
            pthread_create(k, cpu, s, t)
        }
        MainAt::Start => {
            w.main_loop = Some(MainLoop23::new(&w.o, now_us(k)));
            s.at = MainAt::Round as u8;
            Next::Cont(k.costs.user_op)
        }
        MainAt::Round => {
            let now = now_us(k);
            let loops = w.loops;
            let a = w.main_loop.as_mut().expect("started").tick(now, loops);
            // Reading every worker's loop_count (combine_message_thread_rps()).
            let mut c = k.costs.user_op * (1 + w.workers.len() as u64);
            if a.warmup_reset {
                w.output.push_str(WARMUP_MESSAGE);
                w.reset_stats();
            }
            if let Some(r) = a.rps {
                w.rps_stats.add(r.sample() as u64);
                if let Some(rt) = a.report_runtime_s {
                    let (wh, rh) = (w.wakeup.combined(), w.request.combined());
                    render_three(&mut w.output, rt, &wh, &rh, &w.rps_stats);
                    w.output.push_str(&format!("current rps: {}\n", super::schbench23_stats::c_fixed2(r.value())));
                    c += k.costs.user_op * w.workers.len() as u64;
                }
            }
            if a.zero_reset {
                w.reset_stats();
            }
            if a.done {
                // stopping = 1, then post and join each message thread.
                w.stopping = true;
                s.i = 0;
                s.at = MainAt::StopPost as u8;
                return Next::Cont(c);
            }
            s.at = MainAt::Slept as u8;
            Next::Call(c, Nanosleep::with_timer_slack(NSEC_PER_SEC))
        }
        MainAt::Slept => {
            s.at = MainAt::Round as u8;
            Next::Cont(0)
        }
        MainAt::StopPost => {
            let i = s.i as usize;
            if i >= w.msgs.len() {
                return main_finish(w, k, cpu, s);
            }
            s.at = MainAt::StopJoin as u8;
            let f = w.msgs[i].futex;
            fpost(k, cpu, f)
        }
        MainAt::StopJoin => {
            let tid = w.msgs[s.i as usize].tid;
            if let Err(next) = join(k, tid) {
                return next;
            }
            s.i += 1;
            s.at = MainAt::StopPost as u8;
            Next::Cont(k.costs.user_op)
        }
        MainAt::Exited => unreachable!("schbench main ran after exit"),
    }
}

/// Every thread is joined: combine the stats, print the final report, return from `main()`.
fn main_finish(w: &mut Schbench23, k: &mut Kernel, cpu: CpuId, s: &mut TaskFrame) -> Next {
    let (wh, rh) = (w.wakeup.combined(), w.request.combined());
    let runtime = w.o.runtime_s;
    if w.o.pipe_bytes != 0 {
        let loop_runtime: u64 = w.workers.iter().map(|x| x.runtime_us).sum();
        render_pipe_final(&mut w.output, runtime, &wh, w.loops, loop_runtime, w.o.pipe_bytes);
    } else {
        render_final(&mut w.output, runtime, &wh, &rh, &w.rps_stats, w.loops);
    }
    w.final_wakeup = Some(wh);
    w.final_request = Some(rh);
    super::all_exited(k);
    super::exit_current(k, cpu, s)
}

fn msg_step(w: &mut Schbench23, k: &mut Kernel, cpu: CpuId, s: &mut TaskFrame, mi: usize) -> Next {
    let t = w.t as usize;
    match MsgAt::from_u8(s.at) {
        MsgAt::Create => {
            let i = s.i as usize;
            if i >= t {
                s.i = 0;
                s.at = if w.rps != 0 { MsgAt::RpsRound } else { MsgAt::Block } as u8;
                return Next::Cont(k.costs.user_op);
            }
            s.i += 1;
            let task = w.workers[mi * t + i].task;
            pthread_create(k, cpu, s, task)
        }
        MsgAt::Block => {
            // td->futex = FUTEX_BLOCKED (a plain store).
            let f = w.msgs[mi].futex;
            k.futexes[f as usize].val = BLOCKED;
            let line = k.futexes[f as usize].line;
            let c = k.line_write(cpu, line);
            s.at = MsgAt::TakeList as u8;
            Next::Cont(c + k.costs.user_op)
        }
        MsgAt::TakeList => {
            // xlist_splice() (cmpxchg with NULL), then gettimeofday() once.
            let line = k.futexes[w.msgs[mi].futex as usize].line;
            let c = user_atomic(k, cpu, line);
            let now = now_us(k);
            let msg = &mut w.msgs[mi];
            let mut batch = std::mem::take(&mut msg.list);
            batch.reverse();
            msg.batch = batch;
            msg.batch_t_us = now;
            s.i = 0;
            s.at = MsgAt::PostBatch as u8;
            Next::Cont(c + k.costs.user_op)
        }
        MsgAt::PostBatch => {
            let i = s.i as usize;
            if i >= w.msgs[mi].batch.len() {
                s.at = MsgAt::Posted as u8;
                return Next::Cont(0);
            }
            s.i += 1;
            let wi = w.msgs[mi].batch[i];
            w.posted += 1;
            let mut c = 0;
            if w.o.pipe_bytes != 0 {
                // memset(list->pipe_page, 1, pipe_test); gettimeofday(&list->wake_time).
                c += w.o.pipe_bytes.div_ceil(MEMSET_BYTES_PER_NS) + k.costs.user_op;
                w.workers[wi].wake_time_us = now_us(k);
            } else {
                w.workers[wi].wake_time_us = w.msgs[mi].batch_t_us;
            }
            // list->next = NULL and the stamp go to the worker's futex line; fpost's CAS then
            // finds it here.
            let f = w.workers[wi].futex;
            let line = k.futexes[f as usize].line;
            c += k.line_write(cpu, line);
            match fpost(k, cpu, f) {
                Next::Cont(d) => Next::Cont(c + d),
                Next::Call(d, fr) => Next::Call(c + d, fr),
                other => other,
            }
        }
        MsgAt::Posted => {
            if w.stopping {
                // One more pass over the list (`if (stopping) { xlist_wake_all(); break; }`),
                // then post and join our workers.
                if s.mark[0] == 0 {
                    s.mark[0] = 1;
                    s.at = MsgAt::TakeList as u8;
                } else {
                    s.i = 0;
                    s.at = MsgAt::FinalPost as u8;
                }
                return Next::Cont(k.costs.user_op);
            }
            s.at = MsgAt::Wait as u8;
            Next::Cont(0)
        }
        MsgAt::Wait => {
            let f = w.msgs[mi].futex;
            match fwait(k, cpu, f) {
                Ok(c) => {
                    s.at = MsgAt::Block as u8;
                    Next::Cont(c)
                }
                Err(call) => call,
            }
        }
        MsgAt::RpsRound => {
            // start = now; sleep_time = (USEC_PER_SEC / requests_per_sec) * batch.
            w.msgs[mi].round_start_us = now_us(k);
            s.i = 1;
            s.at = MsgAt::RpsPost as u8;
            Next::Cont(k.costs.user_op)
        }
        MsgAt::RpsPost => {
            if s.i > w.rps {
                s.at = MsgAt::RpsEnd as u8;
                return Next::Cont(0);
            }
            let now = now_us(k);
            let msg = &mut w.msgs[mi];
            let wi = mi * t + (msg.cur_tid % t as u64) as usize;
            msg.cur_tid += 1;
            if w.workers[wi].pending > 8 {
                s.i += 1;
                return Next::Cont(k.costs.user_op);
            }
            // pending++; allocate_request() (malloc, gettimeofday); request_add() (cmpxchg on
            // the worker's line); the stamp; fpost.
            let wk = &mut w.workers[wi];
            wk.pending += 1;
            wk.queued += 1;
            wk.wake_time_us = now;
            let f = wk.futex;
            let line = k.futexes[f as usize].line;
            let c = user_atomic(k, cpu, line) + 2 * k.costs.user_op;
            s.at = MsgAt::RpsPosted as u8;
            match fpost(k, cpu, f) {
                Next::Cont(d) => Next::Cont(c + d),
                Next::Call(d, fr) => Next::Call(c + d, fr),
                other => other,
            }
        }
        MsgAt::RpsPosted => {
            let i = s.i;
            s.i += 1;
            s.at = MsgAt::RpsPost as u8;
            if i % 8 == 0 {
                let sleep_us = (1_000_000 / w.rps) * 8;
                return usleep(k, sleep_us * NSEC_PER_USEC);
            }
            Next::Cont(0)
        }
        MsgAt::RpsEnd => {
            let delta = now_us(k).saturating_sub(w.msgs[mi].round_start_us);
            if delta < 1_000_000 {
                return usleep(k, (1_000_000 - delta) * NSEC_PER_USEC);
            }
            if w.stopping {
                s.i = 0;
                s.at = MsgAt::RpsStop as u8;
                return Next::Cont(k.costs.user_op);
            }
            s.at = MsgAt::RpsRound as u8;
            Next::Cont(k.costs.user_op)
        }
        MsgAt::RpsStop => {
            let i = s.i as usize;
            if i >= t {
                s.i = 0;
                s.at = MsgAt::FinalPost as u8;
                return Next::Cont(0);
            }
            s.i += 1;
            let f = w.workers[mi * t + i].futex;
            fpost(k, cpu, f)
        }
        MsgAt::FinalPost => {
            let i = s.i as usize;
            if i >= t {
                s.at = MsgAt::Exited as u8;
                let tid = w.msgs[mi].tid;
                return Next::Call(k.costs.user_op, DoExit::thread(tid));
            }
            s.at = MsgAt::FinalJoin as u8;
            let f = w.workers[mi * t + i].futex;
            fpost(k, cpu, f)
        }
        MsgAt::FinalJoin => {
            let tid = w.workers[mi * t + s.i as usize].tid;
            if let Err(next) = join(k, tid) {
                return next;
            }
            s.i += 1;
            s.at = MsgAt::FinalPost as u8;
            Next::Cont(k.costs.user_op)
        }
        MsgAt::Exited => unreachable!("schbench message thread ran after exit"),
    }
}

fn worker_step(w: &mut Schbench23, k: &mut Kernel, cpu: CpuId, s: &mut TaskFrame, wi: usize) -> Next {
    match WorkerAt::from_u8(s.at) {
        WorkerAt::Start => {
            w.workers[wi].start_us = now_us(k);
            s.at = WorkerAt::Top as u8;
            Next::Cont(k.costs.user_op)
        }
        WorkerAt::Top => {
            if w.stopping {
                s.at = WorkerAt::Exited as u8;
                let tid = w.workers[wi].tid;
                return Next::Call(k.costs.user_op, DoExit::thread(tid));
            }
            let mut c = 0;
            if w.o.pipe_bytes != 0 {
                // memset(td->pipe_page, 2, pipe_test).
                c += w.o.pipe_bytes.div_ceil(MEMSET_BYTES_PER_NS);
            }
            // td->futex = BLOCKED; gettimeofday(&td->wake_time).
            let now = now_us(k);
            let f = w.workers[wi].futex;
            k.futexes[f as usize].val = BLOCKED;
            let fl = k.futexes[f as usize].line;
            c += k.line_write(cpu, fl) + 2 * k.costs.user_op;
            w.workers[wi].wake_time_us = now;
            if w.rps != 0 {
                // pending = 0; request_splice(): take our whole request list.
                c += user_atomic(k, cpu, fl);
                let wk = &mut w.workers[wi];
                wk.pending = 0;
                if wk.queued > 0 {
                    s.mark[1] = std::mem::take(&mut wk.queued);
                    k.futexes[f as usize].val = RUNNING;
                    s.at = WorkerAt::Request as u8;
                    return Next::Cont(c);
                }
            } else {
                // xlist_add(td->msg_thread, td): cmpxchg on the message thread's line.
                let mi = w.workers[wi].msg;
                let ml = k.futexes[w.msgs[mi].futex as usize].line;
                c += user_atomic(k, cpu, ml);
                w.msgs[mi].list.push(wi);
            }
            s.at = WorkerAt::PostMsg as u8;
            Next::Cont(c)
        }
        WorkerAt::PostMsg => {
            let mi = w.workers[wi].msg;
            let f = w.msgs[mi].futex;
            s.at = WorkerAt::WaitTurn as u8;
            fpost(k, cpu, f)
        }
        WorkerAt::WaitTurn => {
            if !w.stopping {
                let f = w.workers[wi].futex;
                match fwait(k, cpu, f) {
                    Ok(c) => {
                        s.at = WorkerAt::Woke as u8;
                        return Next::Cont(c);
                    }
                    Err(call) => return call,
                }
            }
            s.at = WorkerAt::Woke as u8;
            Next::Cont(0)
        }
        WorkerAt::Woke => {
            // gettimeofday(&now); delta = now - wake_time; if (delta > 0) add_lat().
            let delta = now_us(k).saturating_sub(w.workers[wi].wake_time_us);
            if delta > 0 {
                w.wakeup.add(wi, delta);
            }
            w.woken += 1;
            if w.rps != 0 {
                // msg_and_wait() returned no request: `continue`.
                s.at = WorkerAt::Top as u8;
            } else {
                s.mark[1] = 1;
                s.at = WorkerAt::Request as u8;
            }
            Next::Cont(k.costs.user_op)
        }
        WorkerAt::Request => {
            if !w.does_work() {
                // Pipe mode: work_start, then straight to the end of the request.
                w.workers[wi].work_start_us = now_us(k);
                s.at = WorkerAt::Finish as u8;
                return Next::Cont(k.costs.user_op);
            }
            if w.o.calibrate {
                s.at = WorkerAt::CalStart as u8;
            } else {
                w.workers[wi].work_start_us = now_us(k);
                s.at = WorkerAt::Lock as u8;
            }
            usleep(k, REQUEST_USLEEP_NS)
        }
        WorkerAt::CalStart => {
            w.workers[wi].work_start_us = now_us(k);
            s.at = WorkerAt::Lock as u8;
            Next::Cont(k.costs.user_op)
        }
        WorkerAt::Lock => {
            if w.o.skip_locking {
                s.at = WorkerAt::Math as u8;
                return Next::Cont(0);
            }
            // cpu = sched_getcpu(); lock = &per_cpu_locks[cpu].
            w.workers[wi].lock = cpu;
            s.at = WorkerAt::TryLock as u8;
            Next::Cont(k.costs.user_op)
        }
        WorkerAt::TryLock => try_lock(w, k, cpu, s, wi),
        WorkerAt::Math => {
            s.at = if w.o.skip_locking { WorkerAt::Finish } else { WorkerAt::Unlock } as u8;
            s.user = true;
            Next::Cont(w.math_ns)
        }
        WorkerAt::Unlock => {
            let c = unlock(w, k, cpu, wi);
            s.at = WorkerAt::Finish as u8;
            Next::Cont(c)
        }
        WorkerAt::Finish => {
            // gettimeofday(&now); td->runtime; free(req); loop_count++; the request latency.
            let now = now_us(k);
            let wk = &mut w.workers[wi];
            wk.runtime_us = now.saturating_sub(wk.start_us);
            wk.loop_count += 1;
            w.loops += 1;
            let delta = now.saturating_sub(wk.work_start_us);
            if delta > 0 {
                w.request.add(wi, delta);
            }
            s.mark[1] = s.mark[1].saturating_sub(1);
            s.at = if s.mark[1] > 0 { WorkerAt::Request } else { WorkerAt::Top } as u8;
            Next::Cont(2 * k.costs.user_op)
        }
        WorkerAt::Exited => unreachable!("schbench worker ran after exit"),
    }
}

/// One `pthread_mutex_trylock()` of `lock_this_cpu()`'s loop. Taken: if `sched_getcpu()` now
/// names another CPU (we moved while spinning), unlock and start again from `Lock`; else go on
/// to the math. Held: spin (`rep;nop`) until the line is written (the unlock notifies us) or an
/// interrupt comes; either way this step runs again. The spin is user time: an interrupt
/// whose return finds NEED_RESCHED preempts it.
fn try_lock(w: &mut Schbench23, k: &mut Kernel, cpu: CpuId, s: &mut TaskFrame, wi: usize) -> Next {
    let li = w.workers[wi].lock as usize;
    let line = w.locks[li].line;
    let c = user_atomic(k, cpu, line);
    match w.locks[li].owner {
        None => {
            w.locks[li].owner = Some(wi);
            s.mark[2] = 0;
            if li != cpu as usize {
                // We got the lock but we migrated: unlock, retry on this CPU's lock.
                w.lock_migrated += 1;
                let u = unlock(w, k, cpu, wi);
                s.at = WorkerAt::Lock as u8;
                return Next::Cont(c + u);
            }
            s.at = WorkerAt::Math as u8;
            Next::Cont(c)
        }
        Some(_) => {
            if s.mark[2] == 0 {
                s.mark[2] = 1;
                w.lock_contended += 1;
            }
            if !w.locks[li].spinners.contains(&wi) {
                w.locks[li].spinners.push(wi);
            }
            s.user = true;
            // The failed cmpxchg's own time, then the spin on the line.
            if c > 0 {
                return Next::Cont(c);
            }
            Next::Wait(WaitOn::Spin)
        }
    }
}

/// `pthread_mutex_unlock()` of the lock worker `wi` holds: an exchange on its line (no
/// FUTEX_WAKE: only trylock ever takes it, so it is never marked contended). Each spinner
/// still spinning on its CPU re-reads the line after the transfer. Returns the cost.
fn unlock(w: &mut Schbench23, k: &mut Kernel, cpu: CpuId, wi: usize) -> Time {
    let li = w.workers[wi].lock as usize;
    debug_assert_eq!(w.locks[li].owner, Some(wi));
    w.locks[li].owner = None;
    w.workers[wi].lock = NO_LOCK;
    let line = w.locks[li].line;
    let c = k.line_write(cpu, line);
    for sp in std::mem::take(&mut w.locks[li].spinners) {
        let task = w.workers[sp].task;
        let on = k.tasks[task as usize].cpu;
        if k.curr(on) == task && k.cpus[on as usize].x.waiting == Some(WaitOn::Spin) {
            crate::linux::engine::notify(k, on, c);
        }
    }
    c + k.costs.user_op
}

impl super::Program for Schbench23 {
    fn parse(_name: &str, p: &Params, m: &crate::hw::Machine) -> Result<Schbench23, String> {
        p.check_known("schbench23", &["args"])?;
        let args = p.get("args").unwrap_or("");
        let argv: Vec<&str> = args.split_whitespace().collect();
        let o = Schbench23Opts::parse(&argv).map_err(|e| format!("{}: {e}", p.origin))?;
        Schbench23::new(o, m.topo.nr_cpus).map_err(|e| format!("{}: {e}", p.origin))
    }
    fn own_args(words: &[String]) -> Option<Vec<(String, String)>> {
        Some(vec![("args".into(), words.join(" "))])
    }
    const OWN_ARGS_EXAMPLE: &'static str = "-- -m 2 -t 16 -r 30";
    fn planned_size(&self, _nr_cpus: u32) -> (u64, u64, &'static str) {
        let workers = self.o.message_threads.saturating_mul(self.t);
        let tasks = self.o.message_threads.saturating_add(workers).saturating_add(1);
        // Per worker: its record and two summaries, kept twice (the run's and the result's).
        let per = 2 * (std::mem::size_of::<Worker23>() + 2 * std::mem::size_of::<Summary>()) as u64;
        (tasks, workers.saturating_mul(per), "schbench23 -m x -t")
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
    /// LKP's `schbench.request_latency_90%_us`: the final block's Request Latencies 90.0th.
    fn metric(&self, _f: &super::RunFacts) -> super::Metric {
        let h = self.final_request.clone().unwrap_or_else(|| self.request.combined());
        let v = h.percentile(900) as f64;
        super::Metric { name: "p90_request", unit: "us", lower_is_better: true, value: v }
    }
    fn json(&self, _f: &super::RunFacts) -> serde_json::Value {
        let wh = self.final_wakeup.clone().unwrap_or_else(|| self.wakeup.combined());
        let rh = self.final_request.clone().unwrap_or_else(|| self.request.combined());
        let block = |h: &Histogram| {
            let pct: serde_json::Map<String, serde_json::Value> = super::schbench23_stats::PLIST
                .iter()
                .map(|&p| (format!("{}", p as f64 / 10.0), serde_json::json!(h.percentile(p))))
                .collect();
            serde_json::json!({ "samples": h.nr_samples(), "percentiles": pct, "min": h.min(), "max": h.max() })
        };
        serde_json::json!({
            "name": "schbench23",
            "wakeup_latency_us": block(&wh),
            "request_latency_us": block(&rh),
            "rps": block(&self.rps_stats),
            "requests": self.loops,
            "average_rps": self.loops as f64 / self.o.runtime_s as f64,
            "math_ns_per_request": self.math_ns,
            "lock_contended": self.lock_contended,
            "lock_migrated": self.lock_migrated,
            "output": self.output,
        })
    }
    fn text(&self, _f: &super::RunFacts) -> String {
        let mut o = self.output.clone();
        o.push_str(&format!(
            "\nschedsim: {} requests, {} us of matrix work each; {} lock acquisitions found the lock held, {} found they had moved\n",
            self.loops,
            self.math_ns / NSEC_PER_USEC,
            self.lock_contended,
            self.lock_migrated
        ));
        o
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summaries_fold_as_combine_stats() {
        let mut a = Summary::default();
        for v in [5, 3, 9] {
            a.add(v);
        }
        assert_eq!(a, Summary { nr_samples: 3, min: 3, max: 9 });
        // An empty worker in the middle zeroes min; the next one's min replaces it.
        let mut d = Summary::default();
        d.merge(&a);
        d.merge(&Summary::default());
        assert_eq!(d.min, 0);
        d.merge(&Summary { nr_samples: 1, min: 7, max: 7 });
        assert_eq!(d, Summary { nr_samples: 4, min: 7, max: 9 });
    }

    #[test]
    fn lat_stats_combine_buckets_and_summaries() {
        let mut s = LatStats::new(3);
        s.add(0, 10);
        s.add(2, 600);
        s.add(2, 4);
        let mut want = Histogram::new();
        for v in [10, 600, 4] {
            want.add(v);
        }
        // Worker 1 recorded nothing: it zeroes the running min, which worker 2's 4 replaces.
        assert_eq!(s.combined(), want.clone().with_summary(3, 4, 600));
        // An empty last worker leaves min at 0, as schbench prints it.
        let mut s2 = LatStats::new(2);
        s2.add(0, 10);
        assert_eq!(s2.combined().min(), 0);
        s.reset();
        assert_eq!(s.combined(), Histogram::new());
    }
}
