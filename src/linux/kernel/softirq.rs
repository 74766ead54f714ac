//! Models `kernel/softirq.c` @ v6.10: raising softirqs, when ksoftirqd is woken, irq-exit
//! processing, `handle_softirqs()` and the ksoftirqd threads.

use super::sched::core::{ScheduleCaller, TryToWakeUp};
use super::sched::{need_resched, TASK_INTERRUPTIBLE, TASK_RUNNING};
use crate::linux::engine::{local_irq_disable, local_irq_enable, Frame, Next};
use crate::linux::preempt::{HARDIRQ_MASK, NMI_MASK, SOFTIRQ_DISABLE_OFFSET, SOFTIRQ_MASK, SOFTIRQ_OFFSET};
use crate::linux::{CpuId, Kernel};
use crate::trace::Event;

pub const TIMER_SOFTIRQ: u32 = 1;
pub const NET_RX_SOFTIRQ: u32 = 3;
pub const SCHED_SOFTIRQ: u32 = 7;
pub const RCU_SOFTIRQ: u32 = 9;
/// MAX_SOFTIRQ_RESTART.
const MAX_SOFTIRQ_RESTART: u8 = 10;

/// Models `in_interrupt()`: hardirq, softirq (serving or BH-disabled) or NMI.
#[inline]
pub fn in_interrupt(k: &Kernel, cpu: CpuId) -> bool {
    k.cpus[cpu as usize].preempt_count & (HARDIRQ_MASK | SOFTIRQ_MASK | NMI_MASK) != 0
}

/// Models `in_serving_softirq()`: a softirq handler is running on `cpu` (not merely
/// bottom halves disabled).
#[inline]
pub fn in_serving_softirq(k: &Kernel, cpu: CpuId) -> bool {
    k.cpus[cpu as usize].preempt_count & SOFTIRQ_OFFSET != 0
}

/// Models `local_bh_disable()` — include/linux/bottom_half.h @ v6.10 (!RT): add
/// `SOFTIRQ_DISABLE_OFFSET` to the preempt count; softirqs raised meanwhile wait for
/// [`local_bh_enable`] (an interrupt's exit sees `in_interrupt()`).
#[inline]
pub fn local_bh_disable(k: &mut Kernel, cpu: CpuId) {
    k.cpus[cpu as usize].preempt_count += SOFTIRQ_DISABLE_OFFSET;
}

/// Models `__local_bh_enable_ip()` — kernel/softirq.c @ v6.10 (!RT): drop the bottom-half count
/// but keep preemption disabled; outside interrupt context with softirqs pending,
/// `do_softirq()` runs them here (IRQs saved off, `handle_softirqs()` on this task's stack).
/// Returns that call; the caller then calls [`local_bh_enable_done`] (also when there is none).
pub fn local_bh_enable(k: &mut Kernel, cpu: CpuId) -> Option<Frame> {
    k.cpus[cpu as usize].preempt_count -= SOFTIRQ_DISABLE_OFFSET - 1;
    if !in_interrupt(k, cpu) && k.cpus[cpu as usize].softirq_pending != 0 {
        local_irq_disable(k, cpu);
        return Some(Frame::HandleSoftirqs(HandleSoftirqs::default()));
    }
    None
}

/// The end of `__local_bh_enable_ip()` — kernel/softirq.c @ v6.10: `do_softirq()`'s
/// `local_irq_restore()` (when it ran, `ran`), `preempt_count_dec()` and
/// `preempt_check_resched()`, which under full preemption schedules now. Returns that call.
pub fn local_bh_enable_done(k: &mut Kernel, cpu: CpuId, ran: bool) -> Option<Frame> {
    if ran {
        local_irq_enable(k, cpu);
    }
    super::sched::core::preempt_enable(k, cpu)
}

/// Models `__raise_softirq_irqoff()` — kernel/softirq.c @ v6.10: set the pending bit, nothing
/// else.
pub fn __raise_softirq_irqoff(k: &mut Kernel, cpu: CpuId, nr: u32) {
    k.tp(cpu, Event::SoftirqRaise { vec: nr });
    k.cpus[cpu as usize].softirq_pending |= 1 << nr;
}

/// Models `should_wake_ksoftirqd()` — kernel/softirq.c @ v6.10: always on !RT, unless the
/// softirq RFC v1 flag (or the RFC v2 `softirq_ctrl` count) says the flush will process
/// softirqs; on RT, only outside a BH-disabled section (`softirq_ctrl.cnt == 0`).
pub fn should_wake_ksoftirqd(k: &Kernel, cpu: CpuId) -> bool {
    let c = &k.cpus[cpu as usize];
    if k.cfg.preempt_rt {
        return c.softirq_ctrl_cnt == 0;
    }
    if k.cfg.softirq_flag() {
        return !c.will_do_softirq_post_flush;
    }
    if k.cfg.softirq_ctrl_rfc() {
        return c.softirq_ctrl_cnt == 0;
    }
    true
}

/// Models `wakeup_softirqd()`: `wake_up_process()` of this CPU's ksoftirqd, as a frame to call.
pub fn wakeup_softirqd(k: &Kernel, cpu: CpuId) -> Frame {
    Frame::TryToWakeUp(TryToWakeUp::new(k.cpus[cpu as usize].rq.ksoftirqd, 0))
}

/// Models `raise_softirq_irqoff()` — kernel/softirq.c @ v6.10: set the bit; outside interrupt
/// context, wake ksoftirqd if `should_wake_ksoftirqd()`. Returns the wakeup to call, if any.
pub fn raise_softirq_irqoff(k: &mut Kernel, cpu: CpuId, nr: u32) -> Option<Frame> {
    __raise_softirq_irqoff(k, cpu, nr);
    if !in_interrupt(k, cpu) && should_wake_ksoftirqd(k, cpu) {
        return Some(wakeup_softirqd(k, cpu));
    }
    None
}

/// Models `invoke_softirq()` — kernel/softirq.c @ v6.10: !RT runs the softirqs inline on the
/// irq stack; RT wakes ksoftirqd (when `should_wake_ksoftirqd()`).
pub fn invoke_softirq(k: &mut Kernel, cpu: CpuId) -> Option<Frame> {
    if k.cfg.preempt_rt {
        return should_wake_ksoftirqd(k, cpu).then(|| wakeup_softirqd(k, cpu));
    }
    Some(Frame::HandleSoftirqs(HandleSoftirqs::default()))
}

/// The softirq part of `__irq_exit_rcu()` — kernel/softirq.c @ v6.10: after dropping the
/// hardirq count, run pending softirqs unless still in interrupt context.
pub fn irq_exit_softirqs(k: &mut Kernel, cpu: CpuId) -> Option<Frame> {
    if !in_interrupt(k, cpu) && k.cpus[cpu as usize].softirq_pending != 0 {
        return invoke_softirq(k, cpu);
    }
    None
}

/// Models `do_softirq_post_smp_call_flush()` — kernel/softirq.c @ v6.10. !RT: the inline
/// `do_softirq()`, which runs pending softirqs here in the idle task. RT: WARN_ON_ONCE if
/// softirqs were raised during the flush (with 6675ce20046d, other than SCHED_SOFTIRQ), then
/// `invoke_softirq()`.
pub fn do_softirq_post_smp_call_flush(k: &mut Kernel, cpu: CpuId, was_pending: u32) -> Option<Frame> {
    if k.cfg.preempt_rt {
        let now = k.cpus[cpu as usize].softirq_pending;
        if now == was_pending {
            return None;
        }
        // Something was raised during the flush. v6.10 warns; 6675ce20046d accepts
        // SCHED_SOFTIRQ (the ILB kick) and warns only for other bits. Then invoke_softirq().
        let unexpected = if k.cfg.has(crate::linux::patches::Patch::S6675ce20046d) {
            was_pending != now & !(1u32 << SCHED_SOFTIRQ)
        } else {
            true
        };
        if unexpected {
            k.warn_on_once(cpu, crate::trace::WarnSite::DoSoftirqPostSmpCallFlush);
        }
        return invoke_softirq(k, cpu);
    }
    // do_softirq(): nothing if in interrupt context or nothing pending.
    if in_interrupt(k, cpu) || k.cpus[cpu as usize].softirq_pending == 0 {
        return None;
    }
    Some(Frame::HandleSoftirqs(HandleSoftirqs::default()))
}

/// `handle_softirqs()` resume points, in code order.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum HandleSoftirqsAt {
    /// `__local_bh_disable_ip(SOFTIRQ_OFFSET)` and the time budget.
    #[default]
    Enter,
    /// The `restart:` label: take the pending mask, IRQs on.
    Restart,
    /// Run the next pending vector's handler.
    NextVector,
    /// A handler returned: its `softirq_exit` record.
    HandlerDone,
    /// All taken vectors ran: IRQs off, restart or wake ksoftirqd if more are pending.
    CheckPending,
    /// `__local_bh_enable(SOFTIRQ_OFFSET)` and return.
    Exit,
}

/// `handle_softirqs()` in progress.
#[derive(Debug, Clone, Copy, Default)]
pub struct HandleSoftirqs {
    pub at: HandleSoftirqsAt,
    /// The pending mask being processed.
    pub pending: u32,
    /// The vector being run.
    pub vec: u32,
    pub restarts: u8,
    pub end_jiffies: u64,
}

/// Models `handle_softirqs()` — kernel/softirq.c @ v6.10: snapshot and clear the pending
/// mask, enable IRQs, run the handlers in bit order, and restart while new bits appear (at
/// most 10 times, within 2 ms, without NEED_RESCHED); otherwise wake ksoftirqd.
///
/// Context: softirq (SOFTIRQ_OFFSET held), IRQs on inside the handlers.
pub fn handle_softirqs(k: &mut Kernel, cpu: CpuId, s: &mut HandleSoftirqs) -> Next {
    match s.at {
        HandleSoftirqsAt::Enter => {
            // __local_bh_disable_ip(SOFTIRQ_OFFSET); MAX_SOFTIRQ_TIME is msecs_to_jiffies(2).
            k.cpus[cpu as usize].preempt_count += SOFTIRQ_OFFSET;
            s.end_jiffies = k.jiffies() + (2 * k.cfg.hz as u64).div_ceil(1000);
            s.restarts = MAX_SOFTIRQ_RESTART;
            s.at = HandleSoftirqsAt::Restart;
            Next::Cont(0)
        }
        HandleSoftirqsAt::Restart => {
            // Restart point: take the pending mask, IRQs on.
            let c = &mut k.cpus[cpu as usize];
            s.pending = c.softirq_pending;
            c.softirq_pending = 0;
            local_irq_enable(k, cpu);
            s.at = HandleSoftirqsAt::NextVector;
            Next::Cont(k.costs.softirq)
        }
        HandleSoftirqsAt::NextVector => {
            if s.pending == 0 {
                s.at = HandleSoftirqsAt::CheckPending;
                return Next::Cont(0);
            }
            let vec = s.pending.trailing_zeros();
            s.pending &= !(1 << vec);
            s.vec = vec;
            k.tp(cpu, Event::SoftirqEntry { vec });
            s.at = HandleSoftirqsAt::HandlerDone;
            if vec == SCHED_SOFTIRQ {
                return Next::Call(0, Frame::SchedBalanceSoftirq(Default::default()));
            }
            if vec == NET_RX_SOFTIRQ && !k.ipc.net.softnet.is_empty() {
                return Next::Call(0, Frame::NetRxAction(Default::default()));
            }
            if vec == TIMER_SOFTIRQ {
                // The profile's measured TIMER softirq time (callbacks the model does not run
                // one by one), then the timers the model does carry.
                let work = std::mem::take(&mut k.cpus[cpu as usize].softirq_work[vec as usize]);
                return Next::Call(work, Frame::RunTimerSoftirq(Default::default()));
            }
            // A background source's handler (rcu_core() for RCU_SOFTIRQ, ...): its run time.
            let work = std::mem::take(&mut k.cpus[cpu as usize].softirq_work[vec as usize]);
            Next::Cont(work)
        }
        HandleSoftirqsAt::HandlerDone => {
            k.tp(cpu, Event::SoftirqExit { vec: s.vec });
            s.at = HandleSoftirqsAt::NextVector;
            Next::Cont(0)
        }
        HandleSoftirqsAt::CheckPending => {
            local_irq_disable(k, cpu);
            s.at = HandleSoftirqsAt::Exit;
            if k.cpus[cpu as usize].softirq_pending != 0 {
                s.restarts -= 1;
                if k.jiffies() < s.end_jiffies && !need_resched(k, cpu) && s.restarts > 0 {
                    s.at = HandleSoftirqsAt::Restart;
                    return Next::Cont(0);
                }
                return Next::Call(0, wakeup_softirqd(k, cpu));
            }
            Next::Cont(0)
        }
        HandleSoftirqsAt::Exit => {
            k.cpus[cpu as usize].preempt_count -= SOFTIRQ_OFFSET;
            Next::Ret(0)
        }
    }
}

/// `smpboot_thread_fn()` resume points for ksoftirqd, in code order.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum KsoftirqdAt {
    /// `ksoftirqd_should_run()`: run the pending softirqs, or sleep.
    #[default]
    ShouldRun,
    /// Back from `schedule()`: woken.
    Woken,
    /// Back from `handle_softirqs()`: IRQs on, `cond_resched()`.
    Ran,
}

/// The ksoftirqd thread body in progress.
#[derive(Debug, Clone, Copy, Default)]
pub struct Ksoftirqd {
    pub at: KsoftirqdAt,
}

/// The saved stack of a ksoftirqd thread asleep in `schedule()` (its state at boot).
pub fn ksoftirqd_initial_stack() -> Vec<Frame> {
    vec![
        Frame::Ksoftirqd(Ksoftirqd { at: KsoftirqdAt::Woken }),
        Frame::ScheduleCaller(ScheduleCaller::asleep_in_schedule()),
        Frame::Schedule(super::sched::core::Schedule::switched_out()),
    ]
}

/// Models `smpboot_thread_fn()` with ksoftirqd's `ksoftirqd_should_run()` and
/// `run_ksoftirqd()` — kernel/smpboot.c, kernel/softirq.c @ v6.10.
///
/// Context: the per-CPU ksoftirqd task.
pub fn run_ksoftirqd(k: &mut Kernel, cpu: CpuId, s: &mut Ksoftirqd) -> Next {
    let me = k.curr(cpu) as usize;
    match s.at {
        KsoftirqdAt::ShouldRun => {
            k.tasks[me].state = TASK_INTERRUPTIBLE;
            if k.cpus[cpu as usize].softirq_pending == 0 {
                s.at = KsoftirqdAt::Woken;
                return Next::Call(0, Frame::ScheduleCaller(ScheduleCaller::schedule()));
            }
            k.tasks[me].state = TASK_RUNNING;
            // run_ksoftirqd(): IRQs off, handle_softirqs(true).
            local_irq_disable(k, cpu);
            s.at = KsoftirqdAt::Ran;
            Next::Call(0, Frame::HandleSoftirqs(HandleSoftirqs::default()))
        }
        KsoftirqdAt::Woken => {
            s.at = KsoftirqdAt::ShouldRun;
            Next::Cont(0)
        }
        KsoftirqdAt::Ran => {
            local_irq_enable(k, cpu);
            s.at = KsoftirqdAt::ShouldRun;
            match super::sched::core::cond_resched(k, cpu) {
                Some(f) => Next::Call(k.costs.cond_resched, f),
                None => Next::Cont(k.costs.cond_resched),
            }
        }
    }
}
