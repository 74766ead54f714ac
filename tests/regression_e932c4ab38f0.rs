// e932c4ab38f0 "sched/core: Prevent wakeup of ksoftirqd during idle load balance" (v6.13;
// part of the 2024 nohz series, replacing the will_do_softirq_post_flush RFC).
// See: e932c4ab38f0
//
// Pins: `nohz_csd_func()` raises SCHED_SOFTIRQ with `__raise_softirq_irqoff()`
// (docs/kernel-model.md §2.3, F7, F9, §5.1). The csd runs either in hardirq (softirqs run at
// irq_exit) or in the idle task's `flush_smp_call_function_queue()` (which calls
// `do_softirq_post_smp_call_flush()`), so nobody needs ksoftirqd. With ea9cffc0a154 alone a
// kick delivered by polling runs the csd in the idle task, where `raise_softirq_irqoff()`
// sees no interrupt context and wakes ksoftirqd: the ILB CPU stops being idle and switches to
// a thread that finds nothing to do. With this patch SCHED_SOFTIRQ runs in the idle task and
// ksoftirqd stays asleep. The generic `raise_softirq_irqoff()` is unchanged.
//
// Setup (support::ilb_polling_spec): spinners started on CPU 0 of smp-4 with C2 off; CPU 1
// is the idle load balancer and polls.

mod support;

use schedsim::linux::engine::Frame;
use schedsim::linux::kernel::sched::core::nohz_csd_func;
use schedsim::linux::kernel::sched::{NOHZ_BALANCE_KICK, NOHZ_STATS_KICK};
use schedsim::linux::kernel::softirq::{raise_softirq_irqoff, SCHED_SOFTIRQ};
use schedsim::linux::preempt::HARDIRQ_OFFSET;
use schedsim::run::{build, RunResult};
use schedsim::trace::{flags, Event};
use support::*;

fn run(kernel: &str, patches: &str) -> RunResult {
    let r = ilb_polling_run(kernel, patches, false);
    let ks = kicks(&r.trace);
    assert!(!ks.is_empty(), "{kernel}{patches}: scenario: no ILB kick");
    assert!(ks.iter().all(|k| k.polling), "{kernel}{patches}: scenario: every kick by polling: {ks:?}");
    assert!(r.stats.nohz_kicks_raised_softirq > 0, "{kernel}{patches}: scenario: the kicks raise SCHED_SOFTIRQ");
    r
}

#[test]
fn without_the_patch_every_polling_kick_wakes_ksoftirqd() {
    let r = run("v6.10", "+ea9cffc0a154");
    let s = &r.stats;
    assert_eq!(s.ksoftirqd_wakeups, s.nohz_kicks_raised_softirq, "one ksoftirqd wakeup per raised kick");
    for &i in &nohz_csd_runs(&r.trace) {
        let cpu = r.trace[i].cpu;
        let k = ksoftirqd_pid(&r, cpu);
        let exit = find_from(&r.trace, i, |x| {
            x.cpu == cpu && matches!(x.event, Event::CsdFunctionExit { func: schedsim::trace::Sym::NohzCsdFunc, .. })
        })
        .expect("csd exit");
        assert!(
            r.trace[i..exit].iter().any(|x| is_waking(x, cpu, k)),
            "the csd woke ksoftirqd/{cpu}:\n{}",
            render(&r.trace[i..], &[cpu], 12)
        );
    }
}

/// The ILB CPU runs SCHED_SOFTIRQ in its idle task and ksoftirqd is never woken or run.
fn softirq_in_the_idle_task_without_ksoftirqd(r: &RunResult) {
    let t = &r.trace;
    assert_eq!(r.stats.ksoftirqd_wakeups, 0, "{}", r.kernel_label);
    let runs = nohz_csd_runs(t);
    assert!(!runs.is_empty());
    for &i in &runs {
        let cpu = t[i].cpu;
        let ctx = || render(&t[i..], &[cpu], 16);
        let raise = find_from(t, i, |x| is_softirq_raise(x, cpu, SCHED_SOFTIRQ))
            .unwrap_or_else(|| panic!("no softirq_raise vec=7:\n{}", ctx()));
        assert_eq!(t[raise].pid, 0, "raised in the idle task:\n{}", ctx());
        assert!(!has_flag(&t[raise], flags::HARDIRQ), "{}", ctx());
        let entry = find_from(t, raise, |x| is_softirq_entry(x, cpu, SCHED_SOFTIRQ))
            .unwrap_or_else(|| panic!("no softirq_entry vec=7:\n{}", ctx()));
        assert_eq!(t[entry].pid, 0, "SCHED_SOFTIRQ runs in the idle task:\n{}", ctx());
        assert!(!has_flag(&t[entry], flags::HARDIRQ), "{}", ctx());
        assert!(!t[raise..entry].iter().any(|x| is_switch(x, cpu)), "no switch in between:\n{}", ctx());
    }
    for c in 0..r.nr_cpus {
        let k = ksoftirqd_pid(r, c);
        assert!(
            !t.iter().any(|x| matches!(x.event, Event::SchedWaking { pid, .. } | Event::SchedSwitch { next_pid: pid, .. } if pid == k)),
            "{}: ksoftirqd/{c} was woken or run",
            r.kernel_label
        );
    }
}

#[test]
fn with_the_patch_sched_softirq_runs_in_the_idle_task_and_ksoftirqd_sleeps() {
    softirq_in_the_idle_task_without_ksoftirqd(&run("v6.10", "+ea9cffc0a154,+e932c4ab38f0"));
}

#[test]
fn v6_13_sched_softirq_runs_in_the_idle_task_and_ksoftirqd_sleeps() {
    softirq_in_the_idle_task_without_ksoftirqd(&run("v6.13", ""));
}

// ---------------------------------------------------------------------------------------
// nohz_csd_func() and the generic raise
// ---------------------------------------------------------------------------------------

fn kicked(patches: &str) -> schedsim::run::RunWorld {
    let mut k = build(&idle_spec("smp-4", "v6.10", patches)).expect("valid spec");
    run_until(&mut k, 10_000_000);
    k.cpus[ILB_CPU as usize].rq.nohz_flags = NOHZ_STATS_KICK | NOHZ_BALANCE_KICK;
    k
}

#[test]
fn nohz_csd_func_from_the_idle_task_wakes_ksoftirqd_only_without_the_patch() {
    let mut k = kicked("+ea9cffc0a154");
    let (_, wake) = nohz_csd_func(&mut k, ILB_CPU);
    assert!(matches!(wake, Some(Frame::TryToWakeUp(_))), "{wake:?}");

    let mut k = kicked("+ea9cffc0a154,+e932c4ab38f0");
    let (_, wake) = nohz_csd_func(&mut k, ILB_CPU);
    assert!(wake.is_none(), "__raise_softirq_irqoff() only sets the bit: {wake:?}");
    assert_ne!(k.cpus[ILB_CPU as usize].softirq_pending & (1 << SCHED_SOFTIRQ), 0);
    assert_eq!(k.stats.nohz_kicks_raised_softirq, 1);
}

#[test]
fn nohz_csd_func_in_hardirq_never_wakes_ksoftirqd() {
    for patches in ["+ea9cffc0a154", "+ea9cffc0a154,+e932c4ab38f0"] {
        let mut k = kicked(patches);
        k.cpus[ILB_CPU as usize].preempt_count += HARDIRQ_OFFSET;
        let (_, wake) = nohz_csd_func(&mut k, ILB_CPU);
        assert!(wake.is_none(), "{patches}");
        assert_ne!(k.cpus[ILB_CPU as usize].softirq_pending & (1 << SCHED_SOFTIRQ), 0, "{patches}");
    }
}

#[test]
fn the_generic_raise_from_task_context_still_wakes_ksoftirqd() {
    let mut k = kicked("+ea9cffc0a154,+e932c4ab38f0");
    let wake = raise_softirq_irqoff(&mut k, ILB_CPU, SCHED_SOFTIRQ);
    assert!(matches!(wake, Some(Frame::TryToWakeUp(_))), "only nohz_csd_func changed: {wake:?}");
}
