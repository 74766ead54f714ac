//! Path durations from pairs of trace records: one pass over a capture's ftrace text collects,
//! for every path of [`Path`], one [`Sample`] per occurrence: the time between the pair's two
//! records and how many records the kernel wrote inside that time on the CPU whose time it is
//! (so that the solve can take the tracing overhead out of each sample).
//!
//! A record's cost falls after its timestamp (the ring buffer takes the time when it reserves
//! the event, then fills and commits it), so an interval between two records of one CPU holds
//! the opening record's cost and the cost of every record strictly inside: `records = inner +
//! 1`. An interval from one CPU to another holds only the target CPU's inner records.

use crate::validate::Line;
use std::collections::{BTreeMap, BTreeSet};

/// The paths measured. Each is a pair of trace records (or a difference of two nested pairs);
/// docs/costs.md ("Calibration") says which model costs each one determines.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Path {
    /// Two consecutive records of one CPU (nonzero gaps under 2 us): a bound on one record.
    Gap,
    /// `csd_function_exit` followed at once by `call_function_single_exit` on one CPU: between
    /// them the flush finds its list empty and the vector returns, a few instructions: the null
    /// pair, whose interval is one record's write.
    NullPair,
    /// `reschedule_entry` -> `reschedule_exit`: `scheduler_ipi()` and the irq statistics.
    Reschedule,
    /// `csd_function_entry` -> `_exit` of `sched_ttwu_pending`.
    CsdTtwuPending,
    /// `call_function_single_entry` -> `_exit` minus the one `sched_ttwu_pending` csd inside
    /// it: the flush of the call-single queue and the csd call around it.
    CallFunctionSingleFlush,
    /// `call_function_single_entry` -> `_exit`, whole.
    CallFunctionSingle,
    /// `hrtimer_expire_entry` -> `_exit` of `hrtimer_wakeup` (a sleeper's wakeup).
    HrtimerWakeup,
    /// `hrtimer_expire_entry` -> `_exit` of `tick_nohz_handler` (the tick's work).
    HrtimerTick,
    /// `local_timer_entry` -> `_exit`, whole.
    LocalTimer,
    /// `local_timer_entry` -> `_exit` minus its hrtimer callbacks: `hrtimer_interrupt()`'s own
    /// work and the clockevent reprogram.
    LocalTimerOverhead,
    /// `hrtimer_start` of a task's `hrtimer_wakeup` sleeper -> the `write_msr` of
    /// `MSR_IA32_TSC_DEADLINE` (0x6e0) that programs it.
    HrtimerArm,
    /// `ipi_send_cpu` -> the sender's `write_msr` of the x2APIC ICR (0x830).
    IpiSend,
    /// The ICR `write_msr` -> the target's vector entry, target halted (idle task current).
    IpiDeliverIdle,
    /// The ICR `write_msr` -> the target's vector entry, target running a task.
    IpiDeliverBusy,
    /// `sched_switch` to the idle task -> its `cpu_idle` entry, no `tick_stop` inside.
    IdleEntryTickKept,
    /// The same with a successful `tick_stop` inside.
    IdleEntryTickStopped,
    /// `cpu_idle` exit -> the idle task's `sched_switch` away, after an idle period that
    /// stopped the tick (so the exit restarts it); only the restart's `hrtimer_start` and
    /// `write_msr` records inside.
    IdleExitTickRestart,
    /// The same after an idle period that kept the tick.
    IdleExitTickKept,
    /// `softirq_entry` -> `_exit` of SCHED.
    SoftirqSched,
    /// A `getppid()` loop: `sys_enter` -> the next `sys_enter` of the same task, one
    /// `sys_exit` between.
    Syscall,
    /// A pipe `write(2)` of the program that wakes nobody: `sys_enter` -> `sys_exit`, no record
    /// between.
    PipeWrite,
    /// A pipe `read(2)` of the program that finds data: the same.
    PipeRead,
    /// The socket capture's `write(2)` of 100 bytes to an AF_UNIX stream socket that wakes
    /// nobody: `sys_enter` -> `sys_exit`, no record between (the [`Path::PipeWrite`] pair of
    /// that capture, relabelled by [`CaptureResult::relabel_as_socket`]).
    SockWrite,
    /// Its `read(2)` of 100 bytes that finds one queued skb: the same.
    SockRead,
    /// `sched_waking` -> `sched_wakeup` of the same task on one CPU, the wakee queued there.
    WakingToWakeupLocal,
    /// `sched_waking` -> the `sched_switch` that runs the wakee, by where it ran.
    WakeToRunSameBusy,
    WakeToRunSameIdle,
    WakeToRunCrossBusy,
    WakeToRunCrossIdle,
    /// An hrtimer's programmed (hard) expiry, `hrtimer_start`'s `expires`, -> the `now` that
    /// `hrtimer_interrupt()` read on the interrupt that ran it first (`hrtimer_expire_entry`),
    /// the CPU halted in an idle state other than POLL: both are CLOCK_MONOTONIC values of the
    /// kernel, so no trace clock enters.
    TimerLateHalted,
    /// The same, the CPU running (not in an idle state).
    TimerLateRunning,
}

impl Path {
    pub const ALL: [Path; 31] = [
        Path::Gap,
        Path::NullPair,
        Path::Reschedule,
        Path::CsdTtwuPending,
        Path::CallFunctionSingleFlush,
        Path::CallFunctionSingle,
        Path::HrtimerWakeup,
        Path::HrtimerTick,
        Path::LocalTimer,
        Path::LocalTimerOverhead,
        Path::HrtimerArm,
        Path::IpiSend,
        Path::IpiDeliverIdle,
        Path::IpiDeliverBusy,
        Path::IdleEntryTickKept,
        Path::IdleEntryTickStopped,
        Path::IdleExitTickRestart,
        Path::IdleExitTickKept,
        Path::SoftirqSched,
        Path::Syscall,
        Path::PipeWrite,
        Path::PipeRead,
        Path::SockWrite,
        Path::SockRead,
        Path::WakingToWakeupLocal,
        Path::WakeToRunSameBusy,
        Path::WakeToRunSameIdle,
        Path::WakeToRunCrossBusy,
        Path::WakeToRunCrossIdle,
        Path::TimerLateHalted,
        Path::TimerLateRunning,
    ];

    /// The pair as a reader sees it.
    pub fn label(self) -> &'static str {
        match self {
            Path::Gap => "gap between two records of one CPU",
            Path::NullPair => "csd_function_exit -> call_function_single_exit (null pair)",
            Path::Reschedule => "reschedule_entry -> exit",
            Path::CsdTtwuPending => "csd sched_ttwu_pending entry -> exit",
            Path::CallFunctionSingleFlush => "call_function_single entry -> exit minus its csd",
            Path::CallFunctionSingle => "call_function_single entry -> exit",
            Path::HrtimerWakeup => "hrtimer_wakeup expire entry -> exit",
            Path::HrtimerTick => "tick_nohz_handler expire entry -> exit",
            Path::LocalTimer => "local_timer entry -> exit",
            Path::LocalTimerOverhead => "local_timer entry -> exit minus its hrtimer callbacks",
            Path::HrtimerArm => "hrtimer_start -> TSC-deadline write_msr",
            Path::IpiSend => "ipi_send_cpu -> ICR write_msr (sender)",
            Path::IpiDeliverIdle => "ICR write_msr -> vector entry, target halted",
            Path::IpiDeliverBusy => "ICR write_msr -> vector entry, target running",
            Path::IdleEntryTickKept => "switch to idle -> cpu_idle entry, tick kept",
            Path::IdleEntryTickStopped => "switch to idle -> cpu_idle entry, tick stopped",
            Path::IdleExitTickRestart => "cpu_idle exit -> switch from idle, tick restarted",
            Path::IdleExitTickKept => "cpu_idle exit -> switch from idle, tick running",
            Path::SoftirqSched => "softirq SCHED entry -> exit",
            Path::Syscall => "getppid(): sys_enter -> next sys_enter",
            Path::PipeWrite => "pipe write(2) waking nobody: sys_enter -> sys_exit",
            Path::PipeRead => "pipe read(2) finding data: sys_enter -> sys_exit",
            Path::SockWrite => "AF_UNIX stream write(2) of 100 bytes waking nobody: sys_enter -> sys_exit",
            Path::SockRead => "AF_UNIX stream read(2) of 100 bytes finding data: sys_enter -> sys_exit",
            Path::WakingToWakeupLocal => "sched_waking -> sched_wakeup, same CPU",
            Path::WakeToRunSameBusy => "sched_waking -> switch-in, same CPU, busy",
            Path::WakeToRunSameIdle => "sched_waking -> switch-in, same CPU, idle",
            Path::WakeToRunCrossBusy => "sched_waking -> switch-in, other CPU, busy",
            Path::WakeToRunCrossIdle => "sched_waking -> switch-in, other CPU, idle",
            Path::TimerLateHalted => "hrtimer expires -> hrtimer_interrupt's now, CPU halted",
            Path::TimerLateRunning => "hrtimer expires -> hrtimer_interrupt's now, CPU running",
        }
    }
}

/// One occurrence of a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sample {
    pub ns: u64,
    /// Records whose cost falls inside the interval.
    pub records: u32,
}

/// What one capture gave.
#[derive(Debug, Clone, Default)]
pub struct CaptureResult {
    pub samples: BTreeMap<Path, Vec<Sample>>,
    /// Trace lines read and lines that were events.
    pub lines: u64,
    pub records: u64,
    /// The program's pids (roots and every task they forked).
    pub pids: BTreeSet<u32>,
    /// The program's lifetime in the trace (first to last record of one of its tasks), ns.
    pub span_ns: u64,
    /// CPU time of the program's tasks and of other tasks (not idle) inside its lifetime.
    pub program_ns: u64,
    pub foreign_ns: u64,
    pub nr_cpus: u32,
    /// The trace says events were lost.
    pub lost_events: bool,
    /// Every [`Path::TimerLateHalted`] sample with the halt it ended: `[halt_ns, late_ns]`,
    /// the halt from the `cpu_idle` entry to the timer's programmed expiry (trace clock), the
    /// lateness as the path's (`now` - `expires`, CLOCK_MONOTONIC).
    pub halted_timer: Vec<[u64; 2]>,
    /// The guest's own path after such a wake: `[halt_ns, ns]` from the `local_timer_entry` of
    /// a halted CPU whose first callback was an `hrtimer_wakeup` to that CPU's switch from idle
    /// to a task, for halts that stopped the tick (so every sample holds the tick's restart).
    pub halted_switch: Vec<[u64; 2]>,
}

impl CaptureResult {
    /// The socket capture: its program's `write(2)`s and `read(2)`s are on an AF_UNIX stream
    /// socket, not a pipe (the trace's raw syscall records do not say which), so its
    /// [`Path::PipeWrite`] and [`Path::PipeRead`] samples become [`Path::SockWrite`] and
    /// [`Path::SockRead`].
    pub fn relabel_as_socket(&mut self) {
        for (from, to) in [(Path::PipeWrite, Path::SockWrite), (Path::PipeRead, Path::SockRead)] {
            if let Some(v) = self.samples.remove(&from) {
                self.samples.entry(to).or_default().extend(v);
            }
        }
    }

    /// Other tasks' share of the CPUs during the program, permille. Without a program (the
    /// idle capture) every task is "other": the share of the CPUs that was not idle.
    pub fn foreign_permille(&self) -> u64 {
        let cap = self.span_ns.max(1) as u128 * self.nr_cpus.max(1) as u128;
        (self.foreign_ns as u128 * 1000 / cap) as u64
    }
}

/// `MSR_IA32_TSC_DEADLINE` and the x2APIC ICR, as `write_msr` prints them.
const MSR_TSC_DEADLINE: &str = "6e0";
const MSR_X2APIC_ICR: &str = "830";
/// x86-64 `getppid`, `read`, `write`.
const NR_GETPPID: u64 = 110;
const NR_READ: u64 = 0;
const NR_WRITE: u64 = 1;
/// Gaps at or above this are not record costs.
const GAP_MAX_NS: u64 = 2000;
/// An ICR write this long after its `ipi_send_cpu` is not the send's.
const SEND_WINDOW_NS: u64 = 200_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum IpiKind {
    Csd,
    Resched,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum HrKind {
    Wakeup,
    Tick,
    Other,
}

/// An open `call_function_single` vector: (ts, idx, the `sched_ttwu_pending` csd inside it as
/// (ns, records), csds seen).
type OpenCfs = (u64, u64, Option<(u64, u64)>, u32);

/// Per-CPU state of the pass.
#[derive(Debug, Clone, Default)]
struct CpuState {
    last_ts: Option<u64>,
    /// Records of this CPU so far.
    idx: u64,
    /// The task running (from `sched_switch`), once known.
    curr: Option<u32>,
    since: u64,
    resched: Option<(u64, u64)>,
    /// Open csd functions: (sched_ttwu_pending?, ts, idx).
    csd: Vec<(bool, u64, u64)>,
    /// Open call_function_single: (ts, idx, csd samples inside: (ns, records), csds seen).
    cfs: Option<OpenCfs>,
    /// Open local_timer: (ts, idx, callbacks' ns, callbacks' records).
    lt: Option<(u64, u64, u64, u64)>,
    /// Open hrtimer callbacks: (address, kind, ts, idx).
    hr: Vec<(String, HrKind, u64, u64)>,
    /// A task's `hrtimer_start` of a sleeper waiting for its TSC-deadline write.
    arm: Option<(u64, u64)>,
    /// The last `ipi_send_cpu` waiting for its ICR write: (ts, idx, target, kind).
    send: Option<(u64, u64, u32, IpiKind)>,
    /// Switched to idle, waiting for the `cpu_idle` entry: (ts, idx, tick_stop seen).
    idle_entry: Option<(u64, u64, bool)>,
    /// The tick was stopped since the last idle exit.
    tick_stopped: bool,
    /// `cpu_idle` exit waiting for the switch away: (ts, idx, tick was stopped, only
    /// write_msr records inside so far).
    idle_exit: Option<(u64, u64, bool, bool)>,
    softirq: Option<(u64, u64)>,
    /// The last `sched_waking` logged here: (wakee pid, ts, idx).
    waking: Option<(u32, u64, u64)>,
    /// The last two records of this CPU: (pid, event, syscall nr, ts).
    hist: [(u32, u8, u64, u64); 2],
    /// The last record of this CPU was a `csd_function_exit`, at this time.
    after_csd_exit: Option<u64>,
    /// The idle state entered (`cpu_idle` entry) and not yet left.
    idle_state: Option<u64>,
    /// When it was entered.
    idle_since: u64,
    /// A halted timer wake of a sleeper waiting for the switch away from idle: (the
    /// `local_timer_entry` ts, the halt, the tick was stopped).
    refill: Option<(u64, u64, bool)>,
    /// A `local_timer_entry` whose first hrtimer callback has not been seen yet.
    lt_first: bool,
}

/// `hist` event codes.
const H_ENTER: u8 = 1;
const H_EXIT: u8 = 2;
const H_OTHER: u8 = 3;

/// One pass over `text`. `roots` are the program's root pids (their forks join them);
/// `tsc_khz` converts `x86-tsc` counts (ignored for a clock printing seconds).
pub fn collect(text: &str, roots: &[u32], tsc_khz: Option<u64>) -> CaptureResult {
    let mut r =
        CaptureResult { lost_events: text.contains("[LOST ") && text.contains(" EVENTS]"), ..Default::default() };
    // Pass 1: the program's pids and lifetime.
    let mut pids: BTreeSet<u32> = roots.iter().copied().collect();
    let (mut first, mut last) = (u64::MAX, 0u64);
    let mut t_first = u64::MAX;
    let mut t_last = 0;
    for l in text.lines().filter_map(|l| Line::parse_clock(l, tsc_khz)) {
        r.nr_cpus = r.nr_cpus.max(l.cpu + 1);
        t_first = t_first.min(l.ts_ns);
        t_last = t_last.max(l.ts_ns);
        if l.event == "sched_process_fork" && l.num("pid").is_some_and(|p| pids.contains(&(p as u32))) {
            if let Some(c) = l.num("child_pid") {
                pids.insert(c as u32);
            }
        }
        if pids.contains(&l.pid) {
            first = first.min(l.ts_ns);
            last = last.max(l.ts_ns);
        }
    }
    if roots.is_empty() {
        // No program (the idle capture): the whole trace.
        (first, last) = (t_first, t_last);
    }
    if first > last {
        return r;
    }
    r.span_ns = last - first;
    r.pids = pids;
    let mut cpus: Vec<CpuState> = vec![CpuState::default(); r.nr_cpus as usize];
    // Wakees waiting to run: pid -> (waking ts, waker CPU, the CPUs' idleness then).
    let mut woken: BTreeMap<u32, (u64, u32, Vec<bool>)> = BTreeMap::new();
    // ICR writes waiting for their vector: (target, kind, ts, target's idx then, target idle).
    let mut inflight: Vec<(u32, IpiKind, u64, u64, bool)> = Vec::new();
    // Armed hrtimers: address -> programmed (hard) expiry, CLOCK_MONOTONIC ns.
    let mut hr_expires: BTreeMap<String, u64> = BTreeMap::new();
    let add = |r: &mut CaptureResult, p: Path, ns: u64, records: u64| {
        r.samples.entry(p).or_default().push(Sample { ns, records: records.min(u32::MAX as u64) as u32 });
    };
    for line in text.lines() {
        r.lines += 1;
        let Some(l) = Line::parse_clock(line, tsc_khz) else { continue };
        r.records += 1;
        let cpu = l.cpu as usize;
        let ts = l.ts_ns;
        let in_span = ts >= first && ts <= last;
        // Gaps, and the record index.
        {
            let c = &mut cpus[cpu];
            if let Some(p) = c.last_ts {
                let g = ts.saturating_sub(p);
                if g > 0 && g < GAP_MAX_NS && in_span {
                    add(&mut r, Path::Gap, g, 0);
                }
            }
            c.last_ts = Some(ts);
            c.idx += 1;
        }
        let idx = cpus[cpu].idx;
        let task_ctx = l.flags.get(2) == Some(&b'.');
        if cpus[cpu].curr.is_none() && task_ctx && l.event != "sched_switch" {
            cpus[cpu].curr = Some(l.pid);
            cpus[cpu].since = ts.max(first);
        }
        // A `cpu_idle` exit waits for the switch away; anything but the tick's restart (its
        // hrtimer_start and the clockevent write_msr) spoils it.
        if !matches!(l.event, "sched_switch" | "write_msr" | "hrtimer_start") {
            if let Some(e) = cpus[cpu].idle_exit.as_mut() {
                e.3 = false;
            }
        }
        // The syscall loop: enter, exit, enter of one task.
        let (hev, hnr) = match l.event {
            "sys_enter" => (H_ENTER, sys_nr(l.args)),
            "sys_exit" => (H_EXIT, sys_nr(l.args)),
            _ => (H_OTHER, None),
        };
        {
            let c = &mut cpus[cpu];
            let [a, b] = c.hist;
            if hev == H_ENTER
                && hnr == Some(NR_GETPPID)
                && r.pids.contains(&l.pid)
                && a == (l.pid, H_ENTER, NR_GETPPID, a.3)
                && b == (l.pid, H_EXIT, NR_GETPPID, b.3)
            {
                add(&mut r, Path::Syscall, ts - a.3, 2);
            }
            // A read or write with no record between its enter and exit.
            if hev == H_EXIT && r.pids.contains(&l.pid) && b.0 == l.pid && b.1 == H_ENTER && hnr == Some(b.2) {
                match b.2 {
                    NR_READ => add(&mut r, Path::PipeRead, ts - b.3, 1),
                    NR_WRITE => add(&mut r, Path::PipeWrite, ts - b.3, 1),
                    _ => {}
                }
            }
            c.hist = [b, (l.pid, hev, hnr.unwrap_or(u64::MAX), ts)];
        }
        match l.event {
            "reschedule_entry" => cpus[cpu].resched = Some((ts, idx)),
            "reschedule_exit" => {
                if let Some((s, i)) = cpus[cpu].resched.take() {
                    add(&mut r, Path::Reschedule, ts - s, idx - i);
                }
            }
            "call_function_single_entry" => cpus[cpu].cfs = Some((ts, idx, None, 0)),
            "call_function_single_exit" => {
                if let Some(s) = cpus[cpu].after_csd_exit {
                    add(&mut r, Path::NullPair, ts - s, 1);
                }
                if let Some((s, i, csd, n)) = cpus[cpu].cfs.take() {
                    add(&mut r, Path::CallFunctionSingle, ts - s, idx - i);
                    if let (Some((cns, crec)), 1) = (csd, n) {
                        let (dur, rec) = (ts - s, idx - i);
                        if dur >= cns && rec >= crec {
                            add(&mut r, Path::CallFunctionSingleFlush, dur - cns, rec - crec);
                        }
                    }
                }
            }
            "csd_function_entry" => {
                let ttwu = l.arg("func") == Some("sched_ttwu_pending");
                cpus[cpu].csd.push((ttwu, ts, idx));
            }
            "csd_function_exit" => {
                if let Some((ttwu, s, i)) = cpus[cpu].csd.pop() {
                    // The csd interval holds its entry record and its inner ones; the exit
                    // record's cost falls after it.
                    let rec = idx - i;
                    if ttwu {
                        add(&mut r, Path::CsdTtwuPending, ts - s, rec);
                    }
                    if let Some(cfs) = cpus[cpu].cfs.as_mut() {
                        cfs.3 += 1;
                        // Its exit record's cost falls outside it, in the flush's part.
                        cfs.2 = ttwu.then_some((ts - s, rec));
                    }
                }
            }
            "local_timer_entry" => {
                cpus[cpu].lt = Some((ts, idx, 0, 0));
                cpus[cpu].lt_first = true;
            }
            "local_timer_exit" => {
                if let Some((s, i, cbns, cbrec)) = cpus[cpu].lt.take() {
                    add(&mut r, Path::LocalTimer, ts - s, idx - i);
                    let (dur, rec) = (ts - s, idx - i);
                    if dur >= cbns && rec >= cbrec {
                        add(&mut r, Path::LocalTimerOverhead, dur - cbns, rec - cbrec);
                    }
                }
            }
            "hrtimer_expire_entry" => {
                let kind = match l.arg("function") {
                    Some("hrtimer_wakeup") => HrKind::Wakeup,
                    Some("tick_nohz_handler") | Some("tick_sched_timer") => HrKind::Tick,
                    _ => HrKind::Other,
                };
                let addr = l.arg("hrtimer").unwrap_or("").to_string();
                // The interrupt was programmed for the earliest hard expiry: its first
                // callback's lateness is the timer interrupt's.
                let armed = hr_expires.remove(&addr);
                if std::mem::take(&mut cpus[cpu].lt_first) && in_span {
                    if let (Some(e), Some(now)) = (armed, l.num("now")) {
                        let c = &cpus[cpu];
                        let (lt, stopped, since) = (c.lt, c.tick_stopped, c.idle_since);
                        let path = match c.idle_state {
                            Some(st) if st >= 1 => Some(Path::TimerLateHalted),
                            None if matches!(c.curr, Some(p) if p != 0) => Some(Path::TimerLateRunning),
                            _ => None,
                        };
                        if let (Some(p), true) = (path, now >= e) {
                            add(&mut r, p, now - e, 0);
                            if p == Path::TimerLateHalted {
                                let halt = ts.saturating_sub(now - e).saturating_sub(since);
                                r.halted_timer.push([halt, now - e]);
                                if let (HrKind::Wakeup, Some(lt)) = (kind, lt) {
                                    cpus[cpu].refill = Some((lt.0, halt, stopped));
                                }
                            }
                        }
                    }
                }
                cpus[cpu].hr.push((addr, kind, ts, idx));
            }
            "hrtimer_expire_exit" => {
                let addr = l.arg("hrtimer").unwrap_or("");
                if let Some(pos) = cpus[cpu].hr.iter().rposition(|h| h.0 == addr) {
                    let (_, kind, s, i) = cpus[cpu].hr.remove(pos);
                    let (dur, rec) = (ts - s, idx - i);
                    match kind {
                        HrKind::Wakeup => add(&mut r, Path::HrtimerWakeup, dur, rec),
                        HrKind::Tick => add(&mut r, Path::HrtimerTick, dur, rec),
                        HrKind::Other => {}
                    }
                    if let Some(lt) = cpus[cpu].lt.as_mut() {
                        // Its exit record's cost falls in the interrupt's own part.
                        lt.2 += dur;
                        lt.3 += rec;
                    }
                }
            }
            "hrtimer_start" => {
                if let (Some(a), Some(e)) = (l.arg("hrtimer"), l.num("expires")) {
                    hr_expires.insert(a.to_string(), e);
                }
                if task_ctx && l.arg("function") == Some("hrtimer_wakeup") && r.pids.contains(&l.pid) {
                    cpus[cpu].arm = Some((ts, idx));
                }
            }
            "write_msr" => {
                let msr = l.args.split(',').next().unwrap_or("").trim();
                if msr == MSR_TSC_DEADLINE {
                    if let Some((s, i)) = cpus[cpu].arm.take() {
                        add(&mut r, Path::HrtimerArm, ts - s, idx - i);
                    }
                } else if msr == MSR_X2APIC_ICR {
                    if let Some((s, i, target, kind)) = cpus[cpu].send.take() {
                        if ts - s <= SEND_WINDOW_NS && (target as usize) < cpus.len() {
                            add(&mut r, Path::IpiSend, ts - s, idx - i);
                            let t = &cpus[target as usize];
                            let idle = t.curr == Some(0);
                            inflight.push((target, kind, ts, t.idx, idle));
                        }
                    }
                }
            }
            "ipi_send_cpu" => {
                let kind = match l.arg("callback") {
                    Some("0x0") => Some(IpiKind::Resched),
                    Some(cb) if cb.starts_with("generic_smp_call_function_single_interrupt") => Some(IpiKind::Csd),
                    _ => None,
                };
                let target = l.num("cpu");
                cpus[cpu].send = match (kind, target) {
                    (Some(k), Some(t)) => Some((ts, idx, t as u32, k)),
                    _ => None,
                };
            }
            "tick_stop" if l.num("success") == Some(1) => {
                cpus[cpu].tick_stopped = true;
                if let Some(e) = cpus[cpu].idle_entry.as_mut() {
                    e.2 = true;
                }
            }
            "cpu_idle" => {
                let state = l.num("state");
                cpus[cpu].idle_state = state.filter(|&s| s != u32::MAX as u64);
                cpus[cpu].idle_since = ts;
                if state == Some(u32::MAX as u64) {
                    cpus[cpu].idle_entry = None;
                    let stopped = cpus[cpu].tick_stopped;
                    cpus[cpu].idle_exit = Some((ts, idx, stopped, true));
                } else if state.is_some() {
                    cpus[cpu].idle_exit = None;
                    if let Some((s, i, stop)) = cpus[cpu].idle_entry.take() {
                        let p = if stop { Path::IdleEntryTickStopped } else { Path::IdleEntryTickKept };
                        add(&mut r, p, ts - s, idx - i);
                    }
                }
            }
            "softirq_entry" => {
                cpus[cpu].softirq = (l.num("vec") == Some(7)).then_some((ts, idx));
            }
            "softirq_exit" => {
                if let Some((s, i)) = cpus[cpu].softirq.take() {
                    if l.num("vec") == Some(7) {
                        add(&mut r, Path::SoftirqSched, ts - s, idx - i);
                    }
                }
            }
            "sched_waking" => {
                if let Some(p) = l.num("pid") {
                    let p = p as u32;
                    cpus[cpu].waking = Some((p, ts, idx));
                    if r.pids.contains(&p) && in_span {
                        let idle: Vec<bool> = cpus.iter().map(|c| c.curr == Some(0)).collect();
                        woken.insert(p, (ts, l.cpu, idle));
                    }
                }
            }
            "sched_wakeup" => {
                if let (Some(p), Some((wp, s, i))) = (l.num("pid"), cpus[cpu].waking) {
                    if wp == p as u32 && l.num("target_cpu") == Some(l.cpu as u64) && r.pids.contains(&wp) {
                        add(&mut r, Path::WakingToWakeupLocal, ts - s, idx - i);
                    }
                    cpus[cpu].waking = None;
                }
            }
            "sched_switch" => {
                let (prev, next) = (l.num("prev_pid").map(|p| p as u32), l.num("next_pid").map(|p| p as u32));
                // CPU time, inside the program's lifetime.
                if let Some(c) = cpus[cpu].curr {
                    let from = cpus[cpu].since.max(first);
                    let to = ts.min(last);
                    let ran = to.saturating_sub(from);
                    if r.pids.contains(&c) && !roots.is_empty() {
                        r.program_ns += ran;
                    } else if c != 0 {
                        r.foreign_ns += ran;
                    }
                }
                if let Some(n) = next {
                    cpus[cpu].curr = Some(n);
                    cpus[cpu].since = ts;
                }
                // Idle entry and exit.
                if next == Some(0) {
                    cpus[cpu].idle_entry = Some((ts, idx, false));
                } else {
                    cpus[cpu].idle_entry = None;
                }
                if prev == Some(0) {
                    if let Some((s, i, stopped, clean)) = cpus[cpu].idle_exit.take() {
                        if clean {
                            let p = if stopped { Path::IdleExitTickRestart } else { Path::IdleExitTickKept };
                            add(&mut r, p, ts - s, idx - i);
                        }
                        cpus[cpu].tick_stopped = false;
                    }
                }
                if let (Some((s, halt, true)), Some(0), Some(n)) = (cpus[cpu].refill.take(), prev, next) {
                    if n != 0 && in_span {
                        r.halted_switch.push([halt, ts - s]);
                    }
                }
                cpus[cpu].idle_exit = None;
                cpus[cpu].arm = None;
                cpus[cpu].send = None;
                // A wakee switched in.
                if let Some(n) = next {
                    if let Some((s, wcpu, idle)) = woken.remove(&n) {
                        let same = wcpu == l.cpu;
                        let was_idle = idle.get(cpu).copied().unwrap_or(false);
                        let p = match (same, was_idle) {
                            (true, false) => Path::WakeToRunSameBusy,
                            (true, true) => Path::WakeToRunSameIdle,
                            (false, false) => Path::WakeToRunCrossBusy,
                            (false, true) => Path::WakeToRunCrossIdle,
                        };
                        add(&mut r, p, ts - s, 0);
                    }
                }
            }
            _ => {}
        }
        cpus[cpu].after_csd_exit = (l.event == "csd_function_exit").then_some(ts);
        // A vector entry closes the ICR writes in flight to this CPU of its kind.
        let vk = match l.event {
            "call_function_single_entry" => Some(IpiKind::Csd),
            "reschedule_entry" => Some(IpiKind::Resched),
            _ => None,
        };
        if let Some(k) = vk {
            let mut i = 0;
            while i < inflight.len() {
                let (t, kind, s, tidx, idle) = inflight[i];
                if t == l.cpu && kind == k {
                    let p = if idle { Path::IpiDeliverIdle } else { Path::IpiDeliverBusy };
                    // The target's records strictly between the write and this entry.
                    add(&mut r, p, ts.saturating_sub(s), idx.saturating_sub(tidx + 1));
                    inflight.swap_remove(i);
                } else {
                    i += 1;
                }
            }
        }
    }
    // The tasks still on their CPUs at the end of the lifetime.
    for c in &cpus {
        if let Some(p) = c.curr {
            let ran = last.saturating_sub(c.since.max(first));
            if r.pids.contains(&p) && !roots.is_empty() {
                r.program_ns += ran;
            } else if p != 0 {
                r.foreign_ns += ran;
            }
        }
    }
    r
}

/// `NR n` of a raw syscall record.
fn sys_nr(args: &str) -> Option<u64> {
    args.strip_prefix("NR ")?.split(' ').next()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Lines of a real x86-tsc capture of this project's guest (2600 counts per us), trimmed.
    const T: &str = "\
# tracer: nop
            pong-17145   [001] d..3. 1975015172905: ipi_send_cpu: cpu=0 callsite=ttwu_queue_wakelist+0x11d/0x150 callback=generic_smp_call_function_single_interrupt+0x0/0x10
          <idle>-0       [000] d..2. 1975015180000: sched_switch: prev_comm=ping prev_pid=17143 prev_prio=120 prev_state=S ==> next_comm=swapper/0 next_pid=0 next_prio=120
            pong-17145   [001] d..3. 1975015206059: write_msr: 830, value fb
          <idle>-0       [000] d.h1. 1975015236999: call_function_single_entry: vector=251
          <idle>-0       [000] d.h1. 1975015238147: csd_function_entry: func=sched_ttwu_pending, csd=000000000828c8a7
          <idle>-0       [000] dNh2. 1975015241167: sched_wakeup: comm=ping pid=17143 prio=120 target_cpu=000
          <idle>-0       [000] dNh1. 1975015241389: csd_function_exit: func=sched_ttwu_pending, csd=000000000828c8a7
          <idle>-0       [000] dNh1. 1975015241575: call_function_single_exit: vector=251
          <idle>-0       [000] dN.1. 1975015242547: cpu_idle: state=4294967295 cpu_id=0
          <idle>-0       [000] d..2. 1975015243799: sched_switch: prev_comm=swapper/0 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=ping next_pid=17143 next_prio=120
            ping-17143   [000] ..... 1975015250000: sys_enter: NR 110 (0, 0, 0, 0, 0, 0)
            ping-17143   [000] ..... 1975015250520: sys_exit: NR 110 = 1
            ping-17143   [000] ..... 1975015251300: sys_enter: NR 110 (0, 0, 0, 0, 0, 0)
          <idle>-0       [001] dnh.. 1975015361223: reschedule_entry: vector=253
          <idle>-0       [001] dNh.. 1975015361465: reschedule_exit: vector=253
";

    #[test]
    fn pairs_become_samples_with_their_records() {
        let r = collect(T, &[17143, 17145], Some(2_600_000));
        let one = |p: Path| -> Sample {
            let v = &r.samples[&p];
            assert_eq!(v.len(), 1, "{p:?}: {v:?}");
            v[0]
        };
        // 33154 counts at 2.6 GHz (each timestamp floored to ns).
        assert_eq!(one(Path::IpiSend).ns, 12_751);
        assert_eq!(one(Path::IpiSend).records, 1);
        // Target idle (the idle task was switched in before the write).
        assert_eq!(one(Path::IpiDeliverIdle), Sample { ns: 11_900, records: 0 });
        // The csd: its entry and the wakeup inside; the vector minus it: the vector's entry
        // and the csd's exit.
        assert_eq!(one(Path::CsdTtwuPending), Sample { ns: 1247, records: 2 });
        assert_eq!(one(Path::CallFunctionSingle), Sample { ns: 1760, records: 4 });
        assert_eq!(one(Path::CallFunctionSingleFlush), Sample { ns: 513, records: 2 });
        assert_eq!(one(Path::Syscall), Sample { ns: 500, records: 2 });
        assert_eq!(one(Path::Reschedule), Sample { ns: 93, records: 1 });
        assert_eq!(one(Path::NullPair), Sample { ns: 71, records: 1 });
        // The idle exit after an idle period whose entry was not seen: tick state unknown,
        // taken as running.
        assert_eq!(one(Path::IdleExitTickKept), Sample { ns: 482, records: 1 });
        assert!(r.samples[&Path::Gap].iter().all(|s| s.ns < GAP_MAX_NS));
    }

    #[test]
    fn foreign_time_is_other_tasks_inside_the_programs_lifetime() {
        let t = "\
            a-1     [000] d..2. 1.000000: sched_switch: prev_comm=a prev_pid=1 prev_prio=120 prev_state=R ==> next_comm=b next_pid=2 next_prio=120
            b-2     [000] d..2. 1.000100: sched_switch: prev_comm=b prev_pid=2 prev_prio=120 prev_state=S ==> next_comm=a next_pid=1 next_prio=120
            a-1     [001] d..2. 1.000000: sched_switch: prev_comm=a prev_pid=1 prev_prio=120 prev_state=R ==> next_comm=swapper/1 next_pid=0 next_prio=120
            a-1     [000] ..... 1.000400: sys_enter: NR 0 (0)
";
        let r = collect(t, &[1], None);
        assert_eq!(r.span_ns, 400_000);
        assert_eq!(r.foreign_ns, 100_000);
        assert_eq!(r.program_ns, 300_000);
        assert_eq!(r.foreign_permille(), 125);
    }

    /// Lines after the rt-app capture of this guest in docs/validate-guest.md (local clock): a
    /// sleeper timer that expired on a halted CPU, the tick on a running one, and a second
    /// callback of the same interrupt, which is not the one the interrupt was programmed for.
    #[test]
    fn a_timer_interrupts_lateness_by_whether_the_cpu_was_halted() {
        let t = "            fifo-7448    [000] d..1. 2.000000: hrtimer_start: hrtimer=00000000abf2ba5b function=hrtimer_wakeup expires=1000040000 softexpires=1000040000 mode=ABS was_armed=0
            fifo-7448    [000] d..2. 2.000010: sched_switch: prev_comm=fifo prev_pid=7448 prev_prio=49 prev_state=S ==> next_comm=swapper/0 next_pid=0 next_prio=120
          <idle>-0       [000] d..1. 2.000020: cpu_idle: state=1 cpu_id=0
          <idle>-0       [000] d.h1. 2.000078: local_timer_entry: vector=236
          <idle>-0       [000] d.h1. 2.000079: hrtimer_expire_entry: hrtimer=00000000abf2ba5b function=hrtimer_wakeup now=1000077500
          <idle>-0       [000] d.h1. 2.000080: hrtimer_start: hrtimer=00000000d3eb9e99 function=tick_nohz_handler expires=1000052000 softexpires=1000052000 mode=ABS was_armed=0
          <idle>-0       [000] d.h1. 2.000081: hrtimer_expire_entry: hrtimer=00000000d3eb9e99 function=tick_nohz_handler now=1000077500
          <idle>-0       [000] dN.1. 2.000090: cpu_idle: state=4294967295 cpu_id=0
          <idle>-0       [000] d..2. 2.000100: sched_switch: prev_comm=swapper/0 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=fifo next_pid=7448 next_prio=49
            fifo-7448    [000] d.h1. 2.000101: hrtimer_start: hrtimer=00000000d3eb9e99 function=tick_nohz_handler expires=1000100000 softexpires=1000100000 mode=ABS was_armed=0
            fifo-7448    [000] d.h.. 2.000123: local_timer_entry: vector=236
            fifo-7448    [000] d.h.. 2.000124: hrtimer_expire_entry: hrtimer=00000000d3eb9e99 function=tick_nohz_handler now=1000101200
            fifo-7448    [000] ..... 2.000200: sys_enter: NR 0 (0)
";
        let r = collect(t, &[7448], None);
        assert_eq!(r.samples[&Path::TimerLateHalted], vec![Sample { ns: 37_500, records: 0 }]);
        // Halted from 2.000020 to the expiry, 37.5 us before the callback's record at 2.000079.
        assert_eq!(r.halted_timer, vec![[21_500, 37_500]]);
        // The tick was not stopped in that halt: no sample of the guest's path after it.
        assert!(r.halted_switch.is_empty());
        let stopped = t.replacen(
            "          <idle>-0       [000] d..1. 2.000020: cpu_idle",
            "          <idle>-0       [000] d..1. 2.000015: tick_stop: success=1 dependency=NONE\n          <idle>-0       [000] d..1. 2.000020: cpu_idle",
            1,
        );
        let r = collect(&stopped, &[7448], None);
        assert_eq!(r.halted_switch, vec![[21_500, 22_000]]);
        assert_eq!(r.samples[&Path::TimerLateRunning], vec![Sample { ns: 1_200, records: 0 }]);
    }
}
