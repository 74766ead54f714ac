//! The smaller command-line items of issue 15: `bench --runs 0` and `bench --json`, the
//! ranking of the "busiest CPUs" table, schbench's unit in `compare`, and the sched-feature
//! table reaching the fair class (and refusing what the model does not read).

use schedsim::run::{execute, trace_hash};
use schedsim::spec::RunSpec;
use schedsim::workload::params::Params;
use std::process::Command;

fn schedsim(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_schedsim")).args(args).output().unwrap();
    (out.status.code().unwrap_or(-1), String::from_utf8(out.stdout).unwrap(), String::from_utf8(out.stderr).unwrap())
}

#[test]
fn bench_runs_zero_is_an_error_with_and_without_json() {
    for args in [&["bench", "--runs", "0"][..], &["bench", "--json", "--runs", "0"]] {
        let (code, out, err) = schedsim(args);
        assert_eq!(code, 2, "{args:?}");
        assert!(out.is_empty(), "{out}");
        assert!(err.contains("--runs 0 is out of range (1..=1000)"), "{err}");
    }
}

#[test]
fn the_busiest_cpus_are_the_ones_that_worked() {
    // CPU8 sends to CPU16; every other CPU idles (with IRQs off in MWAIT, which used to rank them).
    let (code, out, err) = schedsim(&["run", "ipistorm", "numipi=300", "--background", "none", "--limit-ms", "100"]);
    assert_eq!(code, 0, "{err}");
    let table = out.split("Time by phase on the busiest CPUs (ms):").nth(1).expect("the table");
    let cpus: Vec<&str> = table.lines().skip(2).filter_map(|l| l.split_whitespace().next()).take(2).collect();
    let mut cpus = cpus;
    cpus.sort();
    assert_eq!(cpus, ["16", "8"], "{table}");
}

#[test]
fn compare_labels_schbench_in_microseconds() {
    let (code, out, err) =
        schedsim(&["compare", "schbench", "--runs", "1", "--kernels", "v6.10", "--", "-m", "1", "-t", "2", "-r", "1"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("p99_wakeup(us)"), "{out}");
    assert!(!out.contains("time(ms)"), "{out}");
}

fn trace_of(workload: &str, params: &[&str], kernel: &str, features: &[&str]) -> u64 {
    let mut s = RunSpec::new(workload);
    s.machine = "smp-4".into();
    s.kernel = kernel.into();
    s.background = Some("none".into());
    s.params = Params::parse(params.iter().copied(), "test").unwrap();
    s.features = features.iter().map(|f| f.to_string()).collect();
    s.trace = true;
    let r = execute(&s).unwrap();
    assert!(r.finished);
    trace_hash(&r.trace)
}

fn hackbench(kernel: &str, features: &[&str]) -> u64 {
    trace_of("hackbench", &["tool=perf", "args=-p -g 2 -l 50"], kernel, features)
}

#[test]
fn the_fair_class_features_are_reachable_by_feature() {
    let base = hackbench("v6.10", &[]);
    assert_eq!(base, hackbench("v6.10", &["PLACE_LAG", "RUN_TO_PARITY"]), "naming a default changes nothing");
    assert_ne!(base, hackbench("v6.10", &["NO_PLACE_LAG"]), "PLACE_LAG reaches EEVDF");
    let cfs = hackbench("v6.1", &[]);
    assert_ne!(cfs, hackbench("v6.1", &["NO_START_DEBIT"]), "START_DEBIT reaches CFS");
    // hackbench's children all sleep long while the main task forks, so all get the same
    // sleeper credit: schbench's sleepers differ.
    let schbench = |f: &[&str]| trace_of("schbench", &["args=-m 2 -t 8 -r 1"], "v6.1", f);
    assert_ne!(schbench(&[]), schbench(&["NO_GENTLE_FAIR_SLEEPERS"]), "GENTLE_FAIR_SLEEPERS reaches CFS");
    // DELAY_DEQUEUE reaches EEVDF where the kernel has the patch, and only there.
    assert_ne!(hackbench("v6.18", &[]), hackbench("v6.18", &["NO_DELAY_DEQUEUE"]), "DELAY_DEQUEUE reaches v6.18");
    assert_eq!(base, hackbench("v6.10", &["DELAY_DEQUEUE"]), "v6.10 has no delayed dequeue");
    // Every fair feature lands in every CPU's cfs_rq (RUN_TO_PARITY changes nothing in these
    // runs: a slice ends before the tick that would test it).
    let mut s = RunSpec::new("idle");
    s.machine = "smp-4".into();
    s.features = vec!["NO_RUN_TO_PARITY".into(), "NO_PLACE_DEADLINE_INITIAL".into()];
    let k = schedsim::run::build(&s).unwrap();
    for c in &k.cpus {
        assert!(!c.rq.cfs.feat.run_to_parity && !c.rq.cfs.feat.place_deadline_initial && c.rq.cfs.feat.place_lag);
    }
}

#[test]
fn an_unmodelled_feature_is_refused() {
    let (code, _, err) = schedsim(&["run", "idle", "--feature", "NO_UTIL_EST", "--limit-ms", "1"]);
    assert_eq!(code, 2);
    assert!(err.contains("sched feature UTIL_EST is not modelled"), "{err}");
    let (code, out, _) = schedsim(&["list"]);
    assert_eq!(code, 0);
    assert!(out.lines().any(|l| l.contains("UTIL_EST") && l.contains("(not modelled)")), "{out}");
}

#[test]
fn bench_scaling_prints_a_growth_line_only_with_two_sizes() {
    let (code, one, err) = schedsim(&["bench", "--scaling", "--sizes", "8", "--runs", "1"]);
    assert_eq!(code, 0, "{err}");
    assert!(one.contains("ns/action"), "{one}");
    assert!(!one.contains("run cost per action"), "one size has no growth to show:\n{one}");
    let (code, two, err) = schedsim(&["bench", "--scaling", "--sizes", "8,16", "--runs", "2"]);
    assert_eq!(code, 0, "{err}");
    assert!(two.contains("run cost per action, 16 CPUs / 8 CPUs"), "{two}");
    // Two rounds: each workload's growth with the range of the rounds' ratios.
    let line = two.lines().find(|l| l.trim_start().starts_with("hackbench") && l.contains("rounds"));
    assert!(line.is_some_and(|l| l.contains("x (rounds ") && l.contains("x to ")), "{two}");
    assert!(!two.contains("steady"), "no steady-state figures unless asked:\n{two}");
}

/// `--steady` adds a steady-state column and, for every workload but idle, a growth line of
/// it; each figure is a number (a run twice as long adds actions at every size).
#[test]
fn bench_scaling_steady_adds_the_steady_state_cost() {
    let (code, out, err) = schedsim(&["bench", "--scaling", "--sizes", "8,16", "--steady"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("steady ns/action"), "{out}");
    let block = out.split("steady-state cost per action, 16 CPUs / 8 CPUs").nth(1);
    let block = block.unwrap_or_else(|| panic!("no steady growth block:\n{out}"));
    for w in ["ipistorm", "nanosleep", "hackbench"] {
        let line = block.lines().find(|l| l.trim_start().starts_with(w));
        let figure = line.and_then(|l| l.split_whitespace().nth(1)).and_then(|f| f.strip_suffix('x'));
        assert!(figure.is_some_and(|f| f.parse::<f64>().is_ok_and(|g| g > 0.0)), "{w}:\n{out}");
    }
    let table = out.lines().filter(|l| l.split_whitespace().next().is_some_and(|c| c.parse::<u32>().is_ok()));
    let rows: Vec<&str> = table.filter(|l| l.contains(" nanosleep ") || l.contains(" hackbench ")).collect();
    assert_eq!(rows.len(), 4, "{out}");
    for row in rows {
        let cells: Vec<&str> = row.split_whitespace().collect();
        assert!(cells.len() == 9 && cells[7].parse::<f64>().is_ok(), "steady cell of {row}");
    }
    let (code, _, err) = schedsim(&["bench", "--steady"]);
    assert_ne!(code, 0);
    assert!(err.contains("--scaling"), "{err}");
}

/// `machine --scaled-epyc N` writes the machine `bench --scaling` runs at N CPUs, which `run`
/// accepts; a size that is not a multiple of 8, or no source at all, is an error.
#[test]
fn machine_scaled_epyc_writes_bench_scalings_machine() {
    let dir = std::env::temp_dir().join(format!("schedsim-scaled-epyc-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("m64.toml");
    let (code, _, err) = schedsim(&["machine", "--scaled-epyc", "64", "-o", file.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(text.contains("name = \"scaled-epyc-64\""), "{text}");
    let (code, out, err) =
        schedsim(&["run", "nanosleep", "procs=64", "duration_ms=1", "--machine", file.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("64 CPUs"), "{out}");
    let (code, _, err) = schedsim(&["machine", "--scaled-epyc", "12"]);
    assert_ne!(code, 0);
    assert!(err.contains("12 CPUs: expected a multiple of 8"), "{err}");
    let (code, _, err) = schedsim(&["machine"]);
    assert_ne!(code, 0);
    assert!(err.contains("--scaled-epyc"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}
