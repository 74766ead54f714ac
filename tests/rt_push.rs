//! The RT class's push decision on hand-made cases (docs/kernel-model.md 2.10), and Steven
//! Rostedt's 2013 `ok_to_push_task()` in `push_rt_task()` (spec 5.4): a woken SCHED_FIFO task
//! that outranks a *pinned* RT task is pushed to a CPU that frees up, instead of waiting to
//! preempt the pinned task. See workload::rtpush for the cast.

use schedsim::run::{execute, RunResult};
use schedsim::spec::RunSpec;
use schedsim::trace::{Event, Sym};
use schedsim::workload::params::Params;
use schedsim::workload::rtpush::RtPush;
use schedsim::workload::Workload;

const OK: &str = "+rostedt-2013-ok-to-push-task";

fn run(patches: &str, features: &[&str], params: &[(&str, &str)]) -> RunResult {
    let mut s = RunSpec::new("rt-push");
    s.machine = "smp-4".into();
    s.kernel = "v6.10".into();
    s.patches = patches.into();
    s.features = features.iter().map(|f| f.to_string()).collect();
    s.seed = 1;
    s.trace = true;
    s.params = Params::from_pairs(params.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(), "test");
    execute(&s).unwrap()
}

fn rt(r: &RunResult) -> &RtPush {
    match &r.workload {
        Workload::RtPush(w) => w,
        _ => unreachable!(),
    }
}

fn migrations_of(r: &RunResult, pid: u32) -> Vec<(u32, u32)> {
    r.trace
        .iter()
        .filter_map(|x| match x.event {
            Event::SchedMigrateTask { pid: p, orig_cpu, dest_cpu, .. } if p == pid => Some((orig_cpu, dest_cpu)),
            _ => None,
        })
        .collect()
}

#[test]
fn v6_10_woken_task_waits_for_the_pinned_task_and_preempts_it() {
    let r = run("", &[], &[]);
    let w = rt(&r);
    assert_eq!(w.woken_ran_on, Some(1), "select_task_rq_rt keeps it on CPU 1: no other CPU runs below it");
    assert!(w.pinned_preempted);
    assert_eq!(r.stats.rt_pushes, 0, "push_rt_task reschedules instead: the task outranks curr");
    assert!(r.stats.rt_push_ipis >= 1, "the waker's CPU lowering its priority started the RT_PUSH_IPI chain");
    // The irq_work went to the overloaded CPU 1 through its call-single queue.
    assert!(r.trace.iter().any(|x| matches!(
        x.event,
        Event::CsdQueueCpu { cpu: 1, func: Sym::RtoPushIrqWorkFunc, callsite: Sym::IrqWorkQueueOn, .. }
    )));
    // It waited out the 100 us non-preemptible section.
    assert!(w.wakeup_to_run_ns().unwrap() > 70_000);
}

#[test]
fn ok_to_push_task_pushes_the_woken_task_to_the_freed_cpu() {
    let r = run(OK, &[], &[]);
    let w = rt(&r);
    assert_eq!(w.woken_ran_on, Some(0), "pushed to the waker's CPU once it went idle");
    assert!(!w.pinned_preempted, "the pinned task keeps its CPU");
    assert_eq!(r.stats.rt_pushes, 1);
    let woken_pid = r
        .trace
        .iter()
        .find_map(|x| match x.event {
            Event::SchedWaking { pid, .. } => Some(pid),
            _ => None,
        })
        .expect("a wakeup");
    assert_eq!(migrations_of(&r, woken_pid), vec![(1, 0)], "one move, by push_rt_task from CPU 1 to CPU 0");
    assert!(w.wakeup_to_run_ns().unwrap() < 20_000, "it no longer waits for the pinned task's section");
}

#[test]
fn a_preemptible_pinned_task_is_preempted_in_both_kernels() {
    // No non-preemptible section and the waker blocks 20 us later: the resched IPI switches to
    // the woken task long before the push irq_work arrives, so there is nothing left to push.
    for patches in ["", OK] {
        let r = run(patches, &[], &[("hold_us", "0"), ("block_delay_us", "20")]);
        assert_eq!(rt(&r).woken_ran_on, Some(1), "{patches}");
        assert_eq!(r.stats.rt_pushes, 0, "{patches}");
    }
}

#[test]
fn the_push_irq_work_can_beat_the_preemption() {
    // No non-preemptible section, but the waker blocks at once: the push irq_work lands on
    // CPU 1 right behind the resched IPI, before the pinned task reaches schedule(). v6.10 still
    // lets the woken task preempt; ok_to_push_task pushes it.
    let r = run("", &[], &[("hold_us", "0")]);
    assert_eq!(rt(&r).woken_ran_on, Some(1));
    let r = run(OK, &[], &[("hold_us", "0")]);
    assert_eq!(rt(&r).woken_ran_on, Some(0));
}

#[test]
fn a_woken_task_below_the_pinned_one_is_pushed_by_v6_10_too() {
    // FIFO 40 < the pinned FIFO 50: no preemption, and push_rt_task's "outranks curr" bail does
    // not apply, so both kernels push it to CPU 0 when the waker blocks.
    for patches in ["", OK] {
        let r = run(patches, &[], &[("woken_prio", "40")]);
        let w = rt(&r);
        assert_eq!(w.woken_ran_on, Some(0), "{patches}");
        assert!(!w.pinned_preempted, "{patches}");
        assert_eq!(r.stats.rt_pushes, 1, "{patches}");
    }
}

#[test]
fn select_task_rq_rt_places_the_wakee_on_an_idle_cpu() {
    // Without the hogs CPUs 2 and 3 idle: find_lowest_rq() finds them at wakeup time.
    for patches in ["", OK] {
        let r = run(patches, &[], &[("hogs", "false")]);
        let w = rt(&r);
        let c = w.woken_ran_on.unwrap();
        assert!(c == 2 || c == 3, "{patches}: ran on {c}");
        assert!(!w.pinned_preempted);
        assert_eq!(r.stats.rt_pushes, 0);
    }
}

#[test]
fn without_rt_push_ipi_the_pull_skips_a_task_about_to_preempt() {
    // NO_RT_PUSH_IPI: the waker's CPU pulls itself, and pull_rt_task() leaves a task that
    // outranks its CPU's curr where it is. ok_to_push_task does not touch the pull path.
    for patches in ["", OK] {
        let r = run(patches, &["NO_RT_PUSH_IPI"], &[]);
        assert_eq!(rt(&r).woken_ran_on, Some(1), "{patches}");
        assert_eq!(r.stats.rt_push_ipis, 0);
        assert_eq!(r.stats.rt_pulls, 0);
    }
}

#[test]
fn rt_push_is_deterministic() {
    use schedsim::run::trace_hash;
    let a = run(OK, &[], &[]);
    let b = run(OK, &[], &[]);
    assert_eq!(trace_hash(&a.trace), trace_hash(&b.trace));
}

#[test]
fn a_preempted_migratable_rt_task_is_pushed_by_the_balance_callback() {
    // The woken task (FIFO 40) is still running on CPU 1 when the pinned FIFO 50 task starts
    // there and preempts it; set_next_task_rt() queues push_rt_tasks(), which runs at the end
    // of __schedule() and moves the preempted task to an idle CPU (no hogs).
    let r = run("", &[], &[("woken_prio", "40"), ("woken_first_us", "100"), ("hogs", "false")]);
    let woken_pid = r
        .trace
        .iter()
        .find_map(|x| match x.event {
            Event::SchedSwitch { next_pid, next_prio: 59, .. } => Some(next_pid),
            _ => None,
        })
        .expect("the woken task ran");
    let first = migrations_of(&r, woken_pid);
    assert!(!first.is_empty());
    let (from, to) = first[0];
    assert_eq!(from, 1);
    assert!(to == 2 || to == 3, "pushed to an idle CPU, got {to}");
    // The move is made on CPU 1 by the task that preempted it, right after the switch.
    let i = r
        .trace
        .iter()
        .position(|x| matches!(x.event, Event::SchedMigrateTask { pid, .. } if pid == woken_pid))
        .unwrap();
    assert_eq!(r.trace[i].cpu, 1);
    let sw = r.trace[..i].iter().rev().find(|x| x.cpu == 1 && matches!(x.event, Event::SchedSwitch { .. })).unwrap();
    assert!(matches!(sw.event, Event::SchedSwitch { prev_pid, next_prio: 49, .. } if prev_pid == woken_pid));
    assert!(r.stats.rt_pushes >= 1);
}
