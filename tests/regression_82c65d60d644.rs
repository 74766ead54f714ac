// 82c65d60d644 "sched/idle: Clear polling before descheduling the idle thread" (v3.16).
// See: 82c65d60d644
//
// Pins: `do_idle()` clears the idle task's TIF_POLLING_NRFLAG when it leaves its loop, before
// the exit flush and `schedule_idle()`, so the flag means "the idle task is in its loop and
// will test NEED_RESCHED before it sleeps" -- the guarantee the polling IPI elision
// (`set_nr_if_polling()`, e3baac47f0e8; for call-single IPIs b2a02fc43a1f) relies on. Without
// it the flag stays set after the loop: a sender that queues a csd while the target is in its
// exit flush or `schedule_idle()` finds POLLING|NEED_RESCHED, leaves out the IPI, and the
// target's `__schedule()` then clears NEED_RESCHED and the CPU goes back to sleep with the csd
// still queued. The call waits until something else wakes that CPU.
//
// Setup: ipistorm on smp-4 (quiet), CPU 1 calling CPU 3 with wait=1. The checker rule that
// catches it is ipi-elided-not-polling (src/linux/check.rs).

mod support;

use schedsim::linux::check::Rule;
use schedsim::run::{execute, RunResult};
use support::*;

fn run(patches: &str) -> RunResult {
    let mut s = ipistorm_spec(
        "smp-4",
        "v6.10",
        patches,
        &["cpulist=1", "offset=2", "numipi=2000", "single=1", "wait=1"],
        Some(false),
        false,
    );
    s.limit_ns = 200_000_000;
    s.check = true;
    execute(&s).expect("valid spec")
}

#[test]
fn with_the_fix_every_call_completes_and_no_rule_breaks() {
    let r = run("");
    assert!(r.finished, "2000 calls finish well within 200 ms");
    let w = ipistorm(&r);
    assert_eq!(w.calls(), 2000);
    assert!(w.calls_polling > 0, "scenario: some calls are notified by polling");
    let c = r.checks.as_ref().expect("checks on");
    assert!(c.counts.is_empty(), "{:?}", c.counts);
}

#[test]
fn without_the_fix_an_elided_ipi_strands_a_call_on_a_sleeping_cpu() {
    let r = run("-82c65d60d644");
    assert!(!r.finished, "a call is stranded: the run reaches its limit");
    assert!(ipistorm(&r).calls() < 2000);
    let c = r.checks.as_ref().expect("checks on");
    assert!(c.count(Rule::IpiElidedNotPolling) > 0, "{:?}", c.counts);
    let v = c.violations.iter().find(|v| v.rule == Rule::IpiElidedNotPolling).expect("kept");
    assert_eq!(v.cpu, 3, "the elided IPI was for the target CPU: {v:?}");
    assert!(v.detail.contains("left its idle loop"), "{}", v.detail);
    // The stranded call's csd stays locked past the bound.
    assert!(c.count(Rule::CsdLockHeld) > 0, "{:?}", c.counts);
    assert!(c.first(Rule::IpiElidedNotPolling) < c.first(Rule::CsdLockHeld));
}

#[test]
fn without_the_fix_a_wakeup_queued_behind_a_stranded_csd_is_lost() {
    let seed = race_seed_82c65d60d644();
    let r = pingpong_82c65d60d644("", seed);
    assert!(r.finished, "seed {seed}: with the fix the ping-pong finishes");
    assert!(r.checks.as_ref().expect("checks on").counts.is_empty());
    let r = pingpong_82c65d60d644("-82c65d60d644", seed);
    assert!(!r.finished, "the ping-pong stalls");
    let c = r.checks.as_ref().expect("checks on");
    for rule in [Rule::IpiElidedNotPolling, Rule::LostWakeup, Rule::CsdLockHeld] {
        assert!(c.count(rule) > 0, "{}: {:?}", rule.name(), c.counts);
    }
    // The elision comes first; the wakeup is reported when its 10 ms bound runs out.
    assert!(c.first(Rule::IpiElidedNotPolling) < c.first(Rule::LostWakeup));
}
