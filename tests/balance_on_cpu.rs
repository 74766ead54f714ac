//! The fair balancer never moves a task that is still being switched out (`can_migrate_task()`:
//! `task_on_cpu()`). The model's `detach_tasks()` does not take the busiest CPU's rq lock, so a
//! preempted prev, queued again but still on its old CPU's stack until `finish_task_switch()`,
//! must be skipped by its `on_cpu` alone: moving it let the new CPU pick it while the old one
//! still ran on it (`prepare_task() ... is still on_cpu`). This run of LKP's 100% hackbench
//! threads cell hit that in a newidle balance before the fix.

use schedsim::run::execute;
use schedsim::spec::RunSpec;
use schedsim::workload::params::Params;
use schedsim::workload::Workload;

#[test]
fn a_task_still_switching_out_is_not_pulled() {
    let mut s = RunSpec::new("hackbench");
    s.machine = "xeon-128-4n".into();
    s.kernel = "v6.10".into();
    s.params = Params::from_pairs(
        vec![("tool".into(), "rt-tests".into()), ("args".into(), "-g 128 -f 20 --threads -l 40 -s 100".into())],
        "test",
    );
    let r = execute(&s).expect("runs to the end without a panic");
    match &r.workload {
        Workload::Hackbench(w) => assert!(w.time_us().is_some(), "hackbench finished"),
        w => panic!("not hackbench: {}", w.name()),
    }
}
