// The invariant checkers (`src/linux/check.rs`, `schedsim run --check`): each rule fires on a
// known-buggy kernel or a deliberately broken state and stays silent on the fixed one, and
// turning the checks on never changes a run.

mod support;

use schedsim::linux::check::Rule;
use schedsim::run::{execute, RunResult, RunSpec};
use schedsim::trace::WarnSite;
use support::*;

fn with_checks(mut s: RunSpec) -> RunResult {
    s.check = true;
    execute(&s).expect("valid spec")
}

fn count(r: &RunResult, rule: Rule) -> u64 {
    r.checks.as_ref().expect("checks were on").count(rule)
}

/// Every rule that fired, by name (for assertion messages).
fn fired(r: &RunResult) -> Vec<(&'static str, u64)> {
    r.checks.as_ref().map_or(Vec::new(), |c| c.counts.iter().map(|n| (n.rule.name(), n.count)).collect())
}

#[test]
fn checks_never_change_the_run() {
    for s in [
        ilb_polling_spec("v6.10", "+ea9cffc0a154", 3, "0", true),
        ipistorm_spec("smp-4", "v6.10", "", &["numipi=200"], None, true),
    ] {
        let plain = execute(&s).expect("valid spec");
        let checked = with_checks(s.clone());
        assert!(plain.checks.is_none());
        assert_eq!(plain.actions, checked.actions);
        assert_eq!(schedsim::run::trace_hash(&plain.trace), schedsim::run::trace_hash(&checked.trace));
    }
}

#[test]
fn warn_rule_reports_every_modelled_warn_on() {
    // PREEMPT_RT with ea9cffc0a154 and without 6675ce20046d: the flush raises SCHED_SOFTIRQ
    // and do_softirq_post_smp_call_flush() warns (tests/regression_6675ce20046d.rs).
    let r = with_checks(ilb_polling_spec("v6.10", "+ea9cffc0a154", 3, "0", true));
    let rule = Rule::Warn(WarnSite::DoSoftirqPostSmpCallFlush);
    assert_eq!(count(&r, rule), r.stats.warns, "every firing is a violation: {:?}", fired(&r));
    assert!(count(&r, rule) > 0, "{:?}", fired(&r));
    let c = r.checks.as_ref().expect("checks on");
    let first = c.violations.iter().find(|v| v.rule == rule).expect("kept");
    assert_eq!(Some(first.time_ns), c.first(rule));
    // With the fix nothing warns.
    let r = with_checks(ilb_polling_spec("v6.10", "+ea9cffc0a154,+6675ce20046d", 3, "0", true));
    assert_eq!(count(&r, rule), 0, "{:?}", fired(&r));
}

/// `schbench -m 2 -t 16 -r 1` on the 32-vCPU Ice Lake VM of the d6962c4fe8f9 experiment, quiet.
fn schbench_ttwu(kernel: &str, seed: u64) -> RunSpec {
    let mut s =
        schedsim::experiments::schbench_ttwu::spec(kernel, "", seed, &[("args".into(), "-m 2 -t 16 -r 1 -w 0".into())]);
    s.background = Some("none".into());
    s
}

#[test]
fn ttwu_pending_idle_chosen_fires_on_v6_1_and_never_on_v6_2() {
    // v6.1 clears ttwu_pending before the enqueue: a second waker's select_idle_sibling() sees
    // the CPU idle while the first wakee is still on its wakelist.
    let r = with_checks(schbench_ttwu("v6.1", 1));
    assert!(count(&r, Rule::TtwuPendingIdleChosen) > 0, "{:?}", fired(&r));
    let c = r.checks.as_ref().expect("checks on");
    let v = c.violations.iter().find(|v| v.rule == Rule::TtwuPendingIdleChosen).expect("kept");
    assert!(v.detail.contains("looks idle"), "{}", v.detail);
    for seed in 1..=3 {
        let r = with_checks(schbench_ttwu("v6.2", seed));
        assert_eq!(count(&r, Rule::TtwuPendingIdleChosen), 0, "seed {seed}: {:?}", fired(&r));
        assert!(fired(&r).is_empty(), "seed {seed}: v6.2 breaks no rule: {:?}", fired(&r));
    }
}

#[test]
fn ttwu_pending_stale_fires_on_a_flag_set_with_nothing_queued() {
    // A deliberately broken state: ttwu_pending set on an idle CPU with no wakelist entry.
    let mut k = schedsim::run::build(&idle_spec("smp-4", "v6.10", "")).expect("valid spec");
    k.enable_checks();
    // At boot, before CPU 2 first enters an idle state.
    k.cpus[2].rq.ttwu_pending = true;
    run_until(&mut k, 100_000_000);
    let v: Vec<_> = k.violations().iter().filter(|v| v.rule == Rule::TtwuPendingStale).collect();
    assert!(!v.is_empty(), "{:?}", k.violations());
    assert_eq!(v[0].cpu, 2);
    // The same machine without the broken flag is silent.
    let mut k = schedsim::run::build(&idle_spec("smp-4", "v6.10", "")).expect("valid spec");
    k.enable_checks();
    run_until(&mut k, 100_000_000);
    assert!(k.violations().is_empty(), "{:?}", k.violations());
}
