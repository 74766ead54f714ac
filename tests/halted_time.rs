// Halted time per CPU (`Stats::halted_ns`, issue 31 item 4): perf's default `cycles` event
// counts only unhalted cycles, so the model keeps, per CPU, the time spent in an idle state
// that halts the core (MWAIT, HLT, an I/O-port C-state), and not the time in `poll_idle()`.

mod support;

use schedsim::linux::engine::Phase;
use schedsim::run::execute;
use schedsim::sim::NSEC_PER_MSEC;
use support::*;

#[test]
fn polling_idle_is_not_halted_and_mwait_and_ioport_are() {
    // Only POLL enabled: every idle period polls, so nothing is halted although the CPUs
    // spend nearly all their time in the idle state.
    let mut s = idle_spec("smp-4", "v6.10", "");
    s.limit_ns = 50 * NSEC_PER_MSEC;
    s.idle_states = vec![("C1".into(), false), ("C2".into(), false)];
    let r = execute(&s).unwrap();
    for c in 0..4 {
        let idle = r.stats.phase_ns[c][Phase::IdleState as usize];
        assert!(idle > 40 * NSEC_PER_MSEC, "CPU {c} polled {idle} ns");
        assert_eq!(r.stats.halted_ns[c], 0, "CPU {c}: poll_idle() does not halt");
    }
    // The machine's MWAIT C1 and I/O-port C2: the idle CPUs are halted for nearly the whole
    // run, and never longer than they sat in an idle state.
    let mut s = idle_spec("smp-4", "v6.10", "");
    s.limit_ns = 50 * NSEC_PER_MSEC;
    let r = execute(&s).unwrap();
    for c in 0..4 {
        let idle = r.stats.phase_ns[c][Phase::IdleState as usize];
        let halted = r.stats.halted_ns[c];
        assert!(halted > 40 * NSEC_PER_MSEC && halted <= idle, "CPU {c}: halted {halted} of {idle} ns idle");
    }
}

#[test]
fn a_cpu_that_polls_and_halts_counts_only_the_halts() {
    // ipistorm on smp-4 with C2 off, CPU0 calling CPU2: before the module starts every CPU
    // sits in MWAIT C1 (halted); during the storm the target's short idle periods poll in POLL
    // (not halted) and the sender spins in csd_lock_wait() (not halted).
    let s =
        ipistorm_spec("smp-4", "v6.10", "", &["numipi=2000", "single=1", "cpulist=0", "offset=2"], Some(false), false);
    let r = execute(&s).unwrap();
    let w = ipistorm(&r);
    assert_eq!(w.calls(), 2000);
    let first = w.first_call_ns.unwrap();
    let (sender, target) = (0, 2);
    let idle = r.stats.phase_ns[target][Phase::IdleState as usize];
    let halted = r.stats.halted_ns[target];
    assert!(halted > first / 2, "the target halted before the storm: {halted} ns");
    assert!(idle - halted > 5_000, "the target polled during the storm: halted {halted} of {idle} ns idle");
    let sender_halted = r.stats.halted_ns[sender];
    assert!(
        sender_halted > first / 2 && sender_halted < first + 20_000,
        "sender halted {sender_halted} ns, first call at {first}"
    );
}
