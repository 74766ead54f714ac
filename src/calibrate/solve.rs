//! The solve: measured path durations (tracing overhead taken out) onto named model costs.
//!
//! Every sample loses its records' cost first: `corrected = ns - records * record_ns`, where
//! `record_ns` comes from the null pair (`reschedule_entry` -> `_exit`, which brackets
//! `scheduler_ipi()`: a handful of instructions, so the interval is one record's write). Then,
//! in order, each step solves one field or one group of fields from one path, minus the parts
//! an earlier step already solved (the composite durations of docs/costs.md, "Calibration"):
//!
//! | field(s) | path | solve |
//! |---|---|---|
//! | `ttwu_activate` | csd `sched_ttwu_pending` | its median |
//! | `flush`, `csd_call` | `call_function_single` minus its csd | median, split 30:15 as the defaults |
//! | `ttwu` | `hrtimer_wakeup` callback | median minus `ttwu_activate` |
//! | `sched_tick` | `tick_nohz_handler` callback | its median |
//! | `hrtimer_start` | `hrtimer_start` -> TSC-deadline `write_msr` | its median |
//! | `tick_stop` | switch to idle -> `cpu_idle`, tick stopped minus kept | difference of medians |
//! | `tick_restart` | `cpu_idle` exit -> switch away, tick restarted minus running | difference of medians |
//! | `context_switch`, `schedule_exit`, `do_idle_enter`, `governor_select` | switch to idle -> `cpu_idle`, tick kept | median, split as the defaults |
//! | `cpuidle_exit`, `do_idle_exit`, `schedule_enter`, `pick_fair_task` | `cpu_idle` exit -> switch away, tick running | median minus `flush`, split as the defaults |
//! | `update_blocked_averages`, `balance_rq`, `lb_stats_per_cpu` | SCHED softirq | median, split as the defaults (`lb_stats_per_cpu` once per CPU) |
//! | `syscall` | `getppid()` loop | median |
//! | `pipe_write`, `pipe_read` | a pipe `write(2)` waking nobody, a `read(2)` finding data | medians |
//! | `unix_sendmsg`, `unix_skb` / `unix_recvmsg`, `unix_skb_free` | the socket capture's 100-byte `write(2)` / `read(2)` | median minus the copy, split as the defaults |
//! | every other field | none | default x k, k the median ratio measured / default of the fields above that hold no VM exit |
//!
//! Hardware costs of the machine file: `ipi_send_ns` is the median of `ipi_send_cpu` -> the
//! sender's ICR `write_msr` (the x2APIC write traps to the hypervisor in a guest);
//! `ipi_delivery_ns` the p25..p75 of the ICR write -> the running target's vector entry, minus
//! the file's `irq_entry_ns` (the kernel's entry record comes after the IDT entry code, the
//! model's before it); a halted state's `wake_ns` the p25..p75 of the same to a halted target
//! minus the running target's median; its `timer_wake_ns` the p25..p75 of a timer interrupt's
//! lateness on a halted CPU (an hrtimer's programmed expiry -> the `now` its interrupt read,
//! both CLOCK_MONOTONIC values of the kernel) minus `irq_entry_ns`; `timer_late_running_ns`
//! the same on a CPU running a task (KVM injects the expired timer at the vCPU's next VM entry;
//! the model delays that CPU's timer interrupt by it).
//!
//! A path with fewer than [`MIN_SAMPLES`] samples solves nothing: its fields fall back to the
//! next rule (a difference to its single reprogram, or default x k) and a note says so.

use super::paths::{Path, Sample};
use crate::linux::cost::{scale_to_clock, PATH_COSTS};
use std::collections::BTreeMap;

/// Fewer samples than this and a path is not used.
pub const MIN_SAMPLES: usize = 20;

/// Every software path cost of the model (`linux::cost::PATH_COSTS`) with its default at a
/// machine clock of `clock_mhz` (what an uncalibrated run on that machine charges), in the
/// table's order.
pub fn defaults(clock_mhz: u32) -> Vec<(&'static str, u64)> {
    PATH_COSTS.iter().map(|r| (r.name, scale_to_clock(r.ns, r.clock_mhz, clock_mhz))).collect()
}

/// A path's corrected samples (sorted) and their order statistics.
#[derive(Debug, Clone, Default)]
pub struct Measured {
    pub sorted: Vec<u64>,
    /// Raw (uncorrected) median, for the record.
    pub raw_median: u64,
}

impl Measured {
    pub fn n(&self) -> usize {
        self.sorted.len()
    }

    /// Nearest-rank quantile, permille.
    pub fn q(&self, permille: u64) -> u64 {
        if self.sorted.is_empty() {
            return 0;
        }
        let i = ((self.sorted.len() - 1) as u64 * permille / 1000) as usize;
        self.sorted[i]
    }

    pub fn median(&self) -> u64 {
        self.q(500)
    }

    fn usable(&self) -> bool {
        self.n() >= MIN_SAMPLES
    }
}

/// How a field got its value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum How {
    /// From one path alone (minus fields solved before).
    Measured,
    /// A share of a path that covers several fields (split as the defaults).
    Composite,
    /// No path: default x k.
    Scaled,
}

/// One solved software cost.
#[derive(Debug, Clone)]
pub struct Solved {
    pub name: &'static str,
    pub default_ns: u64,
    pub ns: u64,
    /// p10..p90 of the path's corrected samples, through the same solve.
    pub spread: Option<[u64; 2]>,
    pub samples: usize,
    pub how: How,
    /// The path it came from.
    pub path: Option<Path>,
    /// The solve, in one line.
    pub method: String,
}

/// One solved hardware cost of the machine file.
#[derive(Debug, Clone)]
pub struct HwSolved {
    /// `ipi_send_ns`, `ipi_delivery_ns`, `timer_late_running_ns`, a line transfer key, or
    /// `wake_ns` or `timer_wake_ns` (of every halting idle state).
    pub key: &'static str,
    pub lo: u64,
    pub hi: u64,
    pub median: u64,
    pub samples: usize,
    pub path: Path,
    pub method: String,
}

/// A hardware cost solved as the p25..p75 and median of the path `d` (`what`, from its start
/// to its end) less `offset`, the part of the path that is known already (`less`: which part).
fn quartiles_less(key: &'static str, d: &Measured, offset: u64, path: Path, what: &str, less: &str) -> HwSolved {
    HwSolved {
        key,
        lo: d.q(250).saturating_sub(offset),
        hi: d.q(750).saturating_sub(offset),
        median: d.median().saturating_sub(offset),
        samples: d.n(),
        path,
        method: format!("p25..p75 of {what} ({}..{}), minus {less}", d.q(250), d.q(750)),
    }
}

/// One halt-length band of the long-halt captures' timer lateness.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HaltBand {
    /// The band's halt lengths, `[lo, hi)` ns.
    pub lo_ns: u64,
    pub hi_ns: u64,
    pub samples: usize,
    /// Median halt length of its samples.
    pub halt_median: u64,
    /// p25, median and p75 of their figure (the timer's lateness, or the guest's path).
    pub late: [u64; 3],
}

/// The solved `halt_wake_extra_ns` of the halting idle state (see [`halt_curve`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HaltCurveSolved {
    /// `[halt_ns, extra_ns]`, halt lengths strictly increasing.
    pub points: Vec<[u64; 2]>,
    /// The short halts `timer_wake_ns` was measured on: their count, median halt and median
    /// lateness (the curve's zero).
    pub base: [u64; 3],
    /// The bands that gave a point.
    pub bands: Vec<HaltBand>,
    pub samples: usize,
}

/// The halt-length bands of [`halt_curve`] (ns): edges of `[lo, hi)`.
pub const HALT_BANDS: [u64; 11] =
    [0, 100_000, 200_000, 500_000, 1_000_000, 2_000_000, 5_000_000, 10_000_000, 20_000_000, 50_000_000, u64::MAX];

/// The curve of a figure of a halted vCPU's wake against the length of the halt (the timer's
/// lateness for `halt_wake_extra_ns`, the guest's path from the timer's vector entry to the
/// switch for `halt_refill_extra_ns`): `base` are the `[halt_ns, figure_ns]` samples of the
/// short halts of the calibration set (those `timer_wake_ns` and the path costs came from),
/// `long` those of the long-halt captures. The first point is the base's median halt with
/// extra 0; then one point per band of [`HALT_BANDS`] with at least [`MIN_SAMPLES`] long-halt
/// samples and a median halt above the previous point's: its median halt, and its median
/// figure minus the base's median (0 if below). `None` without a usable base or band (and the
/// file keeps no curve).
pub fn halt_curve(base: &[[u64; 2]], long: &[[u64; 2]]) -> Option<HaltCurveSolved> {
    fn median(mut v: Vec<u64>) -> u64 {
        v.sort_unstable();
        v[(v.len() - 1) / 2]
    }
    if base.len() < MIN_SAMPLES {
        return None;
    }
    let base_halt = median(base.iter().map(|s| s[0]).collect());
    let base_late = median(base.iter().map(|s| s[1]).collect());
    let mut points = vec![[base_halt, 0]];
    let mut bands = Vec::new();
    for w in HALT_BANDS.windows(2) {
        let (lo, hi) = (w[0], w[1]);
        let mut late: Vec<u64> = long.iter().filter(|s| s[0] >= lo && s[0] < hi).map(|s| s[1]).collect();
        if late.len() < MIN_SAMPLES {
            continue;
        }
        let halt = median(long.iter().filter(|s| s[0] >= lo && s[0] < hi).map(|s| s[0]).collect());
        if halt <= points[points.len() - 1][0] {
            continue;
        }
        late.sort_unstable();
        let q = |permille: usize| late[(late.len() - 1) * permille / 1000];
        points.push([halt, q(500).saturating_sub(base_late)]);
        bands.push(HaltBand {
            lo_ns: lo,
            hi_ns: hi,
            samples: late.len(),
            halt_median: halt,
            late: [q(250), q(500), q(750)],
        });
    }
    if bands.is_empty() {
        return None;
    }
    let samples = bands.iter().map(|b| b.samples).sum();
    Some(HaltCurveSolved { points, base: [base.len() as u64, base_halt, base_late], bands, samples })
}

/// The whole solve.
#[derive(Debug, Clone, Default)]
pub struct Solution {
    pub record_ns: u64,
    pub record_method: String,
    pub costs: Vec<Solved>,
    pub hw: Vec<HwSolved>,
    /// k x 1000.
    pub k_permille: u64,
    pub paths: BTreeMap<Path, Measured>,
    pub notes: Vec<String>,
    /// The halting idle state's `halt_wake_extra_ns`, where the long-halt captures gave one.
    pub halt_curve: Option<HaltCurveSolved>,
    /// Its `halt_refill_extra_ns`, likewise.
    pub refill_curve: Option<HaltCurveSolved>,
}

impl Solution {
    pub fn cost(&self, name: &str) -> Option<&Solved> {
        self.costs.iter().find(|c| c.name == name)
    }
}

/// The inputs of the solve that are not samples.
#[derive(Debug, Clone, Copy)]
pub struct Context {
    /// CPUs of the machine (the SCHED softirq's per-CPU part).
    pub nr_cpus: u64,
    /// The machine file's `irq_entry_ns`.
    pub irq_entry_ns: u64,
    /// The core clock the samples were taken at (MHz): the defaults are compared at it.
    pub clock_mhz: u32,
    /// The machine file's line-transfer key between the two CPUs of the ping-pongs
    /// (`line_smt_ns`, `line_llc_ns` or `line_socket_ns`).
    pub line_key: &'static str,
    /// The socket capture's message size (bytes): its copy is taken off the socket paths.
    pub sock_msg_bytes: u32,
}

/// Solve from every capture's samples, pooled per path.
pub fn solve(samples: &BTreeMap<Path, Vec<Sample>>, ctx: Context) -> Solution {
    let mut sol = Solution::default();
    // The null pair.
    let null: Vec<u64> = samples
        .get(&Path::NullPair)
        .map_or(Vec::new(), |v| v.iter().filter(|s| s.records == 1).map(|s| s.ns).collect());
    let gaps: Vec<u64> = samples.get(&Path::Gap).map_or(Vec::new(), |v| v.iter().map(|s| s.ns).collect());
    let med = |mut v: Vec<u64>| -> u64 {
        v.sort_unstable();
        v.get(v.len().saturating_sub(1) / 2).copied().unwrap_or(0)
    };
    if null.len() >= MIN_SAMPLES {
        sol.record_ns = med(null.clone());
        sol.record_method = format!(
            "median of the null pair csd_function_exit -> call_function_single_exit ({} samples: the flush finds its list empty and the vector returns, a few instructions, so the interval is one record's write)",
            null.len()
        );
    } else {
        let mut g = gaps.clone();
        g.sort_unstable();
        sol.record_ns = g.get(g.len() / 100).copied().unwrap_or(0);
        sol.record_method = format!(
            "p1 of the gaps between two records of one CPU ({} gaps; the null pair had {} samples, fewer than {MIN_SAMPLES})",
            g.len(),
            null.len()
        );
    }
    let r = sol.record_ns;
    for p in Path::ALL {
        let Some(v) = samples.get(&p) else { continue };
        let mut sorted: Vec<u64> = if p == Path::Gap || p == Path::NullPair {
            v.iter().map(|s| s.ns).collect()
        } else {
            v.iter().map(|s| s.ns.saturating_sub(s.records as u64 * r)).collect()
        };
        sorted.sort_unstable();
        let mut raw: Vec<u64> = v.iter().map(|s| s.ns).collect();
        raw.sort_unstable();
        let raw_median = raw.get(raw.len().saturating_sub(1) / 2).copied().unwrap_or(0);
        sol.paths.insert(p, Measured { sorted, raw_median });
    }
    let empty = Measured::default();
    let m = |p: Path| -> &Measured { sol.paths.get(&p).unwrap_or(&empty) };
    let defaults = defaults(ctx.clock_mhz);
    let def = |n: &str| defaults.iter().find(|(f, _)| *f == n).map_or(0, |(_, v)| *v);
    let mut solved: BTreeMap<&'static str, Solved> = BTreeMap::new();
    let mut notes = Vec::new();
    // One field from one path: value = median - minus; spread through the same.
    let one = |solved: &mut BTreeMap<&'static str, Solved>,
               notes: &mut Vec<String>,
               name: &'static str,
               p: Path,
               minus: u64,
               method: String| {
        let x = m(p);
        if !x.usable() {
            notes.push(format!("{name}: {} had {} samples (fewer than {MIN_SAMPLES}); not measured", p.label(), x.n()));
            return;
        }
        let ns = x.median().saturating_sub(minus);
        if ns == 0 {
            notes.push(format!("{name}: {} came out at or below zero after the subtraction; not measured", p.label()));
            return;
        }
        solved.insert(
            name,
            Solved {
                name,
                default_ns: def(name),
                ns,
                spread: Some([x.q(100).saturating_sub(minus), x.q(900).saturating_sub(minus)]),
                samples: x.n(),
                how: How::Measured,
                path: Some(p),
                method,
            },
        );
    };
    // Several fields from one path: value = median - minus, split in the defaults' proportion.
    let group = |solved: &mut BTreeMap<&'static str, Solved>,
                 notes: &mut Vec<String>,
                 names: &[(&'static str, u64)],
                 p: Path,
                 minus: u64,
                 what: String| {
        let x = m(p);
        let label =
            names.iter().map(|(n, w)| if *w == 1 { n.to_string() } else { format!("{w} x {n}") }).collect::<Vec<_>>();
        if !x.usable() {
            notes.push(format!(
                "{}: {} had {} samples (fewer than {MIN_SAMPLES}); not measured",
                label.join(" + "),
                p.label(),
                x.n()
            ));
            return;
        }
        let total = x.median().saturating_sub(minus);
        let weight: u64 = names.iter().map(|(n, w)| def(n) * w).sum();
        if total == 0 || weight == 0 {
            notes.push(format!(
                "{}: {} left nothing after the subtraction; not measured",
                label.join(" + "),
                p.label()
            ));
            return;
        }
        let scale = |v: u64, d: u64| (v as u128 * d as u128 / weight as u128) as u64;
        for (n, _) in names {
            let d = def(n);
            let ns = scale(total, d).max(1);
            solved.insert(
                n,
                Solved {
                    name: n,
                    default_ns: d,
                    ns,
                    spread: Some([scale(x.q(100).saturating_sub(minus), d), scale(x.q(900).saturating_sub(minus), d)]),
                    samples: x.n(),
                    how: How::Composite,
                    path: Some(p),
                    method: format!(
                        "{what}: {} ns over {} (defaults {} ns), this field's share",
                        total,
                        label.join(" + "),
                        weight
                    ),
                },
            );
        }
    };
    let rn = format!("{r} ns per record");
    // 1. The wakee's activation, on the waker's own CPU (its lines are hot there).
    one(
        &mut solved,
        &mut notes,
        "ttwu_activate",
        Path::WakingToWakeupLocal,
        0,
        format!("median of sched_waking -> sched_wakeup of a wakee queued on the waker's own CPU (lock, enqueue, wakeup_preempt), records ({rn}) off"),
    );
    let ttwu_activate = solved.get("ttwu_activate").map(|s| s.ns);
    // The interrupt's own statistics and scheduler_ipi().
    one(
        &mut solved,
        &mut notes,
        "scheduler_ipi",
        Path::Reschedule,
        0,
        format!("median of reschedule_entry -> exit, its record ({rn}) off"),
    );
    // 2. The flush around the csd.
    group(
        &mut solved,
        &mut notes,
        &[("flush", 1), ("csd_call", 1)],
        Path::CallFunctionSingleFlush,
        0,
        format!(
            "median of call_function_single entry -> exit minus its one sched_ttwu_pending csd, records ({rn}) off"
        ),
    );
    // 3. The wakeup's placement part.
    if let Some(a) = ttwu_activate {
        one(
            &mut solved,
            &mut notes,
            "ttwu",
            Path::HrtimerWakeup,
            a,
            format!("median of the hrtimer_wakeup callback (a local try_to_wake_up), records ({rn}) off, minus ttwu_activate {a} ns"),
        );
    }
    // 4. The tick's work.
    one(
        &mut solved,
        &mut notes,
        "sched_tick",
        Path::HrtimerTick,
        0,
        format!("median of the tick_nohz_handler callback, records ({rn}) off"),
    );
    // 5. Arming a sleeper's hrtimer, with its clockevent reprogram.
    one(
        &mut solved,
        &mut notes,
        "hrtimer_start",
        Path::HrtimerArm,
        0,
        format!(
            "median of a sleeper's hrtimer_start -> the TSC-deadline write_msr that programs it, records ({rn}) off"
        ),
    );
    let arm = solved.get("hrtimer_start").map(|s| s.ns);
    // 6. Stopping the tick: idle entries that stopped it minus those that kept it.
    let (kept, stopped) = (m(Path::IdleEntryTickKept), m(Path::IdleEntryTickStopped));
    if kept.usable() && stopped.usable() && stopped.median() > kept.median() {
        one(
            &mut solved,
            &mut notes,
            "tick_stop",
            Path::IdleEntryTickStopped,
            kept.median(),
            format!(
                "median of switch to idle -> cpu_idle with a tick_stop inside minus the median without ({} ns), records ({rn}) off",
                kept.median()
            ),
        );
    } else if let Some(a) = arm {
        let mut s = solved["hrtimer_start"].clone();
        s.name = "tick_stop";
        s.default_ns = def("tick_stop");
        s.method = format!(
            "as hrtimer_start ({a} ns): one clockevent reprogram (the idle entries kept the tick {} times, stopped it {} times: too few to subtract)",
            kept.n(),
            stopped.n()
        );
        solved.insert("tick_stop", s);
    }
    // 7. Restarting it: idle exits after a stopped tick minus those after a running one.
    let (run, restart) = (m(Path::IdleExitTickKept), m(Path::IdleExitTickRestart));
    if run.usable() && restart.usable() && restart.median() > run.median() {
        one(
            &mut solved,
            &mut notes,
            "tick_restart",
            Path::IdleExitTickRestart,
            run.median(),
            format!(
                "median of cpu_idle exit -> switch away after a stopped tick minus the median after a running one ({} ns), records ({rn}) off",
                run.median()
            ),
        );
    } else if let Some(a) = arm {
        let mut s = solved["hrtimer_start"].clone();
        s.name = "tick_restart";
        s.default_ns = def("tick_restart");
        s.method = format!(
            "as hrtimer_start ({a} ns): one clockevent reprogram (idle exits after a running tick: {}, after a stopped one: {}; too few to subtract)",
            run.n(),
            restart.n()
        );
        solved.insert("tick_restart", s);
    }
    // 8. The idle entry: the switch's tail and do_idle()'s entry up to the state.
    let entry_names: &[(&'static str, u64)] =
        &[("context_switch", 1), ("schedule_exit", 1), ("do_idle_enter", 1), ("governor_select", 1)];
    if kept.usable() {
        group(
            &mut solved,
            &mut notes,
            entry_names,
            Path::IdleEntryTickKept,
            0,
            format!("median of switch to idle -> cpu_idle entry with the tick kept, records ({rn}) off"),
        );
    } else if let Some(ts) = solved.get("tick_stop").map(|s| s.ns) {
        group(
            &mut solved,
            &mut notes,
            entry_names,
            Path::IdleEntryTickStopped,
            ts,
            format!("median of switch to idle -> cpu_idle entry with the tick stopped, records ({rn}) off, minus tick_stop {ts} ns"),
        );
    }
    // 9. The idle exit: from the state's exit to the switch away.
    let exit_names: &[(&'static str, u64)] =
        &[("cpuidle_exit", 1), ("do_idle_exit", 1), ("schedule_enter", 1), ("pick_fair_task", 1)];
    let flush = solved.get("flush").map_or(0, |s| s.ns);
    if run.usable() {
        group(
            &mut solved,
            &mut notes,
            exit_names,
            Path::IdleExitTickKept,
            flush,
            format!("median of cpu_idle exit -> switch away with the tick running, records ({rn}) off, minus flush {flush} ns"),
        );
    } else if let Some(tr) = solved.get("tick_restart").map(|s| s.ns) {
        group(
            &mut solved,
            &mut notes,
            exit_names,
            Path::IdleExitTickRestart,
            flush + tr,
            format!(
                "median of cpu_idle exit -> switch away after a stopped tick, records ({rn}) off, minus flush {flush} ns and tick_restart {tr} ns"
            ),
        );
    }
    // 10. The SCHED softirq.
    group(
        &mut solved,
        &mut notes,
        &[("update_blocked_averages", 1), ("balance_rq", 1), ("lb_stats_per_cpu", ctx.nr_cpus.max(1))],
        Path::SoftirqSched,
        0,
        format!("median of softirq SCHED entry -> exit, records ({rn}) off"),
    );
    // 11. A system call.
    one(
        &mut solved,
        &mut notes,
        "syscall",
        Path::Syscall,
        0,
        format!("median of a getppid() loop's sys_enter -> next sys_enter, its two records ({rn}) off"),
    );
    // 12. A pipe's read and write, the system call's entry and exit outside the pair.
    one(
        &mut solved,
        &mut notes,
        "pipe_write",
        Path::PipeWrite,
        0,
        format!("median of a pipe write(2) that wakes nobody, sys_enter -> sys_exit, its record ({rn}) off"),
    );
    one(
        &mut solved,
        &mut notes,
        "pipe_read",
        Path::PipeRead,
        0,
        format!("median of a pipe read(2) that finds data, sys_enter -> sys_exit, its record ({rn}) off"),
    );
    // 13. An AF_UNIX stream send and receive of one small skb each, the system call's entry
    // and exit outside the pair (as the pipe's) and the copy of the message, which the model
    // charges apart (`fs::pipe::copy_cost`), taken off. The model charges a send
    // `unix_sendmsg` + `unix_skb` (one skb) and a receive `unix_recvmsg` + `unix_skb_free`;
    // their lock and line costs are nil on one CPU (every line is the CPU's own).
    let copy = crate::linux::fs::pipe::copy_cost(ctx.sock_msg_bytes);
    group(
        &mut solved,
        &mut notes,
        &[("unix_sendmsg", 1), ("unix_skb", 1)],
        Path::SockWrite,
        copy,
        format!(
            "median of a {}-byte AF_UNIX stream write(2) that wakes nobody (one task on one CPU), sys_enter -> sys_exit, its record ({rn}) off, minus the copy {copy} ns",
            ctx.sock_msg_bytes
        ),
    );
    group(
        &mut solved,
        &mut notes,
        &[("unix_recvmsg", 1), ("unix_skb_free", 1)],
        Path::SockRead,
        copy,
        format!(
            "median of a {}-byte AF_UNIX stream read(2) that finds one skb and frees it (one task on one CPU), sys_enter -> sys_exit, its record ({rn}) off, minus the copy {copy} ns",
            ctx.sock_msg_bytes
        ),
    );
    // k: the measured software paths against their defaults (paths with a VM exit left out).
    const VM_EXIT: [&str; 3] = ["hrtimer_start", "tick_stop", "tick_restart"];
    // One ratio per path: a group's fields share theirs.
    let mut per_path: BTreeMap<Path, (u64, u64)> = BTreeMap::new();
    for s in solved.values().filter(|s| !VM_EXIT.contains(&s.name) && s.default_ns > 0) {
        if let Some(p) = s.path {
            let e = per_path.entry(p).or_default();
            e.0 += s.ns;
            e.1 += s.default_ns;
        }
    }
    let mut ratios: Vec<u64> = per_path.values().map(|(ns, d)| ns * 1000 / d).collect();
    ratios.sort_unstable();
    sol.k_permille = ratios.get(ratios.len().saturating_sub(1) / 2).copied().unwrap_or(1000);
    let k = sol.k_permille;
    for (name, d) in &defaults {
        let s = solved.remove(name).unwrap_or_else(|| Solved {
            name,
            default_ns: *d,
            ns: (d * k / 1000).max(1),
            spread: None,
            samples: 0,
            how: How::Scaled,
            path: None,
            method: format!(
                "not measured: default {d} ns x k = {}.{:03} (k: median ratio measured / default over the {} measured paths without a VM exit)",
                k / 1000,
                k % 1000,
                ratios.len()
            ),
        });
        sol.costs.push(s);
    }
    // Hardware: the line transfer, the IPI's send, its delivery, the halted vCPU's wake.
    let csd = m(Path::CsdTtwuPending);
    if let (Some(a), true) = (ttwu_activate, csd.usable()) {
        // The same activation from the other CPU's csd pulls two lines the model transfers:
        // the rq lock and the wake entry (sched_ttwu_pending()).
        let per = |v: u64| v.saturating_sub(a) / 2;
        if per(csd.median()) > 0 {
            sol.hw.push(HwSolved {
                key: ctx.line_key,
                lo: per(csd.q(250)),
                hi: per(csd.q(750)),
                median: per(csd.median()),
                samples: csd.n(),
                path: Path::CsdTtwuPending,
                method: format!(
                    "(p25..p75 of csd sched_ttwu_pending, records off: {}..{}, minus the local activation {a}) / 2: the model's csd path takes two lines from the waker's CPU (the rq lock, the wake entry)",
                    csd.q(250),
                    csd.q(750)
                ),
            });
        } else {
            notes.push(format!(
                "{}: the remote activation was not slower than the local one; kept the file's guess",
                ctx.line_key
            ));
        }
    }
    let send = m(Path::IpiSend);
    if send.usable() {
        sol.hw.push(HwSolved {
            key: "ipi_send_ns",
            lo: send.median(),
            hi: send.median(),
            median: send.median(),
            samples: send.n(),
            path: Path::IpiSend,
            method: format!(
                "median of ipi_send_cpu -> the sender's x2APIC ICR write_msr (the write traps to the hypervisor), records ({rn}) off; p10..p90 {}..{}",
                send.q(100),
                send.q(900)
            ),
        });
    } else {
        notes.push(format!("ipi_send_ns: {} had {} samples; kept the file's guess", Path::IpiSend.label(), send.n()));
    }
    let (busy, idle) = (m(Path::IpiDeliverBusy), m(Path::IpiDeliverIdle));
    let e = ctx.irq_entry_ns;
    if busy.usable() {
        sol.hw.push(quartiles_less(
            "ipi_delivery_ns",
            busy,
            e,
            Path::IpiDeliverBusy,
            "the ICR write_msr -> a running target's vector entry",
            &format!("irq_entry_ns {e} (the kernel's entry record follows the IDT entry, the model's precedes it)"),
        ));
        if idle.usable() {
            let b = busy.median();
            sol.hw.push(quartiles_less(
                "wake_ns",
                idle,
                b,
                Path::IpiDeliverIdle,
                "the ICR write_msr -> a halted target's vector entry",
                &format!("the running target's median {b}: the host's wakeup of the halted vCPU"),
            ));
        } else {
            notes.push(format!(
                "wake_ns: {} had {} samples; kept the file's guess",
                Path::IpiDeliverIdle.label(),
                idle.n()
            ));
        }
    } else {
        notes.push(format!(
            "ipi_delivery_ns and wake_ns: {} had {} samples; kept the file's guesses",
            Path::IpiDeliverBusy.label(),
            busy.n()
        ));
    }
    let (late_run, late_halt) = (m(Path::TimerLateRunning), m(Path::TimerLateHalted));
    if late_halt.usable() {
        sol.hw.push(quartiles_less(
            "timer_wake_ns",
            late_halt,
            e,
            Path::TimerLateHalted,
            "an hrtimer's programmed expiry -> the now of the interrupt that ran it first, CPU halted",
            &format!("irq_entry_ns {e}: the host's timer for a blocked vCPU, then its wakeup"),
        ));
    } else {
        notes.push(format!(
            "timer_wake_ns: {} had {} samples; timer interrupts wake a halted CPU in wake_ns",
            Path::TimerLateHalted.label(),
            late_halt.n()
        ));
    }
    if late_run.usable() {
        sol.hw.push(quartiles_less(
            "timer_late_running_ns",
            late_run,
            e,
            Path::TimerLateRunning,
            "an hrtimer's programmed expiry -> the now of the interrupt that ran it first, CPU running a task",
            &format!("irq_entry_ns {e}: KVM's timer for a vCPU in guest mode, injected at its next VM entry"),
        ));
    } else {
        notes.push(format!(
            "timer_late_running_ns: {} had {} samples; a running CPU's timer interrupt comes at its expiry",
            Path::TimerLateRunning.label(),
            late_run.n()
        ));
    }
    sol.notes = notes;
    sol
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_halt_curve_is_each_bands_median_over_the_short_halts() {
        let base: Vec<[u64; 2]> = (0..30).map(|i| [40_000 + i, 19_000 + i * 10]).collect();
        let mut long: Vec<[u64; 2]> = Vec::new();
        long.extend((0..30).map(|i| [2_000_000 + i, 25_000 + (i % 3) * 100]));
        long.extend((0..30).map(|i| [20_000_000 + i, 40_000]));
        // Too few in the 1-2 ms band, and a band whose lateness is below the base's: 0.
        long.extend((0..5).map(|i| [1_000_000 + i, 90_000]));
        long.extend((0..20).map(|i| [600_000 + i, 10_000]));
        let c = halt_curve(&base, &long).unwrap();
        // The base: 30 samples, median halt 40014, median lateness 19140.
        assert_eq!(c.base, [30, 40_014, 19_140]);
        assert_eq!(
            c.points,
            vec![[40_014, 0], [600_009, 0], [2_000_014, 25_100 - 19_140], [20_000_014, 40_000 - 19_140]]
        );
        assert_eq!(c.bands.len(), 3);
        assert_eq!(c.samples, 80);
        assert_eq!(c.bands[1].late, [25_000, 25_100, 25_200]);
        // No base, or no usable band: no curve.
        assert!(halt_curve(&base[..10], &long).is_none());
        assert!(halt_curve(&base, &long[60..65]).is_none());
    }

    fn samples(ns: u64, records: u32, n: usize) -> Vec<Sample> {
        (0..n).map(|i| Sample { ns: ns + (i as u64 % 3) * 10 - 10, records }).collect()
    }

    #[test]
    fn the_defaults_are_the_table_at_the_machines_clock() {
        let d = defaults(crate::linux::cost::REFERENCE_MHZ);
        assert_eq!(d.len(), PATH_COSTS.len());
        let r = crate::linux::cost::PathCosts::reference();
        assert!(d.contains(&("context_switch", r.context_switch)));
        let half = defaults(crate::linux::cost::REFERENCE_MHZ / 2);
        assert!(half.contains(&("context_switch", 2 * r.context_switch)));
    }

    #[test]
    fn the_socket_paths_lose_their_record_and_copy_and_split_as_the_defaults() {
        let mut s = BTreeMap::new();
        s.insert(Path::NullPair, samples(70, 1, 40));
        // 197 - 1 record - 7 ns copy (100 bytes) = 120: unix_sendmsg 250 : unix_skb 350.
        s.insert(Path::SockWrite, samples(197, 1, 40));
        // 207 - 70 - 7 = 130: unix_recvmsg 250 : unix_skb_free 250.
        s.insert(Path::SockRead, samples(207, 1, 40));
        let ctx = Context {
            nr_cpus: 2,
            irq_entry_ns: 270,
            clock_mhz: crate::linux::cost::REFERENCE_MHZ,
            line_key: "line_llc_ns",
            sock_msg_bytes: 100,
        };
        let sol = solve(&s, ctx);
        let c = |n: &str| sol.cost(n).unwrap();
        assert_eq!((c("unix_sendmsg").ns, c("unix_skb").ns), (50, 70));
        assert_eq!((c("unix_recvmsg").ns, c("unix_skb_free").ns), (65, 65));
        assert_eq!(c("unix_skb").how, How::Composite);
        assert_eq!(c("unix_skb").samples, 40);
        assert!(c("unix_recvmsg").method.contains("minus the copy 7 ns"), "{}", c("unix_recvmsg").method);
        // Without the socket capture they are default x k, and a note says why.
        s.remove(&Path::SockWrite);
        let sol = solve(&s, ctx);
        assert_eq!(sol.cost("unix_skb").unwrap().how, How::Scaled);
        assert!(sol.notes.iter().any(|n| n.starts_with("unix_sendmsg + unix_skb:")), "{:?}", sol.notes);
    }

    /// The timer's lateness on a running CPU is a hardware key of its own, the quartiles less
    /// `irq_entry_ns`, once it has enough samples; with fewer a note says it is not charged.
    #[test]
    fn a_running_cpus_timer_lateness_is_solved_less_the_irq_entry() {
        let ctx = Context {
            nr_cpus: 2,
            irq_entry_ns: 270,
            clock_mhz: crate::linux::cost::REFERENCE_MHZ,
            line_key: "line_llc_ns",
            sock_msg_bytes: 100,
        };
        let mut s = BTreeMap::new();
        let late: Vec<Sample> = (0..40).map(|i| Sample { ns: 10_000 + i * 200, records: 0 }).collect();
        s.insert(Path::TimerLateRunning, late.clone());
        let sol = solve(&s, ctx);
        let h = sol.hw.iter().find(|h| h.key == "timer_late_running_ns").expect("solved");
        // p25, median and p75 of 10000..17800 by 200 (nearest rank), less 270.
        assert_eq!((h.lo, h.median, h.hi, h.samples), (11_800 - 270, 13_800 - 270, 15_800 - 270, 40));
        s.insert(Path::TimerLateRunning, late[..MIN_SAMPLES - 1].to_vec());
        let sol = solve(&s, ctx);
        assert!(sol.hw.iter().all(|h| h.key != "timer_late_running_ns"));
        assert!(sol.notes.iter().any(|n| n.starts_with("timer_late_running_ns:")), "{:?}", sol.notes);
    }

    #[test]
    fn composites_subtract_what_is_known_and_split_the_rest() {
        let mut s = BTreeMap::new();
        s.insert(Path::NullPair, samples(100, 1, 40));
        // 1200 - 1 record = 1100.
        s.insert(Path::WakingToWakeupLocal, samples(1200, 1, 40));
        // 1700 - 2 records = 1500: 400 more than local, two lines of 200.
        s.insert(Path::CsdTtwuPending, samples(1700, 2, 40));
        // 650 - 2 records = 450: flush 300, csd_call 150.
        s.insert(Path::CallFunctionSingleFlush, samples(650, 2, 40));
        // 2000 - 3 records - 1100 = 600.
        s.insert(Path::HrtimerWakeup, samples(2000, 3, 40));
        s.insert(Path::IpiSend, samples(9100, 1, 40));
        s.insert(Path::IpiDeliverBusy, samples(7000, 0, 40));
        s.insert(Path::IpiDeliverIdle, samples(12000, 0, 40));
        let sol = solve(
            &s,
            Context {
                nr_cpus: 2,
                irq_entry_ns: 270,
                clock_mhz: crate::linux::cost::REFERENCE_MHZ,
                line_key: "line_llc_ns",
                sock_msg_bytes: 100,
            },
        );
        assert_eq!(sol.record_ns, 100);
        let c = |n: &str| sol.cost(n).unwrap();
        assert_eq!((c("ttwu_activate").ns, c("ttwu_activate").how), (1100, How::Measured));
        assert_eq!((c("flush").ns, c("csd_call").ns), (300, 150));
        assert_eq!(c("flush").how, How::Composite);
        assert_eq!(c("ttwu").ns, 600);
        // k = median over the paths: 11, 10 (flush and csd_call together), 5 (x1000).
        assert_eq!(sol.k_permille, 10_000);
        assert_eq!((c("futex").ns, c("futex").how), (1000, How::Scaled));
        assert!(c("futex").method.contains("not measured"));
        let hw = |k: &str| sol.hw.iter().find(|h| h.key == k).unwrap();
        assert_eq!(hw("ipi_send_ns").median, 9000);
        assert_eq!(hw("line_llc_ns").median, 200);
        assert_eq!(hw("ipi_delivery_ns").median, 7000 - 270);
        assert_eq!(hw("wake_ns").median, 5000);
        // Paths with too few samples say so.
        assert!(sol.notes.iter().any(|n| n.starts_with("sched_tick:")), "{:?}", sol.notes);
        assert_eq!(sol.costs.len(), PATH_COSTS.len());
    }
}
