//! The determinism contract (ARCHITECTURE.md, "Rules"): a run is a function of its spec.
//! The same seed gives the same trace and counters; another seed shifts the hardware jitter
//! and the boot phase, so the trace and the total time differ.

mod support;

use schedsim::run::{execute, trace_hash, RunResult};
use support::*;

const STORM: &[&str] = &["numipi=2000", "single=1", "offset=8", "cpulist=8"];

fn run(seed: u64) -> RunResult {
    let mut spec = ipistorm_spec("epyc-7763-2s", "v6.10", "", STORM, None, true);
    spec.seed = seed;
    let r = execute(&spec).expect("valid spec");
    assert!(r.finished, "seed {seed}: did not finish");
    assert_eq!(ipistorm(&r).calls(), 2000);
    assert!(!r.trace.is_empty());
    r
}

#[test]
fn same_seed_same_trace_and_stats() {
    let (a, b) = (run(1), run(1));
    assert_eq!(trace_hash(&a.trace), trace_hash(&b.trace));
    assert_eq!(a.trace.len(), b.trace.len());
    assert!(a.trace == b.trace, "identical records");
    assert_eq!(format!("{:?}", a.stats), format!("{:?}", b.stats));
    assert_eq!(format!("{:?}", a.workload), format!("{:?}", b.workload));
    assert_eq!((a.sim_ns, a.actions), (b.sim_ns, b.actions));
}

#[test]
fn different_seed_different_trace_and_time() {
    let (a, b) = (run(1), run(2));
    assert_ne!(trace_hash(&a.trace), trace_hash(&b.trace));
    assert_ne!(ipistorm(&a).total_ns(), ipistorm(&b).total_ns(), "jitter should change the total time");
    assert_ne!(a.sim_ns, b.sim_ns);
}
