//! schbench 2023 (48aed1d) end to end: the message accounting (every request follows one
//! wakeup by its message thread), the final blocks as the run's own histograms give them, the
//! metric (the final Request Latencies 90.0th), determinism, and the command line's errors
//! naming the option.

use schedsim::run::{execute, RunResult};
use schedsim::spec::RunSpec;
use schedsim::workload::params::Params;
use schedsim::workload::schbench23::Schbench23;
use schedsim::workload::Workload;
use std::process::Command;

fn spec(machine: &str, args: &str) -> RunSpec {
    let mut s = RunSpec::new("schbench23");
    s.background = Some("none".into());
    s.machine = machine.into();
    s.kernel = "v6.10".into();
    let a = format!("args={args}");
    s.params = Params::parse([a.as_str()], "test").expect("valid parameters");
    s
}

fn of(r: &RunResult) -> &Schbench23 {
    match &r.workload {
        Workload::Schbench23(w) => w,
        other => panic!("not a schbench23 run: {other:?}"),
    }
}

#[test]
fn requests_match_worker_wakeups_and_the_final_blocks() {
    let r = execute(&spec("icx-vm-32", "-m 2 -t 4 -r 4")).expect("valid spec");
    assert!(r.finished);
    let w = of(&r);
    let nw = w.workers.len() as u64;
    assert_eq!(nw, 8);
    // Each loop: the worker queues itself, its message thread stamps and posts it, it returns
    // from msg_and_wait() and runs one request. The stop leaves at most one wakeup per worker
    // without its request (the last post lets it see `stopping`).
    assert!(w.loops > 1000, "{} requests", w.loops);
    assert_eq!(w.loops, w.workers.iter().map(|x| x.loop_count).sum::<u64>());
    assert!(w.woken >= w.loops && w.woken <= w.loops + nw, "woken {} requests {}", w.woken, w.loops);
    assert!(w.posted <= w.woken + nw && w.woken <= w.posted + nw, "posted {} woken {}", w.posted, w.woken);
    // Requests take over 100 us (the usleep plus the matrix work): every one is recorded, and
    // the final request block counts the requests since the last reset (no warmup under 30 s:
    // the stats are zeroed only by the interval reports, never in a 4 s run).
    let rh = w.final_request.as_ref().expect("final request histogram");
    assert_eq!(rh.nr_samples(), w.loops);
    assert!(rh.min() as u64 > 100 + w.math_ns / 1000 - 1, "min request {} us", rh.min());
    let wh = w.final_wakeup.as_ref().expect("final wakeup histogram");
    assert!(wh.nr_samples() <= w.woken);
    let out = &w.output;
    assert!(
        out.contains(&format!("Request Latencies percentiles (usec) runtime 4 (s) ({} total samples)", w.loops)),
        "{out}"
    );
    assert!(out.contains("Wakeup Latencies percentiles (usec) runtime 4 (s)"), "{out}");
    assert!(out.contains("RPS percentiles (requests) runtime 4 (s)"), "{out}");
    assert!(out.ends_with(&format!("average rps: {:.2}\n", w.loops as f64 / 4.0)), "{out}");
    // The metric is the final block's 90.0th.
    let m = r.workload.metric(&r.facts());
    assert_eq!(m.value, rh.percentile(900) as f64);
}

#[test]
fn same_seed_same_output() {
    let a = execute(&spec("icx-vm-32", "-m 1 -t 4 -r 2")).unwrap();
    let b = execute(&spec("icx-vm-32", "-m 1 -t 4 -r 2")).unwrap();
    assert_eq!(of(&a).output, of(&b).output);
    assert_eq!((a.sim_ns, a.actions), (b.sim_ns, b.actions));
}

#[test]
fn cli_errors_name_the_option() {
    for (args, names) in [
        (&["-m", "x"][..], "-m"),
        (&["-F", "1e3"][..], "-F"),
        (&["-A", "50"][..], "-A"),
        (&["-r", "0"][..], "-r"),
        (&["--bogus"][..], "--bogus"),
    ] {
        let mut argv = vec!["run", "schbench23", "--machine", "icx-vm-32", "--"];
        argv.extend_from_slice(args);
        let o = Command::new(env!("CARGO_BIN_EXE_schedsim")).args(&argv).output().unwrap();
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(names), "{args:?}: the error names the option: {stderr}");
        assert!(o.stdout.is_empty());
    }
}
