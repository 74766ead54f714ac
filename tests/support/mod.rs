//! Shared helpers for the integration tests: building run specs, stepping a [`Kernel`] one
//! action at a time with per-CPU attribution of the counters, and searching trace records.
//!
//! Each test binary compiles this module on its own and uses a different subset of it.
#![allow(dead_code)]

use schedsim::linux::engine::{self, Action};
use schedsim::linux::{CpuId, Kernel};
use schedsim::run::{RunResult, RunSpec};
use schedsim::sim::Time;
use schedsim::trace::{flags, Event, Record, Sym, Vector};
use schedsim::workload::ipistorm::Ipistorm;
use schedsim::workload::params::Params;
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

/// The ipistorm state of a kernel.
pub fn ipistorm_of(k: &Kernel) -> &Ipistorm {
    match &k.wl {
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
        Action::Workload { .. } => 0,
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

/// Dispatch actions one at a time, as `Kernel::run` does, but without dropping the first
/// action past `limit` and without stopping when the workload finishes. After each action
/// `observe` sees the action and the kernel, and `stop` decides whether to return. Every
/// counter change of an action is attributed to the CPU that ran it (`per`). The phase and
/// irqs-off accounting is closed before returning.
pub fn step_until(
    k: &mut Kernel,
    limit: Time,
    per: &mut PerCpu,
    mut observe: impl FnMut(&Kernel, &Action, bool),
    mut stop: impl FnMut(&Kernel) -> bool,
) -> Stop {
    let res = loop {
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
        engine::dispatch(k, a);
        observe(k, &a, false);
        let s = &k.stats;
        per.idle_exits[cpu] += s.idle_exits - before.0;
        per.schedule_idle_calls[cpu] += s.schedule_idle_calls - before.1;
        per.newidle_calls[cpu] += s.newidle_calls - before.2;
        per.ipis_sent[cpu] += s.ipis_sent - before.3;
        per.ipis_avoided[cpu] += s.ipis_avoided - before.4;
        if stop(k) {
            break Stop::Pred;
        }
    };
    engine::account_all(k);
    res
}

/// A fresh per-CPU counter set for `k`.
pub fn per_cpu(k: &Kernel) -> PerCpu {
    PerCpu::new(k.cpus.len())
}

/// Run `k` until the workload finishes, then `extra` ns more (so CPUs settle back into
/// idle), attributing the counters to CPUs.
pub fn run_attributed(k: &mut Kernel, limit: Time, extra: Time) -> PerCpu {
    let mut per = per_cpu(k);
    let st = step_until(k, limit, &mut per, |_, _, _| {}, |k| k.finished);
    assert_eq!(st, Stop::Pred, "workload did not finish within {limit} ns");
    let until = k.now + extra;
    step_until(k, until, &mut per, |_, _, _| {}, |_| false);
    per
}
