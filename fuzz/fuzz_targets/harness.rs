// The fuzz targets' bodies, one function per parser of user input. The cargo-fuzz targets in
// this directory call them, and `tests/fuzz_corpus.rs` runs the seed corpus (`fuzz/seeds/`) and
// every input a fuzz run once found (`fuzz/regressions/`) through them in `cargo test`.
// Each takes arbitrary bytes and must return without panicking, whatever they are.

#![allow(dead_code)]

use schedsim::run;
use schedsim::spec::RunSpec;

/// Workloads the parameter and scenario targets may name (not `rtapp`, whose `file=` reads a
/// path: its parser has its own target).
const WORKLOADS: &[&str] =
    &["ipistorm", "spinners", "nanosleep", "rt-push", "hackbench", "schbench", "pingpong", "perf-pipe", "idle"];

/// Run what parsed and built for a few simulated milliseconds on a small quiet machine, so
/// overflow in what the model does with the numbers shows too (as tests/fuzz_parsers.rs does).
fn run_briefly(spec: &RunSpec) {
    let mut s = spec.clone();
    s.limit_ns = s.limit_ns.min(2_000_000);
    s.background = Some("none".into());
    s.trace = false;
    if let Ok(m) = run::machine(&s.machine) {
        if m.topo.nr_cpus > 64 {
            s.machine = "smp-4".into();
            s.idle_states.clear();
        }
    }
    let _ = run::execute(&s);
}

/// `key=value` workload parameters (`schedsim run WORKLOAD k=v ...`): the first byte picks the
/// workload, the rest is the parameter text split on whitespace (a line starting `args=` is one
/// item, as a quoted shell word would be). What parses is built and run briefly on smp-4.
pub fn params(data: &[u8]) {
    let Some((&w, rest)) = data.split_first() else { return };
    let Ok(text) = std::str::from_utf8(rest) else { return };
    let workload = WORKLOADS[w as usize % WORKLOADS.len()];
    let mut items: Vec<&str> = Vec::new();
    for line in text.lines() {
        if line.trim_start().starts_with("args=") {
            items.push(line);
        } else {
            items.extend(line.split_whitespace());
        }
    }
    let Ok(p) = schedsim::workload::params::Params::parse(items, "fuzz") else { return };
    let mut s = RunSpec::new(workload);
    s.machine = "smp-4".into();
    s.background = Some("none".into());
    s.params = p;
    if run::build(&s).is_ok() {
        run_briefly(&s);
    }
}

/// Scenario files (`schedsim run --scenario FILE.toml`), parsed, built and run briefly; one that
/// names a file (machine, background) or the rtapp workload is only parsed.
pub fn scenario(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let Ok(s) = schedsim::spec::scenario::parse(text, "fuzz.toml") else { return };
    if s.machine.ends_with(".toml") || !WORKLOADS.contains(&s.workload.as_str()) {
        return;
    }
    if s.background.as_deref().is_some_and(|b| b.ends_with(".toml")) {
        return;
    }
    if run::build(&s).is_ok() {
        run_briefly(&s);
    }
}

/// Machine files (`--machine FILE.toml`; `schedsim list --machine NAME` prints the format).
pub fn machine(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let _ = schedsim::hw::machine_from_toml(text, "fuzz.toml");
}

/// Background profile files (`--background FILE.toml`).
pub fn background(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let _ = schedsim::background::parse(text, "fuzz.toml");
}

/// rt-app JSON files (`schedsim run --rtapp FILE.json`), checked against a 4-CPU machine.
pub fn rtapp(data: &[u8]) {
    use schedsim::workload::rtapp_json::{parse_rtapp, Limits};
    let Ok(text) = std::str::from_utf8(data) else { return };
    let _ = parse_rtapp(text, "fuzz.json", Limits { nr_cpus: 4, nr_nodes: 1 });
}

/// The kernel-spec grammar (`--kernel NAME+ID-ID`, `--kernels`, a scenario's `kernel`) and the
/// `--patch +ID,-ID` list: the first line is the kernel, the rest the patch list.
pub fn kernel_spec(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let (kernel, patches) = text.split_once('\n').unwrap_or((text, ""));
    let _ = schedsim::linux::config::split_kernel_spec(kernel);
    let _ = schedsim::linux::config::KernelConfig::resolve(kernel, patches, 250);
}

/// The ftrace text importer of `schedsim validate --from-trace FILE`: idle-silent CPUs, a
/// program's per-wakeup counts (by pid with its forks, and by task name) and the figures.
pub fn ftrace(data: &[u8]) {
    use schedsim::validate::{analyze, figures, silent_idle_cpus, Line, Program};
    let Ok(text) = std::str::from_utf8(data) else { return };
    let silent = silent_idle_cpus(text, 20);
    let roots = [text.lines().find_map(Line::parse).map_or(1, |l| l.pid)];
    let c = analyze(text, &Program::Pids { roots: &roots, follow_forks: true }, &silent);
    let _ = figures(&c, &["POLL".to_string(), "C1".to_string()], Some(("time", 1.0)));
    let comms = ["hackbench".to_string(), "schbench".to_string()];
    let c = analyze(text, &Program::Comms(&comms), &silent);
    let _ = figures(&c, &[], None);
    let _ = c.foreign_share();
}

/// Sweep grid files (`schedsim sweep GRID.toml`): expanded into runs, not run.
pub fn grid(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else { return };
    if let Ok(runs) = schedsim::sweep::parse_grid(text, "fuzz.toml") {
        for r in runs.iter().take(64) {
            let _ = r.key();
        }
    }
}
