//! Models the address-space switch of `arch/x86/mm/tlb.c` @ v6.10 as `context_switch()`
//! (kernel/sched/core.c @ v6.10) reaches it: `switch_mm_irqs_off()` runs only when the next
//! task is a user task (`next->mm`), and pays only when that mm is not the one the CPU has
//! loaded (`cpu_tlbstate.loaded_mm`).
//!
//! - user -> user of another process: `switch_mm_irqs_off()` picks the ASID (PCID), runs the
//!   speculation mitigations of `cond_mitigation()` and writes CR3; the next task then refills
//!   the TLB and caches its own user work needs. Charged `PathCosts::switch_mm` (measured on
//!   this project's guest: docs/costs.md, "switch_mm").
//! - user -> user of the same process (threads): the same mm; the function returns after its
//!   TLB-generation check. Nothing charged.
//! - to a kernel thread (the idle task, ksoftirqd, kworkers, a module's kthreads): lazy TLB,
//!   `enter_lazy_tlb()`; the CPU keeps the previous mm loaded. Nothing charged, and the next
//!   user task of that same mm pays nothing either (idle -> the task that last ran there).
//!
//! Simplified: the charge is one figure for the CR3 write and the refill, whatever the task's
//! working set; a lazy CPU's missed TLB shootdowns (the `tlb_gen` catch-up flush) are not
//! modelled (the model has no `munmap()`); arm64 (`check_and_switch_context()`, a TTBR0 write
//! with ASIDs) is charged the same measured figure, scaled to its clock.

use crate::linux::kernel::sched::NO_MM;
use crate::linux::{CpuId, Kernel, TaskId};
use crate::sim::Time;

/// Models the `mm` half of `context_switch()` — kernel/sched/core.c @ v6.10, with x86's
/// `switch_mm_irqs_off()` (arch/x86/mm/tlb.c @ v6.10): `cpu` switches to `next`. Returns the
/// cost of the address-space switch (0 unless `next` is a user task of an mm other than the
/// loaded one) and makes `next`'s mm the loaded one.
///
/// Context: `__schedule()` with the rq lock held and IRQs off.
pub fn switch_mm_irqs_off(k: &mut Kernel, cpu: CpuId, next: TaskId) -> Time {
    let mm = k.tasks[next as usize].mm;
    let c = &mut k.cpus[cpu as usize];
    if mm == NO_MM || mm == c.loaded_mm {
        return 0;
    }
    c.loaded_mm = mm;
    k.stats.mm_switches += 1;
    k.costs.switch_mm
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::linux::kernel::fork::{copy_process, copy_process_clone_vm};

    /// A process switch pays, a thread switch and a switch to or from a kernel thread do not,
    /// and the idle task keeps the last user mm loaded (lazy TLB).
    #[test]
    fn only_a_change_of_address_space_pays() {
        let mut k = Kernel::for_test("smp-4");
        let a = copy_process(&mut k, "a".into(), 0, 120, None, 0);
        let a2 = copy_process_clone_vm(&mut k, a, "a2".into(), 0, 120, None, 1);
        let b = copy_process(&mut k, "b".into(), 0, 120, None, 2);
        let idle = k.cpus[0].rq.idle;
        let cost = k.costs.switch_mm;
        assert!(cost > 0);
        assert_eq!(switch_mm_irqs_off(&mut k, 0, a), cost, "the first user task loads its mm");
        assert_eq!(switch_mm_irqs_off(&mut k, 0, a2), 0, "a thread of the same process");
        assert_eq!(switch_mm_irqs_off(&mut k, 0, idle), 0, "to the idle task: lazy");
        assert_eq!(switch_mm_irqs_off(&mut k, 0, a), 0, "back from idle to the loaded mm");
        assert_eq!(switch_mm_irqs_off(&mut k, 0, b), cost, "another process");
        assert_eq!(switch_mm_irqs_off(&mut k, 0, idle), 0);
        assert_eq!(switch_mm_irqs_off(&mut k, 0, a2), cost, "idle kept b's mm loaded");
        assert_eq!(k.stats.mm_switches, 3);
        // Each CPU has its own loaded mm.
        assert_eq!(switch_mm_irqs_off(&mut k, 1, a2), cost);
    }
}
