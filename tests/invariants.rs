//! Property tests: whatever the workload, seed and kernel, no task is ever on two runqueues,
//! and the runnable tasks are conserved across wakeups, sleeps and migrations (every
//! runqueue's counts match the tasks queued on it).

use proptest::prelude::*;
use schedsim::run::build;
use schedsim::spec::RunSpec;
use schedsim::workload::params::Params;

fn spec(workload: u8, kernel: u8, seed: u64) -> RunSpec {
    let (name, machine, params): (&str, &str, Vec<(&str, &str)>) = match workload {
        0 => ("spinners", "smp-4", vec![("tasks", "7"), ("start", "0"), ("duration_ms", "40")]),
        1 => ("nanosleep", "smp-4", vec![("procs", "6"), ("ns", "1000"), ("duration_ms", "20")]),
        2 => ("schbench", "smp-4", vec![("args", "-m 1 -t 5 -r 6 -w 1")]),
        3 => ("rt-push", "smp-4", vec![("woken_prio", if seed % 2 == 0 { "60" } else { "40" })]),
        _ => ("spinners", "xeon-128-4n", vec![("tasks", "40"), ("start", "0-3"), ("duration_ms", "30")]),
    };
    let mut s = RunSpec::new(name);
    s.machine = machine.into();
    s.kernel = ["v6.1", "v6.10", "v6.13"][kernel as usize].into();
    s.seed = seed;
    if workload == 3 && seed % 3 == 0 {
        s.patches = "+rostedt-2013-ok-to-push-task".into();
    }
    s.params = Params::from_pairs(params.into_iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(), "test");
    s
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, .. ProptestConfig::default() })]
    #[test]
    fn no_task_on_two_runqueues_and_runnable_tasks_are_conserved(workload in 0u8..5, kernel in 0u8..3, seed in 1u64..1000) {
        let s = spec(workload, kernel, seed);
        let mut k = build(&s).expect("valid spec");
        let mut checks = 0u64;
        // Check every 0.25 ms of simulated time (every 20 us for the 2 ms rt-push case).
        let step = if workload == 3 { 20_000u64 } else { 250_000u64 };
        let mut t = 0;
        while !k.finished() && t < 8_000_000_000 {
            t += step;
            k.run(t);
            checks += 1;
            if let Err(e) = k.check_invariants() {
                return Err(TestCaseError::fail(format!("{} seed {seed}: {e}", s.workload)));
            }
            if k.q.is_empty() {
                break;
            }
        }
        prop_assert!(k.finished(), "{} seed {seed}: did not finish after {checks} checks", s.workload);
        prop_assert!(checks > 10);
    }
}
