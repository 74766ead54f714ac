//! The host's background profile from an idle capture: what `tools/measure/background.py` and
//! `make_profile.py` do for this project's guest, for any host, as one pass over the trace.
//!
//! Sources, each a mechanism of `src/background` ([`crate::background::Kind`]):
//! - a workqueue work function (`workqueue_execute_start` -> `_end`) run by bound workers
//!   (`kworker/N:M`) is `percpu-work` (on every CPU if it ran on every CPU, else on the CPU
//!   that ran it most), by unbound ones (`kworker/uN:M`) `unbound-work`; it is deferrable when
//!   most of the `delayed_work_timer_fn` timers that queued it were started with flag `D`;
//!   functions with fewer than [`MIN_RUNS`] runs are pooled as one `other-kworker`;
//! - the softlockup hrtimer (`watchdog_timer_fn`) is `watchdog`, its run time the stopper's
//!   run after the callback woke it;
//! - RCU and TIMER softirqs raised from inside the tick's hrtimer callback are `tick-softirq`,
//!   at the measured share of ticks;
//! - a woken kernel thread (by name, as background.py tells them) is `kthread`; a woken user
//!   task that neither started nor ended inside the capture is `daemon`.
//!
//! Periods are the capture's length over the runs (per instance), the jitter covers the
//! p10..p90 of the intervals between runs, run times are the p0/p50/p90/p99/p100 of the
//! measured durations. No I/O here: `cli::calibrate` captures.

use crate::validate::Line;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

/// Fewer runs than this in the capture and a work function is pooled into `other-kworker`,
/// a task is left out.
pub const MIN_RUNS: usize = 3;

/// Kernel threads by name (background.py's list): a task whose comm starts so is a kthread.
const KTHREAD_PREFIXES: &[&str] = &[
    "kworker/",
    "rcu_",
    "rcuog",
    "rcuop",
    "ksoftirqd/",
    "migration/",
    "watchdog",
    "cpuhp/",
    "kcompactd",
    "kdamond",
    "khugepaged",
    "kswapd",
    "kthreadd",
    "jbd2/",
    "kauditd",
    "oom_reaper",
    "irq/",
    "idle_inject/",
    "khungtaskd",
    "kintegrityd",
    "kblockd",
    "writeback",
    "ext4-",
    "scsi_",
    "hwrng",
    "kstrp",
    "ipv6_addrconf",
    "psimon",
    "pool_workqueue",
    "kerneloops",
    "kdevtmpfs",
    "kthrotld",
    "ksmd",
    "zswap",
    "kmpath",
    "napi/",
    "vhost-",
    "khvcd",
    "kpsmoused",
    "ttm",
    "krfcommd",
];

fn is_kthread(comm: &str) -> bool {
    KTHREAD_PREFIXES.iter().any(|p| comm.starts_with(p))
}

/// `ksoftirqd/1` -> (`ksoftirqd`, true): per-CPU kthreads as one source on every CPU.
fn per_cpu_name(comm: &str) -> (String, bool) {
    match comm.rsplit_once('/') {
        Some((base, n)) if !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) => (base.to_string(), true),
        _ => (comm.to_string(), false),
    }
}

/// `kworker/0:1` -> Some(true) bound, `kworker/u4:2` -> Some(false) unbound.
fn worker_kind(comm: &str) -> Option<bool> {
    let rest = comm.strip_prefix("kworker/")?;
    let (pool, _) = rest.split_once(':')?;
    if let Some(u) = pool.strip_prefix('u') {
        return u.bytes().all(|b| b.is_ascii_digit()).then_some(false);
    }
    pool.bytes().all(|b| b.is_ascii_digit()).then_some(true)
}

/// One source as the profile writes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceOut {
    pub name: String,
    pub kind: &'static str,
    pub period_us: u64,
    pub jitter_us: u64,
    pub deferrable: bool,
    pub cpus: String,
    pub runtime_ns: [u64; 5],
    pub vec: Option<&'static str>,
    /// Comment lines (the figures it came from).
    pub notes: Vec<String>,
}

/// What the idle capture gave.
#[derive(Debug, Clone, Default)]
pub struct Background {
    pub seconds_milli: u64,
    pub nr_cpus: u32,
    pub sources: Vec<SourceOut>,
    /// Tasks left out, with their wakeups.
    pub left_out: Vec<(String, u64)>,
    pub busy_permille: u64,
}

fn quantiles(v: &mut [u64]) -> [u64; 5] {
    v.sort_unstable();
    let q = |pm: usize| v.get((v.len().saturating_sub(1)) * pm / 1000).copied().unwrap_or(0);
    [q(0), q(500), q(900), q(990), q(1000)]
}

/// Half-width of a uniform [P-J, P+J] covering the p10..p90 of `intervals` (ns), at most P.
fn jitter(intervals: &mut [u64], period: u64) -> u64 {
    if intervals.len() < 2 {
        return period / 2;
    }
    intervals.sort_unstable();
    let q = |pm: usize| intervals[(intervals.len() - 1) * pm / 1000];
    period.saturating_sub(q(100)).max(q(900).saturating_sub(period)).min(period)
}

fn intervals(starts: &mut [u64]) -> Vec<u64> {
    starts.sort_unstable();
    starts.windows(2).map(|w| w[1] - w[0]).collect()
}

/// Analyze an idle capture. `hz` is the machine's CONFIG_HZ (the tick period).
/// The ticks of loaded captures and the softirqs raised inside them: where a `tick-softirq`
/// source's share comes from when there are enough of them ([`MIN_LOADED_TICKS`]).
///
/// On an idle machine a tick finds a CPU awake mostly because a timer or an RCU callback woke
/// it, so the idle capture's busy ticks are the ones most likely to raise TIMER and RCU
/// softirqs (this guest: RCU in 106 of 131, TIMER in 39 of 131); under a program's load every
/// tick counts, and the real shares are a third to a half of those (docs/validate-guest.md,
/// "The per-second rates under load"). The calibration's own program captures are loaded and
/// are never the programs `validate` predicts.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TickShares {
    pub ticks: u64,
    /// Softirq vector -> ticks that raised it.
    pub raised: BTreeMap<u64, u64>,
    /// The captures counted.
    pub captures: Vec<String>,
}

/// Fewer loaded ticks than this and the idle capture's busy ticks give the share.
pub const MIN_LOADED_TICKS: u64 = 50;

impl TickShares {
    /// Count the ticks (`hrtimer_expire_entry` of the tick's hrtimer .. its exit) of capture
    /// `name` and the softirqs raised inside them (each vector once per tick).
    pub fn add(&mut self, name: &str, text: &str, tsc_khz: Option<u64>) {
        let mut in_tick: BTreeMap<u32, BTreeSet<u64>> = BTreeMap::new();
        let before = self.ticks;
        for l in text.lines().filter_map(|l| Line::parse_clock(l, tsc_khz)) {
            match l.event {
                "hrtimer_expire_entry" => {
                    if matches!(l.arg("function"), Some("tick_nohz_handler" | "tick_sched_timer")) {
                        in_tick.insert(l.cpu, BTreeSet::new());
                    }
                }
                "hrtimer_expire_exit" => {
                    if let Some(v) = in_tick.remove(&l.cpu) {
                        self.ticks += 1;
                        for vec in v {
                            *self.raised.entry(vec).or_default() += 1;
                        }
                    }
                }
                "softirq_raise" => {
                    if let (Some(t), Some(v)) = (in_tick.get_mut(&l.cpu), l.num("vec")) {
                        t.insert(v);
                    }
                }
                _ => {}
            }
        }
        if self.ticks > before {
            self.captures.push(name.to_string());
        }
    }
}

/// Analyze the idle capture `text`; `loaded` are the ticks of the loaded captures, which set
/// the `tick-softirq` shares when there are enough of them.
pub fn analyze(text: &str, tsc_khz: Option<u64>, hz: u64, exclude_comms: &[&str], loaded: &TickShares) -> Background {
    let lines: Vec<Line> = text.lines().filter_map(|l| Line::parse_clock(l, tsc_khz)).collect();
    let mut b = Background::default();
    let (Some(first), Some(last)) = (lines.iter().map(|l| l.ts_ns).min(), lines.iter().map(|l| l.ts_ns).max()) else {
        return b;
    };
    let window = (last - first).max(1);
    b.seconds_milli = window / 1_000_000;
    b.nr_cpus = lines.iter().map(|l| l.cpu + 1).max().unwrap_or(1);
    let ncpu = b.nr_cpus as usize;
    // Per CPU state.
    let mut curr: Vec<Option<(u32, String, u64)>> = vec![None; ncpu];
    let mut work: Vec<Option<(String, u64, bool)>> = vec![None; ncpu];
    let mut in_timer: Vec<Option<bool>> = vec![None; ncpu];
    let mut in_hr: Vec<Option<(String, u64)>> = vec![None; ncpu];
    let mut in_softirq: Vec<Option<(u64, u64)>> = vec![None; ncpu];
    // Results.
    let mut work_runs: BTreeMap<String, Vec<(u32, u64, u64, bool)>> = BTreeMap::new();
    let mut work_deferrable: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    let mut timer_flags: BTreeMap<String, bool> = BTreeMap::new();
    let mut watchdog: Vec<Vec<u64>> = vec![Vec::new(); ncpu];
    let mut watchdog_woken: BTreeSet<u32> = BTreeSet::new();
    let mut watchdog_runs: Vec<u64> = Vec::new();
    let mut ticks = [0u64; 2]; // idle, busy
    let mut tick_raise: BTreeMap<u64, [u64; 2]> = BTreeMap::new();
    let mut softirq_runs: BTreeMap<u64, Vec<u64>> = BTreeMap::new();
    let mut wakeups: BTreeMap<(String, bool), Vec<u64>> = BTreeMap::new();
    let mut runs: BTreeMap<String, Vec<u64>> = BTreeMap::new();
    let mut born_or_dead: BTreeSet<u32> = BTreeSet::new();
    let mut comm_pids: BTreeMap<String, BTreeSet<u32>> = BTreeMap::new();
    let mut busy_ns = 0u64;
    for l in &lines {
        if matches!(l.event, "sched_process_fork" | "sched_process_exec" | "sched_process_exit" | "sched_wakeup_new") {
            for key in ["child_pid", "pid"] {
                if let Some(p) = l.num(key) {
                    born_or_dead.insert(p as u32);
                }
            }
        }
    }
    let mut tick_cb: Vec<bool> = vec![false; ncpu];
    for l in &lines {
        let cpu = l.cpu as usize;
        let ts = l.ts_ns;
        match l.event {
            "sched_switch" => {
                if let Some((pid, comm, since)) = curr[cpu].take() {
                    let d = ts.saturating_sub(since);
                    if pid != 0 {
                        busy_ns += d;
                        runs.entry(comm).or_default().push(d);
                        if watchdog_woken.remove(&pid) {
                            watchdog_runs.push(d);
                        }
                    }
                }
                if let (Some(n), Some(c)) = (l.num("next_pid"), l.arg("next_comm")) {
                    curr[cpu] = Some((n as u32, c.to_string(), ts));
                }
            }
            "sched_wakeup" => {
                if let (Some(p), Some(c)) = (l.num("pid"), l.arg("comm")) {
                    let (name, all) = per_cpu_name(c);
                    let key = if all && is_kthread(c) { (name, true) } else { (c.to_string(), false) };
                    wakeups.entry(key).or_default().push(ts);
                    comm_pids.entry(c.to_string()).or_default().insert(p as u32);
                    if in_hr[cpu].as_ref().is_some_and(|h| h.0 == "watchdog_timer_fn") && c.starts_with("migration/") {
                        watchdog_woken.insert(p as u32);
                    }
                }
            }
            "workqueue_execute_start" => {
                let f = l.args.split_once("function ").map(|(_, f)| f.split(' ').next().unwrap_or("?"));
                let bound = worker_kind(l.comm);
                if let (Some(f), Some(bound)) = (f, bound) {
                    work[cpu] = Some((f.to_string(), ts, bound));
                }
            }
            "workqueue_execute_end" => {
                if let Some((f, s, bound)) = work[cpu].take() {
                    work_runs.entry(f).or_default().push((l.cpu, s, ts.saturating_sub(s), bound));
                }
            }
            "timer_start" if l.arg("function") == Some("delayed_work_timer_fn") => {
                if let (Some(t), Some(f)) = (l.arg("timer"), l.arg("flags")) {
                    timer_flags.insert(t.to_string(), f.split('|').any(|x| x == "D"));
                }
            }
            "timer_expire_entry" => {
                in_timer[cpu] = if l.arg("function") == Some("delayed_work_timer_fn") {
                    l.arg("timer").and_then(|t| timer_flags.get(t).copied())
                } else {
                    None
                };
            }
            "timer_expire_exit" => in_timer[cpu] = None,
            "workqueue_queue_work" => {
                if let (Some(d), Some(f)) = (in_timer[cpu], l.arg("function")) {
                    let e = work_deferrable.entry(f.to_string()).or_default();
                    e.0 += d as u64;
                    e.1 += 1;
                }
            }
            "hrtimer_expire_entry" => {
                let f = l.arg("function").unwrap_or("?").to_string();
                if f == "watchdog_timer_fn" {
                    watchdog[cpu].push(ts);
                }
                if f == "tick_nohz_handler" || f == "tick_sched_timer" {
                    let busy = curr[cpu].as_ref().is_some_and(|c| c.0 != 0);
                    ticks[busy as usize] += 1;
                    tick_cb[cpu] = true;
                }
                in_hr[cpu] = Some((f, ts));
            }
            "hrtimer_expire_exit" => {
                in_hr[cpu] = None;
                tick_cb[cpu] = false;
            }
            "softirq_raise" if tick_cb[cpu] => {
                if let Some(v) = l.num("vec") {
                    let busy = curr[cpu].as_ref().is_some_and(|c| c.0 != 0);
                    tick_raise.entry(v).or_default()[busy as usize] += 1;
                }
            }
            "softirq_entry" => in_softirq[cpu] = l.num("vec").map(|v| (v, ts)),
            "softirq_exit" => {
                if let Some((v, s)) = in_softirq[cpu].take() {
                    softirq_runs.entry(v).or_default().push(ts.saturating_sub(s));
                }
            }
            _ => {}
        }
    }
    b.busy_permille = (busy_ns as u128 * 1000 / (window as u128 * ncpu as u128)) as u64;
    let us = |ns: u64| ns.div_ceil(1000).max(1);
    let secs = format!("{}.{:03} s", b.seconds_milli / 1000, b.seconds_milli % 1000);
    // Work functions.
    let mut other: Vec<(String, usize)> = Vec::new();
    let mut other_runs: Vec<u64> = Vec::new();
    let mut other_starts: Vec<u64> = Vec::new();
    for (f, rs) in &work_runs {
        if rs.len() < MIN_RUNS {
            other.push((f.clone(), rs.len()));
            other_runs.extend(rs.iter().map(|r| r.2));
            other_starts.extend(rs.iter().map(|r| r.1));
            continue;
        }
        let bound = rs.iter().filter(|r| r.3).count() * 2 > rs.len();
        let mut per_cpu: BTreeMap<u32, Vec<u64>> = BTreeMap::new();
        for r in rs {
            per_cpu.entry(r.0).or_default().push(r.1);
        }
        let (cpus, period, mut ivals) = if !bound {
            let mut s: Vec<u64> = rs.iter().map(|r| r.1).collect();
            ("any".to_string(), window / rs.len() as u64, intervals(&mut s))
        } else if per_cpu.len() == ncpu {
            let iv: Vec<u64> = per_cpu.values_mut().flat_map(|s| intervals(s)).collect();
            ("all".to_string(), window * ncpu as u64 / rs.len() as u64, iv)
        } else {
            let (c, s) = per_cpu.iter_mut().max_by_key(|(c, s)| (s.len(), std::cmp::Reverse(**c))).expect("runs");
            (c.to_string(), window / s.len() as u64, intervals(s))
        };
        let (dv, dn) = work_deferrable.get(f).copied().unwrap_or((0, 0));
        let mut d: Vec<u64> = rs.iter().map(|r| r.2).collect();
        b.sources.push(SourceOut {
            name: f.clone(),
            kind: if bound { "percpu-work" } else { "unbound-work" },
            period_us: us(period),
            jitter_us: us(jitter(&mut ivals, period)).min(us(period)),
            deferrable: dn > 0 && dv * 2 > dn,
            cpus,
            runtime_ns: quantiles(&mut d),
            vec: None,
            notes: vec![format!(
                "{} runs in {secs} ({} on bound workers); queued from a delayed-work timer {dn} times, {dv} of them deferrable",
                rs.len(),
                rs.iter().filter(|r| r.3).count()
            )],
        });
    }
    if !other_runs.is_empty() {
        let period = window / other_runs.len() as u64;
        b.sources.push(SourceOut {
            name: "other-kworker".into(),
            kind: "unbound-work",
            period_us: us(period),
            jitter_us: us(period),
            deferrable: false,
            cpus: "any".into(),
            runtime_ns: quantiles(&mut other_runs),
            vec: None,
            notes: vec![format!(
                "{} runs in {secs} of work functions seen fewer than {MIN_RUNS} times, pooled: {}",
                other_runs.len(),
                other.iter().map(|(f, n)| format!("{f}({n})")).collect::<Vec<_>>().join(", ")
            )],
        });
    }
    // The watchdog.
    let mut wd_ivals: Vec<u64> = Vec::new();
    let mut wd_n = 0;
    for w in &mut watchdog {
        wd_n += w.len();
        wd_ivals.extend(intervals(w));
    }
    if !wd_ivals.is_empty() {
        wd_ivals.sort_unstable();
        let period = wd_ivals[(wd_ivals.len() - 1) / 2];
        let mut rt = if watchdog_runs.is_empty() { vec![1000] } else { watchdog_runs.clone() };
        b.sources.push(SourceOut {
            name: "watchdog".into(),
            kind: "watchdog",
            period_us: us(period),
            jitter_us: us(jitter(&mut wd_ivals.clone(), period)).min(us(period)),
            deferrable: false,
            cpus: "all".into(),
            runtime_ns: quantiles(&mut rt),
            vec: None,
            notes: vec![format!(
                "watchdog_timer_fn: {wd_n} expiries, same-CPU interval median {period} ns; run time: migration/N after it, {} runs",
                watchdog_runs.len()
            )],
        });
    }
    // Softirqs raised from the tick.
    let tick_ns = 1_000_000_000 / hz.max(1);
    for (vec, name) in [(9u64, "RCU"), (1u64, "TIMER")] {
        let raised = tick_raise.get(&vec).copied().unwrap_or([0, 0]);
        // The loaded captures' share when they have enough ticks (TickShares says why), else
        // the idle capture's busy ticks', else all its ticks'.
        let loaded_names = format!("ticks of the loaded captures ({})", loaded.captures.join(", "));
        let (n, of, which) = if loaded.ticks >= MIN_LOADED_TICKS {
            (loaded.raised.get(&vec).copied().unwrap_or(0), loaded.ticks, loaded_names.as_str())
        } else if ticks[1] >= 50 {
            (raised[1], ticks[1], "busy ticks")
        } else {
            (raised[0] + raised[1], ticks[0] + ticks[1], "ticks")
        };
        let mut rt = softirq_runs.get(&vec).cloned().unwrap_or_default();
        if n == 0 || rt.is_empty() {
            continue;
        }
        let period = tick_ns * of / n;
        b.sources.push(SourceOut {
            name: name.into(),
            kind: "tick-softirq",
            period_us: us(period),
            jitter_us: 0,
            deferrable: false,
            cpus: "all".into(),
            runtime_ns: quantiles(&mut rt),
            vec: Some(name),
            notes: vec![format!(
                "raised inside {n} of {of} {which} (tick {tick_ns} ns at HZ={hz}); run time: all {} {name} softirqs",
                rt.len()
            )],
        });
    }
    // Kernel threads and daemons.
    for ((name, all), w) in &wakeups {
        let kth = is_kthread(name);
        if name.starts_with("kworker/") || name.starts_with("migration") || name.starts_with("cpuhp") {
            continue;
        }
        if exclude_comms.iter().any(|e| e == name) {
            b.left_out.push((name.clone(), w.len() as u64));
            continue;
        }
        let pids = comm_pids.get(name).cloned().unwrap_or_default();
        let transient = !kth && pids.iter().any(|p| born_or_dead.contains(p));
        if w.len() < MIN_RUNS || transient {
            b.left_out.push((name.clone(), w.len() as u64));
            continue;
        }
        let per = if *all { ncpu as u64 } else { 1 };
        let period = window * per / w.len() as u64;
        let mut ws = w.clone();
        let mut iv = intervals(&mut ws);
        let mut rt: Vec<u64> = if *all {
            runs.iter().filter(|(c, _)| per_cpu_name(c).0 == *name).flat_map(|(_, v)| v.iter().copied()).collect()
        } else {
            runs.get(name).cloned().unwrap_or_default()
        };
        if rt.is_empty() {
            rt.push(0);
        }
        b.sources.push(SourceOut {
            name: name.clone(),
            kind: if kth { "kthread" } else { "daemon" },
            period_us: us(period),
            jitter_us: us(jitter(&mut iv, period)).min(us(period)),
            deferrable: false,
            cpus: if *all { "all".into() } else { "any".into() },
            runtime_ns: quantiles(&mut rt),
            vec: None,
            notes: vec![format!("{} wakeups in {secs}; run time: switch-in -> out, {} runs", w.len(), rt.len())],
        });
    }
    b
}

/// The profile file's text (read back by [`crate::background::parse`]).
pub fn profile_text(b: &Background, name: &str, measured: &str) -> String {
    let mut t = String::new();
    let _ = writeln!(t, "# Background profile of this host, measured by `schedsim machine --from-host --calibrate`");
    let _ = writeln!(
        t,
        "# from an idle capture of {}.{:03} s through tracefs (src/calibrate/background.rs says how",
        b.seconds_milli / 1000,
        b.seconds_milli % 1000
    );
    let _ = writeln!(
        t,
        "# each source is read). The CPUs were busy {}.{}% of the time.",
        b.busy_permille / 10,
        b.busy_permille % 10
    );
    if !b.left_out.is_empty() {
        let _ = writeln!(
            t,
            "# Left out (too few wakeups, started or ended inside the capture, or the capture's own): {}.",
            b.left_out.iter().map(|(n, w)| format!("{n} ({w})")).collect::<Vec<_>>().join(", ")
        );
    }
    let _ = writeln!(t, "name = {}", toml_string(name));
    let _ =
        writeln!(t, "description = {}", toml_string(&format!("measured on this host: {} sources", b.sources.len())));
    let _ = writeln!(t, "measured = {}", toml_string(measured));
    for s in &b.sources {
        let _ = writeln!(t, "\n[[source]]");
        for n in &s.notes {
            let _ = writeln!(t, "# {n}");
        }
        let _ = writeln!(t, "name = {}", toml_string(&s.name));
        let _ = writeln!(t, "kind = \"{}\"", s.kind);
        let _ = writeln!(t, "period_us = {}", s.period_us);
        let _ = writeln!(t, "jitter_us = {}", s.jitter_us);
        let _ = writeln!(t, "deferrable = {}", s.deferrable);
        let _ = writeln!(t, "cpus = \"{}\"", s.cpus);
        let q = s.runtime_ns;
        let _ = writeln!(t, "runtime_ns = [{}, {}, {}, {}, {}]", q[0], q[1], q[2], q[3], q[4]);
        if let Some(v) = s.vec {
            let _ = writeln!(t, "vec = \"{v}\"");
        }
    }
    t
}

/// A TOML basic string.
pub fn toml_string(s: &str) -> String {
    let mut o = String::from("\"");
    for ch in s.chars() {
        match ch {
            '"' => o.push_str("\\\""),
            '\\' => o.push_str("\\\\"),
            c if c.is_control() => o.push_str(&format!("\\u{:04x}", c as u32)),
            c => o.push(c),
        }
    }
    o.push('"');
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn work_watchdog_tick_softirqs_and_threads_become_sources_that_parse() {
        let mut t = String::from("# tracer: nop\n");
        // 10 s, 2 CPUs: vmstat_update on both CPUs every second (deferrable), the watchdog
        // every 4 s, RCU raised on every other tick, rcu_preempt woken 20 times.
        for s in 0..10u64 {
            for cpu in 0..2u64 {
                let ts = s * 1_000_000 + cpu * 1000 + 10;
                t.push_str(&format!("  <idle>-0 [{cpu:03}] ..s1. {}.{:06}: timer_start: timer=0000000{cpu} function=delayed_work_timer_fn expires=1 [timeout=1] bucket_expiry=1 cpu={cpu} idx=1 flags=D|I\n", ts / 1_000_000, ts % 1_000_000));
                t.push_str(&format!("  <idle>-0 [{cpu:03}] ..s1. {}.{:06}: timer_expire_entry: timer=0000000{cpu} function=delayed_work_timer_fn now=1 baseclk=1\n", ts / 1_000_000, ts % 1_000_000 + 1));
                t.push_str(&format!("  <idle>-0 [{cpu:03}] d.s2. {}.{:06}: workqueue_queue_work: work struct=1 function=vmstat_update workqueue=mm_percpu_wq req_cpu={cpu} cpu={cpu}\n", ts / 1_000_000, ts % 1_000_000 + 2));
                t.push_str(&format!(
                    "  <idle>-0 [{cpu:03}] ..s1. {}.{:06}: timer_expire_exit: timer=0000000{cpu}\n",
                    ts / 1_000_000,
                    ts % 1_000_000 + 3
                ));
                t.push_str(&format!("  kworker/{cpu}:1-50 [{cpu:03}] ..... {}.{:06}: workqueue_execute_start: work struct 1: function vmstat_update\n", ts / 1_000_000, ts % 1_000_000 + 5));
                t.push_str(&format!("  kworker/{cpu}:1-50 [{cpu:03}] ..... {}.{:06}: workqueue_execute_end: work struct 1: function vmstat_update\n", ts / 1_000_000, ts % 1_000_000 + 8));
            }
            for k in 0..250u64 {
                let ts = s * 1_000_000 + k * 4000 + 500;
                t.push_str(&format!("  <idle>-0 [000] d.h1. {}.{:06}: hrtimer_expire_entry: hrtimer=1 function=tick_nohz_handler now=1\n", ts / 1_000_000, ts % 1_000_000));
                if k % 2 == 0 {
                    t.push_str(&format!(
                        "  <idle>-0 [000] d.h1. {}.{:06}: softirq_raise: vec=9 [action=RCU]\n",
                        ts / 1_000_000,
                        ts % 1_000_000 + 1
                    ));
                }
                t.push_str(&format!(
                    "  <idle>-0 [000] d.h1. {}.{:06}: hrtimer_expire_exit: hrtimer=1\n",
                    ts / 1_000_000,
                    ts % 1_000_000 + 2
                ));
                if k % 2 == 0 {
                    t.push_str(&format!(
                        "  <idle>-0 [000] ..s1. {}.{:06}: softirq_entry: vec=9 [action=RCU]\n",
                        ts / 1_000_000,
                        ts % 1_000_000 + 3
                    ));
                    t.push_str(&format!(
                        "  <idle>-0 [000] ..s1. {}.{:06}: softirq_exit: vec=9 [action=RCU]\n",
                        ts / 1_000_000,
                        ts % 1_000_000 + 7
                    ));
                }
            }
            if s % 4 == 0 {
                let ts = s * 1_000_000 + 2000;
                t.push_str(&format!("  <idle>-0 [001] d.h1. {}.{:06}: hrtimer_expire_entry: hrtimer=2 function=watchdog_timer_fn now=1\n", ts / 1_000_000, ts % 1_000_000));
                t.push_str(&format!(
                    "  <idle>-0 [001] d.h1. {}.{:06}: hrtimer_expire_exit: hrtimer=2\n",
                    ts / 1_000_000,
                    ts % 1_000_000 + 1
                ));
            }
            for h in 0..2u64 {
                let ts = s * 1_000_000 + h * 500_000 + 3000;
                t.push_str(&format!(
                    "  <idle>-0 [001] d.s2. {}.{:06}: sched_wakeup: comm=rcu_preempt pid=15 prio=120 target_cpu=001\n",
                    ts / 1_000_000,
                    ts % 1_000_000
                ));
                t.push_str(&format!("  <idle>-0 [001] d..2. {}.{:06}: sched_switch: prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=rcu_preempt next_pid=15 next_prio=120\n", ts / 1_000_000, ts % 1_000_000 + 1));
                t.push_str(&format!("  rcu_preempt-15 [001] d..2. {}.{:06}: sched_switch: prev_comm=rcu_preempt prev_pid=15 prev_prio=120 prev_state=I ==> next_comm=swapper/1 next_pid=0 next_prio=120\n", ts / 1_000_000, ts % 1_000_000 + 5));
            }
        }
        let b = analyze(&t, None, 250, &[], &TickShares::default());
        let find = |n: &str| b.sources.iter().find(|s| s.name == n).unwrap_or_else(|| panic!("{n}: {:?}", b.sources));
        let v = find("vmstat_update");
        assert_eq!((v.kind, v.cpus.as_str(), v.deferrable), ("percpu-work", "all", true));
        assert_eq!(v.runtime_ns[1], 3000);
        assert!((950_000..=1_050_000).contains(&v.period_us), "{v:?}");
        let r = find("RCU");
        assert_eq!((r.kind, r.vec, r.period_us), ("tick-softirq", Some("RCU"), 8000));
        assert_eq!(r.runtime_ns[1], 4000);
        assert_eq!(find("watchdog").period_us, 4_000_000);
        let p = find("rcu_preempt");
        assert_eq!((p.kind, p.cpus.as_str(), p.runtime_ns[1]), ("kthread", "any", 4000));
        let text = profile_text(&b, "host", "test");
        let prof = crate::background::parse(&text, "t").unwrap();
        assert_eq!(prof.sources.len(), b.sources.len());

        // With enough loaded ticks their share sets the tick softirqs' period: 60 ticks of a
        // loaded capture, RCU raised inside 15 of them (twice in one: counted once), 4 ms ticks.
        let mut l = String::new();
        for i in 0..60u64 {
            let ts = 10_000_000 + i * 4000;
            let at = |us: u64| format!("{}.{:06}", (ts + us) / 1_000_000, (ts + us) % 1_000_000);
            l.push_str(&format!(
                "  pp-7 [000] d.h1. {}: hrtimer_expire_entry: hrtimer=1 function=tick_nohz_handler now=1\n",
                at(0)
            ));
            if i % 4 == 0 {
                for _ in 0..2 {
                    l.push_str(&format!("  pp-7 [000] d.h1. {}: softirq_raise: vec=9 [action=RCU]\n", at(1)));
                }
            }
            l.push_str(&format!("  pp-7 [000] d.h1. {}: hrtimer_expire_exit: hrtimer=1\n", at(2)));
            // Outside the tick: not counted.
            l.push_str(&format!("  pp-7 [000] d.h1. {}: softirq_raise: vec=1 [action=TIMER]\n", at(3)));
        }
        let mut loaded = TickShares::default();
        loaded.add("pipe-2cpu", &l, None);
        assert_eq!((loaded.ticks, loaded.raised.get(&9), loaded.raised.get(&1)), (60, Some(&15), None));
        let b = analyze(&t, None, 250, &[], &loaded);
        let r = b.sources.iter().find(|s| s.name == "RCU").expect("RCU");
        assert_eq!(r.period_us, 16_000, "4 ms x 60 / 15");
        assert!(r.notes[0].contains("loaded captures (pipe-2cpu)"), "{:?}", r.notes);
        // TIMER was never raised inside a loaded tick: no source.
        assert!(b.sources.iter().all(|s| s.name != "TIMER"));
        // Too few loaded ticks: the idle capture's share, as before.
        let mut few = TickShares::default();
        few.add("x", &l.lines().take(40).map(|x| format!("{x}\n")).collect::<String>(), None);
        assert!(few.ticks < MIN_LOADED_TICKS);
        let b = analyze(&t, None, 250, &[], &few);
        assert_eq!(b.sources.iter().find(|s| s.name == "RCU").expect("RCU").period_us, 8000);
    }
}
