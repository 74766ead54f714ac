//! A panic inside a run prints the run's reproduce line and its last trace records before the
//! panic message (`src/crash.rs`), and still exits as a panic does (101). The panic is a
//! deliberate one, asked for with the hidden `--panic-at-ms` flag of `schedsim run`.

use std::process::{Command, Stdio};

fn panicking_run(extra: &[&str]) -> String {
    let mut args = vec!["run", "pingpong", "iters=100000", "--quiet", "--panic-at-ms", "5"];
    args.extend_from_slice(extra);
    let o = Command::new(env!("CARGO_BIN_EXE_schedsim"))
        .args(&args)
        .env_remove("RUST_BACKTRACE")
        .stdout(Stdio::null())
        .output()
        .expect("schedsim runs");
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(o.status.code(), Some(101), "a panic exits 101: {err}");
    err
}

#[test]
fn a_panic_names_the_reproduce_line_then_the_trace_tail_then_the_message() {
    let dir = std::env::temp_dir().join(format!("schedsim-panic-report-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let trace = dir.join("t.txt");
    let err = panicking_run(&["--trace", trace.to_str().unwrap()]);
    let line = err
        .find("# schedsim run --workload pingpong iters=100000")
        .unwrap_or_else(|| panic!("no reproduce line: {err}"));
    assert!(err[line..].lines().next().unwrap().contains("--machine smp-4 --kernel v6.10"), "{err}");
    let tail = err.find("the last 20 trace records").unwrap_or_else(|| panic!("no trace tail: {err}"));
    let msg = err.find("deliberate panic").unwrap_or_else(|| panic!("no panic message: {err}"));
    assert!(line < tail && tail < msg, "line, records, message in this order: {err}");
    let records = err[tail..msg].lines().skip(1).filter(|l| l.contains(": sched_") || l.contains(": ipi_")).count();
    assert!(records > 0, "the tail holds formatted records: {err}");
    assert!(!trace.exists(), "a failed run leaves no trace file");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn without_tracing_the_report_says_so() {
    let err = panicking_run(&[]);
    assert!(err.contains("# schedsim run --workload pingpong"), "{err}");
    assert!(err.contains("tracing was off"), "{err}");
    assert!(err.contains("deliberate panic"), "{err}");
}
