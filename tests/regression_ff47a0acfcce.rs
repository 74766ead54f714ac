// ff47a0acfcce "sched/fair: Check idle_cpu() before need_resched() to detect ilb CPU turning
// busy" (v6.13; part of the 2024 nohz series).
// See: ff47a0acfcce
//
// Pins: `_nohz_idle_balance()` gives up its pass over the idle CPUs only if the ILB CPU
// really turned busy, `!idle_cpu(this_cpu) && need_resched()`, instead of on a bare
// `need_resched()` (docs/kernel-model.md §2.8, F7 step 5, §5.1). Once ea9cffc0a154 lets a
// kick delivered by polling raise SCHED_SOFTIRQ, the softirq runs in the idle task with the
// NEED_RESCHED that delivered the kick still set, so without this patch every such pass
// aborts at the first idle CPU it visits; with it the pass balances the idle CPUs on their
// behalf. A genuine wakeup of the ILB CPU (ttwu_pending or nr_running, plus NEED_RESCHED)
// still aborts.
//
// Setup (support::ilb_polling_spec): spinners started on CPU 0 of smp-4 with C2 off; CPU 1
// is the idle load balancer and polls. e932c4ab38f0 is applied in both variants so that no
// ksoftirqd wakeup makes the ILB CPU busy.

mod support;

use schedsim::linux::engine::Next;
use schedsim::linux::kernel::sched::fair::{sched_balance_softirq, SchedBalanceSoftirq};
use schedsim::linux::kernel::sched::{idle_cpu, NOHZ_BALANCE_KICK, NOHZ_STATS_KICK, TIF_NEED_RESCHED};
use schedsim::run::{build, RunResult};
use schedsim::trace::flags;
use support::*;

const WITHOUT: &str = "+ea9cffc0a154,+e932c4ab38f0";
const WITH: &str = "+ea9cffc0a154,+e932c4ab38f0,+ff47a0acfcce";

fn run(patches: &str) -> RunResult {
    let r = ilb_polling_run("v6.10", patches, false);
    let ks = kicks(&r.trace);
    assert!(!ks.is_empty(), "{patches}: scenario: no ILB kick");
    assert!(ks.iter().all(|k| k.polling), "{patches}: scenario: every kick by polling: {ks:?}");
    assert_eq!(r.stats.ksoftirqd_wakeups, 0, "{patches}: scenario: e932c4ab38f0 keeps ksoftirqd asleep");
    r
}

#[test]
fn without_the_patch_every_pass_aborts_on_the_spurious_need_resched() {
    let r = run(WITHOUT);
    let s = &r.stats;
    assert!(s.nohz_balances > 0, "scenario: SCHED_SOFTIRQ ran the nohz pass");
    assert_eq!(s.nohz_balance_aborts, s.nohz_balances, "every pass aborts");
    // So no task is ever pulled on another CPU's behalf: each idle CPU fills itself (newidle).
    for (i, by, _, _, dest) in migrations(&r.trace) {
        assert_eq!(by, dest, "#{i}: a pull on behalf of another CPU although every pass aborted");
    }
}

#[test]
fn with_the_patch_the_pass_runs_and_fills_the_idle_cpus() {
    let r = run(WITH);
    let s = &r.stats;
    assert!(s.nohz_balances > 0);
    assert_eq!(s.nohz_balance_aborts, 0, "no abort without a genuine wakeup of the ILB CPU");
    let m = migrations(&r.trace);
    let on_behalf: Vec<_> = m.iter().filter(|(_, by, _, _, dest)| *by == ILB_CPU && *dest != ILB_CPU).collect();
    assert_eq!(on_behalf.len(), 2, "one spinner pulled onto each other idle CPU: {m:?}");
    for (i, ..) in on_behalf {
        assert_eq!(r.trace[*i].pid, 0, "by the idle task's SCHED_SOFTIRQ");
        assert!(has_flag(&r.trace[*i], flags::SOFTIRQ));
    }
    let without = run(WITHOUT);
    let fill = |r: &RunResult| spinners_of(r).time_to_fill_ns().expect("filled");
    assert!(fill(&r) < fill(&without), "with {} ns, without {} ns", fill(&r), fill(&without));
}

// ---------------------------------------------------------------------------------------
// The abort test itself
// ---------------------------------------------------------------------------------------

/// One whole `sched_balance_softirq()` on CPU 1 of an idle smp-4 (every CPU idle, tickless and
/// in `nohz.idle_cpus_mask`), as after a kick. `nr`: NEED_RESCHED on CPU 1's idle task;
/// `pending`: a wakeup queued on CPU 1 (`ttwu_pending`). Returns (passes, aborts).
fn one_pass(patches: &str, nr: bool, pending: bool) -> (u64, u64) {
    let mut k = build(&idle_spec("smp-4", "v6.10", patches)).expect("valid spec");
    run_until(&mut k, 10_000_000);
    for c in 0..4 {
        assert!(k.nohz.idle_cpus_mask.test(c) && idle_cpu(&k, c), "scenario: CPU {c} idle and tickless");
    }
    let ilb = ILB_CPU as usize;
    k.cpus[ilb].rq.idle_balance = true;
    k.cpus[ilb].rq.nohz_idle_balance = NOHZ_STATS_KICK | NOHZ_BALANCE_KICK;
    if nr {
        let idle = k.cpus[ilb].rq.idle;
        k.tasks[idle as usize].ti_flags |= TIF_NEED_RESCHED;
    }
    k.cpus[ilb].rq.ttwu_pending = pending;
    schedsim::linux::kernel::sched::group_sums::rq_changed(&mut k, ilb as u32);
    let mut s = SchedBalanceSoftirq::default();
    for _ in 0..64 {
        match sched_balance_softirq(&mut k, ILB_CPU, &mut s) {
            Next::Ret(_) => return (k.stats.nohz_balances, k.stats.nohz_balance_aborts),
            Next::Cont(_) => {}
            other => panic!("unexpected {other:?}"),
        }
    }
    panic!("the pass did not end");
}

#[test]
fn abort_rule_without_the_patch_is_a_bare_need_resched() {
    assert_eq!(one_pass(WITHOUT, false, false), (1, 0), "nothing to abort for");
    assert_eq!(one_pass(WITHOUT, true, false), (1, 1), "the spurious NEED_RESCHED of a polling kick aborts");
    assert_eq!(one_pass(WITHOUT, true, true), (1, 1), "a genuine wakeup aborts");
    assert_eq!(one_pass(WITHOUT, false, true), (1, 0), "no NEED_RESCHED yet: the pass goes on");
}

#[test]
fn abort_rule_with_the_patch_needs_the_ilb_cpu_to_be_busy() {
    assert_eq!(one_pass(WITH, false, false), (1, 0));
    assert_eq!(one_pass(WITH, true, false), (1, 0), "NEED_RESCHED on an idle CPU is not a reason to stop");
    assert_eq!(one_pass(WITH, true, true), (1, 1), "a genuine wakeup (ttwu_pending + NEED_RESCHED) aborts");
    assert_eq!(one_pass(WITH, false, true), (1, 0), "busy but no NEED_RESCHED: the pass goes on");
}
