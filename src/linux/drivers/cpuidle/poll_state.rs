//! Models `drivers/cpuidle/poll_state.c` @ v6.10.

use super::{EnterState, EnterStateAt};
use crate::linux::engine::{local_irq_disable, local_irq_enable, wake_at, watch, Next, WaitOn};
use crate::linux::kernel::sched::idle::{current_clr_polling, current_set_polling_and_test};
use crate::linux::kernel::sched::need_resched_or_ipi;
use crate::linux::{CpuId, Kernel};

/// Models `cpuidle_poll_time()` — drivers/cpuidle/cpuidle.c @ v6.10: the target residency of
/// the first enabled deeper state (at least 10 us), capped at TICK_NSEC/16.
pub fn cpuidle_poll_time(k: &Kernel, cpu: CpuId) -> u64 {
    // A governor that manages the window (haltpoll) sets poll_limit_ns.
    let pl = k.cpus[cpu as usize].idle_dev.poll_limit_ns;
    if pl != 0 {
        return pl;
    }
    let cap = k.tick_nsec() / 16;
    let deeper =
        k.m.idle_states
            .iter()
            .skip(1)
            .find(|s| !s.disabled && s.target_residency_ns >= 10_000)
            .map(|s| s.target_residency_ns);
    deeper.unwrap_or(cap).min(cap)
}

/// Models `poll_idle()` — drivers/cpuidle/poll_state.c @ v6.10: spin on need_resched with
/// IRQs on and POLL set, until the poll time limit.
///
/// Context: idle task; IRQs off on entry and on return, on while polling.
pub fn poll_idle(k: &mut Kernel, cpu: CpuId, s: &mut EnterState) -> Next {
    match s.at {
        EnterStateAt::Enter => {
            s.start_ns = k.now;
            k.cpus[cpu as usize].idle_dev.poll_time_limit = false;
            local_irq_enable(k, cpu);
            let (nr, c) = current_set_polling_and_test(k, cpu);
            s.at = if nr { EnterStateAt::Exit } else { EnterStateAt::Polling };
            Next::Cont(c)
        }
        EnterStateAt::Polling => {
            if need_resched_or_ipi(k, cpu) {
                s.at = EnterStateAt::Exit;
                return Next::Cont(0);
            }
            let limit = cpuidle_poll_time(k, cpu);
            let spent = k.now - s.start_ns;
            if spent >= limit {
                k.cpus[cpu as usize].idle_dev.poll_time_limit = true;
                s.at = EnterStateAt::Exit;
                return Next::Cont(0);
            }
            let line = k.tasks[k.curr(cpu) as usize].ti_line;
            watch(k, cpu, line);
            wake_at(k, cpu, limit - spent);
            Next::Wait(WaitOn::PollIdle)
        }
        EnterStateAt::Exit => {
            local_irq_disable(k, cpu);
            let c = current_clr_polling(k, cpu);
            Next::Ret(c)
        }
    }
}
