//! Models the task-creation part of `kernel/fork.c` @ v6.10 that workloads use:
//! `copy_process()` for a new user thread or process, or a kernel thread
//! (`kthread_create_on_cpu()` binds it to a CPU), with `copy_thread()` setting up its first
//! return (`ret_from_fork` into the program's code). Waking it is `wake_up_new_task()`
//! (`kernel/sched/core.rs`). A program whose creator is modelled as running code makes the
//! syscall [`kernel_clone`] (hackbench's `fork()`): the parent spends `copy_process()`'s time,
//! then wakes the child. Elsewhere the creator is not modelled as running code (docs/design.md,
//! "What is simplified") and creation costs nothing.

use crate::linux::engine::{Frame, Next};
use crate::linux::kernel::futex::{Nanosleep, NanosleepAt, DEFAULT_TIMER_SLACK_NS};
use crate::linux::kernel::sched::core::{Schedule, ScheduleCaller};
use crate::linux::kernel::sched::{MmId, TaskKind, NO_MM, TASK_INTERRUPTIBLE};
use crate::linux::programs::TaskFrame;
use crate::linux::{CpuId, Kernel, TaskId};
use crate::sim::Time;

/// Models `copy_process()` + `copy_thread()` — kernel/fork.c, arch/x86/kernel/process.c @
/// v6.10: a new workload task `comm` with scheduling `policy` and kernel priority `prio`,
/// bound to `bound` if given (`kthread_bind()`; the model also binds a user thread that its
/// program pins to one CPU this way), whose first switch runs `ret_from_fork` and then its own
/// code as role `role` of its workload (`TaskFrame::task`).
/// A user task lands in its creator's task group: `KernelConfig::cgroup_depth` levels below
/// the root (`se->depth`). Without `CLONE_VM` (a `fork()`, a new process) it gets an address
/// space of its own (`copy_mm()` -> `dup_mm()`); [`copy_process_clone_vm`] makes a thread.
pub fn copy_process(k: &mut Kernel, comm: String, policy: u32, prio: i32, bound: Option<CpuId>, role: u32) -> TaskId {
    let t = kthread_create(k, comm, policy, prio, bound, role);
    k.ents[t as usize].depth = k.cfg.cgroup_depth;
    k.tasks[t as usize].mm = own_mm(t);
    t
}

/// [`copy_process`] with `CLONE_VM` (`pthread_create()`, a thread of `of`'s process): the new
/// task shares `of`'s address space (`copy_mm()` takes a reference), so switches between them
/// skip `switch_mm_irqs_off()`'s CR3 write (`arch::x86::mm`).
pub fn copy_process_clone_vm(
    k: &mut Kernel,
    of: TaskId,
    comm: String,
    policy: u32,
    prio: i32,
    bound: Option<CpuId>,
    role: u32,
) -> TaskId {
    let mm = k.tasks[of as usize].mm;
    debug_assert_ne!(mm, NO_MM, "CLONE_VM of a kernel thread");
    let t = copy_process(k, comm, policy, prio, bound, role);
    k.tasks[t as usize].mm = mm;
    t
}

/// The address space a new process's first task `t` creates: ids follow task ids, so they
/// are unique and need no counter.
fn own_mm(t: TaskId) -> MmId {
    t + 1
}

/// A workload's kernel thread (a module's `kthread_create_on_cpu()`, as ipistorm's): like
/// [`copy_process`], in the root task group (`se->depth` 0) whatever the user tasks' depth.
pub fn kthread_create(k: &mut Kernel, comm: String, policy: u32, prio: i32, bound: Option<CpuId>, role: u32) -> TaskId {
    let t = k.new_task(TaskKind::Workload, comm, policy, prio, bound);
    k.tasks[t as usize].saved =
        vec![Frame::Program(TaskFrame { task: role, ..Default::default() }), Frame::RetFromFork];
    t
}

/// A user task that has run since before the machine's modelled history began (a daemon of
/// the background profile, `TaskKind::Daemon`), asleep on `cpu` in `nanosleep()` with the
/// default timer slack until `wake`: its saved stack returns from the sleep into its own code
/// at `frame`, and its sleeper hrtimer is armed. Bound to `bound` if given.
pub fn user_task_asleep_in_nanosleep(
    k: &mut Kernel,
    comm: String,
    bound: Option<CpuId>,
    cpu: CpuId,
    frame: TaskFrame,
    wake: Time,
) -> TaskId {
    let t = k.new_task(TaskKind::Daemon, comm, 0, 120, bound);
    let task = &mut k.tasks[t as usize];
    // A daemon is a process of its own.
    task.mm = own_mm(t);
    task.state = TASK_INTERRUPTIBLE;
    task.cpu = cpu;
    task.saved = vec![
        Frame::Program(frame),
        Frame::Nanosleep(Nanosleep { ns: 0, slack_ns: 0, from_user: true, abs: false, at: NanosleepAt::Woken }),
        Frame::ScheduleCaller(ScheduleCaller::asleep_in_schedule()),
        Frame::Schedule(Schedule::switched_out()),
    ];
    crate::linux::kernel::time::tick_sched::hrtimer_start_sleeper(k, cpu, wake, wake + DEFAULT_TIMER_SLACK_NS, t);
    t
}

// A task's saved kernel stack is a `Vec<Frame>` and every CPU runs one: named resume points
// are one-byte enums like the `u8`s they replaced, and a frame fits one 64-byte host cache
// line (a running-frame slot of `engine::TopFrames` is one line).
const _: () = assert!(std::mem::size_of::<Frame>() <= 64, "a Frame grew beyond 64 bytes (one host cache line)");

/// `kernel_clone()` resume points, in code order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KernelCloneAt {
    /// Syscall entry and `copy_process()`'s work (copying the mm, files, signal state).
    CopyProcess,
    /// `wake_up_new_task()` and the return to the parent.
    WakeUpNewTask,
}

/// A `fork()`/`clone()` in progress on the parent's CPU.
#[derive(Debug, Clone, Copy)]
pub struct KernelClone {
    /// The child, made by [`copy_process`] when the syscall starts (the model's task object;
    /// nothing runs it until `wake_up_new_task()`).
    pub child: TaskId,
    /// The time `copy_process()` takes, ns: the caller's measured figure (it depends on what
    /// the parent has to copy, its mm above all).
    pub copy_ns: u32,
    pub at: KernelCloneAt,
}

impl KernelClone {
    /// The syscall as a frame for the parent to call.
    pub fn frame(child: TaskId, copy_ns: u32) -> Frame {
        Frame::KernelClone(KernelClone { child, copy_ns, at: KernelCloneAt::CopyProcess })
    }
}

/// Models `kernel_clone()` — kernel/fork.c @ v6.10, as the parent's syscall: `copy_process()`
/// for `copy_ns`, then `wake_up_new_task()` from the parent's CPU (the child starts there,
/// `sched_fork()`, and fork balancing places it), and the return of the child's pid. The
/// parent may be preempted by its child on the way out (`syscall_exit_to_user_mode()`).
/// Simplification: no `sched_process_fork` record.
pub fn kernel_clone(k: &mut Kernel, cpu: CpuId, s: &mut KernelClone) -> Next {
    use crate::linux::kernel::entry::common::{syscall_enter, syscall_exit_to_user_mode};
    match s.at {
        KernelCloneAt::CopyProcess => {
            s.at = KernelCloneAt::WakeUpNewTask;
            Next::Cont(syscall_enter(k) + s.copy_ns as crate::sim::Time)
        }
        KernelCloneAt::WakeUpNewTask => {
            crate::linux::kernel::sched::core::sched_fork_and_wake(k, cpu, s.child);
            let pid = k.tasks[s.child as usize].pid as i64;
            Next::Ret(syscall_exit_to_user_mode(k, cpu, pid))
        }
    }
}
