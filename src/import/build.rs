//! The workload builder: every imported task followed through the record stream, its rt-app
//! thread written as it goes.
//!
//! - A task's CPU time between its switch-in and the next thing it does that another thread or
//!   the clock can see (it blocks, wakes a task, forks, exits) is one `run`, less the kernel
//!   time the model charges again for the same thing ([`Subtract`]); a preemption (`prev_state`
//!   `R`) does not end a run, its CPU time before and after adds up.
//! - A task that blocked (`S`, `D`) and is woken by another imported task in task context
//!   becomes a two-thread `barrier` named after the wakeup (`w<N>`): the wakee waits at it
//!   where it blocked, the waker reaches it where it woke the wakee. Unlike rt-app's
//!   `signal`/`wait`, a barrier is never lost: if the replay brings the waker there first, the
//!   waker waits for the wakee instead of signalling nobody (the test `reversed_pair_keeps_the_wakeup`).
//! - A task woken from an interrupt, a softirq, a timer, by the idle task or by a task left out
//!   of the import sleeps (`sleep`) for as long as it was blocked in the trace; the report
//!   counts these by cause.
//! - `sched_process_fork` of an imported child is a `fork` in the parent (the child's thread
//!   has `instance: 0`); `sched_process_exit`, or the end of the window, ends the thread.
//!
//! Memory: one entry per imported task and its steps, never the trace; [`Options::max_steps`]
//! caps the steps (the import then ends at the record that reached the cap, for every task
//! alike, so no barrier loses its other side) and [`Options::max_tasks`] the tasks.

use super::{Ctx, Kind, PrevState, Rec};
use std::collections::{BTreeMap, BTreeSet};

/// Kernel time the model charges on its own for what a replayed thread does, taken off the
/// measured runs (ns; `PathCosts` fields of the machine the workload is built for, summed in
/// `cli::import`): the trace's run time includes the same kernel paths, so keeping them would
/// charge them twice.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Subtract {
    /// A run that ends in a block: the blocking syscall and `schedule()` up to `sched_switch`
    /// (`syscall + futex + schedule_enter + pick_fair_task`, and the barrier's `user_op`s).
    pub block_ns: u64,
    /// A run that ends waking a task: `syscall + futex + ttwu + ttwu_activate` and `user_op`s.
    pub wake_ns: u64,
    /// A run that starts at a switch-in after a wakeup: the part of the switch after the
    /// `sched_switch` record (`context_switch + schedule_exit`).
    pub wakein_ns: u64,
}

/// How to treat an RT task's policy when no `sched_setscheduler` was recorded.
pub const DEFAULT_RT_POLICY: &str = "SCHED_FIFO";

#[derive(Debug, Clone)]
pub struct Options {
    /// Absolute trace time range, ns.
    pub window: Option<(u64, u64)>,
    /// Tasks by name (exact, or a prefix ending in `*`) and by pid; both empty: every task
    /// but kernel threads and tracers.
    pub comms: Vec<String>,
    pub pids: Vec<u32>,
    /// Import kernel threads and the tracer's own tasks too.
    pub all_tasks: bool,
    /// `cpus` from the CPUs each task ran on.
    pub affinity_observed: bool,
    pub subtract: Subtract,
    pub max_steps: usize,
    pub max_tasks: usize,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            window: None,
            comms: Vec::new(),
            pids: Vec::new(),
            all_tasks: false,
            affinity_observed: false,
            subtract: Subtract::default(),
            max_steps: 2_000_000,
            max_tasks: 10_000,
        }
    }
}

/// One step of a thread.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    RunUs(u64),
    SleepUs(u64),
    /// The two sides of wakeup N.
    Barrier(u32),
    /// Fork the task at this index.
    Fork(usize),
    /// rt-app's `timer` of period `period_us`, per-thread timer `chain` (relative mode): the
    /// sleeps of a periodic stretch ([`Builder::finish`]).
    Timer {
        chain: u32,
        period_us: u64,
    },
}

/// A sleep ended by a timer or a hard interrupt: where its step is and when it began and ended.
#[derive(Debug, Clone, Copy)]
struct TimedWake {
    step: usize,
    since: u64,
    at: u64,
}

/// A periodic stretch turned into rt-app `timer` events.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Periodic {
    pub period_us: u64,
    /// Sleeps of the stretch that became timers.
    pub timers: u64,
}

/// A stretch of timer-ended sleeps is periodic when there are at least this many wakeups.
pub const PERIODIC_MIN_WAKES: usize = 5;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum St {
    Running { since: u64 },
    Runnable,
    Blocked { since: u64 },
    Dead,
}

/// How a thread starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Start {
    /// At the start, or this many ns later (`delay`).
    Delay(u64),
    /// Created by a `fork` of the task at this index, this many ns after the start.
    Forked(usize, u64),
}

/// Why a wakeup became a `sleep` rather than a barrier.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WakeCounts {
    /// By an imported task in task context: barriers.
    pub matched: u64,
    pub hardirq: u64,
    pub softirq: u64,
    /// From a timer callback (`hrtimer_wakeup`: a sleep's own timer; or another timer).
    pub timer: u64,
    /// By the idle task (an interrupt on an idle CPU without interrupt events recorded).
    pub idle: u64,
    /// By a task left out of the import (kernel thread, tracer, not selected).
    pub by_other_task: u64,
    /// Of a task that had not blocked (it was still running or runnable).
    pub not_blocked: u64,
}

#[derive(Debug, Clone)]
pub struct Task {
    pub pid: u32,
    pub comm: String,
    /// The rt-app thread name.
    pub name: String,
    pub prio: u32,
    /// Policy number from a recorded `sched_setscheduler`.
    pub policy: Option<u32>,
    pub set_affinity: bool,
    pub cpus: BTreeSet<u32>,
    pub start: Start,
    pub steps: Vec<Step>,
    pub cpu_ns: u64,
    pub switch_ins: u64,
    pub wakes: WakeCounts,
    /// Tasks outside the import that woke this one, by name (the first few).
    pub other_wakers: BTreeMap<String, u64>,
    pub exited: bool,
    /// Kernel time taken off the runs, ns, and the part that could not be (runs too short).
    pub subtracted_ns: u64,
    pub unsubtracted_ns: u64,
    /// Periodic stretches found (each became rt-app `timer` events).
    pub periodic: Vec<Periodic>,
    /// Sleeps ended by a timer or a hard interrupt, in order (the candidates for `periodic`).
    timed: Vec<TimedWake>,
    st: St,
    /// When the task was last woken (or created).
    woken_at: u64,
    seg_ns: u64,
    pending_sub: u64,
    run_ns_total: u64,
    run_us_total: u64,
    sleep_ns_total: u64,
    sleep_us_total: u64,
}

#[derive(Debug, Clone, Copy, Default)]
struct CpuCtx {
    irq: u32,
    softirq: u32,
    /// Timer callbacks open: (depth, of which `hrtimer_wakeup`).
    timer: u32,
    timer_wakeup: bool,
    /// The time of the CPU's last record.
    last_ts: u64,
}

/// What the whole import saw.
#[derive(Debug, Clone, Default)]
pub struct Seen {
    pub records: u64,
    pub first_ts: Option<u64>,
    pub last_ts: u64,
    /// Records by event name.
    pub events: BTreeMap<String, u64>,
    pub nr_cpus: u32,
    /// The first lost-events marker: (line, CPU, count) and how many in all.
    pub lost_at: Option<(u64, u32, u64)>,
    pub lost_markers: u64,
    /// Where the import stopped early and why.
    pub cut: Option<(u64, String)>,
    pub excluded: BTreeMap<String, u64>,
    pub edges: u32,
    /// Imported tasks found running without a `sched_switch` to them (a CPU whose idle task
    /// logs nothing, as on this project's guest; or a lost record).
    pub silent_switch_ins: u64,
    /// The file's last line has no newline (a truncated file?).
    pub unterminated: bool,
}

pub struct Builder {
    pub opts: Options,
    pub tasks: Vec<Task>,
    /// Live pid -> index in `tasks`.
    by_pid: BTreeMap<u32, usize>,
    /// Pids looked at and left out, with the name they had (a new name is looked at again:
    /// `exec` renames a task).
    skipped: BTreeMap<u32, String>,
    cpus: Vec<CpuCtx>,
    /// Pids with a `sched_waking` whose `sched_wakeup` has not come yet.
    waking: BTreeSet<u32>,
    pub seen: Seen,
    steps: usize,
    t0: Option<u64>,
    done: bool,
}

/// The median of `v` (sorted in place; `v` not empty).
fn median(v: &mut [u64]) -> u64 {
    v.sort_unstable();
    v[v.len() / 2]
}

/// The median absolute deviation of `v` from `m`.
fn mad(v: &[u64], m: u64) -> u64 {
    let mut d: Vec<u64> = v.iter().map(|&x| x.abs_diff(m)).collect();
    median(&mut d)
}

/// Turn task `t`'s periodic stretches into rt-app timers. A stretch is a run of sleeps ended by
/// a timer or a hard interrupt (a sleep's hrtimer fires in the local timer interrupt) with only
/// runs between them, cut where the wakeup interval changes by more than 10%. It is periodic when its wakeups keep their period better than its
/// sleeps keep their length: the wakeup-to-wakeup intervals' median absolute deviation is at
/// most 2% of their median P, and the sleeps' is more than twice the intervals' (and at least
/// 2 us). That is what an absolute period does (the sleep absorbs the run's variation); a
/// fixed relative sleep does the reverse (the interval absorbs it), and when neither varies
/// the trace cannot tell them apart and the sleeps stay sleeps.
///
/// rt-app's timer (relative mode) sleeps to its next period and, when that is already past,
/// restarts the period from now. The first timer of a thread is due one period after the
/// thread starts; so the stretch is anchored at its first wakeup at least two periods after
/// the thread's start: a timer right after that wakeup finds its deadline past and starts the
/// period there, and every later sleep of the stretch becomes a timer of period P.
fn periodic(t: &mut Task, start: u64) {
    let mut chains: Vec<Vec<TimedWake>> = Vec::new();
    for w in std::mem::take(&mut t.timed) {
        let joins = chains.last().is_some_and(|c| {
            let p = c[c.len() - 1];
            // Only runs in between, and (from the third wakeup) the interval within 10% of
            // the one before: a period that changes starts a new stretch.
            t.steps[p.step + 1..w.step].iter().all(|s| matches!(s, Step::RunUs(_)))
                && (c.len() < 2 || {
                    let before = p.at.saturating_sub(c[c.len() - 2].at);
                    w.at.saturating_sub(p.at).abs_diff(before).saturating_mul(10) <= before
                })
        });
        if joins {
            chains.last_mut().expect("a chain").push(w);
        } else {
            chains.push(vec![w]);
        }
    }
    // Step index -> what it becomes: a timer (replacing a sleep), or a sleep followed by a
    // timer that starts the period.
    let mut timers: BTreeMap<usize, (bool, u32, u64)> = BTreeMap::new();
    for c in chains.iter().filter(|c| c.len() >= PERIODIC_MIN_WAKES) {
        let mut iv: Vec<u64> = c.windows(2).map(|p| p[1].at.saturating_sub(p[0].at)).collect();
        let sl: Vec<u64> = c.iter().map(|w| w.at.saturating_sub(w.since)).collect();
        let p = median(&mut iv);
        let sl_median = median(&mut sl.clone());
        let (iv_mad, sl_mad) = (mad(&iv, p), mad(&sl, sl_median));
        if p < 1000 || iv_mad.saturating_mul(50) > p || sl_mad <= iv_mad.saturating_mul(2) || sl_mad < 2000 {
            continue;
        }
        let Some(anchor) = c.iter().position(|w| w.at >= start.saturating_add(p.saturating_mul(2))) else { continue };
        if c.len() - anchor < 3 {
            continue;
        }
        let chain = t.periodic.len() as u32;
        let period_us = p.saturating_add(500) / 1000;
        timers.insert(c[anchor].step, (true, chain, period_us));
        for w in &c[anchor + 1..] {
            timers.insert(w.step, (false, chain, period_us));
        }
        t.periodic.push(Periodic { period_us, timers: (c.len() - anchor - 1) as u64 });
    }
    if timers.is_empty() {
        return;
    }
    let mut steps = Vec::with_capacity(t.steps.len() + t.periodic.len());
    for (i, s) in t.steps.iter().enumerate() {
        match timers.get(&i) {
            Some(&(true, chain, period_us)) => {
                steps.push(*s);
                steps.push(Step::Timer { chain, period_us });
            }
            Some(&(false, chain, period_us)) => steps.push(Step::Timer { chain, period_us }),
            None => steps.push(*s),
        }
    }
    t.steps = steps;
}

/// Names of kernel threads (never forked by a user task in the trace).
fn is_kthread(comm: &str) -> bool {
    const P: &[&str] = &[
        "kworker/",
        "ksoftirqd/",
        "migration/",
        "rcu_",
        "rcuog/",
        "rcuop/",
        "kthreadd",
        "cpuhp/",
        "idle_inject/",
        "watchdog",
        "irq/",
        "khugepaged",
        "kcompactd",
        "kswapd",
        "jbd2/",
        "kauditd",
        "oom_reaper",
        "kblockd",
        "writeback",
        "kdevtmpfs",
        "khungtaskd",
        "kintegrityd",
        "ksmd",
        "scsi_",
        "ext4-",
        "xfs",
        "swapper",
    ];
    P.iter().any(|p| comm.starts_with(p))
}

/// The tracers' own tasks.
fn is_tracer(comm: &str) -> bool {
    matches!(comm, "trace-cmd" | "perf" | "perf-exec")
}

impl Builder {
    pub fn new(opts: Options) -> Builder {
        Builder {
            opts,
            tasks: Vec::new(),
            by_pid: BTreeMap::new(),
            skipped: BTreeMap::new(),
            cpus: Vec::new(),
            waking: BTreeSet::new(),
            seen: Seen::default(),
            steps: 0,
            t0: None,
            done: false,
        }
    }

    fn wanted(&self, pid: u32, comm: &str) -> bool {
        if pid == 0 || pid == super::UNKNOWN_PID {
            return false;
        }
        if !self.opts.comms.is_empty() || !self.opts.pids.is_empty() {
            return self.opts.pids.contains(&pid)
                || self.opts.comms.iter().any(|c| match c.strip_suffix('*') {
                    Some(p) => comm.starts_with(p),
                    None => c == comm,
                });
        }
        self.opts.all_tasks || !(is_kthread(comm) || is_tracer(comm))
    }

    /// The task of `pid`, created at its first sighting if it is to be imported.
    fn task(&mut self, pid: u32, comm: &str, ts: u64) -> Option<usize> {
        if let Some(&i) = self.by_pid.get(&pid) {
            if self.tasks[i].comm != comm && !comm.is_empty() {
                self.tasks[i].comm = comm.to_string();
            }
            return Some(i);
        }
        if self.skipped.get(&pid).is_some_and(|c| c == comm) {
            return None;
        }
        if !self.wanted(pid, comm) {
            self.skipped.insert(pid, comm.to_string());
            if pid != 0 && pid != super::UNKNOWN_PID {
                *self.seen.excluded.entry(comm.to_string()).or_default() += 1;
            }
            return None;
        }
        if self.tasks.len() >= self.opts.max_tasks {
            self.cut(ts, format!("more than {} tasks (--max-tasks)", self.opts.max_tasks));
            return None;
        }
        let t0 = self.t0.unwrap_or(ts);
        self.tasks.push(Task {
            pid,
            comm: comm.to_string(),
            name: String::new(),
            prio: 120,
            policy: None,
            set_affinity: false,
            cpus: BTreeSet::new(),
            start: Start::Delay(ts.saturating_sub(t0)),
            steps: Vec::new(),
            cpu_ns: 0,
            switch_ins: 0,
            wakes: WakeCounts::default(),
            other_wakers: BTreeMap::new(),
            exited: false,
            subtracted_ns: 0,
            unsubtracted_ns: 0,
            periodic: Vec::new(),
            timed: Vec::new(),
            st: St::Runnable,
            woken_at: ts,
            seg_ns: 0,
            pending_sub: 0,
            run_ns_total: 0,
            run_us_total: 0,
            sleep_ns_total: 0,
            sleep_us_total: 0,
        });
        let i = self.tasks.len() - 1;
        self.by_pid.insert(pid, i);
        Some(i)
    }

    fn cut(&mut self, ts: u64, why: String) {
        if !self.done {
            self.finish_at(ts);
            self.seen.cut = Some((ts, why));
        }
    }

    fn push_step(&mut self, i: usize, s: Step) {
        self.tasks[i].steps.push(s);
        self.steps += 1;
    }

    /// End task `i`'s current run at `ts` (it keeps running after, from `ts`), less `sub` ns.
    fn flush_run(&mut self, i: usize, ts: u64, sub: u64) {
        let t = &mut self.tasks[i];
        if let St::Running { since } = t.st {
            t.seg_ns += ts.saturating_sub(since);
            t.cpu_ns += ts.saturating_sub(since);
            t.st = St::Running { since: ts };
        }
        let want = sub + t.pending_sub;
        t.pending_sub = 0;
        let off = want.min(t.seg_ns);
        t.subtracted_ns += off;
        t.unsubtracted_ns += want - off;
        let ns = t.seg_ns - off;
        t.seg_ns = 0;
        // Microseconds with the remainder carried, so the thread's total stays exact.
        t.run_ns_total += ns;
        let us = (t.run_ns_total + 500) / 1000 - t.run_us_total;
        if us > 0 {
            t.run_us_total += us;
            self.push_step(i, Step::RunUs(us));
        }
    }

    fn push_sleep(&mut self, i: usize, ns: u64) {
        let t = &mut self.tasks[i];
        t.sleep_ns_total += ns;
        let us = (t.sleep_ns_total + 500) / 1000 - t.sleep_us_total;
        if us > 0 {
            t.sleep_us_total += us;
            self.push_step(i, Step::SleepUs(us));
        }
    }

    fn cpu(&mut self, cpu: u32) -> &mut CpuCtx {
        let c = cpu as usize;
        if self.cpus.len() <= c {
            self.cpus.resize(c + 1, CpuCtx::default());
        }
        &mut self.cpus[c]
    }

    /// The task current on `cpu` logged `rec`: make sure it is running in our books.
    fn current(&mut self, rec: &Rec) -> Option<usize> {
        self.running(rec.pid, rec.comm, rec.ts_ns, rec.cpu)
    }

    /// Task `pid` is running on `cpu` at `ts`: make it so in our books (None: not imported,
    /// or exited). A runnable task found running without a switch to it was switched in after
    /// the CPU's previous record: its run is taken to start there.
    fn running(&mut self, pid: u32, comm: &str, ts: u64, cpu: u32) -> Option<usize> {
        let cpu_last = self.cpus.get(cpu as usize).map_or(ts, |c| c.last_ts);
        let i = self.task(pid, comm, ts)?;
        let t = &mut self.tasks[i];
        match t.st {
            St::Dead => return None,
            St::Running { .. } => {}
            // Seen first while running: it ran since the start of the window at least.
            // Met for the first time, running: it starts here.
            St::Runnable if t.steps.is_empty() && t.cpu_ns == 0 && t.switch_ins == 0 && t.woken_at == ts => {
                t.st = St::Running { since: ts };
                t.cpus.insert(cpu);
            }
            St::Runnable => {
                t.st = St::Running { since: cpu_last.min(ts).max(t.woken_at) };
                t.switch_ins += 1;
                t.cpus.insert(cpu);
                self.seen.silent_switch_ins += 1;
            }
            St::Blocked { .. } => t.st = St::Running { since: ts },
        }
        Some(i)
    }

    /// One record of the stream (`line`: where it is, for the report).
    pub fn push(&mut self, rec: &Rec, line: u64) {
        self.push_inner(rec, line);
        if !matches!(rec.kind, Kind::Lost { .. }) {
            self.cpu(rec.cpu).last_ts = rec.ts_ns;
        }
    }

    fn push_inner(&mut self, rec: &Rec, line: u64) {
        self.seen.records += 1;
        if let Kind::Lost { count } = rec.kind {
            self.seen.lost_markers += 1;
            if self.seen.lost_at.is_none() {
                self.seen.lost_at = Some((line, rec.cpu, count));
                let at = self.seen.last_ts;
                // A count of 0: the trace says events were lost, not how many (Perfetto).
                let n = if count == 0 { "events".to_string() } else { format!("{count} events") };
                self.cut(at, format!("the ring buffer lost {n} on CPU {} (line {line})", rec.cpu));
            }
            return;
        }
        *self.seen.events.entry(rec.event.to_string()).or_default() += 1;
        self.seen.nr_cpus = self.seen.nr_cpus.max(rec.cpu + 1);
        self.seen.last_ts = rec.ts_ns;
        // Interrupt and timer context is followed even outside the window.
        {
            let c = self.cpu(rec.cpu);
            match rec.kind {
                Kind::IrqEntry => c.irq += 1,
                Kind::IrqExit => c.irq = c.irq.saturating_sub(1),
                Kind::SoftirqEntry => c.softirq += 1,
                Kind::SoftirqExit => c.softirq = c.softirq.saturating_sub(1),
                Kind::TimerEntry { wakeup } => {
                    c.timer += 1;
                    c.timer_wakeup = wakeup;
                }
                Kind::TimerExit => {
                    c.timer = c.timer.saturating_sub(1);
                    c.timer_wakeup = false;
                }
                _ => {}
            }
        }
        if self.done {
            return;
        }
        if let Some((a, b)) = self.opts.window {
            if rec.ts_ns < a {
                return;
            }
            if rec.ts_ns > b {
                self.finish_at(b);
                return;
            }
        }
        if self.seen.first_ts.is_none() {
            self.seen.first_ts = Some(rec.ts_ns);
            self.t0 = Some(self.opts.window.map_or(rec.ts_ns, |w| w.0));
        }
        if self.steps >= self.opts.max_steps {
            self.cut(rec.ts_ns, format!("{} steps in all (--max-steps)", self.opts.max_steps));
            return;
        }
        let ts = rec.ts_ns;
        match rec.kind {
            Kind::Switch { prev_pid, prev_prio, prev_state, next_pid, next_prio, next_comm } => {
                let prev_comm = if prev_pid == rec.pid { rec.comm } else { "" };
                if let Some(i) = self.running(prev_pid, prev_comm, ts, rec.cpu) {
                    self.tasks[i].prio = prev_prio;
                    if let St::Running { since } = self.tasks[i].st {
                        let t = &mut self.tasks[i];
                        t.seg_ns += ts.saturating_sub(since);
                        t.cpu_ns += ts.saturating_sub(since);
                        t.st = St::Running { since: ts };
                    }
                    if prev_state == PrevState::Runnable {
                        self.tasks[i].st = St::Runnable;
                    } else {
                        let sub = self.opts.subtract.block_ns;
                        self.flush_run(i, ts, sub);
                        self.tasks[i].st = St::Blocked { since: ts };
                    }
                }
                if let Some(i) = self.task(next_pid, next_comm, ts).filter(|&i| self.tasks[i].st != St::Dead) {
                    let t = &mut self.tasks[i];
                    t.prio = next_prio;
                    t.cpus.insert(rec.cpu);
                    t.switch_ins += 1;
                    t.st = St::Running { since: ts };
                }
            }
            Kind::Waking { pid, comm, .. } => {
                self.waking.insert(pid);
                self.wake(rec, pid, comm);
            }
            Kind::Wakeup { pid, comm, .. } if !self.waking.remove(&pid) => self.wake(rec, pid, comm),
            Kind::WakeupNew { pid, prio } => {
                if let Some(&i) = self.by_pid.get(&pid) {
                    self.tasks[i].prio = prio;
                }
            }
            Kind::Fork { child_pid, child_comm } => {
                // A pid seen before and forked again is a new task.
                if let Some(old) = self.by_pid.remove(&child_pid) {
                    self.tasks[old].st = St::Dead;
                }
                self.skipped.remove(&child_pid);
                let parent = self.current(rec);
                if let Some(c) = self.task(child_pid, child_comm, ts) {
                    if let Some(p) = parent {
                        self.flush_run(p, ts, 0);
                        self.push_step(p, Step::Fork(c));
                        let at = ts.saturating_sub(self.t0.unwrap_or(ts));
                        self.tasks[c].start = Start::Forked(p, at);
                        // The child inherits the policy (no SCHED_RESET_ON_FORK in the trace).
                        self.tasks[c].policy = self.tasks[p].policy;
                        self.tasks[c].prio = self.tasks[p].prio;
                    }
                }
            }
            Kind::Exit { pid } => {
                // The pid stays mapped to the dead task (it still switches out once) until a
                // fork reuses it.
                if let Some(&i) = self.by_pid.get(&pid) {
                    if self.tasks[i].st != St::Dead {
                        self.flush_run(i, ts, 0);
                        self.tasks[i].st = St::Dead;
                        self.tasks[i].exited = true;
                    }
                }
            }
            Kind::SetScheduler { pid, policy } => {
                let target = if pid == 0 { rec.pid } else { pid };
                if let Some(&i) = self.by_pid.get(&target) {
                    self.tasks[i].policy = Some(policy);
                } else if target == rec.pid {
                    if let Some(i) = self.current(rec) {
                        self.tasks[i].policy = Some(policy);
                    }
                }
            }
            Kind::SetAffinity { pid } => {
                let target = if pid == 0 { rec.pid } else { pid };
                if let Some(&i) = self.by_pid.get(&target) {
                    self.tasks[i].set_affinity = true;
                }
            }
            _ => {}
        }
    }

    /// The context a wakeup was made in.
    fn wake_ctx(&self, rec: &Rec) -> Ctx {
        let c = self.cpus.get(rec.cpu as usize).copied().unwrap_or_default();
        if c.timer > 0 {
            return if c.timer_wakeup { Ctx::HrtimerWakeup } else { Ctx::Timer };
        }
        match rec.ctx {
            Some(x) if x != Ctx::Task => x,
            _ if c.irq > 0 => Ctx::Irq,
            _ if c.softirq > 0 => Ctx::Softirq,
            _ => Ctx::Task,
        }
    }

    fn wake(&mut self, rec: &Rec, pid: u32, comm: &str) {
        let ts = rec.ts_ns;
        let Some(&w) = self.by_pid.get(&pid) else {
            // A task not seen yet, woken: it was blocked since before the window.
            let Some(w) = self.task(pid, comm, ts) else { return };
            self.tasks[w].start = Start::Delay(0);
            self.wake_blocked(rec, w, self.t0.unwrap_or(ts));
            return;
        };
        match self.tasks[w].st {
            St::Blocked { since } => self.wake_blocked(rec, w, since),
            St::Dead => {}
            _ => self.tasks[w].wakes.not_blocked += 1,
        }
    }

    fn wake_blocked(&mut self, rec: &Rec, w: usize, since: u64) {
        let ts = rec.ts_ns;
        let ctx = self.wake_ctx(rec);
        self.tasks[w].st = St::Runnable;
        self.tasks[w].woken_at = ts;
        let waker =
            if ctx == Ctx::Task && rec.pid != 0 && rec.pid != super::UNKNOWN_PID { self.current(rec) } else { None };
        match waker {
            Some(a) if a != w => {
                let id = self.seen.edges;
                self.seen.edges += 1;
                let sub = self.opts.subtract.wake_ns;
                self.flush_run(a, ts, sub);
                self.push_step(a, Step::Barrier(id));
                self.push_step(w, Step::Barrier(id));
                let t = &mut self.tasks[w];
                t.wakes.matched += 1;
                t.pending_sub += self.opts.subtract.wakein_ns;
            }
            _ => {
                let before = self.tasks[w].steps.len();
                self.push_sleep(w, ts.saturating_sub(since));
                let t = &mut self.tasks[w];
                if matches!(ctx, Ctx::HrtimerWakeup | Ctx::Irq) && t.steps.len() > before {
                    t.timed.push(TimedWake { step: before, since, at: ts });
                }
                t.pending_sub += self.opts.subtract.wakein_ns;
                match ctx {
                    Ctx::HrtimerWakeup | Ctx::Timer => t.wakes.timer += 1,
                    Ctx::Irq => t.wakes.hardirq += 1,
                    Ctx::Softirq => t.wakes.softirq += 1,
                    Ctx::Task if rec.pid == 0 => t.wakes.idle += 1,
                    Ctx::Task => {
                        t.wakes.by_other_task += 1;
                        if t.other_wakers.len() < 8 || t.other_wakers.contains_key(rec.comm) {
                            *t.other_wakers.entry(rec.comm.to_string()).or_default() += 1;
                        }
                    }
                }
            }
        }
    }

    /// End every thread at `ts`.
    fn finish_at(&mut self, ts: u64) {
        if self.done {
            return;
        }
        self.done = true;
        for i in 0..self.tasks.len() {
            if matches!(self.tasks[i].st, St::Running { .. }) {
                self.flush_run(i, ts, 0);
            }
        }
    }

    /// End the import (the end of the trace), turn periodic stretches into timers and name
    /// the threads.
    pub fn finish(&mut self) {
        let end = self.seen.last_ts;
        self.finish_at(end);
        let t0 = self.t0.unwrap_or(0);
        for t in &mut self.tasks {
            let start = t0
                + match t.start {
                    Start::Delay(ns) | Start::Forked(_, ns) => ns,
                };
            periodic(t, start);
        }
        let mut used: BTreeSet<String> = BTreeSet::new();
        for t in &mut self.tasks {
            let base: String = t
                .comm
                .chars()
                .map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '.' || c == '-' { c } else { '_' })
                .collect();
            let mut name = format!("{base}-{}", t.pid);
            let mut n = 1;
            while !used.insert(name.clone()) {
                n += 1;
                name = format!("{base}-{}.{n}", t.pid);
            }
            t.name = name;
        }
    }

    /// The events the trace lacks that the import needs (refused) or would use (notes).
    pub fn missing(&self) -> (Vec<&'static str>, Vec<String>) {
        let has = |e: &str| self.seen.events.contains_key(e);
        let mut need = Vec::new();
        if !has("sched_switch") {
            need.push("sched:sched_switch");
        }
        if !has("sched_waking") && !has("sched_wakeup") {
            need.push("sched:sched_waking");
        }
        let mut notes = Vec::new();
        if !has("sched_waking") {
            notes.push(
                "no sched_waking: wakers are taken from sched_wakeup, which a remote wakeup logs from the IPI on the \
                 wakee's CPU, so such wakeups count as interrupt wakeups"
                    .to_string(),
            );
        }
        if !has("sched_process_fork") {
            notes.push("no sched_process_fork: threads start where first seen (`delay`), not by `fork`".into());
        }
        if !has("sched_process_exit") {
            notes.push("no sched_process_exit: threads end at the end of the window".into());
        }
        if !has("irq_handler_entry") && !has("softirq_entry") && self.seen.events.contains_key("sched_switch") {
            notes.push(
                "no irq/softirq events: a wakeup in an interrupt taken on a busy CPU is attributed to the \
                 interrupted task when the layout has no flags column (perf script)"
                    .into(),
            );
        }
        if !has("hrtimer_expire_entry") {
            notes.push("no timer events: timer wakeups are not told from other interrupt wakeups".into());
        }
        if !has("sys_sched_setscheduler") && !has("sys_enter_sched_setscheduler") {
            notes.push(format!(
                "no sched_setscheduler syscall events: RT tasks are given {DEFAULT_RT_POLICY} (sched_switch's prio \
                 does not tell FIFO from RR)"
            ));
        }
        (need, notes)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::import::text::parse_line;

    pub(crate) fn build(lines: &[&str], opts: Options) -> Builder {
        let mut b = Builder::new(opts);
        for (n, l) in lines.iter().enumerate() {
            if let Some(r) = parse_line(l).unwrap() {
                b.push(&r, n as u64 + 1);
            }
        }
        b.finish();
        b
    }

    const PAIR: &[&str] = &[
        " a-10 [000] d..2. 1.000000: sched_switch: prev_comm=swapper/0 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=a next_pid=10 next_prio=120",
        " a-10 [000] d..2. 1.000050: sched_switch: prev_comm=a prev_pid=10 prev_prio=120 prev_state=S ==> next_comm=b next_pid=11 next_prio=120",
        " b-11 [000] d..3. 1.000080: sched_waking: comm=a pid=10 prio=120 target_cpu=000",
        " b-11 [000] d..2. 1.000100: sched_switch: prev_comm=b prev_pid=11 prev_prio=120 prev_state=S ==> next_comm=a next_pid=10 next_prio=120",
        " <idle>-0 [000] d.h3. 1.000300: sched_waking: comm=b pid=11 prio=120 target_cpu=000",
        " a-10 [000] d..2. 1.000400: sched_switch: prev_comm=a prev_pid=10 prev_prio=120 prev_state=R+ ==> next_comm=b next_pid=11 next_prio=120",
        " b-11 [000] d..2. 1.000500: sched_switch: prev_comm=b prev_pid=11 prev_prio=120 prev_state=S ==> next_comm=a next_pid=10 next_prio=120",
        " a-10 [000] ..... 1.000600: sched_process_exit: comm=a pid=10 prio=120 group_dead=1",
    ];

    #[test]
    fn runs_sleeps_and_barriers_follow_the_trace() {
        let b = build(PAIR, Options::default());
        let a = &b.tasks[0];
        assert_eq!((a.comm.as_str(), a.pid), ("a", 10));
        // a: 50 us, blocks; woken by b at 80 (b's run 80..80); runs 100..400 and 500..600.
        assert_eq!(a.steps, vec![Step::RunUs(50), Step::Barrier(0), Step::RunUs(400)]);
        assert_eq!(a.cpu_ns, 450_000);
        assert!(a.exited);
        let bb = &b.tasks[1];
        // b: runs 50..80, wakes a, runs 80..100, blocks; woken from an interrupt at 300 after
        // 200 us asleep; runs 400..500.
        assert_eq!(
            bb.steps,
            vec![Step::RunUs(30), Step::Barrier(0), Step::RunUs(20), Step::SleepUs(200), Step::RunUs(100)]
        );
        assert_eq!((bb.wakes.matched, bb.wakes.hardirq, a.wakes.matched), (0, 1, 1));
    }

    /// A task on CPU 0 that, `n` times, runs `run_us(k)` and sleeps until a timer interrupt
    /// at `wake_us(k)` (times in us from 1 s).
    fn timed_task(n: u64, run_us: impl Fn(u64) -> u64, mut wake_us: impl FnMut(u64) -> u64) -> Vec<String> {
        let ts = |us: u64| format!("{}.{:06}", 1 + us / 1_000_000, us % 1_000_000);
        let mut v = vec![format!(
            " p-20 [000] d..2. {}: sched_switch: prev_comm=swapper/0 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=p next_pid=20 next_prio=120",
            ts(0)
        )];
        let mut at = 0;
        for k in 0..n {
            let block = at + run_us(k);
            let wake = wake_us(k);
            assert!(wake > block);
            v.push(format!(" p-20 [000] d..2. {}: sched_switch: prev_comm=p prev_pid=20 prev_prio=120 prev_state=S ==> next_comm=swapper/0 next_pid=0 next_prio=120", ts(block)));
            v.push(format!(" <idle>-0 [000] d.h2. {}: sched_waking: comm=p pid=20 prio=120 target_cpu=000", ts(wake)));
            v.push(format!(" <idle>-0 [000] d..2. {}: sched_switch: prev_comm=swapper/0 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=p next_pid=20 next_prio=120", ts(wake + 5)));
            at = wake + 5;
        }
        v
    }

    fn timers(t: &Task) -> Vec<u64> {
        t.steps
            .iter()
            .filter_map(|s| if let Step::Timer { period_us, .. } = s { Some(*period_us) } else { None })
            .collect()
    }

    /// A period kept while the runs vary (the sleeps absorb them) becomes rt-app timers from
    /// its first wakeup two periods after the start; a fixed sleep after varying runs (a
    /// nanosleep loop) stays sleeps, and so does a stretch where nothing varies.
    #[test]
    fn periodic_wakeups_become_timers_and_fixed_sleeps_stay_sleeps() {
        let jitter = |k: u64| [0, 7, 3, 9, 1, 6, 2, 8, 4, 5][k as usize % 10];
        // Period 1000 us, runs 100-190 us, wakeups on the period's boundaries (+0-9 us).
        let lines = timed_task(12, |k| 100 + 10 * jitter(k), |k| 1000 * (k + 1) + jitter(k + 3));
        let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
        let b = build(&refs, Options::default());
        let t = &b.tasks[0];
        assert_eq!(t.periodic.len(), 1, "{:?}", t.steps);
        assert!((990..=1010).contains(&t.periodic[0].period_us), "{:?}", t.periodic);
        // Wakeups at 1, 2, ... 12 ms: anchored at the one at 2 ms (two periods after the
        // start), the timer after it, then 10 sleeps that became timers.
        assert_eq!(timers(t).len(), 11);
        assert_eq!(t.periodic[0].timers, 10);
        let sleeps = t.steps.iter().filter(|s| matches!(s, Step::SleepUs(_))).count();
        assert_eq!(sleeps, 2);
        let json = crate::import::report::workload_json(&b);
        let p = t.periodic[0].period_us;
        assert!(
            json.contains(&format!("{{ \"ref\": \"unique-p0\", \"period\": {p}, \"mode\": \"relative\" }}")),
            "{json}"
        );

        // A nanosleep loop: each sleep 500 us after runs of 100-190 us.
        let mut wake = 0;
        let lines = timed_task(
            12,
            |k| 100 + 10 * jitter(k),
            |k| {
                wake += 5 + 100 + 10 * jitter(k) + 500 + jitter(k + 3) / 3;
                wake
            },
        );
        let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
        let b = build(&refs, Options::default());
        assert!(b.tasks[0].periodic.is_empty() && timers(&b.tasks[0]).is_empty(), "{:?}", b.tasks[0].steps);

        // Nothing varies: a period and a fixed sleep look the same; sleeps stay.
        let lines = timed_task(12, |_| 100, |k| 1000 * (k + 1));
        let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
        let b = build(&refs, Options::default());
        assert!(b.tasks[0].periodic.is_empty(), "{:?}", b.tasks[0].steps);
    }

    #[test]
    fn subtraction_takes_model_costs_off_the_runs() {
        let opts =
            Options { subtract: Subtract { block_ns: 3_000, wake_ns: 5_000, wakein_ns: 1_000 }, ..Default::default() };
        let b = build(PAIR, opts);
        // a: 50 - 3 (block); after the wake: 400 - 1 (switch-in).
        assert_eq!(b.tasks[0].steps, vec![Step::RunUs(47), Step::Barrier(0), Step::RunUs(399)]);
        // b: 30 - 5 (wake), 20 - 3 (block), then 100 - 1.
        assert_eq!(b.tasks[1].steps[..3], [Step::RunUs(25), Step::Barrier(0), Step::RunUs(17)]);
        assert_eq!(b.tasks[0].subtracted_ns, 4_000);
    }

    #[test]
    fn kernel_threads_and_tracers_stay_out_unless_asked() {
        let l = [
            " kworker/0:1-5 [000] d..2. 1.0: sched_switch: prev_comm=kworker/0:1 prev_pid=5 prev_prio=120 prev_state=I ==> next_comm=perf next_pid=6 next_prio=120",
            " perf-6 [000] d..2. 1.1: sched_switch: prev_comm=perf prev_pid=6 prev_prio=120 prev_state=S ==> next_comm=x next_pid=7 next_prio=120",
        ];
        assert_eq!(build(&l, Options::default()).tasks.len(), 1);
        assert_eq!(build(&l, Options { all_tasks: true, ..Default::default() }).tasks.len(), 3);
        let only = build(&l, Options { comms: vec!["kwork*".into()], ..Default::default() });
        assert_eq!(only.tasks.iter().map(|t| t.pid).collect::<Vec<_>>(), vec![5]);
    }

    #[test]
    fn a_lost_events_marker_ends_the_import_there() {
        let mut l = PAIR.to_vec();
        l.insert(4, "CPU:0 [LOST 12 EVENTS]");
        let b = build(&l, Options::default());
        assert!(b.seen.cut.as_ref().unwrap().1.contains("lost 12 events"));
        assert_eq!(b.tasks[1].steps, vec![Step::RunUs(30), Step::Barrier(0), Step::RunUs(20)]);
    }
}
