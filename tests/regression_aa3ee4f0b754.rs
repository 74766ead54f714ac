// aa3ee4f0b754 "sched/fair: Fixup wake_up_sync() vs DELAYED_DEQUEUE" (v6.16; in v6.18, the
// guest's kernel).
// See: aa3ee4f0b754
//
// Pins: `wake_affine_idle()`'s sync test ("the waker is about to sleep and is the only task of
// its CPU: take the wakee here") counts the waker's runqueue without its delayed entities
// (DELAY_DEQUEUE sleepers still queued and counted in `nr_running`). Without the fix a CPU
// holding one running waker and one delayed sleeper fails the test and the wakeup falls
// through to `wake_affine_weight()`. And the count it reads (`cfs_h_nr_delayed()`) is the
// number of delayed tasks of that runqueue at every instant of a run.

mod support;

use schedsim::linux::kernel::sched::fair::select_task_rq_fair;
use schedsim::linux::kernel::sched::TaskKind;
use schedsim::run::{build, RunWorld};
use schedsim::spec::RunSpec;
use schedsim::workload::params::Params;
use support::{idle_spec, step_one};

/// smp-4 (CPUs 0 and 1 share an LLC): CPU 0 runs the waker with one delayed sleeper queued
/// behind it and carries load; CPU 1, the wakee's previous CPU, runs another task and carries
/// none. Returns the CPU a sync wakeup by the waker picks for the wakee.
fn sync_wakeup_target(kernel: &str) -> u32 {
    let mut k: RunWorld = build(&idle_spec("smp-4", kernel, "")).expect("valid spec");
    let waker = k.new_task(TaskKind::Workload, "waker".into(), 0, 120, None);
    let other = k.new_task(TaskKind::Workload, "other".into(), 0, 120, None);
    let wakee = k.new_task(TaskKind::Workload, "wakee".into(), 0, 120, None);
    // CPU 0: the waker runs; a delayed sleeper is still queued (nr_running 2, one delayed).
    k.tasks[waker as usize].cpu = 0;
    k.cpus[0].rq.curr = waker;
    k.cpus[0].rq.nr_running = 2;
    k.cpus[0].rq.cfs.nr_delayed = 1;
    // The waker's load is half of its CPU's: wake_affine_weight() prefers the idle-loaded
    // previous CPU of the wakee.
    k.cpus[0].rq.cfs.avg.load_avg = 2048;
    k.ents[waker as usize].avg.load_avg = 1024;
    // CPU 1: busy (not idle), no load.
    k.tasks[other as usize].cpu = 1;
    k.cpus[1].rq.curr = other;
    k.cpus[1].rq.nr_running = 1;
    k.tasks[wakee as usize].cpu = 1;
    let (cpu, _) = select_task_rq_fair(&mut k, 0, wakee, 1, true);
    cpu
}

#[test]
fn a_sync_waker_alone_but_for_delayed_sleepers_takes_the_wakee() {
    // v6.18 has the fix: one running task once the delayed one is discounted.
    assert_eq!(sync_wakeup_target("v6.18"), 0);
    // Without it nr_running is 2, the sync shortcut fails and the load comparison keeps the
    // wakee on its previous CPU.
    assert_eq!(sync_wakeup_target("v6.18-aa3ee4f0b754"), 1);
}

/// The delayed count the fix reads matches the delayed tasks of each runqueue at every step of
/// a messaging run (many delayed sleepers, delayed wakeups and delayed picks).
#[test]
fn the_delayed_count_follows_every_delay_wakeup_and_pick() {
    let mut s = RunSpec::new("hackbench");
    s.machine = "smp-4".into();
    s.kernel = "v6.18".into();
    s.background = Some("none".into());
    s.params = Params::from_pairs(vec![("tool".into(), "perf".into()), ("args".into(), "-g 1 -l 10".into())], "test");
    s.limit_ns = 10_000_000_000;
    let mut k: RunWorld = build(&s).expect("valid spec");
    let (mut seen_delayed, mut steps) = (0u64, 0u64);
    while !k.finished() && k.now < 10_000_000_000 {
        if !step_one(&mut k, 10_000_000_000) {
            break;
        }
        steps += 1;
        let mut per_cpu = vec![0u32; k.cpus.len()];
        for (t, e) in k.ents.iter().enumerate().take(k.tasks.len()) {
            if e.sched_delayed {
                per_cpu[k.tasks[t].cpu as usize] += 1;
            }
        }
        for (c, n) in per_cpu.iter().enumerate() {
            assert_eq!(k.cpus[c].rq.cfs.nr_delayed, *n, "CPU {c} at {} ns (step {steps})", k.now);
            assert!(k.cpus[c].rq.nr_running >= *n);
        }
        seen_delayed += per_cpu.iter().map(|&n| n as u64).sum::<u64>();
    }
    assert!(k.finished());
    assert!(seen_delayed > 0, "the run delayed some sleepers");
}
