//! The cargo-fuzz harness (`fuzz/fuzz_targets/harness.rs`) over the checked-in seed corpus
//! (`fuzz/seeds/TARGET/`) and every input a fuzz run once found a panic, hang or unbounded
//! allocation with (`fuzz/regressions/TARGET/`, kept after the fix): each must go through its
//! parser without panicking. Runs on stable in `cargo test`; the fuzzing itself needs nightly
//! (docs/fuzzing.md).

#[path = "../fuzz/fuzz_targets/harness.rs"]
mod harness;

use std::path::Path;

/// A harness function: arbitrary bytes through one parser.
type Harness = fn(&[u8]);

const TARGETS: &[(&str, Harness)] = &[
    ("params", harness::params),
    ("scenario", harness::scenario),
    ("machine", harness::machine),
    ("background", harness::background),
    ("rtapp", harness::rtapp),
    ("kernel_spec", harness::kernel_spec),
    ("ftrace", harness::ftrace),
    ("grid", harness::grid),
];

#[test]
fn seeds_and_past_findings_go_through_every_parser() {
    let fuzz = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz");
    let mut n = 0;
    for (name, f) in TARGETS {
        for dir in ["seeds", "regressions"] {
            let Ok(rd) = std::fs::read_dir(fuzz.join(dir).join(name)) else { continue };
            let mut paths: Vec<_> = rd.map(|e| e.expect("entry").path()).collect();
            paths.sort();
            for p in paths {
                let data = std::fs::read(&p).expect("readable");
                eprintln!("{}", p.display());
                f(&data);
                n += 1;
            }
        }
    }
    assert!(n >= 30, "found the corpus ({n} inputs)");
}

/// A bounded mutation fuzz of every parser in `cargo test` (the stable stand-in for the
/// cargo-fuzz runs): each case takes a seed of a target and applies up to four edits (a number
/// replaced by an edge value, a line dropped, duplicated or moved), then runs the target's
/// harness. `FUZZ_CASES=N` runs N cases per target (default 200).
#[test]
fn mutated_seeds_go_through_every_parser() {
    use proptest::prelude::*;
    use proptest::test_runner::{Config, TestRunner};
    const EDGE: &[&str] = &[
        "0",
        "1",
        "-1",
        "4294967295",
        "4294967296",
        "9223372036854775807",
        "18446744073709551615",
        "18446744073709551616",
        "1000000000",
        "1.5",
        "",
        "x",
    ];
    let cases = std::env::var("FUZZ_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(200);
    let fuzz = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/seeds");
    for (name, f) in TARGETS {
        let Ok(rd) = std::fs::read_dir(fuzz.join(name)) else { continue };
        let mut seeds: Vec<Vec<u8>> = rd.map(|e| std::fs::read(e.expect("entry").path()).expect("readable")).collect();
        seeds.sort();
        let seeds: Vec<String> = seeds.into_iter().filter_map(|s| String::from_utf8(s).ok()).collect();
        if seeds.is_empty() {
            continue;
        }
        let edit = (0..4u8, any::<prop::sample::Index>(), any::<prop::sample::Index>(), prop::sample::select(EDGE));
        let strategy = (0..seeds.len(), prop::collection::vec(edit, 1..5));
        let mut runner = TestRunner::new(Config { cases, failure_persistence: None, ..Config::default() });
        runner
            .run(&strategy, |(seed, edits)| {
                let text = &seeds[seed];
                let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
                for (how, a, b, edge) in edits {
                    if lines.is_empty() {
                        break;
                    }
                    let i = a.index(lines.len());
                    match how {
                        0 => {
                            // Replace the first run of digits on the line.
                            let l = &lines[i];
                            if let Some(s) = l.find(|c: char| c.is_ascii_digit()) {
                                let e = l[s..].find(|c: char| !c.is_ascii_digit()).map_or(l.len(), |e| s + e);
                                lines[i] = format!("{}{edge}{}", &l[..s], &l[e..]);
                            }
                        }
                        1 => {
                            lines.remove(i);
                        }
                        2 => {
                            let l = lines[i].clone();
                            lines.insert(i, l);
                        }
                        _ => {
                            let l = lines.remove(i);
                            let j = b.index(lines.len() + 1);
                            lines.insert(j, l);
                        }
                    }
                }
                f(lines.join("\n").as_bytes());
                Ok(())
            })
            .unwrap_or_else(|e| panic!("{name}: {e}"));
    }
}
