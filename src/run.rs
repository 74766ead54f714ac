//! One simulation run: resolve the inputs, build the machine, run it, collect the results.

use crate::hw;
use crate::linux::stats::Stats;
use crate::linux::{Kernel, KernelConfig};
use crate::sim::{Time, NSEC_PER_SEC};
use crate::trace::{ftrace, Record};
use crate::workload::ipistorm::{Ipistorm, IpistormParams};
use crate::workload::params::Params;
use crate::workload::Workload;

/// Everything that decides a run. [`RunSpec::to_args`] prints it as a `schedsim run` command
/// line and `cli::parse_run_line` reads one back: a field that changes a run has one line in
/// each (and a flag in `cli::SpecArgs`), and `tests/run_line.rs` checks `parse(print(spec)) ==
/// spec` and that a printed line reruns bit-identically.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunSpec {
    pub machine: String,
    pub kernel: String,
    /// `+ID,-ID` on top of the named kernel.
    pub patches: String,
    /// Sched features (`NAME` / `NO_NAME`).
    pub features: Vec<String>,
    pub hz: Option<u32>,
    pub seed: u64,
    pub workload: String,
    pub params: Params,
    /// Idle states to enable or disable by name, e.g. ("C2", false).
    pub idle_states: Vec<(String, bool)>,
    /// Stop after this much simulated time even if the workload is not done.
    pub limit_ns: Time,
    /// Keep trace records. Not part of the command line: it changes what is kept, never the
    /// run (`--trace FILE` is an output option).
    pub trace: bool,
    /// CONFIG_PREEMPT_RT.
    pub preempt_rt: bool,
    /// Background activity: a built-in profile name, `none`, or a profile file (`.toml`).
    /// `None` takes the machine's default.
    pub background: Option<String>,
    /// The preemption model (`none`, `voluntary`, `full`, `dynamic-...`). `None` takes the
    /// machine's default.
    pub preempt: Option<String>,
    /// A perturbation found by `schedsim explore` to replay (`--replay TOKEN`).
    pub replay: Option<crate::explore::Perturbation>,
    /// Run the invariant checkers (`--check`; `linux::check`). They only observe: the run is
    /// the same with or without them.
    pub check: bool,
}

impl RunSpec {
    pub fn new(workload: &str) -> RunSpec {
        RunSpec {
            machine: "epyc-7763-2s".into(),
            kernel: "v6.10".into(),
            patches: String::new(),
            features: Vec::new(),
            hz: None,
            seed: 1,
            workload: workload.into(),
            params: Params::default(),
            idle_states: Vec::new(),
            limit_ns: 120 * NSEC_PER_SEC,
            trace: false,
            preempt_rt: false,
            background: None,
            preempt: None,
            replay: None,
            check: false,
        }
    }

    /// The command line of this spec, the words after `schedsim`: `run --workload NAME` (the bare
    /// workload, no scenario defaults), its parameters as `key=value`, then a flag for every
    /// field that changes a run. `cli::parse_run_line` reads them back into an equal spec.
    /// The machine is shown as given (a machine file by its path); the kernel and its patch
    /// deltas in the grammar `--kernel` and `--patch` accept. A time limit is shown in whole
    /// milliseconds (every entry point sets it in milliseconds).
    pub fn to_args(&self) -> Vec<String> {
        let mut a = vec!["run".to_string(), "--workload".to_string(), self.workload.clone()];
        a.extend(self.params.pairs().iter().map(|(k, v)| format!("{k}={v}")));
        let mut flag = |name: &str, v: &str| {
            // `--patch=-ID`: a value that starts with `-` stays glued to its flag.
            if v.starts_with('-') {
                a.push(format!("--{name}={v}"));
            } else {
                a.push(format!("--{name}"));
                a.push(v.to_string());
            }
        };
        flag("machine", &self.machine);
        flag("kernel", &self.kernel);
        if !self.patches.is_empty() {
            flag("patch", &self.patches);
        }
        for f in &self.features {
            flag("feature", f);
        }
        if let Some(hz) = self.hz {
            flag("hz", &hz.to_string());
        }
        for (name, on) in &self.idle_states {
            flag("cstate", &format!("{name}={}", if *on { "on" } else { "off" }));
        }
        if self.limit_ns != RunSpec::new(&self.workload).limit_ns {
            flag("limit-ms", &self.limit_ns.div_ceil(crate::sim::NSEC_PER_MSEC).to_string());
        }
        if let Some(b) = &self.background {
            flag("background", b);
        }
        if let Some(p) = &self.preempt {
            flag("preempt", p);
        }
        flag("seed", &self.seed.to_string());
        if let Some(p) = &self.replay {
            flag("replay", &p.token());
        }
        if self.preempt_rt {
            a.push("--preempt-rt".into());
        }
        if self.check {
            a.push("--check".into());
        }
        a
    }

    /// The spec as one shell line, `schedsim run ...` (each word quoted for a POSIX shell
    /// where it needs it).
    pub fn command_line(&self) -> String {
        let words: Vec<String> = self.to_args().iter().map(|w| shell_quote(w)).collect();
        format!("schedsim {}", words.join(" "))
    }
}

/// `w` as one word of a POSIX shell line: bare when it holds only characters no shell treats
/// specially, else in single quotes (a `'` inside written `'\''`).
pub fn shell_quote(w: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "_-+=.,/:@%".contains(c);
    if !w.is_empty() && w.chars().all(plain) {
        return w.to_string();
    }
    format!("'{}'", w.replace('\'', "'\\''"))
}

/// Split a shell line into words as a POSIX shell does for plain words, single quotes,
/// double quotes (with `\"`, `\\`, `\$` and `` \` `` escapes) and backslash escapes; no
/// expansion. The inverse of joining [`shell_quote`]d words with spaces.
pub fn shell_split(line: &str) -> Result<Vec<String>, String> {
    let mut words = Vec::new();
    let mut cur = String::new();
    let mut in_word = false;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            c if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut cur));
                    in_word = false;
                }
            }
            '\'' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(c) => cur.push(c),
                        None => return Err(format!("unterminated single quote in: {line}")),
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            Some(c @ ('"' | '\\' | '$' | '`')) => cur.push(c),
                            Some(c) => {
                                cur.push('\\');
                                cur.push(c);
                            }
                            None => return Err(format!("unterminated double quote in: {line}")),
                        },
                        Some(c) => cur.push(c),
                        None => return Err(format!("unterminated double quote in: {line}")),
                    }
                }
            }
            '\\' => {
                in_word = true;
                match chars.next() {
                    Some(c) => cur.push(c),
                    None => return Err(format!("trailing backslash in: {line}")),
                }
            }
            c => {
                in_word = true;
                cur.push(c);
            }
        }
    }
    if in_word {
        words.push(cur);
    }
    Ok(words)
}

pub const WORKLOADS: &[(&str, &str)] = &[
    ("ipistorm", "Anton Blanchard's IPI stress module: kthreads issuing smp_call_function_single()"),
    ("schbench", "Chris Mason's wakeup-latency benchmark (2021-12 version): message threads and workers on futexes"),
    ("spinners", "N CPU-bound tasks started on chosen CPUs (tasks=, start=CPULIST, duration_ms=): overload setups"),
    ("rt-push", "a SCHED_FIFO task woken onto a pinned RT task's CPU: where it runs (pinned_cpu=, hold_us=, wake_delay_us=, ..._prio=)"),
    ("nanosleep", "N processes looping nanosleep(1 us) with timer slack (procs=, ns=, duration_ms=)"),
    ("hackbench", "hackbench over pipes or AF_UNIX sockets (tool=rt-tests|old|perf, args=the tool's own arguments)"),
    ("pingpong", "two threads pinned to two CPUs bouncing a byte through two pipes (iters=, sleep_us=, ping_cpu=, pong_cpu=)"),
    ("perf-pipe", "perf bench sched pipe: two processes (threaded=1: threads) bouncing 4 bytes through two pipes (loops=)"),
    ("idle", "nothing runs; the machine idles (ticks, idle states)"),
    ("rtapp", "an rt-app JSON file (file=PATH, or `schedsim run --rtapp FILE.json`): rt-app's threads, events and per-thread log"),
];

/// The text of a user's input file (`what` names it in errors), at most `max` bytes after
/// decoding `gz` (gunzip) when it is set: a larger or endless file (a device, a pipe) is an
/// error naming the file and the limit rather than an unbounded read.
pub fn read_input(path: &std::path::Path, what: &str, max: u64, gz: bool) -> Result<String, String> {
    use std::io::Read;
    let f = std::fs::File::open(path).map_err(|e| format!("cannot read {what} {}: {e}", path.display()))?;
    let mut r: Box<dyn Read> = if gz { Box::new(flate2::read::GzDecoder::new(f)) } else { Box::new(f) };
    let mut bytes = Vec::new();
    (&mut r)
        .take(max + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot read {what} {}: {e}", path.display()))?;
    if bytes.len() as u64 > max {
        return Err(format!(
            "{what} {} is larger than {} (schedsim reads at most that much)",
            path.display(),
            crate::workload::params::bytes_text(max)
        ));
    }
    String::from_utf8(bytes).map_err(|e| format!("{what} {}: not UTF-8 text ({e})", path.display()))
}

/// Read a scenario, machine, background, rt-app or grid file: [`read_input`] with
/// [`MAX_INPUT_FILE_BYTES`](crate::workload::params::MAX_INPUT_FILE_BYTES).
pub fn read_input_file(path: impl AsRef<std::path::Path>, what: &str) -> Result<String, String> {
    read_input(path.as_ref(), what, crate::workload::params::MAX_INPUT_FILE_BYTES, false)
}

/// The rt-app workload of a JSON file, checked against the machine. Errors name the file, the
/// line and the JSON path.
pub fn rtapp_workload(path: &str, m: &hw::Machine) -> Result<crate::workload::rtapp::RtApp, String> {
    let text = read_input_file(path, "rt-app file")?;
    let lim = crate::workload::rtapp_json::Limits { nr_cpus: m.topo.nr_cpus, nr_nodes: m.topo.nr_nodes() };
    let cfg = crate::workload::rtapp_json::parse_rtapp(&text, path, lim).map_err(|e| e.to_string())?;
    Ok(crate::workload::rtapp::RtApp::new(cfg))
}

/// The machine a spec names: a built-in preset, or a machine file (a name ending in `.toml`,
/// in the presets' format; `schedsim list --machine NAME` prints one to start from). Errors
/// name the file and line.
pub fn machine(name: &str) -> Result<hw::Machine, String> {
    if !name.ends_with(".toml") {
        return hw::preset(name);
    }
    let text = read_input_file(name, "machine file")?;
    let m = hw::machine_from_toml(&text, name)?;
    crate::linux::cost::check_measured(&m, name)?;
    Ok(m)
}

/// A machine file's relative background file (`background = "NAME.toml"`, as `machine
/// --from-host --calibrate` writes it) is relative to the machine file's directory.
fn machine_relative(machine: &str, background: &str) -> String {
    let b = std::path::Path::new(background);
    if !machine.ends_with(".toml") || !background.ends_with(".toml") || b.is_absolute() {
        return background.to_string();
    }
    match std::path::Path::new(machine).parent() {
        Some(d) if !d.as_os_str().is_empty() => d.join(b).to_string_lossy().into_owned(),
        _ => background.to_string(),
    }
}

/// The background profile a spec names: a built-in profile, `none`, or a profile file (a
/// name ending in `.toml`). Errors name the file and line.
pub fn background(name: &str) -> Result<crate::background::Profile, String> {
    if name.ends_with(".toml") {
        let text = read_input_file(name, "background file")?;
        return crate::background::parse(&text, name);
    }
    crate::background::builtin(name).ok_or_else(|| {
        format!(
            "unknown background '{name}' (expected one of: {}, or a profile file ending in .toml)",
            crate::background::names().join(", ")
        )
    })
}

/// Notes on a valid spec that will not do what its author probably means (printed on stderr
/// by the command line; the run goes ahead).
pub fn spec_notes(spec: &RunSpec) -> Vec<String> {
    let mut notes = Vec::new();
    let Ok(m) = machine(&spec.machine) else { return notes };
    if let (true, Some(f)) = (spec.workload == "rtapp", spec.params.get("file")) {
        if let Ok(w) = rtapp_workload(f, &m) {
            notes.extend(w.inert_keys().into_iter().map(|n| format!("{f}: {n}")));
        }
    }
    let disabled: Vec<&str> = spec.idle_states.iter().filter(|(_, on)| !on).map(|(n, _)| n.as_str()).collect();
    if m.governor == hw::Governor::Haltpoll && !disabled.is_empty() {
        notes.push(format!(
            "{} uses the haltpoll cpuidle governor, whose haltpoll_select() never reads the states' \
             disable flags (drivers/cpuidle/governors/haltpoll.c): disabling {} changes nothing, as on a real guest",
            m.name,
            disabled.join(", ")
        ));
    }
    notes
}

/// The CONFIG_HZ choices (kernel/Kconfig.hz), the same for `--hz`, a scenario's `hz` and a
/// machine file's.
pub const HZ_CHOICES: [u32; 4] = [100, 250, 300, 1000];

/// `hz` is a CONFIG_HZ choice; the error names `what` (a flag or `file:line: hz`).
pub fn check_hz(hz: u32, what: &str) -> Result<(), String> {
    if HZ_CHOICES.contains(&hz) {
        return Ok(());
    }
    Err(format!("{what} {hz} is not a CONFIG_HZ choice (100, 250, 300 or 1000)"))
}

/// Build the machine for a spec (validating every input).
pub fn build(spec: &RunSpec) -> Result<Kernel, String> {
    let mut m = machine(&spec.machine)?;
    for (name, on) in &spec.idle_states {
        let Some(i) = m.idle_states.iter().position(|s| &s.name == name) else {
            let names: Vec<&str> = m.idle_states.iter().map(|s| s.name.as_str()).collect();
            return Err(format!(
                "machine {} has no idle state '{name}' (expected one of: {})",
                m.name,
                names.join(", ")
            ));
        };
        if i == 0 && !on {
            return Err("idle state POLL cannot be disabled".into());
        }
        m.idle_states[i].disabled = !on;
    }
    if spec.limit_ns == 0 || spec.limit_ns > crate::workload::params::MAX_SIM_NS {
        return Err(format!(
            "time limit {} ns is out of range (1 ns ..= {} ns, one hour of simulated time)",
            spec.limit_ns,
            crate::workload::params::MAX_SIM_NS
        ));
    }
    if let Some(hz) = spec.hz {
        check_hz(hz, "--hz")?;
    }
    let hz = spec.hz.unwrap_or(m.hz);
    let mut cfg = KernelConfig::resolve(&spec.kernel, &spec.patches, hz)?;
    if spec.preempt_rt {
        cfg.preempt_rt = true;
        // features.h: TTWU_QUEUE defaults off on PREEMPT_RT.
        cfg.features.set(crate::linux::kernel::sched::features::SchedFeat::TTWU_QUEUE, false);
    }
    for f in &spec.features {
        cfg.features.apply(f)?;
    }
    let preempt = spec.preempt.as_deref().unwrap_or(&m.preempt);
    cfg.preempt = crate::linux::config::Preempt::parse(preempt).ok_or_else(|| {
        format!(
            "unknown preemption model '{preempt}' (expected one of: {})",
            crate::linux::config::Preempt::NAMES.join(", ")
        )
    })?;
    let bg = spec.background.clone().unwrap_or_else(|| machine_relative(&spec.machine, &m.background));
    cfg.background = background(&bg)?;
    if spec.background.is_none() && bg != m.background {
        // A profile file beside the machine file: reproduce lines name it by its path.
        cfg.background.name = bg;
    }
    for s in &cfg.background.sources {
        if let crate::background::Cpus::One(c) = s.cpus {
            if c >= m.topo.nr_cpus {
                return Err(format!(
                    "background '{}': source {} is bound to CPU {c}, but machine {} has {} CPUs",
                    cfg.background.name, s.name, m.name, m.topo.nr_cpus
                ));
            }
        }
    }
    let nr = m.topo.nr_cpus;
    let wl = match spec.workload.as_str() {
        "ipistorm" => Workload::Ipistorm(Ipistorm::new(IpistormParams::parse(&spec.params, nr)?)),
        "idle" => {
            spec.params.check_known("idle", &[])?;
            Workload::Idle
        }
        "spinners" => Workload::Spinners(crate::workload::spinners::Spinners::parse(&spec.params, nr)?),
        "nanosleep" => Workload::Nanosleep(crate::workload::nanosleep::NanosleepLoop::parse(&spec.params, nr)?),
        "rt-push" => Workload::RtPush(Box::new(crate::workload::rtpush::RtPush::parse(&spec.params, nr)?)),
        "hackbench" => Workload::Hackbench(Box::new(crate::workload::hackbench::Hackbench::parse(&spec.params)?)),
        "pingpong" => {
            Workload::PipePair(Box::new(crate::workload::pipepair::PipePair::parse_pingpong(&spec.params, nr)?))
        }
        "perf-pipe" => {
            Workload::PipePair(Box::new(crate::workload::pipepair::PipePair::parse_perf_pipe(&spec.params)?))
        }
        "rtapp" => {
            spec.params.check_known("rtapp", &["file"])?;
            let Some(f) = spec.params.get("file") else {
                return Err(format!("{}: the rtapp workload needs file=PATH.json", spec.params.origin));
            };
            Workload::RtApp(Box::new(rtapp_workload(f, &m)?))
        }
        "schbench" => {
            spec.params.check_known("schbench", &["args"])?;
            let args = spec.params.get("args").unwrap_or("");
            let argv: Vec<&str> = args.split_whitespace().collect();
            let o = crate::workload::schbench_stats::SchbenchOpts::parse(&argv)
                .map_err(|e| format!("{}: {e}", spec.params.origin))?;
            Workload::Schbench(Box::new(crate::workload::schbench::Schbench::new(o)?))
        }
        w => {
            let names: Vec<&str> = WORKLOADS.iter().map(|w| w.0).collect();
            return Err(format!("unknown workload '{w}' (expected one of: {})", names.join(", ")));
        }
    };
    let (tasks, wl_bytes, flags) = wl.planned_size(nr);
    crate::workload::params::check_memory(u64::from(nr), tasks, wl_bytes, flags)?;
    let mut k = Kernel::new(m, cfg, spec.seed, wl);
    k.trace.enabled = spec.trace;
    if let Some(p) = &spec.replay {
        crate::explore::apply(&mut k, p)?;
    }
    if spec.check {
        k.enable_checks();
    }
    Ok(k)
}

/// The outcome of a run.
pub struct RunResult {
    pub kernel_label: String,
    pub machine: String,
    pub nr_cpus: u32,
    pub seed: u64,
    /// Simulated time of the measured window (from the workload's start, after any
    /// background warm-up, to the end).
    pub sim_ns: Time,
    /// Simulated time before the window: the background warm-up.
    pub warmup_ns: Time,
    /// Actions the engine processed.
    pub actions: u64,
    pub stats: Stats,
    pub workload: Workload,
    pub trace: Vec<Record>,
    /// pid -> comm, for the trace.
    pub comms: Vec<(u32, String)>,
    /// CPU masks referenced by trace records.
    pub trace_masks: Vec<crate::hw::cpumask::CpuMask>,
    pub finished: bool,
    /// CPU time of the workload's tasks (perf's task-clock).
    pub task_clock_ns: u64,
    /// Names of the background sources (the work functions and callbacks trace records cite).
    pub funcs: Vec<String>,
    /// The background in force (a built-in name, `none`, or the file given) and the
    /// preemption model's name.
    pub background: String,
    pub preempt: String,
    /// The pids of the workload's tasks.
    pub workload_pids: Vec<u32>,
    /// The invariant checkers' findings (`--check`), `None` without checks.
    pub checks: Option<Box<crate::linux::check::Checks>>,
}

/// Run a spec to completion.
pub fn execute(spec: &RunSpec) -> Result<RunResult, String> {
    let mut k = build(spec)?;
    let line = reproduce_line(spec, &k);
    crate::crash::run_guarded(&mut k, spec.limit_ns, line);
    Ok(collect(k, spec))
}

/// The `# schedsim run ...` line of a built run, as `schedsim run` prints it at the top of its
/// output, for the panic report (`crash::run_guarded`). (The run's own header and this line
/// are the same text; when `RunSpec` gets its printer they should both come from it.)
/// The run's reproduce line for the panic report: the spec's own command line
/// ([`RunSpec::command_line`]) with the background and preemption model in force written out,
/// as `cli::run_header` prints it.
fn reproduce_line(s: &RunSpec, k: &Kernel) -> String {
    let background = s.background.clone().unwrap_or_else(|| k.cfg.background.name.clone());
    let shown = RunSpec { background: Some(background), preempt: Some(k.cfg.preempt.name()), ..s.clone() };
    format!("# {}", shown.command_line())
}

fn collect(mut k: Kernel, spec: &RunSpec) -> RunResult {
    let comms = k.tasks.iter().filter(|t| t.pid != 0).map(|t| (t.pid, t.comm.clone())).collect();
    let now = k.now;
    let task_clock_ns = k
        .tasks
        .iter()
        .filter(|t| t.kind == crate::linux::kernel::sched::TaskKind::Workload)
        .map(|t| t.sum_exec_runtime + if t.on_cpu { now - t.exec_start } else { 0 })
        .sum();
    let workload_pids =
        k.tasks.iter().filter(|t| t.kind == crate::linux::kernel::sched::TaskKind::Workload).map(|t| t.pid).collect();
    RunResult {
        kernel_label: k.cfg.label(),
        machine: k.m.name.clone(),
        nr_cpus: k.m.topo.nr_cpus,
        seed: spec.seed,
        sim_ns: k.now - k.measure_from.min(k.now),
        warmup_ns: k.measure_from.min(k.now),
        actions: k.actions,
        stats: std::mem::take(&mut k.stats),
        workload: k.wl.clone(),
        trace: std::mem::take(&mut k.trace.records),
        trace_masks: std::mem::take(&mut k.trace.masks),
        comms,
        finished: k.finished,
        task_clock_ns,
        funcs: k.cfg.background.trace_funcs(),
        background: spec.background.clone().unwrap_or_else(|| k.cfg.background.name.clone()),
        preempt: k.cfg.preempt.name(),
        workload_pids,
        checks: k.checks.take(),
    }
}

/// Run a spec with its trace streamed to `path` in `format` while the run goes on (memory stays
/// bounded however long the trace). The file appears complete or not at all; the error names the
/// file and the OS error. Returns the result (whose `trace` is empty) and the records written.
pub fn execute_streaming(
    spec: &RunSpec,
    path: &std::path::Path,
    format: crate::trace::sink::TraceFormat,
) -> Result<(RunResult, u64), String> {
    execute_streaming_chunked(spec, path, format, 0)
}

/// [`execute_streaming`] handing records over every `chunk` records (0: the default chunk).
pub fn execute_streaming_chunked(
    spec: &RunSpec,
    path: &std::path::Path,
    format: crate::trace::sink::TraceFormat,
    chunk: usize,
) -> Result<(RunResult, u64), String> {
    let err = |e: std::io::Error| format!("cannot write trace file {}: {e}", path.display());
    let nr_cpus = machine(&spec.machine)?.topo.nr_cpus;
    let sink = crate::trace::sink::open(path, format, nr_cpus).map_err(err)?;
    let (r, n) = execute_with_sink(spec, sink, chunk)?;
    Ok((r, n.map_err(err)?))
}

/// Run a spec handing its trace records to `sink` every `chunk` records (0: the default).
/// The outer error is the run's; the inner one the sink's (write errors).
pub fn execute_with_sink(
    spec: &RunSpec,
    sink: Box<dyn crate::trace::TraceSink>,
    chunk: usize,
) -> Result<(RunResult, std::io::Result<u64>), String> {
    let mut k = build(spec)?;
    k.trace.enabled = true;
    k.trace.chunk = chunk;
    let mut sink = sink;
    sink.funcs(&k.cfg.background.trace_funcs());
    k.trace.sink = Some(sink);
    let line = reproduce_line(spec, &k);
    crate::crash::run_guarded(&mut k, spec.limit_ns, line);
    k.flush_trace();
    let sink = k.trace.sink.take().expect("attached above");
    let n = match k.trace.error.take() {
        Some(e) => {
            sink.abort();
            Err(e)
        }
        None => sink.finish(),
    };
    k.trace.enabled = false;
    Ok((collect(k, spec), n))
}

/// Task names for the ftrace writer.
pub struct Comms<'a> {
    by_pid: std::collections::BTreeMap<u32, &'a str>,
    swapper: Vec<String>,
    masks: Vec<String>,
    funcs: &'a [String],
}

impl<'a> Comms<'a> {
    pub fn new(r: &'a RunResult) -> Comms<'a> {
        Comms {
            by_pid: r.comms.iter().map(|(p, c)| (*p, c.as_str())).collect(),
            swapper: (0..r.nr_cpus).map(|c| format!("swapper/{c}")).collect(),
            masks: r.trace_masks.iter().map(|m| crate::trace::cpumask_pb(m, r.nr_cpus)).collect(),
            funcs: &r.funcs,
        }
    }
}

impl ftrace::Names for Comms<'_> {
    fn comm(&self, pid: u32, cpu: u32) -> &str {
        if pid == 0 {
            return self.swapper.get(cpu as usize).map_or("swapper", |s| s.as_str());
        }
        self.by_pid.get(&pid).copied().unwrap_or("<...>")
    }
    fn cpumask(&self, id: u32) -> &str {
        self.masks.get(id as usize).map_or("", |s| s.as_str())
    }
    fn func(&self, id: u32) -> &str {
        self.funcs.get(id as usize).map_or("", |s| s.as_str())
    }
}

/// Write the run's trace as ftrace text to `path`, completely or not at all (the trace files'
/// discipline, [`crate::trace::sink::Output`]).
pub fn write_trace_file(r: &RunResult, path: &std::path::Path) -> Result<(), String> {
    let res = crate::trace::sink::Output::create(path).and_then(|mut o| {
        ftrace::write_trace(o.w(), &r.trace, &Comms::new(r), r.nr_cpus)?;
        o.commit()
    });
    res.map_err(|e| format!("cannot write trace file {}: {e}", path.display()))
}

/// A 64-bit FNV-1a hash of the trace records (for determinism checks).
pub fn trace_hash(records: &[Record]) -> u64 {
    let mut h = TraceHasher::default();
    for r in records {
        h.eat(r);
    }
    h.finish()
}

/// [`trace_hash`] one record at a time (for a trace that streams through a sink).
#[derive(Debug, Clone)]
pub struct TraceHasher(u64);

impl Default for TraceHasher {
    fn default() -> Self {
        TraceHasher(0xcbf2_9ce4_8422_2325)
    }
}

impl TraceHasher {
    fn word(&mut self, x: u64) {
        for b in x.to_le_bytes() {
            self.0 ^= b as u64;
            self.0 = self.0.wrapping_mul(0x0100_0000_01b3);
        }
    }

    pub fn eat(&mut self, r: &Record) {
        self.word(r.ts_ns);
        self.word(((r.cpu as u64) << 32) | r.pid as u64);
        self.word(((r.flags as u64) << 8) | r.preempt_count as u64);
        // The event's Debug form is stable and covers every field.
        for b in format!("{:?}", r.event).bytes() {
            self.word(b as u64);
        }
    }

    pub fn finish(&self) -> u64 {
        self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_machine_file_is_read_and_its_errors_name_it() {
        let dir = std::env::temp_dir().join(format!("schedsim-machine-file-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        // A preset's text, renamed and with one cost changed, is a valid machine file.
        let text = hw::preset_text("smp-4").unwrap().replace("name = \"smp-4\"", "name = \"my-4\"");
        let good = dir.join("my-4.toml");
        std::fs::write(&good, &text).unwrap();
        let m = machine(good.to_str().unwrap()).unwrap();
        assert_eq!(m.name, "my-4");
        assert_eq!(m.topo.nr_cpus, machine("smp-4").unwrap().topo.nr_cpus);
        // A bad value: the error names the file and the line.
        let bad = dir.join("bad.toml");
        std::fs::write(&bad, text.replace("hz = 250", "hz = 123")).unwrap();
        let e = machine(bad.to_str().unwrap()).unwrap_err();
        let line = text.lines().position(|l| l.starts_with("hz = ")).unwrap() + 1;
        assert!(e.starts_with(&format!("{}:{line}: hz = 123", bad.display())), "{e}");
        // A missing file, and a name that is neither a preset nor a .toml path.
        let e = machine(dir.join("none.toml").to_str().unwrap()).unwrap_err();
        assert!(e.starts_with("cannot read machine file"), "{e}");
        assert!(machine("smp-5").unwrap_err().contains("known presets: epyc-7763-2s"));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn disabling_a_state_under_the_haltpoll_governor_gets_a_note() {
        let mut s = RunSpec::new("idle");
        s.machine = "icx-vm-32".into();
        assert!(spec_notes(&s).is_empty());
        s.idle_states = vec![("haltpoll".into(), false)];
        let n = spec_notes(&s);
        assert_eq!(n.len(), 1);
        assert!(n[0].contains("disabling haltpoll changes nothing"), "{}", n[0]);
        // The menu governor honours the flag: no note.
        s.machine = "smp-4".into();
        s.idle_states = vec![("C2".into(), false)];
        assert!(spec_notes(&s).is_empty());
    }
}
