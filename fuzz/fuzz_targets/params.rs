//! cargo-fuzz target `params`: see `harness::params`.
#![no_main]
#[path = "harness.rs"]
mod harness;
libfuzzer_sys::fuzz_target!(|data: &[u8]| harness::params(data));
