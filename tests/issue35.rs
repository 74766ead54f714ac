//! Issue 35, "nothing lost, nothing escapes": each example of the issue as a test named after
//! it. Runs the release or debug binary as a user would.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_schedsim")
}

fn run(args: &[&str]) -> Output {
    Command::new(bin()).args(args).stdout(Stdio::piped()).output().expect("schedsim runs")
}

fn dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("schedsim-issue35-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn write(d: &Path, name: &str, text: &str) -> PathBuf {
    let p = d.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// `args` exits 2 with a one-line error containing every one of `expect`.
fn rejected(args: &[&str], expect: &[&str]) -> String {
    let o = run(args);
    let err = String::from_utf8_lossy(&o.stderr).to_string();
    assert!(!err.contains("panicked"), "{args:?} panicked: {err}");
    assert_eq!(o.status.code(), Some(2), "{args:?}: exit {:?}, stderr: {err}", o.status.code());
    assert_eq!(err.trim_end().lines().filter(|l| l.starts_with("schedsim: error")).count(), 1, "{err}");
    for e in expect {
        assert!(err.contains(e), "{args:?}: expected {e:?} in: {err}");
    }
    err
}

fn ok(args: &[&str]) -> String {
    let o = run(args);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{args:?}: exit {:?}, stderr: {err}", o.status.code());
    String::from_utf8_lossy(&o.stdout).to_string()
}

/// The summary's row count of rt-app thread `t-0`.
fn rows_of(out: &str) -> u64 {
    let line = out.lines().find(|l| l.trim_start().starts_with("t-0")).unwrap_or_else(|| panic!("no t-0 in {out}"));
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

#[test]
fn unbounded_memory_from_a_68_byte_rtapp_file() {
    let d = dir("zero-loop");
    let f = write(&d, "zero.json", r#"{"global": {"duration": 5}, "tasks": {"t": {"loop": -1, "run": 0}}}"#);
    // The loop spins as rt-app would: every phase costs rt-app's own clocks and log row, so
    // 100 ms hold at most 100 ms / 424 ns phases.
    let out = ok(&["run", "--rtapp", s(&f), "--quiet", "--limit-ms", "100"]);
    let rows = rows_of(&out);
    assert!(rows > 100_000 && rows <= 100_000_000 / 424 + 1, "{rows} rows in 100 ms");
    // Without logging a phase costs only the clocks; when the rows are kept (--log-dir) the
    // estimate counts the rows it may keep and refuses the 5 s run before it starts.
    let f = write(
        &d,
        "nolog.json",
        r#"{"global": {"duration": 5, "log_size": "disable"}, "tasks": {"t": {"loop": -1, "run": 0}}}"#,
    );
    rejected(
        &["run", "--rtapp", s(&f), "--quiet", "--log-dir", s(&d)],
        &["of memory", "log rows", "less simulated time"],
    );
}

#[test]
fn zero_time_loops_of_every_event_make_progress() {
    let d = dir("zero-events");
    for ev in [
        r#""yield": """#,
        r#""lock": "m", "unlock": "m""#,
        r#""signal": "c""#,
        r#""resume": "x""#,
        r#""mem": 0"#,
        r#""iorun": 0"#,
        r#""fork": "u""#,
        r#""sleep": 0"#,
    ] {
        let text = format!(
            r#"{{"global": {{"duration": 1}}, "tasks": {{"t": {{"loop": -1, {ev}}}, "u": {{"instance": 0, "loop": 1, "run": 1}}}}}}"#
        );
        let f = write(&d, "ev.json", &text);
        let out = ok(&["run", "--rtapp", s(&f), "--quiet", "--limit-ms", "20"]);
        let rows = rows_of(&out);
        assert!(rows > 0 && rows <= 20_000_000 / 424 + 1, "{ev}: {rows} rows in 20 ms");
    }
}

#[test]
fn rtapp_duration_4000_is_refused() {
    let d = dir("duration");
    let f = write(&d, "d.json", r#"{"global": {"duration": 4000}, "tasks": {"t": {"loop": 1, "run": 10}}}"#);
    rejected(&["run", "--rtapp", s(&f), "--quiet"], &["d.json:1: global.duration", "4000 s is out of range", "3600"]);
    let f = write(&d, "d.json", r#"{"global": {"duration": 3600}, "tasks": {"t": {"loop": 1, "run": 10}}}"#);
    ok(&["run", "--rtapp", s(&f), "--quiet"]);
}

#[test]
fn rtapp_log_basename_escapes_log_dir() {
    let d = dir("escape");
    let logs = d.join("logs");
    std::fs::create_dir_all(&logs).unwrap();
    for base in ["../escaped", "/tmp/escaped", "a/b"] {
        let text = format!(r#"{{"global": {{"log_basename": "{base}"}}, "tasks": {{"t": {{"loop": 2, "run": 10}}}}}}"#);
        let f = write(&d, "e.json", &text);
        rejected(
            &["run", "--rtapp", s(&f), "--quiet", "--log-dir", s(&logs)],
            &["global.log_basename", "contains '/'"],
        );
    }
    let f = write(&d, "t.json", r#"{"tasks": {"../t": {"loop": 2, "run": 10}}}"#);
    rejected(&["run", "--rtapp", s(&f), "--quiet", "--log-dir", s(&logs)], &["task name contains '/'"]);
    assert_eq!(std::fs::read_dir(&d).unwrap().count(), 3, "only e.json, t.json and logs/");
    let f = write(&d, "fine.json", r#"{"global": {"log_basename": "..x"}, "tasks": {"t": {"loop": 2, "run": 10}}}"#);
    ok(&["run", "--rtapp", s(&f), "--quiet", "--log-dir", s(&logs)]);
    assert!(logs.join("..x-t-0.log").is_file());
}

#[test]
fn a_missing_log_dir_is_an_error_before_the_run() {
    let d = dir("logdir");
    let f = write(&d, "r.json", r#"{"global": {"duration": 1}, "tasks": {"t": {"loop": -1, "run": 1000}}}"#);
    let missing = d.join("missing");
    let t0 = std::time::Instant::now();
    rejected(&["run", "--rtapp", s(&f), "--quiet", "--log-dir", s(&missing)], &["--log-dir", "not a directory"]);
    assert!(t0.elapsed().as_secs() < 20);
    rejected(&["run", "--rtapp", s(&f), "--quiet", "--log-dir", s(&f)], &["--log-dir", "not a directory"]);
}

#[test]
fn sweep_out_without_a_final_newline_is_not_truncated() {
    let d = dir("sweep-out");
    let grid = write(
        &d,
        "grid.toml",
        "kernels = [\"v6.10\"]\nmachines = [\"smp-4\"]\nseeds = 1\nlimit_ms = 1\nbackground = \"none\"\n[[run]]\nworkload = \"idle\"",
    );
    let before = std::fs::read(&grid).unwrap();
    // A grid given as its own --out: refused with its name, left whole.
    rejected(&["sweep", s(&grid), "--out", s(&grid)], &["grid.toml:", "not a line of a schedsim sweep"]);
    assert_eq!(std::fs::read(&grid).unwrap(), before);
    // Any other file that is not a sweep's JSONL: refused, untouched.
    let notes = write(&d, "notes.jsonl", "{\"a\": 1}\nsome text");
    rejected(&["sweep", s(&grid), "--out", s(&notes)], &["notes.jsonl:1: not a line of a schedsim sweep"]);
    assert_eq!(std::fs::read_to_string(&notes).unwrap(), "{\"a\": 1}\nsome text");
    // A sweep's output whose last line was cut short: the line is ended, not truncated, the run
    // it was is run again, and merge reads the whole lines.
    let out = d.join("out.jsonl");
    ok(&["sweep", s(&grid), "--out", s(&out)]);
    let whole = std::fs::read_to_string(&out).unwrap();
    assert_eq!(whole.lines().count(), 1);
    let cut = &whole[..whole.len() / 2];
    std::fs::write(&out, cut).unwrap();
    ok(&["sweep", s(&grid), "--out", s(&out)]);
    let now = std::fs::read_to_string(&out).unwrap();
    assert!(now.starts_with(cut), "the interrupted line is kept");
    assert_eq!(now.lines().count(), 2);
    assert!(now.ends_with('\n'));
    ok(&["merge", s(&out)]);
}

#[test]
fn run_trace_over_its_scenario_or_machine_file_is_refused() {
    let d = dir("clobber");
    let sc = write(&d, "my.toml", "workload = \"idle\"\nlimit_ms = 1\nbackground = \"none\"\nmachine = \"smp-4\"\n");
    let before = std::fs::read(&sc).unwrap();
    rejected(&["run", "--scenario", s(&sc), "--trace", s(&sc), "--quiet"], &["same file as the scenario file"]);
    let rel = d.join("./sub/../my.toml");
    std::fs::create_dir_all(d.join("sub")).unwrap();
    rejected(&["run", "--scenario", s(&sc), "--html", s(&rel), "--quiet"], &["same file as the scenario file"]);
    assert_eq!(std::fs::read(&sc).unwrap(), before);
    let m = d.join("m.toml");
    let o = ok(&["list", "--machine", "smp-4"]);
    std::fs::write(&m, o).unwrap();
    let before = std::fs::read(&m).unwrap();
    rejected(
        &["run", "idle", "--machine", s(&m), "--html", s(&m), "--quiet", "--limit-ms", "1"],
        &["same file as the machine file"],
    );
    assert_eq!(std::fs::read(&m).unwrap(), before);
    let x = d.join("x.html");
    rejected(
        &["run", "idle", "--trace", s(&x), "--html", s(&x), "--quiet", "--limit-ms", "1"],
        &["--trace", "--html", "are the same file"],
    );
    assert!(!x.exists());
}

/// Wait (at most 120 s) until `ready` holds, polling every 10 ms.
fn wait_until(what: &str, mut ready: impl FnMut() -> bool) {
    let t0 = std::time::Instant::now();
    while !ready() {
        assert!(t0.elapsed().as_secs() < 120, "timed out waiting for {what}");
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

fn kill(child: &std::process::Child, sig: libc::c_int) {
    // SAFETY: signalling our own child, which has not been waited for yet.
    assert_eq!(unsafe { libc::kill(child.id() as libc::pid_t, sig) }, 0);
}

fn names_in(d: &Path) -> Vec<String> {
    let mut v: Vec<String> =
        std::fs::read_dir(d).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    v.sort();
    v
}

#[test]
fn sigint_or_sigterm_during_trace_leaves_no_partial_files() {
    use std::os::unix::process::ExitStatusExt;
    let d = dir("leftovers");
    for (file, spill) in [
        ("t.txt", "t.txt.body.partial"),
        ("t.dat", "t.dat.pages.partial"),
        ("t.perfetto-trace", "t.perfetto-trace.partial"),
    ] {
        for sig in [libc::SIGINT, libc::SIGTERM] {
            let target = d.join(file);
            let mut cmd = Command::new(bin());
            cmd.args(["run", "ipistorm", "numipi=10000000", "--quiet", "--trace", s(&target)])
                .stdout(Stdio::null())
                .stderr(Stdio::piped());
            // A test run started in the background by a shell without job control inherits
            // SIGINT ignored, and schedsim rightly leaves an ignored signal alone: give the
            // child the default action, as an interactive run has.
            // SAFETY: only async-signal-safe calls between fork and exec.
            unsafe {
                std::os::unix::process::CommandExt::pre_exec(&mut cmd, || {
                    libc::signal(libc::SIGINT, libc::SIG_DFL);
                    Ok(())
                });
            }
            let child = cmd.spawn().unwrap();
            let part = d.join(spill);
            // Signalled while the run streams into its partial file.
            wait_until(spill, || std::fs::metadata(&part).is_ok_and(|m| m.len() > 0));
            kill(&child, sig);
            let o = child.wait_with_output().unwrap();
            assert_eq!(o.status.signal(), Some(sig), "{file}: {:?} {}", o.status, String::from_utf8_lossy(&o.stderr));
            assert!(names_in(&d).is_empty(), "{file}, signal {sig}: left {:?}", names_in(&d));
        }
    }
}

/// The whole lines of a sweep's output, by key; every key once.
fn sweep_lines(p: &Path) -> std::collections::BTreeMap<String, String> {
    let text = std::fs::read_to_string(p).unwrap();
    let mut m = std::collections::BTreeMap::new();
    for l in text.lines() {
        let Ok(v) = serde_json::from_str::<serde_json::Value>(l) else { continue };
        let k = v["key"].as_str().unwrap().to_string();
        assert!(m.insert(k.clone(), l.to_string()).is_none(), "run {k} twice in {}", p.display());
    }
    m
}

#[test]
fn an_interrupted_sweep_resumes_with_no_run_missing_or_repeated() {
    use std::os::unix::process::ExitStatusExt;
    let d = dir("sweep-kill");
    let grid = write(
        &d,
        "grid.toml",
        "kernels = [\"v6.10\"]\nmachines = [\"smp-4\"]\nseeds = 10\nlimit_ms = 50\nbackground = \"none\"\n\
         [[run]]\nworkload = \"ipistorm\"\nparams = { numipi = \"20000\" }\n",
    );
    let whole = d.join("whole.jsonl");
    ok(&["sweep", s(&grid), "--out", s(&whole), "--jobs", "2"]);
    let expected = sweep_lines(&whole);
    assert_eq!(expected.len(), 10);
    // Slurm and Kubernetes send SIGTERM, then SIGKILL; either may come at any line.
    for (n, (sig, after)) in
        [(libc::SIGTERM, 1), (libc::SIGKILL, 3), (libc::SIGTERM, 6), (libc::SIGKILL, 8)].into_iter().enumerate()
    {
        let out = d.join(format!("out{n}.jsonl"));
        let child = Command::new(bin())
            .args(["sweep", s(&grid), "--out", s(&out), "--jobs", "2"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let lines = || std::fs::read(&out).map_or(0, |b| b.iter().filter(|&&c| c == b'\n').count());
        wait_until("sweep lines", || lines() >= after);
        kill(&child, sig);
        let o = child.wait_with_output().unwrap();
        if o.status.signal().is_none() {
            // It finished first: nothing to resume.
            assert!(o.status.success());
        } else {
            assert_eq!(o.status.signal(), Some(sig));
        }
        if sig == libc::SIGTERM {
            let text = std::fs::read_to_string(&out).unwrap();
            assert!(text.is_empty() || text.ends_with('\n'), "SIGTERM left a cut line");
            assert!(text.lines().all(|l| serde_json::from_str::<serde_json::Value>(l).is_ok()));
        }
        let done = sweep_lines(&out).len();
        assert!(done >= after && done <= 10, "{done} lines after {after}");
        ok(&["sweep", s(&grid), "--out", s(&out), "--jobs", "2"]);
        assert_eq!(sweep_lines(&out), expected, "resumed after signal {sig} at {after} lines");
        ok(&["merge", s(&out)]);
    }
}

/// A sweep's line for merge tests: group `g`, key `k`, metric value and unit given as JSON.
fn sweep_line(k: &str, g: &str, value: &str, unit: &str) -> String {
    format!(
        r#"{{"key":"{k}","index":0,"group":"{g}","variant":"v6.10","metric":{{"name":"time","unit":"{unit}","lower_is_better":true,"value":{value}}},"result":{{"kernel":"v6.10","machine":"smp-4","counters":{{}}}}}}"#
    )
}

#[test]
fn merge_averages_lines_whose_metric_unit_differ() {
    let d = dir("merge-units");
    let a = write(&d, "a.jsonl", &format!("{}\n", sweep_line("k1", "g", "1.5", "ms")));
    let b = write(&d, "b.jsonl", &format!("{}\n", sweep_line("k2", "g", "1500", "us")));
    rejected(&["merge", s(&a), s(&b)], &["b.jsonl:1: group 'g' in unit 'us'", "a.jsonl:1 has it in 'ms'"]);
    // Other groups may use other units.
    let c = write(&d, "c.jsonl", &format!("{}\n", sweep_line("k3", "h", "1500", "us")));
    ok(&["merge", s(&a), s(&c)]);
}

#[test]
fn merge_counts_a_string_value_as_0() {
    let d = dir("merge-string");
    let a = write(
        &d,
        "a.jsonl",
        &format!("{}\n{}\n", sweep_line("k1", "g", "1.5", "ms"), sweep_line("k2", "g", "\"2.5\"", "ms")),
    );
    rejected(&["merge", s(&a)], &["a.jsonl:2: metric.value is \"2.5\", expected a number"]);
    let line = sweep_line("k1", "g", "1.5", "ms").replace(r#""counters":{}"#, r#""counters":{"ipis_sent":"many"}"#);
    let b = write(&d, "b.jsonl", &format!("{line}\n"));
    rejected(&["merge", s(&b)], &["b.jsonl:1: result.counters.ipis_sent is \"many\", expected a number"]);
}

#[test]
fn merge_or_validate_given_an_empty_or_non_trace_file() {
    let d = dir("no-data");
    let empty = write(&d, "empty.jsonl", "");
    rejected(&["merge", s(&empty)], &["empty.jsonl", "no sweep lines"]);
    for (name, text) in [("empty.txt", ""), ("junk.txt", "hello world\n# tracer: nop\n")] {
        let f = write(&d, name, text);
        rejected(&["validate", "pingpong", "--from-trace", s(&f)], &[name, "no trace record"]);
    }
}

#[test]
fn fixed_arity_arrays_refuse_other_lengths() {
    let d = dir("arity");
    let m = ok(&["list", "--machine", "smp-4"]);
    for (from, to) in [
        ("line_llc_ns = [21, 28]", "line_llc_ns = [21, 28, 30]"),
        ("line_llc_ns = [21, 28]", "line_llc_ns = []"),
        ("wake_ns = [60, 100]", "wake_ns = [60]"),
    ] {
        assert!(m.contains(from));
        let f = write(&d, "m.toml", &m.replacen(from, to, 1));
        let line = m.lines().position(|l| l.starts_with(from)).unwrap() + 1;
        rejected(
            &["run", "idle", "--machine", s(&f), "--quiet", "--limit-ms", "1"],
            &[&format!("m.toml:{line}:"), "expected an array of 2 numbers"],
        );
    }
}

#[test]
fn an_empty_list_where_one_is_required_is_an_error() {
    let d = dir("empty-list");
    for key in ["kernels", "machines"] {
        let g = write(&d, "g.toml", &format!("seeds = 1\nlimit_ms = 1\n{key} = []\n[[run]]\nworkload = \"idle\"\n"));
        rejected(&["sweep", s(&g), "--dry-run"], &["g.toml:3:", &format!("{key} = []: an empty list")]);
        let g = write(&d, "g.toml", &format!("seeds = 1\nlimit_ms = 1\n[[run]]\nworkload = \"idle\"\n{key} = []\n"));
        rejected(&["sweep", s(&g), "--dry-run"], &["g.toml:5:", &format!("{key} = []: an empty list")]);
    }
}

#[test]
fn unknown_names_inside_scenario_and_machine_files_name_file_and_line() {
    let d = dir("names");
    for (line, expect) in [
        ("workload = \"idlex\"", "unknown workload 'idlex'"),
        ("background = \"nonex\"", "unknown background 'nonex'"),
        ("kernel = \"v9.99\"", "unknown kernel 'v9.99'"),
        ("patches = [\"+deadbeef0000\"]", "unknown patch 'deadbeef0000'"),
        ("features = [\"NO_FOO\"]", "unknown sched feature 'NO_FOO'"),
        ("machine = \"nomachine\"", "unknown machine preset `nomachine`"),
        ("preempt = \"volunteer\"", "unknown preemption model 'volunteer'"),
    ] {
        let text = if line.starts_with("workload") {
            format!("limit_ms = 1\n\n{line}\n")
        } else {
            format!("workload = \"idle\"\nlimit_ms = 1\n{line}\n")
        };
        let f = write(&d, "s.toml", &text);
        rejected(&["run", "--scenario", s(&f), "--quiet"], &["s.toml:3:", expect]);
    }
    let f = write(&d, "p.toml", "workload = \"ipistorm\"\nlimit_ms = 1\n\n[params]\nnumipix = 3\n");
    rejected(&["run", "--scenario", s(&f), "--quiet"], &["p.toml:4: [params]", "unknown ipistorm parameter 'numipix'"]);
    let m = ok(&["list", "--machine", "smp-4"]);
    for (key, from, to, expect) in [
        ("background", "background = \"none\"", "background = \"nonex\"", "unknown background 'nonex'"),
        ("preempt", "preempt = \"voluntary\"", "preempt = \"volunteer\"", "unknown preemption model 'volunteer'"),
    ] {
        let line = m.lines().position(|l| l.starts_with(from)).unwrap() + 1;
        let f = write(&d, "m.toml", &m.replacen(from, to, 1));
        rejected(
            &["run", "idle", "--machine", s(&f), "--quiet", "--limit-ms", "1"],
            &[&format!("m.toml:{line}: {key}:"), expect],
        );
    }
}

#[test]
fn run_busiest_cpus_lists_idle_cpus_because_idle_time_counts_as_irqs_off() {
    // Ping-pong between CPUs 0 and 2 of four: CPUs 1 and 3 only sleep (IRQs off in their idle
    // state the whole run) and are not "busiest".
    let out =
        ok(&["run", "pingpong", "ping_cpu=0", "pong_cpu=2", "iters=200", "--machine", "smp-4", "--background", "none"]);
    let table = out.split("busiest CPUs").nth(1).expect("the table is printed");
    let mut cpus: Vec<&str> = table
        .lines()
        .skip(2)
        .take_while(|l| !l.trim().is_empty())
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    cpus.sort();
    assert_eq!(cpus, ["0", "2"], "{table}");
}
