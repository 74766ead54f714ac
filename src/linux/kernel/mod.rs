//! `kernel/`: the core kernel files the model mirrors.
pub mod futex;
pub mod sched;
pub mod smp;
pub mod softirq;
pub mod stop_machine;
pub mod time;
