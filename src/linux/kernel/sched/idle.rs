//! Models `kernel/sched/idle.c` @ v6.10: the idle task's loop.

use super::{need_resched, need_resched_or_ipi, TIF_NEED_RESCHED, TIF_NOTIFY_IPI, TIF_POLLING_NRFLAG};
use crate::linux::drivers::cpuidle::{self, EnterState};
use crate::linux::engine::{local_irq_disable, local_irq_enable, Frame, Next};
use crate::linux::kernel::smp::FlushSmpCallFunctionQueue;
use crate::linux::kernel::time::tick_sched;
use crate::linux::{CpuId, Kernel};
use crate::trace::Event;

use super::core::ScheduleCaller;

/// `do_idle()` resume points.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum DoIdleAt {
    /// Top of `do_idle()`, called in a loop by `cpu_startup_entry()`.
    #[default]
    Entry,
    /// `while (!need_resched())` check.
    LoopCheck,
    /// Back from `cpuidle_idle_call()`.
    AfterIdleCall,
    /// Leaving the loop: fold, tick restart, clear POLL.
    Exit,
    /// Back from `flush_smp_call_function_queue()`.
    AfterFlush,
    /// Back from `schedule_idle()`.
    AfterScheduleIdle,
}

#[derive(Debug, Clone, Copy, Default)]
pub struct DoIdle {
    pub at: DoIdleAt,
}

/// Models `pick_task_idle()` — kernel/sched/idle.c @ v6.10: the idle task, always.
pub fn pick_task_idle(k: &Kernel, cpu: CpuId) -> crate::linux::TaskId {
    k.cpus[cpu as usize].rq.idle
}

/// Models `set_next_task_idle()` — kernel/sched/idle.c @ v6.10: `__update_idle_core()` marks
/// the LLC as having an idle core if all its siblings are idle. Returns the cost.
pub fn set_next_task_idle(k: &mut Kernel, cpu: CpuId) -> crate::sim::Time {
    super::fair::__update_idle_core(k, cpu)
}

/// Set or clear a bit in the current (idle) task's flag word; returns the line cost.
pub fn current_flags_update(k: &mut Kernel, cpu: CpuId, set: u32, clear: u32) -> u64 {
    let t = k.curr(cpu) as usize;
    k.tasks[t].ti_flags = (k.tasks[t].ti_flags | set) & !clear;
    let line = k.tasks[t].ti_line;
    k.line_write(cpu, line)
}

/// Models `__current_set_polling()` — include/linux/sched/idle.h @ v6.10. A no-op on
/// architectures without TIF_POLLING_NRFLAG (arm64).
pub fn __current_set_polling(k: &mut Kernel, cpu: CpuId) -> u64 {
    if !k.m.polling_idle {
        return 0;
    }
    current_flags_update(k, cpu, TIF_POLLING_NRFLAG, 0)
}

/// Models `__current_clr_polling()` — include/linux/sched/idle.h @ v6.10 (followed by the
/// caller's `smp_mb__after_atomic()`).
pub fn __current_clr_polling(k: &mut Kernel, cpu: CpuId) -> u64 {
    if !k.m.polling_idle {
        return 0;
    }
    current_flags_update(k, cpu, 0, TIF_POLLING_NRFLAG)
}

/// Models `current_clr_polling()` — include/linux/sched/idle.h @ v6.10: clear POLL, full
/// barrier, then fold NEED_RESCHED into the preempt count (`preempt_fold_need_resched`).
pub fn current_clr_polling(k: &mut Kernel, cpu: CpuId) -> u64 {
    let c = __current_clr_polling(k, cpu);
    if need_resched(k, cpu) {
        k.cpus[cpu as usize].pnr = true;
    }
    c
}

/// Models `current_set_polling_and_test()` — include/linux/sched/idle.h @ v6.10. Returns
/// (need_resched after the barrier, cost).
pub fn current_set_polling_and_test(k: &mut Kernel, cpu: CpuId) -> (bool, u64) {
    let c = __current_set_polling(k, cpu);
    (need_resched_or_ipi(k, cpu), c)
}

/// Models `current_clr_polling_and_test()` — include/linux/sched/idle.h @ v6.10.
pub fn current_clr_polling_and_test(k: &mut Kernel, cpu: CpuId) -> (bool, u64) {
    let c = __current_clr_polling(k, cpu);
    (need_resched_or_ipi(k, cpu), c)
}

/// Models `do_idle()` — kernel/sched/idle.c @ v6.10, as looped by `cpu_startup_entry()`.
///
/// Context: the idle task, preemption disabled.
/// With the TIF_NOTIFY_IPI RFC, the loop also leaves on NOTIFY_IPI, the exit folds only a real
/// NEED_RESCHED and clears NOTIFY_IPI, and `schedule_idle()` runs only if NEED_RESCHED is set.
pub fn do_idle(k: &mut Kernel, cpu: CpuId, s: &mut DoIdle) -> Next {
    match s.at {
        DoIdleAt::Entry => {
            // nohz_run_idle_balance(): if only NOHZ_NEWILB_KICK is pending and nothing is to
            // run, refresh the blocked load of the tickless CPUs here (_nohz_idle_balance with
            // NOHZ_STATS_KICK), IRQs on.
            let flags = k.cpus[cpu as usize].rq.nohz_flags;
            let mut c = 0;
            if flags & super::NOHZ_NEWILB_KICK != 0 {
                k.cpus[cpu as usize].rq.nohz_flags &= !super::NOHZ_NEWILB_KICK;
                if flags & super::NOHZ_KICK_MASK == 0 && !need_resched(k, cpu) {
                    k.nohz.has_blocked = false;
                    // The blocked-load update of every tickless CPU, each under its rq lock.
                    let mut b = k.nohz.idle_cpus_mask.first();
                    while let Some(x) = b {
                        c += super::fair::sched_balance_update_blocked_averages(k, cpu, x);
                        b = k.nohz.idle_cpus_mask.next_from(x + 1);
                    }
                    k.nohz.next_blocked = k.jiffies() + (32 * k.cfg.hz as u64).div_ceil(1000);
                }
            }
            c += __current_set_polling(k, cpu);
            tick_sched::tick_nohz_idle_enter(k, cpu);
            s.at = DoIdleAt::LoopCheck;
            Next::Cont(k.costs.do_idle_enter + c)
        }
        DoIdleAt::LoopCheck => {
            if need_resched_or_ipi(k, cpu) {
                s.at = DoIdleAt::Exit;
                return Next::Cont(0);
            }
            local_irq_disable(k, cpu);
            s.at = DoIdleAt::AfterIdleCall;
            Next::Call(0, Frame::CpuidleIdleCall(CpuidleIdleCall::default()))
        }
        DoIdleAt::AfterIdleCall => {
            s.at = DoIdleAt::LoopCheck;
            Next::Cont(0)
        }
        DoIdleAt::Exit => {
            let c = &mut k.cpus[cpu as usize];
            if k.cfg.tif_notify_ipi() {
                // preempt_fold_need_resched(): fold only a real NEED_RESCHED.
                if k.tasks[c.rq.curr as usize].ti_flags & TIF_NEED_RESCHED != 0 {
                    c.pnr = true;
                }
            } else {
                // preempt_set_need_resched(): a polling wakeup had no IPI to fold it.
                c.pnr = true;
            }
            let mut cost = k.costs.do_idle_exit;
            cost += tick_sched::tick_nohz_idle_exit(k, cpu);
            // __current_clr_polling(); smp_mb__after_atomic(): from here on, senders must IPI.
            // Before 82c65d60d644 the flag stayed set across schedule(): a switched-out idle
            // task kept "polling".
            if k.cfg.has(crate::linux::patches::Patch::S82c65d60d644) {
                cost += __current_clr_polling(k, cpu);
            }
            if k.cfg.tif_notify_ipi() {
                // current_clr_notify_ipi(): one more atomic on the flag line.
                cost += current_flags_update(k, cpu, 0, TIF_NOTIFY_IPI);
            }
            k.stats.idle_exits += 1;
            s.at = DoIdleAt::AfterFlush;
            Next::Call(cost, Frame::FlushSmpCallFunctionQueue(FlushSmpCallFunctionQueue::default()))
        }
        DoIdleAt::AfterFlush => {
            if k.cfg.tif_notify_ipi() && !need_resched(k, cpu) {
                // The RFC: a pure IPI notification does not go through __schedule().
                s.at = DoIdleAt::Entry;
                return Next::Cont(0);
            }
            s.at = DoIdleAt::AfterScheduleIdle;
            k.stats.schedule_idle_calls += 1;
            Next::Call(0, Frame::ScheduleCaller(ScheduleCaller::schedule_idle()))
        }
        DoIdleAt::AfterScheduleIdle => {
            // do_idle() returns; cpu_startup_entry() calls it again.
            s.at = DoIdleAt::Entry;
            Next::Cont(0)
        }
    }
}

/// `cpuidle_idle_call()` resume points.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum IdleCallAt {
    #[default]
    Start,
    /// `call_cpuidle()`.
    CallCpuidle,
    /// Back from the state's enter routine.
    AfterEnter,
    /// `cpuidle_reflect()` and `exit_idle`.
    Exit,
}

#[derive(Debug, Clone, Copy, Default)]
pub struct CpuidleIdleCall {
    pub at: IdleCallAt,
    /// The state the governor selected.
    pub idx: u8,
    /// When the state was entered.
    pub entered_ns: u64,
}

/// Models `cpuidle_idle_call()` with `call_cpuidle()` — kernel/sched/idle.c @ v6.10.
///
/// Context: idle task, IRQs off on entry; returns with IRQs on.
pub fn cpuidle_idle_call(k: &mut Kernel, cpu: CpuId, s: &mut CpuidleIdleCall) -> Next {
    match s.at {
        IdleCallAt::Start => {
            if need_resched_or_ipi(k, cpu) {
                local_irq_enable(k, cpu);
                return Next::Ret(0);
            }
            let (idx, stop_tick) = cpuidle::governors::select(k, cpu);
            let mut cost = k.costs.governor_select;
            if stop_tick {
                cost += tick_sched::tick_nohz_idle_stop_tick(k, cpu);
            }
            s.idx = idx;
            s.at = IdleCallAt::CallCpuidle;
            Next::Cont(cost)
        }
        IdleCallAt::CallCpuidle => {
            // call_cpuidle(): clear POLL and test. From here until the state sets POLL again
            // (window W1), senders must send a real IPI.
            let (nr, c) = current_clr_polling_and_test(k, cpu);
            if nr {
                // -EBUSY: cpuidle_reflect() runs but does not call the governor for it.
                cpuidle::governors::reflect(k, cpu, cpuidle::EBUSY_IDX, 0);
                local_irq_enable(k, cpu);
                s.at = IdleCallAt::Exit;
                return Next::Cont(c + k.costs.cpuidle_exit);
            }
            // cpuidle_enter_state(): trace and enter the state with IRQs off.
            crate::linux::check::on_idle_enter(k, cpu);
            k.tp(cpu, Event::CpuIdle { state: s.idx as u32, cpu_id: cpu });
            s.entered_ns = k.now;
            k.stats.idle_state_entries += 1;
            s.at = IdleCallAt::AfterEnter;
            Next::Call(c + k.costs.cpuidle_enter, Frame::EnterState(EnterState::new(s.idx)))
        }
        IdleCallAt::AfterEnter => {
            k.tp(cpu, Event::CpuIdle { state: u32::MAX, cpu_id: cpu });
            let resid = k.now - s.entered_ns;
            cpuidle::governors::reflect(k, cpu, s.idx, resid);
            // cpuidle_enter_state() enables IRQs: an interrupt that woke the CPU is taken here.
            local_irq_enable(k, cpu);
            s.at = IdleCallAt::Exit;
            Next::Cont(k.costs.cpuidle_exit)
        }
        IdleCallAt::Exit => {
            // exit_idle: __current_set_polling(); make sure IRQs are on.
            let c = __current_set_polling(k, cpu);
            local_irq_enable(k, cpu);
            Next::Ret(c)
        }
    }
}
