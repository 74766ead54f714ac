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
