//! Models `arch/x86/include/asm/mwait.h` @ v6.10.

use crate::linux::drivers::cpuidle::{EnterState, EnterStateAt};
use crate::linux::engine::{watch, Next, WaitOn};
use crate::linux::kernel::sched::idle::{current_clr_polling, current_set_polling_and_test};
use crate::linux::kernel::sched::need_resched_or_ipi;
use crate::linux::{CpuId, Kernel};

/// Models `mwait_idle_with_hints(eax, ecx=1)` — arch/x86/include/asm/mwait.h @ v6.10, as used
/// by intel_idle and by ACPI FFH states (AMD C1): set POLL and test, MONITOR the flag line,
/// MWAIT with IRQs off (an interrupt breaks out), clear POLL.
///
/// A remote write of NEED_RESCHED into the monitored line wakes the CPU without an interrupt:
/// that is why such a CPU counts as polling.
pub fn mwait_idle_with_hints(k: &mut Kernel, cpu: CpuId, s: &mut EnterState) -> Next {
    if s.at == EnterStateAt::Enter {
        let (nr, c) = current_set_polling_and_test(k, cpu);
        s.at = EnterStateAt::Exit;
        if !nr {
            let line = k.tasks[k.curr(cpu) as usize].ti_line;
            watch(k, cpu, line);
            if !need_resched_or_ipi(k, cpu) {
                return Next::Wait(WaitOn::Mwait { idx: s.idx });
            }
        }
        return Next::Cont(c);
    }
    let c = current_clr_polling(k, cpu);
    Next::Ret(c)
}
