//! The command line: `schedsim run | compare | reproduce | list | bench | machine | host-run |
//! validate | import | sweep | merge`. The only module that reads the wall clock; besides it only `run`
//! (input files), `trace::sink` (trace files) and `sweep` (grid and result files) touch files.

pub mod bench;
pub mod bench_users;
pub mod calibrate;
pub mod explore;
pub mod host;
pub mod host_run;
pub mod import;
mod same_file;
pub mod signals;
pub mod sweep;
pub mod validate;

use crate::experiments::{self, ExpOpts};
use crate::report::{self, CompareRow, Comparison};
use crate::run;
use crate::spec::{scenario, RunSpec};
use crate::workload::params::Params;
use crate::workload::Workload;
use clap::{Args, Parser, Subcommand};
use serde_json::json;
use std::path::PathBuf;

#[derive(Parser, Debug)]
#[command(
    name = "schedsim",
    version,
    about = "Deterministic simulator of the Linux scheduler's SMP machinery (wakeups, IPIs, idle, softirqs, balancing)"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand, Debug)]
enum Cmd {
    /// Run one scenario and print the workload's output and perf-stat-style counters.
    #[command(after_help = crate::limits::limits_help())]
    Run(RunArgs),
    /// Run a scenario on several kernels over N seeds: an mmtests-style table.
    #[command(after_help = crate::limits::limits_help())]
    Compare(CompareArgs),
    /// Run built-in experiments with the published figures beside the simulated ones.
    Reproduce(ReproduceArgs),
    /// List machines, kernels, patches, sched features, workloads, scenarios and experiments.
    List(ListArgs),
    /// Measure the simulator's speed: actions per second and simulated time per wall second.
    Bench(BenchArgs),
    /// Write a machine file: `--from-host` reads this machine's /sys and /proc.
    Machine(host::MachineArgs),
    /// Run a built-in program for real on this machine: pingpong, perf-pipe, messaging, nanosleep.
    HostRun(host_run::HostRunArgs),
    /// Run a program for real under tracefs and in the model on this host's machine file; one table.
    Validate(validate::ValidateArgs),
    /// Turn a recorded sched trace (tracefs text, trace-cmd report, perf script) into an rt-app
    /// workload, with a report of what it assumed.
    Import(import::ImportArgs),
    /// Run a grid of kernels x machines x parameters x seeds (and experiments), one JSON line
    /// per run: resumable, parallel, and `--shard I/N` for job arrays.
    Sweep(sweep::SweepArgs),
    /// Merge sweep outputs (shards) into comparison and `%change` tables.
    Merge(sweep::MergeArgs),
    /// Run a scenario many times perturbing the order of same-time actions and the jitter
    /// draws, with the invariant checkers on; print each rule violated, minimized, with a trace
    /// excerpt and a `--replay` line.
    Explore(explore::ExploreArgs),
}

// The help texts that list names come from the tables that define them (scenarios, kernels,
// machines, features, experiments), so `--help` cannot fall behind (tests/help_tables.rs).

fn scenario_help() -> String {
    let names: Vec<&str> = scenario::BUILTIN.iter().map(|b| b.0).collect();
    format!("Built-in scenario (default ipistorm; `schedsim list` describes them): {}", names.join(", "))
}

fn workload_help() -> String {
    let names: Vec<&str> = crate::workload::WORKLOADS.iter().map(|w| w.0).collect();
    format!(
        "The bare workload NAME with its own defaults instead of a scenario (what the `# schedsim run` header \
         of a run prints, so that it pastes back as the same run): {}",
        names.join(", ")
    )
}

fn machine_help() -> String {
    format!(
        "Machine preset, or a machine file PATH.toml in the same format (`schedsim list --machine NAME` \
         prints one): {}",
        crate::hw::preset_names().join(", ")
    )
}

fn kernel_help() -> String {
    let names: Vec<&str> = crate::linux::patches::KERNELS.iter().map(|k| k.name).collect();
    format!(
        "Named kernel, optionally with patch deltas: NAME[+ID][-ID]... (patch ids: `schedsim list`); NAME is \
         one of: {}",
        names.join(", ")
    )
}

fn feature_help() -> String {
    use crate::linux::kernel::sched::features::SCHED_FEATURES;
    let names: Vec<&str> = SCHED_FEATURES.iter().filter(|f| f.modelled).map(|f| f.name).collect();
    format!(
        "Sched feature, NAME or NO_NAME (repeatable); the features.h entries the model honours: {}",
        names.join(", ")
    )
}

fn hz_help() -> String {
    let hz: Vec<String> = crate::limits::HZ_CHOICES.iter().map(|h| h.to_string()).collect();
    format!("CONFIG_HZ (default: the machine's): {}", hz.join(", "))
}

fn background_help() -> String {
    format!(
        "Background activity besides the workload (default: the machine's): {}, or a profile FILE.toml",
        crate::background::names().join(", ")
    )
}

fn preempt_help() -> String {
    format!(
        "Preemption model (dynamic-X: PREEMPT_DYNAMIC booted with preempt=X; default: the machine's): {}",
        crate::linux::config::Preempt::NAMES.join(", ")
    )
}

fn unknown_help() -> String {
    let names: Vec<&str> = crate::unknowns::UNKNOWNS.iter().map(|u| u.name).collect();
    format!(
        "Set a named unknown, a set-up fact the published runs did not record (repeatable; `schedsim list \
         --unknowns` gives each one's values, mechanism and range): {}",
        names.join(", ")
    )
}

fn experiments_help() -> String {
    let names: Vec<&str> = experiments::EXPERIMENTS.iter().map(|e| e.name).collect();
    format!("Experiments to run (default: all): {}, or an experiment file FILE.toml", names.join(", "))
}

#[derive(Args, Debug)]
struct ListArgs {
    /// Print this machine preset's TOML file instead (a starting point for `--machine FILE.toml`).
    #[arg(long)]
    machine: Option<String>,
    /// Print only the named unknowns: each one's values, mechanism, range with its sources,
    /// default, and the measurement that would collapse it.
    #[arg(long, conflicts_with = "machine")]
    unknowns: bool,
    /// Print one JSON document instead of text.
    #[arg(long)]
    json: bool,
}

#[derive(Args, Debug, Clone)]
struct SpecArgs {
    #[arg(long, help = machine_help())]
    machine: Option<String>,
    #[arg(long, help = kernel_help())]
    kernel: Option<String>,
    /// Patches on top of the kernel: +ID,-ID (commit ids or RFC keys); each patch once.
    #[arg(long, allow_hyphen_values = true)]
    patch: Option<String>,
    #[arg(long = "feature", help = feature_help())]
    features: Vec<String>,
    #[arg(long, help = hz_help())]
    hz: Option<u32>,
    /// Enable or disable an idle state: NAME=on|off (repeatable), e.g. C2=off.
    #[arg(long = "cstate")]
    cstates: Vec<String>,
    /// Stop after this much simulated time (ms): 1..=3600000 (at most one hour).
    #[arg(long, allow_negative_numbers = true)]
    limit_ms: Option<u64>,
    /// Build the kernel with CONFIG_PREEMPT_RT (TTWU_QUEUE off, softirqs in ksoftirqd).
    #[arg(long)]
    preempt_rt: bool,
    #[arg(long, value_name = "NAME|none|FILE", help = background_help())]
    background: Option<String>,
    #[arg(long, value_name = "MODEL", help = preempt_help())]
    preempt: Option<String>,
    #[arg(long = "unknown", value_name = "NAME=VALUE", help = unknown_help())]
    unknowns: Vec<String>,
}

#[derive(Args, Debug)]
struct RunArgs {
    #[arg(help = scenario_help())]
    scenario: Option<String>,
    /// Workload parameters: key=value for ipistorm (e.g. numipi=1000 offset=8); for schbench,
    /// its own options after `--` (e.g. -- -m 2 -t 16).
    params: Vec<String>,
    /// A TOML scenario file instead of a built-in scenario.
    #[arg(long = "scenario", value_name = "FILE")]
    scenario_file: Option<PathBuf>,
    #[arg(long, value_name = "NAME", conflicts_with_all = ["scenario_file", "rtapp"], help = workload_help())]
    workload: Option<String>,
    #[command(flatten)]
    spec: SpecArgs,
    /// Seed of the run (0..=18446744073709551615).
    #[arg(long, allow_negative_numbers = true)]
    seed: Option<u64>,
    /// Write the trace of the run to FILE, streamed while it runs: ftrace text, or Perfetto
    /// protobuf for FILE.perfetto-trace / .pftrace, or trace-cmd's trace.dat for FILE.dat.
    #[arg(long, value_name = "FILE")]
    trace: Option<PathBuf>,
    /// Trace file format, overriding the file name: text, perfetto or dat.
    #[arg(long, value_name = "FORMAT", requires = "trace")]
    trace_format: Option<String>,
    /// Also write a self-contained HTML report (timeline, phases, wakeup latency) to FILE.
    #[arg(long, value_name = "FILE")]
    html: Option<PathBuf>,
    /// The report's timeline window: CPUS@TIME_MS[+SPAN_US] (a cpulist, ms since boot as the
    /// trace prints it, the span in us; default: the first IPI or kick of the workload, on the
    /// CPUs its tasks ran on).
    #[arg(long, value_name = "CPUS@TIME[+SPAN]", requires = "html")]
    html_window: Option<String>,
    /// No progress display on stderr.
    #[arg(long)]
    quiet: bool,
    /// Print one JSON document instead of text.
    #[arg(long)]
    json: bool,
    /// Testing the panic report: panic deliberately after this much simulated time (ms).
    #[arg(long, value_name = "MS", hide = true)]
    panic_at_ms: Option<u64>,
    /// Run an rt-app JSON file (rt-app's grammar; errors name the JSON path).
    #[arg(long, value_name = "FILE.json", conflicts_with = "scenario_file")]
    rtapp: Option<PathBuf>,
    /// With an rt-app workload: write rt-app's per-thread log files into DIR.
    #[arg(long, value_name = "DIR")]
    log_dir: Option<PathBuf>,
    /// Run the invariant checkers (lost wakeups, ttwu_pending, IPI elision, csd locks, IRQs off,
    /// rq locks, modelled WARN_ONs) and print their violations. They only observe: the run is
    /// the same. Violations are findings, not errors: the exit status stays 0.
    #[arg(long)]
    check: bool,
    /// Replay a perturbation printed by `schedsim explore` (its choices of same-time actions and
    /// re-seeded jitter streams) on this run.
    #[arg(long, value_name = "TOKEN")]
    replay: Option<String>,
    /// The CPUs whose per-domain load-balancing counters the report prints, as /proc/schedstat
    /// has them (default: the busiest CPUs it shows), e.g. 16 or 0-3,8.
    #[arg(long, value_name = "CPULIST")]
    schedstat: Option<String>,
}

#[derive(Args, Debug)]
struct CompareArgs {
    #[arg(default_value = "ipistorm", help = scenario_help())]
    scenario: String,
    /// Workload parameters, key=value.
    params: Vec<String>,
    /// Kernels to compare, comma-separated; each NAME[+ID][-ID]... e.g. v6.10,v6.10+3dcac251b066
    #[arg(long, default_value = "v6.10,v6.12", allow_hyphen_values = true)]
    kernels: String,
    /// Seeds per kernel (1..=1000).
    #[arg(long, default_value_t = 5)]
    runs: usize,
    #[arg(long, default_value_t = 1, allow_negative_numbers = true)]
    seed: u64,
    /// Worker threads (independent runs only).
    #[arg(long, default_value_t = 2)]
    jobs: usize,
    #[arg(long = "scenario", value_name = "FILE")]
    scenario_file: Option<PathBuf>,
    #[command(flatten)]
    spec: SpecArgs,
    #[arg(long)]
    json: bool,
}

#[derive(Args, Debug)]
struct ReproduceArgs {
    #[arg(help = experiments_help())]
    experiments: Vec<String>,
    /// Seeds per variant (1..=1000).
    #[arg(long, default_value_t = 5)]
    runs: usize,
    #[arg(long, default_value_t = 1, allow_negative_numbers = true)]
    seed: u64,
    #[arg(long, default_value_t = 2)]
    jobs: usize,
    /// Override a workload parameter of the experiment, key=value (repeatable).
    #[arg(long = "param")]
    params: Vec<String>,
    /// Background activity for every run (default: each machine's own; `none` for a quiet
    /// machine).
    #[arg(long, value_name = "NAME|none|FILE")]
    background: Option<String>,
    /// Preemption model for every run (default: each machine's own).
    #[arg(long, value_name = "MODEL")]
    preempt: Option<String>,
    /// The named kernel the variants are built on (hackbench-2013 only; default v3.8).
    #[arg(long)]
    kernel: Option<String>,
    /// lkp-matrix only: the cells to run, comma-separated substrings or globs of their names
    /// (`--cells hackbench`, `--cells 'netperf-*_RR-25%'`).
    #[arg(long, value_name = "PATTERNS")]
    cells: Option<String>,
    #[arg(long = "unknown", value_name = "NAME=VALUE", help = unknown_help())]
    unknowns: Vec<String>,
    /// Also run every variant over the experiment's named unknowns (its band: the default
    /// state, each unknown alone at each design value, and the design's points) and print each
    /// row's band, the ratios between variants within one state, and which unknown moves which
    /// row. The default state is the point answer (--runs seeds); every other state runs
    /// --band-runs seeds.
    #[arg(long)]
    band: bool,
    /// The band's design: grid (every combination of each unknown's sourced ends and
    /// midpoint, or every value of an enumeration), lhs:N (a Latin hypercube of N points
    /// drawn from --seed), or auto (the grid when it has at most 64 points, else lhs:24).
    #[arg(long, value_name = "auto|grid|lhs:N", default_value = "auto", requires = "band")]
    band_design: String,
    /// Seeds per state of the band besides the default state (1..=--runs).
    #[arg(long, value_name = "N", default_value_t = crate::sweep::band::DEFAULT_BAND_RUNS, requires = "band")]
    band_runs: usize,
    /// Fit the experiment's named unknowns to its controls (published figures of its baseline
    /// row that no variant changes: docs/unknowns.md §9) by a stated search on the baseline row
    /// alone, print each control's residual, then every variant's prediction at the fitted
    /// values with its band (the default band design) over the unknowns not fitted.
    #[arg(long, conflicts_with = "band")]
    calibrate: bool,
    /// Also write a self-contained HTML report with plots to FILE (re-runs each variant's first
    /// seed once more, keeping a trace window at the experiment's instant of interest).
    #[arg(long, value_name = "FILE")]
    html: Option<PathBuf>,
    /// The report's timeline window for every variant: CPUS@TIME_MS[+SPAN_US] (default: each
    /// experiment's CPUs and instant of interest).
    #[arg(long, value_name = "CPUS@TIME[+SPAN]", requires = "html")]
    html_window: Option<String>,
    /// No progress bar on stderr.
    #[arg(long)]
    quiet: bool,
    #[arg(long)]
    json: bool,
}

#[derive(Args, Debug)]
struct BenchArgs {
    /// Repetitions of each measured run (1..=1000).
    #[arg(long, default_value_t = 3)]
    runs: usize,
    /// Print one JSON document instead of text.
    #[arg(long)]
    json: bool,
    /// Instead: cost per action and peak RSS as the machine grows (8 to 4096 CPUs; idle,
    /// ipistorm, nanosleep, hackbench), each run in its own process (`--runs` defaults to 1).
    #[arg(long, conflicts_with = "json")]
    scaling: bool,
    /// With --scaling: the machine sizes, comma-separated CPU counts (multiples of 8).
    #[arg(long, value_name = "N,N,...", requires = "scaling", value_delimiter = ',')]
    sizes: Vec<u32>,
    /// With --scaling: also the steady-state cost per action of each size and workload (each
    /// round runs everything again at twice the length; the extra actions' cost, without
    /// build, start-up or exit), and its growth.
    #[arg(long, requires = "scaling")]
    steady: bool,
    /// Internal: one scaling run in this process (workload, CPUs, machine file, and the run's
    /// length in multiples of the standard one, 1 if not given).
    #[arg(long, hide = true, num_args = 3..=4, value_names = ["WORKLOAD", "CPUS", "FILE", "LENGTH"])]
    scaling_child: Vec<String>,
    /// Instead: the benchmark set users bring (rt-app 640 and 160 workers, hackbench 32 groups,
    /// schbench -m 8 -t 128 on 256 CPUs, nanosleep on 1024 CPUs), each run in its own process:
    /// simulated seconds per wall second, actions per second, peak RSS.
    #[arg(long, conflicts_with_all = ["json", "scaling"])]
    users: bool,
    /// With --users: instead, each case under cachegrind (needs valgrind) at two short lengths,
    /// and the steady state's instructions and host cache misses per action (deterministic).
    #[arg(long, requires = "users")]
    cachegrind: bool,
    /// Internal: one case of --users in this process (its name, and its length in units of
    /// simulated time after the warm-up, 0 for the whole case).
    #[arg(long, hide = true, num_args = 2, value_names = ["CASE", "LENGTH"])]
    case_child: Vec<String>,
}

fn check_runs(runs: usize) -> Result<(), String> {
    if !(1..=crate::limits::MAX_RUNS).contains(&runs) {
        return Err(format!("--runs {runs} is out of range (1..={})", crate::limits::MAX_RUNS));
    }
    Ok(())
}

/// Write to stdout; a closed pipe (`schedsim ... | head`) ends the program quietly.
fn emit(text: &str) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    if let Err(e) = out.write_all(text.as_bytes()).and_then(|_| out.flush()) {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(0);
        }
        eprintln!("schedsim: error: cannot write to standard output: {e}");
        std::process::exit(1);
    }
}

/// Parse, run, and return the process exit code (2 for bad input).
pub fn main() -> i32 {
    let cli = Cli::parse();
    let res = match cli.cmd {
        Cmd::Run(a) => cmd_run(a),
        Cmd::Compare(a) => cmd_compare(a),
        Cmd::Reproduce(a) => cmd_reproduce(a),
        Cmd::List(a) => match a.machine {
            None if a.unknowns && a.json => {
                let doc = crate::unknowns::table_json();
                emit(&format!("{}\n", serde_json::to_string_pretty(&doc).expect("serializable")));
                Ok(())
            }
            None if a.unknowns => {
                emit(&crate::unknowns::table_text());
                Ok(())
            }
            None if a.json => {
                emit(&format!("{}\n", serde_json::to_string_pretty(&list_json()).expect("serializable")));
                Ok(())
            }
            None => {
                emit(&list_text());
                Ok(())
            }
            Some(m) if a.json => {
                Err(format!("list --machine {m} prints the machine's TOML file; --json is for the whole list"))
            }
            Some(m) => match crate::hw::preset_text(&m) {
                Some(t) => {
                    emit(t);
                    Ok(())
                }
                None => Err(format!(
                    "unknown machine preset `{m}`; known presets: {}",
                    crate::hw::preset_names().join(", ")
                )),
            },
        },
        Cmd::Bench(a) => cmd_bench(a),
        Cmd::Machine(a) => host::cmd_machine(a),
        Cmd::HostRun(a) => host_run::cmd_host_run(a),
        Cmd::Validate(a) => validate::cmd_validate(a),
        Cmd::Import(a) => import::cmd_import(a),
        Cmd::Sweep(a) => sweep::cmd_sweep(a),
        Cmd::Merge(a) => sweep::cmd_merge(a),
        Cmd::Explore(a) => explore::cmd_explore(a),
    };
    match res {
        Ok(()) => 0,
        Err(e) => {
            // One line per error, whatever a file's multi-line string put into it.
            let e: String = e
                .trim_end()
                .chars()
                .flat_map(|c| if c.is_control() { c.escape_default().collect::<Vec<_>>() } else { vec![c] })
                .collect();
            eprintln!("schedsim: error: {e}");
            2
        }
    }
}

/// The spec fields a command line gives, as (field name, value) in the order of
/// `spec::FIELDS`, each read by `RunSpec::set` (the same parser scenario, grid and experiment
/// files go through).
fn spec_args_fields(a: &SpecArgs) -> Vec<(&'static str, String)> {
    let mut v: Vec<(&'static str, String)> = Vec::new();
    let mut one = |name: &'static str, x: &Option<String>| {
        if let Some(x) = x {
            v.push((name, x.clone()));
        }
    };
    one("machine", &a.machine);
    one("kernel", &a.kernel);
    one("patch", &a.patch);
    v.extend(a.features.iter().map(|f| ("feature", f.clone())));
    if let Some(hz) = a.hz {
        v.push(("hz", hz.to_string()));
    }
    v.extend(a.cstates.iter().map(|c| ("cstate", c.clone())));
    if let Some(l) = a.limit_ms {
        v.push(("limit-ms", l.to_string()));
    }
    let mut one = |name: &'static str, x: &Option<String>| {
        if let Some(x) = x {
            v.push((name, x.clone()));
        }
    };
    one("background", &a.background);
    one("preempt", &a.preempt);
    v.extend(a.unknowns.iter().map(|u| ("unknown", u.clone())));
    if a.preempt_rt {
        v.push(("preempt-rt", "true".into()));
    }
    v
}

fn apply_spec_args(s: &mut RunSpec, a: &SpecArgs) -> Result<(), String> {
    for (name, value) in spec_args_fields(a) {
        s.set_as(name, &value, &format!("--{name}"))?;
    }
    Ok(())
}

/// The spec of a scenario (built-in `name`, or `file`) with the command line's parameters on
/// top: `key=value` words, or for a workload that takes its own options after `--` (the
/// table's `Program::own_args`: schbench, hackbench) those options.
fn base_spec(name: &str, file: &Option<PathBuf>, params: &[String]) -> Result<RunSpec, String> {
    let mut s = match file {
        Some(p) => {
            let text = crate::input::read_input_file(p, "scenario file")?;
            scenario::parse(&text, &p.display().to_string())?
        }
        None => scenario::builtin(name)?,
    };
    let wl = s.workload.clone();
    let example = Workload::own_args_example(&wl);
    let (with_eq, without) = (params.iter().any(|p| p.contains('=')), params.iter().any(|p| !p.contains('=')));
    if !example.is_empty() && with_eq && without {
        return Err(format!(
            "command line: {wl} takes either key=value parameters or its own options after `--`, not both \
             (for example `schedsim run {wl} {example}`; for hackbench the tool name comes first)"
        ));
    }
    if file.is_none() && without && !with_eq {
        if let Some(pairs) = Workload::own_args(&wl, params) {
            s.add_params(&pairs, &format!("{wl} command line"));
            return Ok(s);
        }
    }
    if !params.is_empty() {
        let extra = Params::parse(params.iter().map(String::as_str), "command line")?;
        s.add_params(extra.pairs(), "command line");
    }
    Ok(s)
}

/// The spec of a `schedsim run` command line: the words after `schedsim` (`run ...`), read
/// by the same parser as the command line itself. The inverse of [`RunSpec::to_args`]: a run's
/// `# schedsim run ...` header reads back into its spec.
pub fn parse_run_line<S: AsRef<str>>(words: &[S]) -> Result<RunSpec, String> {
    let argv = std::iter::once("schedsim").chain(words.iter().map(|w| w.as_ref()));
    let cli = Cli::try_parse_from(argv).map_err(|e| e.to_string().trim_end().to_string())?;
    match cli.cmd {
        Cmd::Run(a) => spec_from_run_args(&a),
        _ => Err("expected a `run` command line".into()),
    }
}

/// `schedsim run`'s arguments as a spec (no I/O besides reading the files they name).
fn spec_from_run_args(a: &RunArgs) -> Result<RunSpec, String> {
    let mut params = a.params.clone();
    if let (Some(first), true) = (&a.scenario, a.scenario_file.is_some() || a.workload.is_some() || a.rtapp.is_some()) {
        // With --scenario FILE, --workload NAME or --rtapp FILE, a first positional word is a
        // parameter.
        params.insert(0, first.clone());
    }
    let mut s = match (&a.rtapp, &a.workload) {
        (Some(f), _) => {
            let mut s = RunSpec::new("rtapp");
            // rt-app's own examples are laptop/phone sized: a small SMP machine by default.
            s.machine = "smp-4".into();
            let mut pairs = vec![("file".to_string(), f.display().to_string())];
            pairs.extend(Params::parse(params.iter().map(String::as_str), "command line")?.pairs().iter().cloned());
            s.params = Params::from_pairs(pairs, "command line");
            s
        }
        (None, Some(w)) => {
            let mut s = RunSpec::new(w);
            s.params = Params::parse(params.iter().map(String::as_str), "command line")?;
            s
        }
        (None, None) => base_spec(a.scenario.as_deref().unwrap_or("ipistorm"), &a.scenario_file, &params)?,
    };
    apply_spec_args(&mut s, &a.spec)?;
    if let Some(seed) = a.seed {
        s.set("seed", &seed.to_string())?;
    }
    if a.check {
        s.set("check", "true")?;
    }
    if let Some(t) = &a.replay {
        s.set("replay", t)?;
    }
    Ok(s)
}

/// The files a run reads (scenario, rt-app, machine and background files, a workload's
/// `file=`), each with what it is, for [`same_file::check`].
fn run_inputs(a: &RunArgs, s: &RunSpec) -> Vec<(&'static str, PathBuf)> {
    let mut v: Vec<(&'static str, PathBuf)> = Vec::new();
    if let Some(p) = &a.scenario_file {
        v.push(("scenario file", p.clone()));
    }
    if let Some(p) = &a.rtapp {
        v.push(("rt-app file", p.clone()));
    }
    if let Some(p) = s.params.get("file") {
        v.push(("workload file", PathBuf::from(p)));
    }
    v.push(("machine file", PathBuf::from(&s.machine)));
    if let Some(b) = &s.background {
        v.push(("background file", PathBuf::from(b)));
    }
    // Names that are presets, not paths, are no files and match nothing.
    v.retain(|(_, p)| p.is_file());
    v
}

fn cmd_run(a: RunArgs) -> Result<(), String> {
    if let Some(ms) = a.panic_at_ms {
        crate::crash::set_panic_at(ms.saturating_mul(crate::sim::NSEC_PER_MSEC).max(1));
    }
    let mut s = spec_from_run_args(&a)?;
    if let Some(list) = &a.schedstat {
        let nr = run::machine(&s.machine)?.topo.nr_cpus;
        let mask = crate::hw::cpumask::parse_cpulist(list, nr).map_err(|e| format!("--schedstat: {e}"))?;
        if mask.is_empty() {
            return Err("--schedstat: expected at least one CPU".into());
        }
        s.schedstat_cpus = Some(mask.iter().collect());
    }
    for n in run::spec_notes(&s) {
        eprintln!("schedsim: note: {n}");
    }
    if a.log_dir.is_some() && s.workload != "rtapp" {
        return Err("command line: --log-dir is for rt-app workloads (--rtapp FILE.json)".into());
    }
    if let Some(dir) = &a.log_dir {
        if !dir.is_dir() {
            return Err(format!("--log-dir {}: not a directory (create it before the run)", dir.display()));
        }
    }
    if a.log_dir.is_some() && s.params.get("logs") == Some("summary") {
        return Err("command line: --log-dir writes every log row; logs=summary keeps none".into());
    }
    // Without --log-dir, nothing reads the rows: the run keeps their summary only (its memory
    // then grows with the threads, not with the simulated time); the simulated run is the same.
    if s.workload == "rtapp" && a.log_dir.is_none() && s.params.get("logs").is_none() {
        s.params.set("logs".into(), "summary".into());
    }
    let inputs = run_inputs(&a, &s);
    let ins: Vec<(&str, &std::path::Path)> = inputs.iter().map(|(w, p)| (*w, p.as_path())).collect();
    let mut outs: Vec<(&str, &std::path::Path)> = Vec::new();
    if let Some(p) = &a.trace {
        outs.push(("--trace", p));
    }
    if let Some(p) = &a.html {
        outs.push(("--html", p));
    }
    same_file::check(&ins, &outs)?;
    let progress = Progress::start(a.quiet, Progress::SIM_TIME);
    let (r, written) = match &a.trace {
        Some(path) => {
            let format = match &a.trace_format {
                Some(f) => crate::trace::sink::TraceFormat::parse(f)?,
                None => crate::trace::sink::TraceFormat::from_path(path),
            };
            let (r, n) = run::execute_streaming(&s, path, format)?;
            (r, Some(n))
        }
        None => (run::execute(&s)?, None),
    };
    if let Some(path) = &a.html {
        let focus = match &a.html_window {
            Some(w) => crate::focus::Focus::parse_window(w, r.nr_cpus)?,
            None => crate::focus::Focus::default(),
        };
        let d = crate::html::detail(&format!("{} {}", s.workload, r.kernel_label), &s, &focus, Some(&r), None)?;
        let c = Comparison {
            table: None,
            experiment: format!("run {} on {} ({})", s.workload, r.machine, r.kernel_label),
            machine: r.machine.clone(),
            metric: "time".into(),
            unit: "ms".into(),
            lower_is_better: true,
            statistic: report::MMTESTS_AMEAN.into(),
            rows: Vec::new(),
            title: String::new(),
            notes: vec![crate::output::run_text(&s, &r)],
        };
        let html = crate::html::page("schedsim run", &[crate::html::section_run(&c, &[d])]);
        crate::html::write(path, &html)?;
    }
    drop(progress);
    if let Some(dir) = &a.log_dir {
        let Workload::RtApp(w) = &r.workload else {
            return Err("command line: --log-dir is for rt-app workloads (--rtapp FILE.json)".into());
        };
        // Every log's name is checked against the inputs and the other outputs before the
        // first is written.
        let logs: Vec<PathBuf> = w.threads.iter().map(|t| dir.join(w.log_file_name(t))).collect();
        outs.extend(logs.iter().map(|p| ("--log-dir's log", p.as_path())));
        same_file::check(&ins, &outs)?;
        for (t, p) in w.threads.iter().zip(&logs) {
            host::write_atomically(p, w.log_text(t).as_bytes())?;
        }
    }
    if a.json {
        emit(&format!("{}\n", serde_json::to_string_pretty(&crate::output::run_json(&s, &r)).expect("serializable")));
    } else {
        emit(&crate::output::run_text(&s, &r));
        if let (Some(path), Some(n)) = (&a.trace, written) {
            emit(&format!("\ntrace: {n} records written to {}\n", path.display()));
        }
    }
    Ok(())
}

fn cmd_compare(a: CompareArgs) -> Result<(), String> {
    check_runs(a.runs)?;
    if let Some(k) = &a.spec.kernel {
        return Err(format!(
            "--kernel {k}: compare runs the kernels of --kernels (e.g. --kernels v6.10,{k}); --kernel is for run"
        ));
    }
    let mut base = base_spec(&a.scenario, &a.scenario_file, &a.params)?;
    apply_spec_args(&mut base, &a.spec)?;
    for n in run::spec_notes(&base) {
        eprintln!("schedsim: note: {n}");
    }
    let kernels: Vec<&str> = a.kernels.split(',').map(str::trim).filter(|k| !k.is_empty()).collect();
    if kernels.is_empty() {
        return Err("--kernels is empty".into());
    }
    let mut specs = Vec::new();
    for kspec in &kernels {
        // NAME[+ID][-ID]...: the grammar of --kernel (KernelConfig::resolve reads it).
        crate::linux::config::split_kernel_spec(kspec).map_err(|e| format!("--kernels: {e}"))?;
        for i in 0..a.runs {
            let mut s = base.clone();
            s.kernel = kspec.to_string();
            s.seed = a.seed.checked_add(i as u64).ok_or("--seed: seed + runs overflows a 64-bit seed")?;
            specs.push(s);
        }
    }
    for s in specs.iter().step_by(a.runs) {
        run::build(s)?;
    }
    let results = run::run_all(&specs, a.jobs)?;
    // What each row's figure is (the values below): schbench's p99 wakeup latency is in us.
    // Each row's figure is the workload's primary metric (`Program::metric`).
    let (metric, unit) = results.first().map_or(("time", "ms"), |r| {
        let m = r.workload.metric(&r.facts());
        (m.name, m.unit)
    });
    let mut rows = Vec::new();
    for (ki, kspec) in kernels.iter().enumerate() {
        let rs = &results[ki * a.runs..(ki + 1) * a.runs];
        let v: Vec<f64> = rs.iter().map(|r| r.workload.metric(&r.facts()).value).collect();
        let (mean, stddev) = report::mean_stddev(&v);
        let patches =
            crate::linux::KernelConfig::resolve(&specs[ki * a.runs].kernel, &specs[ki * a.runs].patches, 250)?;
        rows.push(CompareRow {
            variant: kspec.to_string(),
            kernel: rs[0].kernel_label.clone(),
            patches: patches.patches.iter().map(|p| p.info().id.to_string()).collect(),
            runs: a.runs,
            mean,
            stddev,
            normalized: 0.0,
            published: None,
            extra: Default::default(),
        });
    }
    report::normalize(&mut rows);
    let params: Vec<String> = base.params.pairs().iter().map(|(k, v)| format!("{k}={v}")).collect();
    let c = Comparison {
        table: None,
        experiment: base.workload.clone(),
        machine: base.machine.clone(),
        metric: metric.into(),
        unit: unit.into(),
        lower_is_better: true,
        statistic: report::MMTESTS_AMEAN.into(),
        rows,
        title: format!("{} {}", base.workload, params.join(" ")),
        notes: vec![],
    };
    print_comparison(&c, a.json);
    Ok(())
}

fn print_comparison(c: &Comparison, json: bool) {
    if json {
        emit(&format!("{}\n", serde_json::to_string_pretty(c).expect("serializable")));
    } else {
        emit(&report::render_table(c));
    }
}

fn cmd_reproduce(a: ReproduceArgs) -> Result<(), String> {
    check_runs(a.runs)?;
    if a.seed.checked_add(a.runs as u64).is_none() {
        return Err(format!("--seed {}: the runs use seeds seed..seed+runs, which overflows 64 bits", a.seed));
    }
    let band = if a.calibrate {
        Some(crate::sweep::band::BandOpts::default())
    } else if a.band {
        check_runs(a.band_runs).map_err(|e| e.replace("--runs", "--band-runs"))?;
        Some(crate::sweep::band::BandOpts {
            design: crate::sweep::band::Design::parse(&a.band_design)?,
            runs: a.band_runs,
        })
    } else {
        None
    };
    let names: Vec<String> = if a.experiments.is_empty() {
        experiments::EXPERIMENTS.iter().map(|e| e.name.to_string()).collect()
    } else {
        a.experiments.clone()
    };
    let params = Params::parse(a.params.iter().map(String::as_str), "--param")?;
    let mut overrides = Vec::new();
    if let Some(b) = &a.background {
        overrides.push(("background".to_string(), b.clone()));
    }
    if let Some(p) = &a.preempt {
        overrides.push(("preempt".to_string(), p.clone()));
    }
    overrides.extend(a.unknowns.iter().map(|u| ("unknown".to_string(), u.clone())));
    let o = ExpOpts {
        runs: a.runs,
        seed: a.seed,
        jobs: a.jobs,
        params: params.pairs().to_vec(),
        overrides,
        kernel: a.kernel.clone(),
        cells: a.cells.clone(),
    };
    // Every plan first: a bad name or option is an error before anything runs.
    let mut plans: Vec<experiments::Plan> =
        names.iter().map(|n| experiments::plan_of(n, &o)).collect::<Result<_, _>>()?;
    if a.calibrate && a.experiments.is_empty() {
        // All experiments with --calibrate: those that name controls.
        plans.retain(|p| !p.controls.is_empty());
    } else if band.is_some() && a.experiments.is_empty() {
        // All experiments with --band: those that name unknowns.
        plans.retain(|p| !p.unknowns.is_empty());
    }
    if let Some(p) = plans.iter().find(|p| a.calibrate && p.controls.is_empty()) {
        return Err(format!(
            "experiment '{}' names no controls: nothing to calibrate on (docs/unknowns.md §9 says which experiments have controls)",
            p.experiment
        ));
    }
    let progress = Progress::start(a.quiet, Progress::RUNS);
    // With --calibrate, each plan's fit on its controls, and the plan of its predictions.
    let mut calibrations = Vec::new();
    if a.calibrate {
        for p in &mut plans {
            let c = crate::sweep::calibrate::calibrate(p, a.jobs)?;
            *p = crate::sweep::calibrate::fixed(p, &c)?;
            calibrations.push(c);
        }
    }
    // And every band's runs (each state's first run built once).
    let bands: Vec<Option<Vec<crate::sweep::GridRun>>> = plans
        .iter()
        .map(|p| band.as_ref().map(|b| crate::sweep::band::runs(p, b, 0)).transpose())
        .collect::<Result<_, _>>()?;
    let mut docs = Vec::new();
    let mut sections = Vec::new();
    for (i, (plan, band_runs)) in plans.iter().zip(&bands).enumerate() {
        let calibration = calibrations.get(i);
        let (results, report) = match band_runs {
            None => (plan.results(a.jobs)?, None),
            Some(runs) => {
                let (point, lines) = crate::sweep::band::execute(plan, runs, a.jobs)?;
                let refs: Vec<&serde_json::Value> = lines.iter().collect();
                (point, Some(crate::sweep::band::analyze(&refs)?))
            }
        };
        let c = plan.analyze(&results)?;
        if a.html.is_some() {
            // Each variant's first seed again, with a trace window at the experiment's instant
            // of interest (or the user's --html-window).
            let mut details = Vec::new();
            let reference = results.iter().filter_map(|rs| rs.first()).find(|r| plan.focus.reaches(r));
            for (v, rs) in plan.variants.iter().zip(&results) {
                let focus = match &a.html_window {
                    Some(w) => crate::focus::Focus::parse_window(w, rs[0].nr_cpus)?,
                    None => plan.focus.clone(),
                };
                details.push(crate::html::detail(&v.label, &v.spec, &focus, rs.first(), reference)?);
            }
            sections.push(crate::html::section(&c, &details));
            if let Some(r) = &report {
                sections.push(crate::sweep::band::section_html(r));
            }
        }
        if a.json {
            docs.push(ReproduceDoc {
                comparison: c,
                band: report.as_ref().map(crate::sweep::band::json_fields),
                calibration: calibration.map(crate::sweep::calibrate::json_value),
            });
        } else {
            if let Some(cal) = calibration {
                emit(&crate::sweep::calibrate::render(cal));
            }
            print_comparison(&c, false);
            if let Some(r) = &report {
                emit(&crate::sweep::band::render(r));
            }
            emit("\n");
        }
    }
    drop(progress);
    if let Some(path) = &a.html {
        let title = format!("schedsim reproduce {}", names.join(" "));
        crate::html::write(path, &crate::html::page(&title, &sections))?;
        eprintln!("schedsim: report written to {}", path.display());
    }
    if a.json {
        if docs.len() == 1 {
            emit(&format!("{}\n", serde_json::to_string_pretty(&docs[0]).expect("serializable")));
        } else {
            emit(&format!("{}\n", serde_json::to_string_pretty(&docs).expect("serializable")));
        }
    }
    Ok(())
}

/// One experiment's `reproduce --json` document: its table, with `--band` the band's fields
/// (`band`, `ratios`, `sensitivity`), and with `--calibrate` the `calibration`.
#[derive(serde::Serialize)]
struct ReproduceDoc {
    #[serde(flatten)]
    comparison: Comparison,
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    band: Option<serde_json::Map<String, serde_json::Value>>,
    /// With `--calibrate`: the fit on the controls (the table and band are the predictions).
    #[serde(skip_serializing_if = "Option::is_none")]
    calibration: Option<serde_json::Value>,
}

/// A progress display on stderr for long runs and experiments: only when stderr is a terminal
/// and not `--quiet`, shown after the first second, polling counters every 200 ms (the runs
/// themselves only store a number now and then; nothing here touches a run).
struct Progress {
    stop: Option<std::sync::Arc<std::sync::atomic::AtomicBool>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Progress {
    /// Simulated time of the current run (a spinner).
    const SIM_TIME: u8 = 0;
    /// Experiment runs done out of queued (a bar).
    const RUNS: u8 = 1;

    fn start(quiet: bool, kind: u8) -> Progress {
        use std::io::IsTerminal;
        use std::sync::atomic::{AtomicBool, Ordering};
        if quiet || !std::io::stderr().is_terminal() {
            return Progress { stop: None, thread: None };
        }
        let stop = std::sync::Arc::new(AtomicBool::new(false));
        let st = stop.clone();
        let thread = std::thread::spawn(move || {
            let tick = std::time::Duration::from_millis(200);
            for _ in 0..5 {
                std::thread::sleep(tick);
                if st.load(Ordering::Relaxed) {
                    return;
                }
            }
            let bar = if kind == Progress::RUNS {
                let b = indicatif::ProgressBar::new(1);
                b.set_style(
                    indicatif::ProgressStyle::with_template("{elapsed_precise} [{bar:40}] {pos}/{len} runs")
                        .expect("valid template")
                        .progress_chars("=> "),
                );
                b
            } else {
                let b = indicatif::ProgressBar::new_spinner();
                b.set_style(
                    indicatif::ProgressStyle::with_template("{spinner} {elapsed_precise} {msg}")
                        .expect("valid template"),
                );
                b
            };
            while !st.load(Ordering::Relaxed) {
                if kind == Progress::RUNS {
                    bar.set_length(run::RUNS_QUEUED.load(Ordering::Relaxed).max(1) as u64);
                    bar.set_position(run::RUNS_DONE.load(Ordering::Relaxed) as u64);
                } else {
                    let ns = crate::linux::PROGRESS_NS.load(Ordering::Relaxed);
                    bar.set_message(format!("simulated {:.1} ms", ns as f64 / 1e6));
                    bar.tick();
                }
                std::thread::sleep(tick);
            }
            bar.finish_and_clear();
        });
        Progress { stop: Some(stop), thread: Some(thread) }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        if let Some(s) = self.stop.take() {
            s.store(true, std::sync::atomic::Ordering::Relaxed);
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn nanosleep_bench(machine: &str, procs: u32) -> Result<RunSpec, String> {
    let mut s = scenario::builtin("nanosleep")?;
    s.machine = machine.into();
    s.params.set("procs".into(), procs.to_string());
    Ok(s)
}

fn cmd_bench(a: BenchArgs) -> Result<(), String> {
    use std::time::Instant;
    check_runs(a.runs)?;
    if let [w, n, file, rest @ ..] = a.scaling_child.as_slice() {
        let n: u32 = n.parse().map_err(|_| format!("--scaling-child: CPUs `{n}`: expected a number"))?;
        let length = match rest {
            [l] => l.parse().map_err(|_| format!("--scaling-child: length `{l}`: expected a number"))?,
            _ => 1,
        };
        return bench::child(w, n, file, length);
    }
    if let [name, length] = a.case_child.as_slice() {
        let length = length.parse().map_err(|_| format!("--case-child: length `{length}`: expected a number"))?;
        return bench_users::child(name, length);
    }
    if a.users {
        emit(&if a.cachegrind { bench_users::cachegrind()? } else { bench_users::users(a.runs)? });
        return Ok(());
    }
    if a.scaling {
        let sizes = if a.sizes.is_empty() { bench::SIZES.to_vec() } else { a.sizes.clone() };
        let runs = if std::env::args().any(|x| x == "--runs" || x.starts_with("--runs=")) { a.runs } else { 1 };
        emit(&bench::scaling(runs, &sizes, a.steady)?);
        return Ok(());
    }
    if !a.json {
        emit(&format!("schedsim bench: simulator speed (wall clock of this machine; median of {} runs)\n\n", a.runs));
    }
    let mut rows = Vec::new();
    let mut figures = Vec::new();
    let cases: Vec<(&str, RunSpec)> = vec![
        ("ipistorm epyc-7763-2s v6.10 numipi=100000", scenario::builtin("ipistorm")?),
        ("ipistorm epyc-7763-2s v6.12 numipi=100000", {
            let mut s = scenario::builtin("ipistorm")?;
            s.kernel = "v6.12".into();
            s
        }),
        ("idle epyc-7763-2s 100 ms", scenario::builtin("idle")?),
        ("schbench -m 2 -t 16 -r 30 icx-vm-32 v6.2", scenario::builtin("schbench")?),
        ("nanosleep procs=8 i7-4c8t (8 CPUs) 100 ms", nanosleep_bench("i7-4c8t", 8)?),
        ("nanosleep procs=128 xeon-128-4n (128 CPUs) 100 ms", nanosleep_bench("xeon-128-4n", 128)?),
        ("nanosleep procs=240 intel-240-2s (240 CPUs) 100 ms", nanosleep_bench("intel-240-2s", 240)?),
        ("hackbench 10 i7-4c8t (400 tasks)", scenario::builtin("hackbench")?),
        ("hackbench 32 epyc-7763-2s (256 CPUs, 1280 tasks)", {
            let mut s = scenario::builtin("hackbench")?;
            s.machine = "epyc-7763-2s".into();
            s.params.set("args".into(), "32".into());
            s
        }),
        ("schbench -m 8 -t 128 -r 10 epyc-7763-2s v6.10 (1032 tasks)", {
            let mut s = scenario::builtin("schbench")?;
            s.machine = "epyc-7763-2s".into();
            s.kernel = "v6.10".into();
            s.params = Params::from_pairs(vec![("args".into(), "-m 8 -t 128 -r 10".into())], "bench");
            s
        }),
    ];
    for (name, spec) in cases {
        let mut samples = Vec::new();
        for _ in 0..a.runs.max(1) {
            let t = Instant::now();
            let r = run::execute(&spec)?;
            let wall = t.elapsed().as_secs_f64();
            samples.push((wall, r.actions, r.sim_ns + r.warmup_ns));
        }
        samples.sort_by(|x, y| x.0.total_cmp(&y.0));
        let (wall, actions, sim_ns) = samples[samples.len() / 2];
        figures.push(BenchFigure { case: name.to_string(), actions, wall_s: wall, sim_ns });
        rows.push(vec![
            name.to_string(),
            actions.to_string(),
            format!("{:.3}", wall),
            format!("{:.2}", actions as f64 / wall / 1e6),
            format!("{:.4}", sim_ns as f64 / 1e9 / wall),
        ]);
    }
    let header: Vec<String> =
        ["case", "actions", "wall(s)", "Mactions/s", "sim-s per wall-s"].iter().map(|s| s.to_string()).collect();
    if !a.json {
        emit(&report::render_grid(&header, &rows));
    }
    let t = Instant::now();
    experiments::find("ipistorm")?.plan(&ExpOpts::default())?.run(2)?;
    let ipistorm_s = t.elapsed().as_secs_f64();
    if !a.json {
        emit(&format!("\nreproduce ipistorm (6 variants x 5 seeds, 2 jobs): {ipistorm_s:.2} s wall\n"));
    }
    let t = Instant::now();
    experiments::find("schbench-ttwu")?.plan(&ExpOpts::default())?.run(2)?;
    let schbench_s = t.elapsed().as_secs_f64();
    if a.json {
        let reproduce = [("ipistorm", ipistorm_s), ("schbench-ttwu", schbench_s)];
        emit(&format!(
            "{}\n",
            serde_json::to_string_pretty(&bench_json(a.runs, &figures, &reproduce)).expect("serializable")
        ));
    } else {
        emit(&format!("reproduce schbench-ttwu (3 kernels x 5 seeds x 30 s, 2 jobs): {schbench_s:.2} s wall\n"));
    }
    Ok(())
}

/// One measured case of `schedsim bench` (the median run by wall time).
struct BenchFigure {
    case: String,
    actions: u64,
    wall_s: f64,
    /// Simulated time of the run, warm-up included.
    sim_ns: u64,
}

/// `schedsim bench --json`: the table's figures and the experiments' wall times.
fn bench_json(runs: usize, figures: &[BenchFigure], reproduce: &[(&str, f64)]) -> serde_json::Value {
    json!({
        "runs": runs,
        "statistic": "median by wall time",
        "cases": figures.iter().map(|f| json!({
            "case": f.case,
            "actions": f.actions,
            "wall_s": f.wall_s,
            "actions_per_s": f.actions as f64 / f.wall_s,
            "sim_s_per_wall_s": f.sim_ns as f64 / 1e9 / f.wall_s,
        })).collect::<Vec<_>>(),
        "reproduce_wall_s": reproduce.iter().map(|(n, s)| (n.to_string(), json!(s))).collect::<serde_json::Map<_, _>>(),
    })
}

/// `schedsim list --json`: the same lists as [`list_text`], as one document.
pub fn list_json() -> serde_json::Value {
    use crate::linux::kernel::sched::features::SCHED_FEATURES;
    use crate::linux::patches::{KERNELS, PATCHES};
    let machines: Vec<serde_json::Value> = crate::hw::preset_names()
        .iter()
        .filter_map(|n| crate::hw::preset(n).ok())
        .map(|m| {
            json!({
                "name": m.name,
                "summary": m.summary(),
                "cpus": m.topo.nr_cpus,
                "idle_states": m.idle_states.iter().map(|s| json!({"name": s.name, "disabled": s.disabled})).collect::<Vec<_>>(),
                "background": m.background,
                "preempt": m.preempt,
            })
        })
        .collect();
    json!({
        "machines": machines,
        "backgrounds": crate::background::names(),
        "preempt_models": crate::linux::config::Preempt::NAMES,
        "kernels": KERNELS.iter().map(|k| json!({
            "name": k.name,
            "description": k.description,
            "patches": k.patches.iter().map(|p| p.info().id).collect::<Vec<_>>(),
        })).collect::<Vec<_>>(),
        "patches": PATCHES.iter().map(|p| json!({"id": p.id, "merged": p.merged, "subject": p.subject})).collect::<Vec<_>>(),
        "sched_features": SCHED_FEATURES.iter().map(|f| json!({"name": f.name, "default": f.default, "modelled": f.modelled, "doc": f.doc.trim()})).collect::<Vec<_>>(),
        "workloads": crate::workload::WORKLOADS.iter().map(|(n, d)| json!({"name": n, "description": d})).collect::<Vec<_>>(),
        "scenarios": scenario::BUILTIN.iter().map(|(n, d, _)| json!({"name": n, "description": d})).collect::<Vec<_>>(),
        "experiments": experiments::EXPERIMENTS.iter().map(|e| json!({"name": e.name, "description": e.description()})).collect::<Vec<_>>(),
        "unknowns": crate::unknowns::table_json(),
    })
}

/// README's reference tables (scenarios, experiments, kernels, patches, sched features,
/// named unknowns, machines), generated from the tables in code; `tests/help_tables.rs` fails when README's
/// copy differs (`UPDATE_README=1` rewrites it).
pub fn readme_tables() -> String {
    use crate::linux::kernel::sched::features::SCHED_FEATURES;
    use crate::linux::patches::{FairClass, KERNELS, PATCHES};
    let cell = |s: &str| s.trim().replace('|', "\\|").replace('\n', " ");
    let mut o = String::new();
    o.push_str("Scenarios (`schedsim run NAME`):\n\n| scenario | what it runs |\n|---|---|\n");
    for (n, d, _) in scenario::BUILTIN {
        o.push_str(&format!("| `{n}` | {} |\n", cell(d)));
    }
    o.push_str("\nExperiments (`schedsim reproduce NAME`):\n\n| experiment | what it compares |\n|---|---|\n");
    for e in experiments::EXPERIMENTS {
        o.push_str(&format!("| `{}` | {} |\n", e.name, cell(&e.description())));
    }
    o.push_str("\nKernels (`--kernel NAME[+ID][-ID]...`):\n\n| kernel | fair class | what it is |\n|---|---|---|\n");
    for k in KERNELS {
        let fair = match k.fair {
            FairClass::Eevdf => "EEVDF",
            FairClass::Cfs => "CFS",
        };
        o.push_str(&format!("| `{}` | {fair} | {} |\n", k.name, cell(k.description)));
    }
    o.push_str("\nPatches (`--patch +ID,-ID`):\n\n| id | merged | subject |\n|---|---|---|\n");
    for p in PATCHES {
        o.push_str(&format!("| `{}` | {} | {} |\n", p.id, cell(p.merged), cell(p.subject)));
    }
    o.push_str(
        "\nSched features (`--feature NAME` or `NO_NAME`; features.h @ v6.10, and the CFS ones of v6.1; \
         `--feature` refuses the ones the model does not read):\n\n| feature | default | modelled | what it does |\n|---|---|---|---|\n",
    );
    for f in SCHED_FEATURES {
        let m = if f.modelled { "yes" } else { "no" };
        o.push_str(&format!("| `{}` | {} | {m} | {} |\n", f.name, f.default, cell(f.doc)));
    }
    o.push_str(
        "\nNamed unknowns (`--unknown NAME=VALUE`; `schedsim list --unknowns` gives each one's mechanism, sources and \
         collapsing measurement; docs/unknowns.md):\n\n| unknown | values | range |\n|---|---|---|\n",
    );
    for u in crate::unknowns::UNKNOWNS {
        o.push_str(&format!("| `{}` | {} | {} |\n", u.name, cell(u.grammar), cell(u.range)));
    }
    o.push_str(
        "\nMachines (`--machine NAME`):\n\n| machine | what it is | background | preempt |\n|---|---|---|---|\n",
    );
    for n in crate::hw::preset_names() {
        if let Ok(m) = crate::hw::preset(n) {
            o.push_str(&format!("| `{n}` | {} | {} | {} |\n", cell(&m.summary()), m.background, m.preempt));
        }
    }
    o
}

/// The text of `schedsim list`.
pub fn list_text() -> String {
    use crate::linux::kernel::sched::features::SCHED_FEATURES;
    use crate::linux::patches::{KERNELS, PATCHES};
    let mut o = String::new();
    o.push_str("Machines (--machine NAME, or --machine FILE.toml; `schedsim list --machine NAME` prints one):\n");
    for n in crate::hw::preset_names() {
        if let Ok(m) = crate::hw::preset(n) {
            let states: Vec<String> =
                m.idle_states.iter().map(|s| format!("{}{}", s.name, if s.disabled { "(off)" } else { "" })).collect();
            o.push_str(&format!(
                "  {:<16} {} [idle: {}] [background: {}, preempt: {}]\n",
                n,
                m.summary(),
                states.join(" "),
                m.background,
                m.preempt
            ));
        }
    }
    o.push_str("\nBackground profiles (--background NAME, none, or a profile FILE.toml):\n");
    for n in crate::background::names() {
        let p = crate::background::builtin(n).expect("built-in");
        let d = if n == "none" { "nothing besides the workload: the quiet machine" } else { p.description.as_str() };
        o.push_str(&format!("  {:<16} {} [{} sources]\n", n, d, p.sources.len()));
    }
    o.push_str(&format!(
        "\nPreemption models (--preempt MODEL): {}\n",
        crate::linux::config::Preempt::NAMES.join(", ")
    ));
    o.push_str("\nKernels:\n");
    for k in KERNELS {
        let ids: Vec<&str> = k.patches.iter().map(|p| p.info().id).collect();
        o.push_str(&format!("  {:<16} {} [{}]\n", k.name, k.description, ids.join(" ")));
    }
    o.push_str("\nPatches (--patch +ID/-ID):\n");
    for p in PATCHES {
        o.push_str(&format!("  {:<28} {:<12} {}\n", p.id, p.merged, p.subject));
    }
    o.push_str("\nSched features (--feature NAME / NO_NAME; features.h @ v6.10, and CFS's of v6.1):\n");
    for f in SCHED_FEATURES {
        let doc = if f.modelled { f.doc.trim().to_string() } else { format!("(not modelled) {}", f.doc.trim()) };
        o.push_str(&format!("  {:<22} {:<5} {}\n", f.name, f.default, doc));
    }
    o.push_str("\nWorkloads:\n");
    for (n, d) in crate::workload::WORKLOADS {
        o.push_str(&format!("  {n:<16} {d}\n"));
    }
    o.push_str("\nScenarios (schedsim run NAME):\n");
    for (n, d, _) in scenario::BUILTIN {
        o.push_str(&format!("  {n:<16} {d}\n"));
    }
    o.push_str("\nExperiments (schedsim reproduce NAME):\n");
    for e in experiments::EXPERIMENTS {
        o.push_str(&format!("  {:<16} {}\n", e.name, e.description()));
    }
    o.push_str("\nNamed unknowns (--unknown NAME=VALUE; `schedsim list --unknowns` describes them):\n");
    for u in crate::unknowns::UNKNOWNS {
        o.push_str(&format!("  {:<22} {}\n", u.name, u.grammar));
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bench_json_has_every_figure() {
        let f = [BenchFigure { case: "idle".into(), actions: 2_000_000, wall_s: 0.5, sim_ns: 100_000_000 }];
        let d = bench_json(3, &f, &[("ipistorm", 1.5)]);
        assert_eq!(d["runs"], 3);
        assert_eq!(d["cases"][0]["case"], "idle");
        assert_eq!(d["cases"][0]["actions_per_s"], 4e6);
        assert_eq!(d["cases"][0]["sim_s_per_wall_s"], 0.2);
        assert_eq!(d["reproduce_wall_s"]["ipistorm"], 1.5);
    }

    #[test]
    fn own_options_and_key_values_do_not_mix() {
        let p = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let e = base_spec("hackbench", &None, &p(&["tool=rt-tests", "-p"])).err().unwrap();
        assert!(e.contains("tool name comes first"), "{e}");
        assert!(base_spec("hackbench", &None, &p(&["rt-tests", "-p"])).is_ok());
        assert!(base_spec("schbench", &None, &p(&["-m", "2", "args=-t 4"])).is_err());
        assert!(base_spec("rt-push", &None, &p(&["hold_us=50"])).is_ok());
    }
}
