//! The determinism contract on schbench (the 2022 ttwu_pending experiment's shape:
//! `schbench -m 2 -t 16` on the 32-vCPU Ice Lake VM, shortened to 6 s): a run is a function of
//! its spec. The same seed gives the same trace and the same final percentile block; another
//! seed shifts the hardware jitter and the boot phase, so the trace differs.

mod support;

use schedsim::run::{execute, trace_hash, RunResult};
use support::*;

const ARGS: &str = "-m 2 -t 16 -r 6";

fn run(seed: u64) -> RunResult {
    let mut spec = schbench_spec("icx-vm-32", "v6.2", "", ARGS, true);
    spec.seed = seed;
    let r = execute(&spec).expect("valid spec");
    assert!(r.finished, "seed {seed}: schbench did not finish");
    assert!(!r.trace.is_empty());
    r
}

/// The last "Latency percentiles" block schbench printed (the final report).
fn final_block(r: &RunResult) -> String {
    let out = &schbench_of(r).output;
    let at = out.rfind("Latency percentiles").expect("a percentile block");
    let block = out[at..].to_string();
    assert!(block.starts_with("Latency percentiles (usec) runtime 6 (s)"), "{block}");
    block
}

#[test]
fn same_seed_same_trace_and_percentiles() {
    let (a, b) = (run(1), run(1));
    assert_eq!(trace_hash(&a.trace), trace_hash(&b.trace));
    assert_eq!(a.trace.len(), b.trace.len());
    assert!(a.trace == b.trace, "identical records");
    assert_eq!(final_block(&a), final_block(&b));
    assert_eq!(schbench_of(&a).output, schbench_of(&b).output);
    assert_eq!(format!("{:?}", a.stats), format!("{:?}", b.stats));
    assert_eq!((a.sim_ns, a.actions), (b.sim_ns, b.actions));
}

#[test]
fn different_seed_different_trace() {
    let (a, b) = (run(1), run(2));
    assert_ne!(trace_hash(&a.trace), trace_hash(&b.trace));
    assert_ne!(a.sim_ns, b.sim_ns, "the boot phase and jitter move the end of the run");
}
