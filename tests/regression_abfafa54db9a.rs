// abfafa54db9a "sched: Reduce overestimating rq->avg_idle" (v3.13).
// See: abfafa54db9a
//
// Pins: the `avg_idle` sample taken when a wakeup ends an idle period (`ttwu_do_activate()`).
// With the patch a long idle period is averaged in (avg += (sample - avg) / 8) and the result
// capped at 2 * max_idle_balance_cost; without it (v3.8) a sample above 2 *
// sysctl_sched_migration_cost (1 ms) sets `avg_idle` to 1 ms at once.

mod support;

use schedsim::linux::kernel::sched::core::{raw_spin_rq_lock, raw_spin_rq_unlock, ttwu_do_activate};
use schedsim::run::build;
use support::*;

/// Wake a sleeper onto idle CPU 1 after it has been idle 5 ms with `avg_idle` 100 us.
fn avg_idle_after(kernel: &str, patches: &str) -> u64 {
    let mut k = build(&idle_spec("i7-4c8t", kernel, patches)).expect("valid spec");
    run_until(&mut k, 10_000_000);
    let cpu = 1;
    let p = sleeper(&mut k, "wakee", cpu, Some(cpu));
    raw_spin_rq_lock(&mut k, 0, cpu).expect("uncontended");
    let rq = &mut k.cpus[cpu as usize].rq;
    rq.clock = 20_000_000;
    rq.idle_stamp = 15_000_000;
    rq.avg_idle = 100_000;
    ttwu_do_activate(&mut k, 0, cpu, p, 0);
    raw_spin_rq_unlock(&mut k, 0, cpu);
    k.cpus[cpu as usize].rq.avg_idle
}

#[test]
fn with_the_patch_a_long_idle_period_is_averaged_in() {
    // 100 us + (5 ms - 100 us) / 8 = 712.5 us, under the 1 ms cap.
    assert_eq!(avg_idle_after("v6.10", ""), 712_500);
    assert_eq!(avg_idle_after("v3.8", "+abfafa54db9a"), 712_500);
}

#[test]
fn without_it_a_long_idle_period_sets_the_cap() {
    assert_eq!(avg_idle_after("v6.10", "-abfafa54db9a"), 1_000_000);
    assert_eq!(avg_idle_after("v3.8", ""), 1_000_000);
}
