//! cargo-fuzz target `rtapp`: see `harness::rtapp`.
#![no_main]
#[path = "harness.rs"]
mod harness;
libfuzzer_sys::fuzz_target!(|data: &[u8]| harness::rtapp(data));
