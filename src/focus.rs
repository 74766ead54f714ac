//! What a report's timeline looks at: the CPUs of interest of a run and the instant its window
//! opens. An experiment names them in its plan (`experiments::Plan::focus`: ipistorm's sender
//! and target at the median call, rt-push's CPUs at the wakeup, ...); a user may pick a window
//! with `--html-window CPUS@TIME[+SPAN]`; a `run` without either looks at where the workload's
//! own tasks ran. The rule that chose a window is printed with it.
//!
//! An instant is the first trace record of a kind ([`Match`]) at or after an anchor
//! ([`Anchor`]): a fixed time, the middle of the measured run, the first modelled WARN, the
//! first stacking wakeup. Anchors that depend on the run are read from the variant's first-seed
//! result, which the detail re-run reproduces exactly (runs are deterministic).

use crate::run::RunResult;
use crate::sim::{Time, NSEC_PER_MSEC, NSEC_PER_USEC};
use crate::trace::{Event, Record, Sym};

/// The kind of record that opens a window.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Match {
    /// Any record.
    Any,
    /// An IPI sent (`ipi_send_cpu`, `ipi_send_cpumask`) or a polling kick
    /// (`sched_wake_idle_without_ipi`).
    IpiOrKick,
    /// `csd_queue_cpu`, of function `func` if given.
    CsdQueue(Option<Sym>),
    /// `sched_waking` of a task whose name starts with this.
    Waking(String),
    /// `sched_migrate_task`.
    Migration,
    /// A modelled `WARN_ON_ONCE`.
    Warning,
}

impl Match {
    /// Whether `r` is of this kind (`comm` names a pid).
    pub fn hits(&self, r: &Record, comm: impl Fn(u32) -> Option<String>) -> bool {
        match (self, &r.event) {
            (Match::Any, _) => true,
            (Match::IpiOrKick, Event::IpiSendCpu { .. } | Event::IpiSendCpumask { .. }) => true,
            (Match::IpiOrKick, Event::SchedWakeIdleWithoutIpi { .. }) => true,
            (Match::CsdQueue(f), Event::CsdQueueCpu { func, .. }) => f.is_none_or(|f| f == *func),
            (Match::Waking(prefix), Event::SchedWaking { pid, .. }) => {
                comm(*pid).is_some_and(|c| c.starts_with(prefix.as_str()))
            }
            (Match::Migration, Event::SchedMigrateTask { .. }) => true,
            (Match::Warning, Event::Warning { .. }) => true,
            _ => false,
        }
    }

    fn describe(&self) -> String {
        match self {
            Match::Any => "record".into(),
            Match::IpiOrKick => "IPI or polling kick".into(),
            Match::CsdQueue(None) => "csd_queue_cpu".into(),
            Match::CsdQueue(Some(f)) => format!("csd_queue_cpu of {f:?}"),
            Match::Waking(c) => format!("sched_waking of {c}"),
            Match::Migration => "sched_migrate_task".into(),
            Match::Warning => "WARN".into(),
        }
    }
}

/// Where the search for the instant starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Anchor {
    /// At the start of the measured window (the workload's start after any warm-up).
    MeasureStart,
    /// Half way through the measured window: a steady stretch of a run.
    Middle,
    /// The first modelled WARN of the run (`Stats::first_warn_ns`).
    FirstWarn,
    /// The first stacking wakeup of the run (`Stats::first_stacking`).
    FirstStacking,
    /// A time since boot (ns).
    At(Time),
}

/// What opens a window: the first record of a kind (on one CPU if given) at or after an anchor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Moment {
    pub what: Match,
    pub cpu: Option<u32>,
    pub after: Anchor,
}

/// The CPUs a timeline shows first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Cpus {
    /// These, then the CPU of the record that opened the window and its target.
    Listed(Vec<u32>),
    /// The CPUs the workload's tasks ran on in the window (a `run` without a plan).
    WorkloadTasks,
}

/// A report's window: its CPUs, its instant, and its span.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Focus {
    pub cpus: Cpus,
    pub instant: Moment,
    /// The narrow window's length; it opens a fifth of it before the instant. The context
    /// window around it is [`CONTEXT`] times as long.
    pub span_ns: Time,
    /// Why this window: printed under the timeline.
    pub why: String,
}

/// How much longer the context window is than the narrow one.
pub const CONTEXT: u64 = 10;

/// The default span of a window.
pub const SPAN_NS: Time = 100 * NSEC_PER_USEC;

impl Default for Focus {
    /// The first IPI or polling kick of the measured window, the workload's CPUs.
    fn default() -> Self {
        Focus {
            cpus: Cpus::WorkloadTasks,
            instant: Moment { what: Match::IpiOrKick, cpu: None, after: Anchor::MeasureStart },
            span_ns: SPAN_NS,
            why: "the first IPI or polling kick after the workload starts, the CPUs its tasks ran on".into(),
        }
    }
}

impl Focus {
    /// The first IPI or polling kick half way through the measured window, the workload's CPUs:
    /// for experiments about a steady stretch of wakeups (nanosleep, hackbench-2013, the LKP
    /// cells) rather than their start, where the window would show the fork of the tasks.
    pub fn steady() -> Self {
        Focus {
            instant: Moment { what: Match::IpiOrKick, cpu: None, after: Anchor::Middle },
            why: "the first IPI or polling kick half way through the run, the CPUs the workload's tasks ran on".into(),
            ..Focus::default()
        }
    }
}

/// What a window's sink searches for: resolved against a first-seed result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Trigger {
    pub what: Match,
    pub cpu: Option<u32>,
    /// The search starts here (ns since boot).
    pub from_ns: Time,
    /// The narrow window's span and how far before the instant it opens.
    pub span_ns: Time,
    pub lead_ns: Time,
}

impl Match {
    /// The kind named in an experiment file: `any`, `ipi` (an IPI or a polling kick),
    /// `csd_queue_cpu` or `csd_queue_cpu:FUNC` (`nohz_csd_func`, `do_nothing_ipi`,
    /// `sched_ttwu_pending`), `waking:NAME` (a task's comm prefix), `migration`, `warn`.
    pub fn parse(s: &str) -> Result<Match, String> {
        let syms = [
            ("nohz_csd_func", Sym::NohzCsdFunc),
            ("do_nothing_ipi", Sym::DoNothingIpi),
            ("sched_ttwu_pending", Sym::SchedTtwuPending),
            ("rto_push_irq_work_func", Sym::RtoPushIrqWorkFunc),
        ];
        Ok(match s.split_once(':') {
            None => match s {
                "any" => Match::Any,
                "ipi" => Match::IpiOrKick,
                "csd_queue_cpu" => Match::CsdQueue(None),
                "migration" => Match::Migration,
                "warn" => Match::Warning,
                _ => {
                    return Err(format!(
                        "event = \"{s}\": expected any, ipi, csd_queue_cpu[:FUNC], waking:NAME, migration or warn"
                    ))
                }
            },
            Some(("csd_queue_cpu", f)) => match syms.iter().find(|(n, _)| *n == f) {
                Some((_, sym)) => Match::CsdQueue(Some(*sym)),
                None => {
                    let names: Vec<&str> = syms.iter().map(|(n, _)| *n).collect();
                    return Err(format!("event = \"{s}\": csd function '{f}' (expected one of: {})", names.join(", ")));
                }
            },
            Some(("waking", name)) if !name.is_empty() => Match::Waking(name.to_string()),
            _ => {
                return Err(format!(
                    "event = \"{s}\": expected any, ipi, csd_queue_cpu[:FUNC], waking:NAME, migration or warn"
                ))
            }
        })
    }
}

impl Anchor {
    /// The anchor named in an experiment file: `start`, `middle`, `first-warn`,
    /// `first-stacking`, or a time in ms since boot.
    pub fn parse(s: &str) -> Result<Anchor, String> {
        Ok(match s {
            "start" => Anchor::MeasureStart,
            "middle" => Anchor::Middle,
            "first-warn" => Anchor::FirstWarn,
            "first-stacking" => Anchor::FirstStacking,
            ms => match ms.parse::<f64>() {
                Ok(x) if (0.0..=7.2e6).contains(&x) => Anchor::At((x * 1e6).round() as Time),
                _ => {
                    return Err(format!(
                        "after = \"{s}\": expected start, middle, first-warn, first-stacking or a time in ms"
                    ))
                }
            },
        })
    }
}

impl Focus {
    /// Whether run `r` reached this focus's anchor.
    pub fn reaches(&self, r: &RunResult) -> bool {
        self.anchor_in(r).is_some()
    }

    /// The time of an anchor that depends on the run, if the run reached it.
    fn anchor_in(&self, r: &RunResult) -> Option<Time> {
        match self.instant.after {
            Anchor::MeasureStart => Some(r.warmup_ns),
            Anchor::At(t) => Some(t),
            Anchor::Middle => Some(r.warmup_ns + r.sim_ns / 2),
            Anchor::FirstWarn => r.stats.first_warn_ns,
            Anchor::FirstStacking => r.stats.first_stacking.map(|(t, _, _)| t),
        }
    }

    /// The trigger of this focus in a run like `first` (a run of the same spec). When that run
    /// never reached the anchor (no WARN fired, no wakeup stacked), the window is the
    /// comparable instant of `reference` (another variant's run that did: the first variant
    /// with it), any record then; failing that, the workload's start. The rule says which.
    pub fn trigger(&self, first: Option<&RunResult>, reference: Option<&RunResult>) -> (Trigger, String) {
        let start = first.map_or(0, |r| r.warmup_ns);
        let mut what = self.instant.what.clone();
        let (from_ns, note) = match first.and_then(|r| self.anchor_in(r)) {
            Some(t) => (t, String::new()),
            None if first.is_none() => (start, String::new()),
            None => match reference.and_then(|r| self.anchor_in(r)) {
                Some(t) => {
                    what = Match::Any;
                    (t, " (not reached in this variant's run: at the instant it was reached in the first variant that did)".to_string())
                }
                None => (start, " (not reached in this run: from the workload's start)".to_string()),
            },
        };
        let t = Trigger { what, cpu: self.instant.cpu, from_ns, span_ns: self.span_ns, lead_ns: self.span_ns / 5 };
        let rule = format!(
            "window: {}; it opens at the first {}{} at or after {:.3} ms{note}",
            self.why,
            t.what.describe(),
            self.instant.cpu.map_or(String::new(), |c| format!(" on CPU{c}")),
            from_ns as f64 / NSEC_PER_MSEC as f64
        );
        (t, rule)
    }

    /// A user's window, `CPUS@TIME[+SPAN]`: a cpulist (as taskset takes it), the instant in ms
    /// since boot (as the trace prints it), the span in us (default 100).
    pub fn parse_window(s: &str, nr_cpus: u32) -> Result<Focus, String> {
        let bad =
            |why: String| format!("--html-window '{s}': {why} (expected CPUS@TIME_MS[+SPAN_US], e.g. 8,16@58.2+100)");
        let (cpus, rest) = s.split_once('@').ok_or_else(|| bad("no @".into()))?;
        let cpus = crate::hw::cpumask::parse_cpulist(cpus, nr_cpus).map_err(|e| bad(e.to_string()))?;
        let (t, span) = match rest.split_once('+') {
            Some((t, sp)) => (t, Some(sp)),
            None => (rest, None),
        };
        let ms: f64 = t.trim().parse().map_err(|_| bad(format!("time '{t}' is not a number of ms")))?;
        if !(0.0..=crate::limits::MAX_SIM_NS as f64 / 1e6 * 2.0).contains(&ms) {
            return Err(bad(format!("time {ms} ms is out of range")));
        }
        let span_ns = match span {
            Some(sp) => {
                let us: u64 = sp.trim().parse().map_err(|_| bad(format!("span '{sp}' is not a whole number of us")))?;
                if !(1..=1_000_000).contains(&us) {
                    return Err(bad(format!("span {us} us is out of range (1..=1000000)")));
                }
                us * NSEC_PER_USEC
            }
            None => SPAN_NS,
        };
        let at = (ms * 1e6).round() as Time;
        Ok(Focus {
            cpus: Cpus::Listed(cpus.iter().collect()),
            // The first record at the time: the window opens a fifth of the span before it.
            instant: Moment { what: Match::Any, cpu: None, after: Anchor::At(at) },
            span_ns,
            why: format!("--html-window {s}"),
        })
    }
}
