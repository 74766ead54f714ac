//! Scenario tests of one waiting `smp_call_function_single()` to an idle CPU
//! (docs/kernel-model.md §3 flows F4 and F5; §2.1, §2.2, §2.4, §2.5).
//!
//! The ipistorm thread runs on `SENDER` and calls `TARGET` (same LLC on smp-4). The sender is
//! CPU 2, not CPU 0: the module init that wakes the thread is modelled as running on CPU 0,
//! and a thread bound to CPU 0 is not started promptly (see
//! `module_init_starts_a_thread_bound_to_cpu0_promptly` below), which would only blur these
//! scenarios. `delay=100` makes the thread sleep after its call, so the run goes on long
//! enough for the target to settle back into an idle state.

mod support;

use schedsim::linux::engine::Phase;
use schedsim::run::{build, execute, RunResult};
use schedsim::trace::{flags, Event, Sym, Vector};
use support::*;

const SENDER: u32 = 2;
const TARGET: u32 = 3;
const ONE_CALL: &[&str] = &["numipi=1", "single=1", "offset=1", "cpulist=2", "delay=100"];

fn one_call(kernel: &str, patches: &str, c2: bool) -> RunResult {
    let spec = ipistorm_spec("smp-4", kernel, patches, ONE_CALL, Some(c2), true);
    let r = execute(&spec).expect("valid spec");
    assert!(r.finished, "the single call did not complete");
    assert_eq!(ipistorm(&r).calls(), 1);
    r
}

fn idle_kind_polls(state: u32) -> bool {
    let m = schedsim::hw::preset("smp-4").expect("preset");
    m.idle_states[state as usize].kind.is_polling()
}

/// The queueing of the call on the sender (the only `csd_queue_cpu` to the target).
fn the_queue(r: &RunResult) -> usize {
    let q = positions(&r.trace, |x| is_csd_queue(x, SENDER, TARGET));
    assert_eq!(
        q.len(),
        1,
        "expected exactly one csd_queue_cpu to CPU {TARGET}:\n{}",
        render(&r.trace, &[SENDER, TARGET], 80)
    );
    q[0]
}

/// F4 (v6.10): the target polls (C2 disabled, so it sits in C1 MWAIT). The sender only sets
/// NEED_RESCHED; the target wakes on the monitored line, leaves the idle loop, runs the
/// function from the task-context flush, goes through `schedule_idle()` without switching and
/// re-enters an idle state.
#[test]
fn call_to_polling_idle_cpu_sends_no_ipi_and_runs_from_idle_exit() {
    let r = one_call("v6.10", "", false);
    let t = &r.trace;
    let ctx = || render(t, &[SENDER, TARGET], 80);
    assert_eq!(r.stats.ipis_sent, 0, "a polling target needs no CALL_FUNCTION_SINGLE IPI");
    let q = the_queue(&r);
    let st = idle_state_before(t, TARGET, q).expect("the target was in an idle state");
    assert!(idle_kind_polls(st), "scenario: the target must sit in a polling state, was in state {st}");

    let without_ipi = positions(t, |x| is_wake_without_ipi(x, TARGET));
    assert_eq!(without_ipi.len(), 1, "one sched_wake_idle_without_ipi for CPU {TARGET}:\n{}", ctx());
    assert!(without_ipi[0] > q && t[without_ipi[0]].cpu == SENDER, "recorded by the sender after queueing:\n{}", ctx());
    assert!(!t.iter().any(|x| is_cfs_ipi_send(x, TARGET)), "no ipi_send_cpu to the target:\n{}", ctx());

    // The target's sequence after the queueing.
    let exit = find_from(t, q, |x| is_idle_exit(x, TARGET))
        .unwrap_or_else(|| panic!("target never left its idle state:\n{}", ctx()));
    let entry = find_from(t, exit, |x| is_csd_entry(x, TARGET, Sym::DoNothingIpi))
        .unwrap_or_else(|| panic!("no csd_function_entry:\n{}", ctx()));
    let fexit = find_from(t, entry, |x| is_csd_exit(x, TARGET, Sym::DoNothingIpi))
        .unwrap_or_else(|| panic!("no csd_function_exit:\n{}", ctx()));
    let back = find_from(t, fexit, |x| is_idle_enter(x, TARGET))
        .unwrap_or_else(|| panic!("target never went back into cpu_idle:\n{}", ctx()));
    assert!(q < exit && exit < entry && entry < fexit && fexit < back);
    assert!(t[q].ts_ns <= t[exit].ts_ns && t[exit].ts_ns <= t[entry].ts_ns && t[fexit].ts_ns <= t[back].ts_ns);

    // The function ran in task context (the idle task's flush), not from an interrupt, with
    // the NEED_RESCHED the sender set still visible; no interrupt came in between.
    assert!(!has_flag(&t[entry], flags::HARDIRQ), "csd ran in hardirq:\n{}", ctx());
    assert!(has_flag(&t[entry], flags::NEED_RESCHED), "the target should see NEED_RESCHED:\n{}", ctx());
    assert!(has_flag(&t[entry], flags::IRQS_OFF), "flush_smp_call_function_queue() runs with IRQs off:\n{}", ctx());
    assert_eq!(t[entry].pid, 0, "the idle task runs the function");
    assert!(
        !t[q..back].iter().any(|x| x.cpu == TARGET && matches!(x.event, Event::VectorEntry { .. })),
        "no interrupt on the target:\n{}",
        ctx()
    );
    // v6.10: schedule_idle() picks the idle task again: no context switch on the target.
    assert!(!t.iter().any(|x| is_switch(x, TARGET)), "no sched_switch on the target:\n{}", ctx());
    assert_eq!(ipistorm(&r).calls_polling, 1);
}

/// F5: the target sits in C2 (I/O-port, POLL clear). The sender must send a real
/// CALL_FUNCTION_SINGLE IPI; the function runs in the interrupt handler and the target never
/// leaves the inner idle loop (no idle exit, no flush from task context, no schedule_idle()).
#[test]
fn call_to_non_polling_idle_cpu_sends_one_ipi_handled_in_hardirq() {
    let r = one_call("v6.10", "", true);
    let t = &r.trace;
    let ctx = || render(t, &[SENDER, TARGET], 80);
    let q = the_queue(&r);
    let st = idle_state_before(t, TARGET, q).expect("the target was in an idle state");
    assert!(!idle_kind_polls(st), "scenario: the target must sit in a non-polling state, was in state {st}");

    assert_eq!(r.stats.ipis_sent, 1, "exactly one real IPI:\n{}", ctx());
    assert!(!t.iter().any(|x| is_wake_without_ipi(x, TARGET)), "no polling shortcut for a non-polling CPU:\n{}", ctx());
    let sends = positions(t, |x| is_cfs_ipi_send(x, TARGET));
    assert_eq!(sends.len(), 1, "{}", ctx());
    let send = sends[0];
    assert!(send > q && t[send].cpu == SENDER, "ipi_send_cpu is recorded by the sender after queueing:\n{}", ctx());

    let ventry = find_from(t, send, |x| is_vector_entry(x, TARGET, Vector::CallFunctionSingle))
        .unwrap_or_else(|| panic!("no call_function_single_entry:\n{}", ctx()));
    let entry = find_from(t, ventry, |x| is_csd_entry(x, TARGET, Sym::DoNothingIpi))
        .unwrap_or_else(|| panic!("no csd_function_entry:\n{}", ctx()));
    let fexit = find_from(t, entry, |x| is_csd_exit(x, TARGET, Sym::DoNothingIpi)).expect("csd_function_exit");
    let vexit = find_from(t, fexit, |x| is_vector_exit(x, TARGET, Vector::CallFunctionSingle))
        .expect("call_function_single_exit");
    let back = find_from(t, vexit, |x| is_idle_enter(x, TARGET))
        .unwrap_or_else(|| panic!("target never went back to sleep:\n{}", ctx()));
    assert!(ventry < entry && entry < fexit && fexit < vexit && vexit < back);
    for i in [ventry, entry, fexit, vexit] {
        assert!(has_flag(&t[i], flags::HARDIRQ), "record #{i} should be in hardirq context:\n{}", ctx());
        assert!(has_flag(&t[i], flags::IRQS_OFF), "record #{i} should have IRQs off:\n{}", ctx());
    }
    assert!(!has_flag(&t[entry], flags::NEED_RESCHED), "a real IPI sets no NEED_RESCHED:\n{}", ctx());

    // The target never left do_idle(): every csd it ran, it ran from the interrupt, and it
    // spent no time in the task-context flush, __schedule() or newidle balance.
    assert!(
        !t.iter().any(|x| x.cpu == TARGET
            && matches!(x.event, Event::CsdFunctionEntry { .. })
            && !has_flag(x, flags::HARDIRQ)),
        "a csd ran from task context:\n{}",
        ctx()
    );
    assert!(!t.iter().any(|x| is_switch(x, TARGET)), "no sched_switch on the target");
    let ph = &r.stats.phase_ns[TARGET as usize];
    assert_eq!(ph[Phase::Flush as usize], 0, "no task-context flush on the target");
    assert_eq!(ph[Phase::Schedule as usize], 0, "no schedule_idle() on the target");
    assert_eq!(ph[Phase::Newidle as usize], 0, "no newidle balance on the target");
    assert!(ph[Phase::HardIrq as usize] > 0);
    assert_eq!(ipistorm(&r).calls_ipi, 1);
}

/// Reverting b2a02fc43a1f: even a polling target gets a real IPI (kernel/smp.c before v5.8
/// always called `arch_send_call_function_single_ipi()`).
#[test]
fn revert_b2a02fc43a1f_sends_a_real_ipi_to_a_polling_cpu() {
    let r = one_call("v6.10", "-b2a02fc43a1f", false);
    let t = &r.trace;
    let ctx = || render(t, &[SENDER, TARGET], 80);
    let q = the_queue(&r);
    let st = idle_state_before(t, TARGET, q).expect("the target was in an idle state");
    assert!(idle_kind_polls(st), "scenario: the target must sit in a polling state, was in state {st}");
    assert_eq!(r.stats.ipis_sent, 1, "exactly one real IPI:\n{}", ctx());
    assert!(!t.iter().any(|x| is_wake_without_ipi(x, TARGET)), "{}", ctx());
    let send = find_from(t, q, |x| is_cfs_ipi_send(x, TARGET)).expect("ipi_send_cpu");
    let ventry = find_from(t, send, |x| is_vector_entry(x, TARGET, Vector::CallFunctionSingle))
        .expect("call_function_single_entry");
    let entry = find_from(t, ventry, |x| is_csd_entry(x, TARGET, Sym::DoNothingIpi)).expect("csd_function_entry");
    assert!(has_flag(&t[entry], flags::HARDIRQ), "{}", ctx());
    assert_eq!(ipistorm(&r).calls_ipi, 1);
    assert_eq!(ipistorm(&r).calls_polling, 0);
}

/// SM_IDLE (3dcac251b066, v6.12): the `schedule_idle()` that follows a polling CSD delivery
/// takes the fast path and runs no newidle balance; v6.10 goes through
/// `pick_next_task_fair()` -> `sched_balance_newidle()` for the same call.
#[test]
fn sm_idle_skips_newidle_balance_after_a_polling_call() {
    let per_kernel = |kernel: &str| {
        let spec = ipistorm_spec("smp-4", kernel, "", ONE_CALL, Some(false), true);
        let mut k = build(&spec).expect("valid spec");
        let per = run_attributed(&mut k, spec.limit_ns, 200_000);
        assert_eq!(ipistorm_of(&k).calls_polling, 1, "{kernel}: the call should take the polling path");
        assert_eq!(k.stats.ipis_sent, 0, "{kernel}");
        (per, k.stats.phase_ns[TARGET as usize])
    };
    let t = TARGET as usize;
    let (v610, ph610) = per_kernel("v6.10");
    let (v612, ph612) = per_kernel("v6.12");
    // Both leave the idle loop once and call schedule_idle() once for the call.
    assert_eq!((v610.idle_exits[t], v610.schedule_idle_calls[t]), (1, 1), "v6.10 target: {v610:?}");
    assert_eq!((v612.idle_exits[t], v612.schedule_idle_calls[t]), (1, 1), "v6.12 target: {v612:?}");
    assert!(v610.newidle_calls[t] >= 1, "v6.10: schedule_idle() runs a newidle balance: {v610:?}");
    assert!(ph610[Phase::Newidle as usize] > 0);
    assert_eq!(v612.newidle_calls[t], 0, "v6.12: SM_IDLE fast path, no newidle balance: {v612:?}");
    assert_eq!(ph612[Phase::Newidle as usize], 0);
    assert!(ph612[Phase::Schedule as usize] < ph610[Phase::Schedule as usize] + ph610[Phase::Newidle as usize]);
}

/// With TIF_NOTIFY_IPI, the polling target leaves the idle loop but does not call
/// `schedule_idle()` for a pure CSD, and the function runs without NEED_RESCHED set.
#[test]
fn tif_notify_ipi_polling_call_skips_schedule_idle() {
    let spec = ipistorm_spec("smp-4", "v6.10", "+rfc-tif-notify-ipi", ONE_CALL, Some(false), true);
    let mut k = build(&spec).expect("valid spec");
    let per = run_attributed(&mut k, spec.limit_ns, 200_000);
    let t = TARGET as usize;
    assert_eq!(k.stats.ipis_sent, 0);
    assert_eq!(per.idle_exits[t], 1, "{per:?}");
    assert_eq!(per.schedule_idle_calls[t], 0, "{per:?}");
    assert_eq!(per.newidle_calls[t], 0, "{per:?}");
    let tr = &k.trace.records;
    let entry = positions(tr, |x| is_csd_entry(x, TARGET, Sym::DoNothingIpi));
    assert_eq!(entry.len(), 1);
    let e = &tr[entry[0]];
    assert!(!has_flag(e, flags::HARDIRQ) && !has_flag(e, flags::NEED_RESCHED), "{}", render(tr, &[SENDER, TARGET], 60));
}

/// The module init wakes each thread with `wake_up_process()`; a thread bound to CPU 0 must
/// start as promptly as one bound to any other CPU (the CPU running the init is busy, not
/// asleep in an idle state, and sees the NEED_RESCHED it set at its next preemption point).
#[test]
fn module_init_starts_a_thread_bound_to_cpu0_promptly() {
    let start_delay = |cpulist: &str| {
        let cl = format!("cpulist={cpulist}");
        let spec = ipistorm_spec("smp-4", "v6.10", "", &["numipi=1", "single=1", "offset=1", &cl], Some(false), true);
        let mut k = build(&spec).expect("valid spec");
        let mut per = per_cpu(&k);
        // Stop at the first call, or 10 ms after boot at the latest.
        step_until(&mut k, 10_000_000, &mut per, |_, _, _| {}, |k| ipistorm_of(k).first_call_ns.is_some());
        let w = ipistorm_of(&k);
        let first = w
            .first_call_ns
            .unwrap_or_else(|| panic!("cpulist={cpulist}: the thread never ran (woken at {} ns)", w.load_ns));
        first - w.load_ns
    };
    let on_cpu2 = start_delay("2");
    let on_cpu0 = start_delay("0");
    assert!(on_cpu2 < 50_000, "a thread on CPU 2 starts {on_cpu2} ns after the module init");
    assert!(on_cpu0 < 50_000, "a thread on CPU 0 starts {on_cpu0} ns after the module init (CPU 2: {on_cpu2} ns)");
}

/// Every thread of the module issues its `numipi` calls before the run counts as finished.
#[test]
fn run_finishes_only_when_every_thread_has_made_its_calls() {
    for cpulist in ["0-1", "1-2", "0-3"] {
        let cl = format!("cpulist={cpulist}");
        let spec = ipistorm_spec("smp-4", "v6.10", "", &["numipi=5", "single=1", "offset=1", &cl], Some(false), false);
        let r = execute(&spec).expect("valid spec");
        let w = ipistorm(&r);
        let threads = w.threads.len() as u64;
        assert!(r.finished, "cpulist={cpulist}: run did not finish");
        assert_eq!(w.calls(), 5 * threads, "cpulist={cpulist}: {threads} threads x 5 calls, finished={}", r.finished);
    }
}
