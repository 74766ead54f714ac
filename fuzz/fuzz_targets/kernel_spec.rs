//! cargo-fuzz target `kernel_spec`: see `harness::kernel_spec`.
#![no_main]
#[path = "harness.rs"]
mod harness;
libfuzzer_sys::fuzz_target!(|data: &[u8]| harness::kernel_spec(data));
