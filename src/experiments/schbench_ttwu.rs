//! The schbench-ttwu experiment (docs/kernel-model.md §5.5, docs/schbench-ttwu.md): `schbench -m 2 -t 16` (2021-12 version) on a
//! 32-vCPU Ice Lake VM, for the three kernels of the published table of d6962c4fe8f9
//! ("sched: Clear ttwu_pending after enqueue_task()"): `ttwu_pending` cleared early (v6.1),
//! early clear with f3dd3f674555 reverted, and the fix (v6.2).

use super::{Analysis, ExpOpts, Plan, Variant};
use crate::report::{mean_stddev, normalize, render_grid, CompareRow, Comparison};
use crate::run::RunResult;
use crate::spec::RunSpec;
use crate::unknowns::{Axis, Unknown};
use crate::workload::params::Params;
use crate::workload::schbench::{TailCauses, TAIL_US};
use crate::workload::schbench_stats::PERCENTILES;
use crate::workload::{Metric, Workload};
use serde_json::json;

/// (label, kernel, patches, published percentiles in us: 50/75/90/95/99/99.5/99.9)
pub const VARIANTS: &[(&str, &str, &str, [u64; 7])] = &[
    ("early-clear", "v6.1", "", [9, 12, 15, 18, 27, 3364, 12560]),
    ("revert-f3dd3f674555", "v6.1", "-f3dd3f674555", [13, 19, 22, 24, 31, 33, 36]),
    ("fix", "v6.2", "", [9, 12, 15, 17, 24, 27, 30]),
];

/// The default run: 30 s with the 5 s warmup, as schbench's defaults.
pub const ARGS: &str = "-m 2 -t 16 -r 30";

pub fn spec(kernel: &str, patches: &str) -> RunSpec {
    let mut s = RunSpec::new("schbench");
    s.machine = "icx-vm-32".into();
    s.kernel = kernel.into();
    s.patches = patches.into();
    s.limit_ns = 600 * crate::sim::NSEC_PER_SEC;
    s.params = Params::from_pairs(vec![("args".to_string(), ARGS.to_string())], "schbench-ttwu experiment");
    s
}

/// `schedsim reproduce schbench-ttwu`.
pub fn plan(o: &ExpOpts) -> Result<Plan, String> {
    let variants = VARIANTS
        .iter()
        .map(|(label, kernel, patches, published)| Variant {
            label: label.to_string(),
            spec: spec(kernel, patches),
            published: Some(published[6] as f64),
        })
        .collect();
    let title = format!("schbench {ARGS} (wakeup latency percentiles, us; means over seeds)");
    let mut p = Plan::new("schbench-ttwu", title, "icx-vm-32", variants, o.runs, o, Analysis::Code(analyze))?;
    p.focus = crate::focus::Focus {
        cpus: crate::focus::Cpus::Listed(Vec::new()),
        instant: crate::focus::Moment {
            what: crate::focus::Match::Any,
            cpu: None,
            after: crate::focus::Anchor::FirstStacking,
        },
        span_ns: crate::focus::SPAN_NS,
        why: "the first stacking wakeup (a worker woken onto an idle CPU already chosen for another wakee, \
              another CPU of its LLC idle), its CPU marked"
            .into(),
    };
    // How the VM's idle vCPUs wait and wake (docs/unknowns.md §3): the guest's idle mode, its
    // own and its host's poll windows, and what a blocked vCPU's wake costs.
    p.unknowns = [Unknown::GuestIdleMode, Unknown::GuestHaltPollNs, Unknown::HostHaltPollNs, Unknown::HltWake]
        .into_iter()
        .map(|u| Axis::of(u, ""))
        .collect::<Result<_, _>>()?;
    p.figure = p999;
    p.controls = controls();
    Ok(p)
}

/// Where the controls' published values come from.
const CONTROL_SOURCE: &str = "d6962c4fe8f9's changelog (\"sched: Clear ttwu_pending after enqueue_task()\"), \
     its table's v6.1 row";

/// Why the controls' spread is 1 us.
const CONTROL_SPREAD: &str =
    "the source prints one run and no spread; 1 us is the figure's resolution (schbench prints \
     whole microseconds and its histogram keeps every value below 512 us exactly), the smallest spread the figure can \
     have";

/// The controls (docs/unknowns.md §9): the v6.1 row's p50, p75 and p90, which no variant of
/// the model moves (the fix and the revert change how a stacked wakee waits, which reaches
/// only the tail); never p99 or above, never a patched row.
pub fn controls() -> Vec<crate::experiments::Control> {
    let [p50v, p75v, p90v, ..] = VARIANTS[0].3;
    [(p50 as fn(&RunResult) -> Metric, p50v), (p75, p75v), (p90, p90v)]
        .into_iter()
        .map(|(figure, v)| crate::experiments::Control {
            figure,
            published: v as f64,
            spread: 1.0,
            spread_source: CONTROL_SPREAD,
            source: CONTROL_SOURCE,
        })
        .collect()
}

/// A percentile (per mille) of a schbench run's final histogram, in us.
fn percentile(r: &RunResult, permille: u16) -> f64 {
    let Workload::Schbench(w) = &r.workload else { unreachable!("a schbench plan") };
    w.final_hist.as_ref().map_or(0, |h| h.percentile(permille)) as f64
}

fn p50(r: &RunResult) -> Metric {
    Metric { name: "p50", unit: "us", lower_is_better: true, value: percentile(r, 500) }
}

fn p75(r: &RunResult) -> Metric {
    Metric { name: "p75", unit: "us", lower_is_better: true, value: percentile(r, 750) }
}

fn p90(r: &RunResult) -> Metric {
    Metric { name: "p90", unit: "us", lower_is_better: true, value: percentile(r, 900) }
}

/// A run's figure, as a row of the table: the p99.9 wakeup latency of the final histogram (us).
fn p999(r: &RunResult) -> Metric {
    Metric { name: "p99.9", unit: "us", lower_is_better: true, value: percentile(r, 999) }
}

fn analyze(p: &Plan, results: &[Vec<RunResult>]) -> Result<Comparison, String> {
    let mut rows = Vec::new();
    let mut grid = Vec::new();
    let mut tail_grid = Vec::new();
    let tail_keys = TailCauses::default().rows().map(|(key, _, _)| key);
    for (vi, (label, kernel, patches, published)) in VARIANTS.iter().enumerate() {
        let rs = &results[vi];
        let mut pct = [0f64; 7];
        let mut stacking = 0f64;
        let mut fallback = 0f64;
        let mut p999 = Vec::new();
        let mut tail = [0f64; 6];
        for r in rs {
            let Workload::Schbench(w) = &r.workload else { unreachable!() };
            for (acc, (_, _, n)) in tail.iter_mut().zip(w.tail.rows()) {
                *acc += n as f64 / rs.len() as f64;
            }
            let Some(h) = &w.final_hist else {
                return Err(format!("schbench did not finish (seed {})", r.seed));
            };
            for (i, p) in PERCENTILES.iter().enumerate() {
                pct[i] += h.percentile(p.permille) as f64 / rs.len() as f64;
            }
            p999.push(h.percentile(999) as f64);
            stacking += r.stats.stacking_wakeups as f64 / rs.len() as f64;
            fallback += r.stats.stacking_fallback_wakeups as f64 / rs.len() as f64;
        }
        let (mean, stddev) = mean_stddev(&p999);
        let names = ["50", "75", "90", "95", "99", "99.5", "99.9"];
        let mut pm = serde_json::Map::new();
        let mut pubm = serde_json::Map::new();
        for i in 0..7 {
            pm.insert(names[i].into(), json!(pct[i]));
            pubm.insert(names[i].into(), json!(published[i]));
        }
        let mut extra = serde_json::Map::new();
        extra.insert("percentiles".into(), serde_json::Value::Object(pm));
        extra.insert("published_percentiles".into(), serde_json::Value::Object(pubm));
        extra.insert("stacking".into(), json!(stacking));
        extra.insert("stacking_no_idle_cpu".into(), json!(fallback));
        let mut tail_json: serde_json::Map<String, serde_json::Value> =
            tail_keys.iter().zip(tail).map(|(key, v)| (key.to_string(), json!(v))).collect();
        tail_json.insert("threshold_us".into(), json!(TAIL_US));
        extra.insert("tail_samples".into(), serde_json::Value::Object(tail_json));
        let mut tail_row = vec![label.to_string()];
        tail_row.extend(tail.iter().map(|v| format!("{v:.1}")));
        tail_grid.push(tail_row);
        let cfg = crate::linux::KernelConfig::resolve(kernel, patches, 1000)?;
        rows.push(CompareRow {
            variant: label.to_string(),
            kernel: cfg.label(),
            patches: cfg.patches.iter().map(|p| p.info().id.to_string()).collect(),
            runs: p.runs,
            mean,
            stddev,
            normalized: 0.0,
            published: Some(published[6] as f64),
            extra,
        });
        let mut sim_row = vec![format!("{label} (sim)")];
        sim_row.extend(pct.iter().map(|v| format!("{v:.0}")));
        sim_row.push(format!("{stacking:.0}"));
        sim_row.push(format!("{fallback:.0}"));
        grid.push(sim_row);
        let mut pub_row = vec![format!("{label} (published)")];
        pub_row.extend(published.iter().map(|v| v.to_string()));
        pub_row.push("-".into());
        pub_row.push("-".into());
        grid.push(pub_row);
    }
    normalize(&mut rows);
    let header: Vec<String> =
        ["kernel", "p50", "p75", "p90", "p95", "*p99", "p99.5", "p99.9", "stacking", "no-idle fallback"]
            .iter()
            .map(|s| s.to_string())
            .collect();
    let mut tail_header = vec!["kernel".to_string()];
    tail_header.extend(TailCauses::default().rows().iter().map(|(_, label, _)| label.to_string()));
    Ok(Comparison {
        table: None,
        experiment: "schbench-ttwu".into(),
        machine: "icx-vm-32".into(),
        metric: "p99.9".into(),
        unit: "us".into(),
        lower_is_better: true,
        statistic: "AMean over seeds of schbench's own p99.9 (its percentile rule: workload/schbench_stats.rs)".into(),
        rows,
        title: p.title.clone(),
        notes: vec![
            format!(
                "Latency percentiles (usec), simulated beside published, and stacking wakeups per run \
                 (onto a CPU already holding a pending wakee, with another LLC CPU idle / with none)\n{}",
                render_grid(&header, &grid)
            ),
            format!(
                "Where the tail comes from: samples of {TAIL_US} us or more per run, by what the worker's \
                 wakeup found on its target CPU (when most of the delay came before it ran), or a preemption \
                 while it spun\n{}",
                render_grid(&tail_header, &tail_grid)
            ),
        ],
    })
}
