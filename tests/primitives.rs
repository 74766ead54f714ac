//! Unit-level tests of the NEED_RESCHED / polling primitives, the call-single queue and the
//! interrupt latch, through the public model functions on a built smp-4 kernel
//! (docs/kernel-model.md §2.1, §2.2; F4 step 5 for the latch).

mod support;

use proptest::prelude::*;
use schedsim::linux::csd_flags::{CSD_FLAG_LOCK, CSD_TYPE_ASYNC};
use schedsim::linux::engine::{cpu_frames, Action, Frame};
use schedsim::linux::kernel::sched::core::{call_function_single_prep_ipi, set_nr_and_not_polling, set_nr_if_polling};
use schedsim::linux::kernel::sched::idle::{
    __current_clr_polling, __current_set_polling, current_clr_polling, current_clr_polling_and_test,
    current_set_polling_and_test,
};
use schedsim::linux::kernel::sched::{TIF_NEED_RESCHED, TIF_POLLING_NRFLAG};
use schedsim::linux::kernel::smp::{__smp_call_single_queue, send_call_function_single_ipi};
use schedsim::linux::{Kernel, TaskId};
use schedsim::run::build;
use schedsim::trace::{flags, Event, Sym, Vector};
use support::*;

/// A freshly booted smp-4 kernel running nothing (no step has run yet: no CPU watches a line).
fn fresh(patches: &str) -> schedsim::run::RunWorld {
    let mut k = build(&idle_spec("smp-4", "v6.10", patches)).expect("valid spec");
    k.trace.enabled = true;
    k
}

/// An smp-4 kernel whose CPUs have idled for 2 ms and sit in their idle states.
fn settled(c2: bool) -> schedsim::run::RunWorld {
    let mut spec = idle_spec("smp-4", "v6.10", "");
    spec.idle_states = vec![("C2".into(), c2)];
    let mut k = build(&spec).expect("valid spec");
    k.trace.enabled = true;
    let mut per = per_cpu(&k);
    step_until(&mut k, 2_000_000, &mut per, |_, _, _| {}, |_| false);
    k
}

fn idle_of(k: &Kernel, cpu: u32) -> TaskId {
    k.cpus[cpu as usize].rq.idle
}

fn flags_of(k: &Kernel, p: TaskId) -> u32 {
    k.tasks[p as usize].ti_flags
}

/// True if `cpu` still holds a valid copy of `p`'s flag line (nobody else wrote it since).
fn still_cached_by(k: &mut Kernel, p: TaskId, cpu: u32) -> bool {
    let line = k.tasks[p as usize].ti_line;
    k.lines.read(line, cpu, &k.m.topo).is_none()
}

// ---------------------------------------------------------------------------------------
// set_nr_if_polling() / set_nr_and_not_polling()
// ---------------------------------------------------------------------------------------

#[test]
fn set_nr_if_polling_without_poll_returns_false_and_writes_nothing() {
    let mut k = fresh("");
    let p = idle_of(&k, 1);
    assert_eq!(flags_of(&k, p) & TIF_POLLING_NRFLAG, 0, "boot state: POLL clear");
    let before = flags_of(&k, p);
    let (polling, _) = set_nr_if_polling(&mut k, 0, p);
    assert!(!polling, "POLL clear: the caller must send an IPI");
    assert_eq!(flags_of(&k, p), before, "no flag may change");
    assert!(still_cached_by(&mut k, p, 1), "the flag line was written");
}

#[test]
fn set_nr_if_polling_with_poll_sets_need_resched() {
    let mut k = fresh("");
    let p = idle_of(&k, 1);
    k.tasks[p as usize].ti_flags |= TIF_POLLING_NRFLAG;
    let (polling, _) = set_nr_if_polling(&mut k, 0, p);
    assert!(polling, "POLL set: no IPI needed");
    assert_eq!(flags_of(&k, p), TIF_POLLING_NRFLAG | TIF_NEED_RESCHED);
    assert!(!still_cached_by(&mut k, p, 1), "the cmpxchg must write the line");
}

#[test]
fn set_nr_if_polling_with_nr_already_set_returns_true_without_writing() {
    let mut k = fresh("");
    let p = idle_of(&k, 1);
    k.tasks[p as usize].ti_flags |= TIF_POLLING_NRFLAG | TIF_NEED_RESCHED;
    let (polling, _) = set_nr_if_polling(&mut k, 0, p);
    assert!(polling);
    assert_eq!(flags_of(&k, p), TIF_POLLING_NRFLAG | TIF_NEED_RESCHED);
    assert!(still_cached_by(&mut k, p, 1), "NR already set: no write");
}

#[test]
fn set_nr_and_not_polling_always_sets_nr_and_asks_for_an_ipi_only_without_poll() {
    let mut k = fresh("");
    let p = idle_of(&k, 1);
    let (must_ipi, _) = set_nr_and_not_polling(&mut k, 0, p);
    assert!(must_ipi, "POLL clear: IPI");
    assert_eq!(flags_of(&k, p), TIF_NEED_RESCHED);

    let q = idle_of(&k, 2);
    k.tasks[q as usize].ti_flags |= TIF_POLLING_NRFLAG;
    let (must_ipi, _) = set_nr_and_not_polling(&mut k, 0, q);
    assert!(!must_ipi, "POLL set: no IPI");
    assert_eq!(flags_of(&k, q), TIF_POLLING_NRFLAG | TIF_NEED_RESCHED);
    assert!(!still_cached_by(&mut k, q, 2), "fetch_or always writes");
}

// ---------------------------------------------------------------------------------------
// send_call_function_single_ipi()
// ---------------------------------------------------------------------------------------

#[test]
fn send_cfs_ipi_to_polling_cpu_only_sets_nr() {
    let mut k = fresh("");
    let p = idle_of(&k, 1);
    k.tasks[p as usize].ti_flags |= TIF_POLLING_NRFLAG;
    let queued = k.q.len();
    send_call_function_single_ipi(&mut k, 0, 1, Sym::GenericExecSingle);
    assert_eq!((k.stats.ipis_sent, k.stats.ipis_avoided), (0, 1));
    assert_eq!(k.q.len(), queued, "no interrupt may be scheduled");
    assert_ne!(flags_of(&k, p) & TIF_NEED_RESCHED, 0);
    let r = k.trace.records.last().expect("a record");
    assert_eq!((r.cpu, r.event), (0, Event::SchedWakeIdleWithoutIpi { cpu: 1 }));
}

#[test]
fn send_cfs_ipi_to_non_polling_cpu_sends_the_vector() {
    let mut k = fresh("");
    let p = idle_of(&k, 1);
    let queued = k.q.len();
    let before = flags_of(&k, p);
    send_call_function_single_ipi(&mut k, 0, 1, Sym::GenericExecSingle);
    assert_eq!((k.stats.ipis_sent, k.stats.ipis_avoided), (1, 0));
    assert_eq!(k.q.len(), queued + 1, "one interrupt in flight");
    assert_eq!(flags_of(&k, p), before, "a real IPI sets no flag");
    let r = k.trace.records.last().expect("a record");
    assert!(is_cfs_ipi_send(r, 1) && r.cpu == 0, "{r:?}");
}

#[test]
fn send_cfs_ipi_without_b2a02fc43a1f_ignores_polling() {
    let mut k = fresh("-b2a02fc43a1f");
    let p = idle_of(&k, 1);
    k.tasks[p as usize].ti_flags |= TIF_POLLING_NRFLAG;
    send_call_function_single_ipi(&mut k, 0, 1, Sym::GenericExecSingle);
    assert_eq!((k.stats.ipis_sent, k.stats.ipis_avoided), (1, 0));
    assert_eq!(flags_of(&k, p), TIF_POLLING_NRFLAG, "the reverted path never touches the flags");
}

#[test]
fn prep_ipi_is_set_nr_if_polling_on_the_idle_task() {
    let mut k = fresh("");
    let p = idle_of(&k, 3);
    assert!(!call_function_single_prep_ipi(&mut k, 0, 3).0);
    k.tasks[p as usize].ti_flags |= TIF_POLLING_NRFLAG;
    assert!(call_function_single_prep_ipi(&mut k, 0, 3).0);
    assert_eq!(flags_of(&k, p), TIF_POLLING_NRFLAG | TIF_NEED_RESCHED);
}

// ---------------------------------------------------------------------------------------
// The polling handshake: no lost wakeup whatever the order
// ---------------------------------------------------------------------------------------

/// Idle-side operations on the idle task of CPU 1 (include/linux/sched/idle.h).
#[derive(Debug, Clone, Copy)]
enum IdleOp {
    /// `__current_set_polling()`.
    SetPolling,
    /// `__current_clr_polling()`.
    ClrPolling,
    /// `current_set_polling_and_test()`.
    SetPollingAndTest,
    /// `current_clr_polling_and_test()`.
    ClrPollingAndTest,
    /// `current_clr_polling()`: clear, barrier, fold NR into the preempt count.
    ClrPollingFold,
}

/// Remote operations from another CPU on CPU 1's idle task.
#[derive(Debug, Clone, Copy)]
enum RemoteOp {
    /// `set_nr_if_polling()` (CSD notification).
    SetNrIfPolling(u32),
    /// `set_nr_and_not_polling()` (`resched_curr()`).
    SetNrAndNotPolling(u32),
}

fn idle_op() -> impl Strategy<Value = IdleOp> {
    prop_oneof![
        Just(IdleOp::SetPolling),
        Just(IdleOp::ClrPolling),
        Just(IdleOp::SetPollingAndTest),
        Just(IdleOp::ClrPollingAndTest),
        Just(IdleOp::ClrPollingFold),
    ]
}

fn remote_op() -> impl Strategy<Value = RemoteOp> {
    let from = prop_oneof![Just(0u32), Just(2u32), Just(3u32)];
    (from, any::<bool>()).prop_map(
        |(c, csd)| {
            if csd {
                RemoteOp::SetNrIfPolling(c)
            } else {
                RemoteOp::SetNrAndNotPolling(c)
            }
        },
    )
}

/// A remote call's outcome: whether it skipped the IPI.
struct Remote {
    no_ipi: bool,
}

/// Run `idle` on CPU 1 with `remotes` inserted at their positions and check the handshake.
fn check_handshake(start_polling: bool, idle: &[IdleOp], remotes: &[(usize, RemoteOp)]) -> Result<(), TestCaseError> {
    let mut k = fresh("");
    let p = idle_of(&k, 1);
    if start_polling {
        k.tasks[p as usize].ti_flags |= TIF_POLLING_NRFLAG;
    }
    // A remote at position i runs just before idle op i (or after the last one).
    let mut remotes: Vec<(usize, RemoteOp)> = remotes.iter().map(|&(i, op)| (i.min(idle.len()), op)).collect();
    remotes.sort_by_key(|r| r.0);
    let mut done: Vec<Remote> = Vec::new();
    let mut ri = 0;
    for step in 0..=idle.len() {
        while ri < remotes.len() && remotes[ri].0 <= step {
            let poll_before = flags_of(&k, p) & TIF_POLLING_NRFLAG != 0;
            let flags_before = flags_of(&k, p);
            let no_ipi = match remotes[ri].1 {
                RemoteOp::SetNrIfPolling(c) => {
                    let (polling, _) = set_nr_if_polling(&mut k, c, p);
                    prop_assert_eq!(polling, poll_before, "set_nr_if_polling must report POLL as it was");
                    if !polling {
                        prop_assert_eq!(flags_of(&k, p), flags_before, "false must write nothing");
                    }
                    polling
                }
                RemoteOp::SetNrAndNotPolling(c) => {
                    let (must_ipi, _) = set_nr_and_not_polling(&mut k, c, p);
                    prop_assert_eq!(must_ipi, !poll_before);
                    !must_ipi
                }
            };
            if no_ipi {
                prop_assert_ne!(flags_of(&k, p) & TIF_NEED_RESCHED, 0, "no IPI promised, so NR must be set");
            }
            done.push(Remote { no_ipi });
            ri += 1;
        }
        let Some(op) = idle.get(step) else { break };
        // Any remote that skipped its IPI before this point must be visible to a test here.
        let promised = done.iter().any(|r| r.no_ipi);
        match op {
            IdleOp::SetPolling => {
                __current_set_polling(&mut k, 1);
            }
            IdleOp::ClrPolling => {
                __current_clr_polling(&mut k, 1);
            }
            IdleOp::SetPollingAndTest => {
                let (nr, _) = current_set_polling_and_test(&mut k, 1);
                prop_assert!(nr || !promised, "lost wakeup: a remote skipped its IPI but the test sees no NR");
            }
            IdleOp::ClrPollingAndTest => {
                let (nr, _) = current_clr_polling_and_test(&mut k, 1);
                prop_assert!(nr || !promised, "lost wakeup: a remote skipped its IPI but the test sees no NR");
                prop_assert_eq!(flags_of(&k, p) & TIF_POLLING_NRFLAG, 0);
            }
            IdleOp::ClrPollingFold => {
                k.cpus[1].pnr = false;
                current_clr_polling(&mut k, 1);
                prop_assert!(k.cpus[1].pnr || !promised, "lost wakeup: NR not folded into the preempt count");
            }
        }
    }
    // NR is set exactly when some remote ran at all (both primitives set it when they skip
    // the IPI; set_nr_and_not_polling sets it in any case).
    let nr = flags_of(&k, p) & TIF_NEED_RESCHED != 0;
    let any_set =
        done.iter().any(|r| r.no_ipi) || remotes.iter().any(|r| matches!(r.1, RemoteOp::SetNrAndNotPolling(_)));
    prop_assert_eq!(nr, any_set);
    prop_assert_eq!(ri, remotes.len(), "every remote ran");
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, failure_persistence: None, ..ProptestConfig::default() })]

    /// The two-CPU handshake of §2.1 in every order: the remote `set_nr_if_polling()` before
    /// or after the idle side's `current_clr_polling_and_test()`.
    #[test]
    fn polling_handshake_loses_no_wakeup_in_either_order(remote_first in any::<bool>(), from in 0u32..4) {
        prop_assume!(from != 1);
        let mut k = fresh("");
        let p = idle_of(&k, 1);
        k.tasks[p as usize].ti_flags |= TIF_POLLING_NRFLAG;
        let (remote_saw_poll, idle_saw_nr) = if remote_first {
            let (r, _) = set_nr_if_polling(&mut k, from, p);
            let (t, _) = current_clr_polling_and_test(&mut k, 1);
            (r, t)
        } else {
            let (t, _) = current_clr_polling_and_test(&mut k, 1);
            let (r, _) = set_nr_if_polling(&mut k, from, p);
            (r, t)
        };
        // Either the remote saw POLL (no IPI) and the idle side sees NR, or the remote got
        // false and must IPI.
        prop_assert!(!remote_saw_poll || idle_saw_nr, "lost wakeup: no IPI and no NR seen");
        prop_assert_eq!(remote_saw_poll, remote_first);
        prop_assert_eq!(idle_saw_nr, remote_first);
    }

    /// Arbitrary idle-side sequences with up to three remote notifications interleaved.
    #[test]
    fn polling_handshake_loses_no_wakeup_in_any_interleaving(
        start_polling in any::<bool>(),
        idle in prop::collection::vec(idle_op(), 1..8),
        remotes in prop::collection::vec((0usize..9, remote_op()), 1..4),
    ) {
        check_handshake(start_polling, &idle, &remotes)?;
    }
}

// ---------------------------------------------------------------------------------------
// __smp_call_single_queue(): notify once per non-empty queue
// ---------------------------------------------------------------------------------------

fn lock_async(k: &mut Kernel, csd: u32) {
    k.csds[csd as usize].flags = CSD_FLAG_LOCK | CSD_TYPE_ASYNC;
}

fn notifications(k: &Kernel) -> u64 {
    k.stats.ipis_sent + k.stats.ipis_avoided
}

fn coalescing(c2: bool) {
    let mut k = settled(c2);
    let target = 1u32;
    let p = idle_of(&k, target);
    let polling = flags_of(&k, p) & TIF_POLLING_NRFLAG != 0;
    assert_eq!(
        polling,
        !c2,
        "scenario: with C2 {} the idle CPU should {}poll",
        if c2 { "on" } else { "off" },
        if c2 { "not " } else { "" }
    );
    let (a, b, c) = (k.cpus[0].csd_data, k.cpus[2].csd_data, k.cpus[3].csd_data);
    for csd in [a, b] {
        lock_async(&mut k, csd);
    }
    let n0 = notifications(&k);
    __smp_call_single_queue(&mut k, 0, target, a, Sym::GenericExecSingle);
    assert_eq!(notifications(&k), n0 + 1, "the first entry notifies");
    __smp_call_single_queue(&mut k, 2, target, b, Sym::GenericExecSingle);
    assert_eq!(notifications(&k), n0 + 1, "the second entry piggy-backs on the first notification");
    assert_eq!(k.cpus[target as usize].csq, vec![a, b]);
    if polling {
        assert_eq!((k.stats.ipis_sent, k.stats.ipis_avoided), (0, 1));
    } else {
        assert_eq!((k.stats.ipis_sent, k.stats.ipis_avoided), (1, 0));
    }

    // One flush runs both entries; then the queue is empty and the next producer notifies.
    let from = k.trace.records.len();
    let mut per = per_cpu(&k);
    let limit = k.now + 1_000_000;
    let st = step_until(
        &mut k,
        limit,
        &mut per,
        |_, _, _| {},
        |k| k.csds[a as usize].flags & CSD_FLAG_LOCK == 0 && k.csds[b as usize].flags & CSD_FLAG_LOCK == 0,
    );
    assert_eq!(st, Stop::Pred, "the target never ran the queued functions");
    let t = &k.trace.records[from..];
    let entries = positions(t, |x| is_csd_entry(x, target, Sym::DoNothingIpi));
    assert_eq!(entries.len(), 2, "{}", render(t, &[target], 40));
    let vectors = positions(t, |x| is_vector_entry(x, target, Vector::CallFunctionSingle));
    assert_eq!(vectors.len(), usize::from(!polling), "one interrupt for a non-polling target, none for a polling one");
    assert!(k.cpus[target as usize].csq.is_empty());

    lock_async(&mut k, c);
    let n1 = notifications(&k);
    __smp_call_single_queue(&mut k, 3, target, c, Sym::GenericExecSingle);
    assert_eq!(notifications(&k), n1 + 1, "after llist_del_all the next entry notifies again");
}

#[test]
fn csd_queue_notifies_once_non_polling_target() {
    coalescing(true);
}

#[test]
fn csd_queue_notifies_once_polling_target() {
    coalescing(false);
}

// ---------------------------------------------------------------------------------------
// Interrupt latching: an IPI that arrives with IRQs off is taken later, never lost
// ---------------------------------------------------------------------------------------

#[test]
fn ipi_arriving_with_irqs_off_is_latched_and_taken_later() {
    // ipistorm's thread on CPU 2 calls CPU 3.
    const TARGET: u32 = 3;
    let spec =
        ipistorm_spec("smp-4", "v6.10", "", &["numipi=200", "single=1", "offset=1", "cpulist=2"], Some(false), true);
    let mut k = build(&spec).expect("valid spec");
    let mut per = per_cpu(&k);
    #[derive(Debug)]
    struct Arrival {
        at: u64,
        latched: bool,
        in_schedule: bool,
    }
    let mut arrivals: Vec<Arrival> = Vec::new();
    let mut latch_kept = true;
    let st = step_until(
        &mut k,
        spec.limit_ns,
        &mut per,
        |k, a, before| {
            let Action::Irq { cpu: TARGET, vector: Vector::CallFunctionSingle } = *a else {
                return;
            };
            let c = &k.cpus[TARGET as usize];
            if before {
                let latched = c.x.irqs_off && c.x.waiting.is_none();
                let in_schedule = cpu_frames(k, TARGET as usize)
                    .iter()
                    .any(|f| matches!(f, Frame::Schedule(_) | Frame::ScheduleCaller(_) | Frame::NewidleBalance(_)));
                arrivals.push(Arrival { at: k.now, latched, in_schedule });
            } else if arrivals.last().is_some_and(|x| x.latched) {
                // Latched: still pending, the handler has not run.
                let handler_running = cpu_frames(k, TARGET as usize).iter().any(|f| matches!(f, Frame::HardIrq(_)));
                latch_kept &= c.x.pending != 0 && !handler_running;
            }
        },
        |k| k.finished(),
    );
    assert_eq!(st, Stop::Pred, "the workload did not finish");
    assert_eq!(ipistorm_of(&k).calls(), 200);
    let t = &k.trace.records;

    // Every interrupt handler runs in hardirq context with IRQs off.
    for (i, r) in t.iter().enumerate() {
        if matches!(r.event, Event::VectorEntry { .. }) {
            assert!(has_flag(r, flags::IRQS_OFF) && has_flag(r, flags::HARDIRQ), "record #{i}: {r:?}");
        }
    }
    // Some IPIs arrived while the target was in schedule_idle() with IRQs off...
    let latched = arrivals.iter().filter(|x| x.latched).count();
    let in_sched = arrivals.iter().filter(|x| x.latched && x.in_schedule).count();
    assert!(in_sched > 0, "scenario: no IPI arrived during schedule_idle() ({latched} latched of {})", arrivals.len());
    assert!(latch_kept, "a latched interrupt was taken while IRQs were off");
    // ...and none was lost: one handler per IPI, each after its ipi_send_cpu.
    let sends = positions(t, |x| is_cfs_ipi_send(x, TARGET));
    let entries = positions(t, |x| is_vector_entry(x, TARGET, Vector::CallFunctionSingle));
    assert_eq!(sends.len() as u64, k.stats.ipis_sent);
    assert_eq!(arrivals.len(), sends.len(), "every IPI reaches the APIC");
    assert_eq!(entries.len(), sends.len(), "one call_function_single_entry per IPI sent");
    for (n, (s, e)) in sends.iter().zip(&entries).enumerate() {
        assert!(s < e, "IPI #{n}: handler (#{e}) before the send (#{s})");
        assert!(t[*e].ts_ns >= arrivals[n].at, "IPI #{n}: handled before it arrived");
    }
    assert_eq!(positions(t, |x| is_csd_entry(x, TARGET, Sym::DoNothingIpi)).len(), 200, "every call ran once");
    assert!(k.stats.irqs_off_ns[TARGET as usize] > 0);
}
