//! The code the kernel model runs but does not model: user programs (a benchmark's processes, a
//! background daemon) and the thread bodies of test modules (ipistorm's kthreads). The kernel
//! reaches them only through [`Programs`], which the executor calls for a task whose running
//! frame is [`Frame::Program`](super::engine::Frame::Program), and for an
//! [`Action::Program`](super::engine::Action::Program) one of them queued. Programs in turn
//! reach the kernel only through its entry points (`copy_process()`, `wake_up_new_task()`,
//! syscalls, `sched_setaffinity()`, `do_exit()`).
//!
//! This module names no program: the run's programs are a type parameter of the executor
//! ([`super::engine::dispatch`]), so each program's step inlines into it.

use super::engine::Next;
use super::{CpuId, Kernel};

/// The frame of a program task's own code: a resume point, a loop counter and the state the
/// kernel's return-to-user path keeps for it (`kernel/entry/common.rs`).
#[derive(Debug, Clone, Copy, Default)]
pub struct TaskFrame {
    /// The resume point: a variant of the program's own resume-point enum, as `u8` (the
    /// programs' `EXITED` once the task has exited).
    pub at: u8,
    /// Which of the run's programs the task belongs to (the programs decide the numbering; 0
    /// for tasks `copy_process()` creates).
    pub prog: u8,
    pub i: u64,
    /// Loop start and counter snapshots.
    pub mark: [u64; 3],
    /// The task is in user mode for the current step (a return from interrupt may preempt it).
    pub user: bool,
    /// A return to user mode found NEED_RESCHED: schedule before going on.
    pub preempt: bool,
    /// User time still to run of the step an interrupt preempted.
    pub remaining: u64,
    /// Which task of its program this is.
    pub task: u32,
    /// A wall-clock spin in progress ends here (0: none): after a preemption the spin only
    /// runs what is left of it.
    pub spin_until: u64,
    // The return value of the task's last syscall is the task's `Task::user_ret`, and a
    // program's per-operation timestamps are its own state (ipistorm's `call_start`), not
    // fields here: 56 bytes leave `Frame` room for a tag word of its own within one 64-byte
    // host cache line.
}

/// Declares a program task's resume points: a one-byte enum whose variants say what the
/// code does next, in code order. It is stored in [`TaskFrame::at`] as `X as u8` (so the frame
/// stays one small `Copy` struct shared by every program; a fresh frame's 0 is the first
/// variant) and read back with `X::from_u8`, which panics on a value no variant has.
macro_rules! resume_points {
    ($(#[$m:meta])* enum $name:ident { $($(#[$vm:meta])* $v:ident $(= $d:expr)?),+ $(,)? }) => {
        $(#[$m])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        #[repr(u8)]
        enum $name {
            $($(#[$vm])* $v $(= $d)?),+
        }
        impl $name {
            /// The resume point stored in `TaskFrame::at` as `v`.
            fn from_u8(v: u8) -> Self {
                $(if v == $name::$v as u8 {
                    return $name::$v;
                })+
                panic!("bad resume point {} for {}::{}", v, module_path!(), stringify!($name))
            }
        }
    };
}
pub(crate) use resume_points;

/// The programs of a run, as the kernel calls them.
pub trait Programs {
    /// Create the programs' tasks in a freshly booted kernel.
    fn start(&mut self, k: &mut Kernel);
    /// An [`Action::Program`](super::engine::Action::Program) a program queued fired.
    fn on_action(&mut self, k: &mut Kernel, what: u32);
    /// One step of a program task's own code, after the return-to-user path
    /// (`exit_to_user_mode_loop()`) found nothing to do first.
    fn task_step(&mut self, k: &mut Kernel, cpu: CpuId, s: &mut TaskFrame) -> Next;
    /// The run is over (the benchmark has finished): the executor stops running CPUs ahead
    /// and the run stops.
    fn finished(&self) -> bool;
}

/// No programs: a machine that only runs its kernel (tests of the kernel alone).
#[derive(Debug, Clone, Copy, Default)]
pub struct NoPrograms;

impl Programs for NoPrograms {
    fn start(&mut self, _k: &mut Kernel) {}
    fn on_action(&mut self, _k: &mut Kernel, _what: u32) {}
    fn task_step(&mut self, _k: &mut Kernel, cpu: CpuId, _s: &mut TaskFrame) -> Next {
        unreachable!("CPU {cpu} ran a program task, but the run has no programs")
    }
    fn finished(&self) -> bool {
        false
    }
}
