// 152e11f6df29 "sched/fair: Implement delayed dequeue" (v6.12), with 54a58a787791 DELAY_ZERO.
// See: 152e11f6df29
//
// Pins: with DELAY_DEQUEUE a fair task that goes to sleep while not eligible stays on its
// runqueue (`on_rq`, counted in `nr_running`, its entity still in the tree) until a pick
// reaches it and finishes the dequeue, or a wakeup finds it there first: then
// `ttwu_runnable()` requeues it in place under its rq lock (no placement, no migration, no
// wakelist) and `sched_wakeup` names the CPU it never left. Without the patch (every kernel
// before v6.12, the model's v6.13 too) a sleep always dequeues.
//
// `perf bench sched messaging -g 1 -l 20` on a 4-CPU machine: 40 tasks, receivers blocking
// and woken hundreds of times, often right after they ran past their share.

mod support;

use schedsim::run::{build, execute, RunWorld};
use schedsim::spec::RunSpec;
use schedsim::trace::Event;
use schedsim::workload::params::Params;
use schedsim::workload::Workload;
use support::step_one;

fn spec(kernel: &str) -> RunSpec {
    let mut s = RunSpec::new("hackbench");
    s.machine = "i7-4c8t".into();
    s.kernel = kernel.into();
    s.params = Params::from_pairs(vec![("tool".into(), "perf".into()), ("args".into(), "-g 1 -l 20".into())], "test");
    s.limit_ns = 10_000_000_000;
    s.check = true;
    s.trace = true;
    s
}

fn messages(w: &Workload) -> (u64, u64) {
    match w {
        Workload::Hackbench(h) => (h.messages_sent, h.messages_received),
        other => panic!("not hackbench: {other:?}"),
    }
}

#[test]
fn delayed_sleepers_stay_queued_and_are_woken_in_place() {
    let r = execute(&spec("v6.18")).expect("valid spec");
    assert!(r.finished);
    assert_eq!(messages(&r.workload), (8000, 8000));
    assert!(r.checks.as_ref().is_some_and(|c| c.violations.is_empty()), "{:?}", r.checks.map(|c| c.violations));
    // Pipes hold the messages, so few of the 8000 reads block (some 300 wakeups); a good
    // share of those sleeps come while the sleeper ran past its share and are delayed.
    let st = &r.stats;
    let wakeups =
        st.wakeups_wakelist_polling + st.wakeups_wakelist_ipi + st.wakeups_wakelist_coalesced + st.wakeups_direct;
    assert!(st.delayed_dequeues * 10 >= wakeups, "sleeps delayed: {} of {wakeups} wakeups", st.delayed_dequeues);
    assert!(r.stats.wakeups_delayed > 5, "delayed tasks woken in place: {}", r.stats.wakeups_delayed);
    assert!(r.stats.wakeups_delayed < r.stats.delayed_dequeues, "most delayed sleepers are picked first");

    // The same run without the patch (and the fix that requires it): every sleep dequeues.
    let r0 = execute(&spec("v6.18-152e11f6df29-54a58a787791-aa3ee4f0b754")).expect("valid spec");
    assert!(r0.finished);
    assert_eq!((r0.stats.delayed_dequeues, r0.stats.wakeups_delayed), (0, 0));
}

/// Step the run and watch every delayed task: while delayed it stays `on_rq` on the CPU it
/// slept on and counted there; the wakeup that finds it so emits `sched_wakeup` for that CPU
/// and no `sched_migrate_task` for it.
#[test]
fn a_delayed_task_is_woken_on_the_cpu_it_slept_on() {
    let mut k: RunWorld = build(&spec("v6.18")).expect("valid spec");
    k.trace.enabled = true;
    // Per task: the CPU it was delayed on, while it is.
    let mut delayed_on: Vec<Option<u32>> = Vec::new();
    let mut woken_in_place = 0;
    let mut last_trace = 0;
    while !k.finished() && k.now < 10_000_000_000 {
        if !step_one(&mut k, 10_000_000_000) {
            break;
        }
        // The workload creates its tasks as it runs.
        delayed_on.resize(k.tasks.len(), None);
        // Records since the last step: a wakeup of a task that was delayed names its CPU.
        for rec in &k.trace.records[last_trace..] {
            match rec.event {
                Event::SchedWakeup { pid, target_cpu, .. } => {
                    if let Some(t) = k.tasks.iter().position(|t| t.pid == pid) {
                        if let Some(c) = delayed_on[t] {
                            assert_eq!(target_cpu, c, "pid {pid} delayed on CPU {c} woken for CPU {target_cpu}");
                            woken_in_place += 1;
                            delayed_on[t] = None;
                        }
                    }
                }
                Event::SchedMigrateTask { pid, .. } => {
                    if let Some(t) = k.tasks.iter().position(|t| t.pid == pid) {
                        assert!(delayed_on[t].is_none(), "pid {pid} migrated while delayed");
                    }
                }
                _ => {}
            }
        }
        last_trace = k.trace.records.len();
        for (t, d) in delayed_on.iter_mut().enumerate() {
            if k.ents[t].sched_delayed {
                let task = &k.tasks[t];
                assert!(task.on_rq, "a delayed task stays on_rq");
                assert!(k.cpus[task.cpu as usize].rq.nr_running >= 1);
                match *d {
                    Some(c) => assert_eq!(c, task.cpu, "a delayed task does not move"),
                    None => *d = Some(task.cpu),
                }
            } else if !k.tasks[t].on_rq {
                // The pick finished its dequeue.
                *d = None;
            }
        }
    }
    assert!(k.finished());
    assert!(woken_in_place > 5, "delayed tasks woken in place: {woken_in_place}");
    k.check_invariants().expect("runqueue invariants");
}
