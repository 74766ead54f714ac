//! Scheduling domains: the kernel's hierarchical view of the machine that load balancing,
//! wake-affine and idle-CPU search walk.
//!
//! Models kernel/sched/topology.c @ v6.10 (domain construction), the SD_* flag table of
//! include/linux/sched/sd_flags.h @ v6.10, and the x86 topology table of
//! arch/x86/kernel/smpboot.c @ v6.10. Built once at boot from a [`Topology`]; the balancing
//! fields of each [`SchedDomain`] are then owned and updated by the fair-class model.

use crate::hw::cpumask::CpuMask;
use crate::hw::topology::{Topology, LOCAL_DISTANCE};

// ---------------------------------------------------------------------------------------
// SD_* flags, in include/linux/sched/sd_flags.h @ v6.10 order; flag N is bit N.

/// Balance when a CPU is about to go idle (newidle balance).
pub const SD_BALANCE_NEWIDLE: u32 = 1 << 0;
/// Balance on exec.
pub const SD_BALANCE_EXEC: u32 = 1 << 1;
/// Balance on fork and clone.
pub const SD_BALANCE_FORK: u32 = 1 << 2;
/// Balance on wakeup (slow path of `select_task_rq_fair()`); off by default.
pub const SD_BALANCE_WAKE: u32 = 1 << 3;
/// A wakee may be pulled towards the waking CPU (`wake_affine()`).
pub const SD_WAKE_AFFINE: u32 = 1 << 4;
/// The domain's CPUs differ in capacity.
pub const SD_ASYM_CPUCAPACITY: u32 = 1 << 5;
/// The domain sees every CPU capacity value present in the system.
pub const SD_ASYM_CPUCAPACITY_FULL: u32 = 1 << 6;
/// The domain's CPUs share one core's capacity (SMT siblings).
pub const SD_SHARE_CPUCAPACITY: u32 = 1 << 7;
/// The domain's CPUs share a cluster (e.g. an L2); not built on the modelled machines.
pub const SD_CLUSTER: u32 = 1 << 8;
/// The domain's CPUs share the last-level cache.
pub const SD_SHARE_LLC: u32 = 1 << 9;
/// Only one CPU in the system balances this domain at a time (NUMA levels).
pub const SD_SERIALIZE: u32 = 1 << 10;
/// Pack busy tasks on preferred CPUs (ITMT, SMT quirks).
pub const SD_ASYM_PACKING: u32 = 1 << 11;
/// Spread tasks to sibling groups before doubling up.
pub const SD_PREFER_SIBLING: u32 = 1 << 12;
/// The groups of this domain overlap (NUMA levels above NODE).
pub const SD_OVERLAP: u32 = 1 << 13;
/// The domain crosses NUMA nodes.
pub const SD_NUMA: u32 = 1 << 14;

/// Metaflag: if a domain has the flag, all its children must have it too.
pub const SDF_SHARED_CHILD: u32 = 0x1;
/// Metaflag: if a domain has the flag, all its parents must have it too.
pub const SDF_SHARED_PARENT: u32 = 0x2;
/// Metaflag: the flag only means something when the domain has two or more groups.
pub const SDF_NEEDS_GROUPS: u32 = 0x4;

/// (flag, name, metaflags) for every SD flag, in sd_flags.h order.
pub const SD_FLAGS: [(u32, &str, u32); 15] = [
    (SD_BALANCE_NEWIDLE, "SD_BALANCE_NEWIDLE", SDF_SHARED_CHILD | SDF_NEEDS_GROUPS),
    (SD_BALANCE_EXEC, "SD_BALANCE_EXEC", SDF_SHARED_CHILD | SDF_NEEDS_GROUPS),
    (SD_BALANCE_FORK, "SD_BALANCE_FORK", SDF_SHARED_CHILD | SDF_NEEDS_GROUPS),
    (SD_BALANCE_WAKE, "SD_BALANCE_WAKE", SDF_SHARED_CHILD | SDF_NEEDS_GROUPS),
    (SD_WAKE_AFFINE, "SD_WAKE_AFFINE", SDF_SHARED_CHILD),
    (SD_ASYM_CPUCAPACITY, "SD_ASYM_CPUCAPACITY", SDF_SHARED_PARENT | SDF_NEEDS_GROUPS),
    (SD_ASYM_CPUCAPACITY_FULL, "SD_ASYM_CPUCAPACITY_FULL", SDF_SHARED_PARENT | SDF_NEEDS_GROUPS),
    (SD_SHARE_CPUCAPACITY, "SD_SHARE_CPUCAPACITY", SDF_SHARED_CHILD | SDF_NEEDS_GROUPS),
    (SD_CLUSTER, "SD_CLUSTER", SDF_NEEDS_GROUPS),
    (SD_SHARE_LLC, "SD_SHARE_LLC", SDF_SHARED_CHILD | SDF_NEEDS_GROUPS),
    (SD_SERIALIZE, "SD_SERIALIZE", SDF_SHARED_PARENT | SDF_NEEDS_GROUPS),
    (SD_ASYM_PACKING, "SD_ASYM_PACKING", SDF_NEEDS_GROUPS),
    (SD_PREFER_SIBLING, "SD_PREFER_SIBLING", SDF_NEEDS_GROUPS),
    (SD_OVERLAP, "SD_OVERLAP", SDF_SHARED_PARENT | SDF_NEEDS_GROUPS),
    (SD_NUMA, "SD_NUMA", SDF_SHARED_PARENT | SDF_NEEDS_GROUPS),
];

const fn flags_with_meta(meta: u32) -> u32 {
    let mut mask = 0;
    let mut i = 0;
    while i < SD_FLAGS.len() {
        if SD_FLAGS[i].2 & meta != 0 {
            mask |= SD_FLAGS[i].0;
        }
        i += 1;
    }
    mask
}

/// Flags that are meaningless on a domain with a single group (kernel
/// `SD_DEGENERATE_GROUPS_MASK`).
pub const SD_DEGENERATE_GROUPS_MASK: u32 = flags_with_meta(SDF_NEEDS_GROUPS);
/// Flags set from the base domain upwards (kernel `SD_SHARED_CHILD_MASK`).
pub const SD_SHARED_CHILD_MASK: u32 = flags_with_meta(SDF_SHARED_CHILD);

// The table is in bit order, and WAKE_AFFINE is the one flag that survives without groups.
const _: () = {
    let mut i = 0;
    while i < SD_FLAGS.len() {
        assert!(SD_FLAGS[i].0 == 1 << i);
        i += 1;
    }
    assert!(SD_DEGENERATE_GROUPS_MASK == (1 << SD_FLAGS.len()) - 1 - SD_WAKE_AFFINE);
};

/// Flags an arch topology table may pass in (kernel `TOPOLOGY_SD_FLAGS`).
const TOPOLOGY_SD_FLAGS: u32 = SD_SHARE_CPUCAPACITY | SD_CLUSTER | SD_SHARE_LLC | SD_NUMA | SD_ASYM_PACKING;

/// "SD_BALANCE_NEWIDLE|SD_WAKE_AFFINE|..." for a flag word, in table order.
pub fn sd_flag_names(flags: u32) -> String {
    let names: Vec<&str> = SD_FLAGS.iter().filter(|(f, _, _)| flags & f != 0).map(|(_, n, _)| *n).collect();
    names.join("|")
}

// ---------------------------------------------------------------------------------------
// Domains.

/// A CPU mask shared by every domain and group that has it: each distinct span is stored once
/// per machine (the kernel allocates per-CPU domain copies, but their spans are the same few
/// masks per level; copying N-bit masks per CPU grows as N^2).
pub type SharedMask = std::sync::Arc<CpuMask>;

/// The distinct masks of one build, looked up by value.
#[derive(Default)]
struct MaskTable(std::collections::BTreeSet<SharedMask>);

impl MaskTable {
    /// The table's copy of `mask`, added if new.
    fn intern(&mut self, mask: CpuMask) -> SharedMask {
        if let Some(m) = self.0.get(&mask) {
            return m.clone();
        }
        let m = SharedMask::new(mask);
        self.0.insert(m.clone());
        m
    }
}

/// A domain's group list and its balance CPUs, as shared by every CPU that has them.
type SharedGroups = (std::sync::Arc<[SharedMask]>, std::sync::Arc<[u32]>);

/// The distinct group lists of one build: a domain's groups (by mask identity) and their
/// balance CPUs, stored once for every CPU that has them.
#[derive(Default)]
struct GroupLists(std::collections::BTreeMap<(Vec<usize>, Vec<u32>), SharedGroups>);

impl GroupLists {
    /// The table's copy of the list `groups` with balance CPUs `balance`, added if new.
    fn intern(&mut self, groups: Vec<SharedMask>, balance: Vec<u32>) -> SharedGroups {
        let key = (groups.iter().map(|g| SharedMask::as_ptr(g) as usize).collect(), balance);
        let entry = self.0.entry(key).or_insert_with_key(|(_, balance)| (groups.into(), balance.as_slice().into()));
        (entry.0.clone(), entry.1.clone())
    }
}

/// One level of one CPU's domain hierarchy (`struct sched_domain`).
#[derive(Clone, Debug)]
pub struct SchedDomain {
    /// Topology level name: "SMT", "MC", "PKG", "NODE" or "NUMA".
    pub name: &'static str,
    /// The CPUs this domain balances across (`sched_domain_span()`), shared.
    pub span: SharedMask,
    /// `span.weight()`.
    pub span_weight: u32,
    /// The span as a test on packed places ([`crate::hw::topology::Topology::places`]), when
    /// it is one: `Some(m)` if the span is exactly the CPUs `c` with `(places[c] ^
    /// places[owner]) & m == 0` (the owner's core, LLC, socket or all CPUs), checked against
    /// the mask when the domains are built. Lets a hot path test membership without reaching
    /// the shared mask (see [`SchedDomain::span_test_apart`]).
    pub span_places: Option<u64>,
    /// SD_* flags.
    pub flags: u32,
    /// The sched groups, first the one containing the owning CPU, then in
    /// `for_each_cpu_wrap()` order from it. Each is a child-domain span (one CPU each at the
    /// lowest level), shared; the list itself is shared by every CPU whose domain has the
    /// same groups in the same order (on a machine of many nodes each CPU's top NUMA domain
    /// lists every node, so per-CPU lists would grow as CPUs x nodes).
    pub groups: std::sync::Arc<[SharedMask]>,
    /// Per group, the CPU that balances on the group's behalf (`group_balance_cpu()`):
    /// the first CPU of its balance mask, which equals the span except on NUMA levels. Shared
    /// like `groups`.
    pub group_balance_cpu: std::sync::Arc<[u32]>,
    /// Periodic balance interval bounds and current value, ms. Initially `span_weight`,
    /// `2 * span_weight` and `span_weight`.
    pub min_interval: u32,
    pub max_interval: u32,
    pub balance_interval: u32,
    /// Busy CPUs balance this many times less often (16).
    pub busy_factor: u32,
    /// Imbalance threshold in percent (110 for SMT, 117 otherwise).
    pub imbalance_pct: u32,
    /// Balancing failures tolerated before cache-hot tasks may move (0 SMT, 1 LLC/PKG,
    /// 2 NUMA).
    pub cache_nice_tries: u32,
    /// Tasks a NUMA imbalance may leave before it counts (`sd->imb_numa_nr`).
    pub imb_numa_nr: u32,
    // Balancing state. Written only by the owning CPU's balancing paths (the periodic,
    // nohz and newidle balance models), as in the kernel.
    /// Jiffies of the last periodic balance.
    pub last_balance: u64,
    /// Consecutive failed balance attempts.
    pub nr_balance_failed: u32,
    /// Highest newidle balance cost seen on this domain, ns (decays).
    pub max_newidle_lb_cost: u64,
    /// Jiffies of the last decay of `max_newidle_lb_cost`.
    pub last_decay_max_lb_cost: u64,
    /// The schedstat `lb_*` counters of `sched_balance_rq()` on this domain, per idle type
    /// (CONFIG_SCHEDSTATS; `super::stats`). Last: read only by `show_schedstat()`.
    pub lb: super::stats::DomainLbCounters,
}

impl SchedDomain {
    /// `span.test(c)` for a CPU `c` whose packed place XORs to `x` with the owning CPU's:
    /// answered from `x` when the span is a block of places ([`SchedDomain::span_places`]),
    /// else from the mask.
    #[inline]
    pub fn span_test_apart(&self, c: u32, x: u64) -> bool {
        match self.span_places {
            Some(m) => x & m == 0,
            None => self.span.test(c),
        }
    }
}

/// The mask `m` with `span` = the CPUs `c` whose place satisfies `(places[c] ^ places[cpu]) &
/// m == 0`, if there is one: the smallest aligned block of places around `cpu`'s that holds
/// every CPU of the span, kept only if it holds no other CPU (`sorted` is `places` sorted, to
/// count the block's CPUs).
fn span_place_mask(places: &[u64], sorted: &[u64], cpu: u32, span: &CpuMask, weight: u32) -> Option<u64> {
    if weight as usize == places.len() {
        // Every CPU: no test needed.
        return Some(0);
    }
    let p = places[cpu as usize];
    let spread = span.iter().fold(0u64, |acc, c| acc | (places[c as usize] ^ p));
    let bits = 64 - spread.leading_zeros();
    let m = if bits == 64 { 0 } else { !0u64 << bits };
    let (lo, hi) = (p & m, (p & m) | !m);
    let in_block = sorted.partition_point(|&x| x <= hi) - sorted.partition_point(|&x| x < lo);
    (in_block == weight as usize).then_some(m)
}

/// The attached domains of every CPU plus the per-CPU LLC shortcuts.
#[derive(Clone, Debug)]
pub struct SchedDomains {
    /// `per_cpu[cpu]` is that CPU's hierarchy bottom-up (index 0 = `rq->sd`).
    pub per_cpu: Vec<Vec<SchedDomain>>,
    /// Per CPU, the first CPU of its LLC domain, or the CPU itself if it has none.
    pub sd_llc_id: Vec<u32>,
    /// Per CPU, the weight of its LLC domain, or 1.
    pub sd_llc_size: Vec<u32>,
    /// Per CPU, index into `per_cpu[cpu]` of the highest SD_SHARE_LLC domain (`sd_llc`).
    pub sd_llc: Vec<Option<usize>>,
    /// Per CPU, index into `per_cpu[cpu]` of the lowest SD_NUMA domain (`sd_numa`).
    pub sd_numa: Vec<Option<usize>>,
    /// Running sums over the groups (filled at boot by `group_sums::init()`).
    pub sums: super::group_sums::GroupSums,
}

impl SchedDomains {
    /// `cpu`'s domains bottom-up (`for_each_domain()`).
    pub fn domains(&self, cpu: u32) -> &[SchedDomain] {
        &self.per_cpu[cpu as usize]
    }

    /// `cpu`'s domains bottom-up, for the balancing state.
    pub fn domains_mut(&mut self, cpu: u32) -> &mut [SchedDomain] {
        &mut self.per_cpu[cpu as usize]
    }

    /// Models `highest_flag_domain()` — kernel/sched/sched.h @ v6.10.
    /// Index of the highest domain of `cpu` with `flag`; for SHARED_CHILD flags the walk
    /// stops at the first domain without it.
    pub fn highest_flag_domain(&self, cpu: u32, flag: u32) -> Option<usize> {
        highest_flag_domain(self.domains(cpu), flag)
    }

    /// Models `lowest_flag_domain()` — kernel/sched/sched.h @ v6.10.
    pub fn lowest_flag_domain(&self, cpu: u32, flag: u32) -> Option<usize> {
        self.domains(cpu).iter().position(|sd| sd.flags & flag != 0)
    }

    /// Models `cpus_share_cache()` — kernel/sched/core.c @ v6.10.
    pub fn cpus_share_cache(&self, this_cpu: u32, that_cpu: u32) -> bool {
        this_cpu == that_cpu || self.sd_llc_id[this_cpu as usize] == self.sd_llc_id[that_cpu as usize]
    }

    /// A `sched_domain_debug()`-style description of `cpu`'s domains, one line per
    /// domain: "domain-1: span=8-15,136-143 level=MC groups={8,136},{9,137},...".
    pub fn describe(&self, cpu: u32) -> String {
        let mut out = String::new();
        for (level, sd) in self.domains(cpu).iter().enumerate() {
            let groups: Vec<String> = sd.groups.iter().map(|g| format!("{{{g}}}")).collect();
            out.push_str(&format!(
                "domain-{level}: span={} level={} flags={} groups={}\n",
                sd.span,
                sd.name,
                sd_flag_names(sd.flags),
                groups.join(",")
            ));
        }
        out
    }
}

fn highest_flag_domain(chain: &[SchedDomain], flag: u32) -> Option<usize> {
    let mut highest = None;
    for (index, sd) in chain.iter().enumerate() {
        if sd.flags & flag != 0 {
            highest = Some(index);
        } else if flag & SD_SHARED_CHILD_MASK != 0 {
            break;
        }
    }
    highest
}

// ---------------------------------------------------------------------------------------
// Topology levels.

/// Which mask function a level uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum LevelMask {
    /// `cpu_smt_mask()`.
    Smt,
    /// `cpu_coregroup_mask()`, the LLC on x86.
    CoreGroup,
    /// `cpu_cpu_mask()`, the CPU's node.
    Cpu,
    /// `sd_numa_mask()`: nodes within `sched_domains_numa_distance[numa_level]`.
    Numa,
}

/// One row of the topology table (`struct sched_domain_topology_level`).
#[derive(Clone, Debug)]
struct TopologyLevel {
    name: &'static str,
    mask: LevelMask,
    /// What the level's `sd_flags()` callback returns.
    sd_flags: u32,
    /// `SDTL_OVERLAP`.
    overlap: bool,
    /// Index into the NUMA distance table (NUMA levels only).
    numa_level: usize,
}

/// Models `build_sched_topology()` — arch/x86/kernel/smpboot.c @ v6.10,
/// followed by `sched_init_numa()` — kernel/sched/topology.c @ v6.10.
/// Context: boot, before SMP scheduling starts.
/// Simplifications: CLS is left out (L2 is per core on the modelled parts, so the kernel
/// degenerates CLS into SMT); no ITMT, so no SD_ASYM_PACKING. Returns the levels and the
/// sorted distinct SLIT distances (`sched_domains_numa_distance`).
fn build_sched_topology(topo: &Topology) -> (Vec<TopologyLevel>, Vec<u32>) {
    let mut levels = vec![
        TopologyLevel {
            name: "SMT",
            mask: LevelMask::Smt,
            sd_flags: SD_SHARE_CPUCAPACITY | SD_SHARE_LLC,
            overlap: false,
            numa_level: 0,
        },
        TopologyLevel { name: "MC", mask: LevelMask::CoreGroup, sd_flags: SD_SHARE_LLC, overlap: false, numa_level: 0 },
    ];
    // With several nodes in a package (x86_has_numa_in_package) PKG is left out; the
    // NUMA levels rebuild the package from the SLIT.
    if topo.spec.nodes_per_socket == 1 {
        levels.push(TopologyLevel { name: "PKG", mask: LevelMask::Cpu, sd_flags: 0, overlap: false, numa_level: 0 });
    }

    // sched_init_numa(): one level per distinct distance; the local distance is NODE.
    let mut distances: Vec<u32> = Vec::new();
    for a in 0..topo.nr_nodes() {
        for b in 0..topo.nr_nodes() {
            distances.push(topo.node_distance(a, b));
        }
    }
    distances.sort_unstable();
    distances.dedup();
    assert_eq!(distances.first(), Some(&LOCAL_DISTANCE), "SLIT must have the local distance");
    levels.push(TopologyLevel { name: "NODE", mask: LevelMask::Numa, sd_flags: 0, overlap: false, numa_level: 0 });
    for numa_level in 1..distances.len() {
        levels.push(TopologyLevel {
            name: "NUMA",
            mask: LevelMask::Numa,
            sd_flags: SD_NUMA,
            overlap: true,
            numa_level,
        });
    }
    (levels, distances)
}

/// The level's mask for `cpu` (`tl->mask(cpu)`).
fn level_mask(topo: &Topology, distances: &[u32], tl: &TopologyLevel, cpu: u32) -> CpuMask {
    match tl.mask {
        LevelMask::Smt => topo.smt_mask(cpu),
        LevelMask::CoreGroup => topo.llc_mask(cpu).clone(),
        LevelMask::Cpu => topo.node_mask(cpu).clone(),
        LevelMask::Numa => {
            let node = topo.cpu_to_node(cpu);
            let mut mask = CpuMask::new(topo.nr_cpus);
            for other in 0..topo.nr_nodes() {
                if topo.node_distance(node, other) <= distances[tl.numa_level] {
                    mask.or_assign(topo.cpumask_of_node(other));
                }
            }
            mask
        }
    }
}

/// Which CPUs share `cpu`'s [`level_mask`] at level `tl`: the mask is a function of this key
/// (the core, the LLC or the node), so it is computed once per key, not once per CPU.
fn level_key(topo: &Topology, tl: &TopologyLevel, cpu: u32) -> u32 {
    let t = &topo.cpus[cpu as usize];
    match tl.mask {
        LevelMask::Smt => t.core,
        LevelMask::CoreGroup => t.llc,
        LevelMask::Cpu | LevelMask::Numa => t.node,
    }
}

/// Models `sd_init()` — kernel/sched/topology.c @ v6.10.
/// Context: boot, under sched_domains_mutex.
/// Simplifications: no asymmetric CPU capacity; no `sched_domain_shared` (the LLC's
/// `nr_busy_cpus` lives with the nohz model).
fn sd_init(
    tl: &TopologyLevel,
    tl_mask: &CpuMask,
    cpu_map: &CpuMask,
    numa_distance: u32,
    node_reclaim_distance: u32,
    jiffies: u64,
) -> SchedDomain {
    let sd_weight = tl_mask.weight();
    let sd_flags = tl.sd_flags & TOPOLOGY_SD_FLAGS;
    let mut sd = SchedDomain {
        name: tl.name,
        span: SharedMask::new(cpu_map.and(tl_mask)),
        span_weight: 0,
        span_places: None,
        flags: SD_BALANCE_NEWIDLE | SD_BALANCE_EXEC | SD_BALANCE_FORK | SD_WAKE_AFFINE | SD_PREFER_SIBLING | sd_flags,
        groups: std::sync::Arc::from([]),
        group_balance_cpu: std::sync::Arc::from([]),
        min_interval: sd_weight,
        max_interval: 2 * sd_weight,
        balance_interval: sd_weight,
        busy_factor: 16,
        imbalance_pct: 117,
        cache_nice_tries: 0,
        imb_numa_nr: 0,
        last_balance: jiffies,
        nr_balance_failed: 0,
        max_newidle_lb_cost: 0,
        last_decay_max_lb_cost: jiffies,
        lb: Default::default(),
    };

    if sd.flags & SD_SHARE_CPUCAPACITY != 0 {
        sd.imbalance_pct = 110;
    } else if sd.flags & SD_SHARE_LLC != 0 {
        sd.imbalance_pct = 117;
        sd.cache_nice_tries = 1;
    } else if sd.flags & SD_NUMA != 0 {
        sd.cache_nice_tries = 2;
        sd.flags &= !SD_PREFER_SIBLING;
        sd.flags |= SD_SERIALIZE;
        if numa_distance > node_reclaim_distance {
            sd.flags &= !(SD_BALANCE_EXEC | SD_BALANCE_FORK | SD_WAKE_AFFINE);
        }
    } else {
        sd.cache_nice_tries = 1;
    }
    sd
}

/// A domain during construction: `built[cpu][level]`, `None` where the CPU's hierarchy
/// stopped below that level (its span already covered the whole machine).
type Built = Vec<Vec<Option<SchedDomain>>>;

/// The child of `cpu`'s domain at `level` (the same CPU's domain one level down).
fn child_of(built: &Built, cpu: u32, level: usize) -> Option<&SchedDomain> {
    if level == 0 {
        None
    } else {
        built[cpu as usize][level - 1].as_ref()
    }
}

/// The group builders' `for_each_cpu_wrap(i, span, cpu)` loop that skips the CPUs already
/// `covered`: each step finds the next uncovered CPU of the span in wrap order by whole words,
/// so a machine-wide span costs its groups, not its CPUs. `covered` only grows during a walk,
/// so this visits exactly the CPUs the plain loop would not skip, in the same order.
struct WrapWalk {
    start: u32,
    from: u32,
    wrapped: bool,
}

impl WrapWalk {
    fn new(start: u32) -> WrapWalk {
        WrapWalk { start, from: start, wrapped: false }
    }

    fn next(&mut self, span: &CpuMask, covered: &CpuMask) -> Option<u32> {
        loop {
            match span.next_andnot_from(covered, self.from) {
                Some(i) if !self.wrapped || i < self.start => {
                    self.from = i + 1;
                    return Some(i);
                }
                _ if !self.wrapped => {
                    self.wrapped = true;
                    self.from = 0;
                }
                _ => return None,
            }
        }
    }
}

/// Models `build_sched_groups()` and `get_group()` — kernel/sched/topology.c @ v6.10.
/// Context: boot, under sched_domains_mutex.
/// Simplifications: groups are spans only (no `sched_group_capacity`).
fn build_sched_groups(built: &Built, level: usize, cpu: u32, masks: &mut MaskTable) -> (Vec<SharedMask>, Vec<u32>) {
    let sd = built[cpu as usize][level].as_ref().expect("domain exists");
    let mut covered = CpuMask::new(sd.span.nr_cpus());
    let mut groups = Vec::new();
    let mut balance = Vec::new();
    let mut walk = WrapWalk::new(cpu);
    while let Some(i) = walk.next(&sd.span, &covered) {
        let group = match child_of(built, i, level) {
            Some(child) => child.span.clone(),
            None => masks.intern(CpuMask::of(i, sd.span.nr_cpus())),
        };
        covered.or_assign(&group);
        balance.push(group.first().expect("group is never empty"));
        groups.push(group);
    }
    (groups, balance)
}

/// Models `find_descended_sibling()` — kernel/sched/topology.c @ v6.10.
/// Returns the level of `sibling_cpu`'s domain whose child is the right group for `span`.
fn find_descended_sibling(built: &Built, span: &CpuMask, sibling_cpu: u32, mut level: usize) -> usize {
    while let Some(child) = child_of(built, sibling_cpu, level) {
        if child.span.is_subset(span) {
            break;
        }
        level -= 1;
    }
    while let Some(child) = child_of(built, sibling_cpu, level) {
        let this = built[sibling_cpu as usize][level].as_ref().expect("domain exists");
        if child.span != this.span {
            break;
        }
        level -= 1;
    }
    level
}

/// Models `build_overlap_sched_groups()` with `build_balance_mask()` —
/// kernel/sched/topology.c @ v6.10.
/// Context: boot, under sched_domains_mutex.
/// Simplifications: groups are spans plus their balance CPU (no shared capacity objects).
fn build_overlap_sched_groups(built: &Built, level: usize, cpu: u32) -> (Vec<SharedMask>, Vec<u32>) {
    let sd = built[cpu as usize][level].as_ref().expect("domain exists");
    let nr_cpus = sd.span.nr_cpus();
    let mut covered = CpuMask::new(nr_cpus);
    let mut groups = Vec::new();
    let mut balance = Vec::new();
    let mut walk = WrapWalk::new(cpu);
    while let Some(i) = walk.next(&sd.span, &covered) {
        // A sibling whose hierarchy stopped lower has no domain at this level.
        let Some(sibling) = built[i as usize][level].as_ref() else {
            continue;
        };
        if !sibling.span.test(i) {
            continue;
        }
        let mut sibling_level = level;
        if let Some(child) = child_of(built, i, level) {
            if !child.span.is_subset(&sd.span) {
                sibling_level = find_descended_sibling(built, &sd.span, i, level);
            }
        }
        let group = match child_of(built, i, sibling_level) {
            Some(child) => child.span.clone(),
            None => built[i as usize][sibling_level].as_ref().expect("domain exists").span.clone(),
        };
        covered.or_assign(&group);

        // Balance mask: the group's CPUs whose own domain at the sibling's level has this
        // group as its child, i.e. the CPUs that can arrive here.
        let balance_cpu = group
            .iter()
            .find(|&j| {
                built[j as usize][sibling_level].is_some()
                    && child_of(built, j, sibling_level).is_some_and(|c| *c.span == *group)
            })
            // The kernel warns on an empty balance mask; fall back to the first CPU.
            .unwrap_or_else(|| group.first().expect("group is never empty"));
        balance.push(balance_cpu);
        groups.push(group);
    }
    (groups, balance)
}

/// Models `sd_degenerate()` — kernel/sched/topology.c @ v6.10.
fn sd_degenerate(sd: &SchedDomain) -> bool {
    if sd.span.weight() == 1 {
        return true;
    }
    // Flags that need groups only count with two or more groups.
    if sd.flags & SD_DEGENERATE_GROUPS_MASK != 0 && sd.groups.len() > 1 {
        return false;
    }
    sd.flags & SD_WAKE_AFFINE == 0
}

/// Models `sd_parent_degenerate()` — kernel/sched/topology.c @ v6.10.
/// True if `parent` adds nothing over `sd` and can be dropped.
fn sd_parent_degenerate(sd: &SchedDomain, parent: &SchedDomain) -> bool {
    if sd_degenerate(parent) {
        return true;
    }
    if sd.span != parent.span {
        return false;
    }
    let mut pflags = parent.flags;
    if parent.groups.len() == 1 {
        pflags &= !SD_DEGENERATE_GROUPS_MASK;
    }
    !sd.flags & pflags == 0
}

/// Models `cpu_attach_domain()` — kernel/sched/topology.c @ v6.10.
/// Context: boot, under sched_domains_mutex.
/// Simplifications: removes degenerate levels from `chain` (bottom-up) and returns what
/// would become `rq->sd`; root domains and RCU publication are not modelled.
fn cpu_attach_domain(mut chain: Vec<SchedDomain>) -> Vec<SchedDomain> {
    let mut tmp = 0;
    while tmp + 1 < chain.len() {
        if sd_parent_degenerate(&chain[tmp], &chain[tmp + 1]) {
            let parent = chain.remove(tmp + 1);
            // The spans match, so the parent's preference for siblings carries down.
            if parent.flags & SD_PREFER_SIBLING != 0 {
                chain[tmp].flags |= SD_PREFER_SIBLING;
            }
        } else {
            tmp += 1;
        }
    }
    if chain.first().is_some_and(sd_degenerate) {
        chain.remove(0);
    }
    chain
}

/// Models `build_sched_domains()` — kernel/sched/topology.c @ v6.10.
/// Context: boot (`sched_init_smp()`), every CPU online, one root domain; jiffies = 0.
/// Simplifications: see [`build_sched_domains_at`].
pub fn build_sched_domains(topo: &Topology) -> SchedDomains {
    build_sched_domains_at(topo, 0)
}

/// Models `build_sched_domains()` — kernel/sched/topology.c @ v6.10, at time `jiffies`
/// (which seeds `last_balance` and `last_decay_max_lb_cost`).
/// Context: boot (`sched_init_smp()`), every CPU online, one root domain.
/// Simplifications: x86 topology table without CLS/ITMT (see `build_sched_topology`);
/// symmetric CPU capacity; no cpusets (`cpu_map` = all CPUs) and no relax_domain_level;
/// no `sched_domain_shared`; `update_top_cache_domain()` fills only `sd_llc*` and
/// `sd_numa`.
pub fn build_sched_domains_at(topo: &Topology, jiffies: u64) -> SchedDomains {
    let (levels, distances) = build_sched_topology(topo);
    let cpu_map = topo.all_cpus();
    let nr_cpus = topo.nr_cpus;

    // Set up domains for the CPUs, bottom-up, stopping once a level spans everything.
    let mut built: Built = vec![vec![None; levels.len()]; nr_cpus as usize];
    let mut masks = MaskTable::default();
    // Per level, the level's mask by its key (see `level_key`).
    let mut level_masks: Vec<std::collections::BTreeMap<u32, CpuMask>> = vec![Default::default(); levels.len()];
    for cpu in cpu_map.iter() {
        for (level, tl) in levels.iter().enumerate() {
            let mask = level_masks[level]
                .entry(level_key(topo, tl, cpu))
                .or_insert_with(|| level_mask(topo, &distances, tl, cpu));
            let mut sd = sd_init(tl, mask, &cpu_map, distances[tl.numa_level], topo.node_reclaim_distance(), jiffies);
            if let Some(child) = child_of(&built, cpu, level) {
                // "BUG: arch topology borken": the kernel widens the span to keep nesting.
                if !child.span.is_subset(&sd.span) {
                    SharedMask::make_mut(&mut sd.span).or_assign(&child.span);
                }
            }
            sd.span = masks.intern(SharedMask::unwrap_or_clone(sd.span));
            if tl.overlap {
                sd.flags |= SD_OVERLAP;
            }
            let spans_all = *sd.span == cpu_map;
            built[cpu as usize][level] = Some(sd);
            if spans_all {
                break;
            }
        }
    }

    // Build the groups for the domains.
    let mut lists = GroupLists::default();
    for cpu in cpu_map.iter() {
        for level in 0..levels.len() {
            let Some(sd) = built[cpu as usize][level].as_ref() else {
                break;
            };
            let (groups, balance) = if sd.flags & SD_OVERLAP != 0 {
                build_overlap_sched_groups(&built, level, cpu)
            } else {
                build_sched_groups(&built, level, cpu, &mut masks)
            };
            let sd = built[cpu as usize][level].as_mut().expect("domain exists");
            sd.span_weight = sd.span.weight();
            (sd.groups, sd.group_balance_cpu) = lists.intern(groups, balance);
        }
    }

    // Allowed NUMA imbalance, computed on the full (not yet degenerated) hierarchy.
    for cpu in cpu_map.iter() {
        let chain = &mut built[cpu as usize];
        let mut imb = 0;
        let mut imb_span = 1;
        for level in 0..chain.len() {
            let Some(sd) = chain[level].as_ref() else {
                break;
            };
            let child = if level == 0 { None } else { chain[level - 1].as_ref() };
            let (span_weight, flags) = (sd.span_weight, sd.flags);
            let imb_numa_nr = match child {
                Some(child) if flags & SD_SHARE_LLC == 0 && child.flags & SD_SHARE_LLC != 0 => {
                    let nr_llcs = span_weight / child.span_weight;
                    imb = if nr_llcs == 1 { span_weight >> 3 } else { nr_llcs }.max(1);
                    // The span of the first NUMA domain above, or this domain's own.
                    imb_span = chain[level + 1..]
                        .iter()
                        .map_while(Option::as_ref)
                        .find(|p| p.flags & SD_NUMA != 0)
                        .map_or(span_weight, |p| p.span_weight);
                    imb
                }
                _ => imb * (span_weight / imb_span).max(1),
            };
            chain[level].as_mut().expect("domain exists").imb_numa_nr = imb_numa_nr;
        }
    }

    // Attach the domains.
    let mut per_cpu = Vec::with_capacity(nr_cpus as usize);
    let mut sd_llc_id = Vec::with_capacity(nr_cpus as usize);
    let mut sd_llc_size = Vec::with_capacity(nr_cpus as usize);
    let mut sd_llc = Vec::with_capacity(nr_cpus as usize);
    let mut sd_numa = Vec::with_capacity(nr_cpus as usize);
    let places = topo.places();
    let mut sorted_places = places.to_vec();
    sorted_places.sort_unstable();
    for (cpu, chain) in built.into_iter().enumerate() {
        let mut chain = cpu_attach_domain(chain.into_iter().map_while(|sd| sd).collect());
        for sd in &mut chain {
            sd.span_places = span_place_mask(places, &sorted_places, cpu as u32, &sd.span, sd.span.weight());
        }
        // update_top_cache_domain()
        let llc = highest_flag_domain(&chain, SD_SHARE_LLC);
        match llc {
            Some(index) => {
                sd_llc_id.push(chain[index].span.first().expect("span is never empty"));
                sd_llc_size.push(chain[index].span_weight);
            }
            None => {
                sd_llc_id.push(cpu as u32);
                sd_llc_size.push(1);
            }
        }
        sd_llc.push(llc);
        sd_numa.push(chain.iter().position(|sd| sd.flags & SD_NUMA != 0));
        per_cpu.push(chain);
    }

    SchedDomains { per_cpu, sd_llc_id, sd_llc_size, sd_llc, sd_numa, sums: Default::default() }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hw::cpumask::parse_cpulist;
    use crate::hw::preset;
    use crate::hw::topology::{Distance, TopologySpec};

    const DEFAULT_FLAGS: u32 =
        SD_BALANCE_NEWIDLE | SD_BALANCE_EXEC | SD_BALANCE_FORK | SD_WAKE_AFFINE | SD_PREFER_SIBLING;

    fn names(sds: &SchedDomains, cpu: u32) -> Vec<&'static str> {
        sds.domains(cpu).iter().map(|sd| sd.name).collect()
    }

    #[test]
    fn flag_values_follow_sd_flags_h() {
        assert_eq!(SD_BALANCE_NEWIDLE, 0x0001);
        assert_eq!(SD_WAKE_AFFINE, 0x0010);
        assert_eq!(SD_SHARE_CPUCAPACITY, 0x0080);
        assert_eq!(SD_SHARE_LLC, 0x0200);
        assert_eq!(SD_SERIALIZE, 0x0400);
        assert_eq!(SD_PREFER_SIBLING, 0x1000);
        assert_eq!(SD_NUMA, 0x4000);
        assert_eq!(sd_flag_names(SD_SHARE_LLC | SD_BALANCE_NEWIDLE), "SD_BALANCE_NEWIDLE|SD_SHARE_LLC");
    }

    #[test]
    fn epyc_cpu8_hierarchy() {
        let m = preset("epyc-7763-2s").unwrap();
        let sds = build_sched_domains(&m.topo);
        assert_eq!(names(&sds, 8), ["SMT", "MC", "PKG", "NUMA"]);
        let d = sds.domains(8);

        assert_eq!(d[0].span.to_string(), "8,136");
        assert_eq!(d[0].flags, DEFAULT_FLAGS | SD_SHARE_CPUCAPACITY | SD_SHARE_LLC);
        assert_eq!((d[0].imbalance_pct, d[0].cache_nice_tries), (110, 0));
        assert_eq!(
            *d[0].groups,
            [SharedMask::new(parse_cpulist("8", 256).unwrap()), SharedMask::new(parse_cpulist("136", 256).unwrap())]
        );

        assert_eq!(d[1].span.to_string(), "8-15,136-143");
        assert_eq!(d[1].span_weight, 16);
        assert_eq!(d[1].flags, DEFAULT_FLAGS | SD_SHARE_LLC);
        assert_eq!((d[1].imbalance_pct, d[1].cache_nice_tries), (117, 1));
        assert_eq!(d[1].groups.len(), 8);
        assert_eq!(d[1].groups[0].to_string(), "8,136");
        assert_eq!(d[1].groups[7].to_string(), "15,143");
        assert_eq!((d[1].min_interval, d[1].max_interval, d[1].balance_interval), (16, 32, 16));

        assert_eq!(d[2].span.to_string(), "0-63,128-191");
        assert_eq!(d[2].span_weight, 128);
        assert_eq!(d[2].flags, DEFAULT_FLAGS);
        assert_eq!((d[2].imbalance_pct, d[2].cache_nice_tries, d[2].busy_factor), (117, 1, 16));
        // Groups are the 8 CCXs, starting with CPU 8's own and wrapping.
        let pkg_groups: Vec<String> = d[2].groups.iter().map(|g| g.to_string()).collect();
        assert_eq!(pkg_groups[0], "8-15,136-143");
        assert_eq!(pkg_groups[6], "56-63,184-191");
        assert_eq!(pkg_groups[7], "0-7,128-135");
        assert_eq!(d[2].imb_numa_nr, 8);

        assert_eq!(*d[3].span, CpuMask::full(256));
        assert_eq!(d[3].span_weight, 256);
        // Distance 32 is not above AMD's node_reclaim_distance of 32: EXEC/FORK/AFFINE stay.
        assert_eq!(d[3].flags, (DEFAULT_FLAGS & !SD_PREFER_SIBLING) | SD_SERIALIZE | SD_OVERLAP | SD_NUMA);
        assert_eq!((d[3].imbalance_pct, d[3].cache_nice_tries), (117, 2));
        let numa_groups: Vec<String> = d[3].groups.iter().map(|g| g.to_string()).collect();
        assert_eq!(numa_groups, ["0-63,128-191", "64-127,192-255"]);
        assert_eq!(*d[3].group_balance_cpu, [0, 64]);
        assert_eq!((d[3].min_interval, d[3].max_interval), (256, 512));

        assert_eq!(sds.sd_llc_id[8], 8);
        assert_eq!(sds.sd_llc_id[143], 8);
        assert_eq!(sds.sd_llc_size[8], 16);
        assert_eq!(sds.sd_llc[8], Some(1));
        assert_eq!(sds.sd_numa[8], Some(3));
        assert!(sds.cpus_share_cache(8, 143));
        assert!(!sds.cpus_share_cache(8, 16));

        assert_eq!(m.topo.distance(8, 16), Distance::Socket);
        assert_eq!(m.topo.distance(8, 136), Distance::Smt);
        assert_eq!(m.topo.distance(8, 72), Distance::Remote);
    }

    #[test]
    fn epyc_every_cpu_is_symmetric() {
        let m = preset("epyc-7763-2s").unwrap();
        let sds = build_sched_domains(&m.topo);
        for cpu in 0..256 {
            let d = sds.domains(cpu);
            assert_eq!(d.len(), 4, "cpu {cpu}");
            assert!(d[0].span.test(cpu));
            for pair in d.windows(2) {
                assert!(pair[0].span.is_subset(&pair[1].span));
            }
            for sd in d {
                assert!(sd.groups[0].test(cpu), "first group holds the cpu");
                let mut union = CpuMask::new(256);
                for g in sd.groups.iter() {
                    union.or_assign(g);
                }
                assert_eq!(union, *sd.span);
            }
            assert_eq!(*d[3].groups[0], *m.topo.node_mask(cpu));
        }
    }

    #[test]
    fn reclaim_distance_strips_numa_flags() {
        let mut spec = TopologySpec::new(2, 1, 4, 2, 2);
        spec.node_reclaim_distance = 30;
        let topo = Topology::new(&spec).unwrap();
        let sds = build_sched_domains(&topo);
        let numa = sds.domains(0).last().unwrap();
        assert_eq!(numa.name, "NUMA");
        assert_eq!(numa.flags & (SD_BALANCE_EXEC | SD_BALANCE_FORK | SD_WAKE_AFFINE), 0);
        assert_ne!(numa.flags & SD_BALANCE_NEWIDLE, 0);
    }

    #[test]
    fn smp4_has_mc_and_pkg_only() {
        let m = preset("smp-4").unwrap();
        let sds = build_sched_domains(&m.topo);
        for cpu in 0..4 {
            assert_eq!(names(&sds, cpu), ["MC", "PKG"], "cpu {cpu}");
        }
        let d = sds.domains(1);
        assert_eq!(d[0].span.to_string(), "0-1");
        assert_eq!(d[0].groups.iter().map(|g| g.to_string()).collect::<Vec<_>>(), ["1", "0"]);
        assert_eq!(d[0].flags, DEFAULT_FLAGS | SD_SHARE_LLC);
        assert_eq!(d[1].span.to_string(), "0-3");
        assert_eq!(d[1].groups.iter().map(|g| g.to_string()).collect::<Vec<_>>(), ["0-1", "2-3"]);
        assert_eq!(d[1].flags, DEFAULT_FLAGS);
        assert_eq!(sds.sd_llc_id, [0, 0, 2, 2]);
        assert_eq!(sds.sd_llc_size, [2, 2, 2, 2]);
        assert_eq!(sds.sd_numa, [None, None, None, None]);
    }

    #[test]
    fn one_llc_per_node_drops_mc_or_pkg() {
        // An Intel-like 2S part: the LLC is the whole socket, so PKG equals MC and goes.
        let topo = Topology::new(&TopologySpec::new(2, 1, 4, 4, 2)).unwrap();
        let sds = build_sched_domains(&topo);
        assert_eq!(names(&sds, 0), ["SMT", "MC", "NUMA"]);
        // Transferred down from the degenerate PKG (MC had it already).
        assert_ne!(sds.domains(0)[1].flags & SD_PREFER_SIBLING, 0);
    }

    #[test]
    fn nps4_uses_node_and_numa_levels() {
        let topo = Topology::new(&TopologySpec::new(2, 4, 64, 8, 2)).unwrap();
        let sds = build_sched_domains(&topo);
        // No PKG with NUMA in the package: NODE, then NUMA at 12 (socket) and 32 (all).
        assert_eq!(names(&sds, 8), ["SMT", "MC", "NODE", "NUMA", "NUMA"]);
        let d = sds.domains(8);
        assert_eq!(d[2].span.to_string(), "0-15,128-143");
        assert_eq!(d[2].cache_nice_tries, 1);
        assert_ne!(d[2].flags & SD_PREFER_SIBLING, 0);
        assert_eq!(d[3].span.to_string(), "0-63,128-191");
        assert_eq!(d[3].groups.len(), 4);
        assert_eq!(d[4].groups.len(), 2);
        assert_eq!(d[4].groups[0].to_string(), "0-63,128-191");
        assert_eq!(sds.sd_numa[8], Some(3));
    }

    /// The place test of a span answers as the mask does for every CPU, on machines whose
    /// spans are blocks of places and on one whose NODE spans are not (three LLCs a node, so
    /// a node's LLC ids are no aligned block), SMT siblings adjacent or not; on the EPYC
    /// preset every domain has the place test.
    #[test]
    fn span_place_test_matches_the_span() {
        let mut kvm = TopologySpec::new(2, 2, 8, 4, 2);
        kvm.smt_siblings_adjacent = true;
        let mut topos: Vec<Topology> = [
            TopologySpec::new(2, 4, 48, 4, 2),
            TopologySpec::new(2, 4, 64, 8, 2),
            TopologySpec::new(3, 1, 8, 4, 2),
            TopologySpec::new(2, 1, 4, 4, 2),
            TopologySpec::new(4, 1, 16, 4, 2),
            TopologySpec::new(1, 1, 3, 3, 1),
            kvm,
        ]
        .iter()
        .map(|s| Topology::new(s).unwrap())
        .collect();
        topos.push(preset("smp-4").unwrap().topo);
        topos.push(preset("epyc-7763-2s").unwrap().topo);
        let mut fallbacks = 0;
        for topo in &topos {
            let sds = build_sched_domains(topo);
            let places = topo.places();
            for cpu in 0..topo.nr_cpus {
                for sd in sds.domains(cpu) {
                    fallbacks += usize::from(sd.span_places.is_none());
                    for c in 0..topo.nr_cpus {
                        let x = places[c as usize] ^ places[cpu as usize];
                        assert_eq!(sd.span_test_apart(c, x), sd.span.test(c), "{} cpu {cpu} c {c}", sd.name);
                    }
                }
            }
        }
        // The three-LLC nodes are no blocks of places: the mask answers there.
        assert!(fallbacks > 0);
        let epyc = topos.last().unwrap();
        let sds = build_sched_domains(epyc);
        assert!((0..epyc.nr_cpus).all(|c| sds.domains(c).iter().all(|sd| sd.span_places.is_some())));
    }

    #[test]
    fn single_cpu_machine_has_no_domains() {
        let topo = Topology::new(&TopologySpec::new(1, 1, 1, 1, 1)).unwrap();
        let sds = build_sched_domains(&topo);
        assert!(sds.domains(0).is_empty());
        assert_eq!((sds.sd_llc_id[0], sds.sd_llc_size[0]), (0, 1));
    }

    #[test]
    fn jiffies_seed_balance_state() {
        let m = preset("smp-4").unwrap();
        let sds = build_sched_domains_at(&m.topo, 1234);
        let sd = &sds.domains(0)[0];
        assert_eq!((sd.last_balance, sd.last_decay_max_lb_cost), (1234, 1234));
        assert_eq!((sd.nr_balance_failed, sd.max_newidle_lb_cost), (0, 0));
    }

    #[test]
    fn spans_and_groups_are_shared_not_copied_per_cpu() {
        let m = preset("epyc-7763-2s").unwrap();
        let sds = build_sched_domains(&m.topo);
        // CPUs 8 and 9 share an LLC (MC level 1) and a package (level 2): the same masks.
        for level in 1..=2 {
            let (a, b) = (&sds.domains(8)[level], &sds.domains(9)[level]);
            assert!(SharedMask::ptr_eq(&a.span, &b.span), "level {level} span copied");
            for g in a.groups.iter() {
                assert!(b.groups.iter().any(|h| SharedMask::ptr_eq(g, h)), "level {level} group {g} copied");
            }
        }
        // The NUMA domain of every CPU of a node lists the same groups: one list for them all.
        let (a, b) = (&sds.domains(8)[3], &sds.domains(9)[3]);
        assert!(std::sync::Arc::ptr_eq(&a.groups, &b.groups), "NUMA group list copied");
        assert!(std::sync::Arc::ptr_eq(&a.group_balance_cpu, &b.group_balance_cpu));
        // At most one allocation per distinct mask across the whole machine.
        let mut all: Vec<&SharedMask> = (0..256)
            .flat_map(|c| sds.domains(c).iter().flat_map(|d| std::iter::once(&d.span).chain(d.groups.iter())))
            .collect();
        all.sort_unstable_by_key(|m| SharedMask::as_ptr(m));
        all.dedup_by(|a, b| SharedMask::ptr_eq(a, b));
        let mut distinct: Vec<String> = all.iter().map(|m| m.to_string()).collect();
        distinct.sort_unstable();
        let n = distinct.len();
        distinct.dedup();
        assert_eq!(distinct.len(), n, "an equal mask is stored twice");
    }

    proptest::proptest! {
        /// The group builders' skipping walk visits what `for_each_cpu_wrap()` with a
        /// `covered` test visits, in the same order, while `covered` grows along the walk.
        #[test]
        fn wrap_walk_visits_what_the_plain_loop_does(
            nr in 1u32..300,
            span_cpus in proptest::collection::vec(0u32..300, 0..40),
            start in 0u32..300,
            grow in proptest::collection::vec(proptest::collection::vec(0u32..300, 0..6), 0..40),
        ) {
            let mut span = CpuMask::new(nr);
            for c in &span_cpus {
                span.set(c % nr);
            }
            let start = start % nr;
            // After the k-th visit, the CPUs of grow[k] (and the visited CPU) become covered.
            let cover = |covered: &mut CpuMask, k: usize, i: u32| {
                covered.set(i);
                for c in grow.get(k).into_iter().flatten() {
                    covered.set(c % nr);
                }
            };
            let mut plain = Vec::new();
            let mut covered = CpuMask::new(nr);
            for i in span.iter_wrap(start) {
                if covered.test(i) {
                    continue;
                }
                cover(&mut covered, plain.len(), i);
                plain.push(i);
            }
            let mut walked = Vec::new();
            let mut covered = CpuMask::new(nr);
            let mut walk = WrapWalk::new(start);
            while let Some(i) = walk.next(&span, &covered) {
                cover(&mut covered, walked.len(), i);
                walked.push(i);
            }
            proptest::prop_assert_eq!(walked, plain);
        }
    }
}
