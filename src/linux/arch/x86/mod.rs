//! Models the x86 interrupt entry/exit paths of `arch/x86/kernel/` and `kernel/softirq.c`
//! @ v6.10 that the model delivers: the local APIC timer, CALL_FUNCTION_SINGLE and
//! RESCHEDULE system vectors.

pub mod mm;
pub mod mwait;

use crate::linux::engine::{local_irq_enable, Frame, Next};
use crate::linux::kernel::entry::common;
use crate::linux::kernel::smp::FlushQueue;
use crate::linux::kernel::softirq;
use crate::linux::kernel::time::tick_sched;
use crate::linux::preempt::HARDIRQ_OFFSET;
use crate::linux::{CpuId, Kernel};
use crate::sim::Time;
use crate::trace::{Event, Vector};

/// [`irq_handler()`] resume points, in code order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HardIrqAt {
    /// Interrupt entry: the vector's handler.
    Entry,
    /// Local timer: wake the tasks whose sleep timers expired, one at a time.
    TimerWakeups,
    /// `irq_exit_rcu()`: the vector's exit record, then pending softirqs.
    IrqExit,
    /// The return to the interrupted context (`irqentry_exit()`).
    Iret,
    /// Back from `preempt_schedule_irq()`.
    Preempted,
}

/// An interrupt handler in progress.
#[derive(Debug, Clone, Copy)]
pub struct HardIrq {
    pub vector: Vector,
    /// The remaining time of the step this interrupt preempted.
    pub saved: Time,
    pub at: HardIrqAt,
}

impl HardIrq {
    pub fn new(vector: Vector, saved: Time) -> Self {
        HardIrq { vector, saved, at: HardIrqAt::Entry }
    }
}

/// Models a system-vector interrupt: `DEFINE_IDTENTRY_SYSVEC(sysvec_call_function_single)`,
/// `DEFINE_IDTENTRY_SYSVEC_SIMPLE(sysvec_reschedule_ipi)` (no `irq_enter`/`irq_exit`, so no
/// softirq processing at its exit) and `sysvec_apic_timer_interrupt` — arch/x86/kernel/smp.c,
/// arch/x86/kernel/apic/apic.c @ v6.10; with `irq_exit_rcu()` from kernel/softirq.c.
///
/// Context: hardirq, IRQs off. Returns to the interrupted context with IRQs on.
pub fn irq_handler(k: &mut Kernel, cpu: CpuId, s: &mut HardIrq) -> Next {
    match s.at {
        HardIrqAt::Entry => {
            k.cpus[cpu as usize].preempt_count += HARDIRQ_OFFSET;
            k.tp(cpu, Event::VectorEntry { vector: s.vector });
            let entry = k.m.costs.irq_entry_ns;
            match s.vector {
                Vector::CallFunctionSingle | Vector::CallFunction => {
                    // generic_smp_call_function_single_interrupt() /
                    // generic_smp_call_function_interrupt(): the same flush.
                    s.at = HardIrqAt::IrqExit;
                    Next::Call(entry, Frame::FlushQueue(FlushQueue::default()))
                }
                Vector::Reschedule => {
                    // scheduler_ipi(): fold NEED_RESCHED into the preempt count.
                    if crate::linux::kernel::sched::need_resched(k, cpu) {
                        k.cpus[cpu as usize].pnr = true;
                    }
                    s.at = HardIrqAt::IrqExit;
                    Next::Cont(entry + k.costs.scheduler_ipi)
                }
                Vector::LocalTimer => {
                    k.stats.ticks += 0;
                    s.at = HardIrqAt::TimerWakeups;
                    let c = tick_sched::hrtimer_interrupt(k, cpu);
                    Next::Cont(entry + c)
                }
            }
        }
        HardIrqAt::TimerWakeups => {
            // Expired sleep timers: hrtimer_wakeup() -> wake_up_process().
            if let Some(p) = k.cpus[cpu as usize].tick.expired.pop() {
                return Next::Call(0, Frame::TryToWakeUp(crate::linux::kernel::sched::core::TryToWakeUp::new(p, 0)));
            }
            s.at = HardIrqAt::IrqExit;
            Next::Cont(0)
        }
        HardIrqAt::IrqExit => {
            k.tp(cpu, Event::VectorExit { vector: s.vector });
            k.cpus[cpu as usize].preempt_count -= HARDIRQ_OFFSET;
            s.at = HardIrqAt::Iret;
            if s.vector != Vector::Reschedule {
                // irq_exit_rcu(): run pending softirqs unless already in interrupt context.
                if let Some(f) = softirq::irq_exit_softirqs(k, cpu) {
                    return Next::Call(0, f);
                }
            }
            Next::Cont(0)
        }
        HardIrqAt::Preempted => {
            // Back from preempt_schedule_irq(): finish the interrupted step.
            Next::Ret(s.saved)
        }
        HardIrqAt::Iret => {
            // iret: the interrupted context had IRQs on. Then irqentry_exit(): into user mode
            // with NEED_RESCHED set, exit_to_user_mode_loop() schedules (the user code's
            // remaining time resumes after that); into a task's own kernel code under full
            // preemption, preempt_schedule_irq().
            local_irq_enable(k, cpu);
            let nr = crate::linux::kernel::sched::need_resched(k, cpu);
            if let Some(next) = common::irqentry_exit_to_user_mode(k, cpu, s.saved, nr) {
                return next;
            }
            if common::irqentry_exit_cond_resched(k, cpu, nr) {
                s.at = HardIrqAt::Preempted;
                return Next::Call(
                    k.m.costs.irq_exit_ns,
                    Frame::ScheduleCaller(crate::linux::kernel::sched::core::ScheduleCaller::preempt_schedule_common()),
                );
            }
            Next::Ret(k.m.costs.irq_exit_ns + s.saved)
        }
    }
}
