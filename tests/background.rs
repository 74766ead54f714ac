//! Background activity (src/background/, kernel/workqueue.rs, kernel/time/timer.rs,
//! kernel/watchdog.rs) and the preemption models: each test builds a small profile that
//! exercises one mechanism and checks what the kernel rule says must happen.

mod support;

use schedsim::run::{execute, trace_hash, RunResult};
use schedsim::spec::RunSpec;
use schedsim::trace::Event;
use support::*;

/// Write `profile` to a temporary file and return its path.
fn profile_file(name: &str, body: &str) -> String {
    let dir = std::env::temp_dir().join(format!("schedsim-bg-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(format!("{name}.toml"));
    std::fs::write(&p, format!("name = \"{name}\"\nmeasured = \"test\"\n{body}")).unwrap();
    p.to_string_lossy().into_owned()
}

fn idle_run(profile: &str, ms: u64, preempt: &str) -> RunResult {
    let mut s = idle_spec("smp-4", "v6.10", "");
    s.background = Some(profile.into());
    s.preempt = Some(preempt.into());
    s.limit_ns = ms * 1_000_000;
    s.trace = true;
    execute(&s).expect("valid spec")
}

fn comm_pids(r: &RunResult, prefix: &str) -> Vec<u32> {
    r.comms.iter().filter(|(_, c)| c.starts_with(prefix)).map(|(p, _)| *p).collect()
}

fn switches_to(r: &RunResult, pids: &[u32]) -> usize {
    r.trace
        .iter()
        .filter(|x| matches!(x.event, Event::SchedSwitch { next_pid, .. } if pids.contains(&next_pid)))
        .count()
}

const WORK: &str = "[[source]]\nname = \"w\"\nkind = \"percpu-work\"\nperiod_us = 100000\ncpus = \"all\"\nruntime_ns = [1000, 2000, 3000, 4000, 5000]\n";

/// A deferrable timer never wakes an idle CPU (tick stopped): the work item only runs when
/// the CPU wakes for something else. The same item on a plain timer wakes every CPU at its
/// period: ~10 runs per CPU in a second.
#[test]
fn a_deferrable_timer_does_not_wake_an_idle_cpu() {
    let plain = idle_run(&profile_file("plain", WORK), 1000, "voluntary");
    let deferrable =
        idle_run(&profile_file("deferrable", &WORK.replace("cpus", "deferrable = true\ncpus")), 1000, "voluntary");
    let runs =
        |r: &RunResult| r.trace.iter().filter(|x| matches!(x.event, Event::WorkqueueExecuteStart { .. })).count();
    assert!((36..=44).contains(&runs(&plain)), "plain timers: {} runs on 4 CPUs in 1 s", runs(&plain));
    assert_eq!(runs(&deferrable), 0, "deferrable timers on idle CPUs must not fire");
    // The plain work runs in the bound kworker of each CPU.
    let kw = comm_pids(&plain, "kworker/");
    assert_eq!(kw.len(), 4);
    assert!(switches_to(&plain, &kw) >= 36);
}

/// The timer wheel runs timers at the tick after their (granularity-rounded) expiry, from
/// TIMER_SOFTIRQ: each work item is queued between a timer_expire_entry and its exit.
#[test]
fn work_is_queued_from_the_timer_softirq() {
    let r = idle_run(&profile_file("wq", WORK), 500, "voluntary");
    let mut checked = 0;
    for (i, x) in r.trace.iter().enumerate() {
        if let Event::WorkqueueQueueWork { .. } = x.event {
            let entry = r.trace[..i].iter().rev().find(|y| y.cpu == x.cpu).expect("a record before");
            assert!(matches!(entry.event, Event::TimerExpireEntry { .. }), "queued from the timer: {:?}", entry.event);
            assert!(x.flags & schedsim::trace::flags::SOFTIRQ != 0, "in softirq context");
            checked += 1;
        }
    }
    assert!(checked >= 16, "{checked}");
}

/// The softlockup watchdog's hrtimer wakes the stopper (migration/N) of every CPU at its
/// period, idle or not: 5 wakeups per CPU in 1 s at a 200 ms period.
#[test]
fn the_watchdog_wakes_each_cpus_stopper() {
    let p = profile_file(
        "wd",
        "[[source]]\nname = \"watchdog\"\nkind = \"watchdog\"\nperiod_us = 200000\ncpus = \"all\"\nruntime_ns = [1000, 2000, 3000, 4000, 5000]\n",
    );
    let r = idle_run(&p, 1000, "voluntary");
    for cpu in 0..4u32 {
        let stopper = comm_pids(&r, &format!("migration/{cpu}"));
        let n = switches_to(&r, &stopper);
        assert!((4..=6).contains(&n), "CPU {cpu}: migration ran {n} times");
    }
}

/// With no background, a run is exactly the quiet machine's: no kworker, no timer records.
#[test]
fn background_none_adds_nothing() {
    let r = idle_run("none", 200, "voluntary");
    assert!(comm_pids(&r, "kworker/").is_empty());
    assert!(!r
        .trace
        .iter()
        .any(|x| matches!(x.event, Event::WorkqueueQueueWork { .. } | Event::TimerExpireEntry { .. })));
}

/// A long-running background kernel thread on CPU 1 and the watchdog's stopper on the same
/// CPU. Under PREEMPT_FULL the stopper's wakeup (in the hrtimer interrupt) preempts the kernel
/// thread at interrupt exit; under PREEMPT_VOLUNTARY (and NONE) the thread keeps the CPU until
/// its next cond_resched(), after its 3 ms run.
#[test]
fn full_preemption_preempts_kernel_code_at_irq_exit_voluntary_does_not() {
    let p = profile_file(
        "preempt",
        "[[source]]\nname = \"hog\"\nkind = \"kthread\"\nperiod_us = 100\ncpus = \"1\"\nruntime_ns = [3000000, 3000000, 3000000, 3000000, 3000000]\n\
         [[source]]\nname = \"watchdog\"\nkind = \"watchdog\"\nperiod_us = 10000\njitter_us = 3000\ncpus = \"all\"\nruntime_ns = [1000, 1000, 1000, 1000, 1000]\n",
    );
    let worst = |preempt: &str| {
        let r = idle_run(&p, 300, preempt);
        let stopper = comm_pids(&r, "migration/1")[0];
        let mut woken = None;
        let mut worst = 0u64;
        for x in r.trace.iter().filter(|x| x.cpu == 1) {
            match x.event {
                Event::SchedWaking { pid, .. } if pid == stopper => woken = Some(x.ts_ns),
                Event::SchedSwitch { next_pid, .. } if next_pid == stopper => {
                    if let Some(t) = woken.take() {
                        worst = worst.max(x.ts_ns - t);
                    }
                }
                _ => {}
            }
        }
        worst
    };
    let (full, voluntary, none) = (worst("full"), worst("dynamic-voluntary"), worst("none"));
    assert!(full < 20_000, "full: the stopper waited {full} ns");
    assert!(voluntary > 500_000, "voluntary: the stopper waited only {voluntary} ns");
    assert!(none > 500_000, "none: the stopper waited only {none} ns");
}

/// The determinism contract holds with background activity on: the same seed gives the same
/// trace, another seed another one.
#[test]
fn background_runs_are_deterministic() {
    let run = |seed: u64| {
        let mut s = RunSpec::new("ipistorm");
        s.machine = "epyc-7763-2s".into();
        s.background = Some("kvm-guest".into());
        s.params = schedsim::workload::params::Params::parse(
            ["numipi=2000", "single=1", "offset=8", "cpulist=8"].iter().copied(),
            "test",
        )
        .unwrap();
        s.seed = seed;
        s.trace = true;
        execute(&s).expect("valid spec")
    };
    let (a, b, c) = (run(3), run(3), run(4));
    assert!(a.trace.iter().any(|x| matches!(x.event, Event::WorkqueueExecuteStart { .. })));
    assert_eq!(trace_hash(&a.trace), trace_hash(&b.trace));
    assert_eq!(format!("{:?}", a.stats), format!("{:?}", b.stats));
    assert_ne!(trace_hash(&a.trace), trace_hash(&c.trace));
}

/// A background task woken on a busy CPU makes its runqueue hold two tasks, which sets
/// `rd->overloaded` (add_nr_running()); on the quiet machine the flag is never set.
#[test]
fn background_on_a_busy_cpu_sets_rd_overloaded() {
    let spin = |bg: &str| {
        let mut s = spinners_spec("smp-4", "v6.10", "", 1, "1", 500, None, false);
        s.background = Some(bg.into());
        execute(&s).expect("valid spec")
    };
    let p = profile_file(
        "busy",
        "[[source]]\nname = \"w\"\nkind = \"percpu-work\"\nperiod_us = 20000\ncpus = \"1\"\nruntime_ns = [1000, 2000, 3000, 4000, 5000]\n",
    );
    assert_eq!(spin("none").stats.overloaded_ns, 0);
    assert!(spin(&p).stats.overloaded_ns > 0);
}

/// `queue_work` (docs/costs.md) covers `__queue_work()` and `process_one_work()`'s
/// bookkeeping together, half in each: a work function that takes no time runs for the
/// bookkeeping half only, from `workqueue_execute_start` to `workqueue_execute_end`. Before
/// the fix both functions charged the whole of it, and a work item cost it twice.
#[test]
fn queue_work_is_charged_once_per_work_item() {
    let costs = schedsim::linux::cost::PathCosts::default();
    let r = idle_run(
        &profile_file("zero", &WORK.replace("[1000, 2000, 3000, 4000, 5000]", "[0, 0, 0, 0, 0]")),
        500,
        "voluntary",
    );
    let mut spans = Vec::new();
    for (i, x) in r.trace.iter().enumerate() {
        if let Event::WorkqueueExecuteStart { .. } = x.event {
            let end = r.trace[i..]
                .iter()
                .find(|y| y.cpu == x.cpu && matches!(y.event, Event::WorkqueueExecuteEnd { .. }))
                .expect("the work item ends");
            spans.push(end.ts_ns - x.ts_ns);
        }
    }
    assert!(spans.len() >= 16, "{} work items", spans.len());
    let half = costs.queue_work - costs.queue_work / 2;
    // An interrupt may land inside one; the others take the bookkeeping half exactly.
    let exact = spans.iter().filter(|&&d| d == half).count();
    assert!(spans.iter().all(|&d| d >= half), "execute_start -> end: {spans:?}, expected {half} ns");
    assert!(exact * 10 >= spans.len() * 9, "execute_start -> end: {spans:?}, expected {half} ns each");
}
