//! The one door from the kernel model into workload code. `src/linux` names nothing of
//! `crate::workload` but this module (checked by `tests/tidy.rs`): the workload state the
//! kernel carries ([`Workload`]), the frame of a task's own code ([`TaskFrame`]), and the three
//! calls the engine makes: [`start`] once at boot, [`on_action`] for a workload action, and
//! [`task_step`] for one step of a workload task's code. Workloads in turn reach the kernel
//! only through its entry points (`copy_process()`, `wake_up_new_task()`, syscalls,
//! `sched_setaffinity()`, `do_exit()`).
//!
//! Plain functions rather than a trait object: the engine calls [`task_step`] on every step
//! of a workload task, and a direct call keeps the `match` over workloads inlinable.

pub use super::{on_action, start, task_step, TaskFrame, Workload};
