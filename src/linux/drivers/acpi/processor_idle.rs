//! Models the non-polling idle routines of `drivers/acpi/processor_idle.c` @ v6.10.

use crate::linux::drivers::cpuidle::{EnterState, EnterStateAt};
use crate::linux::engine::{local_irq_disable, local_irq_enable, Next, WaitOn};
use crate::linux::kernel::sched::need_resched;
use crate::linux::{CpuId, Kernel};

/// Models `acpi_safe_halt()` — drivers/acpi/processor_idle.c @ v6.10: `sti; hlt` unless
/// NEED_RESCHED is already set. POLL stays clear: a sender must send a real interrupt.
///
/// Context: idle task, IRQs off on entry and on return; on while halted.
pub fn acpi_safe_halt(k: &mut Kernel, cpu: CpuId, s: &mut EnterState) -> Next {
    if s.at == EnterStateAt::Enter {
        s.at = EnterStateAt::Exit;
        if !need_resched(k, cpu) {
            local_irq_enable(k, cpu);
            return Next::Wait(WaitOn::Hlt { idx: s.idx });
        }
        return Next::Cont(0);
    }
    local_irq_disable(k, cpu);
    Next::Ret(0)
}

/// Models `acpi_idle_do_entry()` for an ACPI_CSTATE_SYSTEMIO state (`io_idle()`) —
/// drivers/acpi/processor_idle.c @ v6.10: the port read puts the core to sleep with IRQs off;
/// only an interrupt wakes it.
pub fn acpi_idle_do_entry_io(_k: &mut Kernel, _cpu: CpuId, s: &mut EnterState) -> Next {
    if s.at == EnterStateAt::Enter {
        s.at = EnterStateAt::Exit;
        return Next::Wait(WaitOn::IoPort { idx: s.idx });
    }
    Next::Ret(0)
}
