//! Models the syscall boundary of `kernel/entry/common.c` @ v6.10 for the syscalls of the IPC
//! objects: the entry half of the cost on the way in, and on the way out
//! `syscall_exit_to_user_mode()` -> `exit_to_user_mode_loop()`, which calls `schedule()` when
//! NEED_RESCHED is set (e.g. by a wakeup this syscall made whose wakee should preempt us).

use crate::linux::engine::Frame;
use crate::linux::{CpuId, Kernel};
use crate::sim::Time;

/// The entry half of `PathCosts::syscall` (entry + exit, `perf bench syscall basic`).
pub fn syscall_enter(k: &Kernel) -> Time {
    k.costs.syscall / 2
}

/// `syscall_exit_to_user_mode()`: store the syscall's return value (`regs->ax`) and return
/// the exit half of the syscall cost. Called by the syscall's last step (the caller's user
/// frame is right below it): with NEED_RESCHED set, the user task
/// schedules before running on.
pub fn syscall_exit_to_user_mode(k: &mut Kernel, cpu: CpuId, ret: i64) -> Time {
    // The kernel's "BUG: lock held when returning to user space" / preempt count leak check.
    assert_eq!(
        k.cpus[cpu as usize].preempt_count, 0,
        "syscall_exit_to_user_mode() on CPU {cpu} with preemption disabled"
    );
    k.cpus[cpu as usize].x.ret = ret;
    let nr = crate::linux::kernel::sched::need_resched(k, cpu);
    if let Some(Frame::Workload(tf)) = k.cpus[cpu as usize].x.caller_frame_mut() {
        if nr {
            tf.preempt = true;
        }
        let curr = k.curr(cpu);
        k.tasks[curr as usize].user_ret = ret;
    }
    k.costs.syscall - k.costs.syscall / 2
}
