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

use crate::run;
use crate::spec::RunSpec;
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
        return Err(format!("the EPYC 7763 preset scaled to {nr_cpus} CPUs: expected a multiple of 8 in 8..=8192"));
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

/// The longest run `--scaling-child` takes, in multiples of the standard length.
pub const MAX_LENGTH: u32 = 64;

/// The run of `workload` on a machine of `nr_cpus` CPUs read from `machine_file`: sized so
/// the work per CPU stays about the same (quiet machine, no background activity), `length`
/// times the standard length (the same start, then `length` times the work: a run of length 2
/// less one of length 1 is the steady state, without build, start-up or exit).
pub fn scaled_spec(workload: &str, nr_cpus: u32, machine_file: &str, length: u32) -> Result<RunSpec, String> {
    // The sizes divide the run's length, so 0 has no run (and `--scaling-child` takes any number).
    if nr_cpus == 0 {
        return Err("bench --scaling-child: 0 CPUs: expected at least 1".into());
    }
    if !(1..=MAX_LENGTH).contains(&length) {
        return Err(format!("bench --scaling-child: length {length}: expected 1..={MAX_LENGTH}"));
    }
    let mut s = RunSpec::new(workload);
    s.machine = machine_file.into();
    s.background = Some("none".into());
    let pairs: Vec<(String, String)> = match workload {
        // 100 ms of an idle machine: ticks, idle entries and exits, nohz (for its memory).
        "idle" => Vec::new(),
        // CPU0 sends 20,000 waiting calls to CPU1.
        "ipistorm" => [("numipi", 20000 * length), ("single", 1), ("offset", 1), ("cpulist", 0), ("wait", 1)]
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        // One process per CPU looping nanosleep(1 us), for 4096/N ms (about 2M actions at
        // every size).
        "nanosleep" => vec![
            ("procs".into(), nr_cpus.to_string()),
            ("ns".into(), "1000".into()),
            ("duration_ms".into(), ((4096 / nr_cpus).max(1) * length).to_string()),
        ],
        // perf bench sched messaging, one group (40 processes) per 8 CPUs, 8192/N loops (about
        // 4M actions at every size).
        "hackbench" => vec![
            ("tool".into(), "perf".into()),
            ("args".into(), format!("-p -g {} -l {}", (nr_cpus / 8).max(1), (8192 / nr_cpus).max(1) * length)),
        ],
        other => return Err(format!("bench --scaling: unknown workload {other}")),
    };
    if workload == "idle" {
        s.limit_ns = 100_000_000 * u64::from(length);
    }
    s.params = Params::from_pairs(pairs, "bench --scaling");
    Ok(s)
}

/// The peak resident set of this process, kB (`VmHWM` of /proc/self/status; 0 if unknown).
pub(crate) fn vm_hwm_kb() -> u64 {
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
pub(crate) fn cpu_time_s() -> f64 {
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
pub fn child(workload: &str, nr_cpus: u32, machine_file: &str, length: u32) -> Result<(), String> {
    let spec = scaled_spec(workload, nr_cpus, machine_file, length)?;
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

fn run_child(
    exe: &std::path::Path,
    workload: &str,
    nr_cpus: u32,
    machine_file: &str,
    length: u32,
) -> Result<Sample, String> {
    let out = std::process::Command::new(exe)
        .args(["bench", "--scaling-child", workload, &nr_cpus.to_string(), machine_file, &length.to_string()])
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

/// The steady-state cost per action, ns: the CPU time of the actions a run of twice the length
/// (`long`) adds to the standard one (`short`), per added action. Build, workload start-up and
/// exit are in both runs and cancel. `NaN` if the longer run adds no actions.
fn steady_ns_per_action(short: &Sample, long: &Sample) -> f64 {
    if long.actions <= short.actions {
        return f64::NAN;
    }
    (long.cpu_s - short.cpu_s) * 1e9 / (long.actions - short.actions) as f64
}

/// The median of `v`, the mean of the middle two for an even count (`NaN` if it is empty or
/// holds a `NaN`). Also used by `examples/host_floor.rs`.
pub fn median(mut v: Vec<f64>) -> f64 {
    if v.is_empty() || v.iter().any(|x| x.is_nan()) {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 0 {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    } else {
        v[n / 2]
    }
}

/// The growth of the cost per action from `lo` to `hi`, round by round (the two samples of a
/// round ran minutes apart at most, so a host whose speed drifts moves both): the median of
/// the rounds' ratios, and their least and greatest. `None` if a round has no cost at `lo`.
fn paired_growth(lo: &[f64], hi: &[f64]) -> Option<(f64, f64, f64)> {
    let r: Vec<f64> = lo.iter().zip(hi).map(|(&a, &b)| if a > 0.0 { b / a } else { f64::NAN }).collect();
    let med = median(r.clone());
    if med.is_nan() {
        return None;
    }
    let (min, max) = r.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &x| (lo.min(x), hi.max(x)));
    Some((med, min, max))
}

/// `schedsim bench --scaling`: the table of every size and workload, then per workload how
/// much the cost per action grew from the smallest to the largest machine.
///
/// The runs go in rounds: each round runs every size and workload once, so the smallest and
/// largest machines of a round run minutes apart at most, and the growth is the median of the
/// rounds' own ratios. On a shared host whose caches and memory slow down and recover over
/// minutes, that pairing keeps the growth figure from comparing a quiet moment with a busy one.
///
/// With `steady`, each round also runs every size and workload at twice the length, right
/// after the standard run, and the table and growth lines add the steady-state cost per action
/// ([`steady_ns_per_action`]): what an action costs once the workload runs, without the
/// machine's build, the workload's start-up (forks, first placements) and its exit.
pub fn scaling(runs: usize, sizes: &[u32], steady: bool) -> Result<String, String> {
    let exe = std::env::current_exe().map_err(|e| format!("bench --scaling: cannot find this binary: {e}"))?;
    let dir = std::env::temp_dir().join(format!("schedsim-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| format!("bench --scaling: {}: {e}", dir.display()))?;
    // samples[size][workload]: one per round; longs: the same at twice the length (`steady`).
    let mut samples: Vec<Vec<Vec<Sample>>> = Vec::new();
    let mut longs: Vec<Vec<Vec<Sample>>> = Vec::new();
    let result = (|| -> Result<(), String> {
        let mut files = Vec::new();
        for &n in sizes {
            let file = dir.join(format!("scaled-epyc-{n}.toml"));
            std::fs::write(&file, scaled_machine_toml(n)?)
                .map_err(|e| format!("bench --scaling: {}: {e}", file.display()))?;
            files.push(file.to_string_lossy().into_owned());
            samples.push(WORKLOADS.iter().map(|_| Vec::new()).collect());
            longs.push(WORKLOADS.iter().map(|_| Vec::new()).collect());
        }
        for _ in 0..runs {
            for (si, &n) in sizes.iter().enumerate() {
                for (wi, &w) in WORKLOADS.iter().enumerate() {
                    samples[si][wi].push(run_child(&exe, w, n, &files[si], 1)?);
                    if steady {
                        longs[si][wi].push(run_child(&exe, w, n, &files[si], 2)?);
                    }
                }
            }
        }
        Ok(())
    })();
    let _ = std::fs::remove_dir_all(&dir);
    result?;
    // Per size and workload, each round's steady-state cost (empty without `steady`).
    let steady_of = |si: usize, wi: usize| -> Vec<f64> {
        samples[si][wi].iter().zip(&longs[si][wi]).map(|(a, b)| steady_ns_per_action(a, b)).collect()
    };
    let mut rows = Vec::new();
    for (si, &n) in sizes.iter().enumerate() {
        for (wi, &w) in WORKLOADS.iter().enumerate() {
            let mut v: Vec<&Sample> = samples[si][wi].iter().collect();
            v.sort_by(|a, b| a.cpu_s.total_cmp(&b.cpu_s));
            let s = v[v.len() / 2];
            let rss = v.iter().map(|s| s.vmhwm_kb).max().unwrap_or(0);
            let mut row = vec![
                n.to_string(),
                w.to_string(),
                s.actions.to_string(),
                format!("{:.3}", s.build_s),
                format!("{:.3}", s.cpu_s),
                format!("{:.3}", s.wall_s),
                format!("{:.1}", ns_per_action(s)),
            ];
            if steady {
                let m = median(steady_of(si, wi));
                row.push(if m.is_nan() { "-".into() } else { format!("{m:.1}") });
            }
            row.push(format!("{:.1}", rss as f64 / 1024.0));
            rows.push(row);
        }
    }
    let mut header: Vec<String> =
        ["CPUs", "workload", "actions", "build cpu(s)", "run cpu(s)", "run wall(s)", "ns/action", "peak RSS (MB)"]
            .iter()
            .map(|s| s.to_string())
            .collect();
    if steady {
        header.insert(7, "steady ns/action".into());
    }
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
        if let Some(g) = paired_growth(&cost(0), &cost(last)) {
            text.push_str(&growth_line(w, g, runs));
        }
    }
    if steady {
        text.push_str(&format!(
            "\nsteady-state cost per action, {hi} CPUs / {lo} CPUs (the actions a run twice as long \
             adds: no build, start-up or exit):\n"
        ));
        for (wi, &w) in WORKLOADS.iter().enumerate().filter(|(_, &w)| w != "idle") {
            if let Some(g) = paired_growth(&steady_of(0, wi), &steady_of(last, wi)) {
                text.push_str(&growth_line(w, g, runs));
            }
        }
    }
    Ok(text)
}

/// One workload's growth line: the median of the rounds' ratios, and their range when there
/// are several rounds.
fn growth_line(w: &str, (med, min, max): (f64, f64, f64), runs: usize) -> String {
    if runs > 1 {
        format!("  {w:<10} {med:.2}x (rounds {min:.2}x to {max:.2}x)\n")
    } else {
        format!("  {w:<10} {med:.2}x\n")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The growth is taken round by round and the median of those ratios reported, with their
    /// range; a round without a cost at the small size gives no figure.
    #[test]
    fn growth_is_the_median_of_paired_ratios() {
        assert_eq!(paired_growth(&[10.0, 20.0, 40.0], &[30.0, 40.0, 40.0]), Some((2.0, 1.0, 3.0)));
        // The medians of each size taken apart would say 2x; the rounds say 4x and 2x, whose
        // median is their mean.
        assert_eq!(paired_growth(&[10.0, 50.0], &[40.0, 100.0]), Some((3.0, 2.0, 4.0)));
        assert_eq!(paired_growth(&[0.0, 10.0], &[5.0, 5.0]), None);
        assert_eq!(paired_growth(&[], &[]), None);
    }

    /// The steady-state cost is the added CPU time over the added actions; a longer run that
    /// adds no actions has none, and a median over rounds with one is none either.
    #[test]
    fn steady_cost_is_the_second_runs_extra_time_per_extra_action() {
        let s = |actions, cpu_s| Sample { actions, build_s: 0.5, cpu_s, wall_s: 0.0, vmhwm_kb: 0 };
        // 1M actions in 0.3 s with start-up, 1M more in 0.05 s: 50 ns each, not 175.
        assert!((steady_ns_per_action(&s(1_000_000, 0.3), &s(2_000_000, 0.35)) - 50.0).abs() < 1e-6);
        assert!(steady_ns_per_action(&s(32, 0.0), &s(32, 0.0)).is_nan());
        assert_eq!(median(vec![3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(vec![4.0, 1.0, 3.0, 2.0]), 2.5);
        assert!(median(vec![1.0, f64::NAN]).is_nan());
        assert!(median(Vec::new()).is_nan());
    }

    /// A run of length 2 has the same start as one of length 1 and twice the work after it.
    #[test]
    fn a_longer_scaled_run_only_lengthens_the_work() {
        for &w in WORKLOADS {
            let (a, b) = (scaled_spec(w, 64, "m.toml", 1).unwrap(), scaled_spec(w, 64, "m.toml", 2).unwrap());
            assert_eq!((&a.machine, a.seed, &a.background), (&b.machine, b.seed, &b.background), "{w}");
            for key in ["procs", "ns", "tool", "single", "offset", "cpulist", "wait"] {
                assert_eq!(a.params.get(key), b.params.get(key), "{w}: {key}");
            }
            match w {
                "idle" => assert_eq!(b.limit_ns, 2 * a.limit_ns),
                "ipistorm" => assert_eq!(b.params.get("numipi"), Some("40000")),
                "nanosleep" => assert_eq!(b.params.get("duration_ms"), Some("128")),
                _ => assert_eq!(b.params.get("args"), Some("-p -g 8 -l 256")),
            }
        }
        assert!(scaled_spec("nanosleep", 64, "m.toml", 0).is_err());
        assert!(scaled_spec("nanosleep", 64, "m.toml", MAX_LENGTH + 1).is_err());
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
            let mut s = scaled_spec(w, 64, file.to_str().unwrap(), 1).unwrap();
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
            let e = scaled_spec(w, 0, "epyc-7763-2s", 1).unwrap_err();
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
            let mut s = scaled_spec("nanosleep", n, file.to_str().unwrap(), 1).unwrap();
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
