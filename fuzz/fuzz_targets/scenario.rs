//! Scenario files (`schedsim run FILE.toml`), parsed, built and run briefly. A scenario naming
//! an `rtapp` workload is only parsed (its `file=` would read a path).
#![no_main]
use libfuzzer_sys::fuzz_target;
include!("common.rs");

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let Ok(s) = schedsim::cli::scenario::parse(text, "fuzz.toml") else { return };
    if s.machine.ends_with(".toml") || !WORKLOADS.contains(&s.workload.as_str()) {
        return;
    }
    if s.background.as_deref().is_some_and(|b| b.ends_with(".toml")) {
        return;
    }
    if schedsim::run::build(&s).is_ok() {
        run_briefly(&s);
    }
});
