// d6962c4fe8f9 "sched: Clear ttwu_pending after enqueue_task()" (v6.2).
// See: d6962c4fe8f9
//
// Pins: `sched_ttwu_pending()` writes `rq->ttwu_pending = 0` only after the batch has been
// enqueued; before the fix it was cleared first, before the rq lock and the enqueue
// (docs/kernel-model.md §2.6, §5.5, race R4). During that window `idle_cpu()` of the target
// says "idle" (curr is the idle task, nr_running 0, ttwu_pending 0) although a wakee is about
// to land there, so a concurrent waker's `select_idle_sibling()` can pick the same CPU and
// stack a second wakee on it while another CPU of the LLC is idle.
//
// smp-4 has two LLCs, {0,1} and {2,3}. v6.1 clears early, v6.2 has the fix (both CFS, both
// with f3dd3f674555, so an idle same-LLC target uses the wakelist).

mod support;

use schedsim::linux::kernel::sched::core::ttwu_queue_wakelist;
use schedsim::linux::kernel::sched::fair::select_task_rq_fair;
use schedsim::linux::kernel::sched::{idle_cpu, TASK_INTERRUPTIBLE, WF_TTWU};
use schedsim::linux::{CpuId, Kernel};
use schedsim::run::build;
use schedsim::sim::Time;
use schedsim::trace::Event;
use support::*;

const TARGET: CpuId = 1;
/// The other CPU of the target's LLC.
const SIBLING: CpuId = 0;
const SETTLE_NS: Time = 10_000_000;
const WINDOW_LIMIT_NS: Time = 1_000_000;

/// An smp-4 kernel of the idle workload run up to 10 ms: every CPU sits in an idle state with
/// its tick stopped (the queue runs dry before that, so the clock stays at the last event).
/// Every timed step is its own action from here on.
fn settled(kernel: &str, c2: bool) -> schedsim::run::RunWorld {
    let mut spec = idle_spec("smp-4", kernel, "");
    spec.idle_states = vec![("C2".into(), c2)];
    let mut k = build(&spec).expect("valid spec");
    k.trace.enabled = true;
    run_until(&mut k, SETTLE_NS);
    no_run_ahead(&mut k);
    for c in 0..4 {
        assert!(idle_cpu(&k, c), "{kernel}: scenario: CPU {c} must be idle after {SETTLE_NS} ns");
    }
    k
}

/// One observation of the target between two steps.
#[derive(Debug, Clone, Copy)]
struct Seen {
    t: Time,
    idle: bool,
    ttwu_pending: bool,
    nr_running: u32,
    curr_is_idle: bool,
}

fn seen(k: &Kernel) -> Seen {
    let rq = &k.cpus[TARGET as usize].rq;
    Seen {
        t: k.now,
        idle: idle_cpu(k, TARGET),
        ttwu_pending: rq.ttwu_pending,
        nr_running: rq.nr_running,
        curr_is_idle: rq.curr == rq.idle,
    }
}

/// Queue a sleeping task on the target's wakelist from its LLC sibling, then step action by
/// action until the target's nr_running becomes 1. Returns every observation of the target
/// from the queueing (inclusive) to that moment.
fn window(kernel: &str, c2: bool) -> Vec<Seen> {
    let mut k = settled(kernel, c2);
    let p = sleeper(&mut k, "wakee", TARGET, None);
    assert_eq!(k.tasks[p as usize].state, TASK_INTERRUPTIBLE);
    ttwu_queue_wakelist(&mut k, SIBLING, p, TARGET, WF_TTWU).expect("an idle same-LLC target uses the wakelist");
    let mut obs = vec![seen(&k)];
    assert!(obs[0].ttwu_pending && !obs[0].idle, "{kernel}: ttwu_pending is written before the entry is queued");
    let limit = k.now + WINDOW_LIMIT_NS;
    let mut per = per_cpu(&k);
    let st = step_until(
        &mut k,
        limit,
        &mut per,
        |k, _, before| {
            if !before {
                obs.push(seen(k));
            }
        },
        |k| k.cpus[TARGET as usize].rq.nr_running == 1,
    );
    assert_eq!(st, Stop::Pred, "{kernel}: the wakee was never enqueued on CPU {TARGET}");
    assert!(k.tasks[p as usize].on_rq && k.tasks[p as usize].cpu == TARGET);
    obs
}

#[test]
fn v6_2_target_never_looks_idle_between_queueing_and_enqueue() {
    for c2 in [false, true] {
        let obs = window("v6.2", c2);
        assert!(obs.len() > 2, "c2={c2}: scenario: the enqueue took several steps: {obs:?}");
        let bad: Vec<&Seen> = obs.iter().filter(|s| s.idle).collect();
        assert!(bad.is_empty(), "c2={c2}: idle_cpu({TARGET}) was true inside the window: {bad:?}\nall: {obs:?}");
        let last = obs.last().expect("observations");
        assert_eq!(last.nr_running, 1);
        // The flag is still set when the enqueue becomes visible: it is cleared after the loop.
        assert!(obs.iter().all(|s| s.ttwu_pending || s.nr_running > 0), "c2={c2}: {obs:?}");
    }
}

#[test]
fn v6_1_early_clear_opens_the_r4_window() {
    for c2 in [false, true] {
        let obs = window("v6.1", c2);
        let open: Vec<&Seen> = obs.iter().filter(|s| s.idle).collect();
        assert!(!open.is_empty(), "c2={c2}: v6.1 must show an instant with idle_cpu({TARGET}) true: {obs:?}");
        for s in &open {
            assert!(!s.ttwu_pending && s.nr_running == 0 && s.curr_is_idle, "c2={c2}: {s:?}");
        }
        // The window lies after the queueing and ends with the enqueue.
        let last = obs.last().expect("observations");
        assert_eq!(last.nr_running, 1);
        assert!(open.iter().all(|s| s.t >= obs[0].t && s.t <= last.t));
    }
}

/// Place a wakeup of `p` the way `try_to_wake_up()` does on `waker`: `select_task_rq_fair()`,
/// `set_task_cpu()`, then `ttwu_queue()`. Returns the chosen CPU.
fn place_and_queue(k: &mut Kernel, waker: CpuId, p: u32) -> CpuId {
    let prev = k.tasks[p as usize].cpu;
    let (target, _) = select_task_rq_fair(k, waker, p, prev, false);
    let wf = if target != prev { WF_TTWU | schedsim::linux::kernel::sched::WF_MIGRATED } else { WF_TTWU };
    k.tasks[p as usize].cpu = target;
    ttwu_queue_wakelist(k, waker, p, target, wf).expect("a wakeup from the other LLC always uses the wakelist");
    target
}

/// The CPU a `sched_wakeup` of `pid` reported, if one was recorded.
fn woken_on(k: &Kernel, pid: u32) -> Option<CpuId> {
    k.trace.records.iter().find_map(|r| match r.event {
        Event::SchedWakeup { pid: p, target_cpu, .. } if p == pid => Some(target_cpu),
        _ => None,
    })
}

/// Two wakers on CPUs 2 and 3 (the other LLC) wake two tasks that last ran on CPU 1, while
/// CPUs 0 and 1 are idle. The first wakeup picks CPU 1. The second waker runs
/// `select_task_rq_fair()` at every instant until CPU 1's enqueue is visible; at the first
/// instant it picks CPU 1 (v6.1 only: the early clear) it completes its wakeup there, else it
/// completes it at the end with its last choice. Returns (second waker's choices, where the
/// two wakees were enqueued).
fn two_wakers(kernel: &str) -> (Vec<CpuId>, (CpuId, CpuId)) {
    let mut k = settled(kernel, false);
    let p1 = sleeper(&mut k, "wakee1", TARGET, None);
    let p2 = sleeper(&mut k, "wakee2", TARGET, None);
    let t1 = place_and_queue(&mut k, 2, p1);
    assert_eq!(t1, TARGET, "{kernel}: the first waker must pick the wakee's idle previous CPU");
    let limit = k.now + WINDOW_LIMIT_NS;
    let mut choices = Vec::new();
    let mut second = None;
    loop {
        let prev = k.tasks[p2 as usize].cpu;
        let (c, _) = select_task_rq_fair(&mut k, 3, p2, prev, false);
        choices.push(c);
        if c == TARGET {
            second = Some(place_and_queue(&mut k, 3, p2));
            break;
        }
        if k.cpus[TARGET as usize].rq.nr_running >= 1 {
            break;
        }
        assert!(step_one(&mut k, limit), "{kernel}: nothing left to run before the enqueue");
    }
    if second.is_none() {
        second = Some(place_and_queue(&mut k, 3, p2));
    }
    // Let both wakeups complete.
    let (pid1, pid2) = (pid_of(&k, p1), pid_of(&k, p2));
    while woken_on(&k, pid1).is_none() || woken_on(&k, pid2).is_none() {
        assert!(step_one(&mut k, limit + WINDOW_LIMIT_NS), "{kernel}: the wakees were never enqueued");
    }
    let placed = (woken_on(&k, pid1).expect("woken"), woken_on(&k, pid2).expect("woken"));
    assert_eq!(Some(placed.1), second);
    (choices, placed)
}

#[test]
fn v6_1_forced_interleaving_stacks_both_wakees_on_one_cpu() {
    let (choices, placed) = two_wakers("v6.1");
    assert_eq!(choices.last(), Some(&TARGET), "the second waker must see CPU {TARGET} idle inside the window");
    assert_eq!(placed, (TARGET, TARGET), "both wakees on CPU {TARGET} while CPU {SIBLING} idles");
}

#[test]
fn v6_2_second_waker_never_picks_the_pending_cpu() {
    let (choices, placed) = two_wakers("v6.2");
    assert!(choices.len() > 2, "scenario: the second waker looked at several instants: {choices:?}");
    assert!(!choices.contains(&TARGET), "the second waker picked CPU {TARGET} with a wakeup pending: {choices:?}");
    assert_eq!(placed.0, TARGET);
    assert_eq!(placed.1, SIBLING, "the second wakee goes to the other idle CPU of the LLC");
}
