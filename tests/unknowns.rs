// The mechanisms behind issue 31's named unknowns (docs/unknowns.md): each knob, set, changes
// the modelled kernel's behaviour through the kernel's own path, and its default changes
// nothing. One test per mechanism, each failing without it.

mod support;

use schedsim::background::pinned::Placement;
use schedsim::hw::kvm::{GuestIdle, HostHaltPoll};
use schedsim::hw::{HaltpollParams, LatencyNs, Machine};
use schedsim::linux::kernel::sched::fair::CpuIdleType;
use schedsim::linux::kernel::sched::stats::{idx, show_schedstat, SchedstatVersion};
use schedsim::linux::unknowns::StartState;
use schedsim::linux::{Kernel, KernelConfig};
use schedsim::run::{build_with, RunWorld};
use schedsim::sim::{NSEC_PER_MSEC, NSEC_PER_SEC};
use schedsim::spec::RunSpec;
use support::*;

/// ipistorm CPU8 -> CPU16 on the EPYC, C2 off, no background, `numipi` calls.
fn ipistorm16(numipi: u32) -> RunSpec {
    let n = format!("numipi={numipi}");
    ipistorm_spec("epyc-7763-2s", "v6.10", "", &[&n, "single=1", "offset=8", "cpulist=8"], Some(false), false)
}

fn run_with(s: &RunSpec, set: impl FnOnce(&mut Machine, &mut KernelConfig) -> Result<(), String>) -> RunWorld {
    let mut k = build_with(s, set).expect("valid spec");
    k.run(s.limit_ns);
    k
}

/// Adds the pinned pair at `place` relative to CPU16 (avoiding the sender, CPU8).
fn pair(place: Placement) -> impl FnOnce(&mut Machine, &mut KernelConfig) -> Result<(), String> {
    move |m, cfg| {
        let cpu = place.cpu(&m.topo, 16, &[8]).expect("the EPYC has every placement");
        cfg.background = std::mem::take(&mut cfg.background).with_pinned_pair(cpu);
        Ok(())
    }
}

fn newly(k: &Kernel, cpu: u32, level: usize) -> u32 {
    k.sd.domains(cpu)[level].lb[idx(CpuIdleType::NewlyIdle)].lb_count
}

#[test]
fn placements_name_a_cpu_of_each_class() {
    let m = schedsim::hw::preset("epyc-7763-2s").unwrap();
    let got: Vec<Option<u32>> = [Placement::SameCore, Placement::SameLlc, Placement::SameNode, Placement::OtherNode]
        .iter()
        .map(|p| p.cpu(&m.topo, 16, &[8]))
        .collect();
    assert_eq!(got, [Some(144), Some(17), Some(24), Some(64)]);
    assert_eq!(Placement::SameLlc.cpu(&m.topo, 16, &[17]), Some(18), "avoided CPUs are skipped");
    let small = schedsim::hw::preset("smp-4").unwrap();
    assert_eq!(Placement::SameCore.cpu(&small.topo, 1, &[]), None, "no SMT");
    assert_eq!(Placement::OtherNode.cpu(&small.topo, 1, &[]), None, "one node");
    for name in Placement::NAMES {
        assert_eq!(Placement::parse(name).unwrap().name(), *name);
    }
}

#[test]
fn a_pinned_pair_holds_rd_overloaded_and_cpu16_walks_on_every_pass() {
    let s = ipistorm16(3000);
    let quiet = run_with(&s, |_, _| Ok(()));
    assert_eq!(quiet.stats.overloaded_ns, 0);
    assert_eq!(quiet.stats.newidle_balances, 0, "rd->overloaded clear: every newidle pass is gated");
    assert!(quiet.stats.newidle_calls > 1000);
    let k = run_with(&s, pair(Placement::SameLlc));
    let window = k.now - k.measure_from;
    assert!(k.measure_from > 0, "the pair is background: the machine warms up with it");
    assert_eq!(k.stats.overloaded_ns, window, "held for the whole window");
    assert!(k.stats.newidle_calls > 500);
    assert_eq!(k.stats.newidle_balances, k.stats.newidle_calls, "every pass walks");
    // Each walk reaches CPU16's root domain and finds only pinned tasks to pull.
    let root = k.sd.domains(16).len() - 1;
    let walks = k.stats.newidle_balances as u32;
    assert!(newly(&k, 16, 0) + 5 >= walks && newly(&k, 16, root) + 5 >= walks);
    assert_eq!(k.stats.lb_gained_newidle, 0);
    // The hogs: user tasks bound by their affinity mask to CPU17, both runnable there.
    let hogs: Vec<_> = k.tasks.iter().filter(|t| t.comm.starts_with("hog-")).collect();
    assert_eq!(hogs.len(), 2);
    for t in hogs {
        assert!(t.pinned.is_none() && t.cpu == 17 && t.on_rq);
        assert!((0..256).all(|c| t.cpu_allowed(c) == (c == 17)));
    }
    let w = ipistorm_of(&k);
    assert!(w.total_ns() > ipistorm_of(&quiet).total_ns() * 3 / 2, "the walks slow every call down");
}

#[test]
fn the_start_state_gates_cpu16s_walks_or_stops_them_below_the_root() {
    let s = ipistorm16(2000);
    // avg_idle below the lowest domain's cost: gated although rd->overloaded is held.
    let k = run_with(&s, |m, cfg| {
        pair(Placement::SameLlc)(m, cfg)?;
        cfg.start =
            StartState { avg_idle: vec![(16, 1_000)], max_newidle_lb_cost: vec![(16, 0, 5_000)], overloaded: None };
        Ok(())
    });
    assert!(k.stats.newidle_calls > 500);
    // (A wakeup onto CPU16 may average a long idle period into avg_idle: a few walks.)
    assert!(k.stats.newidle_balances < k.stats.newidle_calls / 50, "{} walks", k.stats.newidle_balances);
    // A NUMA-level cost at avg_idle (1 ms, the boot value): the walk stops below the root.
    let root = 3;
    let k = run_with(&s, |m, cfg| {
        pair(Placement::SameLlc)(m, cfg)?;
        cfg.start = StartState { avg_idle: vec![], max_newidle_lb_cost: vec![(16, root, 1_000_000)], overloaded: None };
        Ok(())
    });
    assert_eq!(k.sd.domains(16)[root].name, "NUMA");
    assert!(newly(&k, 16, 0) > 500, "the lower domains are walked");
    assert_eq!(newly(&k, 16, root), 0, "the root domain is not");
}

#[test]
fn a_transient_overload_is_cleared_by_cpu16s_root_walk_unless_its_walk_stops_below_it() {
    let s = ipistorm16(2000);
    // Set as the window opens, nothing holding it: CPU16's first newidle pass (the storm's
    // first call) walks up to the root domain, finds no CPU with two tasks, and clears it.
    let k = run_with(&s, |_, cfg| {
        cfg.start.overloaded = Some(true);
        Ok(())
    });
    let first = ipistorm_of(&k).first_call_ns.unwrap();
    assert!(k.stats.overloaded_ns >= first && k.stats.overloaded_ns < first + 20_000, "{} ns", k.stats.overloaded_ns);
    assert_eq!(k.stats.newidle_balances, 1);
    // The same with CPU16's walk stopping below the root: CPU16 never clears the flag it
    // reads and walks on every pass, until another CPU's newidle pass (here CPU0, after a
    // wakeup) reaches the root domain and clears it.
    let k = run_with(&s, |_, cfg| {
        cfg.start.overloaded = Some(true);
        cfg.start.max_newidle_lb_cost = vec![(16, 3, 1_000_000)];
        Ok(())
    });
    assert!(
        k.stats.overloaded_ns > first + 200_000,
        "held {} ns past the first call at {first}",
        k.stats.overloaded_ns
    );
    assert!(k.stats.newidle_balances > 20, "{} walks", k.stats.newidle_balances);
    assert_eq!(newly(&k, 16, 3), 0);
    assert!((0..256).any(|c| c != 16 && newly(&k, c, k.sd.domains(c).len() - 1) > 0), "someone else cleared it");
}

#[test]
fn start_states_a_machine_cannot_be_in_are_refused() {
    let s = ipistorm16(10);
    let k = run_with(&s, |_, _| Ok(()));
    let ok =
        StartState { avg_idle: vec![(16, 1_000_000)], max_newidle_lb_cost: vec![(16, 3, 20_000)], overloaded: None };
    assert!(ok.validate(&k.m.topo, &k.sd).is_ok());
    let e =
        StartState { avg_idle: vec![(16, 1_000_001)], ..Default::default() }.validate(&k.m.topo, &k.sd).unwrap_err();
    assert!(e.contains("capped at 2 * max_idle_balance_cost = 1000000 ns"), "{e}");
    let e = StartState { max_newidle_lb_cost: vec![(16, 4, 1)], ..Default::default() }
        .validate(&k.m.topo, &k.sd)
        .unwrap_err();
    assert!(e.contains("levels 0 (SMT), 1 (MC), 2 (PKG), 3 (NUMA)"), "{e}");
    assert!(StartState { avg_idle: vec![(256, 1)], ..Default::default() }.validate(&k.m.topo, &k.sd).is_err());
}

#[test]
fn schedstat_counts_agree_with_the_models_own_counters() {
    // hackbench pulls by newidle balancing, spinners (more tasks than CPUs) by periodic
    // balancing; both on smp-4.
    for (w, p) in [("hackbench", "args=-g 2 -l 50"), ("spinners", "tasks=8")] {
        let mut s = RunSpec::new(w);
        s.machine = "smp-4".into();
        s.background = Some("none".into());
        s.params = schedsim::workload::params::Params::parse([p], "test").unwrap();
        s.limit_ns = 200 * NSEC_PER_MSEC;
        let k = run_with(&s, |_, _| Ok(()));
        let (mut newly_gained, mut other_gained, mut newly_count) = (0u64, 0u64, 0u64);
        for c in 0..4 {
            for d in k.sd.domains(c) {
                for t in [CpuIdleType::NotIdle, CpuIdleType::Idle, CpuIdleType::NewlyIdle] {
                    let lb = d.lb[idx(t)];
                    assert!(lb.lb_balanced + lb.lb_failed <= lb.lb_count, "{w}: {lb:?}");
                    assert!(lb.lb_nobusyg + lb.lb_nobusyq <= lb.lb_balanced && lb.lb_hot_gained <= lb.lb_gained);
                    if t == CpuIdleType::NewlyIdle {
                        newly_gained += u64::from(lb.lb_gained);
                        newly_count += u64::from(lb.lb_count);
                    } else {
                        other_gained += u64::from(lb.lb_gained);
                    }
                }
            }
        }
        assert!(newly_gained + other_gained > 0, "{w} pulled nothing");
        assert_eq!(newly_gained, k.stats.lb_gained_newidle, "{w}");
        assert_eq!(other_gained, k.stats.lb_gained_periodic, "{w}");
        assert!(newly_count >= k.stats.newidle_balances, "{w}");
        // The text: one cpu line and a line per domain, each of 2 + 3 * 8 + 12 fields.
        let text = show_schedstat(&k, &[0, 3], SchedstatVersion::V16);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "version 16");
        assert_eq!(lines.len(), 2 + 2 * (1 + k.sd.domains(0).len()));
        let d0: Vec<u32> = lines[3].split(' ').skip(2).map(|f| f.parse().unwrap()).collect();
        let lb = k.sd.domains(0)[0].lb[idx(CpuIdleType::NewlyIdle)];
        let fields = [
            lb.lb_count,
            lb.lb_balanced,
            lb.lb_failed,
            lb.lb_imbalance,
            lb.lb_gained,
            lb.lb_hot_gained,
            lb.lb_nobusyq,
            lb.lb_nobusyg,
        ];
        assert_eq!(d0[16..24], fields);
    }
}

#[test]
fn background_intensity_scales_how_often_the_sources_run() {
    let mut s = idle_spec("smp-4", "v6.10", "");
    s.background = Some("kvm-guest".into());
    s.limit_ns = 3 * NSEC_PER_SEC;
    let switches = |pct: u32| {
        let k = run_with(&s, |_, cfg| {
            cfg.background = std::mem::take(&mut cfg.background).with_intensity(pct)?;
            Ok(())
        });
        k.stats.context_switches
    };
    let (one, four) = (switches(100), switches(400));
    assert!(four > 3 * one && four < 5 * one, "100%: {one} switches, 400%: {four}");
}

/// ipistorm CPU0 -> CPU2 on the 32-vCPU guest, 2000 calls, in guest idle mode `mode`; returns
/// the mean call time (ns) and the calls notified by polling.
fn guest_ipistorm(mode: Option<GuestIdle>) -> (u64, u64) {
    let s = ipistorm_spec("icx-vm-32", "v6.10", "", &["numipi=2000", "single=1", "cpulist=0", "offset=2"], None, false);
    let k = run_with(&s, |m, _| match mode {
        Some(g) => m.set_guest_idle(g),
        None => Ok(()),
    });
    let w = ipistorm_of(&k);
    assert_eq!(w.calls(), 2000);
    (w.total_ns() / w.calls(), w.calls_polling)
}

#[test]
fn the_guests_idle_mode_decides_what_waking_an_idle_vcpu_costs() {
    let preset = schedsim::hw::preset("icx-vm-32").unwrap().idle_states[1].wake;
    let (hlt, hlt_polls) = guest_ipistorm(Some(GuestIdle::Hlt { wake: preset }));
    // Host halt-polling: the target's halts between calls are short, its window grows to
    // cover them, and each wake is a VM entry instead of a blocked vCPU's wakeup.
    let (host, _) = guest_ipistorm(Some(GuestIdle::HostHaltPoll { params: HostHaltPoll::X86_DEFAULT, wake: preset }));
    assert!(host + 800 < hlt, "host polling {host} ns per call, plain HLT {hlt}");
    // With host polling off (halt_poll_ns = 0) it is plain HLT again.
    let off = HostHaltPoll { halt_poll_ns: 0, ..HostHaltPoll::X86_DEFAULT };
    assert_eq!(guest_ipistorm(Some(GuestIdle::HostHaltPoll { params: off, wake: preset })).0, hlt);
    // A slower blocked wake (this machine's measured halted-vCPU wake) costs every call more.
    let (slow, _) = guest_ipistorm(Some(GuestIdle::Hlt { wake: LatencyNs::new(11_000, 15_000) }));
    assert!(slow > hlt + 8_000, "{slow} vs {hlt}");
    // MWAIT or guest polling: the target polls, most calls need no IPI at all.
    let (_, mwait_polls) = guest_ipistorm(Some(GuestIdle::Mwait { wake: LatencyNs::new(100, 300) }));
    let (_, guest_polls) =
        guest_ipistorm(Some(GuestIdle::GuestHaltPoll { params: HaltpollParams::default(), wake: preset }));
    assert_eq!(hlt_polls, 0);
    assert!(mwait_polls > 500 && guest_polls > 500, "mwait {mwait_polls}, guest haltpoll {guest_polls}");
    // The preset itself is the guest-haltpoll mode with the kernel's defaults.
    assert_eq!(
        guest_ipistorm(None).0,
        guest_ipistorm(Some(GuestIdle::GuestHaltPoll { params: HaltpollParams::default(), wake: preset })).0
    );
}

#[test]
fn bad_unknowns_are_errors_before_boot() {
    let s = ipistorm16(10);
    let e = build_with(&s, |_, cfg| {
        cfg.background = std::mem::take(&mut cfg.background).with_pinned_pair(300);
        Ok(())
    })
    .err()
    .expect("CPU 300 does not exist");
    assert!(e.contains("source hog-a is bound to CPU 300"), "{e}");
    let e = build_with(&s, |_, cfg| {
        cfg.start.max_newidle_lb_cost = vec![(16, 9, 1)];
        Ok(())
    })
    .err()
    .expect("no level 9");
    assert!(e.contains("at domain level 9"), "{e}");
}
