// f3dd3f674555 "sched: Remove the limitation of WF_ON_CPU on wakelist if wakee cpu is idle"
// (v6.0).
// See: f3dd3f674555
//
// Pins: `ttwu_queue_cond()` (docs/kernel-model.md §2.6): a target outside the waker's LLC
// always gets the wakelist; inside it, with the patch, the wakelist is used when the target is
// idle (`nr_running == 0`) and is not the waker itself, and a busy same-LLC target takes the
// direct remote enqueue (F3). Without the patch a same-LLC target used the wakelist only for
// a wakee still on its CPU (WF_ON_CPU) with at most one task there; an idle same-LLC target
// took the direct path. smp-4 has two LLCs, {0,1} and {2,3}; icx-vm-32 has one.

mod support;

use schedsim::linux::engine::Next;
use schedsim::linux::kernel::sched::core::{activate_task, try_to_wake_up, ttwu_queue_cond, TryToWakeUp};
use schedsim::linux::kernel::sched::fair_class::EnqueueFlags;
use schedsim::linux::kernel::sched::{TASK_RUNNING, WF_ON_CPU, WF_TTWU};
use schedsim::linux::stats::Stats;
use schedsim::linux::{CpuId, Kernel, TaskId};
use schedsim::run::{build, execute};
use support::*;

const WAKER: CpuId = 0;
const SAME_LLC: CpuId = 1;
const OTHER_LLC: CpuId = 2;

fn settled(patches: &str) -> schedsim::run::RunWorld {
    let mut k = build(&idle_spec("smp-4", "v6.10", patches)).expect("valid spec");
    k.trace.enabled = true;
    run_until(&mut k, 10_000_000);
    k
}

/// Make `cpu` busier: one more runnable task queued there.
fn make_busy(k: &mut Kernel, cpu: CpuId) -> TaskId {
    let before = k.cpus[cpu as usize].rq.nr_running;
    let t = sleeper(k, "busy", cpu, Some(cpu));
    k.tasks[t as usize].state = TASK_RUNNING;
    activate_task(k, cpu, t, EnqueueFlags::default());
    assert_eq!(k.cpus[cpu as usize].rq.nr_running, before + 1);
    t
}

#[test]
fn with_the_patch_an_idle_same_llc_target_uses_the_wakelist() {
    let mut k = settled("");
    assert!(ttwu_queue_cond(&k, WAKER, SAME_LLC, WF_TTWU), "idle, same LLC, not the waker");
    assert!(!ttwu_queue_cond(&k, WAKER, WAKER, WF_TTWU), "never the waker's own CPU");
    assert!(ttwu_queue_cond(&k, WAKER, OTHER_LLC, WF_TTWU), "another LLC: always");
    make_busy(&mut k, SAME_LLC);
    make_busy(&mut k, OTHER_LLC);
    assert!(!ttwu_queue_cond(&k, WAKER, SAME_LLC, WF_TTWU), "busy, same LLC: direct");
    assert!(!ttwu_queue_cond(&k, WAKER, SAME_LLC, WF_TTWU | WF_ON_CPU), "busy, same LLC: direct");
    assert!(ttwu_queue_cond(&k, WAKER, OTHER_LLC, WF_TTWU), "another LLC: always, busy or not");
}

#[test]
fn without_the_patch_same_llc_needs_wf_on_cpu() {
    let mut k = settled("-f3dd3f674555");
    assert!(!ttwu_queue_cond(&k, WAKER, SAME_LLC, WF_TTWU), "idle same-LLC target: direct before v6.0");
    assert!(ttwu_queue_cond(&k, WAKER, SAME_LLC, WF_TTWU | WF_ON_CPU), "WF_ON_CPU, nothing running there");
    assert!(ttwu_queue_cond(&k, WAKER, OTHER_LLC, WF_TTWU), "another LLC: always");
    make_busy(&mut k, SAME_LLC);
    assert!(ttwu_queue_cond(&k, WAKER, SAME_LLC, WF_TTWU | WF_ON_CPU), "WF_ON_CPU with one task there");
    assert!(!ttwu_queue_cond(&k, WAKER, SAME_LLC, WF_TTWU));
    make_busy(&mut k, SAME_LLC);
    assert!(!ttwu_queue_cond(&k, WAKER, SAME_LLC, WF_TTWU | WF_ON_CPU), "WF_ON_CPU needs nr_running <= 1");
}

/// The wakeup counters.
fn paths(s: &Stats) -> (u64, u64) {
    (s.wakeups_wakelist_polling + s.wakeups_wakelist_ipi + s.wakeups_wakelist_coalesced, s.wakeups_direct)
}

/// Run `try_to_wake_up()` for `p` to completion on behalf of `waker` (between two actions of
/// the machine). Returns the change of (wakelist, direct) wakeups.
fn wake(k: &mut Kernel, waker: CpuId, p: TaskId) -> (u64, u64) {
    let before = paths(&k.stats);
    let mut s = TryToWakeUp::new(p, 0);
    for _ in 0..16 {
        match try_to_wake_up(k, waker, &mut s) {
            Next::Ret(_) => {
                let after = paths(&k.stats);
                return (after.0 - before.0, after.1 - before.1);
            }
            Next::Cont(_) => {}
            other => panic!("unexpected {other:?} (the target's rq lock is free between actions)"),
        }
    }
    panic!("try_to_wake_up() did not return");
}

/// Wake a sleeper bound to `target` from CPU 0; then let the machine run and check that it ran
/// on `target`. Returns the path counters' change.
fn wake_bound_sleeper(patches: &str, target: CpuId, busy: bool) -> (u64, u64) {
    let mut k = settled(patches);
    if busy {
        make_busy(&mut k, target);
    }
    let p = sleeper(&mut k, "wakee", target, Some(target));
    let d = wake(&mut k, WAKER, p);
    let pid = pid_of(&k, p);
    let from = k.trace.records.len();
    let until = k.now + 2_000_000;
    run_until(&mut k, until);
    let ran = k.trace.records[from..].iter().any(|r| {
        r.cpu == target && matches!(r.event, schedsim::trace::Event::SchedSwitch { next_pid, .. } if next_pid == pid)
    });
    assert!(
        ran,
        "{patches}: the wakee never ran on CPU {target}:\n{}",
        render(&k.trace.records[from..], &[target], 40)
    );
    d
}

#[test]
fn with_the_patch_idle_same_llc_wakelist_busy_same_llc_direct() {
    assert_eq!(wake_bound_sleeper("", SAME_LLC, false), (1, 0), "idle same-LLC target: wakelist");
    assert_eq!(wake_bound_sleeper("", SAME_LLC, true), (0, 1), "busy same-LLC target: direct enqueue");
    assert_eq!(wake_bound_sleeper("", OTHER_LLC, false), (1, 0), "other LLC: wakelist");
    assert_eq!(wake_bound_sleeper("", OTHER_LLC, true), (1, 0), "other LLC, busy: wakelist");
}

#[test]
fn without_the_patch_idle_same_llc_takes_the_direct_path() {
    let p = "-f3dd3f674555";
    assert_eq!(wake_bound_sleeper(p, SAME_LLC, false), (0, 1), "idle same-LLC target: direct enqueue");
    assert_eq!(wake_bound_sleeper(p, SAME_LLC, true), (0, 1), "busy same-LLC target: direct enqueue");
    assert_eq!(wake_bound_sleeper(p, OTHER_LLC, false), (1, 0), "other LLC: wakelist");
}

/// End to end on the one-LLC VM: with the patch most schbench wakeups target an idle CPU and
/// go through the wakelist (the rest, to a busy CPU or the waker's own, are direct); without
/// it nearly all are direct enqueues (the wakelist only for a wakee still on its CPU).
#[test]
fn schbench_on_one_llc_moves_wakeups_to_the_wakelist() {
    let run = |patches: &str| {
        let r = execute(&schbench_spec("icx-vm-32", "v6.10", patches, "-m 1 -t 4 -r 7", false)).expect("valid spec");
        assert!(r.finished, "{patches}: schbench did not finish");
        paths(&r.stats)
    };
    let (with_wl, with_direct) = run("");
    let (without_wl, without_direct) = run("-f3dd3f674555");
    assert!(with_wl > 0 && with_direct > 0, "with: wakelist {with_wl}, direct {with_direct}");
    assert!(with_wl > 2 * with_direct, "with: wakelist {with_wl}, direct {with_direct}");
    assert!(without_direct > 0, "without: direct {without_direct}");
    assert!(without_wl * 20 < without_direct, "without: wakelist {without_wl}, direct {without_direct}");
    assert!(with_wl > 20 * without_wl.max(1), "with {with_wl} vs without {without_wl}");
}
