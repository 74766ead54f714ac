//! cargo-fuzz target `scenario`: see `harness::scenario`.
#![no_main]
#[path = "harness.rs"]
mod harness;
libfuzzer_sys::fuzz_target!(|data: &[u8]| harness::scenario(data));
