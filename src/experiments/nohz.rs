//! The experiments of the 2024 series "Fixes and enhancements around spurious need_resched()
//! and idle load balancing" (docs/kernel-model.md §5.1): rt-warn and nanosleep here;
//! ilb-polling is an experiment file (`experiments/ilb-polling.toml`).

use super::{Analysis, ExpOpts, Plan, Variant};
use crate::report::{mean_stddev, normalize, render_grid, CompareRow, Comparison};
use crate::run::RunResult;
use crate::spec::RunSpec;
use crate::unknowns::{Axis, Domain, Unknown};
use crate::workload::params::Params;
use crate::workload::Metric;
use serde_json::json;

fn spec(workload: &str, machine: &str, kernel: &str, patches: &str, params: &[(&str, &str)]) -> RunSpec {
    let mut s = RunSpec::new(workload);
    s.machine = machine.into();
    s.kernel = kernel.into();
    s.patches = patches.into();
    let pairs: Vec<(String, String)> = params.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    s.params = Params::from_pairs(pairs, &format!("{workload} experiment"));
    s
}

fn avg(rs: &[RunResult], f: impl Fn(&RunResult) -> f64) -> f64 {
    rs.iter().map(f).sum::<f64>() / rs.len().max(1) as f64
}

pub(super) fn row(
    label: &str,
    kernel: &str,
    patches: &str,
    rs: &[RunResult],
    metric: impl Fn(&RunResult) -> f64,
    extra: serde_json::Map<String, serde_json::Value>,
) -> Result<CompareRow, String> {
    let v: Vec<f64> = rs.iter().map(metric).collect();
    let (mean, stddev) = mean_stddev(&v);
    let cfg = crate::linux::KernelConfig::resolve(kernel, patches, 250)?;
    Ok(CompareRow {
        variant: label.into(),
        kernel: cfg.label(),
        patches: cfg.patches.iter().map(|p| p.info().id.to_string()).collect(),
        runs: rs.len(),
        mean,
        stddev,
        normalized: 0.0,
        published: None,
        extra,
    })
}

/// (label, kernel, patches) of rt-warn.
const RT_WARN_VARIANTS: &[(&str, &str, &str)] =
    &[("patch1", "v6.10", "+ea9cffc0a154"), ("patch1-6675ce20046d", "v6.10", "+ea9cffc0a154,+6675ce20046d")];

/// `schedsim reproduce rt-warn`: a PREEMPT_RT kernel with patch 1; with and without 6675ce20046d.
/// The ilb-polling set-up (8 spinners on CPU 8 of the EPYC, idle CPUs polling in C1) for 100 ms.
pub fn rt_warn(o: &ExpOpts) -> Result<Plan, String> {
    let variants = RT_WARN_VARIANTS
        .iter()
        .map(|(label, kernel, patches)| {
            let params = [("tasks", "8"), ("start", "8"), ("duration_ms", "100")];
            let mut s = spec("spinners", "epyc-7763-2s", kernel, patches, &params);
            s.idle_states = vec![("C2".into(), false)];
            s.preempt_rt = true;
            Variant { label: label.to_string(), spec: s, published: None }
        })
        .collect();
    let title =
        "PREEMPT_RT, spinners tasks=8 start=8 (idle CPUs poll): do_softirq_post_smp_call_flush WARN".to_string();
    let mut p = Plan::new("rt-warn", title, "epyc-7763-2s", variants, o.runs, o, Analysis::Code(analyze_rt_warn))?;
    p.focus = crate::focus::Focus {
        cpus: crate::focus::Cpus::Listed(vec![8]),
        instant: crate::focus::Moment {
            what: crate::focus::Match::Warning,
            cpu: None,
            after: crate::focus::Anchor::FirstWarn,
        },
        span_ns: crate::focus::SPAN_NS,
        why: "the WARN in do_softirq_post_smp_call_flush: the overloaded CPU 8 and the CPU that warned".into(),
    };
    Ok(p)
}

fn analyze_rt_warn(p: &Plan, results: &[Vec<RunResult>]) -> Result<Comparison, String> {
    let variants = RT_WARN_VARIANTS;
    let mut rows = Vec::new();
    let mut grid = Vec::new();
    for (vi, (label, kernel, patches)) in variants.iter().enumerate() {
        let rs = &results[vi];
        let warns = avg(rs, |r| r.stats.warned_sites.len() as f64);
        let hits = avg(rs, |r| r.stats.warns as f64);
        // From the workload's start (the counters' window), not from boot.
        let first = rs.iter().filter_map(|r| r.stats.first_warn_ns.map(|t| t.saturating_sub(r.warmup_ns))).min();
        let mut extra = serde_json::Map::new();
        extra.insert("warns".into(), json!(warns));
        extra.insert("warn_hits".into(), json!(hits));
        extra.insert("first_warn_ms".into(), json!(first.map(|t| t as f64 / 1e6)));
        rows.push(row(label, kernel, patches, rs, |r| r.stats.warned_sites.len() as f64, extra)?);
        grid.push(vec![
            label.to_string(),
            format!("{warns:.0}"),
            format!("{hits:.0}"),
            first.map_or("-".into(), |t| format!("{:.3}", t as f64 / 1e6)),
        ]);
    }
    normalize(&mut rows);
    let h: Vec<String> = ["kernel (PREEMPT_RT)", "WARN_ON_ONCE fired", "condition hits", "first at (ms)"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    Ok(Comparison {
        table: None,
        experiment: "rt-warn".into(),
        machine: "epyc-7763-2s".into(),
        metric: "warns".into(),
        unit: "count".into(),
        lower_is_better: true,
        statistic: crate::report::MMTESTS_AMEAN.into(),
        rows,
        title: p.title.clone(),
        notes: vec![format!("Kernel warnings (means over seeds)\n{}", render_grid(&h, &grid))],
    })
}

/// (label, kernel, patches) of nanosleep.
const NANOSLEEP_VARIANTS: &[(&str, &str, &str)] = &[("v6.10", "v6.10", ""), ("v6.13", "v6.13", "")];

/// `schedsim reproduce nanosleep`: 240 processes looping nanosleep(1 us) on the 240-CPU Intel
/// machine; the share of cycles in newidle balance and in `update_sd_lb_stats()` as Chen Yu's
/// `perf record -a` profile measures them: perf's default `cycles` event does not count while
/// a CPU is halted (MWAIT, HLT), so a share is of the machine's unhalted time
/// (`Stats::halted_ns`; `poll_idle()` is not halted). perf report's Children column is a
/// function's time with its callees: `sched_balance_newidle()` (the model's newidle phase) and
/// `update_sd_lb_stats()` (the model's charge of the walk, all callers). Self is not separated
/// in the model beyond newidle's time outside `update_sd_lb_stats()`.
pub fn nanosleep(o: &ExpOpts) -> Result<Plan, String> {
    let variants = NANOSLEEP_VARIANTS
        .iter()
        .map(|(label, kernel, patches)| {
            let params = [("procs", "240"), ("ns", "1000"), ("duration_ms", "50")];
            let s = spec("nanosleep", "intel-240-2s", kernel, patches, &params);
            Variant { label: label.to_string(), spec: s, published: None }
        })
        .collect();
    let title = "nanosleep procs=240 ns=1000 duration_ms=50 (perf record -a: shares of unhalted cycles)".to_string();
    let mut p = Plan::new("nanosleep", title, "intel-240-2s", variants, o.runs, o, Analysis::Code(analyze_nanosleep))?;
    // The background's intensity, and whether a pinned pair holds rd->overloaded (then every
    // CPU's newidle pass passes its overload gate; docs/unknowns.md §1, §4). The share sums
    // over every CPU, each running a sleeper, so where the pair sits is not a dimension: one
    // placement stands for all. The start avg_idle and newidle costs are not: every CPU's own
    // wakeups, one per microsecond, overwrite them within the first few.
    let holder = ["none", "same-llc@0"].map(String::from).to_vec();
    // The sleepers are user tasks: the task groups they ran in (docs/unknowns.md §8) set what
    // each wakeup's enqueue, each sleep's dequeue and each newidle pass's blocked-load update
    // walk.
    p.unknowns = vec![
        Axis::of(Unknown::BackgroundIntensity, "")?,
        Axis::new(Unknown::OverloadHolder, Domain::Values(holder))?,
        Axis::of(Unknown::CgroupDepth, "")?,
        Axis::of(Unknown::CgroupLeaves, "")?,
    ];
    p.figure = newidle_share;
    p.focus = crate::focus::Focus::steady();
    Ok(p)
}

/// A run's figure, as a row of nanosleep's table: newidle balance's share of the unhalted
/// cycles (what `perf record -a` counts; `Stats::halted_ns`).
fn newidle_share(r: &RunResult) -> Metric {
    let unhalted = r.sim_ns as f64 * r.nr_cpus as f64 - r.stats.halted_ns.iter().sum::<u64>() as f64;
    let value = r.stats.newidle_ns as f64 / unhalted.max(1.0);
    Metric { name: "newidle_share", unit: "of unhalted cycles", lower_is_better: true, value }
}

fn analyze_nanosleep(p: &Plan, results: &[Vec<RunResult>]) -> Result<Comparison, String> {
    let variants = NANOSLEEP_VARIANTS;
    let mut rows = Vec::new();
    let mut grid = Vec::new();
    for (vi, (label, kernel, patches)) in variants.iter().enumerate() {
        let rs = &results[vi];
        let cpu_time = |r: &RunResult| r.sim_ns as f64 * r.nr_cpus as f64;
        let unhalted = |r: &RunResult| cpu_time(r) - r.stats.halted_ns.iter().sum::<u64>() as f64;
        let newidle = |r: &RunResult| r.stats.newidle_ns as f64 / unhalted(r);
        let lb = |r: &RunResult| r.stats.lb_stats_ns as f64 / unhalted(r);
        let newidle_self =
            |r: &RunResult| r.stats.newidle_ns.saturating_sub(r.stats.newidle_lb_stats_ns) as f64 / unhalted(r);
        let newidle_all = |r: &RunResult| r.stats.newidle_ns as f64 / cpu_time(r);
        let halted = |r: &RunResult| 1.0 - unhalted(r) / cpu_time(r);
        let mut extra = serde_json::Map::new();
        extra.insert("newidle_share".into(), json!(avg(rs, newidle)));
        extra.insert("update_sd_lb_stats_share".into(), json!(avg(rs, lb)));
        extra.insert("newidle_share_outside_update_sd_lb_stats".into(), json!(avg(rs, newidle_self)));
        extra.insert("newidle_share_of_all_cpu_time".into(), json!(avg(rs, newidle_all)));
        extra.insert("halted_share".into(), json!(avg(rs, halted)));
        rows.push(row(label, kernel, patches, rs, newidle, extra)?);
        grid.push(vec![
            label.to_string(),
            format!("{:.2}%", 100.0 * avg(rs, newidle)),
            format!("{:.2}%", 100.0 * avg(rs, lb)),
            format!("{:.2}%", 100.0 * avg(rs, newidle_self)),
            format!("{:.1}%", 100.0 * avg(rs, halted)),
            format!("{:.2}%", 100.0 * avg(rs, newidle_all)),
            format!("{:.0}", avg(rs, |r| r.stats.newidle_calls as f64)),
            format!("{:.0}", avg(rs, |r| r.stats.newidle_balances as f64)),
        ]);
    }
    normalize(&mut rows);
    let h: Vec<String> = [
        "kernel",
        "sched_balance_newidle (Children)",
        "update_sd_lb_stats (Children)",
        "newidle outside update_sd_lb_stats",
        "halted",
        "newidle of all CPU time",
        "newidle calls",
        "newidle balances",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    Ok(Comparison {
        table: None,
        experiment: "nanosleep".into(),
        machine: "intel-240-2s".into(),
        metric: "newidle_share".into(),
        unit: "fraction".into(),
        lower_is_better: true,
        statistic: "AMean over seeds of perf record -a cycles shares (Children column): shares of unhalted time, \
                    cycles not counting while a CPU is halted"
            .into(),
        rows,
        title: p.title.clone(),
        notes: vec![format!(
            "Newidle balancing cost as perf report -a shows it: shares of unhalted cycles (means over seeds), \
             with the share of time halted and the share of all CPU time beside them\n{}",
            render_grid(&h, &grid)
        )],
    })
}
