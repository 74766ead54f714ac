//! The hackbench-2013 experiment (docs/kernel-model.md §5.4): `perf stat -a hackbench 500`
//! (the old hackbench: 500 groups of 20 senders + 20 receivers over AF_UNIX sockets, 100
//! loops) on a 4C/8T i7, for the newidle balance in `__schedule()`, moved to the idle class's
//! post-schedule hook with IRQs on (Rostedt's patches 2/3 + 3/3), and that plus the
//! `nr_running` re-check. The variants are built on `v3.8` (the kernel Rostedt measured) by
//! default; `--kernel v6.10` shows today's answer. Rostedt ran `-r 100`; each run here is
//! ~75 s of wall time, so the experiment uses at most 2 seeds.

use super::{Analysis, ExpOpts, Plan, Variant};
use crate::report::{mean_stddev, normalize, render_grid, CompareRow, Comparison, PerfCounter, PerfStat};
use crate::run::RunResult;
use crate::spec::RunSpec;
use crate::unknowns::{Axis, Unknown};
use crate::workload::params::Params;
use crate::workload::{Metric, Workload};
use serde_json::json;

/// The kernel the variants are built on unless `--kernel` says otherwise.
pub const DEFAULT_KERNEL: &str = "v3.8";

/// (label, patches on the kernel)
pub const VARIANTS: &[(&str, &str)] = &[
    ("newidle-in-schedule", ""),
    ("post-schedule", "+rostedt-2013-post-schedule,+rostedt-2013-irqs-on"),
    (
        "post-schedule-nr-running-check",
        "+rostedt-2013-post-schedule,+rostedt-2013-irqs-on,+rostedt-2013-nr-running-check",
    ),
];

fn spec(kernel: &str, patches: &str) -> RunSpec {
    let mut s = RunSpec::new("hackbench");
    s.machine = "i7-4c8t".into();
    s.kernel = kernel.into();
    s.patches = patches.into();
    let pairs = vec![("tool".to_string(), "old".to_string()), ("args".to_string(), "500".to_string())];
    s.params = Params::from_pairs(pairs, "hackbench-2013 experiment");
    s
}

/// hackbench's arguments in the plan's runs (`500`, the published run's, unless overridden).
fn hackbench_args(p: &Plan) -> String {
    p.variants[0].spec.params.get("args").unwrap_or("500").to_string()
}

fn elapsed_s(r: &RunResult) -> f64 {
    match &r.workload {
        Workload::Hackbench(w) => w.elapsed_ns() as f64 / 1e9,
        _ => unreachable!(),
    }
}

/// `schedsim reproduce hackbench-2013`.
pub fn plan(o: &ExpOpts) -> Result<Plan, String> {
    let kernel = o.kernel.as_deref().unwrap_or(DEFAULT_KERNEL);
    let variants = VARIANTS
        .iter()
        .map(|(label, patches)| Variant { label: label.to_string(), spec: spec(kernel, patches), published: None })
        .collect();
    let mut p =
        Plan::new("hackbench-2013", String::new(), "i7-4c8t", variants, o.runs.min(2), o, Analysis::Code(analyze))?;
    // The title names the groups the runs use (a --param args= overrides the published 500).
    p.title = format!(
        "perf stat -a hackbench {} (old hackbench, sockets, 100 loops) on an i7 4C/8T, {kernel}",
        hackbench_args(&p)
    );
    // The background's intensity (docs/unknowns.md §4), and the task groups hackbench's user
    // tasks ran in (§8). 20000 tasks on 8 CPUs hold rd->overloaded themselves and rewrite
    // every CPU's avg_idle: the start-state unknowns do not apply.
    p.unknowns = [Unknown::BackgroundIntensity, Unknown::CgroupDepth, Unknown::CgroupLeaves]
        .into_iter()
        .map(|u| Axis::of(u, ""))
        .collect::<Result<_, _>>()?;
    p.figure = elapsed;
    p.focus = crate::focus::Focus::steady();
    Ok(p)
}

/// The `perf stat -a` block of a variant's runs (one per seed, as `perf stat -r`): with `-a`
/// perf opens its counters on every CPU for the command's life, so task-clock is every CPU's
/// clock over the measured window, context-switches and cpu-migrations are the machine's, and
/// `cycles` counts unhalted cycles only (not while a CPU waits in HLT, MWAIT or an I/O-port
/// C-state: `Stats::halted_ns`) at the machine's `clock_mhz`. The elapsed time is hackbench's.
fn perf_stat_a(rs: &[RunResult], mhz: u32) -> PerfStat {
    let over = |f: &dyn Fn(&RunResult) -> f64| PerfCounter::of(&rs.iter().map(f).collect::<Vec<f64>>());
    let cpu_ns = |r: &RunResult| r.sim_ns as f64 * f64::from(r.nr_cpus);
    PerfStat {
        target: "system wide".into(),
        runs: rs.len(),
        task_clock_ns: over(&cpu_ns),
        context_switches: over(&|r| r.stats.context_switches as f64),
        cpu_migrations: over(&|r| r.stats.cpu_migrations as f64),
        cycles: over(&|r| (cpu_ns(r) - r.stats.halted_ns.iter().sum::<u64>() as f64) * f64::from(mhz) / 1e3),
        elapsed_ns: over(&|r| elapsed_s(r) * 1e9),
    }
}

/// A run's figure, as a row of the table: hackbench's elapsed time (s).
fn elapsed(r: &RunResult) -> Metric {
    Metric { name: "elapsed", unit: "s", lower_is_better: true, value: elapsed_s(r) }
}

fn analyze(p: &Plan, results: &[Vec<RunResult>]) -> Result<Comparison, String> {
    let runs = p.runs;
    let kernel = p.variants[0].spec.kernel.as_str();
    let mut rows = Vec::new();
    let mut grid = Vec::new();
    let mut paths = Vec::new();
    let mut blocks = Vec::new();
    let mhz = crate::run::machine(&p.variants[0].spec.machine)?.clock_mhz;
    let args = hackbench_args(p);
    for (vi, (label, patches)) in VARIANTS.iter().enumerate() {
        let rs = &results[vi];
        blocks.push(format!("{label}:{}", perf_stat_a(rs, mhz).text()));
        let e: Vec<f64> = rs.iter().map(elapsed_s).collect();
        let (mean, stddev) = mean_stddev(&e);
        let avg = |f: &dyn Fn(&RunResult) -> f64| rs.iter().map(f).sum::<f64>() / rs.len() as f64;
        let cs = avg(&|r| r.stats.context_switches as f64);
        let mig = avg(&|r| r.stats.cpu_migrations as f64);
        let mut extra = serde_json::Map::new();
        extra.insert("elapsed_s".into(), json!(mean));
        extra.insert("context_switches".into(), json!(cs));
        extra.insert("cpu_migrations".into(), json!(mig));
        let cfg = crate::linux::KernelConfig::resolve(kernel, patches, 1000)?;
        rows.push(CompareRow {
            variant: label.to_string(),
            kernel: cfg.label(),
            patches: cfg.patches.iter().map(|p| p.info().id.to_string()).collect(),
            runs,
            mean,
            stddev,
            normalized: 0.0,
            published: None,
            extra,
        });
        grid.push(vec![
            label.to_string(),
            format!("{mean:.3}"),
            format!("{cs:.0}"),
            format!("{mig:.0}"),
            format!("{:.0}", avg(&|r| r.stats.newidle_calls as f64)),
            format!("{:.0}", avg(&|r| r.stats.lb_gained_newidle as f64)),
            format!("{:.0}", avg(&|r| r.stats.lb_gained_periodic as f64)),
        ]);
        let st = |f: &dyn Fn(&crate::linux::stats::Stats) -> u64| avg(&|r| f(&r.stats) as f64);
        let block = st(&|s| s.context_switches - s.switches_to_idle - s.switches_from_idle - s.switches_preempt);
        paths.push(vec![
            label.to_string(),
            format!("{block:.0}"),
            format!("{:.0}", st(&|s| s.switches_preempt)),
            format!("{:.0}", st(&|s| s.switches_to_idle)),
            format!("{:.0}", st(&|s| s.switches_from_idle)),
            format!("{:.0}", st(&|s| s.wakeups_direct)),
            format!(
                "{:.0}",
                st(&|s| s.wakeups_wakelist_polling + s.wakeups_wakelist_ipi + s.wakeups_wakelist_coalesced)
            ),
            format!("{:.0}", st(&|s| s.resched_ipis_sent)),
        ]);
    }
    normalize(&mut rows);
    let h: Vec<String> = [
        "variant",
        "elapsed (s)",
        "context-switches",
        "cpu-migrations",
        "newidle calls",
        "newidle pulls",
        "periodic pulls",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let h2: Vec<String> = [
        "variant",
        "task->task (blocking)",
        "task->task (preempted)",
        "task->idle",
        "idle->task",
        "direct wakeups",
        "wakelist wakeups",
        "resched IPIs",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    Ok(Comparison {
        table: None,
        experiment: "hackbench-2013".into(),
        machine: "i7-4c8t".into(),
        metric: "elapsed".into(),
        unit: "s".into(),
        lower_is_better: true,
        statistic: "AMean over seeds; perf stat -r N prints the mean and after +- its standard error (the block below)"
            .into(),
        rows,
        title: p.title.clone(),
        notes: vec![
            format!("perf stat (means over seeds)\n{}", render_grid(&h, &grid)),
            format!(
                "where the switches come from (means over seeds; docs/rostedt-2013.md)\n{}",
                render_grid(&h2, &paths)
            ),
            format!(
                "perf stat -a -r {runs} hackbench {args}, as perf prints it (one run per seed; +- is the standard \
                 error of the mean over the seeds; task-clock is every CPU's clock over the window, cycles \
                 its unhalted part at the preset's {mhz} MHz):\n\n{}",
                blocks.join("\n")
            ),
        ],
    })
}
