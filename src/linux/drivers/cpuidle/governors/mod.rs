//! `drivers/cpuidle/governors/`.
pub mod haltpoll;
pub mod menu;

use crate::linux::{CpuId, Kernel};

/// The machine's cpuidle governor: `select`.
pub fn select(k: &mut Kernel, cpu: CpuId) -> (u8, bool) {
    match k.m.governor {
        crate::hw::Governor::Menu => menu::menu_select(k, cpu),
        crate::hw::Governor::Haltpoll => haltpoll::haltpoll_select(k, cpu),
    }
}

/// Models `cpuidle_reflect()` — drivers/cpuidle/cpuidle.c @ v6.10: tell the machine's governor
/// that state `idx` was used for `residency_ns`. When `call_cpuidle()` bailed out (-EBUSY,
/// [`EBUSY_IDX`](super::EBUSY_IDX)) the governor is not told: `cpuidle_reflect()` calls it only
/// for an index of a state, so its last state, residency and pending update stay as they were.
pub fn reflect(k: &mut Kernel, cpu: CpuId, idx: u8, residency_ns: u64) {
    if idx == super::EBUSY_IDX {
        return;
    }
    match k.m.governor {
        crate::hw::Governor::Menu => menu::menu_reflect(k, cpu, idx, residency_ns),
        crate::hw::Governor::Haltpoll => haltpoll::haltpoll_reflect(k, cpu, idx, residency_ns),
    }
}
