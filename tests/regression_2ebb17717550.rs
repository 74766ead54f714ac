// 2ebb17717550 "sched/core: Offload wakee task activation if it the wakee is descheduling"
// (v5.8).
// See: 2ebb17717550, 518cd6234178 (v3.3: the wakelist only across LLCs)
//
// Pins: `ttwu_queue_cond()` for a same-LLC target before f3dd3f674555: with 2ebb17717550 a
// wakee still descheduling there (WF_ON_CPU) with at most one task there uses the wakelist;
// without it (v3.8) a same-LLC wakeup never does (the waker locks the target rq and
// enqueues), while a target in another LLC always does. smp-4 has LLCs {0,1} and {2,3}.

mod support;

use schedsim::linux::kernel::sched::core::ttwu_queue_cond;
use schedsim::linux::kernel::sched::{WF_ON_CPU, WF_TTWU};
use schedsim::run::build;
use support::*;

fn cond(kernel: &str, patches: &str) -> (bool, bool, bool) {
    let mut k = build(&idle_spec("smp-4", kernel, patches)).expect("valid spec");
    run_until(&mut k, 5_000_000);
    (
        ttwu_queue_cond(&k, 0, 1, WF_TTWU | WF_ON_CPU),
        ttwu_queue_cond(&k, 0, 1, WF_TTWU),
        ttwu_queue_cond(&k, 0, 2, WF_TTWU),
    )
}

#[test]
fn with_the_patch_a_descheduling_same_llc_wakee_uses_the_wakelist() {
    assert_eq!(cond("v6.10", "-f3dd3f674555"), (true, false, true));
}

#[test]
fn without_it_the_wakelist_is_used_only_across_llcs() {
    assert_eq!(cond("v6.10", "-f3dd3f674555,-2ebb17717550"), (false, false, true));
    assert_eq!(cond("v3.8", ""), (false, false, true));
}

#[test]
fn it_requires_the_on_cpu_queueing_it_extends() {
    let e = schedsim::linux::KernelConfig::resolve("v6.10", "-c6e7bd7afaeb", 250).unwrap_err();
    assert!(e.contains("2ebb17717550 requires c6e7bd7afaeb"), "{e}");
}
