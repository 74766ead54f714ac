//! `schedsim validate WORKLOAD`: run a program for real under tracefs, run the same program in
//! the model on this host's machine file, and print one side-by-side table of the figures
//! [`crate::validate`] computes from both traces. Needs root and tracefs (exit code 2
//! otherwise); tracefs settings are restored afterwards, whatever happens.

use crate::run;
use crate::spec::RunSpec;
use crate::trace::sink::partials;
use crate::validate::{self, Counts, Figures};
use crate::workload::hackbench::{HackbenchOpts, Tool};
use crate::workload::params::Params;
use crate::workload::Workload;
use serde_json::json;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// `schedsim validate`.
#[derive(clap::Args, Debug)]
pub struct ValidateArgs {
    /// The program: pingpong, perf-pipe, messaging, nanosleep, netperf, tbench or rtapp
    /// (file=PATH.json, run with Debian's rt-app).
    pub workload: String,
    /// Its parameters, key=value as for `schedsim run` (messaging: perf's options after --;
    /// netperf and tbench: their command lines after --, as `schedsim run` takes them).
    pub params: Vec<String>,
    /// Real runs (their spread is reported).
    #[arg(long, default_value_t = 3)]
    pub repeat: usize,
    /// Model runs (seeds 1..=N).
    #[arg(long, default_value_t = 3)]
    pub seeds: usize,
    /// Machine file for the model (default: read from this host, as `machine --from-host`).
    #[arg(long)]
    pub machine: Option<String>,
    /// Kernel for the model (default: the newest named kernel).
    #[arg(long)]
    pub kernel: Option<String>,
    /// Background activity for the model: a profile name, `none`, or a profile file (default:
    /// the machine file's).
    #[arg(long)]
    pub background: Option<String>,
    /// Keep only real runs in which other tasks used at most this share of the CPUs (percent),
    /// retrying up to 4 x --repeat times; the discarded runs are counted in a note. A shared
    /// machine's other work changes which wakeups need an IPI and whether CPUs idle at all.
    #[arg(long, value_name = "PCT")]
    pub max_foreign: Option<f64>,
    /// Run schedsim's own perf-bench programs (`host-run`) instead of /usr/bin/perf.
    #[arg(long)]
    pub builtin: bool,
    /// A ratio within this many percent of 1 counts as a match.
    #[arg(long, default_value_t = 15.0)]
    pub tolerance_pct: f64,
    /// Keep the machine file, the real and simulated traces (gzipped ftrace text) and the JSON
    /// summary (with each real run's root pid) here.
    #[arg(long, value_name = "DIR")]
    pub save: Option<PathBuf>,
    /// Compare a saved capture instead of tracing (repeatable; `.gz` is read gunzipped): no
    /// root needed. The program's tasks are those named by --comm.
    #[arg(long, value_name = "FILE")]
    pub from_trace: Vec<PathBuf>,
    /// What the program printed in each --from-trace run (repeatable, same order), for its own
    /// figure.
    #[arg(long, value_name = "FILE")]
    pub from_output: Vec<PathBuf>,
    /// The program's task names in --from-trace captures (repeatable; default: the names the
    /// built-in programs and perf give their tasks).
    #[arg(long)]
    pub comm: Vec<String>,
    /// Print one JSON document instead of text.
    #[arg(long)]
    pub json: bool,
    /// After the runs as the host is, change one setting on the host and in the model's machine
    /// file alike, run again, and print the model's predicted change of each figure beside the
    /// measured one (repeatable: each flip alone against the unflipped runs; the host's value
    /// is restored after each). NAME=VALUE: governor=menu|haltpoll, guest_halt_poll_ns=N (and
    /// the other haltpoll module parameters), disable=STATE (an idle state's name)
    #[arg(long, value_name = "NAME=VALUE")]
    pub flip: Vec<String>,
}

/// Read a trace file, gunzipping a `.gz`, at most `MAX_TRACE_FILE_BYTES` of text.
pub fn read_trace(p: &Path) -> Result<String, String> {
    let gz = p.extension().is_some_and(|e| e == "gz");
    crate::input::read_input(p, "trace file", crate::limits::MAX_TRACE_FILE_BYTES, gz)
}

/// The trace events enabled for the real run.
pub const EVENTS: &[&str] = &[
    "sched:sched_switch",
    "sched:sched_waking",
    "sched:sched_wakeup",
    "sched:sched_wakeup_new",
    "sched:sched_migrate_task",
    "sched:sched_wake_idle_without_ipi",
    "sched:sched_process_fork",
    "sched:sched_process_exit",
    "ipi:ipi_send_cpu",
    "ipi:ipi_send_cpumask",
    "csd:csd_queue_cpu",
    "csd:csd_function_entry",
    "csd:csd_function_exit",
    "irq:softirq_raise",
    "irq:softirq_entry",
    "irq:softirq_exit",
    "irq:irq_handler_entry",
    "power:cpu_idle",
    "irq_vectors:reschedule_entry",
    "irq_vectors:reschedule_exit",
    "irq_vectors:call_function_single_entry",
    "irq_vectors:call_function_single_exit",
    "irq_vectors:call_function_entry",
    "irq_vectors:call_function_exit",
    "irq_vectors:local_timer_entry",
    "irq_vectors:local_timer_exit",
];

/// One program as both sides run it.
#[derive(Debug, Clone)]
pub struct Program {
    /// As typed (`pingpong iters=5000`).
    pub label: String,
    /// The model's workload and parameters.
    pub workload: String,
    pub params: Vec<(String, String)>,
    /// The real command line.
    pub command: Vec<String>,
    /// Name of the program's own figure.
    pub own_name: &'static str,
    /// For messaging: messages per run; for nanosleep: the duration in seconds.
    pub scale: f64,
    /// The names the program's tasks run under.
    pub comms: Vec<String>,
}

impl Program {
    /// The stretch of a real run the figures cover: for rt-app its use case (the threads'
    /// lifetime: `validate::Window::Forked`), which is what the model runs; else the whole run.
    pub fn window(&self) -> validate::Window {
        if self.workload == "rtapp" {
            validate::Window::Forked
        } else {
            validate::Window::Lifetime
        }
    }

    /// Resolve a workload name and its parameters. Validate uses smaller defaults than the
    /// benchmarks' own where those would make traces of gigabytes.
    pub fn resolve(name: &str, params: &[String], builtin: bool, exe: &str) -> Result<Program, String> {
        let perf = !builtin && Path::new("/usr/bin/perf").exists();
        let kv = |defaults: &[(&str, &str)]| -> Result<Vec<(String, String)>, String> {
            let p = Params::parse(params.iter().map(String::as_str), "validate")?;
            let mut pairs = p.pairs().to_vec();
            for (k, v) in defaults {
                if !pairs.iter().any(|(x, _)| x == k) {
                    pairs.push((k.to_string(), v.to_string()));
                }
            }
            Ok(pairs)
        };
        let host_run = |prog: &str, pairs: &[(String, String)]| -> Vec<String> {
            let mut c = vec![exe.to_string(), "host-run".into(), prog.into()];
            c.extend(pairs.iter().map(|(k, v)| format!("{k}={v}")));
            c
        };
        let label = |pairs: &[(String, String)]| -> String {
            let ps: Vec<String> = pairs.iter().map(|(k, v)| format!("{k}={v}")).collect();
            format!("{name} {}", ps.join(" "))
        };
        match name {
            "pingpong" => {
                let pairs = kv(&[("iters", "10000")])?;
                Ok(Program {
                    label: label(&pairs),
                    workload: name.into(),
                    command: host_run(name, &pairs),
                    params: pairs,
                    own_name: "program: us per round trip",
                    scale: 1.0,
                    comms: vec!["ping".into(), "pong".into()],
                })
            }
            "perf-pipe" => {
                let pairs = kv(&[("loops", "20000")])?;
                let pp = Params::from_pairs(pairs.clone(), "validate");
                let w = crate::workload::pipepair::PipePair::parse_perf_pipe(&pp)?;
                let threaded = matches!(w.form, crate::workload::pipepair::Form::PerfPipe { threaded: true });
                let command = if perf {
                    let mut c: Vec<String> =
                        ["/usr/bin/perf", "bench", "sched", "pipe", "-l"].iter().map(|s| s.to_string()).collect();
                    c.push(w.loops.to_string());
                    if threaded {
                        c.push("-T".into());
                    }
                    c
                } else {
                    host_run(name, &pairs)
                };
                Ok(Program {
                    label: label(&pairs),
                    workload: name.into(),
                    command,
                    params: pairs,
                    own_name: "program: usecs/op",
                    scale: 1.0,
                    comms: vec!["sched-pipe".into()],
                })
            }
            "messaging" => {
                let words: Vec<&str> = if params.is_empty() {
                    vec!["-g", "1", "-l", "100"]
                } else {
                    params.iter().map(String::as_str).collect()
                };
                let o = HackbenchOpts::parse(Tool::Perf, &words)?;
                let mut command: Vec<String> = if perf {
                    ["/usr/bin/perf", "bench", "sched", "messaging"].iter().map(|s| s.to_string()).collect()
                } else {
                    vec![exe.to_string(), "host-run".into(), "messaging".into(), "--".into()]
                };
                command.extend(words.iter().map(|s| s.to_string()));
                Ok(Program {
                    label: format!("messaging {}", words.join(" ")),
                    workload: "hackbench".into(),
                    params: vec![("tool".into(), "perf".into()), ("args".into(), words.join(" "))],
                    command,
                    own_name: "program: us per message",
                    scale: o.expected_messages() as f64,
                    comms: vec!["sched-messaging".into()],
                })
            }
            "nanosleep" => {
                let pairs = kv(&[("procs", "2"), ("ns", "1000"), ("duration_ms", "1000")])?;
                let pp = Params::from_pairs(pairs.clone(), "validate");
                let w = crate::workload::nanosleep::NanosleepLoop::parse(&pp, 1)?;
                Ok(Program {
                    label: label(&pairs),
                    workload: name.into(),
                    command: host_run(name, &pairs),
                    params: pairs,
                    own_name: "program: loops per second",
                    scale: w.duration_ns as f64 / 1e9,
                    comms: vec!["nanosleep".into()],
                })
            }
            "rtapp" => {
                let pairs = kv(&[])?;
                let Some(file) = pairs.iter().find(|(k, _)| k == "file").map(|(_, v)| v.clone()) else {
                    return Err("validate rtapp: give the rt-app JSON file as file=PATH.json".into());
                };
                if let Some((k, _)) = pairs.iter().find(|(k, _)| k != "file") {
                    return Err(format!("validate rtapp: unknown parameter `{k}` (expected file=PATH.json)"));
                }
                // rt-app runs in a directory of its own (its logs go to the file's logdir, "./").
                let abs = std::fs::canonicalize(&file).map_err(|e| format!("validate rtapp: {file}: {e}"))?;
                Ok(Program {
                    label: label(&pairs),
                    workload: name.into(),
                    command: vec![RTAPP.into(), abs.to_string_lossy().into_owned()],
                    params: pairs,
                    own_name: "program: mean wakeup latency (wu_lat, us)",
                    scale: 1.0,
                    comms: vec!["rt-app".into()],
                })
            }
            "netperf" => {
                // The model's command line: [N|N%] and netperf's own options; 20000 transactions
                // (netperf's count mode) unless a length is given.
                let mut words: Vec<String> = params.to_vec();
                if words.is_empty() {
                    words = ["1", "-t", "TCP_RR"].iter().map(|s| s.to_string()).collect();
                }
                if !words.iter().any(|w| w == "-l") {
                    let at = words.iter().position(|w| w == "--").unwrap_or(words.len());
                    words.splice(at..at, ["-l".to_string(), "-20000".to_string()]);
                }
                let pairs = crate::workload::netperf::command_line_params(&words);
                let pp = Params::from_pairs(pairs.clone(), "validate");
                let w = crate::workload::netperf::Netperf::parse(&pp, 1)?;
                let mut command = vec![exe.to_string(), "host-run".into(), "netperf".into(), "--".into()];
                command.extend(words.iter().cloned());
                Ok(Program {
                    label: format!("netperf {}", words.join(" ")),
                    workload: "netperf".into(),
                    params: pairs,
                    command,
                    own_name: if w.o.test.rr() { "program: transactions per second" } else { "program: 10^6bits/s" },
                    scale: 1.0,
                    comms: vec!["netperf".into(), "netserver".into()],
                })
            }
            "tbench" => {
                // Two seconds: real dbench prints no `execute` line (and a zero throughput) at -t 1.
                let words: Vec<String> = if params.is_empty() {
                    ["-t", "2", "1"].iter().map(|s| s.to_string()).collect()
                } else {
                    params.to_vec()
                };
                let args: Vec<&str> = words.iter().map(String::as_str).collect();
                crate::workload::tbench::TbenchOpts::parse(&args, None, 1)?;
                let mut command = vec![exe.to_string(), "host-run".into(), "tbench".into(), "--".into()];
                command.extend(words.iter().cloned());
                Ok(Program {
                    label: format!("tbench {}", words.join(" ")),
                    workload: "tbench".into(),
                    params: vec![("args".into(), words.join(" "))],
                    command,
                    own_name: "program: MB/sec",
                    scale: 1.0,
                    comms: vec!["tbench".into(), "tbench_srv".into()],
                })
            }
            other => Err(format!(
                "validate: unknown workload '{other}' (expected one of: pingpong, perf-pipe, messaging, nanosleep, netperf, tbench, rtapp)"
            )),
        }
    }

    /// The program's own figure, read from what it printed.
    pub fn own_figure(&self, output: &str) -> Option<f64> {
        let before = |needle: &str| -> Option<f64> {
            let line = output.lines().find(|l| l.contains(needle))?;
            let head = &line[..line.find(needle)?];
            head.split_whitespace().last()?.parse().ok()
        };
        match self.own_name {
            "program: us per round trip" => before("us per round trip"),
            "program: usecs/op" => before("usecs/op"),
            "program: us per message" => before("[sec]").map(|s| s * 1e6 / self.scale),
            "program: loops per second" => before("sleeps").map(|n| n / self.scale),
            "program: mean wakeup latency (wu_lat, us)" => before("us mean wu_lat"),
            "program: transactions per second" | "program: 10^6bits/s" => {
                // The sum of the clients' data lines (LKP's total). RR: the rate is the 6th
                // column. STREAM: TCP_STREAM's line has 5 (9 with -c -C) columns, the rate 5th;
                // UDP_STREAM's local line 6 (8), the rate 6th; its remote line (elapsed time
                // second) is not the sender's figure.
                let rr = self.own_name.contains("transactions");
                let mut total = None;
                for l in output.lines() {
                    let f: Vec<&str> = l.split_whitespace().collect();
                    if f.len() < 5 || !f.iter().all(|x| x.parse::<f64>().is_ok()) {
                        continue;
                    }
                    let col = match (rr, f.len()) {
                        (true, _) => 5,
                        (false, _) if f[1].contains('.') => continue,
                        (false, 5 | 9) => 4,
                        (false, _) => 5,
                    };
                    *total.get_or_insert(0.0) += f.get(col)?.parse::<f64>().ok()?;
                }
                total
            }
            "program: MB/sec" => {
                let line = output.lines().find(|l| l.starts_with("Throughput "))?;
                line.split_whitespace().nth(1)?.parse().ok()
            }
            _ => None,
        }
    }
}

/// What the model printed, as the real program prints it.
fn model_output(r: &run::RunResult) -> String {
    match &r.workload {
        Workload::Pingpong(w) | Workload::PerfPipe(w) => w.output.clone(),
        Workload::Hackbench(w) => w.output.clone(),
        Workload::Nanosleep(w) => format!("nanosleep: {} processes, {} sleeps\n", w.procs, w.loops),
        Workload::RtApp(w) => rtapp_summary(w.threads.iter().map(|th| w.log_text(th)).collect::<Vec<_>>().iter()),
        Workload::Netperf(w) => w.output.clone(),
        Workload::Tbench(w) => w.output.clone(),
        _ => String::new(),
    }
}

/// Debian's rt-app.
const RTAPP: &str = "rt-app";

/// The mean of the `wu_lat` column (the last one, us) over every row of rt-app's per-thread
/// logs, as one line: `rt-app: X us mean wu_lat over N rows`.
fn rtapp_summary<'a>(logs: impl Iterator<Item = &'a String>) -> String {
    let (mut sum, mut n) = (0u64, 0u64);
    for log in logs {
        for l in log.lines().filter(|l| !l.starts_with('#')) {
            if let Some(v) = l.split_whitespace().last().and_then(|v| v.parse::<u64>().ok()) {
                sum += v;
                n += 1;
            }
        }
    }
    if n == 0 {
        return "rt-app: no log rows\n".into();
    }
    format!("rt-app: {:.3} us mean wu_lat over {n} rows\n", sum as f64 / n as f64)
}

/// Run rt-app in `dir` (its logs go there), and append the mean wu_lat of its logs to what it
/// printed.
fn run_rtapp(command: &[String], dir: &Path) -> Result<(String, u32), String> {
    for e in std::fs::read_dir(dir).map_err(|e| format!("cannot list {}: {e}", dir.display()))?.flatten() {
        if e.path().extension().is_some_and(|x| x == "log") {
            let _ = std::fs::remove_file(e.path());
        }
    }
    let (out, pid) = run_child_in(command, Some(dir), None)?;
    let mut logs = Vec::new();
    for e in std::fs::read_dir(dir).map_err(|e| format!("cannot list {}: {e}", dir.display()))?.flatten() {
        if e.path().extension().is_some_and(|x| x == "log") {
            logs.push(
                std::fs::read_to_string(e.path())
                    .map_err(|err| format!("cannot read {}: {err}", e.path().display()))?,
            );
        }
    }
    Ok((format!("{out}{}", rtapp_summary(logs.iter())), pid))
}

/// A flip applied to this host's sysfs; dropping it writes back every value it changed, and so
/// does a signal that ends the run meanwhile (`cli::signals`), so a killed `validate --flip`
/// does not leave the host flipped.
struct HostFlip {
    /// (file, value before) of each write, oldest first; shared with the signal's undo.
    saved: std::sync::Arc<std::sync::Mutex<Vec<(PathBuf, String)>>>,
    undo: u64,
}

impl HostFlip {
    fn apply(f: &validate::flip::Flip) -> Result<HostFlip, String> {
        use validate::flip::Flip;
        let saved = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let copy = saved.clone();
        let undo = partials::on_signal(move || HostFlip::put_back(&copy));
        let mut g = HostFlip { saved, undo };
        match f {
            Flip::Governor(v) => g.set(Path::new("/sys/devices/system/cpu/cpuidle/current_governor"), v)?,
            Flip::Haltpoll { name, value } => {
                g.set(&Path::new("/sys/module/haltpoll/parameters").join(name), value)?;
            }
            Flip::Disable(state) => {
                let mut found = false;
                for cpu in 0..crate::limits::MAX_CPUS {
                    let dir = PathBuf::from(format!("/sys/devices/system/cpu/cpu{cpu}/cpuidle"));
                    if !dir.exists() {
                        if cpu > 0 && !PathBuf::from(format!("/sys/devices/system/cpu/cpu{cpu}")).exists() {
                            break;
                        }
                        continue;
                    }
                    for n in 0.. {
                        let sd = dir.join(format!("state{n}"));
                        let Ok(name) = std::fs::read_to_string(sd.join("name")) else { break };
                        // The machine file names a state by its sysfs name's first word
                        // (`machine --from-host`): "haltpoll idle" is `haltpoll`.
                        if name.trim() == state || name.split_whitespace().next() == Some(state.as_str()) {
                            g.set(&sd.join("disable"), "1")?;
                            found = true;
                        }
                    }
                }
                if !found {
                    return Err(format!("--flip {}: this host has no idle state named `{state}`", f.label()));
                }
            }
        }
        Ok(g)
    }

    /// Write `value` to `path`, remembering the old value; the write and the note of it are one
    /// step a signal cannot split.
    fn set(&mut self, path: &Path, value: &str) -> Result<(), String> {
        let old = std::fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        let old = bracketed(old.trim()).unwrap_or_else(|| old.trim().to_string());
        partials::whole(|| {
            std::fs::write(path, value).map_err(|e| format!("cannot write '{value}' to {}: {e}", path.display()))?;
            self.saved.lock().unwrap_or_else(|e| e.into_inner()).push((path.to_path_buf(), old));
            Ok(())
        })
    }

    /// Write back every saved value, newest first, and forget them.
    fn put_back(saved: &std::sync::Mutex<Vec<(PathBuf, String)>>) {
        let mut saved = saved.lock().unwrap_or_else(|e| e.into_inner());
        while let Some((p, v)) = saved.pop() {
            let _ = std::fs::write(p, v);
        }
    }
}

impl Drop for HostFlip {
    fn drop(&mut self) {
        partials::whole(|| HostFlip::put_back(&self.saved));
        partials::forget_undo(self.undo);
    }
}

pub(crate) struct Tracefs {
    pub(crate) dir: PathBuf,
    mounted: bool,
    saved: Vec<(String, String)>,
    set_event: String,
    /// Per-CPU buffer size of the captures (KB).
    pub(crate) buffer_kb: u32,
    /// Event filters cleared by `set_events`, to put back (shared with the signal's copy).
    filters: std::sync::Arc<std::sync::Mutex<Vec<(PathBuf, String)>>>,
    /// The undo action a signal runs (`trace::sink::partials::on_signal`).
    undo: u64,
}

impl Tracefs {
    /// Find (or mount) tracefs and save what a capture changes. Errors say why validate
    /// cannot trace.
    pub(crate) fn open() -> Result<Tracefs, String> {
        // SAFETY: geteuid() has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            return Err("validate runs the program under tracefs and needs root (run it with sudo)".into());
        }
        let mut mounted = false;
        let mut dir = PathBuf::from("/sys/kernel/tracing");
        if !dir.join("trace").exists() {
            let debug = PathBuf::from("/sys/kernel/debug/tracing");
            if debug.join("trace").exists() {
                dir = debug;
            } else {
                let st = std::process::Command::new("mount")
                    .args(["-t", "tracefs", "nodev", "/sys/kernel/tracing"])
                    .status();
                if !matches!(st, Ok(s) if s.success()) || !dir.join("trace").exists() {
                    return Err("no tracefs: /sys/kernel/tracing is not mounted and mounting it failed (kernel without CONFIG_TRACING?)".into());
                }
                mounted = true;
            }
        }
        let read = |f: &str| std::fs::read_to_string(dir.join(f)).map(|s| s.trim().to_string());
        let mut saved = Vec::new();
        for f in ["tracing_on", "current_tracer", "options/record-tgid", "options/irq-info"] {
            if let Ok(v) = read(f) {
                saved.push((f.to_string(), v));
            }
        }
        // The clock in force is the bracketed one.
        if let Some(c) = read("trace_clock").ok().and_then(|v| bracketed(&v)) {
            saved.push(("trace_clock".into(), c));
        }
        if let Ok(v) = read("buffer_size_kb") {
            saved.push(("buffer_size_kb".into(), v.split_whitespace().next().unwrap_or("1408").to_string()));
        }
        let set_event = read("set_event").map_err(|e| format!("cannot read {}/set_event: {e}", dir.display()))?;
        let mut t = Tracefs { dir, mounted, saved, set_event, buffer_kb: 16384, filters: Default::default(), undo: 0 };
        // SIGINT/SIGTERM during a capture restore the settings too (cli::signals).
        let copy = std::mem::ManuallyDrop::new(Tracefs {
            saved: t.saved.clone(),
            set_event: t.set_event.clone(),
            dir: t.dir.clone(),
            filters: t.filters.clone(),
            ..t
        });
        t.undo = partials::on_signal(move || copy.restore());
        Ok(t)
    }

    /// Put back what [`Tracefs::open`] saved. Writes directly: runs under the partials lock.
    fn restore(&self) {
        let write = |f: &str, v: &str| std::fs::write(self.dir.join(f), v);
        let _ = write("tracing_on", "0");
        let events: Vec<&str> = self.set_event.lines().collect();
        let _ = self.set_events_now(&events);
        let _ = write("trace", "");
        for (f, v) in &self.saved {
            let _ = write(f, v);
        }
        if let Ok(filters) = self.filters.lock() {
            for (f, v) in filters.iter() {
                let _ = std::fs::write(f, v);
            }
        }
        if self.mounted {
            let _ = std::process::Command::new("umount").arg(&self.dir).status();
        }
    }

    /// Select `global` (ordered across CPUs; `local` where the kernel lacks it), both printed as
    /// seconds with a fraction. Drop restores the clock that was in force.
    pub(crate) fn use_seconds_clock(&self) -> Result<(), String> {
        let clocks = self.clocks();
        let clock = if clocks.iter().any(|c| c == "global") { "global" } else { "local" };
        self.write("trace_clock", clock)
    }

    /// The trace clocks this kernel offers.
    pub(crate) fn clocks(&self) -> Vec<String> {
        std::fs::read_to_string(self.dir.join("trace_clock"))
            .map(|v| v.split_whitespace().map(|c| c.trim_matches(['[', ']']).to_string()).collect())
            .unwrap_or_default()
    }

    /// Write a setting (never after a signal's restore: `partials::whole`).
    pub(crate) fn write(&self, f: &str, v: &str) -> Result<(), String> {
        partials::whole(|| std::fs::write(self.dir.join(f), v))
            .map_err(|e| format!("cannot write '{v}' to {}/{f}: {e}", self.dir.display()))
    }

    /// Set the events; returns the ones this kernel does not have. A filter someone left on one
    /// of them (`events/SYSTEM/NAME/filter`, e.g. `vec == 3` on `softirq_entry`) would drop
    /// records without a word: it is cleared, and Drop puts it back.
    pub(crate) fn set_events(&self, events: &[&str]) -> Result<Vec<String>, String> {
        partials::whole(|| {
            self.clear_filters(events)?;
            self.set_events_now(events)
        })
    }

    /// Clear the filters left on `events`, remembering them. Writes directly: runs under the
    /// partials lock.
    fn clear_filters(&self, events: &[&str]) -> Result<(), String> {
        for e in events {
            let Some((sys, name)) = e.split_once(':') else { continue };
            let f = self.dir.join("events").join(sys).join(name).join("filter");
            let Ok(old) = std::fs::read_to_string(&f) else { continue };
            let old = old.trim();
            if old != "none" && !old.is_empty() {
                eprintln!("schedsim: clearing the filter `{old}` left on the {e} trace event (put back afterwards)");
                std::fs::write(&f, "0").map_err(|err| format!("cannot clear {}: {err}", f.display()))?;
                if let Ok(mut v) = self.filters.lock() {
                    v.push((f, old.to_string()));
                }
            }
        }
        Ok(())
    }

    fn set_events_now(&self, events: &[&str]) -> Result<Vec<String>, String> {
        use std::io::Write;
        let path = self.dir.join("set_event");
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .truncate(true)
            .open(&path)
            .map_err(|e| format!("cannot open {}: {e}", path.display()))?;
        let mut missing = Vec::new();
        for e in events {
            if f.write_all(format!("{e}\n").as_bytes()).is_err() {
                missing.push(e.to_string());
            }
        }
        Ok(missing)
    }

    /// Trace one run of `command`; returns (its stdout, the trace text, its pid).
    fn capture(&self, command: &[String]) -> Result<(String, String, u32), String> {
        let ((stdout, pid), trace) = self.capture_with(|| run_child(command))?;
        Ok((stdout, trace, pid))
    }

    /// Trace while `f` runs; returns what it returned and the trace text.
    pub(crate) fn capture_with<T>(&self, f: impl FnOnce() -> Result<T, String>) -> Result<(T, String), String> {
        self.write("tracing_on", "0")?;
        self.write("current_tracer", "nop")?;
        let _ = self.write("options/record-tgid", "0");
        let _ = self.write("options/irq-info", "1");
        self.write("buffer_size_kb", &self.buffer_kb.to_string())?;
        self.write("trace", "")?;
        self.write("tracing_on", "1")?;
        let out = f();
        self.write("tracing_on", "0")?;
        let out = out?;
        let trace = std::fs::read_to_string(self.dir.join("trace"))
            .map_err(|e| format!("cannot read {}/trace: {e}", self.dir.display()))?;
        self.write("trace", "")?;
        Ok((out, trace))
    }
}

impl Drop for Tracefs {
    fn drop(&mut self) {
        partials::whole(|| self.restore());
        partials::forget_undo(self.undo);
    }
}

/// The bracketed word of a tracefs choice file (`[local] global x86-tsc` -> `local`).
fn bracketed(v: &str) -> Option<String> {
    v.split_whitespace().find_map(|w| w.strip_prefix('[')?.strip_suffix(']')).map(str::to_string)
}

/// Run a command with Ctrl-C going to it (validate itself ignores SIGINT meanwhile, so that it
/// can restore tracefs). Returns its stdout and pid. Its stderr (rt-app's notices, perf's
/// warnings) is kept out of validate's table and shown only if the command fails.
pub(crate) fn run_child(command: &[String]) -> Result<(String, u32), String> {
    run_child_in(command, None, None)
}

/// [`run_child`] with the child (and whatever it forks) bound to CPU `cpu`.
pub(crate) fn run_child_on(command: &[String], cpu: u32) -> Result<(String, u32), String> {
    run_child_in(command, None, Some(cpu))
}

/// [`run_child`] in directory `dir`, bound to CPU `pin` if given.
fn run_child_in(command: &[String], dir: Option<&Path>, pin: Option<u32>) -> Result<(String, u32), String> {
    use std::os::unix::process::CommandExt;
    let mut cmd = std::process::Command::new(&command[0]);
    cmd.args(&command[1..]).stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped());
    if let Some(d) = dir {
        cmd.current_dir(d);
    }
    // SAFETY: the hook only calls signal(), pthread_sigmask() and sched_setaffinity(), which
    // are async-signal-safe, on a cpu_set_t on its own stack.
    unsafe {
        cmd.pre_exec(move || {
            libc::signal(libc::SIGINT, libc::SIG_DFL);
            if let Some(c) = pin {
                let mut set: libc::cpu_set_t = std::mem::zeroed();
                libc::CPU_SET(c as usize, &mut set);
                if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            super::signals::unblock_in_child()
        });
    }
    // SAFETY: plain signal disposition changes.
    let old = unsafe { libc::signal(libc::SIGINT, libc::SIG_IGN) };
    let res = (|| {
        let child = cmd.spawn().map_err(|e| format!("cannot run {}: {e}", command.join(" ")))?;
        let pid = child.id();
        let out = child.wait_with_output().map_err(|e| format!("waiting for {}: {e}", command.join(" ")))?;
        if !out.status.success() {
            let err = String::from_utf8_lossy(&out.stderr);
            let lines: Vec<&str> = err.lines().collect();
            let tail = lines[lines.len().saturating_sub(20)..].join("\n");
            let said = if tail.is_empty() { String::new() } else { format!("; its stderr ended with:\n{tail}") };
            return Err(format!("{} failed ({}){said}", command.join(" "), out.status));
        }
        Ok((String::from_utf8_lossy(&out.stdout).into_owned(), pid))
    })();
    // SAFETY: as above.
    unsafe { libc::signal(libc::SIGINT, old) };
    res
}

/// A program's figures on a machine file calibrated on `calibrated` (the `# calibrated-program:`
/// and `# calibration-covers:` lines; empty: not calibrated, no status).
pub fn figure_status(workload: &str, calibrated: &[String]) -> Option<validate::Status> {
    if calibrated.is_empty() {
        return None;
    }
    Some(if calibrated.iter().any(|c| c == workload) {
        validate::Status::Calibrated
    } else {
        validate::Status::Predicted
    })
}

pub(crate) fn gzip(text: &str) -> Vec<u8> {
    use std::io::Write;
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    e.write_all(text.as_bytes()).expect("writing to memory");
    e.finish().expect("writing to memory")
}

/// One side's runs.
struct Side {
    outputs: Vec<String>,
    counts: Vec<Counts>,
    figures: Vec<Figures>,
}

/// One state's runs, real and model, and what was noticed on the way.
struct Measured {
    real: Side,
    model: Side,
    real_traces: Vec<(String, Option<u32>)>,
    model_texts: Vec<String>,
    comms: Vec<String>,
    notes: Vec<String>,
}

/// Run the model on `machine_path` and the program on the host (or read the saved captures),
/// and count both sides alike.
fn measure(
    a: &ValidateArgs,
    prog: &Program,
    machine_path: &str,
    kernel: &str,
    state_names: &[String],
    work: &Path,
) -> Result<Measured, String> {
    // The model first: it checks the parameters before tracefs is touched.
    let mut model_runs = Vec::new();
    for seed in 1..=a.seeds as u64 {
        let mut s = RunSpec::new(&prog.workload);
        s.machine = machine_path.to_string();
        s.kernel = kernel.to_string();
        s.seed = seed;
        s.params = Params::from_pairs(prog.params.clone(), "validate");
        s.trace = true;
        s.background = a.background.clone();
        let r = run::execute(&s)?;
        if !r.finished {
            return Err(format!("the model's {} did not finish within {} s", prog.label, s.limit_ns / 1_000_000_000));
        }
        model_runs.push(r);
    }

    // The real runs: traced now, or read from saved captures.
    let mut real_traces = Vec::new();
    let mut real_outputs = Vec::new();
    let mut missing = Vec::new();
    let mut discarded: Vec<String> = Vec::new();
    let comms: Vec<String> = if a.comm.is_empty() { prog.comms.clone() } else { a.comm.clone() };
    if a.from_trace.is_empty() {
        let tracefs = Tracefs::open()?;
        // The analysis reads seconds: choose a seconds clock rather than trusting the one in
        // force (a calibration killed mid-capture leaves `x86-tsc`, which prints raw counts).
        tracefs.use_seconds_clock()?;
        missing = tracefs.set_events(EVENTS)?;
        let mut attempts = 0;
        while real_traces.len() < a.repeat && attempts < 4 * a.repeat {
            attempts += 1;
            let (out, trace, pid) = if prog.workload == "rtapp" {
                let ((out, pid), trace) = tracefs.capture_with(|| run_rtapp(&prog.command, work))?;
                (out, trace, pid)
            } else {
                tracefs.capture(&prog.command)?
            };
            if let Some(max) = a.max_foreign {
                let who = validate::Program::Pids { roots: &[pid], follow_forks: true };
                let share = validate::analyze_in(&trace, &who, &BTreeSet::new(), prog.window()).foreign_share();
                if share * 100.0 > max {
                    discarded.push(format!("{:.0}%", share * 100.0));
                    continue;
                }
            }
            real_outputs.push(out);
            real_traces.push((trace, Some(pid)));
        }
        if real_traces.is_empty() {
            return Err(format!(
                "no real run was quiet enough: other tasks used {} of the CPUs (--max-foreign {})",
                discarded.join(", "),
                a.max_foreign.unwrap_or(100.0)
            ));
        }
    } else {
        for (i, p) in a.from_trace.iter().enumerate() {
            let text = read_trace(p)?;
            if validate::Line::counter_clock(&text) {
                return Err(format!(
                    "{}: the timestamps are raw counter values (trace_clock x86-tsc or counter); validate reads a \
                     trace taken with a clock in seconds (local, global, mono: `echo global > /sys/kernel/tracing/trace_clock`)",
                    p.display()
                ));
            }
            // An empty or foreign file would be a table of zeros, not an error.
            if !text.lines().any(|l| validate::Line::parse(l).is_some()) {
                return Err(format!(
                    "--from-trace {}: no trace record in it (expected tracefs's text, as `cat /sys/kernel/tracing/trace` \
                     or `validate --save` writes it)",
                    p.display()
                ));
            }
            real_traces.push((text, None));
            let out = match a.from_output.get(i) {
                Some(o) => crate::input::read_input_file(o, "program output")?,
                None => String::new(),
            };
            real_outputs.push(out);
        }
    }

    // Idle-silent CPUs, from the real captures; dropped alike on both sides.
    let mut silent = BTreeSet::new();
    for (t, _) in &real_traces {
        silent.extend(validate::silent_idle_cpus(t, 20));
    }
    let mut notes = Vec::new();
    if !discarded.is_empty() {
        notes.push(format!(
            "{} real run(s) discarded because other tasks used {} of the CPUs (over --max-foreign)",
            discarded.len(),
            discarded.join(", ")
        ));
    }
    if real_traces.len() < a.repeat && a.from_trace.is_empty() {
        notes.push(format!("only {} of {} real runs were quiet enough", real_traces.len(), a.repeat));
    }
    if !missing.is_empty() {
        notes.push(format!("this kernel has no {} trace event(s)", missing.join(", ")));
    }
    if !silent.is_empty() {
        notes.push(format!(
            "the idle task of CPU(s) {silent:?} logged no task-context line in a real capture (no cpu_idle, no switch \
             away from idle) although tasks switched to it; those lines are dropped from every trace, real and \
             simulated, so idle entries count only the other CPUs"
        ));
    }
    if prog.window() == validate::Window::Forked {
        notes.push(
            "the real figures cover rt-app's use case, its threads' first run to their exit (not its calibration and \
             log set-up before them, nor the log write-out after), as the model runs only the threads"
                .into(),
        );
    }
    let real = {
        let mut s = Side { outputs: real_outputs, counts: Vec::new(), figures: Vec::new() };
        for (i, (t, pid)) in real_traces.iter().enumerate() {
            let roots: Vec<u32> = pid.iter().copied().collect();
            let who = match pid {
                Some(_) => validate::Program::Pids { roots: &roots, follow_forks: true },
                None => validate::Program::Comms(&comms),
            };
            let c = validate::analyze_in(t, &who, &silent, prog.window());
            if prog.window() == validate::Window::Forked && !c.forked_window {
                notes.push(format!(
                    "real run {}: the program forked no task in the trace; counted over its whole lifetime",
                    i + 1
                ));
            }
            if c.wakeups == 0 {
                notes.push(format!(
                    "real run {}: no wakeup of the program's tasks ({}) in the trace",
                    i + 1,
                    comms.join(", ")
                ));
            }
            if c.lost_events {
                notes.push(format!("real run {}: the trace buffer lost events (counts are low)", i + 1));
            }
            let own = prog.own_figure(&s.outputs[i]).map(|v| (prog.own_name, v));
            s.figures.push(validate::figures(&c, state_names, own));
            s.counts.push(c);
        }
        s
    };
    let mut model_texts = Vec::new();
    let model = {
        let mut s = Side { outputs: Vec::new(), counts: Vec::new(), figures: Vec::new() };
        for r in &model_runs {
            let text = validate::model_trace_text(r);
            let c = validate::model_counts(r, &text, &silent);
            let out = model_output(r);
            let own = prog.own_figure(&out).map(|v| (prog.own_name, v));
            s.figures.push(validate::figures(&c, state_names, own));
            s.counts.push(c);
            s.outputs.push(out);
            model_texts.push(text);
        }
        s
    };
    for (i, c) in real.counts.iter().enumerate() {
        let share = c.foreign_share();
        if share > 0.05 {
            notes.push(format!(
                "real run {}: other tasks used {:.0}% of the CPUs during the program (a busy host skews the rates)",
                i + 1,
                share * 100.0
            ));
        }
    }
    Ok(Measured { real, model, real_traces, model_texts, comms, notes })
}

pub fn cmd_validate(a: ValidateArgs) -> Result<(), String> {
    if a.from_output.len() > a.from_trace.len() {
        return Err("--from-output is given more often than --from-trace".into());
    }
    if a.repeat == 0 || a.seeds == 0 {
        return Err("--repeat and --seeds must be at least 1".into());
    }
    if !a.flip.is_empty() && !a.from_trace.is_empty() {
        return Err(
            "--flip changes the host and runs the program again: it cannot read saved captures (--from-trace)".into()
        );
    }
    let exe = std::env::current_exe().map_err(|e| format!("cannot find the schedsim binary: {e}"))?;
    let prog = Program::resolve(&a.workload, &a.params, a.builtin, &exe.to_string_lossy())?;
    let tol = a.tolerance_pct / 100.0;

    // The machine file.
    let work = match &a.save {
        Some(d) => d.clone(),
        None => std::env::temp_dir().join(format!("schedsim-validate-{}", std::process::id())),
    };
    std::fs::create_dir_all(&work).map_err(|e| format!("cannot create {}: {e}", work.display()))?;
    /// Removes the temporary directory on every way out (unless it is the --save one).
    struct TempDir(Option<PathBuf>);
    impl Drop for TempDir {
        fn drop(&mut self) {
            if let Some(d) = &self.0 {
                let _ = std::fs::remove_dir_all(d);
            }
        }
    }
    let _cleanup = TempDir(a.save.is_none().then(|| work.clone()));
    let machine_path = match &a.machine {
        Some(m) => m.clone(),
        None => {
            let p = work.join("host.toml");
            let text = super::host::machine_toml_from_host(&super::host::HostFs::real(), "host")?;
            super::host::write_atomically(&p, text.as_bytes())?;
            p.to_string_lossy().into_owned()
        }
    };
    let machine = run::machine(&machine_path)?;
    let state_names: Vec<String> = machine.idle_states.iter().map(|s| s.name.clone()).collect();
    let kernel =
        a.kernel.clone().unwrap_or_else(|| crate::linux::patches::KERNELS.last().expect("kernels").name.into());

    let Measured { real, model, real_traces, model_texts, comms, mut notes } =
        measure(&a, &prog, &machine_path, &kernel, &state_names, &work)?;
    // Each flip: the same runs with one setting changed on the host and in the machine file.
    let flips: Vec<validate::flip::Flip> =
        a.flip.iter().map(|f| validate::flip::Flip::parse(f)).collect::<Result<_, _>>()?;
    let mut flip_tables = Vec::new();
    if !flips.is_empty() {
        let machine_text = crate::input::read_input_file(&machine_path, "machine file")
            .map_err(|e| format!("--flip needs the machine as a file: {e}"))?;
        let before = validate::rows(&real.figures, &model.figures, tol);
        let machine_abs = std::fs::canonicalize(&machine_path).map_err(|e| format!("{machine_path}: {e}"))?;
        let machine_dir = machine_abs.parent().unwrap_or(Path::new("/"));
        for (i, f) in flips.iter().enumerate() {
            let flipped = work.join(format!("flip-{}.toml", i + 1));
            super::host::write_atomically(
                &flipped,
                f.apply_to_machine(&machine_text, &machine_path, machine_dir)?.as_bytes(),
            )?;
            let m = {
                let _host = HostFlip::apply(f)?;
                measure(&a, &prog, &flipped.to_string_lossy(), &kernel, &state_names, &work)?
            };
            let after = validate::rows(&m.real.figures, &m.model.figures, tol);
            notes.extend(m.notes.iter().map(|n| format!("flip {}: {n}", f.label())));
            flip_tables.push((f.clone(), validate::flip::deltas(&before, &after, tol)));
        }
    }
    let mut rows = validate::rows(&real.figures, &model.figures, tol);
    // A calibrated machine file lists the programs its calibration read.
    let calibrated = if machine_path.ends_with(".toml") {
        crate::calibrate::calibrated_programs(&crate::input::read_input_file(&machine_path, "machine file")?)
    } else {
        Vec::new()
    };
    let status = figure_status(&a.workload, &calibrated);
    validate::mark(&mut rows, status);
    if let Some(st) = status {
        notes.push(format!(
            "the machine file is calibrated (on {}): this program's figures are {}",
            calibrated.join(", "),
            if st == validate::Status::Calibrated {
                "calibrated (the calibration read this program, or one whose paths it uses alone)"
            } else {
                "predictions (the calibration never ran this program)"
            }
        ));
    }

    if let Some(dir) = &a.save {
        for (i, (t, _)) in real_traces.iter().enumerate() {
            super::host::write_atomically(&dir.join(format!("real-{}.trace.gz", i + 1)), &gzip(t))?;
        }
        for (i, t) in model_texts.iter().enumerate() {
            super::host::write_atomically(&dir.join(format!("model-{}.trace.gz", i + 1)), &gzip(t))?;
        }
    }
    let doc = json!({
        "workload": prog.label,
        "real_command": prog.command.join(" "),
        "machine": machine_path,
        "kernel": kernel,
        "repeat": a.repeat,
        "real_runs": real_traces.len(),
        "seeds": a.seeds,
        "tolerance": tol,
        "rows": rows,
        "notes": notes,
        "real": {
            "outputs": real.outputs,
            "root_pids": real_traces.iter().map(|(_, p)| *p).collect::<Vec<_>>(),
            "from_trace": a.from_trace.iter().map(|p| p.display().to_string()).collect::<Vec<_>>(),
            "counts": real.counts,
        },
        "model": {"outputs": model.outputs, "counts": model.counts},
        "flips": flip_tables.iter().map(|(f, d)| json!({"flip": f.label(), "deltas": d})).collect::<Vec<_>>(),
    });
    if let Some(dir) = &a.save {
        let text = serde_json::to_string_pretty(&doc).expect("serializable");
        super::host::write_atomically(&dir.join("validate.json"), text.as_bytes())?;
    }
    if a.json {
        super::emit(&format!("{}\n", serde_json::to_string_pretty(&doc).expect("serializable")));
        return Ok(());
    }
    let mut o = format!(
        "# schedsim validate {}\n# real: {}; model: {} on {} x{} seeds\n\n",
        prog.label,
        if a.from_trace.is_empty() {
            format!("`{}` x{}", prog.command.join(" "), a.repeat)
        } else {
            format!("{} saved capture(s), tasks named {}", a.from_trace.len(), comms.join(", "))
        },
        kernel,
        machine_path,
        a.seeds
    );
    o.push_str(&validate::render(&rows, tol));
    o.push_str(&format!("(a per-wakeup difference below {} also counts as within)\n", validate::STRUCTURE_FLOOR));
    let within = rows.iter().filter(|r| r.kind == validate::RowKind::Structure && r.within).count();
    let structural = rows.iter().filter(|r| r.kind == validate::RowKind::Structure).count();
    o.push_str(&format!(
        "\n{within} of {structural} structural ratios within {:.0}%. Real wakeups per run: {}; model: {}.\n",
        a.tolerance_pct,
        real.counts.iter().map(|c| c.wakeups.to_string()).collect::<Vec<_>>().join(", "),
        model.counts.iter().map(|c| c.wakeups.to_string()).collect::<Vec<_>>().join(", ")
    ));
    if status.is_some() {
        let count = |structure: bool| {
            let v: Vec<&validate::Row> =
                rows.iter().filter(|r| (r.kind == validate::RowKind::Structure) == structure).collect();
            (v.iter().filter(|r| r.target_met == Some(true)).count(), v.len())
        };
        let (sm, sn) = count(true);
        let (fm, fnn) = count(false);
        o.push_str(&format!(
            "Targets: {sm} of {sn} structural ratios within {:.0}% of the real median, {fm} of {fnn} rates and program figures within {:.0}%.\n",
            validate::TARGET_STRUCTURE * 100.0,
            validate::TARGET_FIGURE * 100.0
        ));
    }
    for (f, d) in &flip_tables {
        o.push('\n');
        o.push_str(&validate::flip::render(f, d));
    }
    for n in &notes {
        o.push_str(&format!("note: {n}\n"));
    }
    super::emit(&o);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn programs_resolve_with_small_defaults_and_read_their_own_figures() {
        let p = Program::resolve("perf-pipe", &[], false, "schedsim").unwrap();
        assert_eq!(p.params, vec![("loops".to_string(), "20000".to_string())]);
        let out = crate::workload::pipepair::perf_pipe_output(20000, false, 92_002);
        assert_eq!(p.own_figure(&out), Some(4.6001));
        let p = Program::resolve("messaging", &[], true, "schedsim").unwrap();
        assert_eq!(p.command[1..], ["host-run", "messaging", "--", "-g", "1", "-l", "100"]);
        assert_eq!(p.scale, 40_000.0);
        let out = "# Running 'sched/messaging' benchmark:\n\n     Total time: 0.084 [sec]\n";
        assert!((p.own_figure(out).unwrap() - 2.1).abs() < 1e-9);
        let p = Program::resolve("nanosleep", &["duration_ms=500".to_string()], true, "schedsim").unwrap();
        assert_eq!(p.own_figure("nanosleep: 2 processes, 1000 sleeps\n"), Some(2000.0));
        let p = Program::resolve("pingpong", &["sleep_us=100".to_string()], true, "s").unwrap();
        assert_eq!(p.command, ["s", "host-run", "pingpong", "sleep_us=100", "iters=10000"]);
        assert_eq!(p.own_figure(&crate::workload::pipepair::pingpong_output(10, 25_000)), Some(2.5));
        assert!(Program::resolve("hackbench", &[], true, "s").unwrap_err().contains("expected one of"));
        // rt-app: the file as given to the model, its absolute path to Debian's rt-app; the
        // program's figure is the mean of the logs' last column (wu_lat, us).
        let p = Program::resolve("rtapp", &["file=scenarios/rtapp/periodic.json".to_string()], true, "s").unwrap();
        assert_eq!(p.params, vec![("file".to_string(), "scenarios/rtapp/periodic.json".to_string())]);
        assert_eq!(p.command[0], RTAPP);
        assert!(p.command[1].ends_with("/scenarios/rtapp/periodic.json"), "{:?}", p.command);
        let logs = ["# Policy : SCHED_OTHER priority : 0\n#idx perf run period start end rel_st slack c_duration c_period wu_lat\n0 1 2 3 4 5 6 7 8 9 30\n0 1 2 3 4 5 6 7 8 9 50\n".to_string()];
        assert_eq!(p.own_figure(&rtapp_summary(logs.iter())), Some(40.0));
        assert!(Program::resolve("rtapp", &[], true, "s").unwrap_err().contains("file=PATH.json"));
    }

    #[test]
    fn a_host_flip_is_put_back_by_drop_and_by_the_signal_undo() {
        let d = std::env::temp_dir().join(format!("schedsim-hostflip-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        let (a, b) = (d.join("current_governor"), d.join("disable"));
        std::fs::write(&a, "haltpoll\n").unwrap();
        std::fs::write(&b, "0\n").unwrap();
        // Drop writes back every value, newest first.
        {
            let saved = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
            let mut g = HostFlip { saved, undo: partials::on_signal(|| {}) };
            g.set(&a, "menu").unwrap();
            g.set(&b, "1").unwrap();
            assert_eq!(std::fs::read_to_string(&a).unwrap(), "menu");
        }
        assert_eq!(
            (std::fs::read_to_string(&a).unwrap(), std::fs::read_to_string(&b).unwrap()),
            ("haltpoll".into(), "0".into())
        );
        // What the signal's undo runs: the shared list, put back once (a later Drop finds it empty).
        let saved = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let copy = saved.clone();
        let mut g = HostFlip { saved, undo: partials::on_signal(|| {}) };
        g.set(&a, "menu").unwrap();
        HostFlip::put_back(&copy);
        assert_eq!(std::fs::read_to_string(&a).unwrap(), "haltpoll");
        std::fs::write(&a, "ladder").unwrap();
        drop(g);
        assert_eq!(std::fs::read_to_string(&a).unwrap(), "ladder");
        let _ = std::fs::remove_dir_all(&d);
    }
}
