//! The memory limit: the estimate `run::build` checks before it allocates a run
//! (`schedsim::limits::estimate_memory`) against the heap a run really reaches, counted by
//! this test binary's allocator, and the limit's answers at the sizes issue 15 and 16 name
//! (a million spinners pass it; a million schbench workers are refused).

use schedsim::limits::{self as params, MAX_MEMORY_BYTES};
use schedsim::run;
use schedsim::spec::RunSpec;
use schedsim::workload::params::Params;
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

/// The system allocator, keeping the bytes in use and their peak.
struct Counting;
static IN_USE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(l) };
        if !p.is_null() {
            let now = IN_USE.fetch_add(l.size(), Relaxed) + l.size();
            PEAK.fetch_max(now, Relaxed);
        }
        p
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        unsafe { System.dealloc(p, l) };
        IN_USE.fetch_sub(l.size(), Relaxed);
    }
}

#[global_allocator]
static A: Counting = Counting;

fn spec(workload: &str, machine: &str, params: &[&str]) -> RunSpec {
    let mut s = RunSpec::new(workload);
    s.machine = machine.into();
    s.background = Some("none".into());
    s.limit_ns = 2_000_000;
    s.params = Params::parse(params.iter().copied(), "test").unwrap();
    s
}

/// The heap a run of `s` reaches above what was in use before it (bytes), and its estimate.
fn measure(s: &RunSpec) -> (u64, u64) {
    let k = run::build(s).expect("builds");
    let nr = k.m.topo.nr_cpus;
    let (tasks, bytes, _) = k.progs.workload.planned_size(nr);
    drop(k);
    let before = IN_USE.load(Relaxed);
    PEAK.store(before, Relaxed);
    let r = run::execute(s).expect("runs");
    let peak = (PEAK.load(Relaxed) - before) as u64;
    drop(r);
    (peak, params::estimate_memory(u64::from(nr), tasks, bytes))
}

/// One test (the counter is global): every case's estimate is above its measured peak, and
/// within a small factor of it where tasks or CPUs dominate.
#[test]
fn the_estimate_bounds_the_heap_a_run_reaches() {
    let dir = std::env::temp_dir().join(format!("schedsim-limits-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // 2048 CPUs: the EPYC preset with 16 sockets.
    let big = dir.join("big.toml");
    let text = schedsim::hw::preset_text("epyc-7763-2s").unwrap().replace("\nsockets = 2", "\nsockets = 16");
    std::fs::write(&big, text).unwrap();
    let big = big.display().to_string();
    let cases: Vec<(RunSpec, bool)> = vec![
        (spec("idle", "smp-4", &[]), false),
        (spec("spinners", "smp-4", &["tasks=8000", "start=0", "duration_ms=1"]), true),
        (spec("nanosleep", "smp-4", &["procs=4000", "duration_ms=1"]), true),
        (spec("schbench", "smp-4", &["args=-m 2 -t 1000 -r 1"]), true),
        (spec("hackbench", "smp-4", &["args=-g 40 -l 1"]), false),
        (spec("idle", &big, &[]), true),
    ];
    let mut report = Vec::new();
    for (s, dominated) in &cases {
        let (peak, est) = measure(s);
        report.push(format!("{} {:?} on {}: peak {peak} B, estimate {est} B", s.workload, s.params, s.machine));
        assert!(peak <= est, "{}", report.join("\n"));
        if *dominated {
            assert!(est <= 6 * peak + (16 << 20), "estimate far above the peak:\n{}", report.join("\n"));
        }
    }
    eprintln!("{}", report.join("\n"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_million_spinners_pass_and_a_million_schbench_workers_do_not() {
    // `run spinners tasks=1000000` on the default machine (issue 16's scaling run).
    assert!(params::check_memory(256, 1_000_000, 0, "spinners tasks=").is_ok());
    // The largest machine with a million tasks still fits.
    assert!(params::estimate_memory(8192, 1_000_000, 0) <= MAX_MEMORY_BYTES);
    // `schbench -m 1 -t 1000000`: each worker keeps its latency histogram.
    let hist = 2 * (schedsim::workload::schbench_stats::PLAT_NR * 4) as u64;
    let e = params::check_memory(256, 1_000_002, 1_000_000 * hist, "schbench -m x -t").unwrap_err();
    assert!(e.contains("schbench -m x -t") && e.contains("--machine") && e.contains("at most 8 GiB"), "{e}");
    assert!(!e.contains('\n'));
    // Saturating, not overflowing, on absurd counts.
    assert_eq!(params::estimate_memory(u64::MAX, u64::MAX, u64::MAX), u64::MAX);
}

#[test]
fn the_limits_are_stated_in_run_help() {
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_schedsim")).args(["run", "--help"]).output().unwrap();
    let help = String::from_utf8_lossy(&o.stdout);
    for want in ["Limits:", "tasks", "8192 CPUs", "3600000 ms", "8 GiB of estimated memory"] {
        assert!(help.contains(want), "run --help lacks {want:?}:\n{help}");
    }
}
