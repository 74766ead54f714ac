//! A kernel variant: a named kernel, patches on top, sched features, HZ and PREEMPT_RT.

use super::kernel::sched::features::{Features, SchedFeat};
use super::patches::{FairClass, Patch, KERNELS, PATCHES};

/// The resolved kernel configuration of a run. Read-only for the model.
#[derive(Debug, Clone)]
pub struct KernelConfig {
    /// The named kernel this started from.
    pub base: String,
    pub patches: PatchSet,
    pub features: Features,
    /// CONFIG_HZ.
    pub hz: u32,
    /// CONFIG_PREEMPT_RT.
    pub preempt_rt: bool,
    /// The fair class (EEVDF from v6.6, CFS before); `--fair` overrides the kernel's.
    pub fair: FairClass,
    /// The preemption model (CONFIG_PREEMPT_*, or PREEMPT_DYNAMIC with `preempt=`).
    pub preempt: Preempt,
    /// The background activity the machine runs besides the workload.
    pub background: crate::linux::background::Profile,
    /// The newidle state chosen CPUs are in when the measured window opens (an unknown of
    /// issue 31; empty: the state the warm-up left).
    pub start: super::unknowns::StartState,
    /// The depth of the workload's user tasks in the cpu controller's task-group hierarchy
    /// (their `se->depth`): 0 is the root group (kthreads, such as ipistorm's, are always
    /// there); systemd puts a service at 2 (`/system.slice/foo.service`) and an ssh session at
    /// 3 (`/user.slice/user-N.slice/session-M.scope`). `enqueue_task_fair()` and
    /// `dequeue_task_fair()` walk one `sched_entity` per level. Default 0 (no walk).
    pub cgroup_depth: u8,
    /// The number of leaf `cfs_rq`s with load on each CPU (`rq->leaf_cfs_rq_list`), which
    /// `__update_blocked_fair()` walks in every blocked-load update. Default 1 (the root's).
    pub nr_leaf_cfs_rqs: u32,
}

/// The deepest task group a run accepts (`KernelConfig::cgroup_depth`).
pub const MAX_CGROUP_DEPTH: u8 = 16;
/// The most leaf `cfs_rq`s with load per CPU a run accepts (`KernelConfig::nr_leaf_cfs_rqs`).
pub const MAX_LEAF_CFS_RQS: u32 = 10_000;

/// A set of patches: one bit per [`Patch`], iterated in `Patch` order (the order a
/// `BTreeSet<Patch>` gave). [`KernelConfig::has`] runs on the hot paths of every step (the idle
/// loop, `__schedule()`, the smp-call flush), where it is one AND instead of a tree search.
#[derive(Clone, Copy, Default, PartialEq, Eq)]
pub struct PatchSet(u64);

const _: () = assert!(PATCHES.len() <= 64, "PatchSet holds at most 64 patches");

impl PatchSet {
    #[inline]
    pub fn contains(&self, p: &Patch) -> bool {
        self.0 & (1u64 << *p as u32) != 0
    }

    /// Add `p`; false if it was already there.
    pub fn insert(&mut self, p: Patch) -> bool {
        let had = self.contains(&p);
        self.0 |= 1u64 << p as u32;
        !had
    }

    /// Remove `p`; false if it was not there.
    pub fn remove(&mut self, p: &Patch) -> bool {
        let had = self.contains(p);
        self.0 &= !(1u64 << *p as u32);
        had
    }

    pub fn is_empty(&self) -> bool {
        self.0 == 0
    }

    pub fn len(&self) -> usize {
        self.0.count_ones() as usize
    }

    /// The patches in `Patch` order.
    pub fn iter(&self) -> impl Iterator<Item = &'static Patch> + '_ {
        PATCHES.iter().map(|r| &r.patch).filter(|p| self.contains(p))
    }
}

impl FromIterator<Patch> for PatchSet {
    fn from_iter<I: IntoIterator<Item = Patch>>(it: I) -> Self {
        let mut s = PatchSet::default();
        for p in it {
            s.insert(p);
        }
        s
    }
}

impl<'a> IntoIterator for &'a PatchSet {
    type Item = &'static Patch;
    type IntoIter = Box<dyn Iterator<Item = &'static Patch> + 'a>;
    fn into_iter(self) -> Self::IntoIter {
        Box::new(self.iter())
    }
}

impl std::fmt::Debug for PatchSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_set().entries(self.iter()).finish()
    }
}

/// The preemption model in force: where a task running kernel code can be preempted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Preempt {
    pub model: PreemptModel,
    /// CONFIG_PREEMPT_DYNAMIC: the model was chosen at boot (`preempt=`); the code paths are
    /// those of the chosen model (the static calls are patched to match).
    pub dynamic: bool,
}

/// CONFIG_PREEMPT_NONE / CONFIG_PREEMPT_VOLUNTARY / CONFIG_PREEMPT (full).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PreemptModel {
    /// Kernel code is preempted only where it calls `cond_resched()` or sleeps.
    None,
    /// As `None`, plus the `might_resched()` points of `might_sleep()`.
    Voluntary,
    /// Kernel code is preempted wherever preemption is enabled, at interrupt exit included;
    /// `cond_resched()` is a no-op.
    Full,
}

impl Preempt {
    /// The names `--preempt` and machine files accept.
    pub const NAMES: &'static [&'static str] =
        &["none", "voluntary", "full", "dynamic-none", "dynamic-voluntary", "dynamic-full"];

    pub fn parse(s: &str) -> Option<Preempt> {
        let (dynamic, m) = match s.strip_prefix("dynamic-") {
            Some(m) => (true, m),
            None => (false, s),
        };
        let model = match m {
            "none" => PreemptModel::None,
            "voluntary" => PreemptModel::Voluntary,
            "full" => PreemptModel::Full,
            _ => return None,
        };
        Some(Preempt { model, dynamic })
    }

    pub fn name(self) -> String {
        let m = match self.model {
            PreemptModel::None => "none",
            PreemptModel::Voluntary => "voluntary",
            PreemptModel::Full => "full",
        };
        if self.dynamic {
            format!("dynamic-{m}")
        } else {
            m.to_string()
        }
    }

    /// `cond_resched()` reschedules (NONE and VOLUNTARY; under FULL it is a no-op).
    pub fn cond_resched_active(self) -> bool {
        self.model != PreemptModel::Full
    }
}

/// Split a kernel spec `NAME[+ID|-ID]...` into the named kernel and its patch items
/// (`+ID`/`-ID`). Whitespace may stand before each sign, so a run's kernel label
/// (`v6.1 +3dcac251b066`) reads back. Patch ids are matched against the known ones (longest
/// first), so ids that contain `-` (`rfc-tif-notify-ipi`) parse; this is the one grammar of
/// `--kernel`, `--kernels` and a scenario's `kernel`.
pub fn split_kernel_spec(spec: &str) -> Result<(&str, Vec<String>), String> {
    let spec = spec.trim();
    let is_sep = |c: char| c == '+' || c == '-' || c.is_whitespace();
    let cut = spec.find(is_sep).unwrap_or(spec.len());
    let (name, mut rest) = spec.split_at(cut);
    let mut items = Vec::new();
    loop {
        rest = rest.trim_start();
        let Some(sign) = rest.chars().next() else { break };
        if sign != '+' && sign != '-' {
            return Err(format!("kernel '{spec}': expected +ID or -ID after the kernel name, found '{rest}'"));
        }
        let body = &rest[1..];
        // Candidate ends: before each later sign or space, and the end.
        let mut ends: Vec<usize> = body.char_indices().filter(|&(_, c)| is_sep(c)).map(|(i, _)| i).collect();
        ends.push(body.len());
        let end = ends.iter().rev().copied().find(|&e| e > 0 && Patch::from_id(&body[..e]).is_some());
        let end = match end {
            Some(e) => e,
            None => {
                let first = ends[0];
                let id = &body[..first];
                let ids: Vec<&str> = PATCHES.iter().map(|p| p.id).collect();
                return Err(format!(
                    "unknown patch '{id}' in kernel '{spec}' (expected NAME+ID-ID... with ID one of: {})",
                    ids.join(", ")
                ));
            }
        };
        items.push(format!("{sign}{}", &body[..end]));
        rest = &body[end..];
    }
    Ok((name, items))
}

impl KernelConfig {
    /// Resolve `kernel` (a named kernel) plus a `+ID,-ID` patch list.
    pub fn resolve(kernel: &str, patch_spec: &str, hz: u32) -> Result<KernelConfig, String> {
        let (kernel, kernel_items) = split_kernel_spec(kernel)?;
        let Some(nk) = KERNELS.iter().find(|k| k.name == kernel) else {
            let names: Vec<&str> = KERNELS.iter().map(|k| k.name).collect();
            return Err(format!("unknown kernel '{kernel}' (expected one of: {})", names.join(", ")));
        };
        let mut patches: PatchSet = nk.patches.iter().copied().collect();
        // The kernel spec's own deltas first, then --patch's, which may override them; within
        // one of the two a patch may be named once.
        let patch_items: Vec<String> =
            patch_spec.split(',').map(str::trim).filter(|s| !s.is_empty()).map(String::from).collect();
        for (items, what) in [(kernel_items, "the kernel spec"), (patch_items, "--patch")] {
            let mut seen: Vec<(Patch, &str)> = Vec::new();
            for item in &items {
                let (add, id) = match item.as_bytes()[0] {
                    b'+' => (true, &item[1..]),
                    b'-' => (false, &item[1..]),
                    _ => (true, item.as_str()),
                };
                let Some(p) = Patch::from_id(id) else {
                    let ids: Vec<&str> = PATCHES.iter().map(|p| p.id).collect();
                    return Err(format!(
                        "unknown patch '{id}' in {what} (expected +ID or -ID with ID one of: {})",
                        ids.join(", ")
                    ));
                };
                if let Some((_, prev)) = seen.iter().find(|(q, _)| *q == p) {
                    return Err(format!("{what} names patch {} twice ('{prev}' and '{item}')", p.info().id));
                }
                seen.push((p, item));
                if add {
                    patches.insert(p);
                } else {
                    patches.remove(&p);
                }
            }
        }
        for p in &patches {
            for r in p.info().requires {
                if !patches.contains(r) {
                    return Err(format!("patch {} requires {}", p.info().id, r.info().id));
                }
            }
            for c in p.info().conflicts {
                if patches.contains(c) {
                    return Err(format!("patches {} and {} cannot be applied together", p.info().id, c.info().id));
                }
            }
        }
        let patches_has_eevdf = patches.contains(&Patch::S147f3efaa241);
        assert!(
            nk.fair == FairClass::Eevdf || !nk.patches.contains(&Patch::S147f3efaa241),
            "EEVDF's patch without the EEVDF class"
        );
        if !(100..=1000).contains(&hz) {
            return Err(format!("HZ={hz} is out of range (expected 100..=1000)"));
        }
        Ok(KernelConfig {
            base: kernel.to_string(),
            patches,
            features: Features::default(),
            hz,
            preempt_rt: false,
            // 147f3efaa241 (v6.6) is the EEVDF switch: a `-147f3efaa241` delta runs CFS.
            fair: if patches_has_eevdf { FairClass::Eevdf } else { FairClass::Cfs },
            preempt: Preempt { model: PreemptModel::Voluntary, dynamic: true },
            background: crate::linux::background::Profile::default(),
            start: Default::default(),
            cgroup_depth: 0,
            nr_leaf_cfs_rqs: 1,
        })
    }

    /// Sets the task-group knobs: `depth` for the workload's user tasks (0..=16) and
    /// `leaves` leaf `cfs_rq`s with load per CPU (1..=10000; the root's is one of them).
    pub fn set_task_groups(&mut self, depth: u32, leaves: u32) -> Result<(), String> {
        if depth > u32::from(MAX_CGROUP_DEPTH) {
            return Err(format!("cgroup depth {depth}: expected 0..={MAX_CGROUP_DEPTH}"));
        }
        if !(1..=MAX_LEAF_CFS_RQS).contains(&leaves) {
            return Err(format!(
                "leaf cfs_rqs with load per CPU {leaves}: expected 1..={MAX_LEAF_CFS_RQS} (the root's is one)"
            ));
        }
        self.cgroup_depth = depth as u8;
        self.nr_leaf_cfs_rqs = leaves;
        Ok(())
    }

    #[inline]
    pub fn has(&self, p: Patch) -> bool {
        self.patches.contains(&p)
    }

    #[inline]
    pub fn feat(&self, f: SchedFeat) -> bool {
        self.features.has(f)
    }

    /// The fair class's features for each cfs_rq: the feature table's, with the v6.12 ones
    /// (DELAY_DEQUEUE, DELAY_ZERO) only where the kernel has their patches.
    pub fn fair_features(&self) -> crate::linux::kernel::sched::fair_class::FairFeatures {
        let mut f = self.features.fair();
        f.delay_dequeue &= self.has(Patch::S152e11f6df29);
        f.delay_zero &= self.has(Patch::S54a58a787791);
        f
    }

    /// b2a02fc43a1f is applied: CSD notifications to polling CPUs set NEED_RESCHED instead of
    /// sending an IPI.
    #[inline]
    pub fn polling_ipi_elision(&self) -> bool {
        self.has(Patch::B2a02fc43a1f)
    }

    #[inline]
    pub fn sm_idle(&self) -> bool {
        self.has(Patch::Sm3dcac251b066)
    }

    #[inline]
    pub fn tif_notify_ipi(&self) -> bool {
        self.has(Patch::TifNotifyIpiRfc)
    }

    #[inline]
    pub fn softirq_flag(&self) -> bool {
        self.has(Patch::SoftirqFlagRfcV1) || self.has(Patch::SoftirqFlagRfcV1Unaligned)
    }

    /// The RFC v2 `softirq_ctrl` reuse.
    #[inline]
    pub fn softirq_ctrl_rfc(&self) -> bool {
        self.has(Patch::SoftirqCtrlRfcV2)
    }

    #[inline]
    pub fn softirq_flag_unaligned(&self) -> bool {
        self.has(Patch::SoftirqFlagRfcV1Unaligned)
    }

    /// A short label: the base plus the patch delta, e.g. `v6.10 +3dcac251b066`.
    pub fn label(&self) -> String {
        let base = KERNELS.iter().find(|k| k.name == self.base).map(|k| k.patches).unwrap_or(&[]);
        let mut s = self.base.clone();
        for p in &self.patches {
            if !base.contains(p) {
                s.push_str(&format!(" +{}", p.info().id));
            }
        }
        for p in base {
            if !self.patches.contains(p) {
                s.push_str(&format!(" -{}", p.info().id));
            }
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_kernel_spec_grammar() {
        let (n, items) = split_kernel_spec("v6.10+rfc-tif-notify-ipi-3dcac251b066").unwrap();
        assert_eq!((n, items), ("v6.10", vec!["+rfc-tif-notify-ipi".to_string(), "-3dcac251b066".to_string()]));
        let (n, items) = split_kernel_spec("v6.1 +3dcac251b066").unwrap();
        assert_eq!((n, items), ("v6.1", vec!["+3dcac251b066".to_string()]));
        assert!(split_kernel_spec("v6.10+nope").unwrap_err().contains("unknown patch 'nope'"));
        let label = KernelConfig::resolve("v6.1", "+3dcac251b066", 250).unwrap().label();
        assert_eq!(KernelConfig::resolve(&label, "", 250).unwrap().label(), label);
        let e = KernelConfig::resolve("v6.10", "+3dcac251b066,-3dcac251b066", 250).unwrap_err();
        assert!(e.contains("names patch 3dcac251b066 twice"), "{e}");
        // --patch overrides the kernel spec's own delta.
        let c = KernelConfig::resolve("v6.10+3dcac251b066", "-3dcac251b066", 250).unwrap();
        assert_eq!(c.label(), "v6.10");
    }

    #[test]
    fn patch_set_behaves_as_the_ordered_set_it_replaced() {
        use std::collections::BTreeSet;
        // Insert and remove patches in a scrambled order; the bit set must agree with a
        // BTreeSet on every answer and iterate in the same (Patch) order.
        let all: Vec<Patch> = PATCHES.iter().map(|r| r.patch).collect();
        let mut bits = PatchSet::default();
        let mut tree: BTreeSet<Patch> = BTreeSet::new();
        for round in 0..4 * all.len() {
            let p = all[(round * 7 + 3) % all.len()];
            if round % 3 == 2 {
                assert_eq!(bits.remove(&p), tree.remove(&p));
            } else {
                assert_eq!(bits.insert(p), tree.insert(p));
            }
            assert_eq!(bits.len(), tree.len());
            assert_eq!(bits.is_empty(), tree.is_empty());
            assert!(all.iter().all(|q| bits.contains(q) == tree.contains(q)));
            assert_eq!(bits.iter().copied().collect::<Vec<_>>(), tree.iter().copied().collect::<Vec<_>>());
        }
        assert_eq!(format!("{bits:?}"), format!("{tree:?}"));
        let c = KernelConfig::resolve("v6.10", "", 250).unwrap();
        let named = KERNELS.iter().find(|k| k.name == "v6.10").unwrap().patches;
        assert_eq!(c.patches.iter().copied().collect::<BTreeSet<_>>(), named.iter().copied().collect());
    }

    #[test]
    fn resolve_named_kernels_and_deltas() {
        let c = KernelConfig::resolve("v6.10", "", 250).unwrap();
        assert!(c.polling_ipi_elision() && !c.sm_idle());
        let c = KernelConfig::resolve("v6.10", "+3dcac251b066,-b2a02fc43a1f", 250).unwrap();
        assert!(c.sm_idle() && !c.polling_ipi_elision());
        assert_eq!(c.label(), "v6.10 +3dcac251b066 -b2a02fc43a1f");
        assert!(KernelConfig::resolve("v9.99", "", 250).unwrap_err().contains("unknown kernel"));
        assert!(KernelConfig::resolve("v6.10", "+nope", 250).unwrap_err().contains("unknown patch"));
        assert!(KernelConfig::resolve("v6.10", "+rfc-softirq-flag,+rfc-softirq-flag-unaligned", 250).is_err());
    }
}
