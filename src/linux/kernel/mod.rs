//! `kernel/`: the core kernel files the model mirrors.
pub mod entry;
pub mod exit;
pub mod fork;
pub mod futex;
pub mod kthread;
pub mod sched;
pub mod smp;
pub mod softirq;
pub mod stop_machine;
pub mod time;
pub mod wait;
pub mod watchdog;
pub mod workqueue;
