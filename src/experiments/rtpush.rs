//! The rt-push experiment (docs/kernel-model.md §2.10 and §5.4): a SCHED_FIFO task
//! woken onto the CPU of a pinned, lower-priority FIFO task that is inside a non-preemptible
//! section, on a 4-CPU SMP box whose other CPUs run higher-priority hogs, while the waker's
//! CPU is about to free up (see `workload::rtpush`). v6.10's `push_rt_task()` gives up on a
//! task that outranks `curr` ("it is about to preempt"), so the woken task waits for the
//! pinned task and preempts it; with Rostedt's 2013 `ok_to_push_task()` in `push_rt_task()`
//! it is pushed to the freed CPU and the pinned task keeps running.

use super::{Analysis, ExpOpts, Plan, Variant};
use crate::report::{mean_stddev, normalize, render_grid, CompareRow, Comparison};
use crate::run::RunResult;
use crate::spec::RunSpec;
use crate::workload::rtpush::RtPush;
use crate::workload::Workload;
use serde_json::json;

/// (label, kernel, patches on it, what the 2013 thread expects: docs/kernel-model.md §5.4)
pub const VARIANTS: &[(&str, &str, &str, &str)] = &[
    ("v6.10", "v6.10", "", "preempts the pinned task"),
    ("ok_to_push_task", "v6.10", "+rostedt-2013-ok-to-push-task", "pushed to another CPU"),
    ("v3.8", "v3.8", "", "none stated (3.8 pulls: docs/rostedt-2013.md)"),
    ("ok_to_push_task on v3.8", "v3.8", "+rostedt-2013-ok-to-push-task", "none stated"),
];

/// The built-in scenario's machine.
pub const MACHINE: &str = "smp-4";

/// The run of scenarios/rt-push.toml (the workload's defaults) with `patches`.
fn spec(kernel: &str, patches: &str) -> RunSpec {
    let mut s = RunSpec::new("rt-push");
    s.machine = MACHINE.into();
    s.kernel = kernel.into();
    s.patches = patches.into();
    s
}

fn rt(r: &RunResult) -> &RtPush {
    match &r.workload {
        Workload::RtPush(w) => w,
        _ => unreachable!(),
    }
}

/// `schedsim reproduce rt-push`. The title is the workload's own description of its set-up
/// (`RtPush::setup`), made when the first run is analysed.
pub fn plan(o: &ExpOpts) -> Result<Plan, String> {
    let variants = VARIANTS
        .iter()
        .map(|(label, kernel, patches, _)| Variant {
            label: label.to_string(),
            spec: spec(kernel, patches),
            published: None,
        })
        .collect();
    let mut p = Plan::new("rt-push", String::new(), MACHINE, variants, o.runs, o, Analysis::Code(analyze))?;
    let spec = &p.variants[0].spec;
    let w = crate::workload::rtpush::RtPush::parse(&spec.params, crate::run::machine(&spec.machine)?.topo.nr_cpus)?;
    p.focus = crate::focus::Focus {
        cpus: crate::focus::Cpus::Listed(vec![w.pinned_cpu, w.waker_cpu]),
        instant: crate::focus::Moment {
            what: crate::focus::Match::Waking("woken".into()),
            cpu: None,
            after: crate::focus::Anchor::MeasureStart,
        },
        span_ns: 2 * crate::focus::SPAN_NS,
        why: "the FIFO task's wakeup: the pinned task's CPU, the waker's, and where the woken task goes".into(),
    };
    Ok(p)
}

fn analyze(_p: &Plan, results: &[Vec<RunResult>]) -> Result<Comparison, String> {
    let first = rt(&results[0][0]);
    let (setup, pinned_cpu) = (first.setup(results[0][0].nr_cpus), first.pinned_cpu);
    let mut rows = Vec::new();
    let mut grid = Vec::new();
    for (vi, (label, kernel, patches, expected)) in VARIANTS.iter().enumerate() {
        let rs = &results[vi];
        let mut lat = Vec::new();
        let mut on_pinned = 0usize;
        let mut preempted = 0usize;
        let mut cpus = Vec::new();
        for r in rs {
            let w = rt(r);
            let Some(l) = w.wakeup_to_run_ns() else {
                return Err(format!("rt-push: the woken task never ran ({label}, seed {})", r.seed));
            };
            lat.push(l as f64 / 1e3);
            on_pinned += (w.woken_task_cpu_is_pinned_cpu() == Some(true)) as usize;
            preempted += w.pinned_preempted as usize;
            if let Some(c) = w.woken_ran_on {
                if !cpus.contains(&c) {
                    cpus.push(c);
                }
            }
        }
        cpus.sort_unstable();
        let (mean, stddev) = mean_stddev(&lat);
        let n = rs.len();
        let all_pinned = on_pinned == n;
        let pushes = rs.iter().map(|r| r.stats.rt_pushes).sum::<u64>() as f64 / n as f64;
        let mut extra = serde_json::Map::new();
        extra.insert("woken_task_cpu_is_pinned_cpu".into(), json!(all_pinned));
        extra.insert("runs_on_pinned_cpu".into(), json!(on_pinned));
        extra.insert("woken_task_cpus".into(), json!(cpus));
        extra.insert("pinned_task_preempted_runs".into(), json!(preempted));
        extra.insert("rt_pushes".into(), json!(pushes));
        extra.insert("expected".into(), json!(expected));
        let cfg = crate::linux::KernelConfig::resolve(kernel, patches, 1000)?;
        rows.push(CompareRow {
            variant: label.to_string(),
            kernel: cfg.label(),
            patches: cfg.patches.iter().map(|p| p.info().id.to_string()).collect(),
            runs: n,
            mean,
            stddev,
            normalized: 0.0,
            published: None,
            extra,
        });
        let cpu_list: Vec<String> = cpus.iter().map(|c| c.to_string()).collect();
        grid.push(vec![
            label.to_string(),
            cpu_list.join(","),
            format!("{}/{n}", on_pinned),
            format!("{}/{n}", preempted),
            format!("{pushes:.1}"),
            format!("{mean:.1}"),
            expected.to_string(),
        ]);
    }
    normalize(&mut rows);
    let h: Vec<String> = [
        "variant",
        "woken ran on CPU",
        "on pinned CPU",
        "pinned preempted",
        "RT pushes",
        "wake->run (us)",
        "expected (published)",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    Ok(Comparison {
        table: None,
        experiment: "rt-push".into(),
        machine: MACHINE.into(),
        metric: "wakeup-to-run".into(),
        unit: "us".into(),
        lower_is_better: true,
        statistic: crate::report::MMTESTS_AMEAN.into(),
        rows,
        title: setup,
        notes: vec![format!("where the woken task ran (pinned CPU = {pinned_cpu})\n{}", render_grid(&h, &grid))],
    })
}
