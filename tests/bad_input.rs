//! Bad input from every path (command line, workload parameters, scenario files, machine
//! files, standard output) ends in a clean error that names the input and what was expected,
//! never a panic. Each case here was once a panic, an unbounded run or a silent default
//! (issue 15).

use std::process::{Command, Output, Stdio};

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_schedsim")
}

fn run(args: &[&str]) -> Output {
    Command::new(bin()).args(args).stdout(Stdio::null()).output().expect("schedsim runs")
}

/// `args` exits 2 with an error on stderr that contains every one of `expect`.
fn rejected(args: &[&str], expect: &[&str]) {
    let o = run(args);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!err.contains("panicked"), "{args:?} panicked: {err}");
    if err.starts_with("schedsim: error") {
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: an error is one line: {err}");
    }
    assert_eq!(o.status.code(), Some(2), "{args:?}: exit {:?}, stderr: {err}", o.status.code());
    for e in expect {
        assert!(err.contains(e), "{args:?}: expected {e:?} in: {err}");
    }
}

fn tmp(name: &str, text: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("schedsim-bad-input-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

#[test]
fn huge_numbers_on_the_command_line_are_range_errors() {
    rejected(
        &["run", "ipistorm", "numipi=10", "--limit-ms", "18446744073709551615"],
        &["--limit-ms = 18446744073709551615 is out of range (1..=3600000 ms"],
    );
    rejected(&["run", "ipistorm", "numipi=10", "--limit-ms", "0"], &["--limit-ms = 0 is out of range"]);
    rejected(
        &["run", "rt-push", "run_us=9223372036854775807"],
        &["command line: parameter run_us = 9223372036854775807 us is out of range (0..=3600000000 us)"],
    );
    rejected(
        &["run", "spinners", "duration_ms=9223372036854775807"],
        &["parameter duration_ms = 9223372036854775807 ms is out of range (0..=3600000 ms)"],
    );
    rejected(
        &["run", "nanosleep", "ns=18446744073709551615"],
        &["parameter ns = 18446744073709551615 ns is out of range (0..=1000000000 ns)"],
    );
    rejected(
        &["run", "ipistorm", "delay=18446744073709551615"],
        &["parameter delay = 18446744073709551615 us is out of range (0..=1000000 us)"],
    );
    rejected(&["run", "ipistorm", "numipi=18446744073709551616"], &["numipi='18446744073709551616' is not a"]);
    rejected(&["run", "ipistorm", "offset=18446744073709551615"], &["offset=18446744073709551615 is out of range"]);
    rejected(&["run", "pingpong", "ping_cpu=4294967296"], &["ping_cpu=4294967296 but the machine has CPUs 0-3"]);
    rejected(&["run", "ipistorm", "timeout=18446744073709551615", "numipi=0"], &["parameter timeout"]);
}

#[test]
fn unbounded_work_is_refused() {
    rejected(&["run", "ipistorm", "numipi=0"], &["numipi=0 means the module's timed mode", "timeout=SECONDS"]);
    rejected(
        &["run", "ipistorm", "numipi=18446744073709551615"],
        &["parameter numipi=18446744073709551615 is out of range (0..=10000000)"],
    );
    rejected(
        &["run", "spinners", "tasks=5000000", "duration_ms=1"],
        &["parameter tasks=5000000 is out of range (1..=4194304)"],
    );
    rejected(&["run", "nanosleep", "procs=5000000"], &["parameter procs=5000000 is out of range (1..=4194304)"]);
    rejected(&["run", "schbench", "--", "-m", "1", "-t", "5000000", "-r", "1"], &["5000002 tasks", "at most 4194304"]);
    rejected(&["run", "schbench", "--", "-m", "1", "-t", "4", "-r", "2147483647"], &["-r 2147483647"]);
    rejected(&["run", "hackbench", "--", "perf", "-g", "200000"], &["at most 4194304"]);
}

#[test]
fn ambiguous_parameters_and_flags_are_errors() {
    rejected(
        &["run", "ipistorm", "numipi"],
        &["command line: parameter 'numipi' has no value (expected numipi=VALUE)"],
    );
    rejected(&["run", "ipistorm", "numipi=10", "numipi=20"], &["parameter 'numipi' given twice"]);
    rejected(
        &["run", "ipistorm", "numipi=10", "--patch", "+3dcac251b066,-3dcac251b066"],
        &["--patch names patch 3dcac251b066 twice"],
    );
    rejected(
        &["run", "ipistorm", "numipi=10", "--hz", "251"],
        &["--hz 251 is not a CONFIG_HZ choice (100, 250, 300 or 1000)"],
    );
    rejected(&["run", "ipistorm", "--seed", "-1"], &["invalid value '-1' for '--seed"]);
    rejected(&["bench", "--runs", "0"], &["--runs 0 is out of range (1..=1000)"]);
    rejected(&["compare", "ipistorm", "--runs", "100000000000"], &["--runs 100000000000 is out of range"]);
    rejected(&["reproduce", "rt-push", "--runs", "10000000000000"], &["--runs 10000000000000 is out of range"]);
    rejected(
        &["compare", "ipistorm", "numipi=10", "--kernel", "v6.12"],
        &["--kernel v6.12: compare runs the kernels of --kernels"],
    );
    rejected(&["compare", "ipistorm", "numipi=10", "--kernels", "v6.10+nope"], &["--kernels", "unknown patch 'nope'"]);
    rejected(&["reproduce", "ipistorm", "--seed", "18446744073709551615"], &["overflows 64 bits"]);
}

/// `--kernels` takes the grammar of `--kernel`: patch ids that contain `-` parse.
#[test]
fn kernels_take_the_kernel_spec_grammar() {
    let o = Command::new(bin())
        .args(["compare", "ipistorm", "numipi=20", "--kernels", "v6.10+rfc-tif-notify-ipi,v6.10", "--runs", "1"])
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(out.contains("v6.10+rfc-tif-notify-ipi (v6.10 +rfc-tif-notify-ipi)"), "{out}");
    // A run's kernel label reads back as --kernel.
    let o = run(&["run", "ipistorm", "numipi=20", "--kernel", "v6.1 +3dcac251b066"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

#[test]
fn scenario_files_name_file_and_line() {
    let cases = [
        ("limit_ms = 9223372036854775808\n", "2:"),
        ("limit_ms = 9223372036854775807\n", "2: limit_ms = 9223372036854775807 is out of range (1..=3600000 ms"),
        ("limit_ms = 0\n", "2: limit_ms = 0 is out of range"),
        ("hz = 251\n", "2: hz = 251 is not a CONFIG_HZ choice"),
        ("seed = -1\n", "2:"),
        ("[params]\nnumipi = 18446744073709551615\n", "3:"),
        ("[params]\nnumipi = 9223372036854775807\n", "parameter numipi=9223372036854775807 is out of range"),
        ("[params]\ndelay = 9223372036854775807\nnumipi = 1\n", "parameter delay = 9223372036854775807 us"),
    ];
    for (i, (body, expect)) in cases.iter().enumerate() {
        let p = tmp(&format!("s{i}.toml"), &format!("workload = \"ipistorm\"\n{body}"));
        let ps = p.display().to_string();
        rejected(&["run", "--scenario", &ps], &[&ps, expect]);
    }
    // A multi-line TOML string still gives a one-line error.
    let p = tmp("multi.toml", "workload = \"ipistorm\"\nmachine = \"\"\"smp\n-4\"\"\"\n");
    rejected(&["run", "--scenario", &p.display().to_string()], &["unknown machine preset `smp\\n-4`"]);
}

#[test]
fn machine_files_bound_every_latency() {
    let o = Command::new(bin()).args(["list", "--machine", "smp-4"]).output().unwrap();
    let text = String::from_utf8(o.stdout).unwrap();
    for (key, big) in [
        ("ipi_delivery_ns", "[0, 9223372036854775807]"),
        ("line_llc_ns", "[18446744073709551615, 18446744073709551615]"),
        ("line_smt_ns", "[1, 9223372036854775807]"),
        ("irq_exit_ns", "9223372036854775807"),
        ("irq_entry_ns", "1000000001"),
        ("ipi_send_ns", "9223372036854775807"),
        ("wake_ns", "[9223372036854775806, 9223372036854775807]"),
        ("exit_latency_ns", "9223372036854775807"),
        ("target_residency_ns", "9223372036854775807"),
        ("hz", "251"),
        ("clock_mhz", "99"),
    ] {
        let mut line_no = 0;
        let edited: Vec<String> = text
            .lines()
            .enumerate()
            .map(|(i, l)| {
                if line_no == 0 && l.starts_with(&format!("{key} =")) {
                    line_no = i + 1;
                    format!("{key} = {big}")
                } else {
                    l.to_string()
                }
            })
            .collect();
        assert!(line_no > 0, "no {key} line");
        let p = tmp(&format!("m-{key}.toml"), &edited.join("\n"));
        let ps = p.display().to_string();
        rejected(&["run", "idle", "--machine", &ps], &[&format!("{ps}:{line_no}:")]);
    }
}

/// A measured path cost in a machine file names a row of the cost table, with a value and a
/// clock in range; the error names the file and the entry's line.
#[test]
fn machine_files_check_their_measured_path_costs() {
    let o = Command::new(bin()).args(["list", "--machine", "smp-4"]).output().unwrap();
    let text = String::from_utf8(o.stdout).unwrap();
    let line_no = text.lines().count() + 2;
    // The entry starts on the line after the preset's text and one blank line.
    for (entry, offset, expect) in [
        (
            "[path_costs.context_swich]\nns = 10\nclock_mhz = 2000",
            0,
            "unknown path cost `context_swich`; valid names: ",
        ),
        ("[path_costs.context_switch]\nns = 0\nclock_mhz = 2000", 1, "path_costs.context_switch.ns = 0"),
        ("[path_costs.context_switch]\nns = 10\nclock_mhz = 0", 2, "path_costs.context_switch.clock_mhz = 0"),
    ] {
        let p = tmp("m-path-costs.toml", &format!("{text}\n{entry}\n"));
        let ps = p.display().to_string();
        rejected(&["run", "idle", "--machine", &ps], &[&format!("{ps}:{}:", line_no + offset), expect]);
    }
}

/// A failed write to standard output ends the program non-zero with the OS error.
#[test]
fn full_stdout_fails_the_command() {
    for args in [&["run", "ipistorm", "numipi=10"][..], &["list"], &["list", "--json"], &["list", "--machine", "smp-4"]]
    {
        let full = std::fs::OpenOptions::new().write(true).open("/dev/full").unwrap();
        let o = Command::new(bin()).args(args).stdout(full).output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success(), "{args:?}: a full stdout was accepted");
        assert!(err.contains("cannot write to standard output") && err.contains("os error 28"), "{args:?}: {err}");
    }
}

#[test]
fn list_json_is_one_document() {
    let o = Command::new(bin()).args(["list", "--json"]).output().unwrap();
    assert!(o.status.success());
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    for key in ["machines", "kernels", "patches", "sched_features", "workloads", "scenarios", "experiments"] {
        assert!(v[key].as_array().is_some_and(|a| !a.is_empty()), "{key}");
    }
}

/// Split a shell line on spaces, honouring single quotes (all the header uses).
fn shell_words(line: &str) -> Vec<String> {
    let (mut words, mut cur, mut quoted, mut any) = (Vec::new(), String::new(), false, false);
    for ch in line.chars() {
        match ch {
            '\'' => {
                quoted = !quoted;
                any = true;
            }
            ' ' if !quoted => {
                if any {
                    words.push(std::mem::take(&mut cur));
                }
                any = false;
            }
            c => {
                cur.push(c);
                any = true;
            }
        }
    }
    if any {
        words.push(cur);
    }
    words
}

/// The `# schedsim run ...` header, pasted back, reproduces the run: kernel deltas, the
/// switches (`--preempt-rt`, `--hz`, `--feature`, `--cstate`, `--limit-ms`) and all.
#[test]
fn the_header_line_reproduces_the_run() {
    let args = [
        "run",
        "ipistorm",
        "numipi=200",
        "--kernel",
        "v6.1",
        "--patch",
        "+3dcac251b066",
        "--preempt-rt",
        "--hz",
        "1000",
        "--feature",
        "NO_TTWU_QUEUE",
        "--limit-ms",
        "50",
        "--machine",
        "smp-4",
        "cpulist=0",
        "offset=1",
    ];
    let first = Command::new(bin()).args(args).output().unwrap();
    assert!(first.status.success(), "{}", String::from_utf8_lossy(&first.stderr));
    let out = String::from_utf8(first.stdout).unwrap();
    let header = out.lines().next().unwrap().strip_prefix("# schedsim ").unwrap();
    let again = Command::new(bin()).args(shell_words(header)).output().unwrap();
    assert!(again.status.success(), "{header}: {}", String::from_utf8_lossy(&again.stderr));
    assert_eq!(String::from_utf8(again.stdout).unwrap(), out, "{header}");
}

#[test]
fn endless_or_huge_input_files_are_errors_not_unbounded_reads() {
    // /dev/zero behind a name the parsers accept: a machine, scenario, background or rt-app
    // file that never ends is refused at the input-file limit.
    let dir = std::env::temp_dir().join(format!("schedsim-endless-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let zero = dir.join("zero.toml");
    let _ = std::fs::remove_file(&zero);
    std::os::unix::fs::symlink("/dev/zero", &zero).unwrap();
    let z = zero.to_str().unwrap();
    rejected(&["run", "idle", "--machine", z], &["machine file", "is larger than 64 MiB"]);
    rejected(&["run", "--scenario", z], &["scenario file", "is larger than 64 MiB"]);
    rejected(&["run", "idle", "--machine", "smp-4", "--background", z], &["background file", "is larger than 64 MiB"]);
    rejected(&["run", "--rtapp", "/dev/zero", "--machine", "smp-4"], &["rt-app file /dev/zero is larger than 64 MiB"]);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn explore_flags_and_replay_tokens_are_checked() {
    let base = ["explore", "spinners", "tasks=1", "start=0", "duration_ms=1", "--machine", "smp-4"];
    let with = |extra: &[&'static str]| -> Vec<&'static str> { base.iter().chain(extra).copied().collect() };
    rejected(&with(&["--budget", "0"]), &["--budget 0 is out of range (1..=1000000)"]);
    rejected(&with(&["--depth", "0"]), &["--depth 0 is out of range (1..=1000)"]);
    rejected(&with(&["--strategy", "dfs"]), &["--strategy 'dfs': expected one of random, pct, delay"]);
    rejected(&with(&["--jobs", "0"]), &["--jobs 0 is out of range"]);
    let run = ["run", "spinners", "tasks=1", "start=0", "duration_ms=1", "--machine", "smp-4", "--replay"];
    let replay = |t: &'static str| -> Vec<&'static str> { run.iter().copied().chain([t]).collect() };
    rejected(&replay("hello"), &["--replay 'hello': not a replay token"]);
    rejected(&replay("x7.AAC7hg"), &["token version not supported"]);
    rejected(&replay("x1.AAC7hh"), &["the token was altered"]);
    rejected(&replay("x1.AAD7hg"), &["check bytes do not match"]);
    rejected(&replay("x1.AA*7hg"), &["'*' is not base64url"]);
    // A token from a bigger machine: CPU 7 on a 4-CPU one.
    let t = schedsim::explore::Perturbation { picks: vec![], jitter: vec![(7, 1)] }.token();
    let t: &'static str = Box::leak(t.into_boxed_str());
    rejected(&replay(t), &["re-seeds CPU 7", "smp-4 has 4 CPUs"]);
}

#[test]
fn the_builtin_ipistorm_on_a_small_machine_says_how_to_fit_it() {
    // The scenario's default cpulist=8 (the published run) is out of range on 8 CPUs.
    rejected(
        &["run", "ipistorm", "--machine", "i7-4c8t"],
        &["cpulist='8'", "CPU 8 out of range", "give cpulist= (and offset=) naming CPUs this machine has"],
    );
}

#[test]
fn calibration_inputs_are_checked() {
    rejected(&["machine", "--from-host", "--calibrate"], &["give -o FILE.toml"]);
    rejected(&["machine", "--from-host", "--calibrate", "-o", "x.txt"], &["must end in .toml"]);
    rejected(&["machine", "--calibrate", "-o", "x.toml"], &["--from-host"]);
    let out = std::env::temp_dir().join(format!("schedsim-bad-input-{}-cal.toml", std::process::id()));
    let out = out.to_str().unwrap();
    rejected(
        &["machine", "--from-host", "--calibrate", "-o", out, "--from-capture", "/nonexistent/bundle.gz"],
        &["cannot read calibration bundle /nonexistent/bundle.gz"],
    );
    let b = tmp("bundle.txt", "#schedsim-calibration v1\n#section meta - 5\nclock\n");
    rejected(
        &["machine", "--from-host", "--calibrate", "-o", out, "--from-capture", b.to_str().unwrap()],
        &["bundle.txt:3:"],
    );
    let b = tmp("notabundle.txt", "hello\n");
    rejected(
        &["machine", "--from-host", "--calibrate", "-o", out, "--from-capture", b.to_str().unwrap()],
        &["notabundle.txt:1: expected `#schedsim-calibration v1`"],
    );
    assert!(!std::path::Path::new(out).exists(), "nothing is written on an error");
}

#[test]
fn a_machine_file_is_read_and_its_errors_name_it() {
    let dir = std::env::temp_dir().join(format!("schedsim-machine-file-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // A preset's text, renamed and with one cost changed, is a valid machine file.
    let text = schedsim::hw::preset_text("smp-4").unwrap().replace("name = \"smp-4\"", "name = \"my-4\"");
    let good = dir.join("my-4.toml");
    std::fs::write(&good, &text).unwrap();
    let m = schedsim::run::machine(good.to_str().unwrap()).unwrap();
    assert_eq!(m.name, "my-4");
    assert_eq!(m.topo.nr_cpus, schedsim::run::machine("smp-4").unwrap().topo.nr_cpus);
    // A bad value: the error names the file and the line.
    let bad = dir.join("bad.toml");
    std::fs::write(&bad, text.replace("hz = 250", "hz = 123")).unwrap();
    let e = schedsim::run::machine(bad.to_str().unwrap()).unwrap_err();
    let line = text.lines().position(|l| l.starts_with("hz = ")).unwrap() + 1;
    assert!(e.starts_with(&format!("{}:{line}: hz = 123", bad.display())), "{e}");
    // A missing file, and a name that is neither a preset nor a .toml path.
    let e = schedsim::run::machine(dir.join("none.toml").to_str().unwrap()).unwrap_err();
    assert!(e.starts_with("cannot read machine file"), "{e}");
    assert!(schedsim::run::machine("smp-5").unwrap_err().contains("known presets: epyc-7763-2s"));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Issue 35: a machine file with the haltpoll governor and only a POLL state indexed a second
/// state that was not there (162 fuzzed machine files panicked in cpuidle). Refused with the
/// line of `governor`.
#[test]
fn a_haltpoll_machine_with_only_poll_is_refused() {
    let text = schedsim::hw::preset_text("smp-4").unwrap();
    let first = text.find("[[idle_state]]").unwrap();
    let second = text[first + 1..].find("[[idle_state]]").unwrap() + first + 1;
    let text = text[..second].replace("name = \"smp-4\"", "name = \"h\"\ngovernor = \"haltpoll\"");
    let line = text.lines().position(|l| l.starts_with("governor")).unwrap() + 1;
    let f = tmp("haltpoll-poll-only.toml", &text);
    let f = f.to_str().unwrap();
    rejected(
        &["run", "idle", "--machine", f, "--limit-ms", "10"],
        &[&format!("{f}:{line}: governor = \"haltpoll\" needs exactly two idle states")],
    );
}

/// Named unknowns and bands: a bad name, value, CPU or machine, and a band of an experiment
/// that names no unknowns, are one-line errors before anything runs.
#[test]
fn bad_unknowns_and_bands_are_clean_errors() {
    rejected(&["run", "ipistorm", "--unknown", "nosuch=1"], &["--unknown 'nosuch=1': no unknown named 'nosuch'"]);
    rejected(&["run", "ipistorm", "--unknown", "start-avg-idle"], &["expected NAME=VALUE"]);
    rejected(&["run", "ipistorm", "--unknown", "start-avg-idle=5@16"], &["expected TIME@CPULIST"]);
    rejected(&["run", "ipistorm", "--unknown", "overload-holder=999"], &["CPU 999 is not on machine epyc-7763-2s"]);
    rejected(&["run", "ipistorm", "--unknown", "guest-idle=mwait"], &["is not a KVM guest"]);
    rejected(&["run", "ipistorm", "--unknown", "start-avg-idle=2ms@16"], &["capped at 2 * max_idle_balance_cost"]);
    rejected(&["reproduce", "ipistorm", "--unknown", "newidle-cost=1us@16/9"], &["has domain levels"]);
    rejected(&["reproduce", "rt-push", "--band"], &["experiment 'rt-push' names no unknowns"]);
    rejected(&["run", "ipistorm", "--schedstat", "999"], &["--schedstat: cpulist `999`", "out of range"]);
    rejected(&["run", "ipistorm", "--schedstat", ""], &["--schedstat: expected at least one CPU"]);
    rejected(&["reproduce", "ipistorm", "--band", "--band-design", "lhs:0"], &["expected auto, grid or lhs:N"]);
    rejected(&["reproduce", "ipistorm", "--band", "--band-runs", "0"], &["--band-runs 0 is out of range"]);
    let grid = tmp("band-grid.toml", "[[run]]\nworkload = \"ipistorm\"\nband = true\n");
    rejected(&["sweep", grid.to_str().unwrap(), "--dry-run"], &["band = true is for experiment = NAME"]);
    let grid = tmp("band-grid2.toml", "[[run]]\nexperiment = \"rt-push\"\nband = true\n");
    rejected(&["sweep", grid.to_str().unwrap(), "--dry-run"], &[":1: experiment 'rt-push' names no unknowns"]);
}
