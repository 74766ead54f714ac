// b6366f048e0c "sched/rt: Use IPI to trigger RT task push migration instead of pulling" (v4.1).
// See: b6366f048e0c
//
// Pins: the RT_PUSH_IPI path of `pull_rt_task()`. In the rt-push scenario (scenarios/rt-push.toml)
// CPU 0 lowers its priority while the pinned CPU 1 is overloaded: with the patch (and the
// RT_PUSH_IPI feature, on by default) CPU 0 sends the push irq_work and CPU 1's
// `push_rt_task()` (with Rostedt's ok_to_push_task) pushes the woken task to CPU 0; without
// the patch (v3.8) CPU 0 pulls itself, skips the task that outranks CPU 1's `curr`, and the
// woken task waits for the pinned task, whatever the feature bit says.

mod support;

use schedsim::run::execute;
use schedsim::spec::RunSpec;
use schedsim::workload::Workload;

fn run(kernel: &str, patches: &str) -> (u64, u64, Option<u32>) {
    let mut s = RunSpec::new("rt-push");
    s.machine = "smp-4".into();
    s.kernel = kernel.into();
    s.patches = patches.into();
    let r = execute(&s).expect("valid spec");
    let Workload::RtPush(w) = &r.workload else { panic!("not an rt-push run") };
    (r.stats.rt_push_ipis, r.stats.rt_pushes, w.woken_ran_on)
}

#[test]
fn with_the_patch_the_lowering_cpu_sends_the_push_irq_work() {
    let (ipis, pushes, ran_on) = run("v6.10", "+rostedt-2013-ok-to-push-task");
    assert!(ipis >= 1, "push irq_work sent: {ipis}");
    assert_eq!((pushes, ran_on), (1, Some(0)), "pushed to the CPU that lowered its priority");
}

#[test]
fn without_it_the_lowering_cpu_pulls_and_skips_the_task() {
    for (kernel, patches) in
        [("v6.10", "+rostedt-2013-ok-to-push-task,-b6366f048e0c"), ("v3.8", "+rostedt-2013-ok-to-push-task")]
    {
        let (ipis, pushes, ran_on) = run(kernel, patches);
        assert_eq!((ipis, pushes), (0, 0), "{kernel} {patches}");
        assert_eq!(ran_on, Some(1), "{kernel} {patches}: waits for the pinned task on CPU 1");
    }
}
