//! What holds `rd->overloaded` (an unknown of issue 31, docs/unknowns.md): a pair of
//! always-runnable SCHED_NORMAL user tasks bound to one CPU. With two runnable tasks that CPU's
//! `add_nr_running()` sets `rd->overloaded`, and every root-level `update_sd_lb_stats()` sets it
//! again (`update_sg_lb_stats()` sees `nr_running > 1`), so it stays set for the whole run; no
//! balance can move either task (`can_migrate_task()` finds them outside its `cpus_mask`:
//! `LBF_ALL_PINNED`). Both are `pinned-hog` background sources, booted with the machine, so the
//! background warm-up runs with them (kernel/sched/sched.h `add_nr_running()`, fair.c
//! `update_sg_lb_stats()`, `sched_balance_rq()` @ v6.10).
//!
//! Where the pair sits is part of the unknown: [`Placement`] names it relative to a reference
//! CPU (for ipistorm, the target CPU16).

use super::{Cpus, Dist, Kind, Profile, Source};
use crate::hw::topology::Topology;
use crate::linux::{CpuId, Kernel, TaskId};
use crate::sim::NSEC_PER_MSEC;

/// Where the pair sits, relative to a reference CPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placement {
    /// An SMT sibling of the reference CPU (its core).
    SameCore,
    /// Another core of the reference CPU's LLC.
    SameLlc,
    /// A CPU of the reference CPU's NUMA node outside its LLC.
    SameNode,
    /// A CPU of another NUMA node.
    OtherNode,
}

impl Placement {
    pub const NAMES: &'static [&'static str] = &["same-core", "same-llc", "same-node", "other-node"];

    pub fn parse(s: &str) -> Option<Placement> {
        Some(match s {
            "same-core" => Placement::SameCore,
            "same-llc" => Placement::SameLlc,
            "same-node" => Placement::SameNode,
            "other-node" => Placement::OtherNode,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        Placement::NAMES[self as usize]
    }

    /// The CPU of this placement relative to `reference`: the first CPU after `reference`, in
    /// the wrap-around order of `for_each_cpu_wrap()`, of the placement's class and not in
    /// `avoid` (e.g. the CPUs the workload runs on). `None` if the machine has no such CPU
    /// (no SMT, one LLC per node, one node).
    pub fn cpu(self, topo: &Topology, reference: CpuId, avoid: &[CpuId]) -> Option<CpuId> {
        let nr = topo.nr_cpus;
        let core = topo.smt_siblings(reference);
        let llc = topo.llc_mask(reference);
        let node = topo.node_mask(reference);
        (1..nr).map(|i| (reference + i) % nr).filter(|c| !avoid.contains(c)).find(|&c| match self {
            Placement::SameCore => core.contains(&c),
            Placement::SameLlc => llc.test(c) && !core.contains(&c),
            Placement::SameNode => node.test(c) && !llc.test(c),
            Placement::OtherNode => !node.test(c),
        })
    }
}

/// One user-mode stretch of a hog between the points where it could notice anything: it never
/// blocks, so this only sets how often the model takes a step for it (preemption comes from
/// the tick's return to user mode, whatever the stretch).
const HOG_STRETCH_NS: u64 = NSEC_PER_MSEC;

impl Profile {
    /// This profile plus two `pinned-hog` sources bound to `cpu` (named `hog-a`, `hog-b`).
    /// They wake within the first millisecond after boot and run for ever.
    pub fn with_pinned_pair(mut self, cpu: CpuId) -> Profile {
        for name in ["hog-a", "hog-b"] {
            self.sources.push(Source {
                name: name.into(),
                kind: Kind::PinnedHog,
                // The first wakeup's phase is drawn in (0, period]: within a millisecond.
                period_ns: NSEC_PER_MSEC,
                jitter_ns: 0,
                deferrable: false,
                cpus: Cpus::One(cpu),
                runtime: Dist { q: [HOG_STRETCH_NS; 5] },
                vec: 0,
            });
        }
        self
    }
}

/// Bind task `t` to `cpu` as `taskset -c CPU` leaves it: `sched_setaffinity()` with a one-CPU
/// mask (the task is asleep on `cpu`, so nothing moves).
pub fn bind(k: &mut Kernel, t: TaskId, cpu: CpuId) {
    let mut mask = crate::hw::cpumask::CpuMask::new(k.m.topo.nr_cpus);
    mask.set(cpu);
    let c = crate::linux::kernel::sched::syscalls::sched_setaffinity(k, cpu, t, &mask);
    debug_assert_eq!(c, 0, "a sleeping task on its one allowed CPU does not move");
}
