// RFC "sched: Introduce TIF_NOTIFY_IPI" (Gautham Shenoy / K Prateek Nayak, posted
// 2024-02-20; not merged).
// See: rfc-tif-notify-ipi
//
// Pins: a CSD for a polling idle CPU sets TIF_NOTIFY_IPI instead of TIF_NEED_RESCHED
// (`notify_ipi_if_polling()`); the idle loops leave on `need_resched_or_ipi()`, `do_idle()`
// clears NOTIFY_IPI, flushes the queue and calls `schedule_idle()` only for a real
// NEED_RESCHED (docs/kernel-model.md §5.2, F4 "⇒ TIF_NOTIFY_IPI RFC"). So pure CSD wakeups
// leave the idle loop (idle_exits is large) but never enter `__schedule()`
// (schedule_idle_calls stays ~0).

mod support;

use schedsim::linux::engine::Phase;
use schedsim::linux::kernel::sched::core::call_function_single_prep_ipi;
use schedsim::linux::kernel::sched::{
    need_resched, need_resched_or_ipi, TIF_NEED_RESCHED, TIF_NOTIFY_IPI, TIF_POLLING_NRFLAG,
};
use schedsim::run::{build, execute};
use schedsim::trace::{flags, Sym};
use support::*;

const TARGET: u32 = 16;
const STORM: &[&str] = &["numipi=1000", "single=1", "offset=8", "cpulist=8"];

#[test]
fn pure_csd_wakeups_do_not_call_schedule_idle() {
    let spec = ipistorm_spec("epyc-7763-2s", "v6.10", "+rfc-tif-notify-ipi", STORM, None, false);
    let mut k = build(&spec).expect("valid spec");
    let per = run_attributed(&mut k, spec.limit_ns, 0);
    let t = TARGET as usize;
    let w = ipistorm_of(&k);
    assert_eq!(w.calls(), 1000);
    assert!(w.calls_polling > 0, "scenario: some calls must take the polling path");
    // The sender CPU calls schedule_idle() once, when its kthread is woken. (Other CPUs may:
    // an idle-load-balancer kick from the sender's busy tick can wake ksoftirqd there.)
    assert!(per.schedule_idle_calls[8] <= 1, "{per:?}");
    assert!(k.stats.idle_exits >= w.calls_polling, "idle_exits = {}", k.stats.idle_exits);
    assert_eq!(per.schedule_idle_calls[t], 0, "{per:?}");
    assert!(per.idle_exits[t] >= w.calls_polling, "{per:?}");
    assert_eq!(per.newidle_calls[t], 0);
    assert_eq!(k.stats.phase_ns[t][Phase::Schedule as usize], 0, "the target never entered __schedule()");
}

#[test]
fn without_the_rfc_every_idle_exit_calls_schedule_idle() {
    let spec = ipistorm_spec("epyc-7763-2s", "v6.10", "", STORM, None, false);
    let mut k = build(&spec).expect("valid spec");
    let per = run_attributed(&mut k, spec.limit_ns, 100_000);
    let t = TARGET as usize;
    assert!(per.idle_exits[t] > 0);
    assert_eq!(per.schedule_idle_calls[t], per.idle_exits[t], "{per:?}");
}

#[test]
fn polling_target_sees_notify_ipi_not_need_resched() {
    let mut k = build(&idle_spec("smp-4", "v6.10", "+rfc-tif-notify-ipi")).expect("valid spec");
    let p = k.cpus[1].rq.idle as usize;
    k.tasks[p].ti_flags |= TIF_POLLING_NRFLAG;
    let (no_ipi, _) = call_function_single_prep_ipi(&mut k, 0, 1);
    assert!(no_ipi);
    assert_eq!(k.tasks[p].ti_flags, TIF_POLLING_NRFLAG | TIF_NOTIFY_IPI);
    assert!(!need_resched(&k, 1), "a CSD is not a reschedule request");
    assert!(need_resched_or_ipi(&k, 1), "but the idle loop must leave");
    // A second notification before the flush writes nothing more.
    let (no_ipi, _) = call_function_single_prep_ipi(&mut k, 2, 1);
    assert!(no_ipi);
    assert_eq!(k.tasks[p].ti_flags & TIF_NEED_RESCHED, 0);
    // Not polling: the caller must send the IPI and no flag is set.
    let q = k.cpus[3].rq.idle as usize;
    assert!(!call_function_single_prep_ipi(&mut k, 0, 3).0);
    assert_eq!(k.tasks[q].ti_flags, 0);
}

#[test]
fn polling_call_runs_with_need_resched_clear() {
    let spec = ipistorm_spec(
        "epyc-7763-2s",
        "v6.10",
        "+rfc-tif-notify-ipi",
        &["numipi=50", "single=1", "offset=8", "cpulist=8"],
        None,
        true,
    );
    let r = execute(&spec).expect("valid spec");
    assert!(r.finished);
    let entries: Vec<_> = r.trace.iter().filter(|x| is_csd_entry(x, TARGET, Sym::DoNothingIpi)).collect();
    assert_eq!(entries.len(), 50);
    for e in entries {
        assert!(!has_flag(e, flags::NEED_RESCHED), "{e:?}");
    }
    assert!(!r.trace.iter().any(|x| is_switch(x, TARGET)));
}
