//! Models the load-balancing part of `/proc/schedstat`: the per-domain counters
//! `sched_balance_rq()` keeps in `struct sched_domain` (include/linux/sched/topology.h @ v6.10,
//! under CONFIG_SCHEDSTATS) and `show_schedstat()` (kernel/sched/stats.c @ v6.10), which prints
//! them.
//!
//! What the model counts: for each CPU's domain and each `enum cpu_idle_type`, the eight
//! `lb_*` counters, at the points of `sched_balance_rq()` where the kernel counts them (see
//! [`crate::linux::kernel::sched::fair::sched_balance_rq`]). What it prints as 0 because it does
//! not keep it: the `cpu<N>` line's counters (`yld_count`, `sched_count`, `sched_goidle`,
//! `ttwu_count`, `ttwu_local`, `rq_cpu_time`, `run_delay`, `pcount`) and each domain line's
//! last twelve (`alb_*`, the always-zero `sbe_*`/`sbf_*`, `ttwu_wake_remote`,
//! `ttwu_move_affine`, `ttwu_move_balance`). The counters cover the measured window (they are
//! cleared when it opens, as the difference of two reads around a benchmark would be).
//!
//! The version: v6.10 prints `version 16`, whose per-type columns go `__CPU_NOT_IDLE`,
//! `CPU_IDLE`, `CPU_NEWLY_IDLE` (38d707c54df4 reordered `enum cpu_idle_type` and 11b0bfa5d463
//! bumped the version, both in the v6.10 merge window); version 15 (v6.9 and before) has the
//! same eight fields per type in the order `CPU_IDLE`, `CPU_NOT_IDLE`, `CPU_NEWLY_IDLE`.

use super::fair::CpuIdleType;
use crate::linux::{CpuId, Kernel};

/// The `lb_*` counters of one domain for one `enum cpu_idle_type`, in the order
/// `show_schedstat()` prints them (v15 and v16).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LbCounters {
    /// `sched_balance_rq()` calls.
    pub lb_count: u32,
    /// Calls that found nothing to do (`out_balanced` and `out_all_pinned`).
    pub lb_balanced: u32,
    /// Calls that found a busiest runqueue and moved nothing.
    pub lb_failed: u32,
    /// Sum of `env.imbalance` of the calls that found a busiest runqueue (in tasks: the
    /// model's groups compare runnable tasks; the kernel's unit follows `migration_type`).
    pub lb_imbalance: u32,
    /// Tasks moved (`detach_tasks()`).
    pub lb_gained: u32,
    /// Tasks moved although cache hot (`can_migrate_task()` after too many failures).
    pub lb_hot_gained: u32,
    /// A busiest group but no busiest runqueue in it.
    pub lb_nobusyq: u32,
    /// No busiest group.
    pub lb_nobusyg: u32,
}

impl LbCounters {
    fn fields(&self) -> [u32; 8] {
        [
            self.lb_count,
            self.lb_balanced,
            self.lb_failed,
            self.lb_imbalance,
            self.lb_gained,
            self.lb_hot_gained,
            self.lb_nobusyq,
            self.lb_nobusyg,
        ]
    }
}

/// `sd->lb_*[CPU_MAX_IDLE_TYPES]`, indexed by [`CpuIdleType`] (see [`idx`]).
pub type DomainLbCounters = [LbCounters; 3];

/// The array index of an idle type (the model's own order, not a printed one).
#[inline]
pub fn idx(idle: CpuIdleType) -> usize {
    match idle {
        CpuIdleType::NotIdle => 0,
        CpuIdleType::Idle => 1,
        CpuIdleType::NewlyIdle => 2,
    }
}

/// The `/proc/schedstat` format version `show_schedstat()` prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SchedstatVersion {
    /// v6.9 and before: columns in the order CPU_IDLE, CPU_NOT_IDLE, CPU_NEWLY_IDLE.
    V15,
    /// v6.10 to v6.12: columns in the order __CPU_NOT_IDLE, CPU_IDLE, CPU_NEWLY_IDLE.
    V16,
}

impl SchedstatVersion {
    fn number(self) -> u32 {
        match self {
            SchedstatVersion::V15 => 15,
            SchedstatVersion::V16 => 16,
        }
    }

    /// The idle types in the order of the printed column groups.
    fn column_order(self) -> [CpuIdleType; 3] {
        match self {
            SchedstatVersion::V15 => [CpuIdleType::Idle, CpuIdleType::NotIdle, CpuIdleType::NewlyIdle],
            SchedstatVersion::V16 => [CpuIdleType::NotIdle, CpuIdleType::Idle, CpuIdleType::NewlyIdle],
        }
    }
}

/// Clear every domain's counters (the measured window opens).
pub fn clear(k: &mut Kernel) {
    for c in 0..k.m.topo.nr_cpus {
        for d in k.sd.domains_mut(c) {
            d.lb = Default::default();
        }
    }
}

/// A cpumask as `%*pb` prints it (lib/vsprintf.c, `bitmap_string()`): `nr_bits` bits in
/// comma-separated chunks of 32, most significant first, lower-case hex; the first chunk has
/// as many digits as its bits need, the others eight.
pub fn bitmap_string(nr_bits: u32, set: impl Iterator<Item = u32>) -> String {
    let nr_chunks = nr_bits.div_ceil(32).max(1) as usize;
    let mut chunks = vec![0u32; nr_chunks];
    for b in set {
        chunks[(b / 32) as usize] |= 1 << (b % 32);
    }
    let first_bits = match nr_bits % 32 {
        0 => 32,
        r => r,
    };
    let mut out = String::with_capacity(nr_chunks * 9);
    for (i, v) in chunks.iter().rev().enumerate() {
        if i > 0 {
            out.push(',');
        }
        let width = if i == 0 { first_bits.div_ceil(4) as usize } else { 8 };
        out.push_str(&format!("{v:0width$x}"));
    }
    out
}

/// Models `show_schedstat()` — kernel/sched/stats.c: the text `/proc/schedstat` gives for the
/// CPUs in `cpus` (in the order given), with the header lines. Pure: reads the kernel, writes
/// nothing. See the module doc for which fields the model keeps.
pub fn show_schedstat(k: &Kernel, cpus: &[CpuId], version: SchedstatVersion) -> String {
    let mut out = format!("version {}\ntimestamp {}\n", version.number(), k.jiffies());
    let nr = k.m.topo.nr_cpus;
    for &cpu in cpus {
        // yld_count, the legacy 0, sched_count, sched_goidle, ttwu_count, ttwu_local,
        // rq_cpu_time, run_delay, pcount: not kept by the model.
        out.push_str(&format!("cpu{cpu} 0 0 0 0 0 0 0 0 0\n"));
        for (level, sd) in k.sd.domains(cpu).iter().enumerate() {
            out.push_str(&format!("domain{level} {}", bitmap_string(nr, sd.span.iter())));
            for t in version.column_order() {
                for v in sd.lb[idx(t)].fields() {
                    out.push_str(&format!(" {v}"));
                }
            }
            // alb_count, alb_failed, alb_pushed, sbe_*, sbf_*, ttwu_wake_remote,
            // ttwu_move_affine, ttwu_move_balance: not kept by the model.
            out.push_str(" 0 0 0 0 0 0 0 0 0 0 0 0\n");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bitmap_string_is_vsprintf_s() {
        // Two CPUs: one chunk of two bits, one digit.
        assert_eq!(bitmap_string(2, [0, 1].into_iter()), "3");
        // 32 CPUs: one full chunk, eight digits.
        assert_eq!(bitmap_string(32, [0, 4].into_iter()), "00000011");
        // 40 CPUs: a first chunk of 8 bits (two digits), then a full one.
        assert_eq!(bitmap_string(40, [0, 39].into_iter()), "80,00000001");
        // 256 CPUs: eight chunks.
        let s = bitmap_string(256, [16, 144].into_iter());
        assert_eq!(s, "00000000,00000000,00000000,00010000,00000000,00000000,00000000,00010000");
    }

    #[test]
    fn the_two_versions_order_the_idle_types_as_their_enums() {
        let mut k = crate::linux::Kernel::for_test("smp-4");
        let d = &mut k.sd.domains_mut(1)[0];
        d.lb[idx(CpuIdleType::NotIdle)].lb_count = 1;
        d.lb[idx(CpuIdleType::Idle)].lb_count = 2;
        d.lb[idx(CpuIdleType::NewlyIdle)].lb_count = 3;
        let domain_line = |v| show_schedstat(&k, &[1], v).lines().nth(3).unwrap().to_string();
        let v16 = domain_line(SchedstatVersion::V16);
        let v15 = domain_line(SchedstatVersion::V15);
        // smp-4: CPU1's lowest domain is its LLC, CPUs 0-1.
        assert!(v16.starts_with("domain0 3 1 0 0 0 0 0 0 0 2 0 0 0 0 0 0 0 3 "), "{v16}");
        assert!(v15.starts_with("domain0 3 2 0 0 0 0 0 0 0 1 0 0 0 0 0 0 0 3 "), "{v15}");
        assert_eq!(v16.split(' ').count(), 2 + 3 * 8 + 12);
        let text = show_schedstat(&k, &[1], SchedstatVersion::V16);
        assert!(text.starts_with("version 16\ntimestamp 0\ncpu1 0 0 0 0 0 0 0 0 0\ndomain0 "), "{text}");
    }
}
