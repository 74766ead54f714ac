//! Workloads: programs that run on the modelled machine as kernel threads or user tasks. They
//! reach the kernel model only through its entry points (`smp_call_function_single`,
//! `schedule`, `wake_up_process`, sleeps), never by writing kernel state directly.

pub mod ipistorm;
pub mod params;

use crate::linux::engine::{Frame, Next};
use crate::linux::kernel::sched::core::ScheduleCaller;
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
    /// The task is in user mode for the current step (a return from interrupt may preempt it).
    pub user: bool,
    /// A return to user mode found NEED_RESCHED: schedule before going on.
    pub preempt: bool,
    /// User time still to run of the step an interrupt preempted.
    pub remaining: u64,
    /// Which task of the workload this is.
    pub task: u32,
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

/// Run one step of a workload task's code. User tasks first honour a pending preemption
/// (`exit_to_user_mode_loop()` -> `schedule()`) and finish the user time an interrupt cut.
pub fn task_step(k: &mut Kernel, cpu: CpuId, s: &mut TaskFrame) -> Next {
    if s.preempt {
        s.preempt = false;
        s.user = false;
        return Next::Call(0, Frame::ScheduleCaller(ScheduleCaller::schedule()));
    }
    if s.remaining > 0 {
        s.user = true;
        return Next::Cont(std::mem::take(&mut s.remaining));
    }
    s.user = false;
    match k.wl {
        Workload::Ipistorm(_) => ipistorm::kthread_step(k, cpu, s),
        Workload::Idle => unreachable!("the idle workload has no tasks"),
    }
}
