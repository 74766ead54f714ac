//! The ipistorm-intel experiment (docs/kernel-model.md §5.3, docs/workloads.md §0):
//! Chen Yu's run of the same IPI storm on a 240-CPU, 2-node Intel server with C1E and deeper
//! disabled (sched/core at c793a62823d1), v6.10 and v6.10 + SM_IDLE, ten runs each. His reply
//! printed every run's time, the AMean and the Std; the figures themselves are withheld as a
//! check. Besides each run's time this prints what the model says decides it: how many newidle
//! balances passed their gates and walked the domains (from the idle task's spurious
//! `schedule_idle()` in v6.10), and how long `rd->overloaded` was set during the run.

use super::{Analysis, ExpOpts, Plan, Variant};
use crate::report::{normalize, render_grid, Comparison};
use crate::run::RunResult;
use crate::spec::RunSpec;
use crate::unknowns::{Axis, Domain, Unknown};
use crate::workload::params::Params;
use crate::workload::Workload;
use serde_json::json;

/// (label, patches on v6.10)
pub const VARIANTS: &[(&str, &str)] = &[("v6.10", ""), ("v6.10+SM_IDLE", "+3dcac251b066")];

pub const MACHINE: &str = "intel-240-2s";

/// Runs per variant in the published reply.
pub const PUBLISHED_RUNS: usize = 10;

/// The model's own walk of CPU16's NUMA (root) domain on intel-240-2s, the upper end of its
/// `max_newidle_lb_cost` (as `super::ipistorm::NUMA_WALK_NS`; docs/unknowns.md §2).
pub const NUMA_WALK_NS: u64 = 63_200;

/// The unknowns of the Intel runs: as ipistorm's, with the placements this machine has (a node
/// is one LLC, so no CPU is "same node, other LLC"; docs/unknowns.md §1).
pub fn unknowns() -> Result<Vec<Axis>, String> {
    let holder = ["none", "same-core@16", "same-llc@16", "other-node@16"].map(String::from).to_vec();
    Ok(vec![
        Axis::new(Unknown::OverloadHolder, Domain::Values(holder))?,
        Axis::of(Unknown::StartOverloaded, "")?,
        Axis::of(Unknown::StartAvgIdle, "16")?,
        Axis::new(
            Unknown::NewidleCost,
            Domain::Interval { lo: "0ns@16/NUMA".into(), hi: format!("{NUMA_WALK_NS}ns@16/NUMA") },
        )?,
        Axis::of(Unknown::BackgroundIntensity, "")?,
    ])
}

fn spec(patches: &str) -> RunSpec {
    let mut s = RunSpec::new("ipistorm");
    s.machine = MACHINE.into();
    s.kernel = "v6.10".into();
    s.patches = patches.into();
    // "C-states >= C1E disabled": idle CPUs sit in C1 (MWAIT, polling).
    s.idle_states = vec![("C1E".into(), false), ("C6".into(), false)];
    let pairs: Vec<(String, String)> =
        super::ipistorm::PUBLISHED_PARAMS.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    s.params = Params::from_pairs(pairs, "ipistorm-intel experiment");
    s
}

fn total_ms(r: &RunResult) -> Result<f64, String> {
    let Workload::Ipistorm(w) = &r.workload else { unreachable!() };
    if !r.finished {
        return Err(format!("ipistorm did not finish within the time limit (seed {})", r.seed));
    }
    Ok(w.total_ns() as f64 / 1e6)
}

/// `schedsim reproduce ipistorm-intel`.
pub fn plan(o: &ExpOpts) -> Result<Plan, String> {
    // Ten runs per variant unless the user asks for a number (the default of --runs is 5).
    let runs = if o.runs == ExpOpts::default().runs { PUBLISHED_RUNS } else { o.runs };
    let variants = VARIANTS
        .iter()
        .map(|(label, patches)| Variant { label: label.to_string(), spec: spec(patches), published: None })
        .collect();
    let title = "ipistorm numipi=100000 single=1 offset=8 cpulist=8 wait=1 on intel-240-2s (C1E, C6 off)".to_string();
    let mut p = Plan::new("ipistorm-intel", title, MACHINE, variants, runs, o, Analysis::Code(analyze))?;
    p.focus = super::ipistorm::focus(&p.variants[0].spec)?;
    p.unknowns = unknowns()?;
    Ok(p)
}

fn analyze(p: &Plan, results: &[Vec<RunResult>]) -> Result<Comparison, String> {
    let mut rows = Vec::new();
    let mut per_run = Vec::new();
    for (vi, (label, patches)) in VARIANTS.iter().enumerate() {
        let rs = &results[vi];
        let times: Vec<f64> = rs.iter().map(total_ms).collect::<Result<_, _>>()?;
        let mut runs_json = Vec::new();
        for (r, t) in rs.iter().zip(&times) {
            let ovl_ms = r.stats.overloaded_ns as f64 / 1e6;
            let share = if r.sim_ns > 0 { r.stats.overloaded_ns as f64 / r.sim_ns as f64 * 100.0 } else { 0.0 };
            per_run.push(vec![
                label.to_string(),
                r.seed.to_string(),
                format!("{t:.3}"),
                r.stats.newidle_calls.to_string(),
                r.stats.newidle_balances.to_string(),
                format!("{:.3}", r.stats.newidle_ns as f64 / 1e6),
                format!("{ovl_ms:.3} ({share:.0}%)"),
            ]);
            runs_json.push(json!({
                "seed": r.seed,
                "time_ms": t,
                "newidle_calls": r.stats.newidle_calls,
                "newidle_ungated": r.stats.newidle_balances,
                "newidle_ms": r.stats.newidle_ns as f64 / 1e6,
                "rd_overloaded_ms": ovl_ms,
            }));
        }
        let mut extra = serde_json::Map::new();
        extra.insert("runs".into(), json!(runs_json));
        let t = |r: &RunResult| total_ms(r).unwrap_or(0.0);
        rows.push(super::nohz::row(label, "v6.10", patches, rs, t, extra)?);
    }
    normalize(&mut rows);
    let h: Vec<String> = [
        "variant",
        "seed",
        "time (ms)",
        "newidle calls",
        "ungated (walked domains)",
        "newidle ms",
        "rd->overloaded set",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let mut summary = String::from("variant          AMean (ms)   Std (ms)   Std/AMean\n");
    for r in &rows {
        summary.push_str(&format!(
            "{:<16} {:>10.3} {:>10.3} {:>10.1}%\n",
            r.variant,
            r.mean,
            r.stddev,
            if r.mean > 0.0 { r.stddev / r.mean * 100.0 } else { 0.0 }
        ));
    }
    Ok(Comparison {
        table: None,
        experiment: "ipistorm-intel".into(),
        machine: MACHINE.into(),
        metric: "time".into(),
        unit: "ms".into(),
        lower_is_better: true,
        statistic: "AMean and Std (sample standard deviation) of the runs, as Chen Yu's reply prints them".into(),
        rows,
        title: p.title.clone(),
        notes: vec![
            format!("every run, and what decided it\n{}", render_grid(&h, &per_run)),
            format!("as Chen Yu's reply prints them (published figures withheld as a check)\n{summary}"),
        ],
    })
}
