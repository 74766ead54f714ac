//! A bounded fuzz of every user-input parser: random scenario files, machine files and
//! `key=value` parameter lists, built from the keys the parsers know and from numbers at the
//! edges (0, 2^31, 2^63, 2^64, negative, not numbers). Whatever the text, parsing and building
//! must end in `Ok` or a clean `Err`, never a panic; what builds is also run for a few
//! simulated milliseconds on a small quiet machine, so overflow in the conversions the model
//! does from those numbers shows too. Sized to stay within a few seconds in `cargo test`;
//! `FUZZ_CASES=N` runs more (issue 15).

use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use schedsim::run;
use schedsim::spec::RunSpec;
use schedsim::workload::params::Params;

fn cases(default: u32) -> u32 {
    std::env::var("FUZZ_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn runner(n: u32) -> TestRunner {
    TestRunner::new(Config { cases: cases(n), failure_persistence: None, ..Config::default() })
}

const EDGE: &[&str] = &[
    "0",
    "1",
    "2",
    "3",
    "4",
    "7",
    "100",
    "250",
    "1000",
    "100000",
    "3600000",
    "3600001",
    "32768",
    "32769",
    "2147483647",
    "2147483648",
    "4294967295",
    "4294967296",
    "9223372036854775807",
    "9223372036854775808",
    "18446744073709551615",
    "18446744073709551616",
    "-1",
    "-9223372036854775808",
    "1.5",
    "abc",
    "",
    "0-3",
    "0,2",
    "1e3",
];

/// A number-ish token: an edge case or any u64.
fn number() -> impl Strategy<Value = String> {
    prop_oneof![3 => prop::sample::select(EDGE).prop_map(str::to_string), 1 => any::<u64>().prop_map(|n| n.to_string())]
}

/// A TOML value: an integer-looking token as is, or quoted, or a boolean, or an array.
fn toml_value() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => number().prop_filter("a TOML integer", |v| !v.is_empty() && v.parse::<i128>().is_ok()),
        2 => number().prop_map(|v| format!("\"{v}\"")),
        1 => any::<bool>().prop_map(|b| b.to_string()),
        1 => (number(), number()).prop_map(|(a, b)| format!("[{a}, {b}]")),
    ]
}

const WORKLOADS: &[&str] =
    &["ipistorm", "spinners", "nanosleep", "rt-push", "hackbench", "schbench", "pingpong", "perf-pipe", "idle", "nope"];

fn param_keys(workload: &str) -> Vec<&'static str> {
    use schedsim::workload::*;
    let mut k: Vec<&str> = match workload {
        "ipistorm" => ipistorm::PARAM_NAMES.to_vec(),
        "spinners" => spinners::PARAM_NAMES.to_vec(),
        "nanosleep" => nanosleep::PARAM_NAMES.to_vec(),
        "rt-push" => rtpush::PARAM_NAMES.to_vec(),
        "hackbench" => hackbench::PARAM_NAMES.to_vec(),
        "schbench" => vec!["args"],
        "pingpong" => pipepair::PINGPONG_PARAMS.to_vec(),
        "perf-pipe" => pipepair::PERF_PIPE_PARAMS.to_vec(),
        _ => vec![],
    };
    k.push("bogus");
    k
}

/// A value for `key`: program arguments for `args`, else a number-ish token.
fn param_value(key: &'static str) -> BoxedStrategy<String> {
    if key == "args" {
        let opt = prop::sample::select(
            &["-m", "-t", "-r", "-s", "-c", "-w", "-g", "-l", "-f", "-s", "-p", "-T", "perf", "rt-tests", "old"][..],
        );
        prop::collection::vec((opt, number()), 0..4)
            .prop_map(|v| v.into_iter().map(|(o, n)| format!("{o} {n}")).collect::<Vec<_>>().join(" "))
            .boxed()
    } else {
        number().boxed()
    }
}

/// `key=value` items for a workload (sometimes without `=`, sometimes repeated).
fn params_for(workload: &'static str) -> impl Strategy<Value = Vec<String>> {
    let keys = param_keys(workload);
    prop::collection::vec(
        prop::sample::select(keys).prop_flat_map(|k| {
            (param_value(k), 0..8u8).prop_map(move |(v, form)| match form {
                0 => k.to_string(),
                1 => format!("{k}= {v}"),
                _ => format!("{k}={v}"),
            })
        }),
        0..5,
    )
}

use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

/// Cases that parsed, built and ran (printed with `--nocapture`, to see what a fuzz covered).
static BUILT: AtomicUsize = AtomicUsize::new(0);
static RAN: AtomicUsize = AtomicUsize::new(0);

fn report(what: &str) {
    eprintln!("{what}: {} built, {} ran to the end or the limit", BUILT.swap(0, Relaxed), RAN.swap(0, Relaxed));
}

/// Run what builds for a few simulated milliseconds on a small quiet machine.
fn run_briefly(spec: &RunSpec) {
    BUILT.fetch_add(1, Relaxed);
    let mut s = spec.clone();
    s.limit_ns = s.limit_ns.min(3_000_000);
    s.background = Some("none".into());
    if let Ok(m) = run::machine(&s.machine) {
        if m.topo.nr_cpus > 64 {
            s.machine = "smp-4".into();
            s.idle_states.clear();
        }
    }
    if run::execute(&s).is_ok() {
        RAN.fetch_add(1, Relaxed);
    }
}

#[test]
fn random_parameters_never_panic() {
    let strategy = prop::sample::select(WORKLOADS).prop_flat_map(|w| (Just(w), params_for(w)));
    runner(2000)
        .run(&strategy, |(w, items)| {
            if let Ok(p) = Params::parse(items.iter().map(String::as_str), "fuzz") {
                let mut s = RunSpec::new(w);
                s.machine = "smp-4".into();
                s.params = p;
                if run::build(&s).is_ok() {
                    run_briefly(&s);
                }
            }
            Ok(())
        })
        .unwrap();
    report("parameters");
}

#[test]
fn random_scenario_files_never_panic() {
    let opt = |s: BoxedStrategy<String>| prop::option::weighted(0.4, s);
    let sel = |key: &'static str, vals: &'static [&'static str]| {
        opt(prop::sample::select(vals).prop_map(move |v| format!("{key} = \"{v}\"")).boxed())
    };
    let top = (
        sel("machine", &["smp-4", "i7-4c8t", "epyc-7763-2s", "nope", "/nonexistent.toml"]),
        sel("kernel", &["v6.10", "v6.1 +3dcac251b066", "v6.10+rfc-tif-notify-ipi", "v3.8", "v9", "v6.10-"]),
        opt(prop::sample::select(&["+3dcac251b066", "-3dcac251b066", "nope", "", "+"][..])
            .prop_map(|p| format!("patches = [\"{p}\"]"))
            .boxed()),
        opt(prop::sample::select(&["NO_TTWU_QUEUE", "TTWU_QUEUE", "NOPE"][..])
            .prop_map(|f| format!("features = [\"{f}\"]"))
            .boxed()),
        opt(toml_value().prop_map(|v| format!("hz = {v}")).boxed()),
        opt(toml_value().prop_map(|v| format!("seed = {v}")).boxed()),
        opt(toml_value().prop_map(|v| format!("limit_ms = {v}")).boxed()),
        sel("preempt", &["none", "full", "dynamic-voluntary", "nope"]),
        prop::option::weighted(0.05, "[ -~]{0,12}"),
    );
    let idle = (prop::sample::select(&["POLL", "C1", "C2", "C9"][..]), any::<bool>())
        .prop_map(|(n, on)| format!("{n} = {on}"));
    let strategy = prop::sample::select(WORKLOADS).prop_flat_map(move |w| {
        let param = (prop::sample::select(param_keys(w)), toml_value()).prop_map(|(k, v)| (k, format!("{k} = {v}")));
        (Just(w), top.clone(), prop::collection::vec(param, 0..5), prop::collection::vec(idle.clone(), 0..2))
    });
    runner(2000)
        .run(&strategy, |(w, top, params, idle)| {
            let (a, b, c, d, e, f, g, h, i) = top;
            let mut lines = vec![format!("workload = \"{w}\"")];
            lines.extend([a, b, c, d, e, f, g, h, i].into_iter().flatten());
            // A key once per table (a repeated key is a TOML error the parser reports anyway).
            let mut seen = Vec::new();
            let params: Vec<String> = params
                .into_iter()
                .filter(|(k, _)| {
                    !seen.contains(k) && {
                        seen.push(*k);
                        true
                    }
                })
                .map(|(_, l)| l)
                .collect();
            let mut seen: Vec<String> = Vec::new();
            let idle: Vec<String> = idle
                .into_iter()
                .filter(|l| {
                    let name = l.split(' ').next().unwrap_or("").to_string();
                    let new = !seen.contains(&name);
                    seen.push(name);
                    new
                })
                .collect();
            let text =
                format!("{}\n[params]\n{}\n[idle_states]\n{}\n", lines.join("\n"), params.join("\n"), idle.join("\n"));
            if let Ok(s) = schedsim::spec::scenario::parse(&text, "fuzz.toml") {
                if run::build(&s).is_ok() {
                    run_briefly(&s);
                }
            }
            Ok(())
        })
        .unwrap();
    report("scenario files");
}

#[test]
fn random_machine_files_never_panic() {
    let base = schedsim::hw::preset_text("smp-4").unwrap().to_string();
    let nr_lines = base.lines().count();
    // Up to four edits: replace a line's value, drop a line, or insert a junk line.
    let edit = (0..nr_lines, 0..4u8, toml_value(), "[ -~]{0,16}");
    let dir = std::env::temp_dir().join(format!("schedsim-fuzz-machine-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("m.toml");
    runner(2000)
        .run(&prop::collection::vec(edit, 1..5), |edits| {
            let mut lines: Vec<String> = base.lines().map(str::to_string).collect();
            for (i, how, value, junk) in edits {
                let i = i.min(lines.len().saturating_sub(1));
                match how {
                    0 | 1 => {
                        if let Some((k, _)) = lines[i].clone().split_once(" = ") {
                            lines[i] = format!("{k} = {value}");
                        }
                    }
                    2 => {
                        lines.remove(i);
                    }
                    _ => lines.insert(i, junk),
                }
            }
            let text = lines.join("\n");
            if schedsim::hw::machine_from_toml(&text, "fuzz.toml").is_ok() {
                std::fs::write(&path, &text).unwrap();
                let mut s = RunSpec::new("ipistorm");
                s.machine = path.display().to_string();
                s.params = Params::parse(["numipi=20", "single=1", "offset=1", "cpulist=0"], "fuzz").unwrap();
                if run::build(&s).is_ok() {
                    run_briefly(&s);
                }
            }
            Ok(())
        })
        .unwrap();
    report("machine files");
    let _ = std::fs::remove_dir_all(&dir);
}
