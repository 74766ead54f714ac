//! The experiments of the 2024 series "Fixes and enhancements around spurious need_resched()
//! and idle load balancing" (docs/kernel-model.md §5.1): ilb-polling, rt-warn, nanosleep.

use super::{run_variants, ExpOpts};
use crate::report::{mean_stddev, normalize, render_grid, CompareRow, Comparison};
use crate::run::{RunResult, RunSpec};
use crate::workload::params::Params;
use crate::workload::Workload;
use serde_json::json;

fn spec(
    workload: &str,
    machine: &str,
    kernel: &str,
    patches: &str,
    seed: u64,
    params: &[(&str, &str)],
    o: &ExpOpts,
) -> RunSpec {
    let mut s = RunSpec::new(workload);
    s.machine = machine.into();
    s.kernel = kernel.into();
    s.patches = patches.into();
    s.seed = seed;
    let mut pairs: Vec<(String, String)> = params.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    pairs.extend(o.params.iter().cloned());
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

/// (label, kernel, patches)
pub const ILB_VARIANTS: &[(&str, &str, &str)] = &[
    ("v6.10", "v6.10", ""),
    ("patch1-only", "v6.10", "+ea9cffc0a154"),
    ("patch1-softirq-fix", "v6.10", "+ea9cffc0a154,+e932c4ab38f0"),
    ("v6.13", "v6.13", ""),
];

const ILB_PARAMS: &[(&str, &str)] = &[("tasks", "8"), ("start", "8"), ("duration_ms", "300")];

fn ilb_spec(kernel: &str, patches: &str, seed: u64, o: &ExpOpts) -> RunSpec {
    let mut s = spec("spinners", "epyc-7763-2s", kernel, patches, seed, ILB_PARAMS, o);
    s.idle_states = vec![("C2".into(), false)];
    s
}

/// `schedsim reproduce ilb-polling`: one overloaded CPU, the idle CPUs polling (C1 MWAIT).
pub fn ilb_polling(o: &ExpOpts) -> Result<Comparison, String> {
    let results = run_variants(o, ILB_VARIANTS.len(), o.runs, |v, seed| {
        let (_, kernel, patches) = ILB_VARIANTS[v];
        ilb_spec(kernel, patches, seed, o)
    })?;
    let mut rows = Vec::new();
    let mut grid = Vec::new();
    for (vi, (label, kernel, patches)) in ILB_VARIANTS.iter().enumerate() {
        let rs = &results[vi];
        let fill = |r: &RunResult| match &r.workload {
            Workload::Spinners(w) => w.time_to_fill_ns().unwrap_or(r.sim_ns) as f64 / 1e6,
            _ => unreachable!(),
        };
        let kicks = avg(rs, |r| r.stats.nohz_kicks as f64);
        let raised = avg(rs, |r| r.stats.nohz_kicks_raised_softirq as f64);
        let ksoft = avg(rs, |r| r.stats.ksoftirqd_wakeups as f64);
        let aborts = avg(rs, |r| r.stats.nohz_balance_aborts as f64);
        let mut extra = serde_json::Map::new();
        extra.insert("kicks".into(), json!(kicks));
        extra.insert("kicks_raised_softirq".into(), json!(raised));
        extra.insert("ksoftirqd_wakeups".into(), json!(ksoft));
        extra.insert("nohz_balance_aborts".into(), json!(aborts));
        extra.insert("time_to_fill_ms".into(), json!(avg(rs, fill)));
        rows.push(row(label, kernel, patches, rs, fill, extra)?);
        grid.push(vec![
            label.to_string(),
            format!("{kicks:.0}"),
            format!("{raised:.0}"),
            format!("{:.0}", avg(rs, |r| r.stats.nohz_kicks_lost as f64)),
            format!("{ksoft:.0}"),
            format!("{aborts:.0}"),
            format!("{:.3}", avg(rs, fill)),
        ]);
    }
    normalize(&mut rows);
    let h: Vec<String> =
        ["kernel", "kicks", "raised SCHED", "lost", "ksoftirqd wakeups", "nohz aborts", "time to fill (ms)"]
            .iter()
            .map(|s| s.to_string())
            .collect();
    Ok(Comparison {
        experiment: "ilb-polling".into(),
        machine: "epyc-7763-2s".into(),
        metric: "time_to_fill".into(),
        unit: "ms".into(),
        lower_is_better: true,
        rows,
        title: "spinners tasks=8 start=8 duration_ms=300 (8 tasks on CPU 8; idle CPUs poll in C1 MWAIT)".into(),
        notes: vec![format!(
            "Idle load balancer kicks and what became of them (means over seeds)\n{}",
            render_grid(&h, &grid)
        )],
    })
}

/// `schedsim reproduce rt-warn`: a PREEMPT_RT kernel with patch 1; with and without 6675ce20046d.
pub fn rt_warn(o: &ExpOpts) -> Result<Comparison, String> {
    let variants: &[(&str, &str, &str)] =
        &[("patch1", "v6.10", "+ea9cffc0a154"), ("patch1-6675ce20046d", "v6.10", "+ea9cffc0a154,+6675ce20046d")];
    let results = run_variants(o, variants.len(), o.runs, |v, seed| {
        let (_, kernel, patches) = variants[v];
        let mut s = ilb_spec(kernel, patches, seed, o);
        s.preempt_rt = true;
        s.params.set("duration_ms".into(), "100".into());
        s
    })?;
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
        experiment: "rt-warn".into(),
        machine: "epyc-7763-2s".into(),
        metric: "warns".into(),
        unit: "count".into(),
        lower_is_better: true,
        rows,
        title: "PREEMPT_RT, spinners tasks=8 start=8 (idle CPUs poll): do_softirq_post_smp_call_flush WARN".into(),
        notes: vec![format!("Kernel warnings (means over seeds)\n{}", render_grid(&h, &grid))],
    })
}

/// `schedsim reproduce nanosleep`: 240 processes looping nanosleep(1 us) on the 240-CPU Intel
/// machine; the share of CPU time in newidle balance and in `update_sd_lb_stats()`.
pub fn nanosleep(o: &ExpOpts) -> Result<Comparison, String> {
    let variants: &[(&str, &str, &str)] = &[("v6.10", "v6.10", ""), ("v6.13", "v6.13", "")];
    let results = run_variants(o, variants.len(), o.runs, |v, seed| {
        let (_, kernel, patches) = variants[v];
        let params = [("procs", "240"), ("ns", "1000"), ("duration_ms", "50")];
        spec("nanosleep", "intel-240-2s", kernel, patches, seed, &params, o)
    })?;
    let mut rows = Vec::new();
    let mut grid = Vec::new();
    for (vi, (label, kernel, patches)) in variants.iter().enumerate() {
        let rs = &results[vi];
        let cpu_time = |r: &RunResult| r.sim_ns as f64 * r.nr_cpus as f64;
        let newidle = |r: &RunResult| r.stats.newidle_ns as f64 / cpu_time(r);
        let lb = |r: &RunResult| r.stats.newidle_lb_stats_ns as f64 / cpu_time(r);
        let mut extra = serde_json::Map::new();
        extra.insert("newidle_share".into(), json!(avg(rs, newidle)));
        extra.insert("update_sd_lb_stats_share".into(), json!(avg(rs, lb)));
        rows.push(row(label, kernel, patches, rs, newidle, extra)?);
        grid.push(vec![
            label.to_string(),
            format!("{:.2}%", 100.0 * avg(rs, newidle)),
            format!("{:.2}%", 100.0 * avg(rs, lb)),
            format!("{:.0}", avg(rs, |r| r.stats.newidle_calls as f64)),
            format!("{:.0}", avg(rs, |r| r.stats.newidle_balances as f64)),
        ]);
    }
    normalize(&mut rows);
    let h: Vec<String> = ["kernel", "newidle share", "update_sd_lb_stats share", "newidle calls", "newidle balances"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    Ok(Comparison {
        experiment: "nanosleep".into(),
        machine: "intel-240-2s".into(),
        metric: "newidle_share".into(),
        unit: "fraction".into(),
        lower_is_better: true,
        rows,
        title: "nanosleep procs=240 ns=1000 duration_ms=50 (share of all CPU time)".into(),
        notes: vec![format!("Newidle balancing cost (means over seeds)\n{}", render_grid(&h, &grid))],
    })
}
