//! The command line: `schedsim run | compare | reproduce | list | bench | machine | host-run |
//! validate | sweep | merge`. The only module that reads the wall clock; besides it only `run`
//! (input files), `trace::sink` (trace files) and `sweep` (grid and result files) touch files.

pub mod bench;
pub mod calibrate;
pub mod explore;
pub mod host;
pub mod host_run;
pub mod scenario;
pub mod sweep;
pub mod validate;

use crate::experiments::{self, ExpOpts};
use crate::linux::engine::Phase;
use crate::report::{self, CompareRow, Comparison};
use crate::run::{self, RunResult, RunSpec};
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
    #[command(after_help = crate::workload::params::limits_help())]
    Run(RunArgs),
    /// Run a scenario on several kernels over N seeds: an mmtests-style table.
    #[command(after_help = crate::workload::params::limits_help())]
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
    let names: Vec<&str> = run::WORKLOADS.iter().map(|w| w.0).collect();
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
    let hz: Vec<String> = run::HZ_CHOICES.iter().map(|h| h.to_string()).collect();
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

fn experiments_help() -> String {
    let names: Vec<&str> = experiments::EXPERIMENTS.iter().map(|e| e.name).collect();
    format!("Experiments to run (default: all): {}", names.join(", "))
}

#[derive(Args, Debug)]
struct ListArgs {
    /// Print this machine preset's TOML file instead (a starting point for `--machine FILE.toml`).
    #[arg(long)]
    machine: Option<String>,
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
    /// Also write a self-contained HTML report with plots to FILE (re-runs each variant's first
    /// seed once more, keeping a trace window).
    #[arg(long, value_name = "FILE")]
    html: Option<PathBuf>,
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
}

/// The most seeds `--runs` may ask for (each is a whole run).
const MAX_RUNS: usize = 1000;

fn check_runs(runs: usize) -> Result<(), String> {
    if !(1..=MAX_RUNS).contains(&runs) {
        return Err(format!("--runs {runs} is out of range (1..={MAX_RUNS})"));
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

fn apply_spec_args(s: &mut RunSpec, a: &SpecArgs) -> Result<(), String> {
    if let Some(m) = &a.machine {
        if *m != s.machine {
            // The scenario's idle-state choices were for its own machine.
            s.idle_states.clear();
        }
        s.machine = m.clone();
    }
    if let Some(k) = &a.kernel {
        s.kernel = k.clone();
    }
    if let Some(p) = &a.patch {
        s.patches = merge_patches(&s.patches, p);
    }
    s.features.extend(a.features.iter().cloned());
    if a.hz.is_some() {
        s.hz = a.hz;
    }
    for c in &a.cstates {
        let Some((name, v)) = c.split_once('=') else {
            return Err(format!("--cstate '{c}': expected NAME=on or NAME=off"));
        };
        let on = match v {
            "on" | "1" | "enable" => true,
            "off" | "0" | "disable" => false,
            _ => return Err(format!("--cstate '{c}': expected NAME=on or NAME=off")),
        };
        s.idle_states.retain(|(n, _)| n != name);
        s.idle_states.push((name.to_string(), on));
    }
    if let Some(l) = a.limit_ms {
        s.limit_ns = crate::workload::params::limit_ms_to_ns(l, "--limit-ms")?;
    }
    if let Some(hz) = a.hz {
        run::check_hz(hz, "--hz")?;
    }
    if a.preempt_rt {
        s.preempt_rt = true;
    }
    if a.background.is_some() {
        s.background = a.background.clone();
    }
    if a.preempt.is_some() {
        s.preempt = a.preempt.clone();
    }
    Ok(())
}

/// A scenario's patch items with `extra` (from `--patch`) on top: an item of `extra` replaces
/// the scenario's item for the same patch, so each patch is named once.
fn merge_patches(base: &str, extra: &str) -> String {
    let id = |item: &str| {
        let raw = item.trim().trim_start_matches(['+', '-']).to_string();
        crate::linux::patches::Patch::from_id(&raw).map_or(raw, |p| p.info().id.to_string())
    };
    let over: Vec<String> = extra.split(',').filter(|i| !i.trim().is_empty()).map(id).collect();
    let mut items: Vec<&str> =
        base.split(',').map(str::trim).filter(|i| !i.is_empty() && !over.contains(&id(i))).collect();
    items.extend(extra.split(',').map(str::trim).filter(|i| !i.is_empty()));
    items.join(",")
}

fn base_spec(name: &str, file: &Option<PathBuf>, params: &[String]) -> Result<RunSpec, String> {
    let own_cli = name == "schbench" || name == "hackbench";
    if own_cli && params.iter().any(|p| p.contains('=')) && params.iter().any(|p| !p.contains('=')) {
        let example = if name == "hackbench" { "-- rt-tests -p -g 4" } else { "-- -m 2 -t 16" };
        return Err(format!(
            "command line: {name} takes either key=value parameters or its own options after `--`, not both \
             (for example `schedsim run {name} {example}`; for hackbench the tool name comes first)"
        ));
    }
    if name == "schbench" && file.is_none() && !params.is_empty() && params.iter().all(|p| !p.contains('=')) {
        // schbench takes its own command line.
        let mut s = scenario::builtin(name)?;
        s.params = Params::from_pairs(vec![("args".into(), params.join(" "))], "schbench command line");
        return Ok(s);
    }
    if name == "hackbench" && file.is_none() && !params.is_empty() && params.iter().all(|p| !p.contains('=')) {
        // hackbench takes its own command line, optionally after a tool name (rt-tests, old, perf).
        let mut s = scenario::builtin(name)?;
        let mut pairs = s.params.pairs().to_vec();
        pairs.extend(crate::workload::hackbench::command_line_params(params));
        s.params = Params::from_pairs(pairs, "hackbench command line");
        return Ok(s);
    }
    let mut s = match file {
        Some(p) => {
            let text = run::read_input_file(p, "scenario file")?;
            scenario::parse(&text, &p.display().to_string())?
        }
        None => scenario::builtin(name)?,
    };
    if !params.is_empty() {
        let extra = Params::parse(params.iter().map(String::as_str), "command line")?;
        let mut pairs = s.params.pairs().to_vec();
        pairs.extend(extra.pairs().iter().cloned());
        s.params = Params::from_pairs(pairs, "command line");
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
        s.seed = seed;
    }
    if a.check {
        s.check = true;
    }
    if let Some(t) = &a.replay {
        s.replay = Some(crate::explore::Perturbation::parse(t)?);
    }
    Ok(s)
}

fn cmd_run(a: RunArgs) -> Result<(), String> {
    if let Some(ms) = a.panic_at_ms {
        crate::crash::set_panic_at(ms.saturating_mul(crate::sim::NSEC_PER_MSEC).max(1));
    }
    let s = spec_from_run_args(&a)?;
    for n in run::spec_notes(&s) {
        eprintln!("schedsim: note: {n}");
    }
    if a.log_dir.is_some() && s.workload != "rtapp" {
        return Err("command line: --log-dir is for rt-app workloads (--rtapp FILE.json)".into());
    }
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
        let d = crate::html::detail(&format!("{} {}", s.workload, r.kernel_label), &s)?;
        let c = Comparison {
            experiment: format!("run {} on {} ({})", s.workload, r.machine, r.kernel_label),
            machine: r.machine.clone(),
            metric: "time".into(),
            unit: "ms".into(),
            lower_is_better: true,
            rows: Vec::new(),
            title: String::new(),
            notes: vec![run_text(&s, &r)],
        };
        let html = crate::html::page("schedsim run", &[crate::html::section_run(&c, &[d])]);
        crate::html::write(path, &html)?;
    }
    drop(progress);
    if let Some(dir) = &a.log_dir {
        let Workload::RtApp(w) = &r.workload else {
            return Err("command line: --log-dir is for rt-app workloads (--rtapp FILE.json)".into());
        };
        for t in &w.threads {
            host::write_atomically(&dir.join(w.log_file_name(t)), w.log_text(t).as_bytes())?;
        }
    }
    if a.json {
        emit(&format!("{}\n", serde_json::to_string_pretty(&run_json(&s, &r)).expect("serializable")));
    } else {
        emit(&run_text(&s, &r));
        if let (Some(path), Some(n)) = (&a.trace, written) {
            emit(&format!("\ntrace: {n} records written to {}\n", path.display()));
        }
    }
    Ok(())
}

fn counters_json(r: &RunResult) -> serde_json::Value {
    let st = &r.stats;
    let phases: serde_json::Map<String, serde_json::Value> = Phase::ALL
        .iter()
        .map(|p| (p.name().to_string(), json!(st.phase_ns.iter().map(|c| c[*p as usize]).sum::<u64>())))
        .collect();
    json!({
        "ipis_sent": st.ipis_sent,
        "resched_ipis_sent": st.resched_ipis_sent,
        "ipis_avoided_by_polling": st.ipis_avoided,
        "idle_exits": st.idle_exits,
        "idle_state_entries": st.idle_state_entries,
        "schedule_idle_calls": st.schedule_idle_calls,
        "newidle_calls": st.newidle_calls,
        "newidle_balances": st.newidle_balances,
        "newidle_ns": st.newidle_ns,
        "rd_overloaded_ns": st.overloaded_ns,
        "ksoftirqd_wakeups": st.ksoftirqd_wakeups,
        "context_switches": st.context_switches,
        "cpu_migrations": st.cpu_migrations,
        "lb_gained_newidle": st.lb_gained_newidle,
        "lb_gained_periodic": st.lb_gained_periodic,
        "wakeups_wakelist_polling": st.wakeups_wakelist_polling,
        "wakeups_wakelist_ipi": st.wakeups_wakelist_ipi,
        "wakeups_wakelist_coalesced": st.wakeups_wakelist_coalesced,
        "wakeups_direct": st.wakeups_direct,
        "stacking_wakeups": st.stacking_wakeups,
        "stacking_fallback_wakeups": st.stacking_fallback_wakeups,
        "nohz_kicks": st.nohz_kicks,
        "nohz_kicks_raised_softirq": st.nohz_kicks_raised_softirq,
        "nohz_kicks_lost": st.nohz_kicks_lost,
        "nohz_balances": st.nohz_balances,
        "nohz_balance_aborts": st.nohz_balance_aborts,
        "task_clock_ns": r.task_clock_ns,
        "wakeup_latency_ns": latency_json(&st.wakeup_latency),
        "ticks": st.ticks,
        "tick_stops": st.tick_stops,
        "warns": st.warns,
        "irqs_off_ns_per_cpu": st.irqs_off_ns,
        "phase_ns_all_cpus": phases,
    })
}

fn latency_json(h: &hdrhistogram::Histogram<u64>) -> serde_json::Value {
    if h.is_empty() {
        return json!(null);
    }
    json!({
        "samples": h.len(),
        "min": h.min(),
        "p50": h.value_at_quantile(0.50),
        "p90": h.value_at_quantile(0.90),
        "p99": h.value_at_quantile(0.99),
        "p99.9": h.value_at_quantile(0.999),
        "max": h.max(),
    })
}

fn workload_json(r: &RunResult) -> serde_json::Value {
    match &r.workload {
        Workload::Ipistorm(w) => json!({
            "name": "ipistorm",
            "calls": w.calls(),
            "total_ns": w.total_ns(),
            "calls_polling": w.calls_polling,
            "calls_ipi": w.calls_ipi,
            "calls_coalesced": w.calls_coalesced,
            "mean_call_ns_polling": w.ns_polling.checked_div(w.calls_polling),
            "mean_call_ns_ipi": w.ns_ipi.checked_div(w.calls_ipi),
        }),
        Workload::Schbench(w) => {
            let h = w.final_hist.clone().unwrap_or_else(|| w.combined());
            let mut tail: serde_json::Map<String, serde_json::Value> =
                w.tail.rows().iter().map(|(key, _, n)| (key.to_string(), json!(n))).collect();
            tail.insert("threshold_us".into(), json!(crate::workload::schbench::TAIL_US));
            let pct: serde_json::Map<String, serde_json::Value> = crate::workload::schbench_stats::PERCENTILES
                .iter()
                .map(|p| (format!("{}", p.permille as f64 / 10.0), json!(h.percentile(p.permille))))
                .collect();
            json!({
                "name": "schbench",
                "samples": h.nr_samples(),
                "percentiles_us": pct,
                "min_us": h.min(),
                "max_us": h.max(),
                "tail_samples": tail,
                "output": w.output,
            })
        }
        Workload::Spinners(w) => json!({
            "name": "spinners",
            "tasks": w.tasks,
            "time_to_fill_ns": w.time_to_fill_ns(),
        }),
        Workload::Nanosleep(w) => json!({"name": "nanosleep", "procs": w.procs, "loops": w.loops}),
        Workload::RtPush(w) => json!({
            "name": "rt-push",
            "pinned_cpu": w.pinned_cpu,
            "woken_task_cpu": w.woken_ran_on,
            "woken_task_cpu_is_pinned_cpu": w.woken_task_cpu_is_pinned_cpu(),
            "pinned_task_preempted": w.pinned_preempted,
            "wakeup_to_run_ns": w.wakeup_to_run_ns(),
            "rt_pushes": r.stats.rt_pushes,
            "rt_push_ipis": r.stats.rt_push_ipis,
        }),
        Workload::Hackbench(w) => json!({
            "name": "hackbench",
            "tool": w.o.tool.name(),
            "command": w.o.command_line(),
            "mode": if w.o.threads { "thread" } else { "process" },
            "transport": if w.o.pipe { "pipe" } else { "socket" },
            "groups": w.o.groups,
            "fds": w.o.fds,
            "loops": w.o.loops,
            "datasize": w.o.datasize,
            "tasks": w.o.tasks(),
            "messages_expected": w.o.expected_messages(),
            "messages_sent": w.messages_sent,
            "messages_received": w.messages_received,
            "bytes_received": w.bytes_received,
            "time_us": w.time_us(),
            "time": w.time_text(),
            "elapsed_ns": w.elapsed_ns(),
            "output": w.output,
        }),
        Workload::PipePair(w) => json!({
            "name": w.name(),
            "loops": w.loops,
            "elapsed_ns": w.elapsed_ns(),
            "us_per_op": w.us_per_op(),
            "output": w.output,
        }),
        Workload::RtApp(w) => json!({
            "name": "rtapp",
            "p_load_ns": w.p_load,
            "threads": w.threads.iter().map(|t| json!({
                "name": t.name,
                "ind": t.ind,
                "forked": t.fork_id.is_some(),
                "log_file": w.log_file_name(t),
                "rows": t.rows.iter().map(|r| json!({
                    "perf": r.perf, "run": r.run, "period": r.period, "start": r.start, "end": r.end,
                    "rel_st": r.rel_st, "slack": r.slack, "c_duration": r.c_duration,
                    "c_period": r.c_period, "wu_lat": r.wu_lat,
                })).collect::<Vec<_>>(),
            })).collect::<Vec<_>>(),
            "notes": w.notes,
        }),
        Workload::Idle => json!({"name": "idle"}),
    }
}

/// The `--json` document of one run (also each line of `schedsim sweep`).
pub fn run_json(s: &RunSpec, r: &RunResult) -> serde_json::Value {
    let mut v = json!({
        "command": run_header(s, r).trim_start_matches("# ").trim_end(),
        "scenario": s.workload,
        "machine": r.machine,
        "kernel": r.kernel_label,
        "seed": r.seed,
        "finished": r.finished,
        "sim_ns": r.sim_ns,
        "warmup_ns": r.warmup_ns,
        "background": r.background,
        "preempt": r.preempt,
        "actions": r.actions,
        "workload": workload_json(r),
        "counters": counters_json(r),
    });
    if let Some(c) = &r.checks {
        v["checks"] = checks_json(c);
    }
    v
}

/// The checkers' findings: every rule that fired (count, first instant) and the kept violations.
fn checks_json(c: &crate::linux::check::Checks) -> serde_json::Value {
    json!({
        "rules": c.counts.iter().map(|n| json!({
            "rule": n.rule.name(),
            "count": n.count,
            "first_ns": n.first_ns,
            "first_cpu": n.first_cpu,
            "kernel_rule": n.rule.kernel_rule(),
        })).collect::<Vec<_>>(),
        "violations": c.violations.iter().map(|v| json!({
            "rule": v.rule.name(),
            "time_ns": v.time_ns,
            "cpu": v.cpu,
            "detail": v.detail,
        })).collect::<Vec<_>>(),
    })
}

/// The checkers' findings as text: one line per rule that fired, then the kept violations.
fn checks_text(c: &crate::linux::check::Checks) -> String {
    let mut o = String::new();
    if c.counts.is_empty() {
        o.push_str("\n Invariant checks: no violations\n");
        return o;
    }
    o.push_str(&format!(
        "\n Invariant checks: {} rules violated ({} violations; the first {} kept)\n",
        c.counts.len(),
        c.counts.iter().map(|n| n.count).sum::<u64>(),
        c.violations.len()
    ));
    let mut counts = c.counts.clone();
    counts.sort_by_key(|n| n.first_ns);
    for n in &counts {
        o.push_str(&format!(
            "  {}: {} times, first at {:.6} ms on CPU {}\n    rule: {}\n",
            n.rule.name(),
            n.count,
            n.first_ns as f64 / 1e6,
            n.first_cpu,
            n.rule.kernel_rule()
        ));
    }
    o.push_str(" Violations (rule, instant ms, cpu, detail):\n");
    for v in &c.violations {
        o.push_str(&format!("  {} {:.6} cpu{} {}\n", v.rule.name(), v.time_ns as f64 / 1e6, v.cpu, v.detail));
    }
    o
}

/// `perf stat`'s default block for a program's run: task-clock, context switches, migrations
/// and elapsed time.
fn perf_stat_text(cmd: &str, task_clock_ns: u64, switches: u64, migrations: u64, elapsed_ns: u64) -> String {
    let thousands = |n: u64| {
        let d = n.to_string();
        let mut o = String::new();
        for (i, ch) in d.chars().enumerate() {
            if i > 0 && (d.len() - i) % 3 == 0 {
                o.push(',');
            }
            o.push(ch);
        }
        o
    };
    let msec = task_clock_ns as f64 / 1e6;
    let (int, frac) = (task_clock_ns / 1_000_000, task_clock_ns % 1_000_000 / 10_000);
    let per_sec = |n: u64| n as f64 / (task_clock_ns.max(1) as f64 / 1e9) / 1e3;
    let mut o = format!("\n Performance counter stats for '{cmd}':\n\n");
    o.push_str(&format!(
        "{:>18} msec task-clock                       #  {:>7.3} CPUs utilized\n",
        format!("{}.{frac:02}", thousands(int)),
        msec / (elapsed_ns.max(1) as f64 / 1e6)
    ));
    o.push_str(&format!(
        "{:>18}      context-switches                 #  {:>7.3} K/sec\n",
        thousands(switches),
        per_sec(switches)
    ));
    o.push_str(&format!(
        "{:>18}      cpu-migrations                   #  {:>7.3} K/sec\n",
        thousands(migrations),
        per_sec(migrations)
    ));
    o.push_str(&format!("\n{:>18.9} seconds time elapsed\n", elapsed_ns as f64 / 1e9));
    o
}

/// The first line of `schedsim run`'s output: `# schedsim run ...`, the spec's own command
/// line ([`RunSpec::command_line`]) with the background and preemption model in force written
/// out. Pasted back (without the `# `), it is the same run.
pub fn run_header(s: &RunSpec, r: &RunResult) -> String {
    let shown = RunSpec { background: Some(r.background.clone()), preempt: Some(r.preempt.clone()), ..s.clone() };
    format!("# {}\n", shown.command_line())
}

fn run_text(s: &RunSpec, r: &RunResult) -> String {
    let mut o = run_header(s, r);
    match &r.workload {
        Workload::Ipistorm(w) => {
            for c in w.p.cpulist.iter() {
                o.push_str(&format!("ipistorm: {c} -> {}\n", w.p.target(c, r.nr_cpus)));
            }
            o.push_str(&format!(
                "ipistorm: {} calls in {:.3} ms ({:.0} ns per call)\n",
                w.calls(),
                w.total_ns() as f64 / 1e6,
                w.total_ns() as f64 / w.calls().max(1) as f64
            ));
            let pct = |n: u64| 100.0 * n as f64 / w.calls().max(1) as f64;
            o.push_str(&format!(
                "ipistorm: {:.1}% of calls notified by polling (mean {} ns), {:.1}% by a real IPI (mean {} ns), {:.1}% coalesced\n",
                pct(w.calls_polling),
                w.ns_polling.checked_div(w.calls_polling).unwrap_or(0),
                pct(w.calls_ipi),
                w.ns_ipi.checked_div(w.calls_ipi).unwrap_or(0),
                pct(w.calls_coalesced)
            ));
        }
        Workload::Schbench(w) => {
            o.push_str(&w.output);
            let rows = w.tail.rows();
            let causes: Vec<String> = rows[1..].iter().map(|(_, label, n)| format!("{label} {n}")).collect();
            o.push_str(&format!(
                "\nschedsim: {} samples of {} us or more, by what the wakeup found on its target CPU: {}\n",
                rows[0].2,
                crate::workload::schbench::TAIL_US,
                causes.join(", ")
            ));
        }
        Workload::Spinners(w) => o.push_str(&match w.time_to_fill_ns() {
            Some(t) => {
                format!("spinners: {} tasks; every CPU had at most one task after {:.3} ms\n", w.tasks, t as f64 / 1e6)
            }
            None => format!("spinners: {} tasks; some CPU still had several tasks at the end\n", w.tasks),
        }),
        Workload::Nanosleep(w) => o.push_str(&format!("nanosleep: {} processes, {} sleeps\n", w.procs, w.loops)),
        Workload::RtPush(w) => o.push_str(&w.summary(&r.stats)),
        Workload::Hackbench(w) => {
            o.push_str(&w.output);
            o.push_str(&perf_stat_text(
                &w.o.command_line(),
                r.task_clock_ns,
                r.stats.context_switches,
                r.stats.cpu_migrations,
                if w.end_ns > 0 { w.elapsed_ns() } else { (r.sim_ns + r.warmup_ns).saturating_sub(w.exec_ns) },
            ));
        }
        Workload::PipePair(w) => o.push_str(&w.output),
        Workload::RtApp(w) => o.push_str(&w.summary()),
        Workload::Idle => o.push_str(&format!("idle: {:.3} ms simulated\n", r.sim_ns as f64 / 1e6)),
    }
    if !r.finished && !matches!(r.workload, Workload::Idle) {
        o.push_str("warning: the workload did not finish before the time limit\n");
    }
    let st = &r.stats;
    let total_irqs_off: u64 = st.irqs_off_ns.iter().sum();
    o.push_str(&format!(
        "\n Performance counter stats (simulated {:.3} ms, {} CPUs):\n\n",
        r.sim_ns as f64 / 1e6,
        r.nr_cpus
    ));
    let line = |o: &mut String, v: String, name: &str| o.push_str(&format!("{v:>18}      {name}\n"));
    line(&mut o, st.ipis_sent.to_string(), "ipis-sent (CALL_FUNCTION_SINGLE)");
    line(&mut o, st.resched_ipis_sent.to_string(), "ipis-sent (RESCHEDULE)");
    line(&mut o, st.ipis_avoided.to_string(), "ipis-avoided (sched_wake_idle_without_ipi)");
    line(&mut o, st.idle_exits.to_string(), "idle-exits (do_idle)");
    line(&mut o, st.schedule_idle_calls.to_string(), "schedule-idle-calls");
    line(&mut o, st.newidle_calls.to_string(), "newidle-balance-calls");
    line(&mut o, st.newidle_balances.to_string(), "newidle-balances (ungated: walked the domains)");
    line(&mut o, format!("{:.3}", st.newidle_ns as f64 / 1e6), "newidle-balance-msec");
    line(&mut o, format!("{:.3}", st.overloaded_ns as f64 / 1e6), "rd-overloaded-msec (time rd->overloaded was set)");
    line(&mut o, st.ksoftirqd_wakeups.to_string(), "ksoftirqd-wakeups");
    line(&mut o, format!("{:.3}", r.task_clock_ns as f64 / 1e6), "task-clock (msec, workload tasks)");
    line(&mut o, st.context_switches.to_string(), "context-switches");
    line(&mut o, st.cpu_migrations.to_string(), "cpu-migrations");
    line(&mut o, st.lb_gained_newidle.to_string(), "lb-gained (newidle)");
    line(&mut o, st.lb_gained_periodic.to_string(), "lb-gained (periodic/nohz)");
    line(&mut o, st.wakeups_wakelist_polling.to_string(), "wakeups (wakelist, polling kick)");
    line(&mut o, st.wakeups_wakelist_ipi.to_string(), "wakeups (wakelist, IPI)");
    line(&mut o, st.wakeups_wakelist_coalesced.to_string(), "wakeups (wakelist, coalesced)");
    line(&mut o, st.wakeups_direct.to_string(), "wakeups (direct enqueue)");
    line(&mut o, st.stacking_wakeups.to_string(), "stacking-wakeups");
    line(&mut o, st.stacking_fallback_wakeups.to_string(), "stacking-wakeups (no idle CPU left)");
    line(&mut o, st.nohz_kicks.to_string(), "nohz-ilb-kicks");
    line(&mut o, st.nohz_kicks_raised_softirq.to_string(), "nohz-kicks-raised-softirq");
    line(&mut o, st.nohz_kicks_lost.to_string(), "nohz-kicks-lost");
    line(&mut o, st.nohz_balances.to_string(), "nohz-idle-balances");
    line(&mut o, st.nohz_balance_aborts.to_string(), "nohz-idle-balance-aborts");
    line(&mut o, format!("{:.3}", total_irqs_off as f64 / 1e6), "irqs-off-msec (all CPUs)");
    line(&mut o, st.warns.to_string(), "kernel-warnings");
    let h = &st.wakeup_latency;
    if !h.is_empty() {
        o.push_str(&format!(
            "\n Wakeup latency (waking -> running, us): samples {}  min {:.1}  p50 {:.1}  p90 {:.1}  p99 {:.1}  p99.9 {:.1}  max {:.1}\n",
            h.len(),
            h.min() as f64 / 1e3,
            h.value_at_quantile(0.5) as f64 / 1e3,
            h.value_at_quantile(0.9) as f64 / 1e3,
            h.value_at_quantile(0.99) as f64 / 1e3,
            h.value_at_quantile(0.999) as f64 / 1e3,
            h.max() as f64 / 1e3
        ));
    }
    // The busiest CPUs: by time out of idle (every phase but the idle state and the idle loop),
    // ties by CPU id; IRQ-off time is a column, not the rank (an idle CPU in MWAIT has IRQs off).
    let busy_ns = |c: usize| -> u64 {
        Phase::ALL
            .iter()
            .filter(|p| !matches!(p, Phase::IdleState | Phase::IdleLoop))
            .map(|p| st.phase_ns[c][*p as usize])
            .sum()
    };
    let mut busy: Vec<(usize, u64, u64)> = st
        .irqs_off_ns
        .iter()
        .copied()
        .enumerate()
        .map(|(c, off)| (c, off, busy_ns(c)))
        .filter(|&(_, off, b)| off > 0 || b > 0)
        .collect();
    busy.sort_by(|a, b| b.2.cmp(&a.2).then(a.0.cmp(&b.0)));
    o.push_str("\n Time by phase on the busiest CPUs (ms):\n");
    let mut header = vec!["cpu".to_string(), "irqs-off".to_string()];
    header.extend(Phase::ALL.iter().map(|p| p.name().to_string()));
    let rows: Vec<Vec<String>> = busy
        .iter()
        .take(4)
        .map(|(c, off, _)| {
            let mut row = vec![c.to_string(), format!("{:.3}", *off as f64 / 1e6)];
            row.extend(Phase::ALL.iter().map(|p| format!("{:.3}", st.phase_ns[*c][*p as usize] as f64 / 1e6)));
            row
        })
        .collect();
    o.push_str(&report::render_grid(&header, &rows));
    if let Some(c) = &r.checks {
        o.push_str(&checks_text(c));
    }
    o
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
    let results = experiments::run_all(&specs, a.jobs)?;
    // What each row's figure is (the values below): schbench's p99 wakeup latency is in us.
    let (metric, unit) = if base.workload == "schbench" { ("wakeup p99", "us") } else { ("time", "ms") };
    let mut rows = Vec::new();
    for (ki, kspec) in kernels.iter().enumerate() {
        let rs = &results[ki * a.runs..(ki + 1) * a.runs];
        let v: Vec<f64> = rs
            .iter()
            .map(|r| match &r.workload {
                Workload::Ipistorm(w) => w.total_ns() as f64 / 1e6,
                Workload::Schbench(w) => w.final_hist.as_ref().map_or(0, |h| h.percentile(990)) as f64,
                Workload::Spinners(w) => w.time_to_fill_ns().unwrap_or(r.sim_ns) as f64 / 1e6,
                Workload::Nanosleep(_) => r.stats.newidle_ns as f64 / 1e6,
                Workload::RtPush(w) => w.wakeup_to_run_ns().unwrap_or(r.sim_ns) as f64 / 1e6,
                Workload::Hackbench(w) => w.time_us().map_or(r.sim_ns / 1000, |t| t) as f64 / 1e3,
                Workload::PipePair(w) => w.elapsed_ns().unwrap_or(r.sim_ns) as f64 / 1e6,
                Workload::RtApp(w) => {
                    // Mean wakeup latency after timers, over every logged phase.
                    let rows: Vec<_> = w.threads.iter().flat_map(|t| t.rows.iter()).collect();
                    rows.iter().map(|r| r.wu_lat as f64).sum::<f64>() / rows.len().max(1) as f64 / 1e3
                }
                Workload::Idle => r.sim_ns as f64 / 1e6,
            })
            .collect();
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
        experiment: base.workload.clone(),
        machine: base.machine.clone(),
        metric: metric.into(),
        unit: unit.into(),
        lower_is_better: true,
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
    let names: Vec<String> = if a.experiments.is_empty() {
        experiments::EXPERIMENTS.iter().map(|e| e.name.to_string()).collect()
    } else {
        a.experiments.clone()
    };
    let exps: Vec<_> = names.iter().map(|n| experiments::find(n)).collect::<Result<_, _>>()?;
    let params = Params::parse(a.params.iter().map(String::as_str), "--param")?;
    if let Some(k) = &a.kernel {
        if let Some(e) = exps.iter().find(|e| !experiments::TAKES_KERNEL.contains(&e.name)) {
            return Err(format!(
                "--kernel {k}: experiment '{}' runs its own kernels (--kernel is accepted by: {})",
                e.name,
                experiments::TAKES_KERNEL.join(", ")
            ));
        }
    }
    let o = ExpOpts {
        runs: a.runs,
        seed: a.seed,
        jobs: a.jobs,
        params: params.pairs().to_vec(),
        background: a.background.clone(),
        preempt: a.preempt.clone(),
        kernel: a.kernel.clone(),
    };
    let mut docs = Vec::new();
    let mut sections = Vec::new();
    let progress = Progress::start(a.quiet, Progress::RUNS);
    experiments::COLLECT_SPECS.store(a.html.is_some(), std::sync::atomic::Ordering::Relaxed);
    for e in exps {
        let c = (e.run)(&o)?;
        if a.html.is_some() {
            let specs = experiments::take_collected();
            let mut details = Vec::new();
            for (i, spec) in specs.iter().enumerate() {
                let label = c.rows.get(i).map_or_else(|| format!("variant {i}"), |r| r.variant.clone());
                details.push(crate::html::detail(&label, spec)?);
            }
            sections.push(crate::html::section(&c, &details));
        }
        if a.json {
            docs.push(c);
        } else {
            print_comparison(&c, false);
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
                    bar.set_length(experiments::RUNS_QUEUED.load(Ordering::Relaxed).max(1) as u64);
                    bar.set_position(experiments::RUNS_DONE.load(Ordering::Relaxed) as u64);
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
    experiments::ipistorm::reproduce(&ExpOpts::default())?;
    let ipistorm_s = t.elapsed().as_secs_f64();
    if !a.json {
        emit(&format!("\nreproduce ipistorm (6 variants x 5 seeds, 2 jobs): {ipistorm_s:.2} s wall\n"));
    }
    let t = Instant::now();
    experiments::schbench_ttwu::reproduce(&ExpOpts::default())?;
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
        "workloads": run::WORKLOADS.iter().map(|(n, d)| json!({"name": n, "description": d})).collect::<Vec<_>>(),
        "scenarios": scenario::BUILTIN.iter().map(|(n, d, _)| json!({"name": n, "description": d})).collect::<Vec<_>>(),
        "experiments": experiments::EXPERIMENTS.iter().map(|e| json!({"name": e.name, "description": e.description})).collect::<Vec<_>>(),
    })
}

/// README's reference tables (scenarios, experiments, kernels, patches, sched features,
/// machines), generated from the tables in code; `tests/help_tables.rs` fails when README's
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
        o.push_str(&format!("| `{}` | {} |\n", e.name, cell(e.description)));
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
    for (n, d) in run::WORKLOADS {
        o.push_str(&format!("  {n:<16} {d}\n"));
    }
    o.push_str("\nScenarios (schedsim run NAME):\n");
    for (n, d, _) in scenario::BUILTIN {
        o.push_str(&format!("  {n:<16} {d}\n"));
    }
    o.push_str("\nExperiments (schedsim reproduce NAME):\n");
    for e in experiments::EXPERIMENTS {
        o.push_str(&format!("  {:<16} {}\n", e.name, e.description));
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
