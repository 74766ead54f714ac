//! Machine topology: which CPU is which thread of which core, LLC, NUMA node and socket.
//!
//! Only x86-style machines are described: every socket has the same number of cores, cores
//! are grouped into LLCs of consecutive cores, and NUMA nodes split a socket's cores evenly
//! (AMD "NPS"). CPU ids follow the Linux x86 enumeration on these machines: first the first
//! hardware thread of every core in socket order, then the second threads in the same order.
//! So on a 2x64-core SMT-2 machine CPU `n`'s sibling is `n + 128`. A KVM guest enumerates its
//! vCPUs in APIC-id order instead, threads of a core consecutive (`smt_siblings_adjacent`).
//!
//! Architecture invariant: hardware facts only; the kernel's view of them (sched domains)
//! is built in `kernel::sched::topology`.

use std::fmt;

use super::cpumask::CpuMask;

/// The kernel's `LOCAL_DISTANCE`: SLIT distance of a node to itself.
pub const LOCAL_DISTANCE: u32 = 10;
/// The kernel's `RECLAIM_DISTANCE` default for `node_reclaim_distance`.
pub const RECLAIM_DISTANCE: u32 = 30;
/// SLIT values must stay below this (`1 << DISTANCE_BITS` in the kernel).
pub const NR_DISTANCE_VALUES: u32 = 256;
use crate::limits::MAX_CPUS;

/// Where one CPU sits. `llc` and `core` ids are global (unique across the machine);
/// `node` is the global NUMA node id; `thread` is the SMT thread index within the core.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CpuTopo {
    pub socket: u32,
    pub node: u32,
    pub llc: u32,
    pub core: u32,
    pub thread: u32,
}

/// How far apart two CPUs are, nearest first. Indexes `HwCosts::line`.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Distance {
    /// The same CPU.
    Local,
    /// SMT siblings: the same core.
    Smt,
    /// Different cores sharing the last-level cache.
    Llc,
    /// The same socket, different LLCs.
    Socket,
    /// Different sockets.
    Remote,
}

impl Distance {
    /// The distance between two different CPUs whose packed places (see
    /// [`Topology::places`]) XOR to `x`. Grows with `x`: the farthest of several CPUs from one
    /// is the one whose place XORs highest with its place.
    #[inline]
    pub fn apart(x: u64) -> Distance {
        // By the highest differing bit: none (the same core), in the core bits 0-31, the LLC
        // bits 32-47 or the socket bits 48-63. One table load, no branches.
        const BY_LEADING_ZEROS: [Distance; 65] = {
            let mut t = [Distance::Remote; 65];
            let mut lz = 16;
            while lz < 65 {
                t[lz] = if lz == 64 {
                    Distance::Smt
                } else if lz >= 32 {
                    Distance::Llc
                } else {
                    Distance::Socket
                };
                lz += 1;
            }
            t
        };
        BY_LEADING_ZEROS[x.leading_zeros() as usize]
    }
}

/// The counts that define an x86 machine's shape, plus its SLIT.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TopologySpec {
    pub sockets: u32,
    /// NUMA nodes per socket (AMD NPS1/2/4); must divide `cores_per_socket`.
    pub nodes_per_socket: u32,
    pub cores_per_socket: u32,
    /// Cores sharing one last-level cache (a Zen CCX); must divide the cores of a node.
    pub cores_per_llc: u32,
    pub threads_per_core: u32,
    /// SLIT distance between two nodes of the same socket (only used when
    /// `nodes_per_socket > 1`).
    pub node_distance_same_socket: u32,
    /// SLIT distance between nodes of different sockets.
    pub node_distance_remote: u32,
    /// The arch's `node_reclaim_distance`: NUMA domains farther than this lose
    /// SD_BALANCE_EXEC/FORK and SD_WAKE_AFFINE. 30 by default; 32 on AMD Zen.
    pub node_reclaim_distance: u32,
    /// SMT siblings get consecutive CPU ids (`2k`, `2k+1`), as a QEMU/KVM guest enumerates its
    /// vCPUs in APIC-id order; off: the bare-metal x86 order (all first threads, then all
    /// second threads).
    pub smt_siblings_adjacent: bool,
}

impl TopologySpec {
    /// A spec with the default SLIT (12 within a socket, 32 across) and reclaim distance.
    pub fn new(
        sockets: u32,
        nodes_per_socket: u32,
        cores_per_socket: u32,
        cores_per_llc: u32,
        threads_per_core: u32,
    ) -> TopologySpec {
        TopologySpec {
            sockets,
            nodes_per_socket,
            cores_per_socket,
            cores_per_llc,
            threads_per_core,
            node_distance_same_socket: 12,
            node_distance_remote: 32,
            node_reclaim_distance: RECLAIM_DISTANCE,
            smt_siblings_adjacent: false,
        }
    }
}

/// A rejected [`TopologySpec`]: which field is wrong and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpecError {
    /// The `TopologySpec` field (same as the TOML key) the problem is reported against.
    pub field: &'static str,
    pub message: String,
}

impl fmt::Display for SpecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.field, self.message)
    }
}

/// The machine's CPUs and their groupings. Immutable once built.
#[derive(Clone, Debug)]
pub struct Topology {
    pub nr_cpus: u32,
    /// Indexed by CPU id.
    pub cpus: Vec<CpuTopo>,
    /// The spec this was built from.
    pub spec: TopologySpec,
    /// The CPUs of each core in ascending order, `threads_per_core` per core, indexed by
    /// `core * threads_per_core`: an SMT core's siblings without an N-bit mask per core (on
    /// x86 numbering siblings are `nr_cpus / 2` apart, so such masks grow as CPUs^2).
    siblings: Vec<u32>,
    /// Indexed by global LLC id.
    llc_masks: Vec<CpuMask>,
    /// Indexed by node id (`cpumask_of_node()`).
    node_masks: Vec<CpuMask>,
    /// Indexed by socket id.
    socket_masks: Vec<CpuMask>,
    /// `slit[a][b]` = `node_distance(a, b)`.
    slit: Vec<Vec<u32>>,
    /// Per CPU, its socket, LLC and core packed into one word for [`Topology::distance`]
    /// (socket in bits 48-63, LLC in 32-47, core in 0-31): 8 bytes a CPU to read instead of
    /// two 20-byte [`CpuTopo`]s on every modelled cache-line transfer.
    place: Vec<u64>,
}

/// The [`Topology::distance`] key of a CPU: equal cores give equal keys, equal LLCs equal
/// bits 32-63, equal sockets equal bits 48-63 (ids are global, and an LLC lies in one socket).
fn place_of(t: &CpuTopo) -> u64 {
    (u64::from(t.socket) << 48) | (u64::from(t.llc) << 32) | u64::from(t.core)
}

impl Topology {
    /// Builds the CPU enumeration and masks for `spec`, rejecting shapes the x86 model
    /// cannot express.
    pub fn new(spec: &TopologySpec) -> Result<Topology, SpecError> {
        let err = |field: &'static str, message: String| Err(SpecError { field, message });
        for (field, value) in [
            ("sockets", spec.sockets),
            ("nodes_per_socket", spec.nodes_per_socket),
            ("cores_per_socket", spec.cores_per_socket),
            ("cores_per_llc", spec.cores_per_llc),
            ("threads_per_core", spec.threads_per_core),
        ] {
            if value == 0 {
                return err(field, "must be at least 1".into());
            }
        }
        if spec.cores_per_socket % spec.nodes_per_socket != 0 {
            return err(
                "nodes_per_socket",
                format!(
                    "{} nodes do not split {} cores per socket evenly",
                    spec.nodes_per_socket, spec.cores_per_socket
                ),
            );
        }
        let cores_per_node = spec.cores_per_socket / spec.nodes_per_socket;
        if cores_per_node % spec.cores_per_llc != 0 {
            return err(
                "cores_per_llc",
                format!(
                    "LLCs of {} cores do not tile a NUMA node of {} cores (an LLC may not span nodes)",
                    spec.cores_per_llc, cores_per_node
                ),
            );
        }
        // In u128: three u32 factors can exceed u64 (a fuzzed machine file did).
        let nr_cpus = u128::from(spec.sockets) * u128::from(spec.cores_per_socket) * u128::from(spec.threads_per_core);
        if nr_cpus > u128::from(MAX_CPUS) {
            return err("sockets", format!("machine would have {nr_cpus} CPUs; at most {MAX_CPUS} are supported"));
        }
        for (field, value) in [
            ("node_distance_same_socket", spec.node_distance_same_socket),
            ("node_distance_remote", spec.node_distance_remote),
        ] {
            if value <= LOCAL_DISTANCE || value >= NR_DISTANCE_VALUES {
                return err(
                    field,
                    format!("SLIT distance {value} must be above {LOCAL_DISTANCE} and below {NR_DISTANCE_VALUES}"),
                );
            }
        }

        let nr_cpus = nr_cpus as u32;
        let nr_cores = spec.sockets * spec.cores_per_socket;
        let nr_nodes = spec.sockets * spec.nodes_per_socket;
        let nr_llcs = nr_cores / spec.cores_per_llc;

        let mut cpus = Vec::with_capacity(nr_cpus as usize);
        let tpc = spec.threads_per_core as usize;
        let mut siblings = vec![0; nr_cpus as usize];
        let mut llc_masks = vec![CpuMask::new(nr_cpus); nr_llcs as usize];
        let mut node_masks = vec![CpuMask::new(nr_cpus); nr_nodes as usize];
        let mut socket_masks = vec![CpuMask::new(nr_cpus); spec.sockets as usize];
        for cpu in 0..nr_cpus {
            let (thread, core) = if spec.smt_siblings_adjacent {
                (cpu % spec.threads_per_core, cpu / spec.threads_per_core)
            } else {
                (cpu / nr_cores, cpu % nr_cores)
            };
            let socket = core / spec.cores_per_socket;
            let node = socket * spec.nodes_per_socket + (core % spec.cores_per_socket) / cores_per_node;
            let llc = core / spec.cores_per_llc;
            cpus.push(CpuTopo { socket, node, llc, core, thread });
            siblings[core as usize * tpc + thread as usize] = cpu;
            llc_masks[llc as usize].set(cpu);
            node_masks[node as usize].set(cpu);
            socket_masks[socket as usize].set(cpu);
        }

        let slit = (0..nr_nodes)
            .map(|a| {
                (0..nr_nodes)
                    .map(|b| {
                        if a == b {
                            LOCAL_DISTANCE
                        } else if a / spec.nodes_per_socket == b / spec.nodes_per_socket {
                            spec.node_distance_same_socket
                        } else {
                            spec.node_distance_remote
                        }
                    })
                    .collect()
            })
            .collect();

        let place = cpus.iter().map(place_of).collect();
        Ok(Topology { nr_cpus, cpus, spec: spec.clone(), siblings, llc_masks, node_masks, socket_masks, slit, place })
    }

    /// How far apart CPUs `a` and `b` are.
    #[inline]
    pub fn distance(&self, a: u32, b: u32) -> Distance {
        if a == b {
            Distance::Local
        } else {
            Distance::apart(self.place[a as usize] ^ self.place[b as usize])
        }
    }

    /// Every CPU's packed place, by CPU id: for two different CPUs `a` and `b`,
    /// `distance(a, b)` is `Distance::apart(places()[a] ^ places()[b])`, so a caller comparing
    /// many CPUs against one looks that one up once.
    #[inline]
    pub fn places(&self) -> &[u64] {
        &self.place
    }

    /// The CPUs of `cpu`'s core, itself included (`cpu_smt_mask()`), built on each call.
    pub fn smt_mask(&self, cpu: u32) -> CpuMask {
        let mut mask = CpuMask::new(self.nr_cpus);
        for &s in self.smt_siblings(cpu) {
            mask.set(s);
        }
        mask
    }

    /// The CPUs of `cpu`'s core in ascending order, itself included (`for_each_cpu(sibling,
    /// cpu_smt_mask(cpu))` without the mask).
    #[inline]
    pub fn smt_siblings(&self, cpu: u32) -> &[u32] {
        let tpc = self.spec.threads_per_core as usize;
        let core = self.cpus[cpu as usize].core as usize;
        &self.siblings[core * tpc..(core + 1) * tpc]
    }

    /// The CPUs sharing `cpu`'s last-level cache (`cpu_llc_shared_mask()`, which x86 also
    /// returns as `cpu_coregroup_mask()`).
    pub fn llc_mask(&self, cpu: u32) -> &CpuMask {
        &self.llc_masks[self.cpus[cpu as usize].llc as usize]
    }

    /// The CPUs of `cpu`'s NUMA node (`cpumask_of_node(cpu_to_node(cpu))`, which is also
    /// the kernel's `cpu_cpu_mask()`).
    pub fn node_mask(&self, cpu: u32) -> &CpuMask {
        self.cpumask_of_node(self.cpu_to_node(cpu))
    }

    /// The CPUs of `cpu`'s socket (`topology_core_cpumask()`).
    pub fn socket_mask(&self, cpu: u32) -> &CpuMask {
        &self.socket_masks[self.cpus[cpu as usize].socket as usize]
    }

    /// The CPUs of NUMA node `node`.
    pub fn cpumask_of_node(&self, node: u32) -> &CpuMask {
        &self.node_masks[node as usize]
    }

    /// The NUMA node of `cpu`.
    pub fn cpu_to_node(&self, cpu: u32) -> u32 {
        self.cpus[cpu as usize].node
    }

    /// Whether the two CPUs share a last-level cache. The hardware fact; the kernel's
    /// `cpus_share_cache()` compares `sd_llc_id`, which agrees with this on x86.
    pub fn cpus_share_cache(&self, a: u32, b: u32) -> bool {
        self.cpus[a as usize].llc == self.cpus[b as usize].llc
    }

    /// SLIT distance between two nodes (`node_distance()`): 10 to itself.
    pub fn node_distance(&self, a_node: u32, b_node: u32) -> u32 {
        self.slit[a_node as usize][b_node as usize]
    }

    /// The arch's `node_reclaim_distance`.
    pub fn node_reclaim_distance(&self) -> u32 {
        self.spec.node_reclaim_distance
    }

    /// Number of NUMA nodes.
    pub fn nr_nodes(&self) -> u32 {
        self.node_masks.len() as u32
    }

    /// Number of sockets.
    pub fn nr_sockets(&self) -> u32 {
        self.socket_masks.len() as u32
    }

    /// Number of last-level caches.
    pub fn nr_llcs(&self) -> u32 {
        self.llc_masks.len() as u32
    }

    /// Number of physical cores.
    pub fn nr_cores(&self) -> u32 {
        self.siblings.len() as u32 / self.spec.threads_per_core
    }

    /// All CPUs (the kernel's `cpu_online_mask`; every CPU is online).
    pub fn all_cpus(&self) -> CpuMask {
        CpuMask::full(self.nr_cpus)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn epyc() -> Topology {
        Topology::new(&TopologySpec::new(2, 1, 64, 8, 2)).unwrap()
    }

    #[test]
    fn x86_numbering_on_2s_epyc() {
        let t = epyc();
        assert_eq!(t.nr_cpus, 256);
        assert_eq!(t.cpus[8], CpuTopo { socket: 0, node: 0, llc: 1, core: 8, thread: 0 });
        assert_eq!(t.cpus[136], CpuTopo { socket: 0, node: 0, llc: 1, core: 8, thread: 1 });
        assert_eq!(t.cpus[72], CpuTopo { socket: 1, node: 1, llc: 9, core: 72, thread: 0 });
        assert_eq!(t.smt_mask(8).to_string(), "8,136");
        assert_eq!(t.smt_siblings(136), &[8, 136]);
        assert_eq!(t.llc_mask(8).to_string(), "8-15,136-143");
        assert_eq!(t.node_mask(8).to_string(), "0-63,128-191");
        assert_eq!(t.socket_mask(200).to_string(), "64-127,192-255");
        assert_eq!((t.nr_sockets(), t.nr_nodes(), t.nr_llcs(), t.nr_cores()), (2, 2, 16, 128));
    }

    /// A machine file whose three counts multiply past `u64` gets the CPU-count error, not an
    /// arithmetic overflow (found by tests/fuzz_parsers).
    #[test]
    fn counts_whose_product_overflows_u64_are_rejected_cleanly() {
        let spec = TopologySpec::new(u32::MAX, 1, u32::MAX, u32::MAX, u32::MAX);
        let e = Topology::new(&spec).unwrap_err();
        assert_eq!(e.field, "sockets");
        assert!(e.message.contains("at most 8192 are supported"), "{}", e.message);
    }

    #[test]
    fn kvm_guest_numbering_puts_siblings_next_to_each_other() {
        let mut spec = TopologySpec::new(1, 1, 16, 16, 2);
        spec.smt_siblings_adjacent = true;
        let t = Topology::new(&spec).unwrap();
        assert_eq!(t.smt_mask(0).to_string(), "0-1");
        assert_eq!(t.smt_mask(31).to_string(), "30-31");
        assert_eq!(t.smt_siblings(30), &[30, 31]);
        assert_eq!(t.cpus[5], CpuTopo { socket: 0, node: 0, llc: 0, core: 2, thread: 1 });
        assert_eq!(t.distance(4, 5), Distance::Smt);
        assert_eq!(t.distance(4, 20), Distance::Llc);
    }

    #[test]
    fn distances() {
        let t = epyc();
        assert_eq!(t.distance(8, 8), Distance::Local);
        assert_eq!(t.distance(8, 136), Distance::Smt);
        assert_eq!(t.distance(8, 15), Distance::Llc);
        assert_eq!(t.distance(8, 143), Distance::Llc);
        assert_eq!(t.distance(8, 16), Distance::Socket);
        assert_eq!(t.distance(8, 72), Distance::Remote);
        assert!(t.cpus_share_cache(8, 143));
        assert!(!t.cpus_share_cache(8, 16));
        assert_eq!(t.node_distance(0, 0), 10);
        assert_eq!(t.node_distance(0, 1), 32);
    }

    /// The packed distance agrees with the CPUs' core, LLC and socket for every pair.
    #[test]
    fn distance_by_packed_place_matches_the_fields() {
        let mut kvm = TopologySpec::new(2, 2, 8, 4, 2);
        kvm.smt_siblings_adjacent = true;
        for spec in [
            TopologySpec::new(2, 1, 64, 8, 2),
            TopologySpec::new(4, 4, 16, 2, 2),
            TopologySpec::new(1, 1, 4, 4, 1),
            kvm,
        ] {
            let t = Topology::new(&spec).unwrap();
            for a in 0..t.nr_cpus {
                for b in 0..t.nr_cpus {
                    let (ta, tb) = (&t.cpus[a as usize], &t.cpus[b as usize]);
                    let want = if a == b {
                        Distance::Local
                    } else if ta.core == tb.core {
                        Distance::Smt
                    } else if ta.llc == tb.llc {
                        Distance::Llc
                    } else if ta.socket == tb.socket {
                        Distance::Socket
                    } else {
                        Distance::Remote
                    };
                    assert_eq!(t.distance(a, b), want, "{spec:?}: CPUs {a} and {b}");
                }
            }
        }
    }

    #[test]
    fn nps4_splits_sockets() {
        let mut spec = TopologySpec::new(2, 4, 64, 8, 2);
        spec.node_distance_same_socket = 12;
        let t = Topology::new(&spec).unwrap();
        assert_eq!(t.nr_nodes(), 8);
        assert_eq!(t.cpu_to_node(16), 1);
        assert_eq!(t.cpu_to_node(64), 4);
        assert_eq!(t.cpumask_of_node(1).to_string(), "16-31,144-159");
        assert_eq!(t.node_distance(0, 3), 12);
        assert_eq!(t.node_distance(0, 4), 32);
    }

    #[test]
    fn bad_shapes_name_the_field() {
        let e = Topology::new(&TopologySpec::new(1, 3, 4, 2, 1)).unwrap_err();
        assert_eq!(e.field, "nodes_per_socket");
        let e = Topology::new(&TopologySpec::new(1, 1, 6, 4, 1)).unwrap_err();
        assert_eq!(e.field, "cores_per_llc");
        let e = Topology::new(&TopologySpec::new(1, 1, 4, 2, 0)).unwrap_err();
        assert_eq!(e.field, "threads_per_core");
        let mut spec = TopologySpec::new(2, 1, 4, 2, 1);
        spec.node_distance_remote = 10;
        assert_eq!(Topology::new(&spec).unwrap_err().field, "node_distance_remote");
    }
}
