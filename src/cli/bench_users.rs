//! `schedsim bench --users`: the simulator's speed on the runs users bring (issue 34's benchmark
//! set), and with `--cachegrind` its deterministic cost: instructions and host cache misses per
//! action as cachegrind simulates them.
//!
//! Each case runs in a child process of this binary (`bench --case-child NAME LENGTH`), so its
//! peak RSS is its own and a cachegrind run counts that case alone. Wall time and CPU time are
//! the host's and move with its load; cachegrind's counts do not (same binary, same counts), so
//! they are what judges a change on a shared host. Cachegrind runs are short (a few ms of
//! simulated time, two lengths) and their difference is the steady state: the build, the
//! background's warm-up and the workload's start-up are in both lengths and cancel.

use crate::run;
use crate::spec::RunSpec;
use crate::workload::params::Params;
use std::io::Write;
use std::path::Path;
use std::time::Instant;

/// The peer simulator's rt-app benchmark, 640 workers and 80 hogs (shipped as a scenario file).
const PEER_640: &str = include_str!("../../scenarios/rtapp/peer-640.json");
/// Its 64-CPU sibling: 160 workers and 20 hogs.
const PEER_160: &str = include_str!("../../scenarios/rtapp/peer-160.json");

/// One case of the set: its name, what it is, and the simulated time of one unit of a
/// cachegrind run's length (after the warm-up), ms.
pub struct Case {
    pub name: &'static str,
    pub what: &'static str,
    pub unit_ms: u64,
}

/// The set, in the order of the table.
pub const CASES: &[Case] = &[
    Case {
        name: "rtapp-640",
        what: "rt-app 640 workers (0.5 ms run, 1.5 ms sleep) + 80 hogs, 2 s, epyc-7763-2s (256 CPUs)",
        unit_ms: 20,
    },
    Case { name: "rtapp-160", what: "rt-app 160 workers + 20 hogs, 2 s, EPYC 7763 scaled to 64 CPUs", unit_ms: 40 },
    Case { name: "hackbench-32", what: "hackbench 32 groups (1280 tasks), epyc-7763-2s", unit_ms: 10 },
    Case { name: "schbench-m8-t128", what: "schbench -m 8 -t 128 -r 10, epyc-7763-2s v6.10", unit_ms: 100 },
    Case {
        name: "nanosleep-1024",
        what: "nanosleep procs=1024 ns=1000, 100 ms, EPYC 7763 scaled to 1024 CPUs",
        // Its 1024 forks take the first few ms: 1 and 2 ms had the same actions.
        unit_ms: 10,
    },
];

/// The longest cachegrind length, in units.
pub const MAX_LENGTH: u64 = 64;

/// The case's run, with the files it needs written into `dir`; `length` 0 is the case in full,
/// `length` L > 0 stops it L units of simulated time after the warm-up.
pub fn case_spec(name: &str, dir: &Path, length: u64) -> Result<RunSpec, String> {
    let case = CASES.iter().find(|c| c.name == name).ok_or_else(|| {
        format!("bench: unknown case `{name}`; known: {}", CASES.iter().map(|c| c.name).collect::<Vec<_>>().join(", "))
    })?;
    if length > MAX_LENGTH {
        return Err(format!("bench --case-child: length {length}: expected 0..={MAX_LENGTH}"));
    }
    let write = |file: &str, text: &str| -> Result<String, String> {
        let p = dir.join(file);
        std::fs::write(&p, text).map_err(|e| format!("bench: {}: {e}", p.display()))?;
        Ok(p.to_string_lossy().into_owned())
    };
    let pairs = |v: &[(&str, &str)]| v.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect::<Vec<_>>();
    let mut s = match name {
        "rtapp-640" | "rtapp-160" => {
            let (text, machine) = if name == "rtapp-640" {
                (PEER_640, "epyc-7763-2s".to_string())
            } else {
                (PEER_160, write("scaled-epyc-64.toml", &super::bench::scaled_machine_toml(64)?)?)
            };
            let file = write(&format!("{name}.json"), text)?;
            let mut s = RunSpec::new("rtapp");
            s.machine = machine;
            s.params = Params::from_pairs(vec![("file".into(), file), ("logs".into(), "summary".into())], "bench");
            s
        }
        "hackbench-32" => {
            let mut s = crate::spec::scenario::builtin("hackbench")?;
            s.machine = "epyc-7763-2s".into();
            s.params.set("args".into(), "32".into());
            s
        }
        "schbench-m8-t128" => {
            let mut s = crate::spec::scenario::builtin("schbench")?;
            s.machine = "epyc-7763-2s".into();
            s.kernel = "v6.10".into();
            s.params = Params::from_pairs(pairs(&[("args", "-m 8 -t 128 -r 10")]), "bench");
            s
        }
        _ => {
            let mut s = crate::spec::scenario::builtin("nanosleep")?;
            s.machine = write("scaled-epyc-1024.toml", &super::bench::scaled_machine_toml(1024)?)?;
            s.params.set("procs".into(), "1024".into());
            s
        }
    };
    if length > 0 {
        s.limit_ns = s.limit_ns.min(length * case.unit_ms * crate::sim::NSEC_PER_MSEC);
    }
    Ok(s)
}

/// The child: one case, built and run (CPU time of each, wall time of the run, simulated time
/// and actions, peak RSS), as one JSON line on stdout.
pub fn child(name: &str, length: u64) -> Result<(), String> {
    let dir = std::env::temp_dir().join(format!("schedsim-bench-case-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| format!("bench: {}: {e}", dir.display()))?;
    let built = case_spec(name, &dir, length).and_then(|spec| {
        let c0 = super::bench::cpu_time_s();
        let w = run::build(&spec)?;
        Ok((spec, w, super::bench::cpu_time_s() - c0))
    });
    let _ = std::fs::remove_dir_all(&dir);
    let (spec, mut w, build_s) = built?;
    let c1 = super::bench::cpu_time_s();
    let t = Instant::now();
    w.run(spec.limit_ns);
    let wall = t.elapsed().as_secs_f64();
    let cpu = super::bench::cpu_time_s() - c1;
    let line = serde_json::json!({
        "case": name,
        "actions": w.actions,
        "sim_ns": w.now,
        "window_ns": w.now.saturating_sub(w.measure_from),
        "build_s": build_s,
        "cpu_s": cpu,
        "wall_s": wall,
        "vmhwm_kb": super::bench::vm_hwm_kb(),
    });
    let mut out = std::io::stdout().lock();
    writeln!(out, "{line}").map_err(|e| format!("bench: {e}"))
}

/// One child's figures.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Sample {
    pub actions: u64,
    pub sim_ns: u64,
    /// The simulated time after the warm-up: the workload's own.
    pub window_ns: u64,
    pub build_s: f64,
    pub cpu_s: f64,
    pub wall_s: f64,
    pub vmhwm_kb: u64,
}

/// The child's JSON line read back.
fn parse_sample(out: &[u8], what: &str) -> Result<Sample, String> {
    let v: serde_json::Value =
        serde_json::from_slice(out).map_err(|e| format!("bench: {what}: bad child output: {e}"))?;
    Ok(Sample {
        actions: v["actions"].as_u64().unwrap_or(0),
        sim_ns: v["sim_ns"].as_u64().unwrap_or(0),
        window_ns: v["window_ns"].as_u64().unwrap_or(0),
        build_s: v["build_s"].as_f64().unwrap_or(0.0),
        cpu_s: v["cpu_s"].as_f64().unwrap_or(0.0),
        wall_s: v["wall_s"].as_f64().unwrap_or(0.0),
        vmhwm_kb: v["vmhwm_kb"].as_u64().unwrap_or(0),
    })
}

fn run_child(exe: &Path, name: &str, length: u64) -> Result<Sample, String> {
    let out = std::process::Command::new(exe)
        .args(["bench", "--case-child", name, &length.to_string()])
        .output()
        .map_err(|e| format!("bench: cannot run {}: {e}", exe.display()))?;
    if !out.status.success() {
        return Err(format!("bench: {name} failed: {}", String::from_utf8_lossy(&out.stderr).trim()));
    }
    parse_sample(&out.stdout, name)
}

/// `bench --users`: every case `runs` times in its own process (in rounds, so a host whose
/// speed drifts moves every case alike); per case the median by CPU time: simulated seconds per
/// wall second and per CPU second, the workload's own simulated seconds (after the warm-up) per
/// wall second, actions per CPU second, peak RSS.
pub fn users(runs: usize) -> Result<String, String> {
    let exe = std::env::current_exe().map_err(|e| format!("bench: cannot find this binary: {e}"))?;
    let mut samples: Vec<Vec<Sample>> = CASES.iter().map(|_| Vec::new()).collect();
    for _ in 0..runs {
        for (i, c) in CASES.iter().enumerate() {
            samples[i].push(run_child(&exe, c.name, 0)?);
        }
    }
    let mut rows = Vec::new();
    for (c, v) in CASES.iter().zip(&mut samples) {
        v.sort_by(|a, b| a.cpu_s.total_cmp(&b.cpu_s));
        let s = v[v.len() / 2];
        let sim_s = s.sim_ns as f64 / 1e9;
        rows.push(vec![
            c.name.to_string(),
            s.actions.to_string(),
            format!("{sim_s:.3}"),
            format!("{:.3}", s.build_s),
            format!("{:.3}", s.cpu_s),
            format!("{:.3}", s.wall_s),
            format!("{:.3}", sim_s / s.wall_s),
            format!("{:.3}", sim_s / s.cpu_s),
            format!("{:.3}", s.window_ns as f64 / 1e9 / s.wall_s),
            format!("{:.2}", s.actions as f64 / s.cpu_s / 1e6),
            format!("{:.1}", v.iter().map(|s| s.vmhwm_kb).max().unwrap_or(0) as f64 / 1024.0),
        ]);
    }
    let header: Vec<String> = [
        "case",
        "actions",
        "sim(s)",
        "build cpu(s)",
        "run cpu(s)",
        "run wall(s)",
        "sim-s/wall-s",
        "sim-s/cpu-s",
        "workload-s/wall-s",
        "Mactions/cpu-s",
        "peak RSS (MB)",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let mut text = format!(
        "schedsim bench --users: the benchmark set (median by run CPU time of {runs} rounds, each run in its \
         own process; sim(s) counts the background's warm-up, workload-s only the simulated time after it, \
         over the whole run's wall time)\n\n"
    );
    text.push_str(&crate::report::render_grid(&header, &rows));
    text.push('\n');
    for c in CASES {
        text.push_str(&format!("  {:<18} {}\n", c.name, c.what));
    }
    Ok(text)
}

/// Cachegrind's totals of one process: instructions, D1 data misses (reads and writes), and
/// last-level misses (instructions and data).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    pub ir: u64,
    pub d1_misses: u64,
    pub ll_misses: u64,
}

/// The totals of cachegrind's summary on stderr (`==123== I refs:      1,234,567`,
/// `==123== D1  misses:  50,907  ( 42,252 rd + 8,655 wr)`, `==123== LL misses: ...`).
pub fn parse_cachegrind(stderr: &str) -> Option<Counts> {
    // Labels are padded differently across valgrind versions ("I refs", "I   refs"): compared
    // word by word.
    let field = |label: &str| -> Option<u64> {
        stderr.lines().find_map(|l| {
            let rest = l.split_once("== ").map_or(l, |(_, r)| r);
            let (name, value) = rest.split_once(':')?;
            if !name.split_whitespace().eq(label.split_whitespace()) {
                return None;
            }
            value.split_whitespace().next()?.replace(',', "").parse().ok()
        })
    };
    Some(Counts { ir: field("I refs")?, d1_misses: field("D1  misses")?, ll_misses: field("LL misses")? })
}

/// One case under cachegrind at `length`: its actions and counts.
fn cachegrind_child(exe: &Path, name: &str, length: u64) -> Result<(Sample, Counts), String> {
    let out = std::process::Command::new("valgrind")
        .args(["--tool=cachegrind", "--cache-sim=yes", "--cachegrind-out-file=/dev/null"])
        .arg(exe)
        .args(["bench", "--case-child", name, &length.to_string()])
        .output()
        .map_err(|e| format!("bench --cachegrind: cannot run valgrind (apt-get install valgrind): {e}"))?;
    let err = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() {
        return Err(format!("bench --cachegrind: {name} failed: {}", err.trim()));
    }
    let counts = parse_cachegrind(&err)
        .ok_or_else(|| format!("bench --cachegrind: {name}: no totals in valgrind's output: {}", err.trim()))?;
    Ok((parse_sample(&out.stdout, name)?, counts))
}

/// The steady state between two lengths: what the longer run adds, per added action
/// (instructions, D1 misses, LL misses); `None` if it adds no actions.
pub fn steady(a: (Sample, Counts), b: (Sample, Counts)) -> Option<(f64, f64, f64)> {
    let n = b.0.actions.checked_sub(a.0.actions).filter(|&n| n > 0)? as f64;
    let d = |x: u64, y: u64| (y as f64 - x as f64) / n;
    Some((d(a.1.ir, b.1.ir), d(a.1.d1_misses, b.1.d1_misses), d(a.1.ll_misses, b.1.ll_misses)))
}

/// `bench --users --cachegrind`: every case under cachegrind at one and two units of simulated
/// time after the warm-up; per case the steady state's instructions, D1 misses and LL misses
/// per action (cachegrind's default caches: this host's, as valgrind reads them). Deterministic:
/// the same binary gives the same counts on any load.
pub fn cachegrind() -> Result<String, String> {
    let exe = std::env::current_exe().map_err(|e| format!("bench: cannot find this binary: {e}"))?;
    let mut rows = Vec::new();
    for c in CASES {
        let a = cachegrind_child(&exe, c.name, 1)?;
        let b = cachegrind_child(&exe, c.name, 2)?;
        let (ir, d1, ll) = steady(a, b).unwrap_or((f64::NAN, f64::NAN, f64::NAN));
        rows.push(vec![
            c.name.to_string(),
            format!("{} / {} ms", c.unit_ms, 2 * c.unit_ms),
            format!("{} / {}", a.0.actions, b.0.actions),
            format!("{} / {}", a.1.ir, b.1.ir),
            format!("{ir:.0}"),
            format!("{d1:.2}"),
            format!("{ll:.3}"),
        ]);
    }
    let header: Vec<String> =
        ["case", "lengths", "actions", "instructions", "steady instr/action", "D1 miss/action", "LL miss/action"]
            .iter()
            .map(|s| s.to_string())
            .collect();
    let mut text = String::from(
        "schedsim bench --users --cachegrind: cachegrind's counts (valgrind --tool=cachegrind --cache-sim=yes), \
         each case run to two lengths of simulated time after the warm-up; per action: what the longer run \
         adds over the actions it adds (no build, warm-up or start-up)\n\n",
    );
    text.push_str(&crate::report::render_grid(&header, &rows));
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cachegrind_totals_are_read_from_its_summary() {
        let err = "==4242== I   refs:        1,234,567\n==4242== I1  misses:  10\n\
                   ==4242== D1  misses:        50,907  (    42,252 rd   +     8,655 wr)\n\
                   ==4242== LLd misses:        1,000  (  900 rd + 100 wr)\n\
                   ==4242== LL misses:         2,345  (  2,000 rd + 345 wr)\n";
        assert_eq!(parse_cachegrind(err), Some(Counts { ir: 1_234_567, d1_misses: 50_907, ll_misses: 2_345 }));
        assert_eq!(parse_cachegrind("==1== I refs: 5\n"), None, "a summary without cache figures");
    }

    #[test]
    fn the_steady_state_is_what_the_longer_run_adds_per_added_action() {
        let s = |actions| Sample { actions, ..Sample::default() };
        let a = (s(1000), Counts { ir: 5_000_000, d1_misses: 2000, ll_misses: 100 });
        let b = (s(3000), Counts { ir: 6_000_000, d1_misses: 3000, ll_misses: 300 });
        assert_eq!(steady(a, b), Some((500.0, 0.5, 0.1)));
        assert_eq!(steady(a, a), None);
    }

    /// Every case builds, and a length stops it that much simulated time after the warm-up.
    #[test]
    fn every_case_is_a_valid_run() {
        let dir = std::env::temp_dir().join(format!("schedsim-bench-users-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        for c in CASES {
            let full = case_spec(c.name, &dir, 0).unwrap();
            let mut s = case_spec(c.name, &dir, 1).unwrap();
            assert_eq!(s.limit_ns, full.limit_ns.min(c.unit_ms * crate::sim::NSEC_PER_MSEC), "{}", c.name);
            // A short run of every case, to see it builds and does work.
            s.limit_ns = 200_000;
            let r = run::execute(&s).unwrap();
            assert!(r.actions > 0, "{}", c.name);
        }
        assert!(case_spec("nope", &dir, 0).unwrap_err().contains("rtapp-640"));
        assert!(case_spec("rtapp-640", &dir, MAX_LENGTH + 1).is_err());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
