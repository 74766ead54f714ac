//! Simulated hardware: machine topology, measured latencies, and the idle states a
//! cpuidle driver would advertise.
//!
//! Machines are data. Each preset is a TOML file in `src/hw/presets/` (embedded at build
//! time) and is read by the same [`machine_from_toml`] that reads user-supplied machine
//! files, so a new machine is one new file plus one line in [`PRESETS`]. Every value in a
//! preset carries a comment naming its source row in docs/workloads.md section 9.
//!
//! Architecture invariant: hardware timing and topology facts only, never kernel policy.
//! (The kernel's view of the topology, the sched domains, lives in `kernel::sched::topology`.)

pub mod cacheline;
pub mod cpumask;
pub mod kvm;
pub mod topology;

use std::fmt;

use serde::Deserialize;
use toml::Spanned;

use crate::limits::MAX_LATENCY_NS;

use self::topology::{Distance, Topology, TopologySpec, RECLAIM_DISTANCE};

/// A measured latency range: each use draws uniformly in `[lo_ns, hi_ns]` (the p10..p90 of
/// the source measurement).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LatencyNs {
    pub lo_ns: u64,
    pub hi_ns: u64,
}

impl LatencyNs {
    /// No cost at all.
    pub const ZERO: LatencyNs = LatencyNs { lo_ns: 0, hi_ns: 0 };

    /// A range; panics if `lo_ns > hi_ns`.
    pub fn new(lo_ns: u64, hi_ns: u64) -> LatencyNs {
        assert!(lo_ns <= hi_ns, "latency range [{lo_ns}, {hi_ns}] is reversed");
        LatencyNs { lo_ns, hi_ns }
    }

    /// A fixed cost.
    pub fn fixed(ns: u64) -> LatencyNs {
        LatencyNs { lo_ns: ns, hi_ns: ns }
    }

    /// Maps one raw 64-bit draw from the caller's PRNG onto `[lo_ns, hi_ns]`, uniformly
    /// (multiply-high, no floats). Deterministic: the same draw gives the same latency.
    pub fn pick(&self, raw: u64) -> u64 {
        debug_assert!(self.lo_ns <= self.hi_ns);
        let width = u128::from(self.hi_ns - self.lo_ns) + 1;
        self.lo_ns + ((u128::from(raw) * width) >> 64) as u64
    }

    /// The midpoint, for cost estimates that must not consume randomness.
    pub fn mid_ns(&self) -> u64 {
        self.lo_ns + (self.hi_ns - self.lo_ns) / 2
    }
}

impl fmt::Display for LatencyNs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.lo_ns == self.hi_ns {
            write!(f, "{} ns", self.lo_ns)
        } else {
            write!(f, "{}-{} ns", self.lo_ns, self.hi_ns)
        }
    }
}

/// How an idle state waits. `Poll` and `Mwait` are "polling" states: the idle task keeps
/// TIF_POLLING_NRFLAG set while in them, so a remote CPU can wake it by writing
/// TIF_NEED_RESCHED instead of sending an IPI. `Hlt` and `IoPort` need an interrupt.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IdleKind {
    /// `poll_idle()`: a `cpu_relax()` loop.
    Poll,
    /// MWAIT on the thread-info flags word (intel_idle, ACPI FFH).
    Mwait,
    /// HLT (`default_idle`, ACPI C1 "HALT").
    Hlt,
    /// ACPI SYSTEMIO: an I/O port read enters the state (AMD C2 "ACPI IOPORT 0x814").
    IoPort,
}

impl IdleKind {
    /// Whether TIF_POLLING_NRFLAG is set while a CPU sits in a state of this kind.
    pub fn is_polling(self) -> bool {
        matches!(self, IdleKind::Poll | IdleKind::Mwait)
    }
}

/// One cpuidle state as the driver advertises it, plus what the hardware really costs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IdleStateDesc {
    /// sysfs `name` ("POLL", "C1", ...).
    pub name: String,
    /// sysfs `desc` ("ACPI FFH MWAIT 0x0", ...).
    pub desc: String,
    pub kind: IdleKind,
    /// Exit latency as advertised by the driver table (what the governor reads), ns.
    pub exit_latency_ns: u64,
    /// Target residency as advertised, ns.
    pub target_residency_ns: u64,
    /// Measured hardware time from the wake signal to executing code (what the model
    /// charges).
    pub wake: LatencyNs,
    /// The wake when the signal is the CPU's own local timer, if it differs from `wake`: a
    /// KVM guest's halted vCPU has no armed hardware timer of its own; the host moves the
    /// guest's TSC deadline to a host hrtimer while the vCPU blocks
    /// (`kvm_lapic_switch_to_sw_timer()`, arch/x86/kvm/lapic.c @ v6.10) and wakes the vCPU
    /// thread from that hrtimer's expiry (`apic_timer_fn()` -> `kvm_vcpu_kick()`), a longer
    /// path than an IPI's. `None`: a timer wakes the state as any interrupt does.
    pub timer_wake: Option<LatencyNs>,
    /// What a long halt adds to the wake of this state (`halt_wake_extra_ns`), by how long the
    /// CPU had been halted when the interrupt came; `None`: nothing (every preset).
    pub halt_extra: Option<HaltCurve>,
    /// What a long halt adds to the guest's own path after the wake (`halt_refill_extra_ns`):
    /// the guest's code and data refilled into caches and TLBs the host's other work evicted
    /// meanwhile. The model has no cache state for it, so it is charged with the wake, before
    /// the first step; `None`: nothing (every preset).
    pub halt_refill: Option<HaltCurve>,
    /// Disabled through sysfs `disable` (the governor never picks it).
    pub disabled: bool,
}

impl IdleStateDesc {
    /// The wake latency when an interrupt reaches a CPU in this state: `timer_wake` for the
    /// CPU's own local timer where the file has one, `wake` otherwise.
    #[inline]
    pub fn wake_by(&self, local_timer: bool) -> LatencyNs {
        match self.timer_wake {
            Some(t) if local_timer => t,
            _ => self.wake,
        }
    }
}

/// A KVM guest's halted-vCPU wake that grows with the halt (`halt_wake_extra_ns` of an idle
/// state): points `(halt_ns, extra_ns)`, halt lengths strictly increasing, the extra added to
/// the state's wake (`wake_ns` or `timer_wake_ns`) when an interrupt reaches a CPU that has
/// been halted `halt_ns`. Between two points the extra is interpolated linearly (integers);
/// before the first point it is the first point's, after the last the last's.
///
/// What it stands for lies on the host, where the guest cannot see it: after a longer block
/// the host's own CPU has gone to a deeper C-state (its exit is paid first), the vCPU thread's
/// wakeup and VM entry run cold, and KVM's halt-polling window
/// (`kvm_vcpu_halt()`, virt/kvm/kvm_main.c @ v6.10) has long expired. From inside the guest
/// these are one figure: the time from the interrupt's due instant to the guest running, by
/// halt length; the curve is that figure, measured (docs/costs.md, "Calibration").
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HaltCurve {
    /// `(halt_ns, extra_ns)`, at least one point, `halt_ns` strictly increasing.
    pub points: Vec<[u64; 2]>,
}

impl HaltCurve {
    /// The extra wake (ns) after a halt of `halted_ns`: integer linear interpolation between
    /// the two points around it, flat outside the curve.
    pub fn extra_ns(&self, halted_ns: u64) -> u64 {
        let p = &self.points;
        let Some(first) = p.first() else { return 0 };
        if halted_ns <= first[0] {
            return first[1];
        }
        for w in p.windows(2) {
            let ([h0, e0], [h1, e1]) = (w[0], w[1]);
            if halted_ns <= h1 {
                // h0 < halted_ns <= h1, h0 < h1: the fraction (halted_ns - h0) / (h1 - h0) of
                // the step e0 -> e1, rounded toward e0.
                let (num, den) = (u128::from(halted_ns - h0), u128::from(h1 - h0));
                return if e1 >= e0 {
                    e0 + (u128::from(e1 - e0) * num / den) as u64
                } else {
                    e0 - (u128::from(e0 - e1) * num / den) as u64
                };
            }
        }
        p[p.len() - 1][1]
    }
}

/// Hardware costs the model charges.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HwCosts {
    /// Cache-line transfer, indexed by `Distance as usize` (`Local` costs nothing).
    pub line: [LatencyNs; 5],
    /// Sender-side cost of one IPI (x2APIC ICR write), ns.
    pub ipi_send_ns: u64,
    /// From the send to the target starting interrupt entry, target awake.
    pub ipi_delivery: LatencyNs,
    /// Interrupt entry overhead on the target, ns.
    pub irq_entry_ns: u64,
    /// Interrupt exit overhead on the target, ns.
    pub irq_exit_ns: u64,
    /// A KVM guest's local timer on a vCPU that is in guest mode (running, or polling) at the
    /// timer's expiry: how much later than the expiry its interrupt is taken, before the
    /// entry's `irq_entry_ns` (`timer_late_running_ns`, measured by the calibration; `None`,
    /// every preset and bare metal: at the expiry). The guest's TSC-deadline timer is
    /// emulated by KVM (arch/x86/kvm/lapic.c @ v6.10: `start_sw_tscdeadline()` arms a host
    /// hrtimer, or the VMX preemption timer, `kvm_lapic_expired_hv_timer()`); its expiry
    /// makes the timer interrupt pending (`apic_timer_expired()`) and `vcpu_run()`
    /// (arch/x86/kvm/x86.c) injects it before the vCPU's next VM entry
    /// (`kvm_inject_pending_timer_irqs()`), so the guest sees the host's timer and exit path
    /// as lateness.
    /// The halted vCPU's case is the idle state's `timer_wake_ns`.
    pub timer_late_running: Option<LatencyNs>,
}

impl HwCosts {
    /// The cache-line transfer cost for a distance class.
    pub fn line_for(&self, distance: Distance) -> LatencyNs {
        self.line[distance as usize]
    }
}

/// A whole simulated machine.
#[derive(Clone, Debug)]
pub struct Machine {
    pub name: String,
    pub description: String,
    pub topo: Topology,
    pub costs: HwCosts,
    /// Index 0 is always the POLL state, as on x86 cpuidle drivers.
    pub idle_states: Vec<IdleStateDesc>,
    /// Default CONFIG_HZ for the preset (250 unless the preset says otherwise).
    pub hz: u32,
    /// The architecture's idle task advertises polling with TIF_POLLING_NRFLAG (x86). On
    /// arm64 there is no such flag: every remote wakeup of an idle CPU needs an IPI.
    pub polling_idle: bool,
    /// Whether the search of `select_idle_sibling()` past the target and previous CPUs
    /// (`recent_used_cpu`, `select_idle_cpu()`) takes an idle CPU sitting in its idle loop, as
    /// every upstream kernel does. `false` is a guest kernel measured to take an idle vCPU
    /// there only while it handles an interrupt (machine file `idle_search_in_idle_loop =
    /// false`; docs/validate-guest.md).
    pub idle_search_in_idle_loop: bool,
    /// The cpuidle governor the machine's kernel uses.
    pub governor: Governor,
    /// The background profile this machine runs by default (a name `run` resolves), and the
    /// preemption model its published kernel most likely ran. Both are what the preset's
    /// sources say about the real machine; the kernel model interprets them.
    pub background: String,
    pub preempt: String,
    /// The haltpoll governor's module parameters (read only when `governor` is haltpoll).
    pub haltpoll: HaltpollParams,
    /// The core clock the machine's software paths run at (MHz): the software path costs are
    /// scaled to it from the clocks they were measured at (`linux::cost`). A file without
    /// `clock_mhz` gets [`DEFAULT_CLOCK_MHZ`].
    pub clock_mhz: u32,
    /// Software path costs measured on this machine (`[path_costs]`), overriding the table's.
    pub path_costs: Vec<MeasuredPathCost>,
    /// A KVM guest's host halt-polling (`kvm::HostHaltPoll`): `None` on bare metal, and on a
    /// guest whose host does not poll (every preset; set by [`Machine::set_guest_idle`]).
    pub host_halt_poll: Option<kvm::HostHaltPoll>,
}

/// The clock of a machine file without `clock_mhz`: the software cost table's reference clock
/// (the kernel model's `cost::REFERENCE_MHZ`, equal by a test there), so such a file runs the
/// table's values unscaled, as every machine did before machines had a clock.
pub const DEFAULT_CLOCK_MHZ: u32 = 4000;

/// The clocks a machine file may give (MHz), for `clock_mhz` and a measured cost's clock.
pub const CLOCK_MHZ_RANGE: std::ops::RangeInclusive<u32> = 100..=10_000;

/// One `[path_costs.NAME]` entry of a machine file: a software path cost measured on that
/// machine. `spread_ns`, `samples` and `method` are kept for the reader; the model uses `ns`
/// and `clock_mhz` only. The name is checked against the kernel model's cost table where a
/// machine file is read for a run (`run::machine`); the hardware model does not know it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MeasuredPathCost {
    /// The `PathCosts` field it replaces.
    pub name: String,
    /// The line of its `[path_costs.NAME]` header in the machine file, for errors.
    pub line: usize,
    /// The measured value (ns), 1 ns to one second.
    pub ns: u64,
    /// The clock it was measured at (MHz); it is scaled from there to the machine's clock.
    pub clock_mhz: u32,
    pub spread_ns: Option<[u64; 2]>,
    pub samples: Option<u64>,
    pub method: Option<String>,
}

/// The haltpoll governor's module parameters, as a guest is booted with them
/// (`haltpoll.guest_halt_poll_ns=0` on the kernel command line, or
/// `/sys/module/haltpoll/parameters/*`). The defaults are those of
/// drivers/cpuidle/governors/haltpoll.c (v6.10). `unsigned int` in the kernel, hence `u32`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct HaltpollParams {
    /// The largest per-CPU poll window, ns (0: never poll, always halt).
    pub guest_halt_poll_ns: u32,
    /// Divisor applied to the window after a halt longer than `guest_halt_poll_ns` (0: reset).
    pub guest_halt_poll_shrink: u32,
    /// Factor applied to the window after a halt it would have covered.
    pub guest_halt_poll_grow: u32,
    /// The first non-zero window, ns.
    pub guest_halt_poll_grow_start: u32,
    /// Whether long halts shrink the window at all.
    pub guest_halt_poll_allow_shrink: bool,
}

impl Default for HaltpollParams {
    fn default() -> Self {
        HaltpollParams {
            guest_halt_poll_ns: 200_000,
            guest_halt_poll_shrink: 2,
            guest_halt_poll_grow: 2,
            guest_halt_poll_grow_start: 50_000,
            guest_halt_poll_allow_shrink: true,
        }
    }
}

/// A cpuidle governor.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Governor {
    #[default]
    Menu,
    Haltpoll,
}

impl Machine {
    /// Cache-line transfer cost between CPUs `a` and `b`.
    pub fn line_cost(&self, a: u32, b: u32) -> LatencyNs {
        self.costs.line_for(self.topo.distance(a, b))
    }

    /// One line, e.g. "epyc-7763-2s: 2 sockets, 2 nodes, 16 LLCs, 128 cores, 256 CPUs".
    pub fn summary(&self) -> String {
        let t = &self.topo;
        let count = |n: u32, what: &str| {
            if n == 1 {
                format!("1 {what}")
            } else {
                format!("{n} {what}s")
            }
        };
        format!(
            "{}: {}, {}, {}, {}, {}",
            self.name,
            count(t.nr_sockets(), "socket"),
            count(t.nr_nodes(), "node"),
            count(t.nr_llcs(), "LLC"),
            count(t.nr_cores(), "core"),
            count(t.nr_cpus, "CPU"),
        )
    }

    /// The index of the idle state called `name`.
    pub fn idle_state_index(&self, name: &str) -> Option<usize> {
        self.idle_states.iter().position(|s| s.name == name)
    }
}

/// The built-in machines, listed once: each name is its file `presets/NAME.toml`, and both
/// [`PRESETS`] and [`preset_names`] come from this one list.
macro_rules! presets {
    ($($name:literal),* $(,)?) => {
        /// The built-in machines: (name, TOML text).
        pub const PRESETS: &[(&str, &str)] = &[$(($name, include_str!(concat!("presets/", $name, ".toml")))),*];
        const PRESET_NAMES: &[&str] = &[$($name),*];
    };
}

presets!["epyc-7763-2s", "smp-4", "icx-vm-32", "intel-240-2s", "xeon-128-4n", "i7-4c8t", "neoverse-n1-2s"];

/// Names of the built-in machines, in [`PRESETS`] order.
pub fn preset_names() -> &'static [&'static str] {
    PRESET_NAMES
}

/// A built-in machine by name. The error lists the known names. (`run::machine` also takes a
/// machine file.)
pub fn preset(name: &str) -> Result<Machine, String> {
    match preset_text(name) {
        Some(text) => machine_from_toml(text, &format!("src/hw/presets/{name}.toml")),
        None => Err(format!(
            "unknown machine preset `{name}`; known presets: {} (or a machine file ending in .toml)",
            preset_names().join(", ")
        )),
    }
}

/// The TOML text of a built-in machine.
pub fn preset_text(name: &str) -> Option<&'static str> {
    PRESETS.iter().find(|(n, _)| *n == name).map(|(_, t)| *t)
}

// ---------------------------------------------------------------------------------------
// TOML form. Private "raw" structs mirror the file one-to-one; `machine_from_toml` checks
// them and builds the public types. Spans are kept for values that are checked beyond
// their type, so those errors can name a line too.

fn default_true() -> bool {
    true
}

fn default_background() -> String {
    "none".into()
}

fn default_preempt() -> String {
    "voluntary".into()
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawMachine {
    name: String,
    description: String,
    hz: Spanned<u32>,
    /// The architecture has TIF_POLLING_NRFLAG (x86: true; arm64: false). Default true.
    #[serde(default = "default_true")]
    polling_idle: bool,
    /// `select_idle_sibling()`'s search past the target and previous CPUs takes idle CPUs in
    /// their idle loop (default true, as upstream); false: only one handling an interrupt, a
    /// guest kernel measured so (docs/validate-guest.md).
    #[serde(default = "default_true")]
    idle_search_in_idle_loop: bool,
    /// The cpuidle governor: "menu" (default) or "haltpoll" (KVM guests with cpuidle-haltpoll).
    #[serde(default)]
    governor: Governor,
    /// Default background profile ("none" when absent).
    #[serde(default = "default_background")]
    background: String,
    /// Default preemption model ("voluntary" when absent).
    #[serde(default = "default_preempt")]
    preempt: String,
    /// The haltpoll governor's module parameters (defaults: the kernel's).
    #[serde(default)]
    haltpoll: HaltpollParams,
    /// The core clock the software paths run at (MHz; default [`DEFAULT_CLOCK_MHZ`]).
    clock_mhz: Option<Spanned<u32>>,
    /// Measured software path costs, by `PathCosts` field name.
    #[serde(default)]
    path_costs: std::collections::BTreeMap<Spanned<String>, Spanned<RawMeasuredPathCost>>,
    topology: Spanned<RawTopology>,
    #[serde(default)]
    numa: RawNuma,
    costs: RawCosts,
    #[serde(rename = "idle_state")]
    idle_states: Spanned<Vec<Spanned<RawIdleState>>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTopology {
    sockets: Spanned<u32>,
    nodes_per_socket: Spanned<u32>,
    cores_per_socket: Spanned<u32>,
    cores_per_llc: Spanned<u32>,
    threads_per_core: Spanned<u32>,
    /// SMT siblings numbered consecutively (a KVM guest's APIC-id order).
    #[serde(default)]
    smt_siblings_adjacent: bool,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawNuma {
    node_distance_same_socket: Option<Spanned<u32>>,
    node_distance_remote: Option<Spanned<u32>>,
    node_reclaim_distance: Option<Spanned<u32>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCosts {
    line_smt_ns: Spanned<Pair>,
    line_llc_ns: Spanned<Pair>,
    line_socket_ns: Spanned<Pair>,
    line_remote_ns: Spanned<Pair>,
    ipi_send_ns: Spanned<u64>,
    ipi_delivery_ns: Spanned<Pair>,
    irq_entry_ns: Spanned<u64>,
    irq_exit_ns: Spanned<u64>,
    timer_late_running_ns: Option<Spanned<Pair>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawMeasuredPathCost {
    ns: Spanned<u64>,
    clock_mhz: Spanned<u32>,
    spread_ns: Option<Spanned<Pair>>,
    samples: Option<u64>,
    method: Option<String>,
}

#[derive(Deserialize, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
enum RawKind {
    Poll,
    Mwait,
    Hlt,
    Ioport,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawIdleState {
    name: Spanned<String>,
    desc: String,
    kind: Spanned<RawKind>,
    exit_latency_ns: Spanned<u64>,
    target_residency_ns: Spanned<u64>,
    wake_ns: Spanned<Pair>,
    #[serde(default)]
    timer_wake_ns: Option<Spanned<Pair>>,
    #[serde(default)]
    halt_wake_extra_ns: Option<Spanned<Vec<Spanned<Vec<u64>>>>>,
    #[serde(default)]
    halt_refill_extra_ns: Option<Spanned<Vec<Spanned<Vec<u64>>>>>,
    #[serde(default)]
    disabled: bool,
}

/// `[lo, hi]`: exactly two numbers (serde's fixed-size arrays stop reading after two and let a
/// third element pass unnoticed).
struct Pair([u64; 2]);

impl<'de> Deserialize<'de> for Pair {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Pair, D::Error> {
        let v = Vec::<u64>::deserialize(d)?;
        <[u64; 2]>::try_from(v.as_slice())
            .map(Pair)
            .map_err(|_| serde::de::Error::invalid_length(v.len(), &"an array of 2 numbers, [lo, hi]"))
    }
}

/// The most points a `halt_wake_extra_ns` curve may have.
pub const MAX_HALT_CURVE_POINTS: usize = 64;

/// Checks an idle state's `halt_wake_extra_ns` or `halt_refill_extra_ns` (`name`):
/// 1..=[`MAX_HALT_CURVE_POINTS`] pairs `[halt_ns, extra_ns]`, halt lengths strictly increasing,
/// both within one second. An error is the byte offset to report and what was expected.
fn halt_curve(v: &Spanned<Vec<Spanned<Vec<u64>>>>, index: usize, name: &str) -> Result<HaltCurve, (usize, String)> {
    let key = format!("idle_state[{index}].{name}");
    let items = v.get_ref();
    if items.is_empty() || items.len() > MAX_HALT_CURVE_POINTS {
        return Err((
            v.span().start,
            format!("{key} has {} points: expected 1..={MAX_HALT_CURVE_POINTS} pairs [halt_ns, extra_ns]", items.len()),
        ));
    }
    let mut points: Vec<[u64; 2]> = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let off = item.span().start;
        let Ok(pair) = <[u64; 2]>::try_from(item.get_ref().as_slice()) else {
            return Err((
                off,
                format!("{key}[{i}] has {} numbers: expected a pair [halt_ns, extra_ns]", item.get_ref().len()),
            ));
        };
        if pair[0] > MAX_LATENCY_NS || pair[1] > MAX_LATENCY_NS {
            return Err((
                off,
                format!("{key}[{i}] = {pair:?}: expected both within 0..={MAX_LATENCY_NS} ns (one second)"),
            ));
        }
        if let Some(prev) = points.last() {
            if pair[0] <= prev[0] {
                return Err((
                    off,
                    format!(
                        "{key}[{i}]: halt_ns {} after {}: expected halt lengths strictly increasing",
                        pair[0], prev[0]
                    ),
                ));
            }
        }
        points.push(pair);
    }
    Ok(HaltCurve { points })
}

/// 1-based line of byte `offset` in `text`.
fn line_of(text: &str, offset: usize) -> usize {
    let end = offset.min(text.len());
    text.as_bytes()[..end].iter().filter(|&&b| b == b'\n').count() + 1
}

/// Parses a machine description. Errors read "<origin>:<line>: <what was expected>" and
/// cover TOML syntax, missing, unknown and mistyped keys, and values that do not describe
/// a machine (reversed ranges, uneven NUMA splits, a missing POLL state, ...).
pub fn machine_from_toml(text: &str, origin: &str) -> Result<Machine, String> {
    let at = |offset: usize, message: &str| format!("{origin}:{}: {message}", line_of(text, offset));
    let raw: RawMachine = toml::from_str(text).map_err(|e| {
        let offset = e.span().map_or(0, |span| span.start);
        at(offset, &e.message().trim_end().replace('\n', " "))
    })?;

    crate::limits::check_hz(*raw.hz.get_ref(), "hz =").map_err(|e| at(raw.hz.span().start, &e))?;

    // Topology.
    let rt = raw.topology.get_ref();
    let numa = &raw.numa;
    let spec = TopologySpec {
        sockets: *rt.sockets.get_ref(),
        nodes_per_socket: *rt.nodes_per_socket.get_ref(),
        cores_per_socket: *rt.cores_per_socket.get_ref(),
        cores_per_llc: *rt.cores_per_llc.get_ref(),
        threads_per_core: *rt.threads_per_core.get_ref(),
        node_distance_same_socket: numa.node_distance_same_socket.as_ref().map_or(12, |v| *v.get_ref()),
        node_distance_remote: numa.node_distance_remote.as_ref().map_or(32, |v| *v.get_ref()),
        node_reclaim_distance: numa.node_reclaim_distance.as_ref().map_or(RECLAIM_DISTANCE, |v| *v.get_ref()),
        smt_siblings_adjacent: rt.smt_siblings_adjacent,
    };
    let topo = Topology::new(&spec).map_err(|e| {
        let span = match e.field {
            "sockets" => Some(rt.sockets.span()),
            "nodes_per_socket" => Some(rt.nodes_per_socket.span()),
            "cores_per_socket" => Some(rt.cores_per_socket.span()),
            "cores_per_llc" => Some(rt.cores_per_llc.span()),
            "threads_per_core" => Some(rt.threads_per_core.span()),
            "node_distance_same_socket" => numa.node_distance_same_socket.as_ref().map(|v| v.span()),
            "node_distance_remote" => numa.node_distance_remote.as_ref().map(|v| v.span()),
            _ => None,
        };
        let offset = span.unwrap_or_else(|| raw.topology.span()).start;
        at(offset, &format!("topology.{e}"))
    })?;

    // Costs.
    let range = |value: &Spanned<Pair>, key: &str| -> Result<LatencyNs, String> {
        let [lo, hi] = value.get_ref().0;
        if hi > MAX_LATENCY_NS {
            return Err(at(
                value.span().start,
                &format!("{key} = [{lo}, {hi}]: each value must be in 0..={MAX_LATENCY_NS} ns (one second)"),
            ));
        }
        if lo > hi {
            return Err(at(value.span().start, &format!("{key} = [{lo}, {hi}]: expected [lo, hi] with lo <= hi")));
        }
        Ok(LatencyNs { lo_ns: lo, hi_ns: hi })
    };
    let c = &raw.costs;
    for (key, v) in
        [("ipi_send_ns", &c.ipi_send_ns), ("irq_entry_ns", &c.irq_entry_ns), ("irq_exit_ns", &c.irq_exit_ns)]
    {
        if *v.get_ref() > MAX_LATENCY_NS {
            return Err(at(
                v.span().start,
                &format!("costs.{key} = {}: expected 0..={MAX_LATENCY_NS} ns (one second)", v.get_ref()),
            ));
        }
    }
    let costs = HwCosts {
        line: [
            LatencyNs::ZERO,
            range(&c.line_smt_ns, "costs.line_smt_ns")?,
            range(&c.line_llc_ns, "costs.line_llc_ns")?,
            range(&c.line_socket_ns, "costs.line_socket_ns")?,
            range(&c.line_remote_ns, "costs.line_remote_ns")?,
        ],
        ipi_send_ns: *c.ipi_send_ns.get_ref(),
        ipi_delivery: range(&c.ipi_delivery_ns, "costs.ipi_delivery_ns")?,
        irq_entry_ns: *c.irq_entry_ns.get_ref(),
        irq_exit_ns: *c.irq_exit_ns.get_ref(),
        timer_late_running: match &c.timer_late_running_ns {
            Some(v) => Some(range(v, "costs.timer_late_running_ns")?),
            None => None,
        },
    };

    // The clock and the measured software costs.
    let clock = |v: &Spanned<u32>, key: &str| -> Result<u32, String> {
        let mhz = *v.get_ref();
        if !CLOCK_MHZ_RANGE.contains(&mhz) {
            return Err(at(
                v.span().start,
                &format!(
                    "{key} = {mhz}: expected a core clock in {}..={} MHz",
                    CLOCK_MHZ_RANGE.start(),
                    CLOCK_MHZ_RANGE.end()
                ),
            ));
        }
        Ok(mhz)
    };
    let clock_mhz = raw.clock_mhz.as_ref().map_or(Ok(DEFAULT_CLOCK_MHZ), |v| clock(v, "clock_mhz"))?;
    let mut path_costs = Vec::with_capacity(raw.path_costs.len());
    for (name, entry) in &raw.path_costs {
        let key = format!("path_costs.{}", name.get_ref());
        let e = entry.get_ref();
        let ns = *e.ns.get_ref();
        if ns == 0 || ns > MAX_LATENCY_NS {
            return Err(at(
                e.ns.span().start,
                &format!("{key}.ns = {ns}: expected 1..={MAX_LATENCY_NS} ns (one second)"),
            ));
        }
        path_costs.push(MeasuredPathCost {
            name: name.get_ref().clone(),
            line: line_of(text, name.span().start),
            ns,
            clock_mhz: clock(&e.clock_mhz, &format!("{key}.clock_mhz"))?,
            spread_ns: e
                .spread_ns
                .as_ref()
                .map(|v| range(v, &format!("{key}.spread_ns")).map(|r| [r.lo_ns, r.hi_ns]))
                .transpose()?,
            samples: e.samples,
            method: e.method.clone(),
        });
    }

    // Idle states.
    let states = raw.idle_states.get_ref();
    if states.is_empty() {
        return Err(at(raw.idle_states.span().start, "expected at least one [[idle_state]] (the POLL state)"));
    }
    let mut idle_states: Vec<IdleStateDesc> = Vec::with_capacity(states.len());
    for (index, spanned) in states.iter().enumerate() {
        let s = spanned.get_ref();
        let kind = *s.kind.get_ref();
        if (index == 0) != (kind == RawKind::Poll) {
            let message = if index == 0 {
                "idle_state[0] must have kind = \"poll\": x86 cpuidle drivers always put POLL first"
            } else {
                "kind = \"poll\" is only allowed for the first idle_state"
            };
            return Err(at(s.kind.span().start, message));
        }
        for (key, v) in [("exit_latency_ns", &s.exit_latency_ns), ("target_residency_ns", &s.target_residency_ns)] {
            if *v.get_ref() > MAX_LATENCY_NS {
                return Err(at(
                    v.span().start,
                    &format!(
                        "idle_state[{index}].{key} = {}: expected 0..={MAX_LATENCY_NS} ns (one second)",
                        v.get_ref()
                    ),
                ));
            }
        }
        if idle_states.iter().any(|prev| prev.name == *s.name.get_ref()) {
            return Err(at(s.name.span().start, &format!("duplicate idle_state name `{}`", s.name.get_ref())));
        }
        if let Some(prev) = idle_states.last() {
            if *s.exit_latency_ns.get_ref() < prev.exit_latency_ns {
                return Err(at(
                    s.exit_latency_ns.span().start,
                    &format!(
                        "exit_latency_ns must not decrease from one state to the next (`{}` has {})",
                        prev.name, prev.exit_latency_ns
                    ),
                ));
            }
            if *s.target_residency_ns.get_ref() < prev.target_residency_ns {
                return Err(at(
                    s.target_residency_ns.span().start,
                    &format!(
                        "target_residency_ns must not decrease from one state to the next (`{}` has {})",
                        prev.name, prev.target_residency_ns
                    ),
                ));
            }
        }
        idle_states.push(IdleStateDesc {
            name: s.name.get_ref().clone(),
            desc: s.desc.clone(),
            kind: match kind {
                RawKind::Poll => IdleKind::Poll,
                RawKind::Mwait => IdleKind::Mwait,
                RawKind::Hlt => IdleKind::Hlt,
                RawKind::Ioport => IdleKind::IoPort,
            },
            exit_latency_ns: *s.exit_latency_ns.get_ref(),
            target_residency_ns: *s.target_residency_ns.get_ref(),
            wake: range(&s.wake_ns, &format!("idle_state[{index}].wake_ns"))?,
            timer_wake: match &s.timer_wake_ns {
                Some(t) => Some(range(t, &format!("idle_state[{index}].timer_wake_ns"))?),
                None => None,
            },
            halt_extra: match &s.halt_wake_extra_ns {
                Some(c) => Some(halt_curve(c, index, "halt_wake_extra_ns").map_err(|(offset, m)| at(offset, &m))?),
                None => None,
            },
            halt_refill: match &s.halt_refill_extra_ns {
                Some(c) => Some(halt_curve(c, index, "halt_refill_extra_ns").map_err(|(offset, m)| at(offset, &m))?),
                None => None,
            },
            disabled: s.disabled,
        });
    }

    if raw.governor == Governor::Haltpoll && idle_states.len() != 2 {
        // drivers/cpuidle/cpuidle-haltpoll.c registers exactly POLL and the halt state, and
        // haltpoll_select() picks one of those two by index.
        let offset = text.find("governor").unwrap_or(0);
        return Err(at(
            offset,
            &format!(
                "governor = \"haltpoll\" needs exactly two idle states, POLL and the halt state (as \
                 cpuidle-haltpoll registers them); this machine has {}",
                idle_states.len()
            ),
        ));
    }
    Ok(Machine {
        name: raw.name,
        description: raw.description,
        topo,
        costs,
        idle_states,
        hz: *raw.hz.get_ref(),
        polling_idle: raw.polling_idle,
        idle_search_in_idle_loop: raw.idle_search_in_idle_loop,
        governor: raw.governor,
        background: raw.background,
        preempt: raw.preempt,
        haltpoll: raw.haltpoll,
        clock_mhz,
        path_costs,
        host_halt_poll: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_preset_parses_and_is_named_after_itself() {
        assert_eq!(preset_names().len(), PRESETS.len());
        for (&name, &(preset_name, _)) in preset_names().iter().zip(PRESETS) {
            assert_eq!(name, preset_name);
            let m = preset(name).unwrap();
            assert_eq!(m.name, name);
            assert_eq!(m.idle_states[0].kind, IdleKind::Poll);
        }
    }

    #[test]
    fn epyc_preset_values() {
        let m = preset("epyc-7763-2s").unwrap();
        assert_eq!(m.summary(), "epyc-7763-2s: 2 sockets, 2 nodes, 16 LLCs, 128 cores, 256 CPUs");
        assert_eq!(m.hz, 250);
        assert_eq!(m.topo.node_reclaim_distance(), 32);
        assert_eq!(m.topo.node_distance(0, 1), 32);
        assert_eq!(m.line_cost(8, 8), LatencyNs::ZERO);
        assert_eq!(m.line_cost(8, 136), LatencyNs::new(9, 11));
        assert_eq!(m.line_cost(8, 9), LatencyNs::new(21, 28));
        assert_eq!(m.line_cost(8, 16), LatencyNs::new(106, 134));
        assert_eq!(m.line_cost(8, 72), LatencyNs::new(293, 323));
        assert_eq!(m.costs.ipi_send_ns, 100);
        assert_eq!(m.costs.ipi_delivery, LatencyNs::new(100, 600));
        assert_eq!((m.costs.irq_entry_ns, m.costs.irq_exit_ns), (300, 200));
        let names: Vec<_> = m.idle_states.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["POLL", "C1", "C2"]);
        let c1 = &m.idle_states[1];
        assert_eq!((c1.kind, c1.exit_latency_ns, c1.target_residency_ns), (IdleKind::Mwait, 1_000, 2_000));
        assert_eq!(c1.desc, "ACPI FFH MWAIT 0x0");
        assert!(c1.kind.is_polling() && !c1.disabled);
        let c2 = &m.idle_states[2];
        assert_eq!((c2.kind, c2.exit_latency_ns, c2.target_residency_ns), (IdleKind::IoPort, 400_000, 800_000));
        assert_eq!(c2.wake, LatencyNs::new(2_000, 3_000));
        assert!(!c2.kind.is_polling() && c2.disabled);
    }

    #[test]
    fn smp4_preset_values() {
        let m = preset("smp-4").unwrap();
        assert_eq!(m.summary(), "smp-4: 1 socket, 1 node, 2 LLCs, 4 cores, 4 CPUs");
        assert_eq!(m.topo.llc_mask(1).to_string(), "0-1");
        assert_eq!(m.topo.node_reclaim_distance(), RECLAIM_DISTANCE);
        assert!(m.idle_states.iter().all(|s| !s.disabled));
        assert_eq!(m.idle_state_index("C2"), Some(2));
    }

    #[test]
    fn unknown_preset_lists_names() {
        let err = preset("epyc").unwrap_err();
        assert!(err.contains("unknown machine preset `epyc`"), "{err}");
        for name in preset_names() {
            assert!(err.contains(name), "{err}");
        }
    }

    fn smp4_text() -> &'static str {
        PRESETS.iter().find(|(n, _)| *n == "smp-4").unwrap().1
    }

    /// Replaces the first line starting with `key` by `replacement`.
    fn edit(key: &str, replacement: &str) -> String {
        let mut done = false;
        let lines: Vec<String> = smp4_text()
            .lines()
            .map(|l| {
                if !done && l.starts_with(key) {
                    done = true;
                    replacement.to_string()
                } else {
                    l.to_string()
                }
            })
            .collect();
        assert!(done, "no line starts with {key}");
        lines.join("\n")
    }

    fn line_number_of(text: &str, needle: &str) -> usize {
        text.lines().position(|l| l.starts_with(needle)).unwrap() + 1
    }

    #[test]
    fn malformed_toml_names_origin_and_line() {
        let text = edit("cores_per_llc", "cores_per_llc = = 2");
        let err = machine_from_toml(&text, "m.toml").unwrap_err();
        let line = line_number_of(&text, "cores_per_llc");
        assert!(err.starts_with(&format!("m.toml:{line}: ")), "{err}");
    }

    #[test]
    fn wrong_type_names_line() {
        let text = edit("cores_per_llc", "cores_per_llc = \"two\"");
        let err = machine_from_toml(&text, "m.toml").unwrap_err();
        let line = line_number_of(&text, "cores_per_llc");
        assert!(err.starts_with(&format!("m.toml:{line}: ")), "{err}");
        assert!(err.contains("expected u32"), "{err}");
    }

    #[test]
    fn unknown_key_is_rejected_with_line() {
        let text = edit("threads_per_core", "threads_per_core = 1\ncache_ways = 16");
        let err = machine_from_toml(&text, "m.toml").unwrap_err();
        let line = line_number_of(&text, "cache_ways");
        assert!(err.starts_with(&format!("m.toml:{line}: ")), "{err}");
        assert!(err.contains("unknown field `cache_ways`"), "{err}");
    }

    #[test]
    fn missing_key_is_named() {
        let text = edit("irq_exit_ns", "");
        let err = machine_from_toml(&text, "m.toml").unwrap_err();
        assert!(err.starts_with("m.toml:"), "{err}");
        assert!(err.contains("missing field `irq_exit_ns`"), "{err}");
    }

    #[test]
    fn semantic_errors_name_the_line() {
        let text = edit("cores_per_llc", "cores_per_llc = 3");
        let err = machine_from_toml(&text, "m.toml").unwrap_err();
        let line = line_number_of(&text, "cores_per_llc");
        assert!(err.starts_with(&format!("m.toml:{line}: topology.cores_per_llc: ")), "{err}");

        let text = edit("ipi_delivery_ns", "ipi_delivery_ns = [600, 100]");
        let err = machine_from_toml(&text, "m.toml").unwrap_err();
        let line = line_number_of(&text, "ipi_delivery_ns");
        assert!(err.starts_with(&format!("m.toml:{line}: costs.ipi_delivery_ns")), "{err}");

        let text = edit("hz", "hz = 200");
        let err = machine_from_toml(&text, "m.toml").unwrap_err();
        assert!(err.starts_with(&format!("m.toml:{}: hz = 200", line_number_of(&text, "hz"))), "{err}");

        let text = edit("kind = \"poll\"", "kind = \"hlt\"");
        let err = machine_from_toml(&text, "m.toml").unwrap_err();
        assert!(err.contains("must have kind = \"poll\""), "{err}");

        let text = edit("kind = \"mwait\"", "kind = \"mwiat\"");
        let err = machine_from_toml(&text, "m.toml").unwrap_err();
        let line = line_number_of(&text, "kind = \"mwiat\"");
        assert!(err.starts_with(&format!("m.toml:{line}: ")), "{err}");
        assert!(err.contains("mwiat"), "{err}");
    }

    /// smp-4 with `line` added after its second idle state's `wake_ns`.
    fn with_c1_line(line: &str) -> String {
        let mut seen = 0;
        let mut out = Vec::new();
        for l in smp4_text().lines() {
            out.push(l.to_string());
            if l.starts_with("wake_ns") {
                seen += 1;
                if seen == 2 {
                    out.push(line.to_string());
                }
            }
        }
        assert_eq!(seen, 3, "smp-4 has three idle states");
        out.join("\n")
    }

    #[test]
    fn a_timer_wake_is_read_where_given_and_the_wake_stands_in_elsewhere() {
        let m = preset("smp-4").unwrap();
        assert!(m.idle_states.iter().all(|s| s.timer_wake.is_none()));
        assert_eq!(m.idle_states[1].wake_by(true), m.idle_states[1].wake);

        let m = machine_from_toml(&with_c1_line("timer_wake_ns = [30000, 40000]"), "m.toml").unwrap();
        let c1 = &m.idle_states[1];
        assert_eq!(c1.timer_wake, Some(LatencyNs::new(30_000, 40_000)));
        assert_eq!(c1.wake_by(true), LatencyNs::new(30_000, 40_000));
        assert_eq!(c1.wake_by(false), c1.wake);
        assert!(m.idle_states[2].timer_wake.is_none());

        let text = with_c1_line("timer_wake_ns = [4, 3]");
        let err = machine_from_toml(&text, "m.toml").unwrap_err();
        let line = line_number_of(&text, "timer_wake_ns");
        assert!(err.starts_with(&format!("m.toml:{line}: idle_state[1].timer_wake_ns")), "{err}");
    }

    #[test]
    fn a_running_vcpus_timer_lateness_is_read_only_where_given() {
        assert!(preset("smp-4").unwrap().costs.timer_late_running.is_none());
        let text = edit("irq_exit_ns", "irq_exit_ns = 300\ntimer_late_running_ns = [14000, 19000]");
        let m = machine_from_toml(&text, "m.toml").unwrap();
        assert_eq!(m.costs.timer_late_running, Some(LatencyNs::new(14_000, 19_000)));
        let text = edit("irq_exit_ns", "irq_exit_ns = 300\ntimer_late_running_ns = [19000, 14000]");
        let err = machine_from_toml(&text, "m.toml").unwrap_err();
        let line = line_number_of(&text, "timer_late_running_ns");
        assert!(err.starts_with(&format!("m.toml:{line}: costs.timer_late_running_ns")), "{err}");
    }

    #[test]
    fn a_halt_of_each_length_gets_the_interpolated_extra() {
        let c = HaltCurve { points: vec![[50_000, 0], [1_000_000, 4_000], [5_000_000, 8_000], [20_000_000, 5_000]] };
        // Flat before the first point and after the last.
        assert_eq!(c.extra_ns(0), 0);
        assert_eq!(c.extra_ns(50_000), 0);
        assert_eq!(c.extra_ns(u64::MAX), 5_000);
        // On the points.
        assert_eq!(c.extra_ns(1_000_000), 4_000);
        assert_eq!(c.extra_ns(5_000_000), 8_000);
        // Between them: 4000 x 475000 / 950000, 4000 + 4000 x 1/4, and down 3000 x 1/3.
        assert_eq!(c.extra_ns(525_000), 2_000);
        assert_eq!(c.extra_ns(2_000_000), 5_000);
        assert_eq!(c.extra_ns(10_000_000), 7_000);
        // Integer steps round toward the earlier point: 4000 x 1/950000 is 0.
        assert_eq!(c.extra_ns(50_001), 0);
        assert_eq!(c.extra_ns(50_000 + 238), 1);
        // One point: that extra everywhere.
        assert_eq!(HaltCurve { points: vec![[100, 7]] }.extra_ns(1), 7);
    }

    #[test]
    fn a_halt_curve_is_read_where_given_and_a_malformed_one_is_refused_by_line() {
        let m = preset("smp-4").unwrap();
        assert!(m.idle_states.iter().all(|s| s.halt_extra.is_none()));
        let m =
            machine_from_toml(&with_c1_line("halt_wake_extra_ns = [[50000, 0], [5000000, 9000]]"), "m.toml").unwrap();
        assert_eq!(m.idle_states[1].halt_extra, Some(HaltCurve { points: vec![[50_000, 0], [5_000_000, 9_000]] }));
        assert!(m.idle_states[2].halt_extra.is_none());
        assert!(m.idle_states[1].halt_refill.is_none());
        let m = machine_from_toml(&with_c1_line("halt_refill_extra_ns = [[10, 1]]"), "m.toml").unwrap();
        assert_eq!(m.idle_states[1].halt_refill, Some(HaltCurve { points: vec![[10, 1]] }));
        let text = with_c1_line("halt_refill_extra_ns = [[10, 1], [5, 2]]");
        let err = machine_from_toml(&text, "m.toml").unwrap_err();
        let line = line_number_of(&text, "halt_refill_extra_ns");
        assert!(
            err.starts_with(&format!("m.toml:{line}: idle_state[1].halt_refill_extra_ns[1]: halt_ns 5 after 10")),
            "{err}"
        );
        for (bad, expected) in [
            ("halt_wake_extra_ns = []", "idle_state[1].halt_wake_extra_ns has 0 points: expected 1..=64 pairs"),
            ("halt_wake_extra_ns = [[50000, 0, 1]]", "idle_state[1].halt_wake_extra_ns[0] has 3 numbers: expected a pair"),
            ("halt_wake_extra_ns = [[50000, 0], [50000, 10]]", "idle_state[1].halt_wake_extra_ns[1]: halt_ns 50000 after 50000: expected halt lengths strictly increasing"),
            ("halt_wake_extra_ns = [[50000, 2000000000]]", "idle_state[1].halt_wake_extra_ns[0] = [50000, 2000000000]: expected both within"),
            ("halt_wake_extra_ns = [[50000, -1]]", ""),
            ("halt_wake_extra_ns = 5", ""),
        ] {
            let text = with_c1_line(bad);
            let err = machine_from_toml(&text, "m.toml").unwrap_err();
            let line = line_number_of(&text, "halt_wake_extra_ns");
            assert!(err.starts_with(&format!("m.toml:{line}: {expected}")), "{bad}: {err}");
        }
    }

    #[test]
    fn the_clock_is_the_presets_own_or_the_reference() {
        assert_eq!(preset("intel-240-2s").unwrap().clock_mhz, 1900);
        assert_eq!(preset("smp-4").unwrap().clock_mhz, DEFAULT_CLOCK_MHZ);
        let text = edit("clock_mhz", "");
        let m = machine_from_toml(&text, "m.toml").unwrap();
        assert_eq!(m.clock_mhz, DEFAULT_CLOCK_MHZ);
        assert!(m.path_costs.is_empty());
        let text = edit("clock_mhz", "clock_mhz = 50");
        let err = machine_from_toml(&text, "m.toml").unwrap_err();
        let line = line_number_of(&text, "clock_mhz");
        assert!(
            err.starts_with(&format!("m.toml:{line}: clock_mhz = 50: expected a core clock in 100..=10000 MHz")),
            "{err}"
        );
    }

    /// The `[path_costs]` format another tool writes: one table per measured field.
    const MEASURED: &str = "\n[path_costs.context_switch]\nns = 5400\nclock_mhz = 2100\nspread_ns = [4800, 6100]\nsamples = 1203\nmethod = \"pipe ping-pong, sched_switch pairs\"\n\n[path_costs.syscall]\nns = 120\nclock_mhz = 2596\n";

    #[test]
    fn measured_path_costs_are_read_with_their_clocks() {
        let text = format!("{}{MEASURED}", smp4_text());
        let m = machine_from_toml(&text, "m.toml").unwrap();
        let cs = MeasuredPathCost {
            name: "context_switch".into(),
            line: line_number_of(&text, "[path_costs.context_switch]"),
            ns: 5400,
            clock_mhz: 2100,
            spread_ns: Some([4800, 6100]),
            samples: Some(1203),
            method: Some("pipe ping-pong, sched_switch pairs".into()),
        };
        let sc = MeasuredPathCost {
            name: "syscall".into(),
            line: line_number_of(&text, "[path_costs.syscall]"),
            ns: 120,
            clock_mhz: 2596,
            spread_ns: None,
            samples: None,
            method: None,
        };
        assert_eq!(m.path_costs, [cs, sc]);
    }

    #[test]
    fn a_bad_measured_path_cost_names_file_line_and_what_was_expected() {
        let bad = |from: &str, to: &str| {
            let text = format!("{}{}", smp4_text(), MEASURED.replace(from, to));
            let err = machine_from_toml(&text, "m.toml").unwrap_err();
            (text, err)
        };
        let (text, err) = bad("ns = 5400", "ns = 0");
        let line = line_number_of(&text, "ns = 0");
        assert!(err.starts_with(&format!("m.toml:{line}: path_costs.context_switch.ns = 0: expected 1..=")), "{err}");
        let (_, err) = bad("ns = 5400", "ns = 1000000001");
        assert!(err.contains("path_costs.context_switch.ns = 1000000001: expected 1..=1000000000 ns"), "{err}");
        let (text, err) = bad("clock_mhz = 2100", "clock_mhz = 20000");
        let line = line_number_of(&text, "clock_mhz = 20000");
        assert!(err.starts_with(&format!("m.toml:{line}: path_costs.context_switch.clock_mhz = 20000")), "{err}");
        let (_, err) = bad("clock_mhz = 2100\n", "");
        assert!(err.contains("missing field `clock_mhz`"), "{err}");
        let (text, err) = bad("samples = 1203", "samples = 1203\nsource = \"x\"");
        let line = line_number_of(&text, "source = ");
        assert!(err.starts_with(&format!("m.toml:{line}: ")) && err.contains("unknown field `source`"), "{err}");
        let (_, err) = bad("[4800, 6100]", "[6100, 4800]");
        assert!(err.contains("path_costs.context_switch.spread_ns = [6100, 4800]: expected [lo, hi]"), "{err}");
    }

    #[test]
    fn pick_stays_in_range_and_spans_it() {
        let l = LatencyNs::new(100, 600);
        assert_eq!(l.pick(0), 100);
        assert_eq!(l.pick(u64::MAX), 600);
        assert_eq!(l.pick(u64::MAX / 2), 350);
        assert_eq!(LatencyNs::fixed(7).pick(12345), 7);
        assert_eq!(l.mid_ns(), 350);
        assert_eq!(l.to_string(), "100-600 ns");
    }
}
