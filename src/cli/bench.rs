//! `schedsim bench --scaling`: the simulator's cost per action and peak memory as the machine
//! grows from 8 to 4096 CPUs, for a few workloads.
//!
//! The machines are the EPYC 7763 preset with its topology scaled (two threads per core, eight
//! cores per LLC, 64 cores per socket, one node per socket): every cost and idle state stays
//! the preset's, only the counts change. Each (size, workload) runs in a child process of this
//! binary (`bench --scaling-child`), so its peak RSS (`VmHWM`) is its own; the child measures
//! the CPU time of the build and of the run apart (CPU time, not wall time, so a shared
//! machine's load does not count) and prints one JSON line; the parent formats the table, and
//! ns/action is the run's CPU time over its actions.

use crate::run::{self, RunSpec};
use crate::workload::params::Params;
use std::io::Write;
use std::time::Instant;

/// The machine sizes, in CPUs.
pub const SIZES: &[u32] = &[8, 64, 256, 1024, 4096];

/// The workloads, by name.
pub const WORKLOADS: &[&str] = &["idle", "ipistorm", "nanosleep", "hackbench"];

/// The TOML of the EPYC 7763 preset scaled to `nr_cpus` CPUs (a multiple of 8, at most
/// 64 sockets' worth): its name and topology counts replaced, everything else kept.
pub fn scaled_machine_toml(nr_cpus: u32) -> Result<String, String> {
    if nr_cpus < 8 || nr_cpus % 8 != 0 || nr_cpus > 8192 {
        return Err(format!("bench --scaling: {nr_cpus} CPUs: expected a multiple of 8 in 8..=8192"));
    }
    let text = crate::hw::preset_text("epyc-7763-2s").ok_or("the epyc-7763-2s preset is missing")?;
    let cores = nr_cpus / 2;
    let (sockets, cores_per_socket) = if cores <= 64 { (1, cores) } else { (cores / 64, 64) };
    let cores_per_llc = cores_per_socket.min(8);
    let mut out = String::with_capacity(text.len());
    let mut named = false;
    for line in text.lines() {
        let key = line.split('=').next().unwrap_or("").trim();
        let replaced = match key {
            "name" if !named => {
                named = true;
                Some(format!("name = \"scaled-epyc-{nr_cpus}\""))
            }
            "sockets" => Some(format!("sockets = {sockets}")),
            "cores_per_socket" => Some(format!("cores_per_socket = {cores_per_socket}")),
            "cores_per_llc" => Some(format!("cores_per_llc = {cores_per_llc}")),
            _ => None,
        };
        out.push_str(replaced.as_deref().unwrap_or(line));
        out.push('\n');
    }
    Ok(out)
}

/// The run of `workload` on a machine of `nr_cpus` CPUs read from `machine_file`: sized so
/// the work per CPU stays about the same (quiet machine, no background activity).
pub fn scaled_spec(workload: &str, nr_cpus: u32, machine_file: &str) -> Result<RunSpec, String> {
    // The sizes divide the run's length, so 0 has no run (and `--scaling-child` takes any number).
    if nr_cpus == 0 {
        return Err("bench --scaling-child: 0 CPUs: expected at least 1".into());
    }
    let mut s = RunSpec::new(workload);
    s.machine = machine_file.into();
    s.background = Some("none".into());
    let pairs: Vec<(String, String)> = match workload {
        // 100 ms of an idle machine: ticks, idle entries and exits, nohz (for its memory).
        "idle" => Vec::new(),
        // CPU0 sends 20,000 waiting calls to CPU1.
        "ipistorm" => ["numipi=20000", "single=1", "offset=1", "cpulist=0", "wait=1"]
            .iter()
            .map(|kv| {
                let (k, v) = kv.split_once('=').expect("key=value");
                (k.to_string(), v.to_string())
            })
            .collect(),
        // One process per CPU looping nanosleep(1 us), for 4096/N ms (about 2M actions at
        // every size).
        "nanosleep" => vec![
            ("procs".into(), nr_cpus.to_string()),
            ("ns".into(), "1000".into()),
            ("duration_ms".into(), (4096 / nr_cpus).max(1).to_string()),
        ],
        // perf bench sched messaging, one group (40 processes) per 8 CPUs, 8192/N loops (about
        // 4M actions at every size).
        "hackbench" => vec![
            ("tool".into(), "perf".into()),
            ("args".into(), format!("-p -g {} -l {}", nr_cpus / 8, (8192 / nr_cpus).max(1))),
        ],
        other => return Err(format!("bench --scaling: unknown workload {other}")),
    };
    if workload == "idle" {
        s.limit_ns = 100_000_000;
    }
    s.params = Params::from_pairs(pairs, "bench --scaling");
    Ok(s)
}

/// The peak resident set of this process, kB (`VmHWM` of /proc/self/status; 0 if unknown).
fn vm_hwm_kb() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1).and_then(|v| v.parse().ok()))
        })
        .unwrap_or(0)
}

/// CPU time (user + system) this process has used, seconds: unlike the wall clock it does not
/// count time the process waited for a CPU on a shared machine.
fn cpu_time_s() -> f64 {
    // SAFETY: getrusage only writes the struct it is given.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) } != 0 {
        return 0.0;
    }
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 * 1e-6;
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

/// The child: one run, its build (machine, kernel, workload start) and its run timed apart
/// (CPU time, and the run's wall time), then one JSON line on stdout.
pub fn child(workload: &str, nr_cpus: u32, machine_file: &str) -> Result<(), String> {
    let spec = scaled_spec(workload, nr_cpus, machine_file)?;
    let c0 = cpu_time_s();
    let mut k = run::build(&spec)?;
    let c1 = cpu_time_s();
    let t = Instant::now();
    k.run(spec.limit_ns);
    let wall = t.elapsed().as_secs_f64();
    let c2 = cpu_time_s();
    let (build, cpu) = (c1 - c0, c2 - c1);
    let line = serde_json::json!({
        "workload": workload,
        "cpus": nr_cpus,
        "actions": k.actions,
        "build_s": build,
        "cpu_s": cpu,
        "wall_s": wall,
        "vmhwm_kb": vm_hwm_kb(),
    });
    let mut out = std::io::stdout().lock();
    writeln!(out, "{line}").map_err(|e| format!("bench --scaling: {e}"))
}

/// One measured (size, workload): medians over `runs` children.
struct Sample {
    actions: u64,
    build_s: f64,
    cpu_s: f64,
    wall_s: f64,
    vmhwm_kb: u64,
}

fn run_child(exe: &std::path::Path, workload: &str, nr_cpus: u32, machine_file: &str) -> Result<Sample, String> {
    let out = std::process::Command::new(exe)
        .args(["bench", "--scaling-child", workload, &nr_cpus.to_string(), machine_file])
        .output()
        .map_err(|e| format!("bench --scaling: cannot run {}: {e}", exe.display()))?;
    if !out.status.success() {
        return Err(format!(
            "bench --scaling: {workload} on {nr_cpus} CPUs failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    let v: serde_json::Value = serde_json::from_slice(&out.stdout)
        .map_err(|e| format!("bench --scaling: {workload} on {nr_cpus} CPUs: bad child output: {e}"))?;
    Ok(Sample {
        actions: v["actions"].as_u64().unwrap_or(0),
        build_s: v["build_s"].as_f64().unwrap_or(0.0),
        cpu_s: v["cpu_s"].as_f64().unwrap_or(0.0),
        wall_s: v["wall_s"].as_f64().unwrap_or(0.0),
        vmhwm_kb: v["vmhwm_kb"].as_u64().unwrap_or(0),
    })
}

/// A run's CPU time per action, ns (0 without actions).
fn ns_per_action(s: &Sample) -> f64 {
    if s.actions == 0 {
        0.0
    } else {
        s.cpu_s * 1e9 / s.actions as f64
    }
}

/// The growth of the cost per action from `lo` to `hi`, round by round (the two samples of a
/// round ran minutes apart at most, so a host whose speed drifts moves both): the median of
/// the rounds' ratios, and their least and greatest. `None` if a round has no cost at `lo`.
fn paired_growth(lo: &[f64], hi: &[f64]) -> Option<(f64, f64, f64)> {
    let mut r: Vec<f64> = lo.iter().zip(hi).map(|(&a, &b)| if a > 0.0 { b / a } else { f64::NAN }).collect();
    if r.is_empty() || r.iter().any(|x| x.is_nan()) {
        return None;
    }
    r.sort_by(f64::total_cmp);
    Some((r[r.len() / 2], r[0], r[r.len() - 1]))
}

/// `schedsim bench --scaling`: the table of every size and workload, then per workload how
/// much the cost per action grew from the smallest to the largest machine.
///
/// The runs go in rounds: each round runs every size and workload once, so the smallest and
/// largest machines of a round run minutes apart at most, and the growth is the median of the
/// rounds' own ratios. On a shared host whose caches and memory slow down and recover over
/// minutes, that pairing keeps the growth figure from comparing a quiet moment with a busy one.
pub fn scaling(runs: usize, sizes: &[u32]) -> Result<String, String> {
    let exe = std::env::current_exe().map_err(|e| format!("bench --scaling: cannot find this binary: {e}"))?;
    let dir = std::env::temp_dir().join(format!("schedsim-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| format!("bench --scaling: {}: {e}", dir.display()))?;
    // samples[size][workload]: one per round.
    let mut samples: Vec<Vec<Vec<Sample>>> = Vec::new();
    let result = (|| -> Result<(), String> {
        let mut files = Vec::new();
        for &n in sizes {
            let file = dir.join(format!("scaled-epyc-{n}.toml"));
            std::fs::write(&file, scaled_machine_toml(n)?)
                .map_err(|e| format!("bench --scaling: {}: {e}", file.display()))?;
            files.push(file.to_string_lossy().into_owned());
            samples.push(WORKLOADS.iter().map(|_| Vec::new()).collect());
        }
        for _ in 0..runs {
            for (si, &n) in sizes.iter().enumerate() {
                for (wi, &w) in WORKLOADS.iter().enumerate() {
                    samples[si][wi].push(run_child(&exe, w, n, &files[si])?);
                }
            }
        }
        Ok(())
    })();
    let _ = std::fs::remove_dir_all(&dir);
    result?;
    let mut rows = Vec::new();
    for (si, &n) in sizes.iter().enumerate() {
        for (wi, &w) in WORKLOADS.iter().enumerate() {
            let mut v: Vec<&Sample> = samples[si][wi].iter().collect();
            v.sort_by(|a, b| a.cpu_s.total_cmp(&b.cpu_s));
            let s = v[v.len() / 2];
            let rss = v.iter().map(|s| s.vmhwm_kb).max().unwrap_or(0);
            rows.push(vec![
                n.to_string(),
                w.to_string(),
                s.actions.to_string(),
                format!("{:.3}", s.build_s),
                format!("{:.3}", s.cpu_s),
                format!("{:.3}", s.wall_s),
                format!("{:.1}", ns_per_action(s)),
                format!("{:.1}", rss as f64 / 1024.0),
            ]);
        }
    }
    let header: Vec<String> =
        ["CPUs", "workload", "actions", "build cpu(s)", "run cpu(s)", "run wall(s)", "ns/action", "peak RSS (MB)"]
            .iter()
            .map(|s| s.to_string())
            .collect();
    let mut text = format!(
        "schedsim bench --scaling: the EPYC 7763 preset scaled to {} CPUs, quiet machine (median of {runs} \
         rounds, each run in its own process)\n\n",
        sizes.iter().map(|n| n.to_string()).collect::<Vec<_>>().join(", ")
    );
    text.push_str(&crate::report::render_grid(&header, &rows));
    // A growth line needs two sizes: with one, it would only compare the size with itself.
    let &[lo, .., hi] = sizes else { return Ok(text) };
    text.push_str(&format!(
        "\nrun cost per action, {hi} CPUs / {lo} CPUs (the median of the rounds' own ratios; \
         idle: too few actions to say):\n"
    ));
    let last = sizes.len() - 1;
    for (wi, &w) in WORKLOADS.iter().enumerate().filter(|(_, &w)| w != "idle") {
        let cost = |si: usize| samples[si][wi].iter().map(ns_per_action).collect::<Vec<_>>();
        if let Some((med, min, max)) = paired_growth(&cost(0), &cost(last)) {
            if runs > 1 {
                text.push_str(&format!("  {w:<10} {med:.2}x (rounds {min:.2}x to {max:.2}x)\n"));
            } else {
                text.push_str(&format!("  {w:<10} {med:.2}x\n"));
            }
        }
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The growth is taken round by round and the median of those ratios reported, with their
    /// range; a round without a cost at the small size gives no figure.
    #[test]
    fn growth_is_the_median_of_paired_ratios() {
        assert_eq!(paired_growth(&[10.0, 20.0, 40.0], &[30.0, 40.0, 40.0]), Some((2.0, 1.0, 3.0)));
        // The medians of each size taken apart (50 and 100) would say 2x; the rounds say 4x
        // and 2x.
        assert_eq!(paired_growth(&[10.0, 50.0], &[40.0, 100.0]), Some((4.0, 2.0, 4.0)));
        assert_eq!(paired_growth(&[0.0, 10.0], &[5.0, 5.0]), None);
        assert_eq!(paired_growth(&[], &[]), None);
    }

    #[test]
    fn scaled_machines_have_the_asked_size_and_the_presets_costs() {
        for &n in SIZES {
            let text = scaled_machine_toml(n).unwrap();
            let m = crate::hw::machine_from_toml(&text, "scaled").unwrap();
            assert_eq!(m.topo.nr_cpus, n);
            assert_eq!(m.name, format!("scaled-epyc-{n}"));
            assert_eq!(m.idle_states.len(), crate::hw::preset("epyc-7763-2s").unwrap().idle_states.len());
        }
        assert!(scaled_machine_toml(12).is_err());
    }

    #[test]
    fn every_scaled_run_is_a_valid_spec() {
        let dir = std::env::temp_dir().join(format!("schedsim-bench-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("m.toml");
        std::fs::write(&file, scaled_machine_toml(64).unwrap()).unwrap();
        for &w in WORKLOADS {
            let mut s = scaled_spec(w, 64, file.to_str().unwrap()).unwrap();
            // Validate and build without running the whole thing.
            s.limit_ns = 100_000;
            let r = run::execute(&s).unwrap();
            assert!(r.actions > 0, "{w}");
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// A size of 0 (possible through `--scaling-child`, which takes any number) is an error
    /// for every workload, not a division by zero.
    #[test]
    fn a_scaled_run_of_no_cpus_is_refused() {
        for &w in WORKLOADS {
            let e = scaled_spec(w, 0, "epyc-7763-2s").unwrap_err();
            assert!(e.contains("0 CPUs"), "{w}: {e}");
        }
    }

    /// Prefetching is a host hint only: a machine large enough to prefetch runs exactly as
    /// with prefetching turned off (same actions, times and counters).
    #[test]
    fn prefetching_changes_nothing() {
        let n = crate::linux::PREFETCH_MIN_CPUS;
        let dir = std::env::temp_dir().join(format!("schedsim-prefetch-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("m.toml");
        std::fs::write(&file, scaled_machine_toml(n).unwrap()).unwrap();
        let digest = |prefetch: bool| {
            let mut s = scaled_spec("nanosleep", n, file.to_str().unwrap()).unwrap();
            s.limit_ns = 6_000_000;
            let mut k = crate::run::build(&s).unwrap();
            assert!(k.prefetch, "a {n}-CPU machine prefetches");
            k.prefetch = prefetch;
            k.run(s.limit_ns);
            (k.actions, k.now, k.stats.phase_ns.clone(), format!("{:?}", k.stats))
        };
        let (on, off) = (digest(true), digest(false));
        std::fs::remove_dir_all(&dir).ok();
        assert!(on.0 > 50_000, "the run did some work: {} actions", on.0);
        assert_eq!(on, off);
    }
}
