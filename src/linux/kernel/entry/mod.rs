//! `kernel/entry/`: the generic entry and exit code of syscalls and interrupts.
pub mod common;
