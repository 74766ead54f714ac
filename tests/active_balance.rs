//! Active balance through the stopper (kernel/sched/fair.c `need_active_balance()`,
//! `active_load_balance_cpu_stop()`; kernel/stop_machine.c): when a busiest runqueue's queued
//! tasks keep failing to migrate (here: the queued one is bound to its CPU, and the movable one
//! is running), the balancer wakes the busiest CPU's `migration/N`, which preempts the running
//! task and pushes it away.

use schedsim::linux::kernel::sched::fair::{sched_balance_rq, CpuIdleType};
use schedsim::run::build;
use schedsim::spec::RunSpec;
use schedsim::trace::Event;
use schedsim::workload::params::Params;

#[test]
fn repeated_failures_start_an_active_balance_that_moves_a_task() {
    let mut s = RunSpec::new("spinners");
    s.machine = "smp-4".into();
    s.kernel = "v6.10".into();
    s.trace = true;
    s.params = Params::from_pairs(
        vec![("tasks".into(), "2".into()), ("start".into(), "0".into()), ("duration_ms".into(), "50".into())],
        "test",
    );
    let mut k = build(&s).unwrap();
    // Let the spinners start: both on CPU 0 (one running, one queued).
    let mut t = 0;
    while k.cpus[0].rq.cfs_h_nr_running < 2 {
        t += 10_000;
        k.run(t);
        assert!(t < 10_000_000, "spinners never both reached CPU 0");
    }
    // The MC domain of CPU 1 spans {0,1}, one group per CPU: CPU 0 is the busiest group.
    let top = 0;
    let nice = k.sd.domains(1)[top].cache_nice_tries;
    // Bind CPU 0's queued task to CPU 0: ordinary balancing from CPU 1 can move nothing (the
    // other task is running).
    let queued: Vec<u32> = k.cpus[0].rq.cfs.queued(&k.ents);
    for p in &queued {
        k.tasks[*p as usize].pinned = Some(0);
    }
    for _ in 0..=(nice + 3) {
        let (moved, _) = sched_balance_rq(&mut k, 1, 1, top, CpuIdleType::Idle);
        assert_eq!(moved, 0, "a bound or running task must not be pulled by an ordinary balance");
    }
    assert_eq!(k.stats.active_balances, 1);
    assert!(k.cpus[0].rq.stop_runnable, "migration/0 must be runnable");
    k.run(k.now + 2_000_000);
    assert!(k.cpus[1].rq.cfs_h_nr_running >= 1, "the stopper moved a task to CPU 1");
    assert_eq!(k.cpus[0].rq.cfs_h_nr_running, 1);
    let stopper_pid = k.tasks[k.cpus[0].rq.stopper as usize].pid;
    let ran = k
        .trace
        .records
        .iter()
        .any(|r| matches!(r.event, Event::SchedSwitch { next_pid, next_prio: 0, .. } if next_pid == stopper_pid));
    assert!(ran, "migration/0 ran (sched_switch to it with prio 0)");
    k.check_invariants().unwrap();
}
