// c6e7bd7afaeb "sched/core: Optimize ttwu() spinning on p->on_cpu" (v5.8).
// See: c6e7bd7afaeb
//
// Pins: `try_to_wake_up()` finding the wakee still descheduling on its CPU (`p->on_cpu`):
// with the patch it queues the wakee on that CPU's wakelist (when `ttwu_queue_cond()` allows,
// here: the wakee's CPU is in the other LLC) and returns; without it (v3.8) the waker spins
// on `p->on_cpu` until the old CPU's `finish_task_switch()` releases the task.

mod support;

use schedsim::linux::engine::{Next, WaitOn};
use schedsim::linux::kernel::sched::core::{try_to_wake_up, TryToWakeUp};
use schedsim::run::build;
use support::*;

/// Wake a sleeper marked as still on CPU 2 from CPU 0 (smp-4: LLCs {0,1} and {2,3}); return
/// the first `Next` that is not a plain continuation, and the wakelist wakeups counted.
fn wake_descheduling(kernel: &str, patches: &str) -> (Next, u64) {
    let mut k = build(&idle_spec("smp-4", kernel, patches)).expect("valid spec");
    run_until(&mut k, 5_000_000);
    let p = sleeper(&mut k, "wakee", 2, None);
    k.tasks[p as usize].on_cpu = true;
    let before = k.stats.wakeups_wakelist_polling + k.stats.wakeups_wakelist_ipi + k.stats.wakeups_wakelist_coalesced;
    let mut s = TryToWakeUp::new(p, 0);
    for _ in 0..8 {
        match try_to_wake_up(&mut k, 0, &mut s) {
            Next::Cont(_) => continue,
            n => {
                let after = k.stats.wakeups_wakelist_polling
                    + k.stats.wakeups_wakelist_ipi
                    + k.stats.wakeups_wakelist_coalesced;
                return (n, after - before);
            }
        }
    }
    panic!("try_to_wake_up() kept continuing");
}

#[test]
fn with_the_patch_a_descheduling_wakee_is_queued_on_its_cpu() {
    let (n, queued) = wake_descheduling("v6.10", "");
    assert!(matches!(n, Next::Ret(_)), "returns at once: {n:?}");
    assert_eq!(queued, 1, "queued on the wakelist of the CPU it is leaving");
}

#[test]
fn without_the_patch_the_waker_spins_on_p_on_cpu() {
    for (kernel, patches) in [("v6.10", "-2ebb17717550,-c6e7bd7afaeb"), ("v3.8", "")] {
        let (n, queued) = wake_descheduling(kernel, patches);
        assert!(matches!(n, Next::Wait(WaitOn::Spin)), "{kernel} {patches}: spins: {n:?}");
        assert_eq!(queued, 0, "{kernel} {patches}: nothing queued");
    }
}
