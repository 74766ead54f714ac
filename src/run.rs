//! One simulation run: resolve the inputs, build the machine, run it, collect the results.

use crate::background::daemon::{self, Daemons};
use crate::hw;
use crate::input::read_input_file;
use crate::linux::engine::Next;
use crate::linux::programs::{Programs, TaskFrame};
use crate::linux::stats::Stats;
use crate::linux::{CpuId, Kernel, KernelConfig};
use crate::sim::Time;
use crate::spec::RunSpec;
use crate::trace::{ftrace, Record};
use crate::workload::{RunFacts, Workload, FINISH};
use crate::world::World;

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
    // The names the hardware layer keeps as text, checked here with the file's line (a
    // top-level key: the machine's tables refuse keys of these names).
    let line = |key: &str| {
        text.lines()
            .position(|l| l.trim_start().strip_prefix(key).is_some_and(|r| r.trim_start().starts_with('=')))
            .map_or(1, |i| i + 1)
    };
    crate::spec::known_preempt(&m.preempt).map_err(|e| format!("{name}:{}: preempt: {e}", line("preempt")))?;
    crate::spec::known_background(&m.background)
        .map_err(|e| format!("{name}:{}: background: {e}", line("background")))?;
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
        if let Ok(w) = crate::workload::rtapp::RtApp::from_file(f, &m) {
            notes.extend(w.inert_keys().into_iter().map(|n| format!("{f}: {n}")));
        }
    }
    if !spec.unknowns.is_empty() {
        if let Ok(bg) = background(spec.background.as_deref().unwrap_or(&m.background)) {
            if let Ok((_, applied)) = crate::unknowns::resolve(&spec.unknowns, &m, &bg) {
                notes.extend(
                    applied
                        .iter()
                        .filter(|a| !a.active)
                        .map(|a| format!("unknown {}={}: {}", a.name, a.value, a.effect)),
                );
            }
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

/// Build the world of a spec (validating every input): the booted kernel with its background
/// sources and its programs started, ready to run.
pub fn build(spec: &RunSpec) -> Result<RunWorld, String> {
    build_with(spec, |_, _| Ok(()))
}

/// [`build`], with `set` editing the machine and the kernel configuration once they are
/// resolved, after the spec's own named unknowns (`crate::unknowns::apply`; `set` is where a
/// caller puts in a set-up of its own through the mechanisms' APIs). What they leave is checked
/// as the rest is: background sources bound to CPUs the machine lacks, and a `StartState` a
/// machine cannot be in (`StartState::validate`), are errors.
pub fn build_with(
    spec: &RunSpec,
    set: impl FnOnce(&mut hw::Machine, &mut KernelConfig) -> Result<(), String>,
) -> Result<RunWorld, String> {
    build_applied(spec, set).map(|(w, _)| w)
}

/// [`build_with`], also returning what each of the spec's unknowns did.
fn build_applied(
    spec: &RunSpec,
    set: impl FnOnce(&mut hw::Machine, &mut KernelConfig) -> Result<(), String>,
) -> Result<(RunWorld, Vec<crate::unknowns::Applied>), String> {
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
    if spec.limit_ns == 0 || spec.limit_ns > crate::limits::MAX_SIM_NS {
        return Err(format!(
            "time limit {} ns is out of range (1 ns ..= {} ns, one hour of simulated time)",
            spec.limit_ns,
            crate::limits::MAX_SIM_NS
        ));
    }
    if let Some(hz) = spec.hz {
        crate::limits::check_hz(hz, "--hz")?;
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
    let applied = crate::unknowns::apply(&spec.unknowns, &mut m, &mut cfg)?;
    set(&mut m, &mut cfg)?;
    if !cfg.start.is_empty() {
        let sd = crate::linux::kernel::sched::topology::build_sched_domains(&m.topo);
        cfg.start.validate(&m.topo, &sd)?;
    }
    for s in &cfg.background.sources {
        if let crate::linux::background::Cpus::One(c) = s.cpus {
            if c >= m.topo.nr_cpus {
                return Err(format!(
                    "background '{}': source {} is bound to CPU {c}, but machine {} has {} CPUs",
                    cfg.background.name, s.name, m.name, m.topo.nr_cpus
                ));
            }
        }
    }
    let nr = m.topo.nr_cpus;
    let wl = Workload::parse(&spec.workload, &spec.params, &m)?;
    let (tasks, mut wl_bytes, flags) = wl.planned_size(nr);
    if let Workload::RtApp(r) = &wl {
        // rt-app's log rows grow with simulated time, not with the task count.
        wl_bytes = wl_bytes.saturating_add(r.log_bytes_bound(spec.limit_ns, nr));
    }
    crate::limits::check_memory(u64::from(nr), tasks, wl_bytes, flags)?;
    // With background activity, the machine runs it alone for `WARMUP_NS` before the workload
    // starts, so that the state it leaves behind (`rd->overloaded`, `avg_idle`, balance
    // intervals, the nohz masks) is a running machine's, not a freshly booted one's; the
    // measured window opens then. Without background (or without a workload), at once.
    let warmup = if cfg.background.sources.is_empty() || matches!(wl, Workload::Idle(_)) {
        0
    } else {
        crate::background::WARMUP_NS
    };
    let mut k = Kernel::new(m, cfg, spec.seed);
    k.measure_from = warmup;
    if warmup == 0 {
        // No warm-up: the measured window opens at boot.
        crate::linux::unknowns::open_window(&mut k);
    }
    crate::linux::background::boot(&mut k);
    let mut w = World::new(k, Userland { workload: wl, daemons: Daemons, finished: false });
    w.start();
    w.k.trace.enabled = spec.trace;
    if let Some(p) = &spec.replay {
        w.replay(p)?;
    }
    if spec.check {
        w.k.enable_checks();
    }
    Ok((w, applied))
}

/// The programs of a run: its workload and the daemons of its background profile. A task's
/// frame says which one it belongs to ([`TaskFrame::prog`]: 0 the workload's,
/// [`daemon::PROG`] a daemon's).
#[derive(Debug, Clone)]
pub struct Userland {
    pub workload: Workload,
    pub daemons: Daemons,
    /// The workload has ended the run (its [`FINISH`] action, or a step that ended it).
    pub finished: bool,
}

impl Programs for Userland {
    fn start(&mut self, k: &mut Kernel) {
        self.daemons.start(k);
        self.workload.start(k);
    }

    fn on_action(&mut self, k: &mut Kernel, what: u32) {
        if what == FINISH {
            self.finished = true;
            return;
        }
        self.workload.on_action(k, what);
    }

    #[inline]
    fn task_step(&mut self, k: &mut Kernel, cpu: CpuId, s: &mut TaskFrame) -> Next {
        if s.prog == daemon::PROG {
            return self.daemons.task_step(k, cpu, s);
        }
        self.workload.task_step(k, cpu, s, &mut self.finished)
    }

    #[inline]
    fn finished(&self) -> bool {
        self.finished
    }
}

/// A run's world: the kernel and its programs.
pub type RunWorld = World<Userland>;

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
    /// What each of the spec's named unknowns did (empty: none set).
    pub unknowns: Vec<crate::unknowns::Applied>,
    /// The load-balancing counters of `/proc/schedstat` for the CPUs of interest.
    pub schedstat: Schedstat,
}

/// How many of the busiest CPUs a run's report shows (phases, `/proc/schedstat`).
pub const BUSIEST_SHOWN: usize = 4;

/// The busiest CPUs of a run, busiest first: by time out of idle (every phase but the idle
/// state and the idle loop), ties by CPU id; CPUs with no such time are left out, whatever
/// their IRQ-off time (an idle CPU in MWAIT or HLT has IRQs off the whole time it sleeps).
pub fn busiest_cpus(st: &Stats, n: usize) -> Vec<CpuId> {
    use crate::linux::engine::Phase;
    let busy_ns = |c: usize| -> u64 {
        Phase::ALL
            .iter()
            .filter(|p| !matches!(p, Phase::IdleState | Phase::IdleLoop))
            .map(|p| st.phase_ns[c][*p as usize])
            .sum()
    };
    let mut busy: Vec<(usize, u64)> =
        (0..st.irqs_off_ns.len()).map(|c| (c, busy_ns(c))).filter(|&(_, b)| b > 0).collect();
    busy.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    busy.into_iter().take(n).map(|(c, _)| c as CpuId).collect()
}

/// One domain's lines of `/proc/schedstat` as numbers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DomainSchedstat {
    pub level: usize,
    /// Its topology level's name (SMT, MC, PKG, NUMA, ...).
    pub name: &'static str,
    /// The CPUs it spans, as a CPU list.
    pub span: String,
    /// The counters per `enum cpu_idle_type`, indexed as `stats::idx()` does.
    pub lb: crate::linux::kernel::sched::stats::DomainLbCounters,
}

/// The load-balancing counters of `/proc/schedstat` (v16, as v6.10 prints them) for some CPUs:
/// the kernel's text and the numbers, over the measured window.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Schedstat {
    pub cpus: Vec<CpuId>,
    /// `show_schedstat()`'s text for them.
    pub text: String,
    /// Per CPU (in `cpus` order), its domains bottom-up.
    pub domains: Vec<Vec<DomainSchedstat>>,
}

impl Schedstat {
    fn of(k: &Kernel, cpus: &[CpuId]) -> Schedstat {
        use crate::linux::kernel::sched::stats::{show_schedstat, SchedstatVersion};
        let domains = cpus
            .iter()
            .map(|&c| {
                k.sd.domains(c)
                    .iter()
                    .enumerate()
                    .map(|(level, d)| DomainSchedstat { level, name: d.name, span: d.span.to_string(), lb: d.lb })
                    .collect()
            })
            .collect();
        Schedstat { cpus: cpus.to_vec(), text: show_schedstat(k, cpus, SchedstatVersion::V16), domains }
    }
}

impl RunResult {
    /// What the workload's report needs of the run.
    pub fn facts(&self) -> RunFacts<'_> {
        RunFacts {
            stats: &self.stats,
            sim_ns: self.sim_ns,
            warmup_ns: self.warmup_ns,
            nr_cpus: self.nr_cpus,
            task_clock_ns: self.task_clock_ns,
            finished: self.finished,
        }
    }
}

/// Run a spec to completion.
pub fn execute(spec: &RunSpec) -> Result<RunResult, String> {
    let (mut w, applied) = build_applied(spec, |_, _| Ok(()))?;
    let line = reproduce_line(spec, &w);
    crate::crash::run_guarded(&mut w, spec.limit_ns, line);
    Ok(collect(w, spec, applied))
}

/// The `# schedsim run ...` line of a built run, as `schedsim run` prints it at the top of its
/// output, for the panic report (`crash::run_guarded`). (The run's own header and this line
/// are the same text; when `RunSpec` gets its printer they should both come from it.)
/// The run's reproduce line for the panic report: the spec's own command line
/// ([`RunSpec::command_line`]) with the background and preemption model in force written out,
/// as `output::run_header` prints it.
fn reproduce_line(s: &RunSpec, k: &RunWorld) -> String {
    let background = s.background.clone().unwrap_or_else(|| k.cfg.background.name.clone());
    let shown = RunSpec { background: Some(background), preempt: Some(k.cfg.preempt.name()), ..s.clone() };
    format!("# {}", shown.command_line())
}

fn collect(w: RunWorld, spec: &RunSpec, unknowns: Vec<crate::unknowns::Applied>) -> RunResult {
    let finished = w.finished();
    let World { mut k, progs, .. } = w;
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
    let cpus = match &spec.schedstat_cpus {
        Some(c) => c.iter().copied().filter(|&c| c < k.m.topo.nr_cpus).collect(),
        None => busiest_cpus(&k.stats, BUSIEST_SHOWN),
    };
    let schedstat = Schedstat::of(&k, &cpus);
    RunResult {
        kernel_label: k.cfg.label(),
        machine: k.m.name.clone(),
        nr_cpus: k.m.topo.nr_cpus,
        seed: spec.seed,
        sim_ns: k.now - k.measure_from.min(k.now),
        warmup_ns: k.measure_from.min(k.now),
        actions: k.actions,
        stats: std::mem::take(&mut k.stats),
        workload: progs.workload,
        trace: std::mem::take(&mut k.trace.records),
        trace_masks: std::mem::take(&mut k.trace.masks),
        comms,
        finished,
        task_clock_ns,
        funcs: k.cfg.background.trace_funcs(),
        background: spec.background.clone().unwrap_or_else(|| k.cfg.background.name.clone()),
        preempt: k.cfg.preempt.name(),
        workload_pids,
        checks: k.checks.take(),
        unknowns,
        schedstat,
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
    let (mut w, applied) = build_applied(spec, |_, _| Ok(()))?;
    w.k.trace.enabled = true;
    w.k.trace.chunk = chunk;
    let mut sink = sink;
    sink.funcs(&w.k.cfg.background.trace_funcs());
    w.k.trace.sink = Some(sink);
    let line = reproduce_line(spec, &w);
    crate::crash::run_guarded(&mut w, spec.limit_ns, line);
    w.k.flush_trace();
    let sink = w.k.trace.sink.take().expect("attached above");
    let n = match w.k.trace.error.take() {
        Some(e) => {
            sink.abort();
            Err(e)
        }
        None => sink.finish(),
    };
    w.k.trace.enabled = false;
    Ok((collect(w, spec, applied), n))
}

/// Runs finished and runs queued by [`run_all`] since the program started, for the progress
/// bar (read by the command line at coarse intervals; never read by a run).
pub static RUNS_DONE: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
pub static RUNS_QUEUED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// Run many independent specs on `jobs` threads; results come back in input order. Each run
/// is single-threaded and deterministic, so the result does not depend on `jobs`.
pub fn run_all(specs: &[RunSpec], jobs: usize) -> Result<Vec<RunResult>, String> {
    run_all_map(specs, jobs, |_, r| r)
}

/// [`run_all`], each result turned into what the caller keeps by `f(index, result)` as soon
/// as its run ends (so many runs need not all be held at once).
pub fn run_all_map<T: Send>(
    specs: &[RunSpec],
    jobs: usize,
    f: impl Fn(usize, RunResult) -> T + Sync,
) -> Result<Vec<T>, String> {
    let jobs = jobs.max(1).min(specs.len().max(1));
    let next = std::sync::atomic::AtomicUsize::new(0);
    let mut out: Vec<Option<Result<T, String>>> = (0..specs.len()).map(|_| None).collect();
    let slots = std::sync::Mutex::new(&mut out);
    RUNS_QUEUED.fetch_add(specs.len(), std::sync::atomic::Ordering::Relaxed);
    std::thread::scope(|sc| {
        for _ in 0..jobs {
            sc.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                if i >= specs.len() {
                    break;
                }
                let r = execute(&specs[i]).map(|r| f(i, r));
                slots.lock().expect("no panics hold the lock")[i] = Some(r);
                RUNS_DONE.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            });
        }
    });
    out.into_iter().map(|r| r.expect("every spec ran")).collect()
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
