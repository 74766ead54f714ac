//! The ipistorm-arm experiment (docs/workloads.md section 0; issue 38 item 5): the TIF_NOTIFY_IPI
//! RFC's ipistorm run on a 2-socket Neoverse-N1 (`neoverse-n1-2s`), whose figures are withheld,
//! and which the arm64 maintainer questioned: arm64 idles in WFI and has no
//! TIF_POLLING_NRFLAG, so no CPU ever advertises polling and neither the RFC (which changes
//! only what a CSD does to a *polling* idle CPU: `notify_ipi_if_polling()`) nor SM_IDLE (which
//! changes only what `schedule_idle()` does, and a CSD handled in the IPI never calls it) has
//! a path to act on. The breakdown shows it per call: where the target was when the call
//! began, how the call notified it, and where the target's time went.

use super::{Analysis, ExpOpts, Plan, Variant};
use crate::linux::engine::Phase;
use crate::report::{mean_stddev, normalize, render_grid, CompareRow, Comparison};
use crate::run::RunResult;
use crate::spec::RunSpec;
use crate::workload::ipistorm::TargetAt;
use crate::workload::params::Params;
use crate::workload::Workload;
use serde_json::json;

pub const MACHINE: &str = "neoverse-n1-2s";

/// (label, patches on v6.10)
pub const VARIANTS: &[(&str, &str)] =
    &[("baseline", ""), ("sm_idle", "+3dcac251b066"), ("tif_notify_ipi", "+rfc-tif-notify-ipi")];

/// The sender and target of the published run (`cpulist=8 offset=8`).
const SENDER: usize = 8;
const TARGET: usize = 16;

/// The run spec of the published configuration with `patches` on v6.10.
pub fn spec(patches: &str) -> RunSpec {
    let mut s = RunSpec::new("ipistorm");
    s.machine = MACHINE.into();
    s.kernel = "v6.10".into();
    s.patches = patches.into();
    let pairs: Vec<(String, String)> =
        super::ipistorm::PUBLISHED_PARAMS.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    s.params = Params::from_pairs(pairs, "ipistorm-arm experiment");
    s
}

/// `schedsim reproduce ipistorm-arm`.
pub fn plan(o: &ExpOpts) -> Result<Plan, String> {
    let variants = VARIANTS
        .iter()
        .map(|(label, patches)| Variant { label: label.to_string(), spec: spec(patches), published: None })
        .collect();
    let title =
        "ipistorm numipi=100000 single=1 offset=8 cpulist=8 wait=1 on neoverse-n1-2s (WFI idle, no polling flag)"
            .to_string();
    let mut p = Plan::new("ipistorm-arm", title, MACHINE, variants, o.runs, o, Analysis::Code(analyze))?;
    p.focus = super::ipistorm::focus(&p.variants[0].spec)?;
    Ok(p)
}

/// Per-run figures of one variant.
struct Sample {
    total_ms: f64,
    calls: f64,
    ipi: f64,
    polling: f64,
    coalesced: f64,
    mean_ipi_ns: f64,
    target_at: [f64; 4],
    /// The target's time per call in the IPI handler, in the idle task's flush of the queue
    /// (the polling path) and in `__schedule()`.
    hardirq_ns: f64,
    flush_ns: f64,
    schedule_ns: f64,
    sender_spin_ns: f64,
    /// The target's time per call halted (in WFI), and in the idle state's phase.
    halted_ns: f64,
    idle_state_ns: f64,
}

fn sample(r: &RunResult) -> Result<Sample, String> {
    let Workload::Ipistorm(w) = &r.workload else { unreachable!() };
    if !r.finished {
        return Err(format!("ipistorm did not finish within the time limit (seed {})", r.seed));
    }
    let calls = w.calls().max(1) as f64;
    let per = |v: u64| v as f64 / calls;
    let ph = |cpu: usize, p: Phase| per(r.stats.phase_ns[cpu][p as usize]);
    Ok(Sample {
        total_ms: w.total_ns() as f64 / 1e6,
        calls,
        ipi: w.calls_ipi as f64,
        polling: w.calls_polling as f64,
        coalesced: w.calls_coalesced as f64,
        mean_ipi_ns: w.ns_ipi as f64 / w.calls_ipi.max(1) as f64,
        target_at: w.target_at_call.map(|n| n as f64),
        hardirq_ns: ph(TARGET, Phase::HardIrq),
        flush_ns: ph(TARGET, Phase::Flush),
        schedule_ns: ph(TARGET, Phase::Schedule),
        sender_spin_ns: ph(SENDER, Phase::Spin),
        halted_ns: per(r.stats.halted_ns[TARGET]),
        idle_state_ns: ph(TARGET, Phase::IdleState),
    })
}

fn avg(v: &[Sample], f: impl Fn(&Sample) -> f64) -> f64 {
    v.iter().map(f).sum::<f64>() / v.len().max(1) as f64
}

fn analyze(p: &Plan, results: &[Vec<RunResult>]) -> Result<Comparison, String> {
    let mut rows = Vec::new();
    let mut how = Vec::new();
    let mut where_ = Vec::new();
    for (vi, (label, patches)) in VARIANTS.iter().enumerate() {
        let samples: Vec<Sample> = results[vi].iter().map(sample).collect::<Result<_, _>>()?;
        let totals: Vec<f64> = samples.iter().map(|s| s.total_ms).collect();
        let (mean, stddev) = mean_stddev(&totals);
        let calls = avg(&samples, |s| s.calls);
        let pct = |v: f64| format!("{:.1}%", 100.0 * v / calls.max(1.0));
        let at: Vec<f64> = (0..4).map(|i| avg(&samples, |s| s.target_at[i])).collect();
        let (ipi, polling, coalesced) =
            (avg(&samples, |s| s.ipi), avg(&samples, |s| s.polling), avg(&samples, |s| s.coalesced));
        how.push(vec![
            label.to_string(),
            format!("{calls:.0}"),
            pct(ipi),
            pct(polling),
            pct(coalesced),
            pct(at[TargetAt::Halted as usize]),
            pct(at[TargetAt::PollIdle as usize]),
            pct(at[TargetAt::IdleAwake as usize]),
            pct(at[TargetAt::Busy as usize]),
            format!("{:.0}", avg(&samples, |s| s.mean_ipi_ns)),
        ]);
        let (hardirq, flush, schedule, spin) = (
            avg(&samples, |s| s.hardirq_ns),
            avg(&samples, |s| s.flush_ns),
            avg(&samples, |s| s.schedule_ns),
            avg(&samples, |s| s.sender_spin_ns),
        );
        let (halted, idle_state) = (avg(&samples, |s| s.halted_ns), avg(&samples, |s| s.idle_state_ns));
        where_.push(vec![
            label.to_string(),
            format!("{idle_state:.0}"),
            format!("{halted:.0}"),
            format!("{hardirq:.0}"),
            format!("{flush:.0}"),
            format!("{schedule:.0}"),
            format!("{spin:.0}"),
        ]);
        let mut extra = serde_json::Map::new();
        extra.insert("samples".into(), json!(totals));
        let by_state: serde_json::Map<String, serde_json::Value> =
            TargetAt::ALL.iter().map(|t| (t.name().to_string(), json!(at[*t as usize]))).collect();
        extra.insert(
            "breakdown".into(),
            json!({
                "calls": calls,
                "calls_ipi": ipi,
                "calls_polling": polling,
                "calls_coalesced": coalesced,
                "target_at_call": by_state,
                "mean_call_ns_ipi": avg(&samples, |s| s.mean_ipi_ns),
                "target_hardirq_ns_per_call": hardirq,
                "target_flush_ns_per_call": flush,
                "target_schedule_ns_per_call": schedule,
                "sender_spin_ns_per_call": spin,
                "target_idle_state_ns_per_call": idle_state,
                "target_halted_ns_per_call": halted,
            }),
        );
        let patch_ids: Vec<String> = crate::linux::KernelConfig::resolve("v6.10", patches, 250)?
            .patches
            .iter()
            .map(|p| p.info().id.to_string())
            .collect();
        rows.push(CompareRow {
            variant: label.to_string(),
            kernel: if patches.is_empty() { "v6.10".into() } else { format!("v6.10 {patches}") },
            patches: patch_ids,
            runs: p.runs,
            mean,
            stddev,
            normalized: 0.0,
            published: None,
            extra,
        });
    }
    normalize(&mut rows);
    let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    let notes = vec![
        format!(
            "How each call completed (share of calls): notified by a real IPI, by the polling flag, or coalesced; and where CPU{TARGET} was when the call began\n{}",
            render_grid(
                &s(&[
                    "variant",
                    "calls",
                    "real IPI",
                    "polling",
                    "coalesced",
                    "halted (WFI)",
                    "poll_idle",
                    "idle task awake",
                    "busy",
                    "call(IPI) ns"
                ]),
                &how
            )
        ),
        format!(
            "Where CPU{TARGET}'s time per call goes (ns): in the idle state and of it halted (WFI), the IPI handler, the idle task's flush of the queue (the polling path's), __schedule(); and CPU{SENDER}'s csd_lock_wait spin\n{}",
            render_grid(
                &s(&["variant", "idle-state", "halted", "hardirq", "flush", "schedule", "CPU8 spin"]),
                &where_
            )
        ),
        "arm64 has no TIF_POLLING_NRFLAG (the preset's polling_idle = false): the idle task never \
         advertises polling, so every call is sent as a real IPI, whether its target is halted in WFI or \
         still awake in the idle task after the previous call's handler (ipistorm's wait=1 calls \
         follow each other as soon as the handler releases the csd lock, so the next IPI lands \
         while the target is on its way back to WFI, and is taken there). It is handled in the \
         interrupt, which sets no NEED_RESCHED. The RFC's TIF_NOTIFY_IPI is \
         set only for a polling target and SM_IDLE acts only inside schedule_idle(): neither path \
         is reached, and the three rows run the same calls."
            .to_string(),
    ];
    Ok(Comparison {
        experiment: "ipistorm-arm".into(),
        machine: MACHINE.into(),
        metric: "time".into(),
        unit: "ms".into(),
        lower_is_better: true,
        statistic: crate::report::MMTESTS_AMEAN.into(),
        rows,
        title: p.title.clone(),
        notes,
        table: None,
    })
}
