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

/// The machine's cpuidle governor: `reflect` (state `idx` was used for `residency_ns`; 0 ns
/// when it was not entered).
pub fn reflect(k: &mut Kernel, cpu: CpuId, idx: u8, residency_ns: u64) {
    match k.m.governor {
        crate::hw::Governor::Menu => menu::menu_reflect(k, cpu, residency_ns),
        crate::hw::Governor::Haltpoll => haltpoll::haltpoll_reflect(k, cpu, idx, residency_ns),
    }
}
