//! `kernel/time/`.
pub mod tick_sched;
