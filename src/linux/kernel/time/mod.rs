//! `kernel/time/`.
pub mod tick_sched;
pub mod timer;
