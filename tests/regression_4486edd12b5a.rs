// 4486edd12b5a "sched/fair: Implement fast idling of CPUs when the system is partially
// loaded" (v3.17).
// See: 4486edd12b5a
//
// Pins: the `rd->overload` gate of the newidle balance, on the 3.8 `idle_balance()` (the
// v3.15+ placement always has it: 38033c37faab requires this row). With the patch a CPU
// going idle while no CPU has two runnable tasks does not balance; without it (v3.8) it does
// whenever `avg_idle` is above `sysctl_sched_migration_cost`.

mod support;

use schedsim::linux::engine::{local_irq_disable, Next};
use schedsim::linux::kernel::sched::core::{raw_spin_rq_lock, raw_spin_rq_unlock};
use schedsim::linux::kernel::sched::fair::{idle_balance, IdleBalance};
use schedsim::run::build;
use support::*;

/// Run the first step of `idle_balance()` on CPU 1 of a settled idle i7 (nothing overloaded)
/// with `avg_idle` 1 ms: true if the balance went past its gates.
fn balances(patches: &str) -> bool {
    let mut k = build(&idle_spec("i7-4c8t", "v3.8", patches)).expect("valid spec");
    run_until(&mut k, 5_000_000);
    let cpu = 1;
    k.cpus[cpu as usize].rq.avg_idle = 1_000_000;
    k.rd.overloaded = false;
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
fn with_the_patch_an_idle_cpu_skips_the_balance_when_nothing_is_overloaded() {
    assert!(!balances("+4486edd12b5a"));
}

#[test]
fn without_it_the_balance_runs() {
    assert!(balances(""));
}
