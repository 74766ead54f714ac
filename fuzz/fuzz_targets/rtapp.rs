//! rt-app JSON files (`schedsim run --rtapp FILE.json`), checked against a 4-CPU machine.
#![no_main]
use libfuzzer_sys::fuzz_target;
use schedsim::workload::rtapp_json::{parse_rtapp, Limits};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let _ = parse_rtapp(text, "fuzz.json", Limits { nr_cpus: 4, nr_nodes: 1 });
});
