//! Models `drivers/cpuidle/cpuidle.c` @ v6.10: the per-CPU cpuidle device and
//! `cpuidle_enter_state()`, which calls the selected state's enter routine.

pub mod governors;
pub mod poll_state;

use crate::hw::IdleKind;
use crate::linux::engine::Next;
use crate::linux::{CpuId, Kernel};

/// The state index `cpuidle_reflect()` receives when `call_cpuidle()` returned -EBUSY (the
/// CPU found work before entering the selected state).
pub const EBUSY_IDX: u8 = u8::MAX;

/// Number of recent idle intervals the governor remembers (menu's INTERVALS).
pub const INTERVALS: usize = 8;

/// `struct cpuidle_device` (the fields the model uses) plus menu's per-CPU data.
#[derive(Debug, Clone)]
pub struct CpuidleDevice {
    pub last_residency_ns: u64,
    /// `poll_time_limit`: the last POLL entry ended on its time limit.
    pub poll_time_limit: bool,
    /// menu: the last measured idle intervals (whole us, as the kernel keeps them) and the
    /// ring position; `menu_enable_device()` starts the ring at zero.
    pub intervals: [u32; INTERVALS],
    pub interval_ptr: usize,
    /// menu: correction factors per bucket, the bucket and timer distance of the current
    /// selection, and whether the last period still has to be folded in.
    pub correction_factor: [u64; governors::menu::BUCKETS],
    pub bucket: usize,
    pub next_timer_ns: u64,
    pub needs_update: bool,
    /// menu: the tick woke the CPU from the last period (`data->tick_wakeup`).
    pub tick_wakeup: bool,
    /// haltpoll: the adaptive poll window and the last state used ([`EBUSY_IDX`] after a
    /// bail-out).
    pub poll_limit_ns: u64,
    pub last_state_idx: u8,
}

impl CpuidleDevice {
    pub fn new() -> Self {
        CpuidleDevice {
            last_residency_ns: 0,
            poll_time_limit: false,
            intervals: [0; INTERVALS],
            interval_ptr: 0,
            // menu_enable_device(): every factor starts at 1.0 (RESOLUTION * DECAY).
            correction_factor: [1024 * 8; governors::menu::BUCKETS],
            bucket: 0,
            next_timer_ns: 0,
            needs_update: false,
            tick_wakeup: false,
            poll_limit_ns: 0,
            last_state_idx: 0,
        }
    }
}

impl Default for CpuidleDevice {
    fn default() -> Self {
        Self::new()
    }
}

/// An idle state's enter routine's resume points, in code order. The routines read them
/// differently: `poll_idle()` (poll_state.rs) goes `Enter` -> `Polling` -> `Exit`; the waiting
/// routines (`mwait_idle_with_hints()` in arch/x86/mwait.rs, `acpi_safe_halt()` and
/// `acpi_idle_do_entry_io()` in acpi/processor_idle.rs) go `Enter` -> `Exit`, where `Exit` is
/// also where they resume after the wait.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EnterStateAt {
    /// About to enter the state (set polling, or wait).
    Enter,
    /// `poll_idle()` only: in its polling loop.
    Polling,
    /// Leaving the state: after the wait (MWAIT, HLT, I/O port) or the polling loop.
    Exit,
}

/// An idle state's enter routine in progress.
#[derive(Debug, Clone, Copy)]
pub struct EnterState {
    /// Index of the state in the machine's table.
    pub idx: u8,
    /// Resume point within the routine.
    pub at: EnterStateAt,
    /// When the routine started (poll limit accounting).
    pub start_ns: u64,
}

impl EnterState {
    pub fn new(idx: u8) -> Self {
        EnterState { idx, at: EnterStateAt::Enter, start_ns: 0 }
    }
}

/// Models the `target_state->enter()` call inside `cpuidle_enter_state()` —
/// drivers/cpuidle/cpuidle.c @ v6.10. The routine depends on the state: `poll_idle()`,
/// MWAIT through `mwait_idle_with_hints()` (intel_idle or ACPI FFH), `acpi_safe_halt()`, or an
/// ACPI I/O-port entry.
pub fn cpuidle_enter_state(k: &mut Kernel, cpu: CpuId, s: &mut EnterState) -> Next {
    match k.m.idle_states[s.idx as usize].kind {
        IdleKind::Poll => poll_state::poll_idle(k, cpu, s),
        IdleKind::Mwait => crate::linux::arch::x86::mwait::mwait_idle_with_hints(k, cpu, s),
        IdleKind::Hlt => crate::linux::drivers::acpi::processor_idle::acpi_safe_halt(k, cpu, s),
        IdleKind::IoPort => crate::linux::drivers::acpi::processor_idle::acpi_idle_do_entry_io(k, cpu, s),
    }
}
