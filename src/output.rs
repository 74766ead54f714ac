//! A run's reports: the text `schedsim run` prints ([`run_text`], headed by [`run_header`],
//! the run's own command line), its JSON document ([`run_json`], also the result of each line
//! of `schedsim sweep`), and the invariant checkers' findings.

use crate::linux::engine::Phase;
use crate::report;
use crate::run::RunResult;
use crate::spec::RunSpec;
use serde_json::json;

pub fn counters_json(r: &RunResult) -> serde_json::Value {
    let st = &r.stats;
    let phases: serde_json::Map<String, serde_json::Value> = Phase::ALL
        .iter()
        .map(|p| (p.name().to_string(), json!(st.phase_ns.iter().map(|c| c[*p as usize]).sum::<u64>())))
        .collect();
    json!({
        "ipis_sent": st.ipis_sent,
        "resched_ipis_sent": st.resched_ipis_sent,
        "ipis_avoided_by_polling": st.ipis_avoided,
        "idle_exits": st.idle_exits,
        "idle_state_entries": st.idle_state_entries,
        "schedule_idle_calls": st.schedule_idle_calls,
        "newidle_calls": st.newidle_calls,
        "newidle_balances": st.newidle_balances,
        "newidle_ns": st.newidle_ns,
        "rd_overloaded_ns": st.overloaded_ns,
        "ksoftirqd_wakeups": st.ksoftirqd_wakeups,
        "context_switches": st.context_switches,
        "mm_switches": st.mm_switches,
        "cpu_migrations": st.cpu_migrations,
        "lb_gained_newidle": st.lb_gained_newidle,
        "lb_gained_periodic": st.lb_gained_periodic,
        "wakeups_wakelist_polling": st.wakeups_wakelist_polling,
        "wakeups_wakelist_ipi": st.wakeups_wakelist_ipi,
        "wakeups_wakelist_coalesced": st.wakeups_wakelist_coalesced,
        "wakeups_direct": st.wakeups_direct,
        "stacking_wakeups": st.stacking_wakeups,
        "stacking_fallback_wakeups": st.stacking_fallback_wakeups,
        "nohz_kicks": st.nohz_kicks,
        "nohz_kicks_raised_softirq": st.nohz_kicks_raised_softirq,
        "nohz_kicks_lost": st.nohz_kicks_lost,
        "nohz_balances": st.nohz_balances,
        "nohz_balance_aborts": st.nohz_balance_aborts,
        "task_clock_ns": r.task_clock_ns,
        "wakeup_latency_ns": latency_json(&st.wakeup_latency),
        "ticks": st.ticks,
        "tick_stops": st.tick_stops,
        "warns": st.warns,
        "irqs_off_ns_per_cpu": st.irqs_off_ns,
        "phase_ns_all_cpus": phases,
    })
}

fn latency_json(h: &hdrhistogram::Histogram<u64>) -> serde_json::Value {
    if h.is_empty() {
        return json!(null);
    }
    json!({
        "samples": h.len(),
        "min": h.min(),
        "p50": h.value_at_quantile(0.50),
        "p90": h.value_at_quantile(0.90),
        "p99": h.value_at_quantile(0.99),
        "p99.9": h.value_at_quantile(0.999),
        "max": h.max(),
    })
}

/// The `--json` document of one run (also each line of `schedsim sweep`).
pub fn run_json(s: &RunSpec, r: &RunResult) -> serde_json::Value {
    let mut v = json!({
        "command": run_header(s, r).trim_start_matches("# ").trim_end(),
        "scenario": s.workload,
        "machine": r.machine,
        "kernel": r.kernel_label,
        "seed": r.seed,
        "finished": r.finished,
        "sim_ns": r.sim_ns,
        "warmup_ns": r.warmup_ns,
        "background": r.background,
        "preempt": r.preempt,
        "actions": r.actions,
        "workload": r.workload.json(&r.facts()),
        "counters": counters_json(r),
        "schedstat": schedstat_json(&r.schedstat),
    });
    if let Some(c) = &r.checks {
        v["checks"] = checks_json(c);
    }
    if !r.unknowns.is_empty() {
        v["unknowns"] = json!(r.unknowns);
    }
    v
}

/// The checkers' findings: every rule that fired (count, first instant) and the kept violations.
pub fn checks_json(c: &crate::linux::check::Checks) -> serde_json::Value {
    json!({
        "rules": c.counts.iter().map(|n| json!({
            "rule": n.rule.name(),
            "count": n.count,
            "first_ns": n.first_ns,
            "first_cpu": n.first_cpu,
            "kernel_rule": n.rule.kernel_rule(),
        })).collect::<Vec<_>>(),
        "violations": c.violations.iter().map(|v| json!({
            "rule": v.rule.name(),
            "time_ns": v.time_ns,
            "cpu": v.cpu,
            "detail": v.detail,
        })).collect::<Vec<_>>(),
    })
}

/// The checkers' findings as text: one line per rule that fired, then the kept violations.
pub fn checks_text(c: &crate::linux::check::Checks) -> String {
    let mut o = String::new();
    if c.counts.is_empty() {
        o.push_str("\n Invariant checks: no violations\n");
        return o;
    }
    o.push_str(&format!(
        "\n Invariant checks: {} rules violated ({} violations; the first {} kept)\n",
        c.counts.len(),
        c.counts.iter().map(|n| n.count).sum::<u64>(),
        c.violations.len()
    ));
    let mut counts = c.counts.clone();
    counts.sort_by_key(|n| n.first_ns);
    for n in &counts {
        o.push_str(&format!(
            "  {}: {} times, first at {:.6} ms on CPU {}\n    rule: {}\n",
            n.rule.name(),
            n.count,
            n.first_ns as f64 / 1e6,
            n.first_cpu,
            n.rule.kernel_rule()
        ));
    }
    o.push_str(" Violations (rule, instant ms, cpu, detail):\n");
    for v in &c.violations {
        o.push_str(&format!("  {} {:.6} cpu{} {}\n", v.rule.name(), v.time_ns as f64 / 1e6, v.cpu, v.detail));
    }
    o
}

/// The first line of `schedsim run`'s output: `# schedsim run ...`, the spec's own command
/// line ([`RunSpec::command_line`]) with the background and preemption model in force written
/// out. Pasted back (without the `# `), it is the same run.
pub fn run_header(s: &RunSpec, r: &RunResult) -> String {
    let shown = RunSpec { background: Some(r.background.clone()), preempt: Some(r.preempt.clone()), ..s.clone() };
    format!("# {}\n", shown.command_line())
}

/// The line under the header naming each set unknown with what it did and its mechanism
/// (none when every unknown is at its default).
pub fn unknowns_line(r: &RunResult) -> String {
    if r.unknowns.is_empty() {
        return String::new();
    }
    let items: Vec<String> = r.unknowns.iter().map(|a| format!("{}={}: {}", a.name, a.value, a.effect)).collect();
    format!("# unknowns: {}\n", items.join("; "))
}

pub fn run_text(s: &RunSpec, r: &RunResult) -> String {
    let mut o = run_header(s, r);
    o.push_str(&unknowns_line(r));
    o.push_str(&r.workload.text(&r.facts()));
    if !r.finished && r.workload.finishes() {
        o.push_str("warning: the workload did not finish before the time limit\n");
    }
    let st = &r.stats;
    let total_irqs_off: u64 = st.irqs_off_ns.iter().sum();
    o.push_str(&format!(
        "\n Performance counter stats (simulated {:.3} ms, {} CPUs):\n\n",
        r.sim_ns as f64 / 1e6,
        r.nr_cpus
    ));
    let line = |o: &mut String, v: String, name: &str| o.push_str(&format!("{v:>18}      {name}\n"));
    line(&mut o, st.ipis_sent.to_string(), "ipis-sent (CALL_FUNCTION_SINGLE)");
    line(&mut o, st.resched_ipis_sent.to_string(), "ipis-sent (RESCHEDULE)");
    line(&mut o, st.ipis_avoided.to_string(), "ipis-avoided (sched_wake_idle_without_ipi)");
    line(&mut o, st.idle_exits.to_string(), "idle-exits (do_idle)");
    line(&mut o, st.schedule_idle_calls.to_string(), "schedule-idle-calls");
    line(&mut o, st.newidle_calls.to_string(), "newidle-balance-calls");
    line(&mut o, st.newidle_balances.to_string(), "newidle-balances (ungated: walked the domains)");
    line(&mut o, format!("{:.3}", st.newidle_ns as f64 / 1e6), "newidle-balance-msec");
    line(&mut o, format!("{:.3}", st.overloaded_ns as f64 / 1e6), "rd-overloaded-msec (time rd->overloaded was set)");
    line(&mut o, st.ksoftirqd_wakeups.to_string(), "ksoftirqd-wakeups");
    line(&mut o, format!("{:.3}", r.task_clock_ns as f64 / 1e6), "task-clock (msec, workload tasks)");
    line(&mut o, st.context_switches.to_string(), "context-switches");
    line(&mut o, st.cpu_migrations.to_string(), "cpu-migrations");
    line(&mut o, st.lb_gained_newidle.to_string(), "lb-gained (newidle)");
    line(&mut o, st.lb_gained_periodic.to_string(), "lb-gained (periodic/nohz)");
    line(&mut o, st.wakeups_wakelist_polling.to_string(), "wakeups (wakelist, polling kick)");
    line(&mut o, st.wakeups_wakelist_ipi.to_string(), "wakeups (wakelist, IPI)");
    line(&mut o, st.wakeups_wakelist_coalesced.to_string(), "wakeups (wakelist, coalesced)");
    line(&mut o, st.wakeups_direct.to_string(), "wakeups (direct enqueue)");
    line(&mut o, st.stacking_wakeups.to_string(), "stacking-wakeups");
    line(&mut o, st.stacking_fallback_wakeups.to_string(), "stacking-wakeups (no idle CPU left)");
    line(&mut o, st.nohz_kicks.to_string(), "nohz-ilb-kicks");
    line(&mut o, st.nohz_kicks_raised_softirq.to_string(), "nohz-kicks-raised-softirq");
    line(&mut o, st.nohz_kicks_lost.to_string(), "nohz-kicks-lost");
    line(&mut o, st.nohz_balances.to_string(), "nohz-idle-balances");
    line(&mut o, st.nohz_balance_aborts.to_string(), "nohz-idle-balance-aborts");
    line(&mut o, format!("{:.3}", total_irqs_off as f64 / 1e6), "irqs-off-msec (all CPUs)");
    line(&mut o, st.warns.to_string(), "kernel-warnings");
    let h = &st.wakeup_latency;
    if !h.is_empty() {
        o.push_str(&format!(
            "\n Wakeup latency (waking -> running, us): samples {}  min {:.1}  p50 {:.1}  p90 {:.1}  p99 {:.1}  p99.9 {:.1}  max {:.1}\n",
            h.len(),
            h.min() as f64 / 1e3,
            h.value_at_quantile(0.5) as f64 / 1e3,
            h.value_at_quantile(0.9) as f64 / 1e3,
            h.value_at_quantile(0.99) as f64 / 1e3,
            h.value_at_quantile(0.999) as f64 / 1e3,
            h.max() as f64 / 1e3
        ));
    }
    // The busiest CPUs (`run::busiest_cpus`); IRQ-off time is a column, not the rank.
    o.push_str("\n Time by phase on the busiest CPUs (ms):\n");
    let mut header = vec!["cpu".to_string(), "irqs-off".to_string()];
    header.extend(Phase::ALL.iter().map(|p| p.name().to_string()));
    let rows: Vec<Vec<String>> = crate::run::busiest_cpus(st, crate::run::BUSIEST_SHOWN)
        .iter()
        .map(|&c| {
            let c = c as usize;
            let mut row = vec![c.to_string(), format!("{:.3}", st.irqs_off_ns[c] as f64 / 1e6)];
            row.extend(Phase::ALL.iter().map(|p| format!("{:.3}", st.phase_ns[c][*p as usize] as f64 / 1e6)));
            row
        })
        .collect();
    o.push_str(&report::render_grid(&header, &rows));
    o.push_str(&schedstat_text(&r.schedstat));
    if let Some(c) = &r.checks {
        o.push_str(&checks_text(c));
    }
    o
}

/// The newidle balancing counters per domain of the CPUs of interest, as `/proc/schedstat`
/// has them (v16), so a user can compare the model's state with their own machine's: a table
/// of the CPU_NEWLY_IDLE columns, then the kernel's own lines.
pub fn schedstat_text(s: &crate::run::Schedstat) -> String {
    use crate::linux::kernel::sched::fair::CpuIdleType;
    use crate::linux::kernel::sched::stats::idx;
    if s.cpus.is_empty() {
        return String::new();
    }
    let mut o = String::from(
        "\n Newidle balancing per domain (/proc/schedstat version 16, the CPU_NEWLY_IDLE columns, measured window):\n",
    );
    let header: Vec<String> = [
        "cpu",
        "domain",
        "name",
        "span",
        "lb_count",
        "lb_balanced",
        "lb_failed",
        "lb_imbalance",
        "lb_gained",
        "lb_hot_gained",
        "lb_nobusyq",
        "lb_nobusyg",
    ]
    .iter()
    .map(|h| h.to_string())
    .collect();
    let mut rows = Vec::new();
    for (cpu, ds) in s.cpus.iter().zip(&s.domains) {
        for d in ds {
            let lb = d.lb[idx(CpuIdleType::NewlyIdle)];
            rows.push(vec![
                cpu.to_string(),
                d.level.to_string(),
                d.name.to_string(),
                d.span.clone(),
                lb.lb_count.to_string(),
                lb.lb_balanced.to_string(),
                lb.lb_failed.to_string(),
                lb.lb_imbalance.to_string(),
                lb.lb_gained.to_string(),
                lb.lb_hot_gained.to_string(),
                lb.lb_nobusyq.to_string(),
                lb.lb_nobusyg.to_string(),
            ]);
        }
    }
    o.push_str(&report::render_grid(&header, &rows));
    o.push_str(
        " As /proc/schedstat prints them (per domain: __CPU_NOT_IDLE, CPU_IDLE, CPU_NEWLY_IDLE, eight fields each):\n",
    );
    o.push_str(&s.text);
    o
}

/// The same counters as numbers (`run --json`).
pub fn schedstat_json(s: &crate::run::Schedstat) -> serde_json::Value {
    use crate::linux::kernel::sched::fair::CpuIdleType;
    use crate::linux::kernel::sched::stats::{idx, LbCounters};
    let lb = |c: &LbCounters| {
        json!({
            "lb_count": c.lb_count,
            "lb_balanced": c.lb_balanced,
            "lb_failed": c.lb_failed,
            "lb_imbalance": c.lb_imbalance,
            "lb_gained": c.lb_gained,
            "lb_hot_gained": c.lb_hot_gained,
            "lb_nobusyq": c.lb_nobusyq,
            "lb_nobusyg": c.lb_nobusyg,
        })
    };
    json!({
        "version": 16,
        "cpus": s.cpus.iter().zip(&s.domains).map(|(cpu, ds)| json!({
            "cpu": cpu,
            "domains": ds.iter().map(|d| json!({
                "level": d.level,
                "name": d.name,
                "span": d.span,
                "not_idle": lb(&d.lb[idx(CpuIdleType::NotIdle)]),
                "idle": lb(&d.lb[idx(CpuIdleType::Idle)]),
                "newly_idle": lb(&d.lb[idx(CpuIdleType::NewlyIdle)]),
            })).collect::<Vec<_>>(),
        })).collect::<Vec<_>>(),
    })
}
