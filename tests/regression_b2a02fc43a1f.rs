// b2a02fc43a1f "smp: Optimize send_call_function_single_ipi()" (v5.8).
// See: b2a02fc43a1f
//
// Pins: `send_call_function_single_ipi()` calls `call_function_single_prep_ipi()`, i.e.
// `set_nr_if_polling(rq->idle)`; a target whose idle task polls gets NEED_RESCHED instead of
// a CALL_FUNCTION_SINGLE IPI (docs/kernel-model.md §2.2, F4). An elided IPI implies the
// target really was polling, and a sent one that it was not. Reverted, every single-target
// call is a real IPI (F5 for every call).

mod support;

use schedsim::linux::engine::Action;
use schedsim::linux::kernel::sched::TIF_POLLING_NRFLAG;
use schedsim::run::{build, execute};
use schedsim::trace::Event;
use support::*;

const TARGET: u32 = 16;
const STORM: &[&str] = &["numipi=1000", "single=1", "offset=8", "cpulist=8"];

#[test]
fn with_the_patch_calls_to_a_polling_idle_cpu_avoid_ipis() {
    let spec = ipistorm_spec("epyc-7763-2s", "v6.10", "", STORM, None, true);
    let mut k = build(&spec).expect("valid spec");
    let mut per = per_cpu(&k);
    // Check each notification against the target's POLL bit right after the sender's step
    // (the sender does not change POLL; only the target could, and it did not run).
    let mut seen = 0usize;
    let (mut elided, mut sent, mut wrong) = (0u64, 0u64, Vec::new());
    let st = step_until(
        &mut k,
        spec.limit_ns,
        &mut per,
        |k, a, before| {
            if before {
                return;
            }
            let recs = &k.trace.records[seen..];
            seen = k.trace.records.len();
            if matches!(a, Action::Resume { cpu: TARGET, .. } | Action::Irq { cpu: TARGET, .. }) {
                return;
            }
            let idle = k.cpus[TARGET as usize].rq.idle as usize;
            let polling = k.tasks[idle].ti_flags & TIF_POLLING_NRFLAG != 0;
            for r in recs {
                if is_wake_without_ipi(r, TARGET) {
                    elided += 1;
                    if !polling {
                        wrong.push((r.ts_ns, "IPI elided to a CPU that does not poll"));
                    }
                } else if is_cfs_ipi_send(r, TARGET) {
                    sent += 1;
                    if polling {
                        wrong.push((r.ts_ns, "IPI sent to a polling CPU"));
                    }
                }
            }
        },
        |k| k.finished(),
    );
    assert_eq!(st, Stop::Pred);
    let w = ipistorm_of(&k);
    assert_eq!(w.calls(), 1000);
    assert!(wrong.is_empty(), "{wrong:?}");
    assert!(k.stats.ipis_avoided > 0, "no call took the polling path");
    assert!(w.calls_polling > 0);
    assert_eq!(elided, w.calls_polling, "one sched_wake_idle_without_ipi per polling call");
    assert_eq!(sent, k.stats.ipis_sent);
    assert_eq!(w.calls_ipi, k.stats.ipis_sent);
}

#[test]
fn reverted_every_call_is_a_real_ipi() {
    let spec = ipistorm_spec("epyc-7763-2s", "v6.10", "-b2a02fc43a1f", STORM, None, true);
    let r = execute(&spec).expect("valid spec");
    assert!(r.finished);
    let w = ipistorm(&r);
    // Every call is a real IPI to the target (other IPIs, e.g. idle-load-balancer kicks from
    // the sender's busy tick, go to other CPUs).
    let to_target = r.trace.iter().filter(|x| is_cfs_ipi_send(x, TARGET)).count();
    assert_eq!(to_target, 1000);
    assert!(r.stats.ipis_sent >= 1000);
    assert_eq!((w.calls_ipi, w.calls_polling, w.calls_coalesced), (1000, 0, 0));
    assert!(!r.trace.iter().any(|x| is_wake_without_ipi(x, TARGET)), "no CSD notification may be elided");
    // Every call ran from the interrupt: the target never left its idle loop for a call.
    let from_task = r
        .trace
        .iter()
        .filter(|x| {
            x.cpu == TARGET
                && matches!(x.event, Event::CsdFunctionEntry { .. })
                && !has_flag(x, schedsim::trace::flags::HARDIRQ)
        })
        .count();
    assert_eq!(from_task, 0);
    let entries =
        r.trace.iter().filter(|x| is_vector_entry(x, TARGET, schedsim::trace::Vector::CallFunctionSingle)).count();
    assert_eq!(entries, 1000);
}

#[test]
fn the_patch_is_what_elides_the_ipis() {
    // Same seed, same machine: only the patch differs.
    let with = execute(&ipistorm_spec("epyc-7763-2s", "v6.10", "", STORM, None, false)).expect("valid spec");
    let without =
        execute(&ipistorm_spec("epyc-7763-2s", "v6.10", "-b2a02fc43a1f", STORM, None, false)).expect("valid spec");
    assert!(with.stats.ipis_sent < without.stats.ipis_sent);
    assert_eq!(ipistorm(&with).calls(), ipistorm(&without).calls());
}
