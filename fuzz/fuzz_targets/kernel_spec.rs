//! The kernel-spec grammar (`--kernel NAME+ID-ID`, `--kernels`, a scenario's `kernel`) and the
//! `--patch +ID,-ID` list: the first line is the kernel, the second the patch list.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let mut lines = text.splitn(2, '\n');
    let kernel = lines.next().unwrap_or("");
    let patches = lines.next().unwrap_or("");
    let _ = schedsim::linux::config::split_kernel_spec(kernel);
    let _ = schedsim::linux::config::KernelConfig::resolve(kernel, patches, 250);
});
