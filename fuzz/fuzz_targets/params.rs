//! `key=value` workload parameters (`schedsim run WORKLOAD k=v ...`): the first byte picks the
//! workload, the rest is the parameter text split on whitespace (`args=` takes the rest of
//! its line, as a quoted shell word would).
#![no_main]
use libfuzzer_sys::fuzz_target;
include!("common.rs");

fuzz_target!(|data: &[u8]| {
    let Some((&w, rest)) = data.split_first() else { return };
    let Ok(text) = std::str::from_utf8(rest) else { return };
    let workload = WORKLOADS[w as usize % WORKLOADS.len()];
    let mut items: Vec<&str> = Vec::new();
    for line in text.lines() {
        if line.trim_start().starts_with("args=") {
            items.push(line);
        } else {
            items.extend(line.split_whitespace());
        }
    }
    let Ok(p) = schedsim::workload::params::Params::parse(items, "fuzz") else { return };
    let mut s = schedsim::run::RunSpec::new(workload);
    s.machine = "smp-4".into();
    s.background = Some("none".into());
    s.params = p;
    if schedsim::run::build(&s).is_ok() {
        run_briefly(&s);
    }
});
