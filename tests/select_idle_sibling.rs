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

/// A machine with `idle_sibling_search = false` (the measured 2-vCPU guest,
/// docs/validate-guest.md, "Wakeup placement"): once the target and prev checks fail, the
/// target is returned, although `recent_used_cpu` and the LLC scan would both find an idle CPU.
#[test]
fn a_machine_without_the_idle_sibling_search_keeps_a_busy_target() {
    let (mut k, p) = guest();
    let t = busy_target(&mut k);
    k.tasks[p as usize].recent_used_cpu = Some(9);
    let mut cost = 0;
    // Upstream: recent_used_cpu (9, idle) is taken.
    assert_eq!(select_idle_sibling(&mut k, 0, p, t, t, &mut cost), 9);
    let (mut k, p) = guest();
    k.m.idle_sibling_search = false;
    let t = busy_target(&mut k);
    k.tasks[p as usize].recent_used_cpu = Some(9);
    assert_eq!(select_idle_sibling(&mut k, 0, p, t, t, &mut cost), t);
    // The prev check stays: an idle prev is still taken.
    assert_eq!(select_idle_sibling(&mut k, 0, p, 2, t, &mut cost), 2);
}

/// The shipped guest file says so, and a file without the key keeps the upstream search.
#[test]
fn the_guest_file_turns_the_idle_sibling_search_off_and_presets_keep_it() {
    let root = env!("CARGO_MANIFEST_DIR");
    let m = schedsim::run::machine(&format!("{root}/docs/guest-2vcpu.toml")).expect("the guest file parses");
    assert!(!m.idle_sibling_search);
    assert!(schedsim::hw::preset("icx-vm-32").expect("preset").idle_sibling_search);
}
