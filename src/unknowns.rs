//! Named unknowns (issue 31): the machine and set-up facts a published run depended on but did
//! not record, as one table ([`UNKNOWNS`], written once in the `unknowns!` macro like the patch
//! table). Each row names the kernel mechanism it drives in the model (a function of
//! `linux`, `hw` or `background` it sets: never a factor on a cost), its values' grammar, its
//! range with the source of each end (docs/unknowns.md), its default, and the measurement on a
//! real machine that would collapse it.
//!
//! A run spec carries the unknowns it sets as text, `NAME=VALUE` (`--unknown`, or
//! `unknowns = { NAME = "VALUE" }` in a file): [`set_in`] parses a value and keeps it in its
//! canonical form, so a printed command line reads back into the same spec. [`apply`] puts a
//! spec's unknowns into the machine and kernel configuration through the mechanisms' own APIs
//! (`run::build_with` calls it); the default is "not set", which changes nothing. Which CPU an
//! unknown concerns is part of its value (`same-llc@16`, `50us@16`), so a spec line stays
//! self-contained.
//!
//! An experiment names the unknowns its answer depends on, each with the values a band takes
//! of it ([`Axis`]); `reproduce --band` runs every variant over them (the sweep module's `band`).

use crate::background::pinned::Placement;
use crate::hw::kvm::{GuestIdle, HostHaltPoll};
use crate::hw::{Governor, HaltpollParams, IdleKind, LatencyNs, Machine};
use crate::linux::config::{MAX_CGROUP_DEPTH, MAX_LEAF_CFS_RQS};
use crate::linux::unknowns::MAX_NEWIDLE_COST_NS;
use crate::linux::{CpuId, KernelConfig};

/// One row of the table.
#[derive(Debug)]
pub struct UnknownInfo {
    pub unknown: Unknown,
    /// The name `--unknown NAME=VALUE` takes (kebab case).
    pub name: &'static str,
    /// The kernel mechanism it drives: the model's function it sets, and the kernel code that
    /// reads what it sets.
    pub mechanism: &'static str,
    /// Its values' grammar.
    pub grammar: &'static str,
    /// Its range, with the source of each end.
    pub range: &'static str,
    /// What "not set" means.
    pub default: &'static str,
    /// The measurement on a real machine that would collapse it.
    pub collapse: &'static str,
    /// The values a band takes by default: every value of an enumeration, or an interval
    /// between its sourced ends (without the CPU part of the value, which the experiment
    /// gives: [`Axis::of`]).
    pub design: Design,
    kind: Kind,
}

/// The values a band takes of an unknown by default.
#[derive(Debug, Clone, Copy)]
pub enum Design {
    Values(&'static [&'static str]),
    Interval(&'static str, &'static str),
}

/// How a row's values are read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Holder,
    SetClear,
    TimeAtCpus,
    TimeAtLevel,
    GuestMode,
    Time,
    Wake,
    Percent,
    Count,
}

macro_rules! unknowns {
    ($(
        $(#[doc = $doc:literal])*
        $variant:ident {
            name: $name:literal,
            kind: $kind:ident,
            mechanism: $mech:literal,
            grammar: $grammar:literal,
            range: $range:literal,
            default: $default:literal,
            collapse: $collapse:literal,
            design: $design:expr,
        }
    )*) => {
        /// A named unknown.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum Unknown { $( $(#[doc = $doc])* $variant ),* }

        /// Every unknown, in `Unknown` order (row `i` is the variant with discriminant `i`).
        pub const UNKNOWNS: &[UnknownInfo] = &[$(
            UnknownInfo {
                unknown: Unknown::$variant,
                name: $name,
                mechanism: $mech,
                grammar: $grammar,
                range: $range,
                default: $default,
                collapse: $collapse,
                design: $design,
                kind: Kind::$kind,
            }
        ),*];
    };
}

unknowns! {
    /// What holds `rd->overloaded`: a pair of pinned, always-runnable tasks (docs/unknowns.md §1).
    OverloadHolder {
        name: "overload-holder",
        kind: Holder,
        mechanism: "two always-runnable SCHED_NORMAL tasks bound to one CPU (background::Profile::with_pinned_pair): add_nr_running() sets rd->overloaded and every root-level update_sg_lb_stats() sets it again; can_migrate_task() refuses both (LBF_ALL_PINNED), so sched_balance_newidle() passes its overload gate on every pass (kernel/sched/sched.h, fair.c @ v6.10)",
        grammar: "none | PLACEMENT@CPU (PLACEMENT: same-core, same-llc, same-node or other-node: the first such CPU after CPU in for_each_cpu_wrap() order) | CPU",
        range: "an enumeration: nothing (the model as it was), the pair on the reference CPU's core, LLC, node or another node; the pair is the smallest persistent holder v6.10 allows [docs/unknowns.md §1]; which one a published machine had is not recorded [docs/workloads.md §9.5]",
        default: "not set: nothing besides the background profile's own tasks",
        collapse: "/proc/schedstat read around the run: the reference CPU's domain0 CPU_NEWLY_IDLE lb_count grows by about one per idle re-entry and the domain holding the pair counts lb_balanced; or sched/debug's per-CPU nr_running (a CPU that never has fewer than two tasks)",
        design: Design::Values(&["none", "same-core", "same-llc", "same-node", "other-node"]),
    }
    /// `rd->overloaded` when the measured window opens: a transient (docs/unknowns.md §1, §2).
    StartOverloaded {
        name: "start-overloaded",
        kind: SetClear,
        mechanism: "rd->overloaded as the measured window opens (linux::unknowns::StartState, through set_rd_overloaded()): set, it is a transient that the next root-level update_sd_lb_stats() finding no CPU with two tasks clears, so a CPU whose newidle walk stops below the root keeps reading it set (kernel/sched/sched.h, fair.c @ v6.10)",
        grammar: "set | clear",
        range: "an enumeration: set (something put two tasks on one CPU since the last root-level balance, e.g. insmod loading a module beside a kthread it woke) or clear [docs/unknowns.md §1, §2]",
        default: "not set: what the background warm-up left",
        collapse: "rd->overloaded is not exported; /proc/schedstat's CPU_NEWLY_IDLE lb_count of the CPUs in the first second of the run shows whether their newidle passes walked",
        design: Design::Values(&["clear", "set"]),
    }
    /// `rq->avg_idle` of chosen CPUs when the measured window opens (docs/unknowns.md §2).
    StartAvgIdle {
        name: "start-avg-idle",
        kind: TimeAtCpus,
        mechanism: "rq->avg_idle of the CPUs when the measured window opens (linux::unknowns::StartState): sched_balance_newidle() gives up when avg_idle is below the lowest domain's max_newidle_lb_cost and walks up only while avg_idle >= curr_cost + sd->max_newidle_lb_cost; only ttwu_do_activate() updates it, when a task is woken onto the CPU (kernel/sched/fair.c, core.c @ v6.10)",
        grammar: "TIME@CPULIST, e.g. 50us@16 (TIME with its unit: ns, us, ms)",
        range: "0 .. 1ms: 1 ms is sched_init()'s start and ttwu_do_activate()'s cap (2 * sysctl_sched_migration_cost); 0 is update_avg()'s floor, which a CPU woken within microseconds of each newidle entry approaches [docs/unknowns.md §2]",
        default: "not set: what the background warm-up left",
        collapse: "debugfs sched/debug, each CPU's .avg_idle (print_cpu() in kernel/sched/debug.c), read just before the benchmark",
        design: Design::Interval("0ns", "1ms"),
    }
    /// `sd->max_newidle_lb_cost` of one domain level of chosen CPUs when the window opens
    /// (docs/unknowns.md §2).
    NewidleCost {
        name: "newidle-cost",
        kind: TimeAtLevel,
        mechanism: "sd->max_newidle_lb_cost of one domain of the CPUs when the measured window opens (linux::unknowns::StartState): the gate and the walk of sched_balance_newidle(); update_newidle_cost() raises it to each walk's cost and decays it by 253/256 at most once a second (kernel/sched/fair.c @ v6.10)",
        grammar: "TIME@CPULIST/LEVEL, LEVEL a domain level (0: the CPU's lowest) or its name (SMT, MC, PKG, NODE, NUMA), e.g. 5us@16/NUMA",
        range: "0 .. one full walk of the domain: 0 for a domain newidle balancing does not walk (decayed; Bursov's dump); the upper end published for a 48-CPU Xeon E5-2680 v3 is SMT 2236 ns, MC 3444 ns, NUMA 4590 ns (Vitalii Bursov, LKML 2024-04-03); for larger machines the model's own walk of the domain [docs/unknowns.md §2]",
        default: "not set: what the background warm-up left",
        collapse: "/sys/kernel/debug/sched/domains/cpuN/domainM/max_newidle_lb_cost, read just before the benchmark",
        design: Design::Interval("0ns", "4590ns"),
    }
    /// A KVM guest's idle wake mode (docs/unknowns.md §3).
    GuestIdleMode {
        name: "guest-idle",
        kind: GuestMode,
        mechanism: "how an idle vCPU waits (hw::Machine::set_guest_idle): plain HLT exits, which KVM's kvm_vcpu_halt() turns into a blocked vCPU thread unless the host polls (host-halt-poll-ns); the guest's cpuidle-haltpoll, which polls in the guest and turns host polling off (arch_haltpoll_enable() writes MSR_KVM_POLL_CONTROL); or MWAIT exposed, a polling idle state woken by a remote write (virt/kvm/kvm_main.c, arch/x86/kernel/kvm.c @ v6.10)",
        grammar: "hlt | guest-haltpoll | mwait",
        range: "an enumeration: the 2022 schbench VM is a dedicated Alibaba g7 instance whose guest HLT exits, mitigated by guest halt polling in Alibaba's kernel; how its host idles and polls is not published (kernel.taobao.org, \"Guest Idle Halt Polling\", 2020-07) [docs/unknowns.md §3]",
        default: "not set: the machine's own (icx-vm-32: guest-haltpoll with the kernel's defaults)",
        collapse: "in the guest: /sys/devices/system/cpu/cpuidle/current_driver and current_governor, the monitor flag of /proc/cpuinfo, /sys/devices/system/cpu/cpu0/cpuidle/state*/name",
        design: Design::Values(&["hlt", "guest-haltpoll", "mwait"]),
    }
    /// The guest haltpoll governor's largest poll window (docs/unknowns.md §3).
    GuestHaltPollNs {
        name: "guest-halt-poll-ns",
        kind: Time,
        mechanism: "the haltpoll governor's guest_halt_poll_ns, the most a vCPU polls in the guest before it halts (drivers/cpuidle/governors/haltpoll.c @ v6.10; grow 2, grow_start 50us, shrink 2); it applies while the guest runs cpuidle-haltpoll (guest-idle=guest-haltpoll)",
        grammar: "TIME, e.g. 200us",
        range: "0 .. 200us: 0 is what this project's guest reads (docs/background-measured.md); 200 us the governor's default [docs/unknowns.md §3]",
        default: "not set: the machine's own (icx-vm-32: 200us)",
        collapse: "in the guest: /sys/module/haltpoll/parameters/guest_halt_poll_ns",
        design: Design::Interval("0ns", "200us"),
    }
    /// KVM's host halt-polling window (docs/unknowns.md §3).
    HostHaltPollNs {
        name: "host-halt-poll-ns",
        kind: Time,
        mechanism: "KVM's halt_poll_ns on the host (hw::kvm::HostHaltPoll, kvm_vcpu_halt() in virt/kvm/kvm_main.c @ v6.10, with grow 2, grow_start 10us, shrink 2): an interrupt within the vCPU's poll window costs a VM entry, a later one the blocked wake; it applies to a guest that halts in HLT (guest-idle=hlt), since cpuidle-haltpoll turns host polling off",
        grammar: "TIME, e.g. 200us",
        range: "0 .. 200us: 0 is polling off; 200 us is KVM_HALT_POLL_NS_DEFAULT on x86 (arch/x86/include/asm/kvm_host.h @ v6.10) [docs/unknowns.md §3]",
        default: "not set: the host does not poll (every preset)",
        collapse: "on the host: /sys/module/kvm/parameters/halt_poll_ns; from the guest alone, the latency of ipi:ipi_send_cpu -> irq_vectors:call_function_single_entry to an idle target, bimodal (polled / blocked) when the host polls",
        design: Design::Interval("0ns", "200us"),
    }
    /// What waking a halted vCPU costs when nothing polls (docs/unknowns.md §3).
    HltWake {
        name: "hlt-wake",
        kind: Wake,
        mechanism: "the wake of the guest's HLT idle state when nothing polls: the host's wakeup of the blocked vCPU thread plus the VM entry that injects the interrupt (hw::Machine::set_guest_idle)",
        grammar: "TIME or TIME-TIME (a range each wake draws from), e.g. 11us-15us",
        range: "1.5-2.5us .. 11-15us: a host cross-CPU thread wakeup plus a VM entry (docs/workloads.md §9.2, rows \"AMD Zen 3\" and \"Deep-state wake\"), to this machine's own halted-vCPU wake less the model's delivery (docs/measured-paths.md) [docs/unknowns.md §3]",
        default: "not set: the machine's own (icx-vm-32: 1500ns-2500ns)",
        collapse: "on the host, the kvm:kvm_vcpu_wakeup tracepoint (waited); in the guest, the ipi:ipi_send_cpu -> call_function_single_entry latency to a halted target",
        design: Design::Interval("1500ns-2500ns", "11us-15us"),
    }
    /// How busy the machine's own activity was (docs/unknowns.md §4).
    BackgroundIntensity {
        name: "background-intensity",
        kind: Percent,
        mechanism: "every background source's period and jitter divided by PCT/100 (background::Profile::with_intensity): the profile's delayed work, timers, kthreads, tick-raised softirqs and daemons run that much more often; the softlockup watchdog and pinned hogs are left alone",
        grammar: "PCT%, e.g. 250%",
        range: "100% .. 386%: the idle capture the kvm-guest profile was made from, to the light capture of the same machine, 116.0 against 30.0 source wakeups a second [docs/unknowns.md §4, docs/background-measured.md]",
        default: "not set: 100%, the profile as measured",
        collapse: "on the idle machine before the benchmark: perf stat -a -e sched:sched_wakeup,workqueue:workqueue_execute_start sleep 10, against the profile's rates",
        design: Design::Interval("100%", "386%"),
    }
    /// The depth of the workload's user tasks in the cpu controller's hierarchy
    /// (docs/unknowns.md §8).
    CgroupDepth {
        name: "cgroup-depth",
        kind: Count,
        mechanism: "se->depth of the workload's user tasks (KernelConfig::cgroup_depth, set by copy_process(); a workload's kthreads stay at 0): enqueue_task_fair() and dequeue_task_fair() walk one group sched_entity per level (for_each_sched_entity: enqueue_entity() or update_load_avg(), update_cfs_group() per level; kernel/sched/fair.c @ v6.10), charged PathCosts::enqueue_level and dequeue_level per level; the task's chain of group cfs_rqs joins each CPU's leaf_cfs_rq_list (cgroup-leaves at least depth + 1)",
        grammar: "N, 0..=16 levels",
        range: "0 .. 3: 0 for a task in the root group (kthreads; a user task with the cpu controller not enabled below the root and autogroup off); 1 for a session's autogroup (CONFIG_SCHED_AUTOGROUP, kernel/sched/autogroup.c: a child of the root task group); 2 for a systemd service (/system.slice/foo.service), 3 for a login session (/user.slice/user-N.slice/session-M.scope) [docs/unknowns.md §8: Red Hat, RHEL 9 \"Viewing the systemd cgroups hierarchy\"; systemd.slice(5)]",
        default: "not set: 0, the root group (the model without task groups)",
        collapse: "on the real machine, the benchmark's /proc/PID/cgroup (the cpu controller's line; on cgroup v2 with cpu in cgroup.subtree_control down the path) and /proc/PID/autogroup: the number of path components, or 1 for an autogroup in the root cgroup",
        design: Design::Interval("0", "3"),
    }
    /// The cfs_rqs with load on each CPU (docs/unknowns.md §8).
    CgroupLeaves {
        name: "cgroup-leaves",
        kind: Count,
        mechanism: "the length of each CPU's rq->leaf_cfs_rq_list, the cfs_rqs with load (the root's included) that __update_blocked_fair() walks in every sched_balance_update_blocked_averages() (update_cfs_rq_load_avg(), update_tg_load_avg() and the group entity's update_load_avg() per cfs_rq; kernel/sched/fair.c @ v6.10) (KernelConfig::nr_leaf_cfs_rqs), charged PathCosts::blocked_leaf per cfs_rq beyond the root's",
        grammar: "N, 1..=10000 (the root's cfs_rq included; taken as at least cgroup-depth + 1)",
        range: "1 .. 18: 1 with no task group holding load (every task in the root group, as on this project's guest); 18 when every group of a small systemd server (cgroup v1: the root, user, user/root, the session, system and 13 services) has run on the CPU within the blocked load's decay [docs/unknowns.md §8: a published systemd-cgls of such a server]",
        default: "not set: 1 (the root's cfs_rq); with cgroup-depth D, at least D + 1 (the chain of the workload's tasks)",
        collapse: "on the real machine, CONFIG_SCHED_DEBUG: the cfs_rq[N]:/... entries of /sys/kernel/debug/sched/debug (print_cfs_stats() walks the same leaf_cfs_rq_list), counted per CPU during the benchmark",
        design: Design::Interval("1", "18"),
    }
}

impl Unknown {
    pub fn info(self) -> &'static UnknownInfo {
        &UNKNOWNS[self as usize]
    }

    pub fn name(self) -> &'static str {
        self.info().name
    }

    /// The unknown named `name`.
    pub fn from_name(name: &str) -> Result<Unknown, String> {
        UNKNOWNS.iter().find(|u| u.name == name).map(|u| u.unknown).ok_or_else(|| {
            let names: Vec<&str> = UNKNOWNS.iter().map(|u| u.name).collect();
            format!("no unknown named '{name}' (expected one of: {})", names.join(", "))
        })
    }
}

/// A domain level of `newidle-cost`: its index from the CPU's lowest domain, or its name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Level {
    Index(usize),
    Name(String),
}

/// Where `overload-holder` puts the pair.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Holder {
    None,
    Placed(Placement, CpuId),
    Cpu(CpuId),
}

/// A guest's idle mode as `guest-idle` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GuestMode {
    Hlt,
    GuestHaltPoll,
    Mwait,
}

impl GuestMode {
    const NAMES: &'static [&'static str] = &["hlt", "guest-haltpoll", "mwait"];

    fn name(self) -> &'static str {
        Self::NAMES[self as usize]
    }
}

/// A parsed value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Value {
    Holder(Holder),
    SetClear(bool),
    TimeAtCpus { ns: u64, cpus: Vec<CpuId> },
    TimeAtLevel { ns: u64, cpus: Vec<CpuId>, level: Level },
    Mode(GuestMode),
    Time(u64),
    Wake(LatencyNs),
    Percent(u32),
    Count(u32),
}

/// The largest time a value may give: one second (far above every sourced range, but finite
/// and within a `u32` of nanoseconds where the mechanism keeps one).
const MAX_TIME_NS: u64 = crate::sim::NSEC_PER_SEC;

/// A time with its unit, `[0-9]+(.[0-9]+)?(ns|us|ms|s)`, in whole nanoseconds.
pub fn parse_time(s: &str) -> Option<u64> {
    let s = s.trim();
    let at = s.find(|c: char| !(c.is_ascii_digit() || c == '.'))?;
    let (num, unit) = s.split_at(at);
    let scale: u64 = match unit {
        "ns" => 1,
        "us" => 1_000,
        "ms" => 1_000_000,
        "s" => 1_000_000_000,
        _ => return None,
    };
    let (int, frac) = num.split_once('.').unwrap_or((num, ""));
    if int.is_empty() || !int.bytes().all(|b| b.is_ascii_digit()) || !frac.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    if num.contains('.') && frac.is_empty() {
        return None;
    }
    let mut ns = int.parse::<u64>().ok()?.checked_mul(scale)?;
    // The fraction: its digits below a nanosecond must be zero.
    let mut place = scale;
    for d in frac.bytes() {
        place /= 10;
        let d = u64::from(d - b'0');
        if place == 0 {
            if d != 0 {
                return None;
            }
            continue;
        }
        ns = ns.checked_add(d * place)?;
    }
    Some(ns)
}

/// A time in its canonical form: whole units, the largest unit that divides it.
pub fn format_time(ns: u64) -> String {
    match ns {
        0 => "0ns".into(),
        n if n % 1_000_000_000 == 0 => format!("{}s", n / 1_000_000_000),
        n if n % 1_000_000 == 0 => format!("{}ms", n / 1_000_000),
        n if n % 1_000 == 0 => format!("{}us", n / 1_000),
        n => format!("{n}ns"),
    }
}

/// The values a count unknown takes (the mechanism's own limits).
fn count_range(u: Unknown) -> (u32, u32) {
    match u {
        Unknown::CgroupDepth => (0, u32::from(MAX_CGROUP_DEPTH)),
        _ => (1, MAX_LEAF_CFS_RQS),
    }
}

/// A CPU list as `0-3,8`, read without a machine (the CPUs are checked when the unknown is
/// applied). Sorted and without duplicates.
fn parse_cpus(s: &str) -> Option<Vec<CpuId>> {
    let mut out = Vec::new();
    for el in s.split(',') {
        let (a, b) = el.split_once('-').unwrap_or((el, el));
        let (a, b): (CpuId, CpuId) = (a.parse().ok()?, b.parse().ok()?);
        if a > b || b - a > 1 << 16 {
            return None;
        }
        out.extend(a..=b);
    }
    out.sort_unstable();
    out.dedup();
    (!out.is_empty()).then_some(out)
}

/// A CPU list in its canonical form (ranges of consecutive CPUs).
fn format_cpus(cpus: &[CpuId]) -> String {
    let mut parts = Vec::new();
    let mut i = 0;
    while i < cpus.len() {
        let mut j = i;
        while j + 1 < cpus.len() && cpus[j + 1] == cpus[j] + 1 {
            j += 1;
        }
        parts.push(if i == j { cpus[i].to_string() } else { format!("{}-{}", cpus[i], cpus[j]) });
        i = j + 1;
    }
    parts.join(",")
}

impl Value {
    /// Read a value of unknown `u`. Errors say what was expected.
    pub fn parse(u: Unknown, text: &str) -> Result<Value, String> {
        let info = u.info();
        let bad = || format!("{}={text}: expected {}", info.name, info.grammar);
        let text = text.trim();
        let v = match info.kind {
            Kind::Holder => {
                if text == "none" {
                    Value::Holder(Holder::None)
                } else if let Some((p, cpu)) = text.split_once('@') {
                    let p = Placement::parse(p).ok_or_else(bad)?;
                    Value::Holder(Holder::Placed(p, cpu.parse().map_err(|_| bad())?))
                } else {
                    Value::Holder(Holder::Cpu(text.parse().map_err(|_| bad())?))
                }
            }
            Kind::SetClear => match text {
                "set" => Value::SetClear(true),
                "clear" => Value::SetClear(false),
                _ => return Err(bad()),
            },
            Kind::TimeAtCpus => {
                let (t, cpus) = text.split_once('@').ok_or_else(bad)?;
                Value::TimeAtCpus { ns: parse_time(t).ok_or_else(bad)?, cpus: parse_cpus(cpus).ok_or_else(bad)? }
            }
            Kind::TimeAtLevel => {
                let (t, rest) = text.split_once('@').ok_or_else(bad)?;
                let (cpus, level) = rest.split_once('/').ok_or_else(bad)?;
                let level = match level.parse::<usize>() {
                    Ok(i) => Level::Index(i),
                    Err(_) if !level.is_empty() && level.bytes().all(|b| b.is_ascii_alphabetic()) => {
                        Level::Name(level.to_ascii_uppercase())
                    }
                    Err(_) => return Err(bad()),
                };
                Value::TimeAtLevel {
                    ns: parse_time(t).ok_or_else(bad)?,
                    cpus: parse_cpus(cpus).ok_or_else(bad)?,
                    level,
                }
            }
            Kind::GuestMode => {
                let i = GuestMode::NAMES.iter().position(|n| *n == text).ok_or_else(|| {
                    if text == "host-haltpoll" {
                        format!(
                            "{}={text}: the host's polling is its own unknown: guest-idle=hlt with host-halt-poll-ns=200us",
                            info.name
                        )
                    } else {
                        bad()
                    }
                })?;
                Value::Mode([GuestMode::Hlt, GuestMode::GuestHaltPoll, GuestMode::Mwait][i])
            }
            Kind::Time => Value::Time(parse_time(text).ok_or_else(bad)?),
            Kind::Wake => {
                let (lo, hi) = match text.split_once('-') {
                    Some((lo, hi)) => (parse_time(lo).ok_or_else(bad)?, parse_time(hi).ok_or_else(bad)?),
                    None => {
                        let t = parse_time(text).ok_or_else(bad)?;
                        (t, t)
                    }
                };
                if lo > hi {
                    return Err(format!("{}={text}: the range's low end is above its high end", info.name));
                }
                Value::Wake(LatencyNs { lo_ns: lo, hi_ns: hi })
            }
            Kind::Percent => {
                let n: u32 = text.strip_suffix('%').unwrap_or(text).parse().map_err(|_| bad())?;
                let (lo, hi) = crate::background::intensity::INTENSITY_PCT_RANGE;
                if !(lo..=hi).contains(&n) {
                    return Err(format!("{}={text}: expected {lo}% to {hi}%", info.name));
                }
                Value::Percent(n)
            }
            Kind::Count => {
                let n: u32 = text.parse().map_err(|_| bad())?;
                let (lo, hi) = count_range(u);
                if !(lo..=hi).contains(&n) {
                    return Err(format!("{}={text}: expected {lo} to {hi}", info.name));
                }
                Value::Count(n)
            }
        };
        let too_long =
            |ns: u64| (ns > MAX_TIME_NS).then(|| format!("{}={text}: at most {}", info.name, format_time(MAX_TIME_NS)));
        let e = match &v {
            Value::TimeAtCpus { ns, .. } | Value::Time(ns) => too_long(*ns),
            Value::TimeAtLevel { ns, .. } => (*ns > MAX_NEWIDLE_COST_NS)
                .then(|| format!("{}={text}: at most {}", info.name, format_time(MAX_NEWIDLE_COST_NS))),
            Value::Wake(l) => too_long(l.hi_ns),
            _ => None,
        };
        match e {
            Some(e) => Err(e),
            None => Ok(v),
        }
    }

    /// The canonical text of the value (what a spec keeps and prints).
    pub fn text(&self) -> String {
        match self {
            Value::Holder(Holder::None) => "none".into(),
            Value::Holder(Holder::Placed(p, c)) => format!("{}@{c}", p.name()),
            Value::Holder(Holder::Cpu(c)) => c.to_string(),
            Value::SetClear(on) => if *on { "set" } else { "clear" }.into(),
            Value::TimeAtCpus { ns, cpus } => format!("{}@{}", format_time(*ns), format_cpus(cpus)),
            Value::TimeAtLevel { ns, cpus, level } => {
                let l = match level {
                    Level::Index(i) => i.to_string(),
                    Level::Name(n) => n.clone(),
                };
                format!("{}@{}/{l}", format_time(*ns), format_cpus(cpus))
            }
            Value::Mode(m) => m.name().into(),
            Value::Time(ns) => format_time(*ns),
            Value::Wake(l) if l.lo_ns == l.hi_ns => format_time(l.lo_ns),
            Value::Wake(l) => format!("{}-{}", format_time(l.lo_ns), format_time(l.hi_ns)),
            Value::Percent(p) => format!("{p}%"),
            Value::Count(n) => n.to_string(),
        }
    }

    /// The value `num/den` of the way from `lo` to `hi` (numbers rounded down; the CPUs and
    /// level are `lo`'s), for a band's points inside an interval. `None` if the two are not
    /// values of one numeric kind.
    fn lerp(lo: &Value, hi: &Value, num: u64, den: u64) -> Option<Value> {
        let at = |a: u64, b: u64| -> u64 {
            let (a, b, n, d) = (i128::from(a), i128::from(b), i128::from(num), i128::from(den.max(1)));
            (a + (b - a) * n / d) as u64
        };
        Some(match (lo, hi) {
            (Value::TimeAtCpus { ns: a, cpus }, Value::TimeAtCpus { ns: b, .. }) => {
                Value::TimeAtCpus { ns: at(*a, *b), cpus: cpus.clone() }
            }
            (Value::TimeAtLevel { ns: a, cpus, level }, Value::TimeAtLevel { ns: b, .. }) => {
                Value::TimeAtLevel { ns: at(*a, *b), cpus: cpus.clone(), level: level.clone() }
            }
            (Value::Time(a), Value::Time(b)) => Value::Time(at(*a, *b)),
            (Value::Wake(a), Value::Wake(b)) => {
                Value::Wake(LatencyNs { lo_ns: at(a.lo_ns, b.lo_ns), hi_ns: at(a.hi_ns, b.hi_ns) })
            }
            (Value::Percent(a), Value::Percent(b)) => Value::Percent(at(u64::from(*a), u64::from(*b)) as u32),
            (Value::Count(a), Value::Count(b)) => Value::Count(at(u64::from(*a), u64::from(*b)) as u32),
            _ => return None,
        })
    }
}

/// Parse `NAME=VALUE` and put it into `set` in its canonical form, replacing an earlier value
/// of the same unknown; `set` stays in table order. `what` is how the user spelled the field
/// (`--unknown`, `unknowns`); errors start with it.
pub fn set_in(set: &mut Vec<(String, String)>, item: &str, what: &str) -> Result<(), String> {
    let (name, value) = item
        .split_once('=')
        .ok_or_else(|| format!("{what} '{item}': expected NAME=VALUE (`schedsim list --unknowns` lists them)"))?;
    let u = Unknown::from_name(name.trim()).map_err(|e| format!("{what} '{item}': {e}"))?;
    let v = Value::parse(u, value).map_err(|e| format!("{what}: {e}"))?;
    set.retain(|(n, _)| n != u.name());
    let at = set.iter().position(|(n, _)| Unknown::from_name(n).is_ok_and(|o| o > u)).unwrap_or(set.len());
    set.insert(at, (u.name().to_string(), v.text()));
    Ok(())
}

/// The parsed unknowns of a spec, in table order.
fn parsed(set: &[(String, String)]) -> Result<Vec<(Unknown, Value)>, String> {
    set.iter()
        .map(|(n, v)| {
            let u = Unknown::from_name(n)?;
            Ok((u, Value::parse(u, v)?))
        })
        .collect()
}

/// What a spec's unknowns do to a machine and its configuration, resolved: the model's state
/// they set. Two sets of unknowns with the same `Effect` on one machine make the same run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Effect {
    /// The CPU the pinned pair is bound to.
    pub pair: Option<CpuId>,
    pub start: crate::linux::unknowns::StartState,
    /// The guest's idle wake mode (a KVM guest's: its own, or as its unknowns set it).
    pub guest: Option<GuestIdle>,
    /// The background's intensity, if it scales any source.
    pub intensity: Option<u32>,
    /// The workload's user tasks' depth and each CPU's cfs_rqs with load
    /// (`KernelConfig::set_task_groups`), if either differs from the root group alone.
    pub task_groups: Option<(u32, u32)>,
}

/// One set unknown as applied: its name and value, and what it did (for the run's header note).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Applied {
    pub name: String,
    pub value: String,
    /// What it set, in words, or why it changes nothing here.
    pub effect: String,
    /// Whether it changes the run (an unknown another one overrides, or that does not apply to
    /// this machine, does not).
    pub active: bool,
}

/// The wake of an exposed MWAIT: the intel-240-2s preset's C1 range (docs/unknowns.md §3,
/// [infer]: a line transfer plus the C1 exit).
const MWAIT_WAKE: LatencyNs = LatencyNs { lo_ns: 100, hi_ns: 300 };

/// The guest mode a machine is in as described (before any unknown).
fn machine_guest_mode(m: &Machine) -> Option<(GuestMode, LatencyNs)> {
    match m.idle_states.as_slice() {
        [poll, hlt] if poll.kind == IdleKind::Poll && hlt.kind == IdleKind::Hlt => {
            let mode = if m.governor == Governor::Haltpoll && m.haltpoll.guest_halt_poll_ns > 0 {
                GuestMode::GuestHaltPoll
            } else {
                GuestMode::Hlt
            };
            Some((mode, hlt.wake))
        }
        _ => None,
    }
}

/// Resolve a spec's unknowns on machine `m` with background `bg`: the state they set
/// ([`Effect`]) and, per unknown, what it does. Errors name the unknown and what this machine
/// lacks.
pub fn resolve(
    set: &[(String, String)],
    m: &Machine,
    bg: &crate::background::Profile,
) -> Result<(Effect, Vec<Applied>), String> {
    let vals = parsed(set)?;
    let effect = effect_of(&vals, m, bg)?;
    let mut applied = Vec::new();
    for (i, (u, v)) in vals.iter().enumerate() {
        let mut without = vals.clone();
        without.remove(i);
        let active = effect_of(&without, m, bg)? != effect;
        applied.push(Applied {
            name: u.name().into(),
            value: v.text(),
            effect: describe(*u, v, &effect, active),
            active,
        });
    }
    Ok((effect, applied))
}

fn effect_of(vals: &[(Unknown, Value)], m: &Machine, bg: &crate::background::Profile) -> Result<Effect, String> {
    let mut e = Effect::default();
    let nr = m.topo.nr_cpus;
    let get = |u: Unknown| vals.iter().find(|(x, _)| *x == u).map(|(_, v)| v);
    let check_cpus = |u: Unknown, v: &Value, cpus: &[CpuId]| -> Result<(), String> {
        match cpus.iter().find(|&&c| c >= nr) {
            Some(c) => Err(format!(
                "unknown {}={}: CPU {c} is not on machine {} (CPUs 0-{})",
                u.name(),
                v.text(),
                m.name,
                nr - 1
            )),
            None => Ok(()),
        }
    };
    if let Some(v @ Value::Holder(h)) = get(Unknown::OverloadHolder) {
        e.pair = match *h {
            Holder::None => None,
            Holder::Cpu(c) => {
                check_cpus(Unknown::OverloadHolder, v, &[c])?;
                Some(c)
            }
            Holder::Placed(p, r) => {
                check_cpus(Unknown::OverloadHolder, v, &[r])?;
                Some(p.cpu(&m.topo, r, &[]).ok_or_else(|| {
                    format!(
                        "unknown overload-holder={}: machine {} has no {} CPU for CPU {r} \
                         (no SMT, one LLC per node, or one node)",
                        v.text(),
                        m.name,
                        p.name()
                    )
                })?)
            }
        };
    }
    if let Some(Value::SetClear(on)) = get(Unknown::StartOverloaded) {
        e.start.overloaded = Some(*on);
    }
    if let Some(v @ Value::TimeAtCpus { ns, cpus }) = get(Unknown::StartAvgIdle) {
        check_cpus(Unknown::StartAvgIdle, v, cpus)?;
        e.start.avg_idle = cpus.iter().map(|&c| (c, *ns)).collect();
    }
    if let Some(v @ Value::TimeAtLevel { ns, cpus, level }) = get(Unknown::NewidleCost) {
        check_cpus(Unknown::NewidleCost, v, cpus)?;
        let sd = crate::linux::kernel::sched::topology::build_sched_domains(&m.topo);
        for &c in cpus {
            let levels = sd.domains(c);
            let names = || {
                let l: Vec<String> = levels.iter().enumerate().map(|(i, d)| format!("{i} ({})", d.name)).collect();
                l.join(", ")
            };
            let i = match level {
                Level::Index(i) if *i < levels.len() => *i,
                Level::Name(n) if levels.iter().filter(|d| d.name == n).count() == 1 => {
                    levels.iter().position(|d| d.name == n).expect("counted")
                }
                _ => {
                    return Err(format!(
                        "unknown newidle-cost={}: CPU {c} of machine {} has domain levels {} (a level by number, or a name that names one)",
                        v.text(),
                        m.name,
                        names()
                    ))
                }
            };
            e.start.max_newidle_lb_cost.push((c, i, *ns));
        }
    }
    // A guest's idle mode: the machine's own unless a guest unknown changes it, so that an
    // unknown that leaves the machine as it is has the effect of none.
    let guest = [Unknown::GuestIdleMode, Unknown::GuestHaltPollNs, Unknown::HostHaltPollNs, Unknown::HltWake];
    let first = guest.iter().find(|u| get(**u).is_some());
    let own = machine_guest_mode(m);
    if let (Some(first), None) = (first, own) {
        return Err(format!(
            "unknown {}: machine {} is not a KVM guest (its idle states are not POLL and one HLT state, as icx-vm-32's)",
            first.name(),
            m.name
        ));
    }
    if let Some((mode0, wake0)) = own {
        let time = |u| match get(u) {
            Some(Value::Time(t)) => Some(*t),
            _ => None,
        };
        let mode = match get(Unknown::GuestIdleMode) {
            Some(Value::Mode(g)) => *g,
            _ => mode0,
        };
        let wake = match get(Unknown::HltWake) {
            Some(Value::Wake(w)) => *w,
            _ => wake0,
        };
        e.guest = Some(match mode {
            GuestMode::Hlt => {
                let host = time(Unknown::HostHaltPollNs).or(m.host_halt_poll.map(|h| u64::from(h.halt_poll_ns)));
                match host {
                    Some(ns) if ns > 0 => {
                        let base = m.host_halt_poll.unwrap_or(HostHaltPoll::X86_DEFAULT);
                        GuestIdle::HostHaltPoll { params: HostHaltPoll { halt_poll_ns: ns as u32, ..base }, wake }
                    }
                    _ => GuestIdle::Hlt { wake },
                }
            }
            GuestMode::GuestHaltPoll => {
                let mut params = if m.haltpoll.guest_halt_poll_ns > 0 { m.haltpoll } else { HaltpollParams::default() };
                if let Some(ns) = time(Unknown::GuestHaltPollNs) {
                    params.guest_halt_poll_ns = ns as u32;
                }
                if params.guest_halt_poll_ns == 0 {
                    // A governor that never polls halts at once: the machine of plain HLT.
                    GuestIdle::Hlt { wake }
                } else {
                    GuestIdle::GuestHaltPoll { params, wake }
                }
            }
            GuestMode::Mwait => GuestIdle::Mwait { wake: MWAIT_WAKE },
        });
    }
    if let Some(Value::Percent(p)) = get(Unknown::BackgroundIntensity) {
        let scales = bg
            .sources
            .iter()
            .any(|s| !matches!(s.kind, crate::background::Kind::Watchdog | crate::background::Kind::PinnedHog));
        e.intensity = (*p != 100 && scales).then_some(*p);
    }
    let count = |u| match get(u) {
        Some(Value::Count(n)) => Some(*n),
        _ => None,
    };
    // A CPU the workload's tasks run on holds their chain of cfs_rqs, the root's included.
    let depth = count(Unknown::CgroupDepth).unwrap_or(0);
    let leaves = count(Unknown::CgroupLeaves).unwrap_or(1).max(depth + 1);
    e.task_groups = (depth, leaves).ne(&(0, 1)).then_some((depth, leaves));
    Ok(e)
}

/// What unknown `u` with value `v` does in state `e`, in words, with the model's function it
/// sets; or why it changes nothing here.
fn describe(u: Unknown, v: &Value, e: &Effect, active: bool) -> String {
    let lat = |l: &LatencyNs| Value::Wake(*l).text();
    if !active {
        let why = match (u, &e.guest) {
            (Unknown::HostHaltPollNs, Some(GuestIdle::GuestHaltPoll { .. })) => {
                "the guest's cpuidle-haltpoll turns host polling off (arch_haltpoll_enable(): MSR_KVM_POLL_CONTROL)"
            }
            (Unknown::HostHaltPollNs | Unknown::GuestHaltPollNs | Unknown::HltWake, Some(GuestIdle::Mwait { .. })) => {
                "an MWAIT guest does not exit on idle"
            }
            (Unknown::GuestHaltPollNs, _) => "the guest does not run cpuidle-haltpoll",
            (Unknown::BackgroundIntensity, _) => "100%, or nothing in the background to scale",
            (Unknown::CgroupDepth, _) => "0 is the root group",
            (Unknown::CgroupLeaves, _) => {
                "no more than the root's cfs_rq and the chain of the workload's tasks (cgroup-depth + 1)"
            }
            _ => "the machine is in that state without it",
        };
        return format!("no effect here: {why}");
    }
    let (what, mech) = match (u, v, &e.guest) {
        (Unknown::OverloadHolder, ..) => (
            match e.pair {
                Some(c) => format!("two always-runnable tasks pinned to CPU {c} hold rd->overloaded"),
                None => "nothing pinned holds rd->overloaded".into(),
            },
            "background::Profile::with_pinned_pair",
        ),
        (Unknown::StartOverloaded, Value::SetClear(on), _) => (
            format!("rd->overloaded is {} as the window opens", if *on { "set" } else { "clear" }),
            "linux::unknowns::StartState",
        ),
        (Unknown::StartAvgIdle, Value::TimeAtCpus { ns, cpus }, _) => (
            format!("rq->avg_idle of CPU {} is {} as the window opens", format_cpus(cpus), format_time(*ns)),
            "linux::unknowns::StartState",
        ),
        (Unknown::NewidleCost, Value::TimeAtLevel { ns, .. }, _) => {
            let at: Vec<String> =
                e.start.max_newidle_lb_cost.iter().map(|&(c, l, _)| format!("CPU {c} level {l}")).collect();
            (
                format!("max_newidle_lb_cost of {} is {} as the window opens", at.join(", "), format_time(*ns)),
                "linux::unknowns::StartState",
            )
        }
        (Unknown::CgroupDepth | Unknown::CgroupLeaves, ..) => {
            let (d, l) = e.task_groups.unwrap_or((0, 1));
            (
                format!(
                    "the workload's user tasks sit {d} task-group levels below the root; {l} cfs_rqs with load per CPU"
                ),
                "linux::KernelConfig::set_task_groups",
            )
        }
        (Unknown::BackgroundIntensity, ..) => (
            format!("the background's sources run at {}% of their measured rates", e.intensity.unwrap_or(100)),
            "background::Profile::with_intensity",
        ),
        (Unknown::GuestIdleMode, _, Some(g)) => (
            match g {
                GuestIdle::Hlt { .. } | GuestIdle::HostHaltPoll { .. } => {
                    "idle vCPUs halt in HLT (no cpuidle-haltpoll)".into()
                }
                GuestIdle::GuestHaltPoll { .. } => "the guest runs cpuidle-haltpoll (host polling off)".into(),
                GuestIdle::Mwait { wake } => format!("idle vCPUs wait in MWAIT (polling); a wake costs {}", lat(wake)),
            },
            "hw::Machine::set_guest_idle",
        ),
        (Unknown::GuestHaltPollNs, _, Some(GuestIdle::GuestHaltPoll { params, .. })) => (
            format!("the guest polls up to {} before HLT", format_time(u64::from(params.guest_halt_poll_ns))),
            "hw::Machine::set_guest_idle",
        ),
        (Unknown::GuestHaltPollNs, ..) => ("the guest never polls before HLT".into(), "hw::Machine::set_guest_idle"),
        (Unknown::HostHaltPollNs, _, Some(GuestIdle::HostHaltPoll { params, .. })) => (
            format!(
                "the host polls a halted vCPU up to {} (a polled wake costs {})",
                format_time(u64::from(params.halt_poll_ns)),
                lat(&params.polled_wake)
            ),
            "hw::Machine::set_guest_idle, hw::kvm::HostHaltPoll",
        ),
        (Unknown::HostHaltPollNs, ..) => ("the host does not poll".into(), "hw::Machine::set_guest_idle"),
        (
            Unknown::HltWake,
            _,
            Some(
                GuestIdle::Hlt { wake } | GuestIdle::HostHaltPoll { wake, .. } | GuestIdle::GuestHaltPoll { wake, .. },
            ),
        ) => (format!("a halted vCPU's blocked wake costs {}", lat(wake)), "hw::Machine::set_guest_idle"),
        _ => ("set".into(), "crate::unknowns"),
    };
    format!("{what} ({mech})")
}

/// Put a spec's unknowns into machine `m` and configuration `cfg` through the mechanisms' own
/// APIs; returns what each did. Nothing set: nothing changes.
pub fn apply(set: &[(String, String)], m: &mut Machine, cfg: &mut KernelConfig) -> Result<Vec<Applied>, String> {
    if set.is_empty() {
        return Ok(Vec::new());
    }
    let (e, applied) = resolve(set, m, &cfg.background)?;
    if let Some(cpu) = e.pair {
        cfg.background = std::mem::take(&mut cfg.background).with_pinned_pair(cpu);
    }
    if let Some(p) = e.intensity {
        cfg.background = std::mem::take(&mut cfg.background).with_intensity(p)?;
    }
    if let Some((depth, leaves)) = e.task_groups {
        cfg.set_task_groups(depth, leaves)?;
    }
    if e.start.overloaded.is_some() {
        cfg.start.overloaded = e.start.overloaded;
    }
    cfg.start.avg_idle.extend(e.start.avg_idle.iter().copied());
    cfg.start.max_newidle_lb_cost.extend(e.start.max_newidle_lb_cost.iter().copied());
    let guest = [Unknown::GuestIdleMode, Unknown::GuestHaltPollNs, Unknown::HostHaltPollNs, Unknown::HltWake];
    if let (Some(g), true) = (e.guest, set.iter().any(|(n, _)| guest.iter().any(|u| u.name() == n))) {
        m.set_guest_idle(g)?;
    }
    Ok(applied)
}

/// An unknown an experiment's answer depends on, and the values a band takes of it: what
/// `reproduce --band` runs over and what a calibration may search.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Axis {
    pub unknown: Unknown,
    pub domain: Domain,
}

/// The values of an [`Axis`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Domain {
    /// These values (an enumeration), each a complete value.
    Values(Vec<String>),
    /// The interval between two sourced ends, complete values of one numeric kind.
    Interval { lo: String, hi: String },
}

impl Axis {
    /// The row's own design, with `at` (the CPU part of a value: `16`, `16/NUMA`; empty for
    /// none) appended to each value after an `@` (not to `none`).
    pub fn of(u: Unknown, at: &str) -> Result<Axis, String> {
        let with = |v: &str| if at.is_empty() || v == "none" { v.to_string() } else { format!("{v}@{at}") };
        let domain = match u.info().design {
            Design::Values(vs) => Domain::Values(vs.iter().map(|v| with(v)).collect()),
            Design::Interval(lo, hi) => Domain::Interval { lo: with(lo), hi: with(hi) },
        };
        Axis::new(u, domain)
    }

    /// An axis of `u` over `domain`, its values checked against the grammar (canonical).
    pub fn new(u: Unknown, domain: Domain) -> Result<Axis, String> {
        let canon = |v: &str| Value::parse(u, v).map(|x| x.text());
        let domain = match domain {
            Domain::Values(vs) if vs.is_empty() => return Err(format!("unknown {}: no values", u.name())),
            Domain::Values(vs) => Domain::Values(vs.iter().map(|v| canon(v)).collect::<Result<_, _>>()?),
            Domain::Interval { lo, hi } => {
                let (a, b) = (Value::parse(u, &lo)?, Value::parse(u, &hi)?);
                if Value::lerp(&a, &b, 0, 1).is_none() {
                    return Err(format!(
                        "unknown {}: an interval needs two numeric values ({lo} .. {hi}); list an enumeration's values",
                        u.name()
                    ));
                }
                Domain::Interval { lo: a.text(), hi: b.text() }
            }
        };
        Ok(Axis { unknown: u, domain })
    }

    /// The values of the default grid: every value of an enumeration; an interval's two ends
    /// and its midpoint (duplicates removed).
    pub fn grid(&self) -> Vec<String> {
        match &self.domain {
            Domain::Values(vs) => vs.clone(),
            Domain::Interval { lo, hi } => {
                let mut v = vec![lo.clone(), self.at(1, 2), hi.clone()];
                v.dedup();
                v
            }
        }
    }

    /// The value at `num/den` of the axis: in an interval, that fraction of the way from its
    /// low end; in an enumeration, value number `floor(num * len / den)`.
    pub fn at(&self, num: u64, den: u64) -> String {
        match &self.domain {
            Domain::Values(vs) => {
                let i = (num.saturating_mul(vs.len() as u64) / den.max(1)) as usize;
                vs[i.min(vs.len() - 1)].clone()
            }
            Domain::Interval { lo, hi } => {
                let (a, b) = (Value::parse(self.unknown, lo), Value::parse(self.unknown, hi));
                match (a, b) {
                    (Ok(a), Ok(b)) => Value::lerp(&a, &b, num, den).map_or_else(|| lo.clone(), |v| v.text()),
                    _ => lo.clone(),
                }
            }
        }
    }

    /// The axis as text: `name: v1 | v2 | ...` or `name: lo .. hi`.
    pub fn describe(&self) -> String {
        match &self.domain {
            Domain::Values(vs) => format!("{}: {}", self.unknown.name(), vs.join(" | ")),
            Domain::Interval { lo, hi } => format!("{}: {lo} .. {hi}", self.unknown.name()),
        }
    }
}

/// `schedsim list --unknowns`: the table, one block per unknown.
pub fn table_text() -> String {
    let mut o = String::from(
        "Named unknowns (--unknown NAME=VALUE on run, compare, reproduce, explore; `unknowns = { NAME = \"VALUE\" }` \
         in scenario, grid and experiment files; docs/unknowns.md):\n",
    );
    for u in UNKNOWNS {
        let design = match u.design {
            Design::Values(v) => v.join(" | "),
            Design::Interval(lo, hi) => format!("{lo} .. {hi} (ends and midpoint)"),
        };
        o.push_str(&format!(
            "\n  {}\n    values:    {}\n    mechanism: {}\n    range:     {}\n    default:   {}\n    band:      {design}\n    collapse:  {}\n",
            u.name, u.grammar, u.mechanism, u.range, u.default, u.collapse
        ));
    }
    o
}

/// The table as JSON (`list --json`, `list --unknowns --json`).
pub fn table_json() -> serde_json::Value {
    serde_json::Value::Array(
        UNKNOWNS
            .iter()
            .map(|u| {
                let band = match u.design {
                    Design::Values(v) => serde_json::json!({ "values": v }),
                    Design::Interval(lo, hi) => serde_json::json!({ "lo": lo, "hi": hi }),
                };
                serde_json::json!({
                    "name": u.name,
                    "grammar": u.grammar,
                    "mechanism": u.mechanism,
                    "range": u.range,
                    "default": u.default,
                    "collapse": u.collapse,
                    "band": band,
                })
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_parse_and_print_canonically() {
        for (t, ns) in [("0ns", 0), ("50us", 50_000), ("1.5us", 1_500), ("1ms", 1_000_000), ("2s", 2_000_000_000)] {
            assert_eq!(parse_time(t), Some(ns), "{t}");
        }
        assert_eq!(format_time(1_500), "1500ns");
        assert_eq!(format_time(50_000), "50us");
        assert_eq!(format_time(1_000_000), "1ms");
        for bad in ["", "5", "us", "1.us", "1.0005ns", "-1us", "1 ms", "1e3ns", "1.2.3us"] {
            assert_eq!(parse_time(bad), None, "{bad}");
        }
        assert_eq!(parse_time("0.5ns"), None, "below a nanosecond");
        assert_eq!(parse_time("1.0ns"), Some(1));
    }

    #[test]
    fn values_keep_their_canonical_form() {
        let mut set = Vec::new();
        set_in(&mut set, "background-intensity=250", "--unknown").unwrap();
        set_in(&mut set, "start-avg-idle=0.05ms@17,16", "--unknown").unwrap();
        set_in(&mut set, "overload-holder=same-llc@16", "--unknown").unwrap();
        set_in(&mut set, "newidle-cost=5000ns@16/numa", "--unknown").unwrap();
        set_in(&mut set, "hlt-wake=11us-15000ns", "--unknown").unwrap();
        let want = [
            ("overload-holder", "same-llc@16"),
            ("start-avg-idle", "50us@16-17"),
            ("newidle-cost", "5us@16/NUMA"),
            ("hlt-wake", "11us-15us"),
            ("background-intensity", "250%"),
        ];
        let got: Vec<(&str, &str)> = set.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
        assert_eq!(got, want, "table order, canonical values");
        set_in(&mut set, "overload-holder=none", "--unknown").unwrap();
        assert_eq!(set[0], ("overload-holder".to_string(), "none".to_string()), "a later value replaces");
        for (bad, want) in [
            ("nosuch=1", "no unknown named 'nosuch'"),
            ("overload-holder", "expected NAME=VALUE"),
            ("overload-holder=same-socket@16", "expected none | PLACEMENT@CPU"),
            ("start-avg-idle=50us", "expected TIME@CPULIST"),
            ("newidle-cost=5us@16", "expected TIME@CPULIST/LEVEL"),
            ("background-intensity=0%", "expected 1% to 10000%"),
            ("guest-idle=host-haltpoll", "guest-idle=hlt with host-halt-poll-ns"),
            ("hlt-wake=15us-11us", "low end is above its high end"),
            ("start-avg-idle=2s@16", "at most 1s"),
        ] {
            let e = set_in(&mut set, bad, "--unknown").unwrap_err();
            assert!(e.contains(want), "{bad}: {e}");
        }
    }

    #[test]
    fn axes_give_the_ends_and_the_midpoint() {
        let a = Axis::of(Unknown::StartAvgIdle, "16").unwrap();
        assert_eq!(a.grid(), ["0ns@16", "500us@16", "1ms@16"]);
        let w = Axis::of(Unknown::HltWake, "").unwrap();
        assert_eq!(w.grid(), ["1500ns-2500ns", "6250ns-8750ns", "11us-15us"]);
        let h = Axis::of(Unknown::OverloadHolder, "16").unwrap();
        assert_eq!(h.grid()[..2], ["none".to_string(), "same-core@16".to_string()]);
        assert_eq!(h.at(0, 5), "none");
        assert_eq!(h.at(4, 5), "other-node@16");
        assert_eq!(Axis::of(Unknown::BackgroundIntensity, "").unwrap().at(1, 4), "171%");
        assert!(Axis::new(Unknown::OverloadHolder, Domain::Interval { lo: "none".into(), hi: "17".into() }).is_err());
    }

    #[test]
    fn every_row_is_complete_and_its_design_parses() {
        for (i, u) in UNKNOWNS.iter().enumerate() {
            assert_eq!(u.unknown as usize, i);
            for s in [u.mechanism, u.grammar, u.range, u.default, u.collapse] {
                assert!(s.len() > 10, "{}", u.name);
            }
            assert!(u.range.contains("docs/unknowns.md §"), "{}: the range cites its source", u.name);
            let at = match u.kind {
                Kind::Holder | Kind::TimeAtCpus => "16",
                Kind::TimeAtLevel => "16/0",
                _ => "",
            };
            let a = Axis::of(u.unknown, at).unwrap_or_else(|e| panic!("{}: {e}", u.name));
            assert!(a.grid().len() >= 2, "{}", u.name);
        }
    }
}
