//! Sweep grid files (`schedsim sweep GRID.toml`): expanded into runs, not run.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    if let Ok(runs) = schedsim::sweep::parse_grid(text, "fuzz.toml") {
        for r in runs.iter().take(64) {
            let _ = r.key();
        }
    }
});
