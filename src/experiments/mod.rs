//! The built-in experiments (`schedsim reproduce NAME`): each runs its variants over several
//! seeds and prints the table with the published figures beside the simulated ones.

pub mod hackbench2013;
pub mod ipistorm;
pub mod ipistorm_intel;
pub mod nohz;
pub mod rtpush;
pub mod schbench_ttwu;

use crate::report::Comparison;
use crate::run::{execute, RunResult, RunSpec};

/// Options shared by all experiments.
#[derive(Debug, Clone)]
pub struct ExpOpts {
    /// Seeds per variant.
    pub runs: usize,
    /// First seed (the runs use `seed .. seed + runs`).
    pub seed: u64,
    /// Worker threads for independent runs (never inside one run).
    pub jobs: usize,
    /// Workload parameters overriding the experiment's (e.g. a smaller numipi).
    pub params: Vec<(String, String)>,
    /// Background profile and preemption model overriding the machine's defaults.
    pub background: Option<String>,
    pub preempt: Option<String>,
    /// The named kernel the variants are built on, for experiments that take one
    /// (hackbench-2013: v3.8 by default).
    pub kernel: Option<String>,
}

impl Default for ExpOpts {
    fn default() -> Self {
        ExpOpts { runs: 5, seed: 1, jobs: 2, params: Vec::new(), background: None, preempt: None, kernel: None }
    }
}

/// An experiment of the acceptance suite.
pub struct Experiment {
    pub name: &'static str,
    pub description: &'static str,
    pub run: fn(&ExpOpts) -> Result<Comparison, String>,
}

pub const EXPERIMENTS: &[Experiment] = &[Experiment {
    name: "ipistorm",
    description: "CPU8 sends 100k waiting smp_call_function_single() to CPU16 on a 2S EPYC 7763 (C2 off): v6.10, SM_IDLE, revert of b2a02fc43a1f, TIF_NOTIFY_IPI RFC, softirq-flag RFC aligned/unaligned",
    run: ipistorm::reproduce,
}, Experiment {
    name: "ipistorm-intel",
    description: "Chen Yu's ipistorm on a 240-CPU 2-node Intel server (C1E and deeper off): v6.10 vs SM_IDLE, ten runs each, every run's time with its ungated newidle passes and rd->overloaded time",
    run: ipistorm_intel::reproduce,
}, Experiment {
    name: "schbench-ttwu",
    description: "schbench -m 2 -t 16 on a 32-vCPU Ice Lake VM: ttwu_pending cleared early (v6.1), revert of f3dd3f674555, the fix d6962c4fe8f9 (v6.2)",
    run: schbench_ttwu::reproduce,
}, Experiment {
    name: "ilb-polling",
    description: "8 tasks on CPU 8, idle CPUs polling: v6.10, patch 1 only, patch 1 + softirq fix, v6.13 (kicks, ksoftirqd wakeups, nohz aborts, time to fill)",
    run: nohz::ilb_polling,
}, Experiment {
    name: "rt-warn",
    description: "PREEMPT_RT with patch 1: the do_softirq_post_smp_call_flush WARN, without and with 6675ce20046d",
    run: nohz::rt_warn,
}, Experiment {
    name: "nanosleep",
    description: "240 processes looping nanosleep(1 us) on 240 CPUs: share of CPU time in newidle balance and update_sd_lb_stats, v6.10 vs v6.13",
    run: nohz::nanosleep,
}, Experiment {
    name: "hackbench-2013",
    description: "perf stat -a hackbench 500 on an i7 4C/8T, on v3.8 (--kernel v6.10 for today's): idle_balance in __schedule vs Rostedt's 2013 post-schedule idle_balance (IRQs on), and with the nr_running re-check (at most 2 seeds, ~75-110 s wall each)",
    run: hackbench2013::reproduce,
}, Experiment {
    name: "rt-push",
    description: "a FIFO task woken onto the CPU of a pinned FIFO task it outranks (4-CPU SMP): v6.10 push_rt_task vs Rostedt's 2013 ok_to_push_task, and v3.8 (no RT_PUSH_IPI)",
    run: rtpush::reproduce,
}];

/// The experiments that take `--kernel`.
pub const TAKES_KERNEL: &[&str] = &["hackbench-2013"];

pub fn find(name: &str) -> Result<&'static Experiment, String> {
    EXPERIMENTS.iter().find(|e| e.name == name).ok_or_else(|| {
        let names: Vec<&str> = EXPERIMENTS.iter().map(|e| e.name).collect();
        format!("unknown experiment '{name}' (expected one of: {})", names.join(", "))
    })
}

/// Run `variants` x `runs` specs, `spec(variant, seed)` for seeds `seed, seed + 1, ...`, on
/// `jobs` threads. The first spec is validated before anything runs, so a bad parameter gives
/// its error at once. Returns each variant's results in seed order.
pub fn run_variants(
    o: &ExpOpts,
    variants: usize,
    runs: usize,
    spec: impl Fn(usize, u64) -> RunSpec,
) -> Result<Vec<Vec<RunResult>>, String> {
    let seed = o.seed;
    let specs: Vec<RunSpec> = (0..variants)
        .flat_map(|v| (0..runs).map(move |i| (v, seed + i as u64)))
        .map(|(v, s)| {
            let mut sp = spec(v, s);
            if o.background.is_some() {
                sp.background = o.background.clone();
            }
            if o.preempt.is_some() {
                sp.preempt = o.preempt.clone();
            }
            sp
        })
        .collect();
    crate::run::build(&specs[0])?;
    let planned = PLAN.with(|p| {
        let mut p = p.borrow_mut();
        let slot = p.as_mut()?;
        slot.extend(specs.iter().enumerate().map(|(i, s)| (i / runs, s.clone())));
        Some(())
    });
    if planned.is_some() {
        return Err(PLANNED.into());
    }
    if COLLECT_SPECS.load(std::sync::atomic::Ordering::Relaxed) {
        // The HTML report re-runs each variant's first seed with a trace window.
        let firsts = (0..variants).map(|v| specs[v * runs].clone());
        COLLECTED.lock().expect("no panics hold the lock").extend(firsts);
    }
    let mut results = run_all(&specs, o.jobs)?.into_iter();
    Ok((0..variants).map(|_| results.by_ref().take(runs).collect()).collect())
}

thread_local! {
    /// Set by [`plan`]: [`run_variants`] records its specs here instead of running them.
    static PLAN: std::cell::RefCell<Option<Vec<(usize, RunSpec)>>> = const { std::cell::RefCell::new(None) };
}
const PLANNED: &str = "planned, not run";

/// The runs an experiment would make with these options, as (variant index, spec) in its
/// order, without running any (`schedsim sweep` expands `experiment = NAME` with it).
pub fn plan(e: &Experiment, o: &ExpOpts) -> Result<Vec<(usize, RunSpec)>, String> {
    PLAN.with(|p| *p.borrow_mut() = Some(Vec::new()));
    let res = (e.run)(o);
    let specs = PLAN.with(|p| p.borrow_mut().take()).unwrap_or_default();
    match res {
        Err(m) if m == PLANNED => Ok(specs),
        Err(m) => Err(m),
        Ok(_) => Err(format!("experiment '{}' ran without planning its runs", e.name)),
    }
}

/// When set, [`run_variants`] records each variant's first-seed spec in [`take_collected`]
/// (for `--html`, which re-runs them with a trace window). Reporting only: no run changes.
pub static COLLECT_SPECS: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
static COLLECTED: std::sync::Mutex<Vec<RunSpec>> = std::sync::Mutex::new(Vec::new());

/// The specs collected since the last call (see [`COLLECT_SPECS`]).
pub fn take_collected() -> Vec<RunSpec> {
    std::mem::take(&mut *COLLECTED.lock().expect("no panics hold the lock"))
}

/// Runs finished and runs queued by [`run_all`] since the program started, for the progress
/// bar (read by the command line at coarse intervals; never read by a run).
pub static RUNS_DONE: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
pub static RUNS_QUEUED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// Run many independent specs on `jobs` threads; results come back in input order. Each run
/// is single-threaded and deterministic, so the result does not depend on `jobs`.
pub fn run_all(specs: &[RunSpec], jobs: usize) -> Result<Vec<RunResult>, String> {
    let jobs = jobs.max(1).min(specs.len().max(1));
    let next = std::sync::atomic::AtomicUsize::new(0);
    let mut out: Vec<Option<Result<RunResult, String>>> = (0..specs.len()).map(|_| None).collect();
    let slots = std::sync::Mutex::new(&mut out);
    RUNS_QUEUED.fetch_add(specs.len(), std::sync::atomic::Ordering::Relaxed);
    std::thread::scope(|sc| {
        for _ in 0..jobs {
            sc.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                if i >= specs.len() {
                    break;
                }
                let r = execute(&specs[i]);
                slots.lock().expect("no panics hold the lock")[i] = Some(r);
                RUNS_DONE.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            });
        }
    });
    out.into_iter().map(|r| r.expect("every spec ran")).collect()
}
