//! Running sums over the sched groups that the balancing and fork-placement models read.
//!
//! The kernel's `update_sg_lb_stats()` (kernel/sched/fair.c @ v6.10) and
//! `update_sg_wakeup_stats()` recompute, on every balance, sums over every CPU of every group
//! of a domain: the runnable tasks beyond one per CPU, the idle CPUs, the runnable count; and
//! `update_sd_lb_stats()` at the root recomputes `rd->overloaded` from every CPU. The model
//! keeps charging that O(span) walk in simulated time (see `update_sd_lb_stats_cost()`), but
//! it does not redo the arithmetic on the host: these sums are kept up to date where the
//! runqueue fields they are made of change (`nr_running`, `cfs_h_nr_running`, `ttwu_pending`,
//! `curr`), so a query costs O(1) per group instead of O(CPUs in the group).
//!
//! This is simulator bookkeeping, not a kernel structure: every value here equals what the
//! kernel's rescan would compute at the same instant (checked against a rescan in debug
//! builds).

use crate::hw::cacheline::LineId;
use crate::hw::cpumask::CpuMask;
use crate::linux::kernel::sched::topology::SchedDomains;
use crate::linux::{CpuId, Kernel};

/// What one CPU adds to the sums of each group it belongs to.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Contrib {
    /// `cfs_h_nr_running`.
    h_nr: u32,
    /// `nr_running + ttwu_pending`.
    load: u32,
    /// `idle_cpu()`.
    idle: bool,
    /// `nr_running >= 2`.
    overloaded: bool,
}

/// One group's sums, kept together so an update touches one host cache line.
#[derive(Debug, Clone, Copy, Default)]
struct Sums {
    /// The sum of the CPUs' excess runnable fair tasks (`cfs_h_nr_running - 1`, at least 0).
    excess: u32,
    /// The sum of `nr_running + ttwu_pending`.
    load: u32,
    /// The number of idle CPUs.
    nr_idle: u32,
}

/// Per-group running sums and the machine-wide counts derived from the runqueues.
#[derive(Debug, Clone, Default)]
pub struct GroupSums {
    /// Per group id.
    sums: Vec<Sums>,
    /// Group ids of `cpu`'s domain `level`, in the domain's group order:
    /// `ids[dom_start[level_base[cpu] + level] ..]` (lists shared by CPUs whose lists match).
    level_base: Vec<u32>,
    dom_start: Vec<u32>,
    ids: Vec<u32>,
    /// Per `level_base[cpu] + level`: the index of the first group containing `cpu` (the
    /// local group), `u32::MAX` if none does.
    local: Vec<u32>,
    /// The group ids containing each CPU: `member[member_start[cpu]..member_start[cpu + 1]]`.
    member_start: Vec<u32>,
    member: Vec<u32>,
    /// Each CPU's current contribution.
    last: Vec<Contrib>,
    /// CPUs with `nr_running >= 2` (what `rd->overloaded` is recomputed from).
    nr_overloaded: u32,
    /// The CPUs for which `idle_cpu()` holds.
    idle: CpuMask,
    /// The runqueue line (`rq->lock` and the fields read with it) of CPU 0: CPU `c`'s is
    /// `rq_line0 + c` (they are allocated together, in CPU order).
    pub rq_line0: LineId,
}

impl GroupSums {
    /// The group ids of every attached domain, with every CPU contributing nothing yet.
    pub fn new(sd: &SchedDomains, nr_cpus: u32) -> GroupSums {
        let mut by_ptr: std::collections::BTreeMap<usize, u32> = Default::default();
        let mut masks: Vec<&CpuMask> = Vec::new();
        let mut lists: std::collections::BTreeMap<Vec<u32>, u32> = Default::default();
        let mut s = GroupSums { idle: CpuMask::new(nr_cpus), ..Default::default() };
        for cpu in 0..nr_cpus {
            s.level_base.push(s.dom_start.len() as u32);
            for d in sd.domains(cpu) {
                s.local.push(d.groups.iter().position(|g| g.test(cpu)).map_or(u32::MAX, |i| i as u32));
                let list: Vec<u32> = d
                    .groups
                    .iter()
                    .map(|g| {
                        // Groups are shared masks: one id per distinct mask object, assigned in
                        // the order first met (CPU, level, group), never by map order.
                        let next = masks.len() as u32;
                        let id = *by_ptr.entry(std::sync::Arc::as_ptr(g) as usize).or_insert(next);
                        if id == next {
                            masks.push(g);
                        }
                        id
                    })
                    .collect();
                // CPUs of one domain span mostly list the same groups (rotated to start at
                // their own): each distinct list is stored once, not once per CPU.
                let start = *lists.entry(list).or_insert_with_key(|list| {
                    let start = s.ids.len() as u32;
                    s.ids.extend_from_slice(list);
                    start
                });
                s.dom_start.push(start);
            }
        }
        let n = masks.len();
        s.sums = vec![Sums::default(); n];
        let mut per_cpu: Vec<Vec<u32>> = vec![Vec::new(); nr_cpus as usize];
        for (id, m) in masks.iter().enumerate() {
            for c in m.iter() {
                per_cpu[c as usize].push(id as u32);
            }
        }
        for ids in per_cpu {
            s.member_start.push(s.member.len() as u32);
            s.member.extend(ids);
        }
        s.member_start.push(s.member.len() as u32);
        s.last = vec![Contrib::default(); nr_cpus as usize];
        s
    }

    /// The id of group `gi` of `cpu`'s domain `level`.
    #[inline]
    pub fn group_id(&self, cpu: CpuId, level: usize, gi: usize) -> usize {
        let base = self.level_base[cpu as usize] as usize;
        self.ids[self.dom_start[base + level] as usize + gi] as usize
    }

    /// The index of the first group of `cpu`'s domain `level` that contains `cpu`.
    #[inline]
    pub fn local_group(&self, cpu: CpuId, level: usize) -> Option<usize> {
        let l = self.local[self.level_base[cpu as usize] as usize + level];
        (l != u32::MAX).then_some(l as usize)
    }

    /// Sum over the group of `cfs_h_nr_running - 1` (at least 0 per CPU).
    #[inline]
    pub fn excess(&self, id: usize) -> u32 {
        self.sums[id].excess
    }

    /// Sum over the group of `nr_running + ttwu_pending`.
    #[inline]
    pub fn load(&self, id: usize) -> u32 {
        self.sums[id].load
    }

    /// Number of CPUs of the group for which `idle_cpu()` holds.
    #[inline]
    pub fn nr_idle(&self, id: usize) -> u32 {
        self.sums[id].nr_idle
    }

    /// `cpu`'s `cfs_h_nr_running`, from a compact per-CPU array.
    #[inline]
    pub fn cfs_h_nr_running(&self, cpu: CpuId) -> u32 {
        self.last[cpu as usize].h_nr
    }

    /// Whether some CPU has two or more runnable tasks.
    #[inline]
    pub fn any_overloaded(&self) -> bool {
        self.nr_overloaded > 0
    }

    /// The CPUs for which `idle_cpu()` holds.
    #[inline]
    pub fn idle_mask(&self) -> &CpuMask {
        &self.idle
    }

    /// Replace `cpu`'s contribution.
    #[inline]
    fn set(&mut self, cpu: CpuId, new: Contrib) {
        let old = std::mem::replace(&mut self.last[cpu as usize], new);
        if old == new {
            return;
        }
        let (a, b) = (self.member_start[cpu as usize] as usize, self.member_start[cpu as usize + 1] as usize);
        // The change of each sum, computed once and added modulo 2^32 to every group: each
        // sum includes `old`'s part, so none goes below zero or wraps (checked in debug
        // builds by the rescans of `debug_check_group`).
        let d_excess = new.h_nr.saturating_sub(1).wrapping_sub(old.h_nr.saturating_sub(1));
        let d_load = new.load.wrapping_sub(old.load);
        let d_idle = u32::from(new.idle).wrapping_sub(u32::from(old.idle));
        for &id in &self.member[a..b] {
            let g = &mut self.sums[id as usize];
            g.excess = g.excess.wrapping_add(d_excess);
            g.load = g.load.wrapping_add(d_load);
            g.nr_idle = g.nr_idle.wrapping_add(d_idle);
        }
        self.nr_overloaded = self.nr_overloaded - old.overloaded as u32 + new.overloaded as u32;
        if old.idle != new.idle {
            if new.idle {
                self.idle.set(cpu);
            } else {
                self.idle.clear(cpu);
            }
        }
    }
}

/// Set up the sums once every CPU's runqueue exists (boot).
pub fn init(k: &mut Kernel) {
    let nr = k.m.topo.nr_cpus;
    k.sd.sums = GroupSums::new(&k.sd, nr);
    let rq_line0 = k.cpus[0].rq.lock_line;
    assert!(
        (0..nr).all(|c| k.cpus[c as usize].rq.lock_line == rq_line0 + c),
        "the runqueue lines are allocated together, in CPU order"
    );
    k.sd.sums.rq_line0 = rq_line0;
    for c in 0..nr {
        rq_changed(k, c);
    }
}

/// Bring `cpu`'s contribution up to date after its `nr_running`, `cfs_h_nr_running`,
/// `ttwu_pending` or `curr` changed.
#[inline]
pub fn rq_changed(k: &mut Kernel, cpu: CpuId) {
    let rq = &k.cpus[cpu as usize].rq;
    let new = Contrib {
        h_nr: rq.cfs_h_nr_running,
        load: rq.nr_running + rq.ttwu_pending as u32,
        idle: super::idle_cpu(k, cpu),
        overloaded: rq.nr_running >= 2,
    };
    k.sd.sums.set(cpu, new);
}

/// Debug builds: check the sums of group `gi` of `cpu`'s domain `level` against a rescan.
#[inline]
pub fn debug_check_group(k: &Kernel, cpu: CpuId, level: usize, gi: usize) {
    if cfg!(debug_assertions) {
        let g = &k.sd.domains(cpu)[level].groups[gi];
        let id = k.sd.sums.group_id(cpu, level, gi);
        let rq = |c: CpuId| &k.cpus[c as usize].rq;
        let excess: u32 = g.iter().map(|c| rq(c).cfs_h_nr_running.saturating_sub(1)).sum();
        let load: u32 = g.iter().map(|c| rq(c).nr_running + rq(c).ttwu_pending as u32).sum();
        let idle = g.iter().filter(|&c| super::idle_cpu(k, c)).count() as u32;
        let s = &k.sd.sums;
        assert_eq!(
            (s.excess(id), s.load(id), s.nr_idle(id)),
            (excess, load, idle),
            "group sums of CPU {cpu} level {level} group {gi}"
        );
        for c in g.iter() {
            assert_eq!(s.idle.test(c), super::idle_cpu(k, c), "idle mask, CPU {c}");
        }
    }
}

/// Debug builds: check the count behind `rd->overloaded` against a rescan of every CPU.
#[inline]
pub fn debug_check_overloaded(k: &Kernel) {
    if cfg!(debug_assertions) {
        let o = (0..k.m.topo.nr_cpus).any(|c| k.cpus[c as usize].rq.nr_running >= 2);
        assert_eq!(k.sd.sums.any_overloaded(), o, "overloaded count");
    }
}
