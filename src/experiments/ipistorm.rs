//! The ipistorm experiment (docs/workloads.md §0, §1.2): K Prateek Nayak's measurement behind
//! SM_IDLE. `ipistorm numipi=100000 single=1 offset=8 cpulist=8 wait=1` on a 2-socket EPYC
//! 7763 with C2 disabled, so idle CPUs sit in C1 (ACPI FFH MWAIT, polling).

use super::{Analysis, ExpOpts, Plan, Variant};
use crate::linux::engine::Phase;
use crate::report::{mean_stddev, normalize, render_grid, CompareRow, Comparison};
use crate::run::RunResult;
use crate::spec::RunSpec;
use crate::unknowns::{Axis, Domain, Unknown};
use crate::workload::ipistorm::IpistormParams;
use crate::workload::params::Params;
use crate::workload::Workload;
use serde_json::json;

/// The published run's module parameters.
pub const PUBLISHED_PARAMS: &[(&str, &str)] =
    &[("numipi", "100000"), ("single", "1"), ("offset", "8"), ("cpulist", "8"), ("wait", "1")];

/// (label, base kernel, patches, published normalized runtime)
pub const VARIANTS: &[(&str, &str, &str, Option<f64>)] = &[
    ("baseline", "v6.10", "", Some(1.00)),
    ("sm_idle", "v6.10", "+3dcac251b066", Some(0.25)),
    ("revert-b2a02fc43a1f", "v6.10", "-b2a02fc43a1f", None),
    ("tif_notify_ipi", "v6.10", "+rfc-tif-notify-ipi", None),
    ("softirq-flag-aligned", "v6.10", "+3dcac251b066,+rfc-softirq-flag", None),
    ("softirq-flag-unaligned", "v6.10", "+3dcac251b066,+rfc-softirq-flag-unaligned", None),
];

/// The sender and target of the published run.
const SENDER: usize = 8;
const TARGET: usize = 16;

/// The model's own walk of CPU16's NUMA domain on epyc-7763-2s (256 CPUs): the
/// `max_newidle_lb_cost` `update_newidle_cost()` leaves there after a run in which CPU16 walks
/// on every pass, the upper end of that unknown where no figure is published for a machine of
/// this size (docs/unknowns.md §2; `tests/unknowns.rs` fails if the model's walk moves away).
pub const NUMA_WALK_NS: u64 = 153_300;

/// The unknowns ipistorm's answer depends on (docs/unknowns.md §1, §2, §4): what holds
/// `rd->overloaded` (nothing, a pinned pair at each placement from CPU16, or a transient set as
/// the window opens), CPU16's start `avg_idle` and its NUMA domain's `max_newidle_lb_cost`
/// (whether its walk is gated or stops below the root), and the background's intensity.
pub fn unknowns() -> Result<Vec<Axis>, String> {
    Ok(vec![
        Axis::of(Unknown::OverloadHolder, "16")?,
        Axis::of(Unknown::StartOverloaded, "")?,
        Axis::of(Unknown::StartAvgIdle, "16")?,
        Axis::new(
            Unknown::NewidleCost,
            Domain::Interval { lo: "0ns@16/NUMA".into(), hi: format!("{NUMA_WALK_NS}ns@16/NUMA") },
        )?,
        Axis::of(Unknown::BackgroundIntensity, "")?,
    ])
}

/// The run spec of the published configuration for one variant.
pub fn spec(kernel: &str, patches: &str) -> RunSpec {
    let mut s = RunSpec::new("ipistorm");
    s.machine = "epyc-7763-2s".into();
    s.kernel = kernel.into();
    s.patches = patches.into();
    s.idle_states = vec![("C2".into(), false)];
    let pairs: Vec<(String, String)> = PUBLISHED_PARAMS.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    s.params = Params::from_pairs(pairs, "ipistorm experiment");
    s
}

/// Per-run figures the table and breakdown need.
struct Sample {
    total_ms: f64,
    calls: f64,
    polling: f64,
    ipi: f64,
    coalesced: f64,
    lat_polling_ns: f64,
    lat_ipi_ns: f64,
    target_phase_ns: [f64; crate::linux::engine::NR_PHASES],
    sender_phase_ns: [f64; crate::linux::engine::NR_PHASES],
    target_irqs_off_ns: f64,
    schedule_idle_calls: f64,
    newidle_calls: f64,
    idle_exits: f64,
}

fn sample(r: &RunResult) -> Result<Sample, String> {
    let Workload::Ipistorm(w) = &r.workload else { unreachable!() };
    if !r.finished {
        return Err(format!("ipistorm did not finish within the time limit (seed {})", r.seed));
    }
    let calls = w.calls().max(1) as f64;
    let per = |v: u64| v as f64 / calls;
    let mut tp = [0.0; crate::linux::engine::NR_PHASES];
    let mut sp = [0.0; crate::linux::engine::NR_PHASES];
    for p in Phase::ALL {
        tp[p as usize] = per(r.stats.phase_ns[TARGET][p as usize]);
        sp[p as usize] = per(r.stats.phase_ns[SENDER][p as usize]);
    }
    Ok(Sample {
        total_ms: w.total_ns() as f64 / 1e6,
        calls,
        polling: w.calls_polling as f64,
        ipi: w.calls_ipi as f64,
        coalesced: w.calls_coalesced as f64,
        lat_polling_ns: w.ns_polling as f64 / (w.calls_polling.max(1)) as f64,
        lat_ipi_ns: w.ns_ipi as f64 / (w.calls_ipi.max(1)) as f64,
        target_phase_ns: tp,
        sender_phase_ns: sp,
        target_irqs_off_ns: per(r.stats.irqs_off_ns[TARGET]),
        schedule_idle_calls: r.stats.schedule_idle_calls as f64,
        newidle_calls: r.stats.newidle_calls as f64,
        idle_exits: r.stats.idle_exits as f64,
    })
}

fn avg(v: &[Sample], f: impl Fn(&Sample) -> f64) -> f64 {
    v.iter().map(f).sum::<f64>() / v.len().max(1) as f64
}

/// `schedsim reproduce ipistorm`: the published run on every variant.
pub fn plan(o: &ExpOpts) -> Result<Plan, String> {
    let variants = VARIANTS
        .iter()
        .map(|(label, kernel, patches, published)| Variant {
            label: label.to_string(),
            spec: spec(kernel, patches),
            published: *published,
        })
        .collect();
    let mut p = Plan::new("ipistorm", String::new(), "epyc-7763-2s", variants, o.runs, o, Analysis::Code(analyze))?;
    let params: Vec<String> = p.variants[0].spec.params.pairs().iter().map(|(k, v)| format!("{k}={v}")).collect();
    p.title = format!("ipistorm {} (CPU8 -> CPU16, C2 disabled)", params.join(" "));
    p.focus = focus(&p.variants[0].spec)?;
    p.unknowns = unknowns()?;
    Ok(p)
}

/// The report's window for a run of ipistorm `spec`: its senders (`cpulist`) and their targets,
/// at a call half way through the run (a steady stretch).
pub fn focus(spec: &RunSpec) -> Result<crate::focus::Focus, String> {
    use crate::focus::{Anchor, Cpus, Focus, Match, Moment};
    let nr = crate::run::machine(&spec.machine)?.topo.nr_cpus;
    let p = IpistormParams::parse(&spec.params, nr)?;
    let senders: Vec<u32> = p.cpulist.iter().collect();
    let mut cpus = senders.clone();
    cpus.extend(senders.iter().map(|&c| p.target(c, nr)));
    Ok(Focus {
        cpus: Cpus::Listed(cpus),
        instant: Moment {
            what: Match::CsdQueue(Some(crate::trace::Sym::DoNothingIpi)),
            cpu: senders.first().copied(),
            after: Anchor::Middle,
        },
        span_ns: crate::focus::SPAN_NS,
        why: "ipistorm's senders (cpulist) and targets (offset), at a call half way through the run".into(),
    })
}

fn analyze(p: &Plan, results: &[Vec<RunResult>]) -> Result<Comparison, String> {
    let mut rows = Vec::new();
    let mut breakdown_rows = Vec::new();
    let mut phase_rows = Vec::new();
    for (vi, (label, kernel, patches, published)) in VARIANTS.iter().enumerate() {
        let samples: Vec<Sample> = results[vi].iter().map(sample).collect::<Result<_, _>>()?;
        let totals: Vec<f64> = samples.iter().map(|s| s.total_ms).collect();
        let (mean, stddev) = mean_stddev(&totals);
        let calls = avg(&samples, |s| s.calls);
        let share_polling = avg(&samples, |s| s.polling) / calls;
        let share_ipi = avg(&samples, |s| s.ipi) / calls;
        let share_coalesced = avg(&samples, |s| s.coalesced) / calls;
        let mut target = serde_json::Map::new();
        let mut sender = serde_json::Map::new();
        for p in Phase::ALL {
            target.insert(p.name().into(), json!(avg(&samples, |s| s.target_phase_ns[p as usize])));
            sender.insert(p.name().into(), json!(avg(&samples, |s| s.sender_phase_ns[p as usize])));
        }
        let mut extra = serde_json::Map::new();
        // Per-seed values, for the report's distribution plot.
        extra.insert("samples".into(), json!(totals));
        extra.insert(
            "breakdown".into(),
            json!({
                "calls": calls,
                "share_polling": share_polling,
                "share_ipi": share_ipi,
                "share_coalesced": share_coalesced,
                "mean_call_ns_polling": avg(&samples, |s| s.lat_polling_ns),
                "mean_call_ns_ipi": avg(&samples, |s| s.lat_ipi_ns),
                "target_ns_per_call": target,
                "sender_ns_per_call": sender,
                "target_irqs_off_ns_per_call": avg(&samples, |s| s.target_irqs_off_ns),
                "target_idle_exits": avg(&samples, |s| s.idle_exits),
                "schedule_idle_calls": avg(&samples, |s| s.schedule_idle_calls),
                "newidle_calls": avg(&samples, |s| s.newidle_calls),
            }),
        );
        let patch_ids: Vec<String> = crate::linux::KernelConfig::resolve(kernel, patches, 250)?
            .patches
            .iter()
            .map(|p| p.info().id.to_string())
            .collect();
        rows.push(CompareRow {
            variant: label.to_string(),
            kernel: if patches.is_empty() {
                kernel.to_string()
            } else {
                format!("{kernel} {}", patches.replace(',', " "))
            },
            patches: patch_ids,
            runs: p.runs,
            mean,
            stddev,
            normalized: 0.0,
            published: *published,
            extra,
        });
        breakdown_rows.push(vec![
            label.to_string(),
            format!("{:.1}%", share_polling * 100.0),
            format!("{:.1}%", share_ipi * 100.0),
            format!("{:.0}", avg(&samples, |s| s.lat_polling_ns)),
            format!("{:.0}", avg(&samples, |s| s.lat_ipi_ns)),
            format!("{:.0}", avg(&samples, |s| s.target_irqs_off_ns)),
            format!("{:.0}", avg(&samples, |s| s.schedule_idle_calls)),
            format!("{:.0}", avg(&samples, |s| s.newidle_calls)),
        ]);
        let mut pr = vec![label.to_string()];
        // Every phase of the target but its task and spin time.
        for &p in &Phase::ALL[2..] {
            pr.push(format!("{:.0}", avg(&samples, |s| s.target_phase_ns[p as usize])));
        }
        pr.push(format!("{:.0}", avg(&samples, |s| s.sender_phase_ns[Phase::Spin as usize])));
        phase_rows.push(pr);
    }
    normalize(&mut rows);
    let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    let notes = vec![
        format!(
            "Per call: how the target was notified, and what a call costs the sender (ns)\n{}",
            render_grid(
                &s(&[
                    "variant",
                    "polling",
                    "real IPI",
                    "call(polling)",
                    "call(IPI)",
                    "CPU16 irqs-off",
                    "schedule_idle",
                    "newidle"
                ]),
                &breakdown_rows
            )
        ),
        format!(
            "Where each call's time goes on CPU16 (ns per call), and the sender's csd_lock_wait spin\n{}",
            render_grid(
                &s(&[
                    "variant",
                    "idle-state",
                    "idle-loop",
                    "flush",
                    "schedule",
                    "newidle",
                    "hardirq",
                    "softirq",
                    "CPU8 spin"
                ]),
                &phase_rows
            )
        ),
    ];
    Ok(Comparison {
        table: None,
        experiment: "ipistorm".into(),
        machine: "epyc-7763-2s".into(),
        metric: "time".into(),
        unit: "ms".into(),
        lower_is_better: true,
        statistic: crate::report::MMTESTS_AMEAN.into(),
        rows,
        title: p.title.clone(),
        notes,
    })
}
