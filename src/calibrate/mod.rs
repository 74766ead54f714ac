//! Calibration: this host's path costs measured from pairs of tracepoints, written into its
//! machine file (`schedsim machine --from-host --calibrate`).
//!
//! `cli::calibrate` runs the fixed calibration set ([`CAPTURES`]) under tracefs and saves
//! everything in a [`bundle::Bundle`]; this module turns a bundle into the machine file, its
//! background profile and a summary, with no I/O:
//!
//! 1. [`paths::collect`]: each capture's ftrace text -> samples per path (the time between the
//!    pair's records and the records written inside);
//! 2. [`solve::solve`]: the pooled samples -> the tracing overhead per record (the null pair),
//!    then each model cost from its path, minus what earlier steps solved;
//! 3. [`background::analyze`]: the idle capture -> the host's background profile;
//! 4. [`machine_text`]: `machine --from-host`'s file with the measured hardware costs put in
//!    place, `[path_costs]` appended (the format `hw` reads: `ns`, `clock_mhz`, `spread_ns`,
//!    `samples`, `method`) and comment lines saying what was measured, how, on which clock, and
//!    which programs the solve read (`# calibrated-program: NAME`), which `validate` uses to
//!    tell calibrated figures from predicted ones.
//!
//! docs/costs.md ("Calibration") gives the method in full.

pub mod background;
pub mod bundle;
pub mod paths;
pub mod solve;

use bundle::Bundle;
use paths::{CaptureResult, Path};
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// One program of the calibration set.
#[derive(Debug, Clone, Copy)]
pub struct CaptureSpec {
    pub name: &'static str,
    /// What it runs: a `host-run` program with its parameters, `syscall` (a getppid() loop in a
    /// child of the calibrating process), `sock` (a child writing [`SOCK_MSG_BYTES`] to an
    /// AF_UNIX stream socketpair and reading them back, pinned to `cpu=`) or `idle` (nothing,
    /// for [`IDLE_SECONDS`]).
    pub program: &'static str,
    pub params: &'static [&'static str],
    /// A busy loop pinned to this CPU runs alongside (it makes the IPIs' targets busy).
    pub spinner_cpu: Option<u32>,
    /// The program (with every process it forks) is bound to this CPU. The nanosleep loops
    /// are, to CPU 0: a guest CPU whose idle task logs no `cpu_idle` record (CPU 1 of this
    /// project's guest) cannot tell its halts from its running, so timer wakes there give no
    /// sample.
    pub cpu: Option<u32>,
    /// What its pairs measure.
    pub why: &'static str,
    /// A long-halt capture: its halted timer wakes give the halting idle state's
    /// `halt_wake_extra_ns` curve and nothing else (its samples stay out of the pooled paths,
    /// so every other cost is solved from the short-halt set as before).
    pub long_halt: bool,
}

/// The message of the socket capture (`sock-1cpu`): `perf bench sched messaging`'s default
/// 100 bytes, one skb each way.
pub const SOCK_MSG_BYTES: u32 = 100;

/// Length of the idle capture (the background profile).
pub const IDLE_SECONDS: u64 = 20;

/// The calibration set, in the order it runs.
pub const CAPTURES: &[CaptureSpec] = &[
    CaptureSpec {
        name: "syscall",
        program: "syscall",
        params: &["loops=20000"],
        spinner_cpu: None,
        cpu: None,
        why: "a getppid() loop: one system call",
        long_halt: false,
    },
    CaptureSpec {
        name: "pipe-1cpu",
        program: "pingpong",
        params: &["iters=20000", "ping_cpu=0", "pong_cpu=0"],
        spinner_cpu: None,
        cpu: None,
        why: "a pipe ping-pong on one CPU: wakeups and switches without IPIs, the null pair",
        long_halt: false,
    },
    CaptureSpec {
        name: "sock-1cpu",
        program: "sock",
        params: &["loops=20000", "cpu=0"],
        spinner_cpu: None,
        cpu: None,
        why: "one task on CPU 0 writing 100 bytes to an AF_UNIX stream socketpair and reading them back: the socket's send and receive paths",
        long_halt: false,
    },
    CaptureSpec {
        name: "pipe-2cpu",
        program: "pingpong",
        params: &["iters=3000", "ping_cpu=0", "pong_cpu=1"],
        spinner_cpu: None,
        cpu: None,
        why: "a pipe ping-pong across CPUs: wakelist IPIs to halted CPUs, the csd, idle entry and exit",
        long_halt: false,
    },
    CaptureSpec {
        name: "pipe-2cpu-busy",
        program: "pingpong",
        params: &["iters=3000", "ping_cpu=0", "pong_cpu=1"],
        spinner_cpu: Some(1),
        cpu: None,
        why: "the same with a busy loop on CPU 1: reschedule IPIs to a running CPU",
        long_halt: false,
    },
    CaptureSpec {
        name: "pipe-2cpu-sleep",
        program: "pingpong",
        params: &["iters=400", "ping_cpu=0", "pong_cpu=1", "sleep_us=200"],
        spinner_cpu: None,
        cpu: None,
        why: "the same with 200 us sleeps: hrtimer wakeups, the tick stopped and restarted",
        long_halt: false,
    },
    CaptureSpec {
        name: "nanosleep",
        program: "nanosleep",
        params: &["procs=1", "ns=1000", "duration_ms=400"],
        spinner_cpu: None,
        cpu: Some(0),
        why: "a nanosleep(1 us) loop on CPU 0: hrtimer arming and expiry, the local timer, short timer wakes of a halted vCPU",
        long_halt: false,
    },
    CaptureSpec {
        name: "halt-500us",
        program: "nanosleep",
        params: &["procs=1", "ns=500000", "duration_ms=500"],
        spinner_cpu: None,
        cpu: Some(0),
        why: "a nanosleep(0.5 ms) loop on CPU 0: timer wakes of a vCPU halted 0.5 ms",
        long_halt: true,
    },
    CaptureSpec {
        name: "halt-2ms",
        program: "nanosleep",
        params: &["procs=1", "ns=2000000", "duration_ms=800"],
        spinner_cpu: None,
        cpu: Some(0),
        why: "a nanosleep(2 ms) loop on CPU 0: timer wakes of a vCPU halted 2 ms",
        long_halt: true,
    },
    CaptureSpec {
        name: "halt-5ms",
        program: "nanosleep",
        params: &["procs=1", "ns=5000000", "duration_ms=1200"],
        spinner_cpu: None,
        cpu: Some(0),
        why: "a nanosleep(5 ms) loop on CPU 0: timer wakes of a vCPU halted 5 ms",
        long_halt: true,
    },
    CaptureSpec {
        name: "halt-20ms",
        program: "nanosleep",
        params: &["procs=1", "ns=20000000", "duration_ms=2000"],
        spinner_cpu: None,
        cpu: Some(0),
        why: "a nanosleep(20 ms) loop on CPU 0: timer wakes of a vCPU halted 20 ms",
        long_halt: true,
    },
    CaptureSpec {
        name: "halt-50ms",
        program: "nanosleep",
        params: &["procs=1", "ns=50000000", "duration_ms=3000"],
        spinner_cpu: None,
        cpu: Some(0),
        why: "a nanosleep(50 ms) loop on CPU 0: timer wakes of a vCPU halted 50 ms",
        long_halt: true,
    },
    CaptureSpec {
        name: "idle",
        program: "idle",
        params: &[],
        spinner_cpu: None,
        cpu: None,
        why: "the machine left idle: its background",
        long_halt: false,
    },
];

/// The trace events of the program captures.
pub const EVENTS: &[&str] = &[
    "sched:sched_switch",
    "sched:sched_waking",
    "sched:sched_wakeup",
    "sched:sched_wakeup_new",
    "sched:sched_process_fork",
    "sched:sched_process_exit",
    "ipi:ipi_send_cpu",
    "csd:csd_function_entry",
    "csd:csd_function_exit",
    "irq:softirq_raise",
    "irq:softirq_entry",
    "irq:softirq_exit",
    "power:cpu_idle",
    "irq_vectors:reschedule_entry",
    "irq_vectors:reschedule_exit",
    "irq_vectors:call_function_single_entry",
    "irq_vectors:call_function_single_exit",
    "irq_vectors:local_timer_entry",
    "irq_vectors:local_timer_exit",
    "timer:hrtimer_start",
    "timer:hrtimer_expire_entry",
    "timer:hrtimer_expire_exit",
    "timer:tick_stop",
    "msr:write_msr",
    "raw_syscalls:sys_enter",
    "raw_syscalls:sys_exit",
];

/// The trace events of the idle capture.
pub const IDLE_EVENTS: &[&str] = &[
    "sched:sched_switch",
    "sched:sched_wakeup",
    "sched:sched_wakeup_new",
    "sched:sched_process_fork",
    "sched:sched_process_exec",
    "sched:sched_process_exit",
    "workqueue:workqueue_queue_work",
    "workqueue:workqueue_execute_start",
    "workqueue:workqueue_execute_end",
    "timer:timer_start",
    "timer:timer_expire_entry",
    "timer:timer_expire_exit",
    "timer:hrtimer_expire_entry",
    "timer:hrtimer_expire_exit",
    "irq:softirq_raise",
    "irq:softirq_entry",
    "irq:softirq_exit",
    "power:cpu_idle",
];

/// `validate` programs whose paths are all among the calibration set's (perf bench sched
/// pipe is the cross-CPU pipe ping-pong without pinning): their figures count as calibrated.
pub const COVERED: &[&str] = &["perf-pipe"];

/// Comment prefixes of the machine file that list the calibration's programs.
pub const CALIBRATED_PREFIX: &str = "# calibrated-program: ";
pub const COVERED_PREFIX: &str = "# calibration-covers: ";

/// The programs a machine file says were calibrated on (the solve read them) or are covered by
/// them. Empty for a file that was not calibrated.
pub fn calibrated_programs(machine_text: &str) -> Vec<String> {
    let mut v: Vec<String> = machine_text
        .lines()
        .filter_map(|l| l.strip_prefix(CALIBRATED_PREFIX).or_else(|| l.strip_prefix(COVERED_PREFIX)))
        .map(|s| s.trim().to_string())
        .collect();
    v.sort();
    v.dedup();
    v
}

/// What the analysis of a bundle gives.
#[derive(Debug, Clone, Default)]
pub struct Output {
    pub machine: String,
    /// The background profile's text (None: no quiet idle capture; the machine file keeps
    /// `machine --from-host`'s background and says so).
    pub profile: Option<String>,
    pub summary: String,
    pub solution: solve::Solution,
    pub background: background::Background,
    /// Per capture: its name and what its pass found.
    pub captures: Vec<(String, CaptureResult)>,
}

/// Turn a bundle into the machine file (naming its background `profile_file`, a path relative
/// to the machine file's directory), the profile and a summary.
pub fn analyze(b: &Bundle, profile_file: &str) -> Result<Output, String> {
    let host = crate::hw::machine_from_toml(&b.host, "the bundle's host machine file")?;
    let tsc = (b.meta.clock == "x86-tsc").then_some(b.meta.tsc_khz);
    if tsc == Some(0) {
        return Err("the bundle's clock is x86-tsc but its tsc_khz is 0".into());
    }
    let mut pooled: BTreeMap<Path, Vec<paths::Sample>> = BTreeMap::new();
    let mut out = Output::default();
    // The halted timer wakes, [halt_ns, late_ns]: of the short-halt set and of the long-halt
    // captures.
    let (mut base_halts, mut long_halts): (Vec<[u64; 2]>, Vec<[u64; 2]>) = (Vec::new(), Vec::new());
    // The guest's path after them (tick stopped), likewise.
    let (mut base_paths, mut long_paths): (Vec<[u64; 2]>, Vec<[u64; 2]>) = (Vec::new(), Vec::new());
    for c in &b.meta.captures {
        if c.name == "idle" {
            continue;
        }
        let text = b.capture(&c.name).unwrap_or("");
        let mut r = paths::collect(text, &c.roots, tsc);
        if CAPTURES.iter().any(|s| s.name == c.name && s.program == "sock") {
            r.relabel_as_socket();
        }
        if CAPTURES.iter().any(|s| s.name == c.name && s.long_halt) {
            long_halts.extend_from_slice(&r.halted_timer);
            long_paths.extend_from_slice(&r.halted_switch);
        } else {
            base_halts.extend_from_slice(&r.halted_timer);
            base_paths.extend_from_slice(&r.halted_switch);
            for (p, v) in &r.samples {
                pooled.entry(*p).or_default().extend_from_slice(v);
            }
        }
        out.captures.push((c.name.clone(), r));
    }
    let clock_mhz = if top_level_clock(&b.host).is_some() { host.clock_mhz } else { b.meta.clock_mhz as u32 };
    // The ping-pongs run on CPUs 0 and 1: the line between them.
    let line_key = if host.topo.smt_mask(0).iter().any(|c| c == 1) {
        "line_smt_ns"
    } else if host.topo.llc_mask(0).iter().any(|c| c == 1) {
        "line_llc_ns"
    } else {
        "line_socket_ns"
    };
    let ctx = solve::Context {
        nr_cpus: host.topo.nr_cpus as u64,
        irq_entry_ns: host.costs.irq_entry_ns,
        clock_mhz,
        line_key,
        sock_msg_bytes: SOCK_MSG_BYTES,
    };
    out.solution = solve::solve(&pooled, ctx);
    if out.solution.hw.iter().any(|h| h.key == "timer_wake_ns") {
        // The curve's zero is timer_wake_ns's samples: without those it has nothing to add to.
        out.solution.halt_curve = solve::halt_curve(&base_halts, &long_halts);
        out.solution.refill_curve = solve::halt_curve(&base_paths, &long_paths);
    }
    if let Some(text) = b.capture("idle") {
        // The loaded captures' ticks: every program capture but the long halts (mostly idle).
        let mut loaded = background::TickShares::default();
        for c in &b.meta.captures {
            if c.name != "idle" && !CAPTURES.iter().any(|s| s.name == c.name && s.long_halt) {
                loaded.add(&c.name, b.capture(&c.name).unwrap_or(""), tsc);
            }
        }
        out.background = background::analyze(text, tsc, host.hz as u64, &["schedsim", "sleep"], &loaded);
        let profile = background::profile_text(
            &out.background,
            &format!("{}-background", host.name),
            &format!(
                "schedsim machine --from-host --calibrate: {}.{:03} s idle capture, trace clock {}, Linux {}",
                out.background.seconds_milli / 1000,
                out.background.seconds_milli % 1000,
                b.meta.clock,
                b.meta.kernel
            ),
        );
        crate::background::parse(&profile, profile_file)
            .map_err(|e| format!("the measured background profile does not read back: {e}"))?;
        out.profile = Some(profile);
    }
    let measured_bg = out.profile.as_ref().map(|_| (&out.background, profile_file));
    out.machine = machine_text(b, &out.solution, measured_bg)?;
    out.summary = summary(b, &out);
    Ok(out)
}

/// `clock_mhz` of a machine file's text, if it has one at the top level.
fn top_level_clock(text: &str) -> Option<u64> {
    for l in text.lines() {
        if l.trim_start().starts_with('[') {
            return None;
        }
        if let Some(v) = l.strip_prefix("clock_mhz") {
            let v = v.trim_start().strip_prefix('=')?.split('#').next()?.trim().replace('_', "");
            return v.parse().ok();
        }
    }
    None
}

fn kv(key: &str, value: &str, comment: &str) -> String {
    format!("{:<37} # {comment}\n", format!("{key} = {value}"))
}

/// The machine file: the host's, with the measured costs in place and `[path_costs]` added.
pub fn machine_text(
    b: &Bundle,
    sol: &solve::Solution,
    bg: Option<(&background::Background, &str)>,
) -> Result<String, String> {
    let m = &b.meta;
    let clock = top_level_clock(&b.host).unwrap_or(m.clock_mhz);
    let hw = |k: &str| sol.hw.iter().find(|h| h.key == k);
    let mut t = String::new();
    let _ = writeln!(t, "# Calibrated on this host by `schedsim machine --from-host --calibrate` (src/calibrate/;");
    let _ = writeln!(t, "# the method: docs/costs.md, \"Calibration\"). Measured here: the software path costs in");
    let _ = writeln!(t, "# [path_costs] (end of file), the IPI send and delivery and the line transfer between the");
    let _ = writeln!(
        t,
        "# ping-pongs' CPUs in [costs]{}, the halted-CPU wake of the HLT idle state{}, and {}.",
        if hw("timer_late_running_ns").is_some() { ", the timer's lateness on a running CPU" } else { "" },
        if sol.halt_curve.is_some() || sol.refill_curve.is_some() { " (and how it grows with the halt)" } else { "" },
        match bg {
            Some((_, f)) => format!("the background profile {f}"),
            None => "not the background (no idle capture was quiet enough)".to_string(),
        }
    );
    let _ =
        writeln!(t, "# Everything else is what `machine --from-host` read or guessed (its comments below say which).");
    let _ = writeln!(
        t,
        "# Trace clock: {} ({}); counter rate {} kHz measured against CLOCK_MONOTONIC_RAW. {}",
        m.clock,
        if m.clock == "x86-tsc" { "raw TSC counts, ns resolution" } else { "seconds with a fraction" },
        m.tsc_khz,
        m.clock_note
    );
    let _ = writeln!(t, "# Costs are at the core clock {clock} MHz (clock_mhz). Kernel: Linux {}.", m.kernel);
    let _ = writeln!(
        t,
        "# Tracing overhead: {} ns per record, taken out of every sample: {}.",
        sol.record_ns, sol.record_method
    );
    let kept: Vec<String> = m
        .captures
        .iter()
        .map(|c| format!("{} (other tasks {}.{}%)", c.name, c.foreign_permille / 10, c.foreign_permille % 10))
        .collect();
    let _ = writeln!(t, "# Captures kept: {}.", kept.join(", "));
    let disc: Vec<String> = m
        .discarded
        .iter()
        .map(|d| format!("{} ({}.{}%)", d.name, d.foreign_permille / 10, d.foreign_permille % 10))
        .collect();
    let _ = writeln!(
        t,
        "# Captures discarded because other tasks used more than {}% of the CPUs: {}{}.",
        m.max_foreign_pct,
        m.discarded.len(),
        if disc.is_empty() { String::new() } else { format!(": {}", disc.join(", ")) }
    );
    let mut programs: Vec<&str> =
        m.captures.iter().filter_map(|c| CAPTURES.iter().find(|s| s.name == c.name)).map(|s| s.program).collect();
    // The calibrating process's own loops are not programs `validate` runs.
    programs.retain(|p| !matches!(*p, "syscall" | "sock" | "idle"));
    programs.sort();
    programs.dedup();
    for p in programs {
        let _ = writeln!(t, "{CALIBRATED_PREFIX}{p}");
    }
    for p in COVERED {
        let _ = writeln!(t, "{COVERED_PREFIX}{p}");
    }
    for n in &sol.notes {
        let _ = writeln!(t, "# note: {n}");
    }
    t.push('\n');
    let has_clock = top_level_clock(&b.host).is_some();
    let mut hlt_block = false;
    let mut section = String::new();
    for line in b.host.lines() {
        let trimmed = line.trim_start();
        if trimmed.starts_with('[') {
            section = trimmed.to_string();
            hlt_block = false;
        }
        let key = trimmed.split(['=', ' ']).next().unwrap_or("");
        if let (true, "background", Some((bg, file))) = (section.is_empty(), key, bg) {
            t.push_str(&kv(
                "background",
                &background::toml_string(file),
                &format!(
                    "measured here: {} sources from a {}.{:03} s idle capture",
                    bg.sources.len(),
                    bg.seconds_milli / 1000,
                    bg.seconds_milli % 1000
                ),
            ));
            continue;
        }
        if section == "[costs]" && key.starts_with("line_") {
            if let Some(h) = sol.hw.iter().find(|h| h.key == key) {
                t.push_str(&kv(
                    key,
                    &format!("[{}, {}]", h.lo, h.hi),
                    &format!("measured ({} samples): {}", h.samples, h.method),
                ));
                continue;
            }
        }
        if section == "[costs]" && key == "ipi_send_ns" {
            if let Some(h) = hw("ipi_send_ns") {
                t.push_str(&kv(
                    "ipi_send_ns",
                    &h.median.to_string(),
                    &format!("measured ({} samples): {}", h.samples, h.method),
                ));
                continue;
            }
        }
        if section == "[costs]" && key == "timer_late_running_ns" && hw("timer_late_running_ns").is_some() {
            // Replaced by the measured one, written after irq_exit_ns.
            continue;
        }
        if section == "[costs]" && key == "ipi_delivery_ns" {
            if let Some(h) = hw("ipi_delivery_ns") {
                t.push_str(&kv(
                    "ipi_delivery_ns",
                    &format!("[{}, {}]", h.lo, h.hi),
                    &format!("measured ({} samples): {}", h.samples, h.method),
                ));
                continue;
            }
        }
        if section == "[costs]" && key == "irq_exit_ns" {
            if let Some(h) = hw("timer_late_running_ns") {
                t.push_str(line);
                t.push('\n');
                t.push_str(&kv(
                    "timer_late_running_ns",
                    &format!("[{}, {}]", h.lo, h.hi),
                    &format!("measured ({} samples): {}", h.samples, h.method),
                ));
                continue;
            }
        }
        if section == "[[idle_state]]" && key == "kind" && trimmed.contains("\"hlt\"") {
            hlt_block = true;
        }
        if section == "[[idle_state]]" && hlt_block && key == "timer_wake_ns" && hw("timer_wake_ns").is_some() {
            // Replaced by the measured one, written after wake_ns.
            continue;
        }
        if section == "[[idle_state]]" && hlt_block && key == "wake_ns" {
            if let Some(h) = hw("timer_wake_ns") {
                t.push_str(&kv(
                    "timer_wake_ns",
                    &format!("[{}, {}]", h.lo, h.hi),
                    &format!("measured ({} samples): {}", h.samples, h.method),
                ));
            }
            if let Some(c) = &sol.halt_curve {
                t.push_str(&halt_curve_text(c, "halt_wake_extra_ns", HALT_WAKE_WHAT));
            }
            if let Some(c) = &sol.refill_curve {
                t.push_str(&halt_curve_text(c, "halt_refill_extra_ns", HALT_REFILL_WHAT));
            }
            if let Some(h) = hw("wake_ns") {
                t.push_str(&kv(
                    "wake_ns",
                    &format!("[{}, {}]", h.lo, h.hi),
                    &format!("measured ({} samples): {}", h.samples, h.method),
                ));
                continue;
            }
        }
        t.push_str(line);
        t.push('\n');
        if section.is_empty() && key == "hz" && !has_clock {
            t.push_str(&kv(
                "clock_mhz",
                &clock.to_string(),
                "the core clock: the TSC rate measured against CLOCK_MONOTONIC_RAW (constant TSC)",
            ));
        }
    }
    let _ = writeln!(t, "\n# Software path costs measured on this host: src/linux/cost.rs's fields. Each value is the");
    let _ = writeln!(t, "# solve's result at clock_mhz; spread_ns is the p10..p90 of the path's samples through the");
    let _ = writeln!(t, "# same solve, samples their count; a field no path measures is its default x k (method).");
    for c in &sol.costs {
        let _ = writeln!(t, "\n[path_costs.{}]", c.name);
        let _ = writeln!(t, "ns = {}", c.ns);
        let _ = writeln!(t, "clock_mhz = {clock}");
        if let Some([lo, hi]) = c.spread {
            let _ = writeln!(t, "spread_ns = [{}, {}]", lo.min(c.ns), hi.max(c.ns));
        }
        if c.samples > 0 {
            let _ = writeln!(t, "samples = {}", c.samples);
        }
        let _ = writeln!(
            t,
            "method = {}",
            background::toml_string(&format!("{} (model default {} ns)", c.method, c.default_ns))
        );
    }
    // The file must be TOML whatever the reader of [path_costs] makes of it.
    t.parse::<toml::Table>().map_err(|e| format!("the calibrated machine file is not TOML: {e}"))?;
    Ok(t)
}

/// What `halt_wake_extra_ns`'s figure is, for its comment.
const HALT_WAKE_WHAT: &str = "the timer's lateness (hrtimer expiry -> its interrupt's now, CLOCK_MONOTONIC, as timer_wake_ns), the halt from cpu_idle entry to the expiry (trace clock): what the host's side of a long halt (its deeper idle, the blocked vCPU thread's wakeup and VM entry) adds to the wake";
/// What `halt_refill_extra_ns`'s figure is, for its comment.
const HALT_REFILL_WHAT: &str = "the guest's path local_timer_entry -> the switch from idle to the woken task, halts that stopped the tick (the tick's restart in every sample, base and band alike): what the guest's own code pays after a long halt (caches and TLBs refilled), charged with the wake";

/// An idle state's curve line `key`, with the comment lines that say where each point comes
/// from.
fn halt_curve_text(c: &solve::HaltCurveSolved, key: &str, what: &str) -> String {
    let [n, halt, med] = c.base;
    let mut t = format!(
        "# {key}: measured ({} samples in {} bands of the long-halt captures, nanosleep loops of 0.5-50 ms): per band [median halt, median figure - {med}], {med} ns being the median figure of the {n} short halts of the calibration set (median halt {halt} ns: the first point, [{halt}, 0]); the figure: {what}\n",
        c.samples,
        c.bands.len()
    );
    for b in &c.bands {
        let hi = if b.hi_ns == u64::MAX { "up".to_string() } else { format!("{} us", b.hi_ns / 1000) };
        let _ = writeln!(
            t,
            "#   halts {} us to {hi}: {} samples, median halt {} ns, figure p25..p75 {}..{} (median {}) ns",
            b.lo_ns / 1000,
            b.samples,
            b.halt_median,
            b.late[0],
            b.late[2],
            b.late[1]
        );
    }
    let points: Vec<String> = c.points.iter().map(|[h, e]| format!("[{h}, {e}]")).collect();
    let _ = writeln!(t, "{key} = [{}]", points.join(", "));
    t
}

/// The text printed after a calibration.
pub fn summary(b: &Bundle, o: &Output) -> String {
    let sol = &o.solution;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "calibration: {} captures kept, {} discarded (other tasks over {}% of the CPUs); trace clock {} at {} kHz; {} ns per record",
        b.meta.captures.len(),
        b.meta.discarded.len(),
        b.meta.max_foreign_pct,
        b.meta.clock,
        b.meta.tsc_khz,
        sol.record_ns
    );
    for (name, r) in &o.captures {
        let _ = writeln!(
            s,
            "  {name}: {} records, other tasks {}.{}% of the CPUs{}",
            r.records,
            r.foreign_permille() / 10,
            r.foreign_permille() % 10,
            if r.lost_events { ", EVENTS LOST" } else { "" }
        );
    }
    let header: Vec<String> =
        ["cost", "model default", "this host", "p10-p90", "samples", "how"].iter().map(|x| x.to_string()).collect();
    let mut rows: Vec<Vec<String>> = sol
        .costs
        .iter()
        .map(|c| {
            vec![
                c.name.to_string(),
                c.default_ns.to_string(),
                c.ns.to_string(),
                c.spread.map_or("-".into(), |[a, b]| format!("{a}-{b}")),
                if c.samples > 0 { c.samples.to_string() } else { "-".into() },
                match c.how {
                    solve::How::Measured => "measured".into(),
                    solve::How::Composite => "share of a path".into(),
                    solve::How::Scaled => {
                        format!("default x k ({}.{:03})", sol.k_permille / 1000, sol.k_permille % 1000)
                    }
                },
            ]
        })
        .collect();
    for h in &sol.hw {
        rows.push(vec![
            format!("[costs] {}", h.key),
            "-".into(),
            if h.lo == h.hi { h.median.to_string() } else { format!("{}..{}", h.lo, h.hi) },
            "-".into(),
            h.samples.to_string(),
            "measured (hardware)".into(),
        ]);
    }
    for (key, curve) in [("halt_wake_extra_ns", &sol.halt_curve), ("halt_refill_extra_ns", &sol.refill_curve)] {
        if let (Some(c), Some(last)) = (curve, curve.as_ref().and_then(|c| c.points.last())) {
            rows.push(vec![
                format!("[idle_state] {key}"),
                "-".into(),
                format!("+{} at {} us", last[1], last[0] / 1000),
                "-".into(),
                c.samples.to_string(),
                "measured (by halt length)".into(),
            ]);
        }
    }
    s.push_str(&crate::report::render_grid(&header, &rows));
    let _ = writeln!(s, "paths (ns, tracing overhead removed):");
    for (p, m) in &sol.paths {
        if *p == Path::Gap {
            let _ = writeln!(s, "  {}: n {}, p1 {}, median {}", p.label(), m.n(), m.q(10), m.median());
            continue;
        }
        let _ = writeln!(
            s,
            "  {}: n {}, median {} (raw {}), p10-p90 {}-{}",
            p.label(),
            m.n(),
            m.median(),
            m.raw_median,
            m.q(100),
            m.q(900)
        );
    }
    match &o.profile {
        Some(_) => {
            let _ = writeln!(
                s,
                "background: {} sources from {}.{:03} s idle",
                o.background.sources.len(),
                o.background.seconds_milli / 1000,
                o.background.seconds_milli % 1000
            );
        }
        None => {
            let _ = writeln!(s, "background: not measured (no quiet idle capture); the machine file keeps its guess");
        }
    }
    for n in &sol.notes {
        let _ = writeln!(s, "note: {n}");
    }
    s
}
