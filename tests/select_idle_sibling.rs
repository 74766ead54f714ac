//! `select_idle_sibling()` / `select_idle_cpu()` on the 32-vCPU guest (16 cores x 2 threads,
//! siblings 2k/2k+1, one LLC): hand-set runqueue states, one call, the CPU it returns
//! (kernel/sched/fair.c @ v6.10).

mod support;

use schedsim::linux::kernel::sched::fair::select_idle_sibling;
use schedsim::linux::kernel::sched::TaskKind;
use schedsim::linux::{Kernel, TaskId};
use schedsim::run::build;
use support::*;

fn guest() -> (schedsim::run::RunWorld, TaskId) {
    let mut k = build(&idle_spec("icx-vm-32", "v6.10", "")).expect("valid spec");
    let p = k.new_task(TaskKind::Workload, "wakee".into(), 0, 120, None);
    (k, p)
}

/// The target CPU 4 does not look idle: a wakee is already queued on it.
fn busy_target(k: &mut Kernel) -> u32 {
    k.cpus[4].rq.ttwu_pending = true;
    schedsim::linux::kernel::sched::group_sums::rq_changed(k, 4);
    4
}

#[test]
fn an_idle_core_is_found_when_the_llc_has_scan_budget() {
    let (mut k, p) = guest();
    let t = busy_target(&mut k);
    let mut cost = 0;
    let cpu = select_idle_sibling(&mut k, 0, p, t, t, &mut cost);
    // has_idle_cores is set (the machine booted idle): the core scan starts at target+1 = 5,
    // whose core (4, 5) is not wholly idle; the next core, (6, 7), is.
    assert_eq!(cpu, 6);
    assert!(cost > 0, "the scan reads runqueues");
}

/// SIS_UTIL: with `nr_idle_scan == 0` the LLC counts as overloaded and `select_idle_cpu()`
/// returns before scanning, even though `has_idle_cores` says an idle core exists. The wakee
/// stays on its target.
#[test]
fn a_zero_sis_util_budget_stops_the_idle_core_scan_too() {
    let (mut k, p) = guest();
    let t = busy_target(&mut k);
    for s in k.llc_shared.iter_mut() {
        s.nr_idle_scan = 0;
        assert!(s.has_idle_cores);
    }
    let mut cost = 0;
    assert_eq!(select_idle_sibling(&mut k, 0, p, t, t, &mut cost), t);
    // NO_SIS_UTIL: no budget at all, the idle core is found again.
    let mut spec = idle_spec("icx-vm-32", "v6.10", "");
    spec.features = vec!["NO_SIS_UTIL".into()];
    let mut k = build(&spec).expect("valid spec");
    let p = k.new_task(TaskKind::Workload, "wakee".into(), 0, 120, None);
    let t = busy_target(&mut k);
    for s in k.llc_shared.iter_mut() {
        s.nr_idle_scan = 0;
    }
    assert_eq!(select_idle_sibling(&mut k, 0, p, t, t, &mut cost), 6);
}

/// Idle CPU `c` takes an interrupt (a timer tick, an IPI): it is in interrupt context.
fn in_irq(k: &mut Kernel, c: usize) {
    k.cpus[c].x.irq_phase = Some(schedsim::linux::engine::Phase::HardIrq);
}

/// A machine with `idle_search_in_idle_loop = false` (the measured 2-vCPU guest,
/// docs/validate-guest.md, "Wakeup placement on the guest"): the search past target and prev
/// (`recent_used_cpu` first, then the LLC scan) passes over idle CPUs in their idle loop and
/// takes one handling an interrupt; an idle prev is taken either way.
#[test]
fn a_guest_search_takes_only_an_idle_vcpu_in_an_interrupt_but_the_prev_check_any() {
    let (mut k, p) = guest();
    let t = busy_target(&mut k);
    k.tasks[p as usize].recent_used_cpu = Some(9);
    let mut cost = 0;
    // Upstream: recent_used_cpu (9, idle) is taken.
    assert_eq!(select_idle_sibling(&mut k, 0, p, t, t, &mut cost), 9);

    let (mut k, p) = guest();
    k.m.idle_search_in_idle_loop = false;
    let t = busy_target(&mut k);
    // Every idle CPU sits in its idle loop: the busy target stays.
    k.tasks[p as usize].recent_used_cpu = Some(9);
    assert_eq!(select_idle_sibling(&mut k, 0, p, t, t, &mut cost), t);
    // CPU 20 takes an interrupt: the scan ends on it.
    in_irq(&mut k, 20);
    k.tasks[p as usize].recent_used_cpu = Some(9);
    assert_eq!(select_idle_sibling(&mut k, 0, p, t, t, &mut cost), 20);
    // The prev check takes an idle prev in its idle loop.
    assert_eq!(select_idle_sibling(&mut k, 0, p, 2, t, &mut cost), 2);
}

/// The shipped guest file says so, and a file without the key keeps the upstream search.
#[test]
fn the_guest_file_restricts_the_idle_search_and_presets_do_not() {
    let root = env!("CARGO_MANIFEST_DIR");
    let m = schedsim::run::machine(&format!("{root}/docs/guest-2vcpu.toml")).expect("the guest file parses");
    assert!(!m.idle_search_in_idle_loop);
    assert!(schedsim::hw::preset("icx-vm-32").expect("preset").idle_search_in_idle_loop);
}
