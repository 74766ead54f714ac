// 147f3efaa241 "sched/fair: Implement an EEVDF-like scheduling policy" (v6.6).
// See: 147f3efaa241
//
// Pins: the fair class a kernel runs follows this row: v6.10 runs EEVDF, v6.10 without it and
// v3.8 run CFS, with the 3.8 tunables scaled by 1 + ilog2(min(ncpus, 8)) (8 CPUs: x4).

mod support;

use schedsim::linux::kernel::sched::fair_class::FairPolicy;
use schedsim::linux::patches::FairClass;
use schedsim::linux::KernelConfig;
use schedsim::run::build;
use support::*;

fn policy(kernel: &str, patches: &str) -> (FairPolicy, u64, u64, u64) {
    let k = build(&idle_spec("i7-4c8t", kernel, patches)).expect("valid spec");
    let cfs = &k.cpus[0].rq.cfs;
    (cfs.policy, cfs.tun.latency_ns, cfs.tun.min_granularity_ns, cfs.tun.wakeup_granularity_ns)
}

#[test]
fn with_the_patch_the_fair_class_is_eevdf() {
    assert_eq!(KernelConfig::resolve("v6.10", "", 250).unwrap().fair, FairClass::Eevdf);
    assert_eq!(policy("v6.10", "").0, FairPolicy::Eevdf);
}

#[test]
fn without_it_the_fair_class_is_cfs_with_scaled_tunables() {
    assert_eq!(KernelConfig::resolve("v6.10", "-147f3efaa241", 250).unwrap().fair, FairClass::Cfs);
    for (kernel, patches) in [("v6.10", "-147f3efaa241"), ("v3.8", "")] {
        assert_eq!(policy(kernel, patches), (FairPolicy::Cfs, 24_000_000, 3_000_000, 4_000_000), "{kernel} {patches}");
    }
    assert_eq!(policy("v3.8", "+147f3efaa241").0, FairPolicy::Eevdf);
}
