// The mechanisms behind issue 31's named unknowns (docs/unknowns.md): each unknown, set on the
// command line (`--unknown NAME=VALUE`, read by `schedsim run`'s own parser), changes the
// modelled kernel's behaviour through the kernel's own path, and its default changes nothing.
// One test per mechanism, each failing without it.

mod support;

use schedsim::background::pinned::Placement;
use schedsim::cli::parse_run_line;
use schedsim::hw::kvm::{GuestIdle, HostHaltPoll};
use schedsim::hw::{HaltpollParams, Machine};
use schedsim::linux::kernel::sched::fair::CpuIdleType;
use schedsim::linux::kernel::sched::stats::{idx, show_schedstat, SchedstatVersion};
use schedsim::linux::unknowns::StartState;
use schedsim::linux::{Kernel, KernelConfig};
use schedsim::run::{build, build_with, RunWorld};
use schedsim::sim::{NSEC_PER_MSEC, NSEC_PER_SEC};
use schedsim::spec::RunSpec;
use support::*;

/// `s` with `--unknown U` for each `U` added to its printed command line, read back by the
/// command line's own parser.
fn with(s: &RunSpec, unknowns: &[&str]) -> RunSpec {
    let mut words = s.to_args();
    for u in unknowns {
        words.push("--unknown".into());
        words.push(u.to_string());
    }
    let back = parse_run_line(&words).unwrap_or_else(|e| panic!("{e}: {words:?}"));
    assert_eq!(back.unknowns.len(), unknowns.len(), "{words:?}");
    back
}

/// Build and run `s` (its unknowns applied by `run::build`).
fn run(s: &RunSpec) -> RunWorld {
    let mut k = build(s).unwrap_or_else(|e| panic!("{e}"));
    k.run(s.limit_ns);
    k
}

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
    let quiet = run(&s);
    assert_eq!(quiet.stats.overloaded_ns, 0);
    assert_eq!(quiet.stats.newidle_balances, 0, "rd->overloaded clear: every newidle pass is gated");
    assert!(quiet.stats.newidle_calls > 1000);
    let k = run(&with(&s, &["overload-holder=same-llc@16"]));
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
    // The same pair through the API, and `none` is the quiet machine.
    let api = run_with(&s, pair(Placement::SameLlc));
    assert_eq!(ipistorm_of(&api).total_ns(), w.total_ns());
    assert_eq!(ipistorm_of(&run(&with(&s, &["overload-holder=none"]))).total_ns(), ipistorm_of(&quiet).total_ns());
    assert_eq!(ipistorm_of(&run(&with(&s, &["overload-holder=17"]))).total_ns(), w.total_ns(), "CPU 17 by number");
}

#[test]
fn the_start_state_gates_cpu16s_walks_or_stops_them_below_the_root() {
    // CPU16 in POLL between calls (its walks follow POLL wakes): v6.10's menu would promote
    // its short idle periods to C1, so C1 is off.
    let mut s = ipistorm16(2000);
    s.idle_states.push(("C1".into(), false));
    // avg_idle below the lowest domain's cost: gated although rd->overloaded is held.
    let k = run(&with(&s, &["overload-holder=same-llc@16", "start-avg-idle=1us@16", "newidle-cost=5us@16/SMT"]));
    assert!(k.stats.newidle_calls > 500);
    // (A wakeup onto CPU16 may average a long idle period into avg_idle: a few walks.)
    assert!(k.stats.newidle_balances < k.stats.newidle_calls / 50, "{} walks", k.stats.newidle_balances);
    // A NUMA-level cost at avg_idle (1 ms, the boot value): the walk stops below the root.
    let root = 3;
    let k = run(&with(&s, &["overload-holder=same-llc@16", "newidle-cost=1ms@16/NUMA"]));
    assert_eq!(k.sd.domains(16)[root].name, "NUMA");
    assert!(newly(&k, 16, 0) > 500, "the lower domains are walked");
    assert_eq!(newly(&k, 16, root), 0, "the root domain is not");
}

#[test]
fn a_transient_overload_is_cleared_by_cpu16s_root_walk_unless_its_walk_stops_below_it() {
    let s = ipistorm16(2000);
    // Set as the window opens, nothing holding it: CPU16's first newidle pass (the storm's
    // first call) walks up to the root domain, finds no CPU with two tasks, and clears it.
    let k = run(&with(&s, &["start-overloaded=set"]));
    let first = ipistorm_of(&k).first_call_ns.unwrap();
    assert!(
        k.stats.overloaded_ns >= first && k.stats.overloaded_ns < first + 100_000,
        "{} ns, first {first}",
        k.stats.overloaded_ns
    );
    assert_eq!(k.stats.newidle_balances, 1);
    // The same with CPU16's walk stopping below the root: CPU16 never clears the flag it
    // reads and walks on every pass, until another CPU's newidle pass (here CPU0, after a
    // wakeup) reaches the root domain and clears it.
    let k = run(&with(&s, &["start-overloaded=set", "newidle-cost=1ms@16/3"]));
    assert!(
        k.stats.overloaded_ns > first + 200_000,
        "held {} ns past the first call at {first}",
        k.stats.overloaded_ns
    );
    assert!(k.stats.newidle_balances > 20, "{} walks", k.stats.newidle_balances);
    assert_eq!(newly(&k, 16, 3), 0);
    assert!((0..256).any(|c| c != 16 && newly(&k, c, k.sd.domains(c).len() - 1) > 0), "someone else cleared it");
    // `clear` at the start: nothing walks.
    assert_eq!(run(&with(&s, &["start-overloaded=clear"])).stats.newidle_balances, 0);
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
    let switches = |pct: u32| run(&with(&s, &[&format!("background-intensity={pct}%")])).stats.context_switches;
    let (one, four) = (switches(100), switches(400));
    assert!(four > 3 * one && four < 5 * one, "100%: {one} switches, 400%: {four}");
}

/// ipistorm CPU0 -> CPU2 on the 32-vCPU guest, 2000 calls, with the guest unknowns given;
/// returns the mean call time (ns) and the calls notified by polling.
fn guest_ipistorm(unknowns: &[&str]) -> (u64, u64) {
    let s = ipistorm_spec("icx-vm-32", "v6.10", "", &["numipi=2000", "single=1", "cpulist=0", "offset=2"], None, false);
    let k = run(&with(&s, unknowns));
    let w = ipistorm_of(&k);
    assert_eq!(w.calls(), 2000);
    (w.total_ns() / w.calls(), w.calls_polling)
}

/// The same through the machine's own API.
fn guest_ipistorm_api(mode: GuestIdle) -> u64 {
    let s = ipistorm_spec("icx-vm-32", "v6.10", "", &["numipi=2000", "single=1", "cpulist=0", "offset=2"], None, false);
    let w = run_with(&s, |m, _| m.set_guest_idle(mode));
    let w = ipistorm_of(&w);
    w.total_ns() / w.calls()
}

#[test]
fn the_guests_idle_mode_decides_what_waking_an_idle_vcpu_costs() {
    let preset = schedsim::hw::preset("icx-vm-32").unwrap().idle_states[1].wake;
    let (hlt, hlt_polls) = guest_ipistorm(&["guest-idle=hlt"]);
    assert_eq!(hlt, guest_ipistorm_api(GuestIdle::Hlt { wake: preset }));
    // Host halt-polling: the target's halts between calls are short, its window grows to
    // cover them, and each wake is a VM entry instead of a blocked vCPU's wakeup.
    let (host, _) = guest_ipistorm(&["guest-idle=hlt", "host-halt-poll-ns=200us"]);
    assert!(host + 800 < hlt, "host polling {host} ns per call, plain HLT {hlt}");
    assert_eq!(host, guest_ipistorm_api(GuestIdle::HostHaltPoll { params: HostHaltPoll::X86_DEFAULT, wake: preset }));
    // With host polling off (halt_poll_ns = 0) it is plain HLT again; and a guest running
    // cpuidle-haltpoll (the preset) turns the host's polling off.
    assert_eq!(guest_ipistorm(&["guest-idle=hlt", "host-halt-poll-ns=0ns"]).0, hlt);
    assert_eq!(guest_ipistorm(&["host-halt-poll-ns=200us"]), guest_ipistorm(&[]));
    // A slower blocked wake (this machine's measured halted-vCPU wake) costs every call more.
    let (slow, _) = guest_ipistorm(&["guest-idle=hlt", "hlt-wake=11us-15us"]);
    assert!(slow > hlt + 8_000, "{slow} vs {hlt}");
    // Guest polling: the target polls, most calls need no IPI at all.
    let (mwait, _) = guest_ipistorm(&["guest-idle=mwait"]);
    let (_, guest_polls) = guest_ipistorm(&["guest-idle=guest-haltpoll", "guest-halt-poll-ns=200us"]);
    assert_eq!(hlt_polls, 0);
    assert!(guest_polls > 500, "guest haltpoll {guest_polls}");
    // MWAIT: under v6.10's menu the target takes the MWAIT state, never leaves its idle loop
    // (a call is handled in its interrupt), and each next call lands while it passes through
    // the governor with POLL clear, so nearly every call is a real IPI; but the MWAIT wake
    // (100-300 ns) makes a call cheaper than a halted vCPU's.
    assert!(mwait * 3 < hlt * 2, "mwait {mwait} ns per call, plain HLT {hlt}");
    // The guest's own poll window: a governor that never polls halts at once, as plain HLT.
    assert_eq!(guest_ipistorm(&["guest-halt-poll-ns=0ns"]), (hlt, 0));
    // The preset itself is the guest-haltpoll mode with the kernel's defaults.
    assert_eq!(
        guest_ipistorm(&[]).0,
        guest_ipistorm_api(GuestIdle::GuestHaltPoll { params: HaltpollParams::default(), wake: preset })
    );
}

#[test]
fn unknowns_that_do_not_apply_are_errors_or_notes() {
    let err = |s: &RunSpec, u: &str| build(&with(s, &[u])).err().unwrap_or_else(|| panic!("{u} builds"));
    let epyc = ipistorm16(10);
    assert!(err(&epyc, "overload-holder=300").contains("CPU 300 is not on machine epyc-7763-2s (CPUs 0-255)"));
    assert!(err(&epyc, "start-avg-idle=1us@16,300").contains("CPU 300 is not on machine"));
    assert!(err(&epyc, "newidle-cost=1us@16/9").contains("has domain levels 0 (SMT), 1 (MC), 2 (PKG), 3 (NUMA)"));
    assert!(err(&epyc, "newidle-cost=1us@16/NODE").contains("has domain levels"));
    assert!(err(&epyc, "guest-idle=hlt").contains("machine epyc-7763-2s is not a KVM guest"));
    let mut intel = epyc.clone();
    intel.machine = "intel-240-2s".into();
    intel.idle_states.clear();
    assert!(err(&intel, "overload-holder=same-node@16").contains("has no same-node CPU for CPU 16"));
    // A value a v6.10 machine cannot be in (StartState::validate): above the avg_idle cap.
    let e = build(&with(&epyc, &["start-avg-idle=1001us@16"])).err().expect("above the cap");
    assert!(e.contains("capped at 2 * max_idle_balance_cost"), "{e}");
    // One that changes nothing here (no background to scale) is a note on the command line,
    // and the run is the plain one.
    let scaled = with(&epyc, &["background-intensity=250%"]);
    let notes = schedsim::run::spec_notes(&scaled);
    assert!(notes.iter().any(|n| n.contains("background-intensity=250%: no effect here")), "{notes:?}");
    assert_eq!(run(&scaled).actions, run(&epyc).actions);
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

/// The upper end of `newidle-cost` in the ipistorm bands is the model's own walk of CPU16's
/// NUMA domain (docs/unknowns.md §2: no published figure for machines of this size): what
/// `update_newidle_cost()` leaves there after a run in which CPU16 walks on every pass. If the
/// model's walk moves (a cost changes), the constants must follow.
#[test]
fn the_bands_newidle_cost_ends_are_the_models_own_walk() {
    for (machine, off, walk) in [
        ("epyc-7763-2s", &["C2"][..], schedsim::experiments::ipistorm::NUMA_WALK_NS),
        ("intel-240-2s", &["C1E", "C6"][..], schedsim::experiments::ipistorm_intel::NUMA_WALK_NS),
    ] {
        let mut s =
            ipistorm_spec(machine, "v6.10", "", &["numipi=20000", "single=1", "offset=8", "cpulist=8"], None, false);
        s.idle_states = off.iter().map(|n| (n.to_string(), false)).collect();
        let k = run(&with(&s, &["overload-holder=same-llc@16"]));
        let root = k.sd.domains(16).last().unwrap();
        assert_eq!(root.name, "NUMA");
        let got = root.max_newidle_lb_cost;
        assert!(
            got * 10 > walk * 9 && got * 10 < walk * 11,
            "{machine}: the model walks {got} ns, the band says {walk}"
        );
    }
}

/// `run` prints the per-domain newidle counters as /proc/schedstat has them for the busiest
/// CPUs (or `--schedstat CPULIST`), and `run --json` carries the numbers: with the pinned pair
/// CPU16 walks every domain on each pass, and its counters say so.
#[test]
fn run_prints_the_schedstat_counters_of_the_cpus_of_interest() {
    let bin = env!("CARGO_BIN_EXE_schedsim");
    let base = [
        "run",
        "--workload",
        "ipistorm",
        "numipi=2000",
        "single=1",
        "offset=8",
        "cpulist=8",
        "--cstate",
        "C2=off",
        // The walks run when a call finds CPU16 in POLL: v6.10's menu promotes its short idle
        // periods to C1 (exit latency within the prediction), so C1 is off too.
        "--cstate",
        "C1=off",
        "--background",
        "none",
        "--unknown",
        "overload-holder=same-llc@16",
        "--quiet",
    ];
    let out = std::process::Command::new(bin).args(base).args(["--schedstat", "16", "--json"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let cpus = doc["schedstat"]["cpus"].as_array().unwrap();
    assert_eq!(cpus.len(), 1);
    assert_eq!(cpus[0]["cpu"], 16);
    let walks = doc["counters"]["newidle_balances"].as_u64().unwrap();
    assert!(walks > 500, "{walks}");
    let domains = cpus[0]["domains"].as_array().unwrap();
    let names: Vec<&str> = domains.iter().map(|d| d["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["SMT", "MC", "PKG", "NUMA"]);
    for d in domains {
        let n = d["newly_idle"]["lb_count"].as_u64().unwrap();
        assert!(n + 5 >= walks && n <= walks + 5, "{}: {n} newidle balances, {walks} walks", d["name"]);
        // Only pinned tasks to pull: every one balanced.
        assert_eq!(d["newly_idle"]["lb_balanced"], d["newly_idle"]["lb_count"]);
    }
    assert_eq!(domains[1]["span"], "16-23,144-151");
    // The text: the table for the busiest CPUs (those of the phase table), and the kernel's lines.
    let out = std::process::Command::new(bin).args(base).output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    let table = text.split(" Newidle balancing per domain").nth(1).expect("the schedstat section");
    assert!(table.contains("version 16\ntimestamp "), "{table}");
    assert!(table.lines().any(|l| l.starts_with("cpu16 0 0 0 0 0 0 0 0 0")), "{table}");
    let row16 = table.lines().find(|l| l.starts_with("16 ") && l.contains("NUMA")).expect("CPU16's NUMA row");
    let fields: Vec<&str> = row16.split_whitespace().collect();
    assert_eq!(fields[4], cpus[0]["domains"][3]["newly_idle"]["lb_count"].to_string(), "{row16}");
}

/// nanosleep with `procs` sleepers on smp-4 (no background) for 20 ms, with the unknowns given.
fn nanosleep(procs: u32, unknowns: &[&str]) -> RunWorld {
    let mut s = RunSpec::new("nanosleep");
    s.machine = "smp-4".into();
    s.background = Some("none".into());
    let p = format!("procs={procs}");
    s.params = schedsim::workload::params::Params::parse([p.as_str(), "duration_ms=20"], "test").unwrap();
    s.limit_ns = 20 * NSEC_PER_MSEC;
    run(&with(&s, unknowns))
}

fn nanosleep_loops(k: &RunWorld) -> u64 {
    match &k.progs.workload {
        schedsim::workload::Workload::Nanosleep(w) => w.loops,
        other => panic!("not a nanosleep run: {other:?}"),
    }
}

#[test]
fn cgroup_depth_puts_the_workloads_user_tasks_below_the_root_and_walks_their_levels() {
    let flat = nanosleep(1, &[]);
    let deep = nanosleep(1, &["cgroup-depth=3"]);
    assert_eq!((flat.cfg.cgroup_depth, flat.cfg.nr_leaf_cfs_rqs), (0, 1));
    // The chain of a depth-3 task holds four cfs_rqs on each CPU's leaf list.
    assert_eq!((deep.cfg.cgroup_depth, deep.cfg.nr_leaf_cfs_rqs), (3, 4));
    let w = match &deep.progs.workload {
        schedsim::workload::Workload::Nanosleep(w) => w,
        _ => unreachable!(),
    };
    assert!(w.tasks.iter().all(|&t| deep.ents[t as usize].depth == 3));
    // Each wakeup enqueues the sleeper three levels deeper, before it runs.
    let lat = |k: &RunWorld| k.stats.wakeup_latency.mean();
    let extra = (3 * deep.costs.enqueue_level) as f64;
    assert!(deep.stats.wakeup_latency.len() > 100);
    assert!(lat(&deep) >= lat(&flat) + extra / 2.0, "depth 3: {} ns, depth 0: {} ns", lat(&deep), lat(&flat));
    // A value that changes nothing is a note, and the run the plain one.
    let notes = schedsim::run::spec_notes(&with(&nanosleep_spec_for_notes(), &["cgroup-depth=0"]));
    assert!(notes.iter().any(|n| n.contains("cgroup-depth=0: no effect here")), "{notes:?}");
    assert_eq!(nanosleep_loops(&nanosleep(1, &["cgroup-depth=0"])), nanosleep_loops(&flat));
}

fn nanosleep_spec_for_notes() -> RunSpec {
    let mut s = RunSpec::new("nanosleep");
    s.machine = "smp-4".into();
    s.background = Some("none".into());
    s
}

#[test]
fn cgroup_leaves_lengthen_every_blocked_load_update() {
    use schedsim::linux::kernel::sched::fair::sched_balance_update_blocked_averages;
    let spec = nanosleep_spec_for_notes();
    let mut flat = build(&with(&spec, &[])).unwrap();
    let mut leafy = build(&with(&spec, &["cgroup-leaves=18"])).unwrap();
    assert_eq!((flat.cfg.nr_leaf_cfs_rqs, leafy.cfg.nr_leaf_cfs_rqs), (1, 18));
    // __update_blocked_fair() walks 17 more cfs_rqs on every CPU.
    let extra = 17 * leafy.costs.blocked_leaf;
    assert!(extra > 0);
    for cpu in 0..4 {
        let (a, b) = (
            sched_balance_update_blocked_averages(&mut flat.k, cpu, cpu),
            sched_balance_update_blocked_averages(&mut leafy.k, cpu, cpu),
        );
        assert_eq!(b, a + extra, "CPU {cpu}");
    }
    // Below the chain of the workload's tasks it changes nothing: a note.
    let s = with(&nanosleep_spec_for_notes(), &["cgroup-depth=2", "cgroup-leaves=2"]);
    let notes = schedsim::run::spec_notes(&s);
    assert!(notes.iter().any(|n| n.contains("cgroup-leaves=2: no effect here")), "{notes:?}");
    let mut v = Vec::new();
    let e = schedsim::unknowns::set_in(&mut v, "cgroup-leaves=0", "--unknown").unwrap_err();
    assert!(e.contains("expected 1 to 10000"), "{e}");
}
