//! Shared helpers for the integration tests (their specs run with `background = none`: each
//! scenario shows one mechanism, on a machine that runs nothing else): building run specs, stepping a [`Kernel`] one
//! action at a time with per-CPU attribution of the counters, and searching trace records.
//!
//! Each test binary compiles this module on its own and uses a different subset of it.
#![allow(dead_code)]

use schedsim::linux::engine::{self, Action};
use schedsim::linux::kernel::sched::{TaskKind, TASK_INTERRUPTIBLE};
use schedsim::linux::kernel::softirq::ksoftirqd_initial_stack;
use schedsim::linux::{CpuId, Kernel, TaskId};
use schedsim::run::{execute, RunResult, RunWorld};
use schedsim::sim::queue::Chooser;
use schedsim::sim::Time;
use schedsim::spec::RunSpec;
use schedsim::trace::{flags, Event, Record, Sym, Vector};
use schedsim::workload::ipistorm::Ipistorm;
use schedsim::workload::params::Params;
use schedsim::workload::schbench::Schbench;
use schedsim::workload::spinners::Spinners;
use schedsim::workload::Workload;

/// `cpu_idle` with `state=4294967295` (PWR_EVENT_EXIT): leaving an idle state.
pub const PWR_EVENT_EXIT: u32 = u32::MAX;

/// An ipistorm spec. `c2`: `Some(on)` enables or disables the C2 state of the machine.
pub fn ipistorm_spec(
    machine: &str,
    kernel: &str,
    patches: &str,
    params: &[&str],
    c2: Option<bool>,
    trace: bool,
) -> RunSpec {
    let mut s = RunSpec::new("ipistorm");
    // Hand-made mechanism scenarios run on a quiet machine: no background activity.
    s.background = Some("none".into());
    s.machine = machine.into();
    s.kernel = kernel.into();
    s.patches = patches.into();
    s.params = Params::parse(params.iter().copied(), "test").expect("valid ipistorm parameters");
    if let Some(on) = c2 {
        s.idle_states = vec![("C2".into(), on)];
    }
    s.trace = trace;
    s
}

/// A spec for the `idle` workload on `machine` (nothing runs; every CPU idles).
pub fn idle_spec(machine: &str, kernel: &str, patches: &str) -> RunSpec {
    let mut s = RunSpec::new("idle");
    // Hand-made mechanism scenarios run on a quiet machine: no background activity.
    s.background = Some("none".into());
    s.machine = machine.into();
    s.kernel = kernel.into();
    s.patches = patches.into();
    s
}

/// The ipistorm state of a finished run.
pub fn ipistorm(r: &RunResult) -> &Ipistorm {
    match &r.workload {
        Workload::Ipistorm(w) => w,
        other => panic!("not an ipistorm run: {other:?}"),
    }
}

/// The ipistorm state of a run's world.
pub fn ipistorm_of(k: &RunWorld) -> &Ipistorm {
    match &k.progs.workload {
        Workload::Ipistorm(w) => w,
        other => panic!("not an ipistorm kernel: {other:?}"),
    }
}

/// Whether a record's `common_flags` has `bit`.
pub fn has_flag(r: &Record, bit: u8) -> bool {
    r.flags & bit != 0
}

/// Index of the first record at or after `from` that matches.
pub fn find_from(trace: &[Record], from: usize, pred: impl Fn(&Record) -> bool) -> Option<usize> {
    trace.iter().skip(from).position(pred).map(|i| i + from)
}

/// Indices of every matching record.
pub fn positions(trace: &[Record], pred: impl Fn(&Record) -> bool) -> Vec<usize> {
    trace.iter().enumerate().filter(|(_, r)| pred(r)).map(|(i, _)| i).collect()
}

pub fn is_idle_exit(r: &Record, cpu: CpuId) -> bool {
    r.cpu == cpu && matches!(r.event, Event::CpuIdle { state, .. } if state == PWR_EVENT_EXIT)
}

pub fn is_idle_enter(r: &Record, cpu: CpuId) -> bool {
    r.cpu == cpu && matches!(r.event, Event::CpuIdle { state, .. } if state != PWR_EVENT_EXIT)
}

pub fn is_csd_entry(r: &Record, cpu: CpuId, func: Sym) -> bool {
    r.cpu == cpu && matches!(r.event, Event::CsdFunctionEntry { func: f, .. } if f == func)
}

pub fn is_csd_exit(r: &Record, cpu: CpuId, func: Sym) -> bool {
    r.cpu == cpu && matches!(r.event, Event::CsdFunctionExit { func: f, .. } if f == func)
}

pub fn is_vector_entry(r: &Record, cpu: CpuId, vector: Vector) -> bool {
    r.cpu == cpu && matches!(r.event, Event::VectorEntry { vector: v } if v == vector)
}

pub fn is_vector_exit(r: &Record, cpu: CpuId, vector: Vector) -> bool {
    r.cpu == cpu && matches!(r.event, Event::VectorExit { vector: v } if v == vector)
}

/// `ipi_send_cpu` of a CALL_FUNCTION_SINGLE IPI to `target`.
pub fn is_cfs_ipi_send(r: &Record, target: CpuId) -> bool {
    matches!(r.event, Event::IpiSendCpu { cpu, callback: Sym::GenericSmpCallFunctionSingleInterrupt, .. } if cpu == target)
}

pub fn is_wake_without_ipi(r: &Record, target: CpuId) -> bool {
    matches!(r.event, Event::SchedWakeIdleWithoutIpi { cpu } if cpu == target)
}

pub fn is_csd_queue(r: &Record, from: CpuId, target: CpuId) -> bool {
    r.cpu == from && matches!(r.event, Event::CsdQueueCpu { cpu, .. } if cpu == target)
}

pub fn is_switch(r: &Record, cpu: CpuId) -> bool {
    r.cpu == cpu && matches!(r.event, Event::SchedSwitch { .. })
}

/// The state index of the last idle-state entry on `cpu` before record `before`.
pub fn idle_state_before(trace: &[Record], cpu: CpuId, before: usize) -> Option<u32> {
    trace[..before].iter().rev().find(|r| is_idle_enter(r, cpu)).map(|r| match r.event {
        Event::CpuIdle { state, .. } => state,
        _ => unreachable!(),
    })
}

/// A short rendering of the records of some CPUs, for assertion messages.
pub fn render(trace: &[Record], cpus: &[CpuId], max: usize) -> String {
    let mut s = String::new();
    for (i, r) in trace.iter().enumerate().filter(|(_, r)| cpus.contains(&r.cpu)).take(max) {
        let irq = if has_flag(r, flags::HARDIRQ) { 'h' } else { '.' };
        let off = if has_flag(r, flags::IRQS_OFF) { 'd' } else { '.' };
        s.push_str(&format!("  #{i:<5} {:>10} cpu{} {off}{irq} {:?}\n", r.ts_ns, r.cpu, r.event));
    }
    s
}

/// Counters of [`schedsim::linux::stats::Stats`] attributed to the CPU whose action changed
/// them.
#[derive(Debug, Clone)]
pub struct PerCpu {
    pub idle_exits: Vec<u64>,
    pub schedule_idle_calls: Vec<u64>,
    pub newidle_calls: Vec<u64>,
    pub ipis_sent: Vec<u64>,
    pub ipis_avoided: Vec<u64>,
}

impl PerCpu {
    fn new(nr: usize) -> PerCpu {
        PerCpu {
            idle_exits: vec![0; nr],
            schedule_idle_calls: vec![0; nr],
            newidle_calls: vec![0; nr],
            ipis_sent: vec![0; nr],
            ipis_avoided: vec![0; nr],
        }
    }
}

/// The CPU that runs when `a` is dispatched (workload actions run on CPU 0, the module's
/// init CPU).
pub fn action_cpu(a: &Action) -> CpuId {
    match *a {
        Action::Resume { cpu, .. } | Action::Irq { cpu, .. } | Action::ApicTimer { cpu, .. } => cpu,
        Action::Program { .. } => 0,
    }
}

/// What made [`step_until`] return.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// The predicate held after an action.
    Pred,
    /// The next action is after the limit (it stays queued: the run can be continued).
    Limit,
    /// Nothing left to do.
    Empty,
}

/// Dispatch actions one at a time, as `World::run` does, but without dropping the first
/// action past `limit` and without stopping when the workload finishes. After each action
/// `observe` sees the action and the kernel, and `stop` decides whether to return. Every
/// counter change of an action is attributed to the CPU that ran it (`per`). The phase and
/// irqs-off accounting is closed before returning.
pub fn step_until(
    w: &mut RunWorld,
    limit: Time,
    per: &mut PerCpu,
    mut observe: impl FnMut(&Kernel, &Action, bool),
    mut stop: impl FnMut(&RunWorld) -> bool,
) -> Stop {
    let res = loop {
        let k = &mut w.k;
        let Some(t) = k.q.peek_time() else {
            break Stop::Empty;
        };
        if t > limit {
            break Stop::Limit;
        }
        let (t, a) = k.q.pop().expect("peeked");
        assert!(t >= k.now, "time went backwards");
        k.now = t;
        k.actions += 1;
        let cpu = action_cpu(&a) as usize;
        let s = &k.stats;
        let before = (s.idle_exits, s.schedule_idle_calls, s.newidle_calls, s.ipis_sent, s.ipis_avoided);
        observe(k, &a, true);
        engine::dispatch(k, &mut w.progs, a);
        let k = &mut w.k;
        observe(k, &a, false);
        let s = &k.stats;
        per.idle_exits[cpu] += s.idle_exits - before.0;
        per.schedule_idle_calls[cpu] += s.schedule_idle_calls - before.1;
        per.newidle_calls[cpu] += s.newidle_calls - before.2;
        per.ipis_sent[cpu] += s.ipis_sent - before.3;
        per.ipis_avoided[cpu] += s.ipis_avoided - before.4;
        if stop(w) {
            break Stop::Pred;
        }
    };
    engine::account_all(&mut w.k);
    res
}

/// A fresh per-CPU counter set for `k`.
pub fn per_cpu(k: &Kernel) -> PerCpu {
    PerCpu::new(k.cpus.len())
}

/// Run `k` until the workload finishes, then `extra` ns more (so CPUs settle back into
/// idle), attributing the counters to CPUs.
pub fn run_attributed(k: &mut RunWorld, limit: Time, extra: Time) -> PerCpu {
    let mut per = per_cpu(k);
    let st = step_until(k, limit, &mut per, |_, _, _| {}, |k| k.finished());
    assert_eq!(st, Stop::Pred, "workload did not finish within {limit} ns");
    let until = k.now + extra;
    step_until(k, until, &mut per, |_, _, _| {}, |_| false);
    per
}

// ---------------------------------------------------------------------------------------
// Specs of the other workloads
// ---------------------------------------------------------------------------------------

/// A spinners spec: `tasks` CPU-bound tasks started round-robin on `start` (a cpulist), for
/// `duration_ms`. `c2`: `Some(on)` enables or disables the C2 state of the machine.
#[allow(clippy::too_many_arguments)]
pub fn spinners_spec(
    machine: &str,
    kernel: &str,
    patches: &str,
    tasks: u32,
    start: &str,
    duration_ms: u64,
    c2: Option<bool>,
    trace: bool,
) -> RunSpec {
    let mut s = RunSpec::new("spinners");
    // Hand-made mechanism scenarios run on a quiet machine: no background activity.
    s.background = Some("none".into());
    s.machine = machine.into();
    s.kernel = kernel.into();
    s.patches = patches.into();
    let (t, st, d) = (format!("tasks={tasks}"), format!("start={start}"), format!("duration_ms={duration_ms}"));
    s.params = Params::parse([t.as_str(), st.as_str(), d.as_str()], "test").expect("valid spinners parameters");
    if let Some(on) = c2 {
        s.idle_states = vec![("C2".into(), on)];
    }
    s.trace = trace;
    s
}

/// A schbench spec; `args` is schbench's own command line (e.g. "-m 1 -t 4 -r 7").
pub fn schbench_spec(machine: &str, kernel: &str, patches: &str, args: &str, trace: bool) -> RunSpec {
    let mut s = RunSpec::new("schbench");
    // Hand-made mechanism scenarios run on a quiet machine: no background activity.
    s.background = Some("none".into());
    s.machine = machine.into();
    s.kernel = kernel.into();
    s.patches = patches.into();
    let a = format!("args={args}");
    s.params = Params::parse([a.as_str()], "test").expect("valid schbench parameters");
    s.trace = trace;
    s
}

/// The schbench state of a finished run.
pub fn schbench_of(r: &RunResult) -> &Schbench {
    match &r.workload {
        Workload::Schbench(w) => w,
        other => panic!("not a schbench run: {other:?}"),
    }
}

/// The spinners state of a finished run.
pub fn spinners_of(r: &RunResult) -> &Spinners {
    match &r.workload {
        Workload::Spinners(w) => w,
        other => panic!("not a spinners run: {other:?}"),
    }
}

// ---------------------------------------------------------------------------------------
// Driving a built kernel by hand
// ---------------------------------------------------------------------------------------

/// Give every timed step of every CPU its own queue action: the executor's run-ahead (which
/// takes a CPU's next step inline when nothing else is due first) needs the FIFO chooser, so a
/// recording chooser turns it off without changing the order of anything. After this,
/// [`step_until`] observes the machine between any two steps that are apart in time.
pub fn no_run_ahead(k: &mut Kernel) {
    k.q.chooser = Chooser::Record { choices: Vec::new() };
}

/// Run `k` up to the absolute time `t` (actions due later stay queued).
pub fn run_until(k: &mut RunWorld, t: Time) {
    let mut per = per_cpu(k);
    let st = step_until(k, t, &mut per, |_, _, _| {}, |_| false);
    assert_ne!(st, Stop::Pred);
}

/// Dispatch exactly one action (the earliest queued); false if nothing was queued before
/// `limit`.
pub fn step_one(k: &mut RunWorld, limit: Time) -> bool {
    let mut per = per_cpu(k);
    step_until(k, limit, &mut per, |_, _, _| {}, |_| true) == Stop::Pred
}

/// Create a workload task asleep in `schedule()` (TASK_INTERRUPTIBLE) that last ran on
/// `prev_cpu`, optionally bound to one CPU. Its code is the smpboot thread loop with nothing
/// to do (the body of an idle ksoftirqd): each time it is woken it runs, finds no work and
/// sleeps again, so a test can wake it with any workload — including `idle`, which has no
/// task code of its own.
pub fn sleeper(k: &mut Kernel, comm: &str, prev_cpu: CpuId, pinned: Option<CpuId>) -> TaskId {
    let t = k.new_task(TaskKind::Workload, comm.into(), 0, 120, pinned);
    let task = &mut k.tasks[t as usize];
    task.state = TASK_INTERRUPTIBLE;
    task.cpu = prev_cpu;
    task.saved = ksoftirqd_initial_stack();
    t
}

/// The pid of a task.
pub fn pid_of(k: &Kernel, t: TaskId) -> u32 {
    k.tasks[t as usize].pid
}

/// `sched_waking` of `pid` recorded on `cpu`.
pub fn is_waking(r: &Record, cpu: CpuId, pid: u32) -> bool {
    r.cpu == cpu && matches!(r.event, Event::SchedWaking { pid: p, .. } if p == pid)
}

/// `sched_wakeup` of `pid` recorded on `cpu`.
pub fn is_wakeup(r: &Record, cpu: CpuId, pid: u32) -> bool {
    r.cpu == cpu && matches!(r.event, Event::SchedWakeup { pid: p, .. } if p == pid)
}

/// `sched_switch` on `cpu` from `prev` to `next`.
pub fn is_switch_between(r: &Record, cpu: CpuId, prev: u32, next: u32) -> bool {
    r.cpu == cpu
        && matches!(r.event, Event::SchedSwitch { prev_pid, next_pid, .. } if prev_pid == prev && next_pid == next)
}

/// `softirq_raise`, `softirq_entry` of vector `vec` on `cpu`.
pub fn is_softirq_raise(r: &Record, cpu: CpuId, vec: u32) -> bool {
    r.cpu == cpu && matches!(r.event, Event::SoftirqRaise { vec: v } if v == vec)
}

pub fn is_softirq_entry(r: &Record, cpu: CpuId, vec: u32) -> bool {
    r.cpu == cpu && matches!(r.event, Event::SoftirqEntry { vec: v } if v == vec)
}

// ---------------------------------------------------------------------------------------
// The ilb-polling setup of the 2024 nohz series
// ---------------------------------------------------------------------------------------

/// The CPU the spinners of [`ilb_polling_spec`] start on.
pub const ILB_BUSY_CPU: CpuId = 0;
/// The idle load balancer of that setup: the first CPU of `nohz.idle_cpus_mask`.
pub const ILB_CPU: CpuId = 1;

/// The ilb-polling setup (docs/kernel-model.md F7) on smp-4: `tasks` CPU-bound spinners
/// started round-robin on `start` for 20 ms, while the other CPUs idle with their ticks
/// stopped. C2 is off, so every idle CPU polls (POLL or C1 MWAIT): a kick is delivered by
/// setting NEED_RESCHED on the ILB CPU's idle task, and `nohz_csd_func()` runs from the idle
/// task's flush.
pub fn ilb_polling_spec(kernel: &str, patches: &str, tasks: u32, start: &str, preempt_rt: bool) -> RunSpec {
    let mut s = spinners_spec("smp-4", kernel, patches, tasks, start, 20, Some(false), true);
    s.preempt_rt = preempt_rt;
    s
}

/// [`ilb_polling_spec`] with three spinners on CPU 0, run to completion.
pub fn ilb_polling_run(kernel: &str, patches: &str, preempt_rt: bool) -> RunResult {
    let r = schedsim::run::execute(&ilb_polling_spec(kernel, patches, 3, "0", preempt_rt)).expect("valid spec");
    assert!(r.finished, "{kernel}{patches}: the spinners did not finish");
    r
}

/// One ILB kick: where `kick_ilb()` queued `nohz_csd` and how the target was notified.
#[derive(Debug, Clone, Copy)]
pub struct Kick {
    /// Index of the `csd_queue_cpu` record.
    pub queue: usize,
    pub from: CpuId,
    pub target: CpuId,
    /// Notified by NEED_RESCHED on a polling idle task (`sched_wake_idle_without_ipi`).
    pub polling: bool,
    /// Notified by a CALL_FUNCTION_SINGLE IPI.
    pub ipi: bool,
}

/// Every kick of a traced run.
pub fn kicks(trace: &[Record]) -> Vec<Kick> {
    positions(trace, |r| matches!(r.event, Event::CsdQueueCpu { callsite: Sym::KickIlb, .. }))
        .into_iter()
        .map(|i| {
            let from = trace[i].cpu;
            let Event::CsdQueueCpu { cpu: target, .. } = trace[i].event else { unreachable!() };
            let next = find_from(trace, i + 1, |r| r.cpu == from).map(|j| trace[j].event);
            let polling = matches!(next, Some(Event::SchedWakeIdleWithoutIpi { cpu }) if cpu == target);
            let ipi = matches!(next, Some(Event::IpiSendCpu { cpu, callsite: Sym::KickIlb, .. }) if cpu == target);
            Kick { queue: i, from, target, polling, ipi }
        })
        .collect()
}

/// Indices of the `csd_function_entry` records of `nohz_csd_func` (on any CPU).
pub fn nohz_csd_runs(trace: &[Record]) -> Vec<usize> {
    positions(trace, |r| matches!(r.event, Event::CsdFunctionEntry { func: Sym::NohzCsdFunc, .. }))
}

/// `sched_migrate_task` records: (index, recording CPU, pid, orig_cpu, dest_cpu).
pub fn migrations(trace: &[Record]) -> Vec<(usize, CpuId, u32, CpuId, CpuId)> {
    trace
        .iter()
        .enumerate()
        .filter_map(|(i, r)| match r.event {
            Event::SchedMigrateTask { pid, orig_cpu, dest_cpu, .. } => Some((i, r.cpu, pid, orig_cpu, dest_cpu)),
            _ => None,
        })
        .collect()
}

/// The pid of `ksoftirqd/cpu` in a run.
pub fn ksoftirqd_pid(r: &RunResult, cpu: CpuId) -> u32 {
    let name = format!("ksoftirqd/{cpu}");
    r.comms.iter().find(|(_, c)| *c == name).map(|(p, _)| *p).expect("every CPU has a ksoftirqd")
}

/// The pinned pipe ping-pong across the two LLCs of smp-4 (wakeups go through the wakelist),
/// quiet, with checks on, 200 ms at most: the run in which reverting 82c65d60d644 strands a
/// csd behind an elided IPI and loses the wakeup queued behind it.
pub fn pingpong_82c65d60d644(patches: &str, seed: u64) -> RunResult {
    let mut s = RunSpec::new("pingpong");
    s.background = Some("none".into());
    s.machine = "smp-4".into();
    s.kernel = "v6.10".into();
    s.patches = patches.into();
    s.params = Params::parse(["ping_cpu=0", "pong_cpu=2", "iters=2000"], "test").expect("valid parameters");
    s.limit_ns = 200_000_000;
    s.check = true;
    s.seed = seed;
    execute(&s).expect("valid spec")
}

/// The first seed (of 1..=60) whose ping-pong meets the race with 82c65d60d644 reverted: the
/// run stalls with a call-single csd stranded (its lock held past the bound) behind the elided
/// IPI and the wakeup queued behind it lost. (Some seeds elide the IPI of a wakelist kick
/// instead: that loses the wakeup too, with no csd lock held.) The race needs its timing, and
/// every change of a cost moves which seeds have it (seed 1 had it until switch_mm's charge, 12
/// until one draw per distance): the tests that need it look for it, and fail if none of 60
/// seeds has it.
pub fn race_seed_82c65d60d644() -> u64 {
    use schedsim::linux::check::Rule;
    (1..=60)
        .find(|&seed| {
            let r = pingpong_82c65d60d644("-82c65d60d644", seed);
            let c = r.checks.as_ref().expect("checks on");
            !r.finished
                && [Rule::IpiElidedNotPolling, Rule::LostWakeup, Rule::CsdLockHeld].iter().all(|&x| c.count(x) > 0)
        })
        .expect("some seed of 1..=60 meets the race with 82c65d60d644 reverted")
}
