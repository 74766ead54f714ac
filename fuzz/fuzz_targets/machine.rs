//! Machine files (`--machine FILE.toml`, `schedsim list --machine NAME` prints the format).
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let _ = schedsim::hw::machine_from_toml(text, "fuzz.toml");
});
