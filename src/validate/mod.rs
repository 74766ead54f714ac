//! Comparing the model with the real kernel: the figures `schedsim validate` puts side by side,
//! computed the same way from a real tracefs capture and from the model's own ftrace text.
//!
//! [`analyze`] reads ftrace text (the `trace` file's default format, which the model's writer
//! reproduces byte for byte) and counts what one program did:
//!
//! - The program is a set of pids: the tasks the model ran as the workload, or on the real side
//!   the process validate started and everything it forked (`sched_process_fork`).
//! - Only the program's lifetime counts: from its first to its last trace line.
//! - A wakeup is a `sched_wakeup` of a program task. An IPI (`ipi_send_cpu`/`ipi_send_cpumask`)
//!   or a `sched_wake_idle_without_ipi` belongs to a program wakeup when its CPU's last
//!   `sched_waking` was of a program task, logged by the same task within [`WAKE_WINDOW_NS`] and
//!   with no `sched_switch` on that CPU in between (the kernel emits both inside one
//!   `try_to_wake_up()`); every other
//!   IPI is background activity, counted per second.
//! - A program task's `sched_waking` logged in softirq context (the flags' third column `s`)
//!   counts as a wakeup made in softirq: on loopback, a socket's receiver is woken from the
//!   NET_RX softirq the sender runs.
//! - IPI kinds: `ttwu` (callsite `ttwu_queue_wakelist`), `resched` (a NULL callback:
//!   `resched_curr` from `wakeup_preempt`, the tick, ...), `other csd` (any other callback,
//!   and every `ipi_send_cpumask`).
//! - Switches and migrations count when a program task is involved; idle entries (`cpu_idle`
//!   with a state), softirqs (`softirq_entry` by vector) and timer interrupts on idle CPUs
//!   (`local_timer_entry` while the idle task is current) count machine-wide.
//!
//! A CPU whose idle task logged no task-context line although tasks switched to it (seen on
//! this project's 2-vCPU guest, CPU 1: no `cpu_idle`, no switch away from the idle task) is
//! "idle-silent"; [`silent_idle_cpus`] finds such CPUs and [`analyze`] drops the same lines
//! (idle task, that CPU, task context) from every trace it is given, real or simulated, so both
//! sides count alike.
//!
//! No I/O here: `cli::validate` captures the trace and runs the model.

pub mod flip;

use std::collections::{BTreeMap, BTreeSet};

/// How long after a `sched_waking` an IPI on the same CPU still belongs to that wakeup.
pub const WAKE_WINDOW_NS: u64 = 100_000;

/// `softirq_to_name[]`.
pub const SOFTIRQ_NAMES: [&str; 10] =
    ["HI", "TIMER", "NET_TX", "NET_RX", "BLOCK", "IRQ_POLL", "TASKLET", "SCHED", "HRTIMER", "RCU"];

/// One line of `trace` output, split into its columns.
#[derive(Debug, Clone, Copy)]
pub struct Line<'a> {
    pub comm: &'a str,
    pub pid: u32,
    pub cpu: u32,
    /// The five flag characters (`d..2.`).
    pub flags: &'a [u8],
    pub ts_ns: u64,
    pub event: &'a str,
    pub args: &'a str,
}

impl<'a> Line<'a> {
    /// Parse one line; None for headers, blank lines and anything else that is not an event.
    pub fn parse(line: &'a str) -> Option<Line<'a>> {
        Self::parse_clock(line, None)
    }

    /// [`Line::parse`] for a trace of either kind of clock: seconds with a fraction (the
    /// default clocks), or, with `tsc_khz`, the raw counts the `x86-tsc` clock prints, turned
    /// into ns at that rate.
    pub fn parse_clock(line: &'a str, tsc_khz: Option<u64>) -> Option<Line<'a>> {
        if line.starts_with('#') {
            return None;
        }
        let bracket = line.find(" [")?;
        let (comm, pid) = line[..bracket].trim().rsplit_once('-')?;
        let pid = pid.parse().ok()?;
        let rest = &line[bracket + 2..];
        let close = rest.find(']')?;
        let cpu: u32 = rest[..close].parse().ok()?;
        // A CPU number no machine has is not a line of a real trace (and would size per-CPU
        // tables).
        if cpu >= crate::limits::MAX_CPUS {
            return None;
        }
        let rest = rest[close + 1..].trim_start();
        let (flags, rest) = rest.split_once(' ')?;
        if flags.len() != 5 {
            return None;
        }
        let (ts, rest) = rest.trim_start().split_once(": ")?;
        let ts_ns = match (ts.split_once('.'), tsc_khz) {
            (Some((secs, frac)), _) => Self::seconds_ns(secs, frac)?,
            (None, Some(khz)) if khz > 0 && !ts.is_empty() && ts.bytes().all(|b| b.is_ascii_digit()) => {
                let counts: u64 = ts.parse().ok()?;
                u64::try_from(counts as u128 * 1_000_000 / khz as u128).ok()?
            }
            _ => return None,
        };
        let (event, args) = match rest.split_once(": ") {
            Some((e, a)) => (e, a),
            None => (rest.trim_end_matches(':'), ""),
        };
        Some(Line { comm, pid, cpu, flags: flags.as_bytes(), ts_ns, event, args })
    }

    /// Whether this trace's timestamps are raw counts (the `x86-tsc` or `counter` trace clock)
    /// rather than seconds: true when its first event line parses with a counter rate and not
    /// without one. [`Line::parse`] skips such lines, so a caller reading seconds must refuse
    /// the trace instead of reporting an empty program.
    pub fn counter_clock(text: &'a str) -> bool {
        text.lines().find(|l| Self::parse_clock(l, Some(1_000_000)).is_some()).is_some_and(|l| Self::parse(l).is_none())
    }

    /// `SECONDS.FRACTION` in ns.
    fn seconds_ns(secs: &str, frac: &str) -> Option<u64> {
        // Seconds and up to nine digits of fraction; anything else is not a timestamp.
        if frac.is_empty() || frac.len() > 9 || !frac.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let sub: u64 = frac.parse::<u64>().ok()? * 10u64.pow(9 - frac.len() as u32);
        secs.parse::<u64>().ok()?.checked_mul(1_000_000_000)?.checked_add(sub)
    }

    /// The value of `key=` in the arguments.
    pub fn arg(&self, key: &str) -> Option<&'a str> {
        let mut from = 0;
        while let Some(i) = self.args[from..].find(key) {
            let at = from + i;
            let before_ok = at == 0 || self.args.as_bytes()[at - 1] == b' ';
            let rest = &self.args[at + key.len()..];
            if before_ok {
                if let Some(v) = rest.strip_prefix('=') {
                    return Some(v.split(' ').next().unwrap_or("").trim_end_matches(','));
                }
            }
            from = at + key.len();
        }
        None
    }

    pub fn num(&self, key: &str) -> Option<u64> {
        self.arg(key)?.parse().ok()
    }

    /// Logged by the idle task in task context (not from an interrupt or softirq).
    fn idle_task_context(&self) -> bool {
        self.pid == 0 && self.flags[2] == b'.'
    }
}

/// CPUs whose idle task logged no task-context line although tasks switched to it at least
/// `min_switches` times.
pub fn silent_idle_cpus(text: &str, min_switches: u64) -> BTreeSet<u32> {
    let mut to_idle: BTreeMap<u32, u64> = BTreeMap::new();
    let mut idle_lines: BTreeSet<u32> = BTreeSet::new();
    for l in text.lines().filter_map(Line::parse) {
        if l.idle_task_context() {
            idle_lines.insert(l.cpu);
        }
        if l.event == "sched_switch" && l.num("next_pid") == Some(0) {
            *to_idle.entry(l.cpu).or_default() += 1;
        }
    }
    to_idle.into_iter().filter(|(c, n)| *n >= min_switches && !idle_lines.contains(c)).map(|(c, _)| c).collect()
}

/// What one trace says about one program.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct Counts {
    /// The stretch counted (the program's lifetime, or its forked tasks' with
    /// [`Window::Forked`]), ns.
    pub span_ns: u64,
    /// The counts cover the forked tasks' lifetime ([`Window::Forked`] found some).
    pub forked_window: bool,
    pub pids: usize,
    pub wakeups: u64,
    /// `sched_waking` records of program tasks logged in softirq context (a socket's receive
    /// path waking its reader from NET_RX, a timer's callback).
    pub wakings_in_softirq: u64,
    pub ipi_ttwu: u64,
    pub ipi_resched: u64,
    pub ipi_other: u64,
    pub wake_without_ipi: u64,
    pub background_ipis: u64,
    pub switches: u64,
    pub migrations: u64,
    /// `cpu_idle` entries by state index.
    pub idle_entries: BTreeMap<u32, u64>,
    /// `softirq_entry` by vector.
    pub softirqs: BTreeMap<u32, u64>,
    /// `local_timer_entry` while the idle task was current.
    pub idle_timer_irqs: u64,
    /// CPU time of tasks that are neither the program nor idle, and of the program, ns.
    pub foreign_ns: u64,
    pub program_ns: u64,
    pub nr_cpus: u32,
    /// Lines dropped for idle-silent CPUs.
    pub dropped_idle_lines: u64,
    /// The trace says events were lost (`[LOST n EVENTS]`).
    pub lost_events: bool,
    /// Wakeup latencies of the program's tasks, ns, sorted: from a task's `sched_waking` (that
    /// a `sched_wakeup` followed) to its `sched_switch` in, or, when its first line comes
    /// without one (an idle-silent CPU's switch from idle is not logged), to that CPU's line
    /// before it.
    pub wake_latency_ns: Vec<u64>,
}

/// Which tasks are the program.
#[derive(Debug, Clone)]
pub enum Program<'a> {
    /// These pids and, with `follow_forks`, every task they fork (`sched_process_fork`).
    Pids { roots: &'a [u32], follow_forks: bool },
    /// Every task that appears under one of these names (for captures without fork events).
    Comms(&'a [String]),
}

impl Counts {
    /// The share of the CPUs' time that tasks other than the program (and idle) used during
    /// the program's lifetime.
    pub fn foreign_share(&self) -> f64 {
        self.foreign_ns as f64 / (self.span_ns.max(1) as f64 * self.nr_cpus.max(1) as f64)
    }
}

/// Which stretch of a trace the counts cover.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Window {
    /// The program's lifetime: its tasks' first line to their last.
    #[default]
    Lifetime,
    /// The lifetime of the tasks the program forked (a `sched_process_fork` by one of its
    /// tasks): their first line (their first run) to their last (their exit). For rt-app, the
    /// use case alone: its threads are created after its main process calibrated its busy loop
    /// and set up its logs, and they have all exited before it writes the logs out and ends
    /// (on this guest 2.0 s of threads in a 7 s process). A trace in which the program forked
    /// nothing is counted over its lifetime ([`Counts::forked_window`] says which).
    Forked,
}

/// Count what `program` did in `text` over its lifetime, dropping the idle task's task-context
/// lines of the CPUs in `silent`.
pub fn analyze(text: &str, program: &Program, silent: &BTreeSet<u32>) -> Counts {
    analyze_in(text, program, silent, Window::Lifetime)
}

/// [`analyze`] over the stretch `window` of the program's run.
pub fn analyze_in(text: &str, program: &Program, silent: &BTreeSet<u32>, window: Window) -> Counts {
    let (roots, follow_forks): (&[u32], bool) = match program {
        Program::Pids { roots, follow_forks } => (roots, *follow_forks),
        Program::Comms(_) => (&[], false),
    };
    let mut pids: BTreeSet<u32> = roots.iter().copied().collect();
    if let Program::Comms(names) = program {
        for l in text.lines().filter_map(Line::parse) {
            if names.iter().any(|n| n == l.comm) {
                pids.insert(l.pid);
            }
            // A child created under one of the names (a thread renames itself later).
            if l.event == "sched_process_fork" && l.arg("child_comm").is_some_and(|c| names.iter().any(|n| n == c)) {
                if let Some(c) = l.num("child_pid") {
                    pids.insert(c as u32);
                }
            }
        }
    }
    let mut first = u64::MAX;
    let mut last = 0;
    let mut nr_cpus = 0;
    // The tasks a program task forked, and their first and last lines.
    let mut forked: BTreeSet<u32> = BTreeSet::new();
    let (mut forked_first, mut forked_last) = (u64::MAX, 0);
    // Pass 1: the program's pids and lifetime.
    for l in text.lines().filter_map(Line::parse) {
        nr_cpus = nr_cpus.max(l.cpu + 1);
        if l.event == "sched_process_fork" && l.num("pid").is_some_and(|p| pids.contains(&(p as u32))) {
            if let Some(c) = l.num("child_pid") {
                let c = c as u32;
                if follow_forks {
                    pids.insert(c);
                }
                if pids.contains(&c) {
                    forked.insert(c);
                }
            }
        }
        if pids.contains(&l.pid) {
            first = first.min(l.ts_ns);
            last = last.max(l.ts_ns);
            if forked.contains(&l.pid) {
                forked_first = forked_first.min(l.ts_ns);
                forked_last = forked_last.max(l.ts_ns);
            }
        }
    }
    let forked_window = window == Window::Forked && forked_first <= forked_last;
    if forked_window {
        (first, last) = (forked_first, forked_last);
    }
    let mut c = Counts {
        pids: pids.len(),
        nr_cpus,
        forked_window,
        lost_events: text.contains(" EVENTS]") && text.contains("[LOST "),
        ..Default::default()
    };
    if first > last {
        return c;
    }
    c.span_ns = last - first;
    let prog = |p: Option<u64>| p.is_some_and(|p| pids.contains(&(p as u32)));
    let mut waking: Vec<Option<(bool, u32, u64)>> = vec![None; nr_cpus as usize];
    // Program tasks: the last `sched_waking` of each, and those woken and not yet running.
    let mut waking_at: BTreeMap<u32, u64> = BTreeMap::new();
    let mut woken_at: BTreeMap<u32, u64> = BTreeMap::new();
    let mut last_line: Vec<u64> = vec![0; nr_cpus as usize];
    // Per CPU: the current task (from sched_switch) and since when.
    let mut curr: Vec<Option<(u32, u64)>> = vec![None; nr_cpus as usize];
    // CPU time of the task current on a CPU from `since` to `until`, clipped to the lifetime.
    let charge = |c: &mut Counts, p: u32, since: u64, until: u64| {
        let ran = until.min(last).saturating_sub(since.max(first));
        if pids.contains(&p) {
            c.program_ns = c.program_ns.saturating_add(ran);
        } else if p != 0 {
            c.foreign_ns = c.foreign_ns.saturating_add(ran);
        }
    };
    for l in text.lines().filter_map(Line::parse) {
        let cpu = l.cpu as usize;
        // Every line names the task current on its CPU (interrupts log the task they
        // interrupted), so a task that was running before the first sched_switch of its CPU
        // (before the capture started) is known from its first line there.
        if curr[cpu].is_none() {
            curr[cpu] = Some((l.pid, l.ts_ns));
        }
        if l.ts_ns > last {
            continue;
        }
        if l.ts_ns < first {
            if l.event == "sched_switch" {
                if let Some(n) = l.num("next_pid") {
                    curr[cpu] = Some((n as u32, l.ts_ns));
                }
            }
            continue;
        }
        if silent.contains(&l.cpu) && l.idle_task_context() {
            c.dropped_idle_lines += 1;
            continue;
        }
        // A woken task's first line without a switch to it: it came from the idle task of a
        // CPU that does not log that switch; it ran from the CPU's previous line at the latest.
        if let Some(t) = woken_at.remove(&l.pid) {
            let woken = t.min(l.ts_ns);
            c.wake_latency_ns.push(last_line[cpu].clamp(woken, l.ts_ns) - woken);
        }
        last_line[cpu] = l.ts_ns;
        let attributed = |waking: &[Option<(bool, u32, u64)>]| -> Option<bool> {
            match waking[cpu] {
                Some((is_prog, waker, ts)) if waker == l.pid && l.ts_ns.saturating_sub(ts) <= WAKE_WINDOW_NS => {
                    Some(is_prog)
                }
                _ => None,
            }
        };
        match l.event {
            "sched_waking" => {
                let p = prog(l.num("pid"));
                if p && l.flags.get(2) == Some(&b's') {
                    c.wakings_in_softirq += 1;
                }
                if let Some(pid) = l.num("pid").filter(|_| p) {
                    waking_at.insert(pid as u32, l.ts_ns);
                }
                waking[cpu] = Some((p, l.pid, l.ts_ns));
            }
            "sched_wakeup" if prog(l.num("pid")) => {
                c.wakeups += 1;
                let pid = l.num("pid").unwrap_or(0) as u32;
                woken_at.insert(pid, waking_at.remove(&pid).unwrap_or(l.ts_ns));
            }
            "ipi_send_cpu" | "ipi_send_cpumask" => {
                if attributed(&waking) == Some(true) {
                    let callsite = l.arg("callsite").unwrap_or("");
                    let callback = l.arg("callback").unwrap_or("");
                    if l.event == "ipi_send_cpumask" {
                        c.ipi_other += 1;
                    } else if callsite.starts_with("ttwu_queue_wakelist") {
                        c.ipi_ttwu += 1;
                    } else if callback == "0x0" {
                        c.ipi_resched += 1;
                    } else {
                        c.ipi_other += 1;
                    }
                } else {
                    c.background_ipis += 1;
                }
            }
            "sched_wake_idle_without_ipi" if attributed(&waking) == Some(true) => c.wake_without_ipi += 1,
            "sched_switch" => {
                let (prev, next) = (l.num("prev_pid"), l.num("next_pid"));
                if prog(prev) || prog(next) {
                    c.switches += 1;
                }
                waking[cpu] = None;
                if let Some((p, since)) = curr[cpu] {
                    // A line earlier than the switch it follows (a malformed or merged trace)
                    // counts as no time.
                    charge(&mut c, p, since, l.ts_ns);
                }
                if let Some(n) = next {
                    curr[cpu] = Some((n as u32, l.ts_ns));
                    if let Some(t) = woken_at.remove(&(n as u32)) {
                        c.wake_latency_ns.push(l.ts_ns.saturating_sub(t));
                    }
                }
            }
            "sched_migrate_task" if prog(l.num("pid")) => c.migrations += 1,
            "cpu_idle" => {
                if let Some(s) = l.num("state").filter(|&s| s != u32::MAX as u64) {
                    *c.idle_entries.entry(s as u32).or_default() += 1;
                }
            }
            "softirq_entry" => {
                if let Some(v) = l.num("vec") {
                    *c.softirqs.entry(v as u32).or_default() += 1;
                }
            }
            "local_timer_entry" if l.pid == 0 => c.idle_timer_irqs += 1,
            _ => {}
        }
    }
    // What each CPU ran from its last switch to the end of the program's lifetime.
    for &(p, since) in curr.iter().flatten() {
        charge(&mut c, p, since, last);
    }
    c.wake_latency_ns.sort_unstable();
    c
}

/// The `pct` percentile of sorted values (nearest rank).
pub fn percentile(sorted: &[u64], pct: u64) -> Option<u64> {
    if sorted.is_empty() {
        return None;
    }
    let rank = (sorted.len() as u64 * pct).div_ceil(100).max(1) as usize;
    Some(sorted[rank.min(sorted.len()) - 1])
}

/// The model's trace as ftrace text (what [`analyze`] reads), from a run kept with `trace`.
pub fn model_trace_text(r: &crate::run::RunResult) -> String {
    let mut buf = Vec::new();
    crate::trace::ftrace::write_trace(&mut buf, &r.trace, &crate::run::Comms::new(r), r.nr_cpus)
        .expect("writing to memory");
    String::from_utf8(buf).expect("the writer emits UTF-8")
}

/// Count what the model's workload did in its run (text: [`model_trace_text`]).
pub fn model_counts(r: &crate::run::RunResult, text: &str, silent: &BTreeSet<u32>) -> Counts {
    analyze(text, &Program::Pids { roots: &r.workload_pids, follow_forks: false }, silent)
}

/// Whether a row is a structural ratio (compared first), a rate, or the program's speed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum RowKind {
    Structure,
    Rate,
    /// Wakeup latency percentiles of the program's tasks, from the trace on both sides.
    Latency,
    Speed,
}

/// One figure of one side: its kind, its place within the kind, its name and value.
pub type Figures = Vec<(RowKind, u32, String, f64)>;

/// The figures of one run: structural ratios per program wakeup, rates per second of the
/// program's lifetime, and the program's own figure (`own`: its name and value).
pub fn figures(c: &Counts, idle_state_names: &[String], own: Option<(&str, f64)>) -> Figures {
    let w = c.wakeups.max(1) as f64;
    let secs = (c.span_ns.max(1)) as f64 / 1e9;
    let mut f: Figures = vec![
        (RowKind::Structure, 0, "IPIs per wakeup: ttwu".into(), c.ipi_ttwu as f64 / w),
        (RowKind::Structure, 1, "IPIs per wakeup: resched".into(), c.ipi_resched as f64 / w),
        (RowKind::Structure, 2, "IPIs per wakeup: other csd".into(), c.ipi_other as f64 / w),
        (RowKind::Structure, 3, "wakeups without IPI per wakeup".into(), c.wake_without_ipi as f64 / w),
        (RowKind::Structure, 4, "switches per wakeup".into(), c.switches as f64 / w),
        (RowKind::Structure, 5, "migrations per wakeup".into(), c.migrations as f64 / w),
        (RowKind::Structure, 6, "wakeups made in softirq per wakeup".into(), c.wakings_in_softirq as f64 / w),
    ];
    for (&s, &n) in &c.idle_entries {
        let name = idle_state_names.get(s as usize).cloned().unwrap_or_else(|| format!("state {s}"));
        f.push((RowKind::Structure, s.saturating_add(10), format!("idle entries per wakeup: {name}"), n as f64 / w));
    }
    f.push((RowKind::Rate, 0, "wakeups per second".into(), c.wakeups as f64 / secs));
    for (&v, &n) in &c.softirqs {
        let name = SOFTIRQ_NAMES.get(v as usize).copied().unwrap_or("?");
        f.push((RowKind::Rate, v.saturating_add(10), format!("softirqs per second: {name}"), n as f64 / secs));
    }
    f.push((RowKind::Rate, 100, "timer irqs per second on idle CPUs".into(), c.idle_timer_irqs as f64 / secs));
    f.push((RowKind::Rate, 101, "background IPIs per second".into(), c.background_ipis as f64 / secs));
    for (i, pct) in [50, 90, 99].into_iter().enumerate() {
        if let Some(ns) = percentile(&c.wake_latency_ns, pct) {
            f.push((RowKind::Latency, i as u32, format!("wakeup latency p{pct} (us)"), ns as f64 / 1000.0));
        }
    }
    if let Some((name, v)) = own {
        f.push((RowKind::Speed, 0, name.to_string(), v));
    }
    f
}

/// A per-wakeup difference this small counts as a match whatever the ratio (both sides
/// essentially never do it).
pub const STRUCTURE_FLOOR: f64 = 0.01;

/// With a calibrated machine file: whether a figure's program was an input of the
/// calibration (its figures, or those of a program using only its paths, are calibrated) or
/// not (its figures are predictions).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Calibrated,
    Predicted,
}

/// The targets on a calibrated machine: a structural ratio within 15% of the real median, a
/// rate or the program's own figure within 25%.
pub const TARGET_STRUCTURE: f64 = 0.15;
pub const TARGET_FIGURE: f64 = 0.25;

/// One row of the side-by-side table.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Row {
    pub kind: RowKind,
    pub name: String,
    /// Real: mean, min and max over the repeats (None: no real run gave this figure, e.g. a
    /// program that prints nothing).
    pub real_mean: Option<f64>,
    pub real_min: Option<f64>,
    pub real_max: Option<f64>,
    /// Real: the median over the repeats (the targets' reference).
    pub real_median: Option<f64>,
    /// With a calibrated machine file: calibrated or predicted, and whether the model is within
    /// its target ([`TARGET_STRUCTURE`], [`TARGET_FIGURE`]) of the real median.
    pub status: Option<Status>,
    pub target_met: Option<bool>,
    /// Model: mean over its seeds.
    pub model: f64,
    /// model / real mean (None when the real mean is 0 or unknown).
    pub ratio: Option<f64>,
    /// The ratio is within the tolerance, or (structure) the difference is below
    /// [`STRUCTURE_FLOOR`].
    pub within: bool,
}

/// Join the real runs' and the model runs' figures into rows, structure first. A count missing
/// from a run is 0 there; the program's own figure missing from a run is unknown.
pub fn rows(real: &[Figures], model: &[Figures], tolerance: f64) -> Vec<Row> {
    let mut keys: BTreeSet<(RowKind, u32, String)> = BTreeSet::new();
    for f in real.iter().chain(model) {
        for (k, o, n, _) in f {
            keys.insert((*k, *o, n.clone()));
        }
    }
    let value = |f: &Figures, kind: RowKind, n: &str| match f.iter().find(|x| x.2 == n) {
        Some(x) => Some(x.3),
        None if matches!(kind, RowKind::Speed | RowKind::Latency) => None,
        None => Some(0.0),
    };
    keys.into_iter()
        .map(|(kind, _, name)| {
            let r: Vec<f64> = real.iter().filter_map(|f| value(f, kind, &name)).collect();
            let m: Vec<f64> = model.iter().filter_map(|f| value(f, kind, &name)).collect();
            let mean = |v: &[f64]| (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64);
            let real_mean = mean(&r);
            let model = mean(&m).unwrap_or(0.0);
            let ratio = real_mean.filter(|&x| x != 0.0).map(|x| model / x);
            let within = match (ratio, real_mean) {
                _ if kind == RowKind::Structure && real_mean.is_some_and(|x| (model - x).abs() <= STRUCTURE_FLOOR) => {
                    true
                }
                (Some(x), _) => (x - 1.0).abs() <= tolerance,
                (None, Some(_)) => model == 0.0,
                (None, None) => false,
            };
            let real_median = (!r.is_empty()).then(|| {
                let mut v = r.clone();
                v.sort_by(f64::total_cmp);
                let n = v.len();
                if n % 2 == 1 {
                    v[n / 2]
                } else {
                    (v[n / 2 - 1] + v[n / 2]) / 2.0
                }
            });
            Row {
                kind,
                name,
                real_mean,
                real_min: r.iter().copied().reduce(f64::min),
                real_max: r.iter().copied().reduce(f64::max),
                real_median,
                status: None,
                target_met: None,
                model,
                ratio,
                within,
            }
        })
        .collect()
}

/// Mark every row with the program's status (None: the machine file was not calibrated) and
/// whether it meets its target.
pub fn mark(rows: &mut [Row], status: Option<Status>) {
    for r in rows.iter_mut() {
        r.status = status;
        r.target_met = status.map(|_| {
            let Some(m) = r.real_median else { return false };
            if r.kind == RowKind::Structure && (r.model - m).abs() <= STRUCTURE_FLOOR {
                return true;
            }
            let tol = if r.kind == RowKind::Structure { TARGET_STRUCTURE } else { TARGET_FIGURE };
            if m == 0.0 {
                return r.model == 0.0;
            }
            (r.model / m - 1.0).abs() <= tol
        });
    }
}

/// The table as text.
/// A figure as the tables print it: 0, whole above 100, two decimals above 1, else three.
pub fn fmt_figure(v: f64) -> String {
    if v == 0.0 {
        "0".to_string()
    } else if v.abs() >= 100.0 {
        format!("{v:.0}")
    } else if v.abs() >= 1.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.3}")
    }
}

pub fn render(rows: &[Row], tolerance: f64) -> String {
    let fmt = fmt_figure;
    let marked = rows.iter().any(|r| r.status.is_some());
    let mut header: Vec<String> =
        ["figure", "real", "real min-max", "model", "model/real", &format!("within {:.0}%", tolerance * 100.0)]
            .iter()
            .map(|s| s.to_string())
            .collect();
    if marked {
        header.push("status".into());
        header.push(format!("target ({:.0}%/{:.0}% of median)", TARGET_STRUCTURE * 100.0, TARGET_FIGURE * 100.0));
    }
    let opt = |v: Option<f64>| v.map_or_else(|| "n/a".to_string(), fmt);
    let body: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            let mut row = vec![
                r.name.clone(),
                opt(r.real_mean),
                format!("{}-{}", opt(r.real_min), opt(r.real_max)),
                fmt(r.model),
                match (r.ratio, r.real_mean) {
                    (Some(x), _) => format!("{x:.2}x"),
                    (None, Some(_)) if r.model == 0.0 => "=".into(),
                    _ => "n/a".into(),
                },
                if r.within { "yes".into() } else { "no".into() },
            ];
            if marked {
                row.push(match r.status {
                    Some(Status::Calibrated) => "calibrated".into(),
                    Some(Status::Predicted) => "predicted".into(),
                    None => String::new(),
                });
                row.push(match r.target_met {
                    Some(true) => "met".into(),
                    Some(false) => "MISS".into(),
                    None => String::new(),
                });
            }
            row
        })
        .collect();
    crate::report::render_grid(&header, &body)
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: &str = "\
# tracer: nop
            ping-10      [000] d..3.   100.000010: sched_waking: comm=pong pid=11 prio=120 target_cpu=001
            ping-10      [000] d..4.   100.000012: ipi_send_cpu: cpu=1 callsite=wakeup_preempt+0x92/0xa0 callback=0x0
            ping-10      [000] d..4.   100.000013: sched_wakeup: comm=pong pid=11 prio=120 target_cpu=001
            ping-10      [000] d..2.   100.000020: sched_switch: prev_comm=ping prev_pid=10 prev_prio=120 prev_state=S ==> next_comm=swapper/0 next_pid=0 next_prio=120
          <idle>-0       [000] d..1.   100.000021: cpu_idle: state=1 cpu_id=0
          <idle>-0       [000] d.h1.   100.000500: local_timer_entry: vector=236
          <idle>-0       [000] ..s1.   100.000510: softirq_entry: vec=1 [action=TIMER]
            pong-11      [001] d..3.   100.000600: sched_waking: comm=ping pid=10 prio=120 target_cpu=000
            pong-11      [001] d..3.   100.000601: csd_queue_cpu: cpu=0 callsite=ttwu_queue_wakelist+0x11d/0x150 func=sched_ttwu_pending csd=00000000c90c44b9
            pong-11      [001] d..3.   100.000602: ipi_send_cpu: cpu=0 callsite=ttwu_queue_wakelist+0x11d/0x150 callback=generic_smp_call_function_single_interrupt+0x0/0x10
          <idle>-0       [000] dNh2.   100.000610: sched_wakeup: comm=ping pid=10 prio=120 target_cpu=000
           other-99      [001] d..2.   100.000700: ipi_send_cpu: cpu=0 callsite=smp_call_function_many_cond+0x1/0x2 callback=do_flush_tlb_all+0x0/0x10
            ping-10      [000] d..2.   100.001000: sched_switch: prev_comm=ping prev_pid=10 prev_prio=120 prev_state=S ==> next_comm=swapper/0 next_pid=0 next_prio=120
";

    /// A trace of the `x86-tsc` clock (raw counts, as a killed calibration leaves the clock)
    /// is recognised, so validate refuses it instead of reporting a program that never woke.
    #[test]
    fn a_counter_clock_trace_is_recognised() {
        let tsc = "# tracer: nop\n      sched-pipe-3250    [000] d..3. 61362284417139: sched_waking: comm=x pid=3249 prio=120 target_cpu=001\n";
        assert!(Line::counter_clock(tsc));
        assert!(!Line::counter_clock(T));
        assert!(!Line::counter_clock("# tracer: nop\n"));
    }

    #[test]
    fn lines_parse_and_arguments_are_found_by_key() {
        let l = Line::parse(T.lines().nth(1).unwrap()).unwrap();
        assert_eq!((l.comm, l.pid, l.cpu, l.ts_ns, l.event), ("ping", 10, 0, 100_000_010_000, "sched_waking"));
        assert_eq!(l.arg("pid"), Some("11"));
        assert_eq!(l.arg("target_cpu"), Some("001"));
        assert!(Line::parse("# tracer: nop").is_none());
        assert!(Line::parse("").is_none());
        // Task names with spaces and dashes.
        let l = Line::parse(" kworker/u4:1-my-9  [001] d..2.   5.000001: cpu_idle: state=1 cpu_id=1").unwrap();
        assert_eq!((l.comm, l.pid), ("kworker/u4:1-my", 9));
    }

    #[test]
    fn counts_attribute_ipis_to_the_wakeup_that_sent_them() {
        let c = analyze(T, &Program::Pids { roots: &[10, 11], follow_forks: false }, &BTreeSet::new());
        assert_eq!(c.wakeups, 2);
        assert_eq!((c.ipi_ttwu, c.ipi_resched, c.ipi_other), (1, 1, 0));
        assert_eq!(c.background_ipis, 1, "the TLB flush from another task is background");
        assert_eq!(c.switches, 2);
        assert_eq!(c.idle_entries.get(&1), Some(&1));
        assert_eq!(c.softirqs.get(&1), Some(&1));
        assert_eq!(c.idle_timer_irqs, 1);
        assert_eq!(c.span_ns, 990_000);
        // Only program 10: the wakeup of 11 is not its own.
        let c = analyze(T, &Program::Comms(&["ping".to_string()]), &BTreeSet::new());
        assert_eq!(c.wakeups, 1);
        // CPU 0's idle task logged a cpu_idle line, so it is not silent; dropping it anyway
        // removes that entry.
        assert!(silent_idle_cpus(T, 1).is_empty());
        let c = analyze(T, &Program::Pids { roots: &[10, 11], follow_forks: false }, &BTreeSet::from([0]));
        assert_eq!(c.idle_entries.get(&1), None);
        assert_eq!(c.dropped_idle_lines, 1);
    }

    /// A wakeup's latency runs from its `sched_waking` to the task's switch-in or, when the
    /// task turns up without one (an idle-silent CPU), to that CPU's line before it.
    #[test]
    fn wakeup_latency_ends_at_the_switch_in_or_the_line_before_a_silent_one() {
        let c = analyze(T, &Program::Pids { roots: &[10, 11], follow_forks: false }, &BTreeSet::new());
        // pong: woken at 10 us, first seen on CPU 1 at 600 us with no earlier line there: 0.
        // ping: woken at 600 us, first seen at 1000 us on CPU 0, whose line before it (the
        // wakeup in the interrupt) is at 610 us: 10 us.
        assert_eq!(c.wake_latency_ns, vec![0, 10_000]);
        assert_eq!(percentile(&[1, 2, 3, 4, 5, 6, 7, 8, 9, 10], 50), Some(5));
        assert_eq!(percentile(&[1, 2, 3, 4, 5, 6, 7, 8, 9, 10], 90), Some(9));
        assert_eq!(percentile(&[1, 2, 3, 4, 5, 6, 7, 8, 9, 10], 99), Some(10));
        assert_eq!(percentile(&[], 50), None);
        let f = figures(&Counts { wakeups: 2, wake_latency_ns: vec![0, 10_000], ..Default::default() }, &[], None);
        assert!(f.iter().any(|r| r.0 == RowKind::Latency && r.2 == "wakeup latency p99 (us)" && r.3 == 10.0));
    }

    #[test]
    fn a_task_running_since_before_the_capture_counts_as_foreign() {
        // rustc holds CPU 1 from before the capture to after the program: it never switches,
        // only its interrupts log lines. The program runs on CPU 0 only.
        let t = "\
           rustc-77      [001] d.h1.   1.000000: local_timer_entry: vector=236
            ping-10      [000] d..3.   1.000000: sched_waking: comm=pong pid=11 prio=120 target_cpu=000
            ping-10      [000] d..2.   1.000100: sched_switch: prev_comm=ping prev_pid=10 prev_prio=120 prev_state=S ==> next_comm=pong next_pid=11 next_prio=120
           rustc-77      [001] d.h1.   1.000500: local_timer_entry: vector=236
            pong-11      [000] d..2.   1.001000: sched_switch: prev_comm=pong prev_pid=11 prev_prio=120 prev_state=S ==> next_comm=swapper/0 next_pid=0 next_prio=120
           rustc-77      [001] d.h1.   1.004000: local_timer_entry: vector=236
";
        let c = analyze(t, &Program::Pids { roots: &[10, 11], follow_forks: false }, &BTreeSet::new());
        assert_eq!(c.span_ns, 1_000_000);
        assert_eq!(c.program_ns, 1_000_000, "ping then pong on CPU 0");
        assert_eq!(c.foreign_ns, 1_000_000, "rustc on CPU 1 for the whole lifetime");
        assert!((c.foreign_share() - 0.5).abs() < 1e-9);
    }

    #[test]
    fn forks_extend_the_program() {
        let t = "\
          bash-5       [000] d..2.   1.000000: sched_process_fork: comm=bash pid=5 child_comm=bash child_pid=6
          bash-6       [001] d..3.   1.000100: sched_waking: comm=x pid=5 prio=120 target_cpu=000
          bash-6       [001] d..3.   1.000101: sched_wakeup: comm=x pid=5 prio=120 target_cpu=000
";
        assert_eq!(analyze(t, &Program::Pids { roots: &[5], follow_forks: true }, &BTreeSet::new()).pids, 2);
        assert_eq!(analyze(t, &Program::Pids { roots: &[5], follow_forks: false }, &BTreeSet::new()).pids, 1);
    }

    /// rt-app's shape: the main process (5) runs alone first (its calibration), forks two
    /// threads that run and exit, then runs alone again (its logs). The forked window counts
    /// the threads' stretch only, by pid or by name alike; without forks it is the lifetime.
    #[test]
    fn the_forked_window_spans_the_childrens_first_to_last_line() {
        let t = "\
          rt-app-5       [000] d..2.   1.000000: sched_waking: comm=rt-app pid=5 prio=120 target_cpu=000
          rt-app-5       [000] d..2.   1.000001: sched_wakeup: comm=rt-app pid=5 prio=120 target_cpu=000
          rt-app-5       [000] .....   4.000000: sched_process_fork: comm=rt-app pid=5 child_comm=rt-app child_pid=6
          rt-app-5       [000] .....   4.000010: sched_process_fork: comm=rt-app pid=5 child_comm=rt-app child_pid=7
            load-6       [001] d..2.   4.000100: sched_waking: comm=fifo pid=7 prio=120 target_cpu=000
            load-6       [001] d..2.   4.000101: sched_wakeup: comm=fifo pid=7 prio=120 target_cpu=000
            fifo-7       [000] d..2.   5.000000: sched_waking: comm=load pid=6 prio=120 target_cpu=001
            fifo-7       [000] d..2.   5.000001: sched_wakeup: comm=load pid=6 prio=120 target_cpu=001
            load-6       [001] .....   6.000100: sched_process_exit: comm=load pid=6 prio=120 group_dead=false
          rt-app-5       [000] d..2.   9.000000: sched_waking: comm=rt-app pid=5 prio=120 target_cpu=000
          rt-app-5       [000] d..2.   9.000001: sched_wakeup: comm=rt-app pid=5 prio=120 target_cpu=000
";
        let pids = Program::Pids { roots: &[5], follow_forks: true };
        let life = analyze(t, &pids, &BTreeSet::new());
        assert_eq!((life.span_ns, life.wakeups, life.forked_window), (8_000_001_000, 4, false));
        let uc = analyze_in(t, &pids, &BTreeSet::new(), Window::Forked);
        assert_eq!((uc.span_ns, uc.wakeups, uc.forked_window), (2_000_000_000, 2, true));
        let names = ["rt-app".to_string()];
        let by_name = analyze_in(t, &Program::Comms(&names), &BTreeSet::new(), Window::Forked);
        assert_eq!((by_name.span_ns, by_name.wakeups, by_name.pids), (2_000_000_000, 2, 3));
        // Nothing forked: the lifetime.
        let model =
            analyze_in(t, &Program::Pids { roots: &[6, 7], follow_forks: false }, &BTreeSet::new(), Window::Forked);
        assert!(!model.forked_window);
        assert_eq!(model.span_ns, 2_000_000_000);
    }

    #[test]
    fn rows_put_structure_first_and_judge_the_ratio() {
        let real = vec![
            vec![(RowKind::Speed, 0, "us".to_string(), 10.0), (RowKind::Structure, 0, "a".to_string(), 1.0)],
            vec![(RowKind::Speed, 0, "us".to_string(), 12.0), (RowKind::Structure, 0, "a".to_string(), 1.0)],
        ];
        let model =
            vec![vec![(RowKind::Structure, 0, "a".to_string(), 1.1), (RowKind::Speed, 0, "us".to_string(), 22.0)]];
        let r = rows(&real, &model, 0.15);
        assert_eq!(r[0].name, "a");
        assert!(r[0].within);
        assert_eq!((r[1].real_min, r[1].real_max, r[1].real_mean), (Some(10.0), Some(12.0), Some(11.0)));
        assert_eq!(r[1].ratio, Some(2.0));
        assert!(!r[1].within);
        let text = render(&r, 0.15);
        assert!(text.contains("within 15%"), "{text}");
        // A tiny per-wakeup difference matches whatever the ratio; a speed no real run printed
        // is unknown.
        let real = vec![vec![(RowKind::Structure, 0, "b".to_string(), 0.001)]];
        let model =
            vec![vec![(RowKind::Structure, 0, "b".to_string(), 0.004), (RowKind::Speed, 0, "us".to_string(), 3.0)]];
        let r = rows(&real, &model, 0.15);
        assert!(r[0].within && r[0].ratio.unwrap() > 3.9);
        assert_eq!((r[1].real_mean, r[1].within), (None, false));
    }

    #[test]
    fn calibrated_tables_mark_status_and_judge_targets_on_the_median() {
        let f = |s: f64, rate: f64, us: f64| {
            vec![
                (RowKind::Structure, 0, "s".to_string(), s),
                (RowKind::Rate, 0, "r".to_string(), rate),
                (RowKind::Speed, 0, "us".to_string(), us),
            ]
        };
        // Real medians: s 1.0, r 100, us 10 (the means are pulled by the outlier).
        let real = vec![f(1.0, 100.0, 10.0), f(0.9, 100.0, 10.0), f(1.5, 300.0, 40.0)];
        let model = vec![f(1.1, 124.0, 12.6)];
        let mut r = rows(&real, &model, 0.15);
        assert!(!render(&r, 0.15).contains("status"), "an uncalibrated table has no status column");
        mark(&mut r, Some(Status::Predicted));
        let get = |n: &str| r.iter().find(|x| x.name == n).unwrap();
        assert_eq!(get("s").real_median, Some(1.0));
        assert_eq!(get("s").target_met, Some(true), "1.1 is within 15% of 1.0");
        assert_eq!(get("r").target_met, Some(true), "124 is within 25% of 100");
        assert_eq!(get("us").target_met, Some(false), "12.6 is 26% above 10");
        let text = render(&r, 0.15);
        assert!(text.contains("predicted") && text.contains("MISS"), "{text}");
        mark(&mut r, None);
        assert!(r.iter().all(|x| x.status.is_none() && x.target_met.is_none()));
    }
}
