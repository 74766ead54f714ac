// 9bd721c55c8a "sched/balancing: Consider max cost of idle balance per sched domain" (v3.13).
// See: 9bd721c55c8a
//
// Pins: the `max_newidle_lb_cost` gate of the newidle balance, on the 3.8 `idle_balance()`
// (the v3.15+ placement always has it: 38033c37faab requires this row). With the patch an
// `avg_idle` above `sysctl_sched_migration_cost` but below the lowest domain's
// `max_newidle_lb_cost` skips the balance; without it (v3.8) only the migration cost gates.

mod support;

use schedsim::linux::engine::{local_irq_disable, Next};
use schedsim::linux::kernel::sched::core::{raw_spin_rq_lock, raw_spin_rq_unlock};
use schedsim::linux::kernel::sched::fair::{idle_balance, IdleBalance};
use schedsim::run::build;
use support::*;

/// Run the first step of `idle_balance()` on CPU 1 of a settled idle i7 with `avg_idle` 1 ms,
/// every domain's `max_newidle_lb_cost` 5 ms and the root domain overloaded: true if the
/// balance went past its gates.
fn balances(patches: &str) -> bool {
    let mut k = build(&idle_spec("i7-4c8t", "v3.8", patches)).expect("valid spec");
    run_until(&mut k, 5_000_000);
    let cpu = 1;
    for d in k.sd.domains_mut(cpu) {
        d.max_newidle_lb_cost = 5_000_000;
    }
    k.cpus[cpu as usize].rq.avg_idle = 1_000_000;
    k.rd.overloaded = true;
    local_irq_disable(&mut k, cpu);
    raw_spin_rq_lock(&mut k, cpu, cpu).expect("uncontended");
    let before = k.stats.newidle_balances;
    let mut s = IdleBalance::default();
    assert!(matches!(idle_balance(&mut k, cpu, &mut s), Next::Cont(_)));
    let went = k.stats.newidle_balances > before;
    if !went {
        raw_spin_rq_unlock(&mut k, cpu, cpu);
    }
    went
}

#[test]
fn with_the_patch_a_costly_domain_walk_is_skipped() {
    assert!(!balances("+9bd721c55c8a"));
}

#[test]
fn without_it_only_the_migration_cost_gates() {
    assert!(balances(""));
}
