//! Models `kernel/entry/common.c` @ v6.10: the way back to a task's own code, once for every
//! program task.
//!
//! - From a syscall: `syscall_exit_to_user_mode()` -> `exit_to_user_mode_loop()`, which calls
//!   `schedule()` when NEED_RESCHED is set (e.g. by a wakeup this syscall made whose wakee
//!   should preempt us).
//! - From an interrupt: `irqentry_exit()`. Into user mode (`irqentry_exit_to_user_mode()`) it
//!   goes through the same loop; into kernel code under full preemption it may preempt
//!   (`irqentry_exit_cond_resched()` -> `preempt_schedule_irq()`).
//!
//! A program task's frame ([`TaskFrame`]) carries what the loop needs between steps: `user`
//! (the step runs in user mode), `preempt` (the loop found NEED_RESCHED and must schedule
//! before the task's code goes on) and `remaining` (user time an interrupt cut short).

use crate::linux::engine::{Frame, Next};
use crate::linux::kernel::sched::core::ScheduleCaller;
use crate::linux::programs::TaskFrame;
use crate::linux::{CpuId, Kernel};
use crate::sim::Time;

/// The entry half of `PathCosts::syscall` (entry + exit, `perf bench syscall basic`).
pub fn syscall_enter(k: &Kernel) -> Time {
    k.costs.syscall / 2
}

/// `syscall_exit_to_user_mode()`: store the syscall's return value (`regs->ax`) and return
/// the exit half of the syscall cost. Called by the syscall's last step (the caller's user
/// frame is right below it): with NEED_RESCHED set, the user task schedules before running on
/// ([`exit_to_user_mode_loop`] at its next step).
pub fn syscall_exit_to_user_mode(k: &mut Kernel, cpu: CpuId, ret: i64) -> Time {
    // The kernel's "BUG: lock held when returning to user space" / preempt count leak check.
    assert_eq!(
        k.cpus[cpu as usize].preempt_count, 0,
        "syscall_exit_to_user_mode() on CPU {cpu} with preemption disabled"
    );
    k.cpus[cpu as usize].x.ret = ret;
    let nr = crate::linux::kernel::sched::need_resched(k, cpu);
    if let Some(Frame::Program(tf)) = k.cpus[cpu as usize].x.caller_frame_mut() {
        if nr {
            tf.preempt = true;
        }
        let curr = k.curr(cpu);
        k.tasks[curr as usize].user_ret = ret;
    }
    k.costs.syscall - k.costs.syscall / 2
}

/// `exit_to_user_mode_loop()` as a program task's frame resumes: a pending preemption
/// schedules first, and user time an interrupt cut short runs out before the task's code goes
/// on (a wall-clock spin only runs what is left of it). `None`: the task's own code runs now.
#[inline]
pub fn exit_to_user_mode_loop(k: &Kernel, s: &mut TaskFrame) -> Option<Next> {
    if s.preempt {
        s.preempt = false;
        s.user = false;
        return Some(Next::Call(0, Frame::ScheduleCaller(ScheduleCaller::schedule())));
    }
    if s.remaining > 0 {
        s.user = true;
        let r = std::mem::take(&mut s.remaining);
        let r = if s.spin_until > 0 { s.spin_until.saturating_sub(k.now) } else { r };
        return Some(Next::Cont(r));
    }
    s.user = false;
    None
}

/// `irqentry_exit()` of an interrupt that found IRQs on, after `iret`'s IRQ enable: into user
/// mode with NEED_RESCHED set, the interrupted program's rest (`saved`) runs after
/// `exit_to_user_mode_loop()` has scheduled; a wall-clock spin (schbench's `usec_spin()`
/// polling `gettimeofday()`) ends at its deadline, the time spent in the handler not added to
/// it. Returns the interrupt's return step, or `None` when the interrupted context is not user
/// mode or has nothing to do (the caller then goes on to [`irqentry_exit_cond_resched`]).
pub fn irqentry_exit_to_user_mode(k: &mut Kernel, cpu: CpuId, saved: Time, nr: bool) -> Option<Next> {
    let exit = k.m.costs.irq_exit_ns;
    let now = k.now;
    let Some(Frame::Program(tf)) = k.cpus[cpu as usize].x.caller_frame_mut() else { return None };
    if tf.user && nr {
        tf.preempt = true;
        tf.remaining += saved;
        return Some(Next::Ret(exit));
    }
    if tf.user && tf.spin_until > 0 {
        // It ends at the return to user mode if the deadline passed meanwhile.
        return Some(Next::Ret(exit.max(tf.spin_until.saturating_sub(now))));
    }
    None
}

/// `irqentry_exit_cond_resched()`: under full preemption, kernel code interrupted with
/// preemption enabled is preempted at the interrupt's exit (`preempt_schedule_irq()`). The
/// model takes this point only in a task's own code (a program's, a kworker's or a periodic
/// kernel thread's body), where it knows no lock is held.
pub fn irqentry_exit_cond_resched(k: &mut Kernel, cpu: CpuId, nr: bool) -> bool {
    let own_code = matches!(
        k.cpus[cpu as usize].x.caller_frame_mut().map(|f| &*f),
        Some(Frame::Program(_)) | Some(Frame::Worker(_)) | Some(Frame::Kthread(_))
    );
    nr && own_code && crate::linux::kernel::sched::core::full_preemption(k) && k.cpus[cpu as usize].preempt_count == 0
}
