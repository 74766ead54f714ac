//! tbench over the loopback model (src/workload/tbench.rs): its own output, the operations'
//! exchanges, the shortened run's convergence and errors that name the option.

use schedsim::run::{execute, RunResult};
use schedsim::spec::RunSpec;
use schedsim::workload::params::Params;
use schedsim::workload::tbench::Tbench;
use schedsim::workload::Workload;

fn spec(args: &str) -> RunSpec {
    let mut s = RunSpec::new("tbench");
    s.machine = "smp-4".into();
    s.background = Some("none".into());
    s.params = Params::from_pairs(vec![("args".into(), args.into())], "test");
    s
}

fn tbench(r: &RunResult) -> &Tbench {
    match &r.workload {
        Workload::Tbench(w) => w,
        w => panic!("not tbench: {}", w.name()),
    }
}

/// dbench's output, line by line, and an exchange per operation: two data packets, both
/// wakeups made in the NET_RX softirq.
#[test]
fn prints_dbenchs_lines_and_each_operation_is_one_exchange() {
    let r = execute(&spec("-t 1 2 127.0.0.1")).expect("runs");
    let w = tbench(&r);
    let out = &w.output;
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[0], "dbench version 4.00 - Copyright Andrew Tridgell 1999-2004");
    assert_eq!(lines[2], "Running for 1 seconds with load 'schedsim:tbench-loadfile.txt' and minimum warmup 0 secs");
    assert_eq!(lines[3], "2 of 2 processes prepared for launch   0 sec");
    assert_eq!(lines[4], "releasing clients");
    assert!(lines[5].starts_with("   2  ") && lines[5].contains(" MB/sec  execute   1 sec  latency "), "{}", lines[5]);
    assert!(lines[6].starts_with("   2  cleanup   2 sec"), "{}", lines[6]);
    assert!(out.contains(" Operation      Count    AvgLat    MaxLat\n ----------------------------------------\n"));
    let last = lines.last().unwrap();
    assert!(last.starts_with("Throughput ") && last.contains(" MB/sec  2 clients  2 procs  max_latency="), "{last}");
    assert!(w.throughput > 0.0);
    // Operations that exchange packets: each is a request and a response.
    let ops: u64 = w.children.iter().map(|c| c.ops.iter().map(|o| o.count).sum::<u64>()).sum();
    let deltree = w.children.iter().map(|c| c.ops[4].count).sum::<u64>();
    let net = &w.net;
    assert!(net.data_packets >= 2 * (ops - deltree), "{ops} operations, {net:?}");
    assert_eq!(net.data_ready_wakeups_task, 0, "{net:?}");
    assert!(net.data_ready_wakeups_softirq > 0);
}

/// The shortened default (-t 1) is long enough: the MB/s of seconds 3-4 of a `-t 4` run is
/// within 2% of seconds 1-2's.
#[test]
fn the_shortened_run_has_converged() {
    let r = execute(&spec("-t 4 1")).expect("runs");
    let w = tbench(&r);
    let reps = &w.reports;
    assert_eq!(reps.len(), 4, "{reps:?}");
    // Each line is the mean since the warm-up: bytes(t) = rate(t) * t.
    let bytes = |i: usize| reps[i].1 * reps[i].0;
    let first = bytes(1) / reps[1].0;
    let second = (bytes(3) - bytes(1)) / (reps[3].0 - reps[1].0);
    assert!((second / first - 1.0).abs() <= 0.02, "{first} then {second} MB/s");
}

/// Errors in tbench's options name them.
#[test]
fn bad_options_are_named() {
    let err = |a: &str| execute(&spec(a)).err().expect("an error");
    assert!(err("-t 1").contains("NPROCS"));
    assert!(err("-t 1 abc").contains("NPROCS 'abc'"));
    assert!(err("-t x 2").contains("-t x"));
    assert!(err("-F 2").contains("'-F'"));
    assert!(err("-c /nonexistent/loadfile 2").contains("/nonexistent/loadfile"));
}
