//! Models the task-creation part of `kernel/fork.c` @ v6.10 that workloads use:
//! `copy_process()` for a new user thread or process, or a kernel thread
//! (`kthread_create_on_cpu()` binds it to a CPU), with `copy_thread()` setting up its first
//! return (`ret_from_fork` into the program's code). Waking it is `wake_up_new_task()`
//! (`kernel/sched/core.rs`). The creator is not modelled as running code (ARCHITECTURE.md,
//! "What is simplified"), so creation costs nothing.

use crate::linux::engine::Frame;
use crate::linux::kernel::sched::TaskKind;
use crate::linux::{CpuId, Kernel, TaskId};
use crate::workload::registry::TaskFrame;

/// Models `copy_process()` + `copy_thread()` — kernel/fork.c, arch/x86/kernel/process.c @
/// v6.10: a new workload task `comm` with scheduling `policy` and kernel priority `prio`,
/// bound to `bound` if given (`kthread_bind()`; the model also binds a user thread that its
/// program pins to one CPU this way), whose first switch runs `ret_from_fork` and then its own
/// code as role `role` of its workload (`TaskFrame::task`).
/// A user task lands in its creator's task group: `KernelConfig::cgroup_depth` levels below
/// the root (`se->depth`).
pub fn copy_process(k: &mut Kernel, comm: String, policy: u32, prio: i32, bound: Option<CpuId>, role: u32) -> TaskId {
    let t = kthread_create(k, comm, policy, prio, bound, role);
    k.ents[t as usize].depth = k.cfg.cgroup_depth;
    t
}

/// A workload's kernel thread (a module's `kthread_create_on_cpu()`, as ipistorm's): like
/// [`copy_process`], in the root task group (`se->depth` 0) whatever the user tasks' depth.
pub fn kthread_create(k: &mut Kernel, comm: String, policy: u32, prio: i32, bound: Option<CpuId>, role: u32) -> TaskId {
    let t = k.new_task(TaskKind::Workload, comm, policy, prio, bound);
    k.tasks[t as usize].saved =
        vec![Frame::Workload(TaskFrame { task: role, ..Default::default() }), Frame::RetFromFork];
    t
}

// A task's saved kernel stack is a `Vec<Frame>` and every CPU runs one: named resume points
// are one-byte enums like the `u8`s they replaced, and a frame fits one 64-byte host cache
// line (a running-frame slot of `engine::TopFrames` is one line).
const _: () = assert!(std::mem::size_of::<Frame>() <= 64, "a Frame grew beyond 64 bytes (one host cache line)");
