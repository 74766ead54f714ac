//! ipistorm (Anton Blanchard, github.com/antonblanchard/ipistorm @ 6d93af8, 2021-05-02), as
//! the kernel module behaves, plus the `numipi` parameter of the modified version used for
//! the published SM_IDLE runs (docs/workloads.md §1).
//!
//! One kthread per CPU of `cpulist`, bound to it (SCHED_NORMAL, nice 0). Each computes its
//! target as `((cpu & ~mask) + ((cpu + offset) & mask)) % nr_cpu_ids` when `mask` is set and
//! `(cpu + offset) % nr_cpu_ids` otherwise — the published run (`offset=8 cpulist=8`) goes
//! CPU8 -> CPU16, which upstream's `% num_cpus` cannot give, so the modified module must use
//! `nr_cpu_ids` (an inference, docs/workloads.md §1.2). It then issues
//! `smp_call_function_single(target, do_nothing_ipi, NULL, wait)` (or `smp_call_function()`
//! to all others with `single=0`) and, between calls, `cond_resched()` or, with `delay`,
//! `usleep_range(delay, delay + 1)`. It stops after `numipi` calls, or after `timeout`
//! seconds when `numipi=0` (upstream behaviour; schedsim asks for `timeout=` explicitly then).

use super::params::Params;
use super::TaskFrame;
use crate::hw::cpumask::{parse_cpulist, CpuMask};
use crate::limits::{MAX_LATENCY_NS, MAX_SIM_NS};
use crate::linux::engine::{Action, Frame, Next};
use crate::linux::kernel::futex::Nanosleep;
use crate::linux::kernel::smp::SmpCallFunction;
use crate::linux::programs::resume_points;
use crate::linux::{CpuId, CsdFunc, Kernel, TaskId};
use crate::sim::{Time, NSEC_PER_MSEC, NSEC_PER_SEC, NSEC_PER_USEC};

/// The module parameters.
#[derive(Debug, Clone)]
pub struct IpistormParams {
    pub numipi: u64,
    pub timeout_s: u64,
    pub wait: bool,
    pub single: bool,
    pub offset: u64,
    pub mask: u64,
    pub delay_us: u64,
    pub cpulist: CpuMask,
}

/// The most calls a thread may be asked for (`numipi`): 100x the published run.
pub const MAX_NUMIPI: u64 = 10_000_000;

pub const PARAM_NAMES: &[&str] = &["numipi", "timeout", "wait", "single", "offset", "mask", "delay", "cpulist"];

impl IpistormParams {
    /// Parse module parameters for a machine with `nr_cpus` CPUs. Defaults are the module's
    /// (`timeout=30 wait=1 single=0 offset=1 mask=0 delay=0`, all CPUs), plus `numipi=0`.
    pub fn parse(p: &Params, nr_cpus: u32) -> Result<IpistormParams, String> {
        p.check_known("ipistorm", PARAM_NAMES)?;
        let cpulist = match p.get("cpulist") {
            None | Some("") => CpuMask::full(nr_cpus),
            // The built-in scenario's default is the published run's `cpulist=8 offset=8`, which
            // needs a machine of at least nine CPUs: say how to fit a smaller one.
            Some(s) => parse_cpulist(s, nr_cpus).map_err(|e| {
                format!(
                    "{}: parameter cpulist='{s}': {e}; give cpulist= (and offset=) naming CPUs this machine has",
                    p.origin
                )
            })?,
        };
        if cpulist.is_empty() {
            return Err(format!("{}: parameter cpulist is empty", p.origin));
        }
        // The module's parameters are C ints; schedsim bounds them further so a run stays
        // finite: numipi at most MAX_NUMIPI, timeout at most one hour of simulated time, delay
        // at most one second.
        let out = IpistormParams {
            numipi: p.u64_in("numipi", 0, 0, MAX_NUMIPI)?,
            timeout_s: p.time_ns("timeout", 30, NSEC_PER_SEC, "s", MAX_SIM_NS)? / NSEC_PER_SEC,
            wait: p.bool_or("wait", true)?,
            single: p.bool_or("single", false)?,
            offset: p.u64_in("offset", 1, 0, i32::MAX as u64)?,
            mask: p.u64_in("mask", 0, 0, i32::MAX as u64)?,
            delay_us: p.time_ns("delay", 0, NSEC_PER_USEC, "us", MAX_LATENCY_NS)? / NSEC_PER_USEC,
            cpulist,
        };
        if out.numipi == 0 && out.timeout_s == 0 {
            return Err(format!("{}: numipi=0 and timeout=0: the run would never send anything", p.origin));
        }
        if out.numipi == 0 && p.get("timeout").is_none() {
            // Upstream's numipi=0 means "call until `timeout` seconds have passed" (30 s by
            // default: tens of millions of calls). Ask for it explicitly.
            return Err(format!(
                "{}: numipi=0 means the module's timed mode (call for timeout=SECONDS, tens of millions of \
                 calls for the default 30 s); give numipi=1..={MAX_NUMIPI}, or numipi=0 with timeout=SECONDS explicitly",
                p.origin
            ));
        }
        Ok(out)
    }

    /// The target of the thread on `cpu`.
    pub fn target(&self, cpu: CpuId, nr_cpus: u32) -> CpuId {
        let c = cpu as u64;
        let t = if self.mask != 0 { (c & !self.mask) + ((c + self.offset) & self.mask) } else { c + self.offset };
        (t % nr_cpus as u64) as CpuId
    }
}

/// Per-run state and results.
#[derive(Debug, Clone)]
pub struct Ipistorm {
    pub p: IpistormParams,
    pub threads: Vec<TaskId>,
    /// When the module's init woke the threads.
    pub load_ns: Time,
    /// First call issued / last call completed.
    pub first_call_ns: Option<Time>,
    pub last_done_ns: Time,
    pub running: u32,
    /// When the current call of the thread bound to each CPU began (indexed by CPU; each
    /// thread is bound to its CPU, `kthread_create_on_cpu()`).
    pub call_start: Vec<Time>,
    /// Calls whose notification was a flag on a polling CPU, or a real IPI, or neither
    /// (coalesced behind an earlier entry).
    pub calls_polling: u64,
    pub calls_ipi: u64,
    pub calls_coalesced: u64,
    /// Total call latency (smp_call_function_single entry to return) by kind.
    pub ns_polling: u64,
    pub ns_ipi: u64,
    pub ns_coalesced: u64,
    /// `single` calls by where their target was when the call began (indexed by
    /// [`TargetAt`]): what the notification found on the other side.
    pub target_at_call: [u64; 4],
}

/// Where the target of a call is at the call's start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TargetAt {
    /// Halted in an idle state (MWAIT, HLT or WFI, an I/O-port C-state): only an interrupt,
    /// or for MWAIT a write to its flag line, wakes it.
    Halted = 0,
    /// In `poll_idle()`, running with TIF_POLLING_NRFLAG set.
    PollIdle = 1,
    /// The idle task running outside an idle state (the idle loop's entry or exit path, an
    /// interrupt taken in it).
    IdleAwake = 2,
    /// Running a task.
    Busy = 3,
}

impl TargetAt {
    pub const ALL: [TargetAt; 4] = [TargetAt::Halted, TargetAt::PollIdle, TargetAt::IdleAwake, TargetAt::Busy];

    /// The state of `cpu` now.
    pub fn of(k: &Kernel, cpu: CpuId) -> TargetAt {
        use crate::linux::engine::WaitOn;
        let c = &k.cpus[cpu as usize];
        match c.x.waiting {
            Some(w) if w.halts() => TargetAt::Halted,
            Some(WaitOn::PollIdle) => TargetAt::PollIdle,
            _ if k.curr(cpu) == c.rq.idle => TargetAt::IdleAwake,
            _ => TargetAt::Busy,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            TargetAt::Halted => "halted",
            TargetAt::PollIdle => "poll_idle",
            TargetAt::IdleAwake => "idle task awake",
            TargetAt::Busy => "busy",
        }
    }
}

impl Ipistorm {
    pub fn new(p: IpistormParams) -> Ipistorm {
        Ipistorm {
            p,
            threads: Vec::new(),
            load_ns: 0,
            first_call_ns: None,
            last_done_ns: 0,
            running: 0,
            call_start: Vec::new(),
            calls_polling: 0,
            calls_ipi: 0,
            calls_coalesced: 0,
            ns_polling: 0,
            ns_ipi: 0,
            ns_coalesced: 0,
            target_at_call: [0; 4],
        }
    }

    pub fn calls(&self) -> u64 {
        self.calls_polling + self.calls_ipi + self.calls_coalesced
    }

    /// Time from the first call to the last completion.
    pub fn total_ns(&self) -> Time {
        self.last_done_ns.saturating_sub(self.first_call_ns.unwrap_or(0))
    }
}

/// `module_init`: create the threads; they are woken at a seed-dependent instant in the
/// first tick after 1 ms, so seeds differ in the phase of the run against the tick.
pub fn start(w: &mut Ipistorm, k: &mut Kernel) {
    let cpus: Vec<CpuId> = w.p.cpulist.iter().collect();
    let mut threads = Vec::new();
    for c in cpus {
        // kthread_create_on_cpu(): bound to its CPU.
        let t = crate::linux::kernel::fork::kthread_create(k, format!("ipistorm/{c}"), 0, 120, Some(c), 0);
        threads.push(t);
    }
    let nr_cpus = k.m.topo.nr_cpus;
    let tick = k.tick_nsec();
    let mut r = crate::sim::Prng::new(k.cpus[0].rng.next_u64(), 0x1D5);
    let load = k.measure_from + NSEC_PER_MSEC + r.range(0, tick - 1);
    w.running = threads.len() as u32;
    w.threads = threads;
    w.call_start = vec![0; nr_cpus as usize];
    w.load_ns = load;
    k.q.push(load, Action::Program { what: 0 });
}

/// The module init wakes every thread (`wake_up_process` after `kthread_create`). insmod is
/// not itself modelled as a task: it runs on the first CPU without an ipistorm thread (or CPU
/// 0 if every CPU has one, in which case a thread bound to that CPU is started by a RESCHEDULE
/// interrupt standing in for insmod reaching its next preemption point).
pub fn on_action(w: &mut Ipistorm, k: &mut Kernel, _what: u32) {
    let threads = w.threads.clone();
    let nr = k.m.topo.nr_cpus;
    let insmod_cpu = (0..nr).find(|&c| !w.p.cpulist.test(c)).unwrap_or(0);
    for t in threads {
        super::spawn(k, insmod_cpu, t);
    }
}

resume_points! {
    /// Where an ipistorm kthread resumes.
    enum KthreadAt {
        /// Note the loop start.
        Start,
        /// Stop when done, else send the next cross-call.
        Call,
        /// The cross-call returned: account it, then pause.
        Returned,
        Exited = super::EXITED,
    }
}

/// One step of an ipistorm kthread.
pub fn kthread_step(w: &mut Ipistorm, k: &mut Kernel, cpu: CpuId, s: &mut TaskFrame) -> Next {
    let nr = k.m.topo.nr_cpus;
    match KthreadAt::from_u8(s.at) {
        KthreadAt::Start => {
            // The module counted its threads when it created them (`running`); the start
            // barrier (spin until all are running) is not modelled beyond the wakeup itself.
            s.at = KthreadAt::Call as u8;
            s.mark[0] = k.now; // loop start, for the timeout
            Next::Cont(0)
        }
        KthreadAt::Call => {
            let now = k.now;
            let p = &w.p;
            let done = if p.numipi > 0 { s.i >= p.numipi } else { now >= s.mark[0] + p.timeout_s * NSEC_PER_SEC };
            if done {
                w.running -= 1;
                if w.running == 0 {
                    super::all_exited(k);
                }
                // The kthread returns from its function: do_exit().
                s.at = KthreadAt::Exited as u8;
                return Next::Call(0, crate::linux::kernel::exit::do_exit_unwaited(k, cpu, true));
            }
            let target = p.target(cpu, nr);
            let wait = p.wait;
            let single = p.single;
            s.mark[1] = k.stats.ipis_sent;
            s.mark[2] = k.stats.ipis_avoided;
            w.call_start[cpu as usize] = now;
            w.first_call_ns.get_or_insert(now);
            if single {
                w.target_at_call[TargetAt::of(k, target) as usize] += 1;
            }
            s.at = KthreadAt::Returned as u8;
            let call = if single {
                SmpCallFunction::single(target, CsdFunc::DoNothingIpi, wait)
            } else {
                SmpCallFunction::all_but_self(CsdFunc::DoNothingIpi, wait)
            };
            Next::Call(0, Frame::SmpCallFunction(call))
        }
        KthreadAt::Returned => {
            let now = k.now;
            let (before_ipis, before_avoided) = (s.mark[1], s.mark[2]);
            let (ipis, avoided) = (k.stats.ipis_sent, k.stats.ipis_avoided);
            let dt = now - w.call_start[cpu as usize];
            if ipis > before_ipis {
                w.calls_ipi += 1;
                w.ns_ipi += dt;
            } else if avoided > before_avoided {
                w.calls_polling += 1;
                w.ns_polling += dt;
            } else {
                w.calls_coalesced += 1;
                w.ns_coalesced += dt;
            }
            w.last_done_ns = now;
            s.i += 1;
            let delay = w.p.delay_us;
            if delay > 0 {
                // usleep_range(delay, delay + 1): an hrtimer sleep over that range.
                s.at = KthreadAt::Call as u8;
                return Next::Call(0, Nanosleep::range(delay * NSEC_PER_USEC, (delay + 1) * NSEC_PER_USEC));
            }
            s.at = KthreadAt::Call as u8;
            match crate::linux::kernel::sched::core::cond_resched(k, cpu) {
                Some(f) => Next::Call(k.costs.cond_resched, f),
                None => Next::Cont(k.costs.cond_resched),
            }
        }
        KthreadAt::Exited => unreachable!("ipistorm thread ran after exit"),
    }
}

impl super::Program for Ipistorm {
    fn parse(_name: &str, p: &Params, m: &crate::hw::Machine) -> Result<Ipistorm, String> {
        Ok(Ipistorm::new(IpistormParams::parse(p, m.topo.nr_cpus)?))
    }
    fn planned_size(&self, nr_cpus: u32) -> (u64, u64, &'static str) {
        // At most one kthread per CPU of its cpulist.
        (u64::from(nr_cpus), 0, "ipistorm cpulist=")
    }
    fn start(&mut self, k: &mut Kernel) {
        start(self, k)
    }
    fn on_action(&mut self, k: &mut Kernel, what: u32) {
        on_action(self, k, what)
    }
    #[inline]
    fn task_step(&mut self, k: &mut Kernel, cpu: CpuId, s: &mut TaskFrame) -> Next {
        kthread_step(self, k, cpu, s)
    }
    fn metric(&self, _f: &super::RunFacts) -> super::Metric {
        super::Metric { name: "time", unit: "ms", lower_is_better: true, value: self.total_ns() as f64 / 1e6 }
    }
    fn json(&self, _f: &super::RunFacts) -> serde_json::Value {
        serde_json::json!({
            "name": "ipistorm",
            "calls": self.calls(),
            "total_ns": self.total_ns(),
            "calls_polling": self.calls_polling,
            "calls_ipi": self.calls_ipi,
            "calls_coalesced": self.calls_coalesced,
            "mean_call_ns_polling": self.ns_polling.checked_div(self.calls_polling),
            "mean_call_ns_ipi": self.ns_ipi.checked_div(self.calls_ipi),
        })
    }
    fn text(&self, f: &super::RunFacts) -> String {
        let mut o = String::new();
        for c in self.p.cpulist.iter() {
            o.push_str(&format!("ipistorm: {c} -> {}\n", self.p.target(c, f.nr_cpus)));
        }
        o.push_str(&format!(
            "ipistorm: {} calls in {:.3} ms ({:.0} ns per call)\n",
            self.calls(),
            self.total_ns() as f64 / 1e6,
            self.total_ns() as f64 / self.calls().max(1) as f64
        ));
        let pct = |n: u64| 100.0 * n as f64 / self.calls().max(1) as f64;
        o.push_str(&format!(
            "ipistorm: {:.1}% of calls notified by polling (mean {} ns), {:.1}% by a real IPI (mean {} ns), {:.1}% coalesced\n",
            pct(self.calls_polling),
            self.ns_polling.checked_div(self.calls_polling).unwrap_or(0),
            pct(self.calls_ipi),
            self.ns_ipi.checked_div(self.calls_ipi).unwrap_or(0),
            pct(self.calls_coalesced)
        ));
        o
    }
}
