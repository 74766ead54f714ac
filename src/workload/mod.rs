//! Workloads: programs that run on the modelled machine as kernel threads or user tasks. They
//! reach the kernel model only through its entry points (`smp_call_function_single`,
//! `schedule`, `wake_up_process`, sleeps), never by writing kernel state directly.

pub mod ipistorm;
pub mod params;

use crate::linux::engine::Next;
use crate::linux::{CpuId, Kernel};

/// The workload of a run.
#[derive(Debug, Clone)]
pub enum Workload {
    /// Nothing runs: the machine idles (useful for tests of the idle path).
    Idle,
    Ipistorm(ipistorm::Ipistorm),
}

/// The frame of a workload task's own code: a resume point and a loop counter.
#[derive(Debug, Clone, Copy, Default)]
pub struct TaskFrame {
    pub at: u8,
    pub i: u64,
    /// Start of the current operation (for per-operation timing).
    pub t0: u64,
    /// Loop start and counter snapshots.
    pub mark: [u64; 3],
}

/// Create the workload's tasks in a freshly booted kernel.
pub fn start(k: &mut Kernel) {
    if let Workload::Ipistorm(_) = k.wl {
        ipistorm::start(k)
    }
}

/// A workload-level action fired.
pub fn on_action(k: &mut Kernel, what: u32) {
    if let Workload::Ipistorm(_) = k.wl {
        ipistorm::on_action(k, what)
    }
}

/// Run one step of a workload task's code.
pub fn task_step(k: &mut Kernel, cpu: CpuId, s: &mut TaskFrame) -> Next {
    match k.wl {
        Workload::Ipistorm(_) => ipistorm::kthread_step(k, cpu, s),
        Workload::Idle => unreachable!("the idle workload has no tasks"),
    }
}
