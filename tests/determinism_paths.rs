//! Determinism across the balancing, nohz, softirq, RT-softirq, sleep and IPC paths: the same
//! spec gives a bit-identical trace; another seed gives a different one.

use schedsim::run::{execute, trace_hash};
use schedsim::spec::RunSpec;
use schedsim::workload::params::Params;

fn spec(workload: &str, machine: &str, kernel: &str, params: &[(&str, &str)], seed: u64, rt: bool) -> RunSpec {
    let mut s = RunSpec::new(workload);
    s.machine = machine.into();
    s.kernel = kernel.into();
    s.seed = seed;
    s.trace = true;
    s.preempt_rt = rt;
    s.params = Params::from_pairs(params.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(), "test");
    if machine == "smp-4" {
        s.idle_states = vec![("C2".into(), false)];
    }
    s
}

fn check(make: impl Fn(u64) -> RunSpec) {
    let a = execute(&make(3)).unwrap();
    let b = execute(&make(3)).unwrap();
    let c = execute(&make(4)).unwrap();
    assert!(!a.trace.is_empty());
    assert_eq!(trace_hash(&a.trace), trace_hash(&b.trace), "same seed, same trace");
    assert_eq!(a.sim_ns, b.sim_ns);
    assert_ne!(trace_hash(&a.trace), trace_hash(&c.trace), "another seed, another trace");
}

#[test]
fn nohz_ilb_paths_are_deterministic() {
    for kernel in ["v6.10", "v6.13"] {
        check(|seed| {
            spec("spinners", "smp-4", kernel, &[("tasks", "3"), ("start", "0"), ("duration_ms", "40")], seed, false)
        });
    }
}

#[test]
fn preempt_rt_softirq_paths_are_deterministic() {
    check(|seed| {
        let mut s =
            spec("spinners", "smp-4", "v6.10", &[("tasks", "3"), ("start", "0"), ("duration_ms", "40")], seed, true);
        s.patches = "+ea9cffc0a154".into();
        s
    });
}

#[test]
fn sleep_and_newidle_paths_are_deterministic() {
    check(|seed| spec("nanosleep", "smp-4", "v6.10", &[("procs", "6"), ("duration_ms", "10")], seed, false));
}

#[test]
fn pipe_and_socket_paths_are_deterministic() {
    check(|seed| spec("hackbench", "i7-4c8t", "v6.10", &[("tool", "perf"), ("args", "-p -g 1 -l 20")], seed, false));
    check(|seed| spec("hackbench", "i7-4c8t", "v6.10", &[("tool", "old"), ("args", "1")], seed, false));
}

#[test]
fn rt_push_paths_are_deterministic() {
    for patches in ["", "+rostedt-2013-ok-to-push-task"] {
        check(|seed| {
            let mut s = spec("rt-push", "smp-4", "v6.10", &[], seed, false);
            s.patches = patches.into();
            s
        });
    }
}

#[test]
fn v3_8_paths_are_deterministic() {
    // idle_balance() from __schedule(), the 3.8 wakeup placement, CFS, and the post-schedule hook.
    check(|seed| spec("hackbench", "i7-4c8t", "v3.8", &[("tool", "old"), ("args", "1")], seed, false));
    check(|seed| {
        let mut s = spec("hackbench", "i7-4c8t", "v3.8", &[("tool", "old"), ("args", "1")], seed, false);
        s.patches = "+rostedt-2013-post-schedule,+rostedt-2013-irqs-on".into();
        s
    });
}
