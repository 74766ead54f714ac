// RFC 3/3 "softirq: Avoid waking up ksoftirqd from flush_smp_call_function_queue()"
// (K Prateek Nayak, posted 2024-07-10; not merged), with its per-CPU flag cacheline-aligned
// (rfc-softirq-flag) or not (rfc-softirq-flag-unaligned).
// See: rfc-softirq-flag
//
// Pins: `flush_smp_call_function_queue()` sets the per-CPU `will_do_softirq_post_flush`
// around `__flush_smp_call_function_queue()`, and `should_wake_ksoftirqd()` is false while it
// is set, so a softirq raised by a CSD is left to `do_softirq_post_smp_call_flush()` instead
// of waking ksoftirqd (docs/kernel-model.md §2.2, §2.3, §5.1). The unaligned variant puts the
// flag on the line of the CPU's call_single_queue head, which every sender writes: it can only
// add cost, so each run is no cheaper than with the aligned flag for the same seed.

mod support;

use schedsim::linux::engine::{cpu_frames, Frame};
use schedsim::linux::kernel::softirq::{raise_softirq_irqoff, should_wake_ksoftirqd, SCHED_SOFTIRQ};
use schedsim::run::{build, execute};
use support::*;

const TARGET: u32 = 16;
const STORM: &[&str] = &["numipi=1000", "single=1", "offset=8", "cpulist=8"];

fn kernel(patches: &str) -> schedsim::run::RunWorld {
    build(&idle_spec("smp-4", "v6.10", patches)).expect("valid spec")
}

#[test]
fn flag_stops_should_wake_ksoftirqd() {
    for patches in ["+rfc-softirq-flag", "+rfc-softirq-flag-unaligned"] {
        let mut k = kernel(patches);
        assert!(should_wake_ksoftirqd(&k, 1), "{patches}: flag clear");
        k.cpus[1].will_do_softirq_post_flush = true;
        assert!(!should_wake_ksoftirqd(&k, 1), "{patches}: flag set");
        assert!(should_wake_ksoftirqd(&k, 2), "{patches}: the flag is per CPU");
        // raise_softirq_irqoff() from task context: the pending bit, but no ksoftirqd wakeup.
        assert!(raise_softirq_irqoff(&mut k, 1, SCHED_SOFTIRQ).is_none(), "{patches}");
        assert_ne!(k.cpus[1].softirq_pending & (1 << SCHED_SOFTIRQ), 0);
        k.cpus[1].will_do_softirq_post_flush = false;
        assert!(matches!(raise_softirq_irqoff(&mut k, 1, SCHED_SOFTIRQ), Some(Frame::TryToWakeUp(_))), "{patches}");
    }
}

#[test]
fn without_the_rfc_the_flag_is_ignored() {
    let mut k = kernel("");
    k.cpus[1].will_do_softirq_post_flush = true;
    assert!(should_wake_ksoftirqd(&k, 1));
    assert!(matches!(raise_softirq_irqoff(&mut k, 1, SCHED_SOFTIRQ), Some(Frame::TryToWakeUp(_))));
}

#[test]
fn unaligned_flag_shares_the_call_single_queue_line() {
    let aligned = kernel("+rfc-softirq-flag");
    let unaligned = kernel("+rfc-softirq-flag-unaligned");
    for c in 0..4 {
        assert_ne!(aligned.cpus[c].softirq_flag_line, aligned.cpus[c].csq_line, "aligned: a line of its own");
        assert_eq!(unaligned.cpus[c].softirq_flag_line, unaligned.cpus[c].csq_line, "unaligned: false sharing");
    }
}

#[test]
fn flag_is_set_exactly_during_the_task_context_flush() {
    for patches in ["+rfc-softirq-flag", "+rfc-softirq-flag-unaligned"] {
        let spec = ipistorm_spec(
            "epyc-7763-2s",
            "v6.10",
            patches,
            &["numipi=200", "single=1", "offset=8", "cpulist=8"],
            None,
            false,
        );
        let mut k = build(&spec).expect("valid spec");
        let mut per = per_cpu(&k);
        let (mut in_flush, mut bad) = (0u64, Vec::new());
        let st = step_until(
            &mut k,
            spec.limit_ns,
            &mut per,
            |k, _, before| {
                if before {
                    return;
                }
                let c = &k.cpus[TARGET as usize];
                let st = &cpu_frames(k, TARGET as usize);
                let task_flush = st.iter().position(|f| matches!(f, Frame::FlushSmpCallFunctionQueue(_)));
                let inner = task_flush.is_some_and(|i| matches!(st.get(i + 1), Some(Frame::FlushQueue(_))));
                if inner {
                    in_flush += 1;
                    if !c.will_do_softirq_post_flush || should_wake_ksoftirqd(k, TARGET) {
                        bad.push((k.now, "flag clear inside __flush_smp_call_function_queue()"));
                    }
                }
                if task_flush.is_none() && c.will_do_softirq_post_flush {
                    bad.push((k.now, "flag set outside flush_smp_call_function_queue()"));
                }
            },
            |k| k.finished(),
        );
        assert_eq!(st, Stop::Pred);
        assert!(in_flush > 0, "{patches}: scenario: the target never flushed from task context");
        assert!(bad.is_empty(), "{patches}: {:?}", &bad[..bad.len().min(5)]);
    }
}

#[test]
fn unaligned_flag_is_no_cheaper_than_aligned() {
    for seed in 1..=3 {
        let run = |patches: &str| {
            let mut spec = ipistorm_spec("epyc-7763-2s", "v6.10", patches, STORM, None, false);
            spec.seed = seed;
            let r = execute(&spec).expect("valid spec");
            assert!(r.finished);
            assert_eq!(ipistorm(&r).calls(), 1000);
            ipistorm(&r).total_ns()
        };
        let (aligned, unaligned) = (run("+rfc-softirq-flag"), run("+rfc-softirq-flag-unaligned"));
        assert!(unaligned >= aligned, "seed {seed}: unaligned {unaligned} ns < aligned {aligned} ns");
    }
}

/// The published measurement found the unaligned flag clearly slower. With the flag placed on
/// the line of the CPU's call_single_queue head, the model predicts no difference for
/// ipistorm: the flag write at the start of the flush takes the line that `llist_del_all()`
/// would take anyway, and the clear after the flush lands before the sender's next
/// `llist_add()`. This pins that prediction (the same transfers in both placements); if the
/// placement or the flush ordering changes, revisit the note in the ipistorm experiment.
#[test]
fn unaligned_flag_on_the_csq_line_costs_no_extra_transfer_in_ipistorm() {
    for seed in 1..=2 {
        let run = |patches: &str| {
            let mut s = ipistorm_spec(
                "epyc-7763-2s",
                "v6.10",
                &format!("+3dcac251b066,{patches}"),
                &["numipi=2000", "single=1", "offset=8", "cpulist=8"],
                Some(false),
                false,
            );
            s.seed = seed;
            let r = schedsim::run::execute(&s).unwrap();
            match r.workload {
                schedsim::workload::Workload::Ipistorm(w) => w.total_ns(),
                _ => unreachable!(),
            }
        };
        assert_eq!(run("+rfc-softirq-flag"), run("+rfc-softirq-flag-unaligned"), "seed {seed}");
    }
}
