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
