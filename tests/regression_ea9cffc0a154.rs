// ea9cffc0a154 "sched/core: Remove the unnecessary need_resched() check in nohz_csd_func()"
// (v6.13; patch 1 of the 2024 nohz series).
// See: ea9cffc0a154
//
// Pins: `nohz_csd_func()` raises SCHED_SOFTIRQ whenever the kicked CPU is idle
// (docs/kernel-model.md §2.8, F7, §5.1). In v6.10 it also required `!need_resched()`, which a
// kick delivered to a polling idle CPU makes true only to deliver the csd (race R1): the kick
// is silently lost and the idle CPUs are filled only by their own newidle balances. With the
// patch alone (the state in which the series was traced), the raise comes from the idle
// task's flush, so `raise_softirq_irqoff()` wakes ksoftirqd (fixed by e932c4ab38f0), and
// `_nohz_idle_balance()` aborts on the NEED_RESCHED (fixed by ff47a0acfcce). With the whole
// series (v6.13) the kicked CPU balances the other idle CPUs on their behalf.
//
// Setup (support::ilb_polling_spec): spinners started on CPU 0 of smp-4 with C2 off; CPU 1
// is the idle load balancer and polls.

mod support;

use schedsim::linux::engine::Frame;
use schedsim::linux::kernel::sched::core::nohz_csd_func;
use schedsim::linux::kernel::sched::{idle_cpu, NOHZ_BALANCE_KICK, NOHZ_STATS_KICK, TIF_NEED_RESCHED};
use schedsim::linux::kernel::softirq::SCHED_SOFTIRQ;
use schedsim::linux::preempt::HARDIRQ_OFFSET;
use schedsim::linux::Kernel;
use schedsim::run::{build, execute, RunResult};
use schedsim::trace::{flags, Event};
use support::*;

/// Scenario checks shared by every run of the setup: kicks were sent, the first to CPU 1, and
/// every one was notified by polling.
fn polling_kicks(r: &RunResult) -> Vec<Kick> {
    let ks = kicks(&r.trace);
    assert!(!ks.is_empty(), "{}: scenario: no ILB kick", r.kernel_label);
    assert_eq!(ks[0].target, ILB_CPU, "{}: scenario: first kick {:?}", r.kernel_label, ks[0]);
    for k in &ks {
        assert!(k.polling && !k.ipi, "{}: scenario: kick {k:?} was not a polling delivery", r.kernel_label);
    }
    assert_eq!(r.stats.nohz_kicks as usize, ks.len());
    ks
}

#[test]
fn v6_10_a_kick_delivered_by_polling_is_lost() {
    let r = ilb_polling_run("v6.10", "", false);
    let ks = polling_kicks(&r);
    let runs = nohz_csd_runs(&r.trace);
    assert!(!runs.is_empty(), "no CPU ever ran nohz_csd_func");
    for &i in &runs {
        assert_eq!(r.trace[i].pid, 0, "a polling delivery runs the csd in the idle task");
        assert!(!has_flag(&r.trace[i], flags::HARDIRQ));
        assert!(has_flag(&r.trace[i], flags::NEED_RESCHED), "the NEED_RESCHED of the delivery is visible");
    }
    let s = &r.stats;
    assert!(s.nohz_kicks_lost > 0);
    assert_eq!(s.nohz_kicks_lost as usize, runs.len(), "every delivered kick is lost");
    assert_eq!(s.nohz_kicks_raised_softirq, 0, "no polling delivery may raise SCHED_SOFTIRQ: {} kicks", ks.len());
    assert_eq!(s.nohz_balances, 0);
    assert!(
        !r.trace.iter().any(|x| matches!(x.event, Event::SoftirqRaise { .. }) && !has_flag(x, flags::HARDIRQ)),
        "no softirq may be raised outside the tick"
    );
    // The idle CPUs were filled only by their own newidle balances: each pull was made by
    // the CPU that received the task, never by the ILB on another CPU's behalf.
    let m = migrations(&r.trace);
    assert!(!m.is_empty(), "scenario: nothing was ever pulled off CPU {ILB_BUSY_CPU}");
    for (i, by, _, _, dest) in m {
        assert_eq!(by, dest, "#{i}: a pull on behalf of another CPU without a working ILB");
    }
}

#[test]
fn with_the_patch_a_polling_kick_raises_sched_softirq_wakes_ksoftirqd_and_aborts() {
    let r = ilb_polling_run("v6.10", "+ea9cffc0a154", false);
    polling_kicks(&r);
    let s = &r.stats;
    let runs = nohz_csd_runs(&r.trace);
    assert!(s.nohz_kicks_raised_softirq > 0);
    assert_eq!(s.nohz_kicks_lost, 0);
    assert_eq!(s.nohz_kicks_raised_softirq as usize, runs.len(), "every delivered kick raises");
    assert!(s.ksoftirqd_wakeups > 0, "raise_softirq_irqoff() from the idle task wakes ksoftirqd");
    assert!(s.nohz_balances > 0);
    assert!(s.nohz_balance_aborts > 0, "_nohz_idle_balance() aborts on the spurious NEED_RESCHED");
    // The first kick finds CPUs 2 and 3 idle: its pass aborts at CPU 2, the first it visits.
    let first = nohz_csd_runs(&r.trace)[0];
    let exit = find_from(&r.trace, first, |x| {
        x.cpu == ILB_CPU && matches!(x.event, Event::SoftirqExit { vec } if vec == SCHED_SOFTIRQ)
    })
    .expect("the kick's SCHED_SOFTIRQ ran");
    assert!(!migrations(&r.trace[first..exit]).iter().any(|m| m.1 == ILB_CPU), "the aborted pass moved nothing");
    // No pass ever balanced another CPU: every pull was made by the CPU that got the task.
    for (i, by, _, _, dest) in migrations(&r.trace) {
        assert_eq!(by, dest, "#{i}: a pull on behalf of another CPU");
    }
}

/// The sequence on the ILB CPU after a kick, as traced by the series' authors with patch 1
/// only: the raise in the idle task, the wakeup of ksoftirqd/1, SCHED_SOFTIRQ run by the
/// idle task's `do_softirq()`, then a switch to ksoftirqd (which finds nothing to do) and back.
#[test]
fn with_the_patch_alone_the_ilb_cpu_wakes_ksoftirqd_and_switches_to_it() {
    let r = ilb_polling_run("v6.10", "+ea9cffc0a154", false);
    let t = &r.trace;
    let runs = nohz_csd_runs(t);
    assert!(!runs.is_empty());
    assert_eq!(t[runs[0]].cpu, ILB_CPU);
    for &i in &runs {
        let ilb = t[i].cpu;
        let ksoftirqd = ksoftirqd_pid(&r, ilb);
        let ctx = || render(&t[i..], &[ilb], 20);
        let raise = find_from(t, i, |x| is_softirq_raise(x, ilb, SCHED_SOFTIRQ))
            .unwrap_or_else(|| panic!("no softirq_raise vec=7:\n{}", ctx()));
        assert_eq!(t[raise].pid, 0, "raised in the idle task:\n{}", ctx());
        assert!(!has_flag(&t[raise], flags::HARDIRQ), "raised outside hardirq:\n{}", ctx());
        let waking = find_from(t, raise, |x| is_waking(x, ilb, ksoftirqd))
            .unwrap_or_else(|| panic!("no sched_waking of ksoftirqd/{ilb}:\n{}", ctx()));
        let wakeup = find_from(t, waking, |x| is_wakeup(x, ilb, ksoftirqd))
            .unwrap_or_else(|| panic!("no sched_wakeup of ksoftirqd/{ilb}:\n{}", ctx()));
        let entry = find_from(t, wakeup, |x| is_softirq_entry(x, ilb, SCHED_SOFTIRQ))
            .unwrap_or_else(|| panic!("no softirq_entry vec=7:\n{}", ctx()));
        assert_eq!(t[entry].pid, 0, "SCHED_SOFTIRQ runs in the idle task before ksoftirqd:\n{}", ctx());
        let to = find_from(t, entry, |x| is_switch(x, ilb)).expect("a switch after the softirq");
        assert!(is_switch_between(&t[to], ilb, 0, ksoftirqd), "switch to ksoftirqd:\n{}", ctx());
        let back = find_from(t, to + 1, |x| is_switch(x, ilb)).expect("a switch away from ksoftirqd");
        match t[back].event {
            Event::SchedSwitch { prev_pid, prev_state, .. } => {
                assert_eq!(prev_pid, ksoftirqd, "{}", ctx());
                assert_eq!(prev_state, 1, "ksoftirqd went back to sleep (S):\n{}", ctx());
            }
            _ => unreachable!(),
        }
        // Nothing but the idle task's own softirq ran the vector: ksoftirqd found it done.
        assert!(
            !t[to..back].iter().any(|x| is_softirq_entry(x, ilb, SCHED_SOFTIRQ)),
            "ksoftirqd ran SCHED_SOFTIRQ again:\n{}",
            ctx()
        );
    }
}

#[test]
fn v6_13_the_ilb_fills_the_idle_cpus_on_their_behalf() {
    let new = ilb_polling_run("v6.13", "", false);
    let old = ilb_polling_run("v6.10", "", false);
    polling_kicks(&new);
    let s = &new.stats;
    assert!(s.nohz_kicks_raised_softirq > 0 && s.nohz_kicks_lost == 0);
    assert_eq!(s.nohz_balance_aborts, 0);
    assert_eq!(s.ksoftirqd_wakeups, 0);
    let m = migrations(&new.trace);
    let on_behalf: Vec<_> = m.iter().filter(|(_, by, _, _, dest)| *by == ILB_CPU && *dest != ILB_CPU).collect();
    assert_eq!(on_behalf.len(), 2, "the ILB pulled one spinner onto each other idle CPU: {m:?}");
    for (i, _, _, orig, _) in &on_behalf {
        assert_eq!(*orig, ILB_BUSY_CPU);
        assert_eq!(new.trace[*i].pid, 0, "pulled from the idle task's SCHED_SOFTIRQ");
        assert!(has_flag(&new.trace[*i], flags::SOFTIRQ), "pulled in softirq context");
    }
    let fill = |r: &RunResult| spinners_of(r).time_to_fill_ns().expect("filled");
    let tick = 4_000_000; // smp-4: HZ=250
    assert!(fill(&new) < tick, "v6.13 fills the machine at the first kick: {} ns", fill(&new));
    assert!(fill(&old) > fill(&new), "v6.10 fills later, by newidle only: {} vs {} ns", fill(&old), fill(&new));
}

/// With patch 1 alone, ksoftirqd woken on the ILB CPU makes it non-idle. When no other CPU of
/// `nohz.idle_cpus_mask` is idle either, `_nohz_idle_balance()` skips every CPU — the ILB
/// CPU included, since its loop tests `idle_cpu()` for each CPU of the mask — and ends
/// without balancing or aborting: Julia Lawall's trace of the series ("searching for a cpu"
/// printed, "found an idle cpu" never, "because the ksoftirqd on the core's runqueue makes
/// the core not idle").
#[test]
fn patch_1_alone_an_ilb_cpu_made_busy_by_ksoftirqd_is_skipped_by_its_own_pass() {
    // Spinners: two on CPU 0, one each on CPUs 2 and 3; CPU 1 is the only idle CPU.
    let r = execute(&ilb_polling_spec("v6.10", "+ea9cffc0a154", 4, "0,2,3", false)).expect("valid spec");
    assert!(r.finished);
    polling_kicks(&r);
    let s = &r.stats;
    assert!(s.nohz_balances > 0, "scenario: a nohz pass ran: {s:?}");
    assert!(s.ksoftirqd_wakeups > 0, "scenario: ksoftirqd was woken");
    assert_eq!(
        s.nohz_balance_aborts, 0,
        "no CPU of the pass was idle (the ILB CPU had ksoftirqd queued), so the need_resched() test was never reached"
    );
}

// ---------------------------------------------------------------------------------------
// nohz_csd_func() itself
// ---------------------------------------------------------------------------------------

/// An smp-4 kernel whose CPUs idle; CPU 1 holds a kick.
fn kicked(patches: &str) -> schedsim::run::RunWorld {
    let mut k = build(&idle_spec("smp-4", "v6.10", patches)).expect("valid spec");
    run_until(&mut k, 10_000_000);
    assert!(idle_cpu(&k, ILB_CPU));
    k.cpus[ILB_CPU as usize].rq.nohz_flags = NOHZ_STATS_KICK | NOHZ_BALANCE_KICK;
    k
}

fn set_nr(k: &mut Kernel) {
    let idle = k.cpus[ILB_CPU as usize].rq.idle;
    k.tasks[idle as usize].ti_flags |= TIF_NEED_RESCHED;
}

fn sched_pending(k: &Kernel) -> bool {
    k.cpus[ILB_CPU as usize].softirq_pending & (1 << SCHED_SOFTIRQ) != 0
}

#[test]
fn nohz_csd_func_with_the_spurious_need_resched_of_a_polling_delivery() {
    // v6.10: NEED_RESCHED (set only to deliver the csd) loses the kick.
    let mut k = kicked("");
    set_nr(&mut k);
    let (_, wake) = nohz_csd_func(&mut k, ILB_CPU);
    assert!(wake.is_none());
    assert_eq!((k.stats.nohz_kicks_lost, k.stats.nohz_kicks_raised_softirq), (1, 0));
    assert!(!sched_pending(&k));
    assert_eq!(k.cpus[ILB_CPU as usize].rq.nohz_idle_balance, 0);
    assert_eq!(k.cpus[ILB_CPU as usize].rq.nohz_flags, 0, "the kick bits are released either way");

    // With the patch: raised (from task context: raise_softirq_irqoff() wakes ksoftirqd).
    let mut k = kicked("+ea9cffc0a154");
    set_nr(&mut k);
    let (_, wake) = nohz_csd_func(&mut k, ILB_CPU);
    assert_eq!((k.stats.nohz_kicks_lost, k.stats.nohz_kicks_raised_softirq), (0, 1));
    assert!(sched_pending(&k));
    assert_eq!(k.cpus[ILB_CPU as usize].rq.nohz_idle_balance, NOHZ_STATS_KICK | NOHZ_BALANCE_KICK);
    assert!(matches!(wake, Some(Frame::TryToWakeUp(_))), "{wake:?}");
}

#[test]
fn nohz_csd_func_from_a_real_ipi_raises_in_both() {
    for patches in ["", "+ea9cffc0a154"] {
        let mut k = kicked(patches);
        k.cpus[ILB_CPU as usize].preempt_count += HARDIRQ_OFFSET;
        let (_, wake) = nohz_csd_func(&mut k, ILB_CPU);
        assert!(wake.is_none(), "{patches}: hardirq context never wakes ksoftirqd");
        assert_eq!(k.stats.nohz_kicks_raised_softirq, 1, "{patches}");
        assert!(sched_pending(&k), "{patches}");
    }
}

#[test]
fn nohz_csd_func_with_a_genuine_wakeup_pending_is_lost_in_both() {
    // A genuine wakeup makes idle_cpu() false (ttwu_pending, §2.6 invariant (a)), so the patch
    // still drops the kick there.
    for patches in ["", "+ea9cffc0a154"] {
        let mut k = kicked(patches);
        set_nr(&mut k);
        k.cpus[ILB_CPU as usize].rq.ttwu_pending = true;
        schedsim::linux::kernel::sched::group_sums::rq_changed(&mut k, ILB_CPU);
        let (_, wake) = nohz_csd_func(&mut k, ILB_CPU);
        assert!(wake.is_none(), "{patches}");
        assert_eq!((k.stats.nohz_kicks_lost, k.stats.nohz_kicks_raised_softirq), (1, 0), "{patches}");
        assert!(!k.cpus[ILB_CPU as usize].rq.idle_balance, "{patches}");
        assert!(!sched_pending(&k), "{patches}");
    }
}
