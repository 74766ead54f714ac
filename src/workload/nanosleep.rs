//! Chen Yu's newidle stress (2024 series, thread 000): `procs` processes, each looping
//! `nanosleep(ns)` — 1 us by default, which the 50 us timer slack stretches — for
//! `duration_ms`. Every wakeup is genuine and every sleep makes a CPU newly idle.

use super::params::Params;
use super::TaskFrame;
use crate::limits::{MAX_LATENCY_NS, MAX_SIM_NS, MAX_TASKS};
use crate::linux::engine::{Action, Next};
use crate::linux::kernel::futex::Nanosleep;
use crate::linux::programs::resume_points;
use crate::linux::{CpuId, Kernel, TaskId};
use crate::sim::{Time, NSEC_PER_MSEC};

pub const PARAM_NAMES: &[&str] = &["procs", "ns", "duration_ms"];

#[derive(Debug, Clone)]
pub struct NanosleepLoop {
    pub procs: u32,
    pub ns: Time,
    pub duration_ns: Time,
    pub tasks: Vec<TaskId>,
    pub start_ns: Time,
    pub loops: u64,
    pub live: u32,
}

impl NanosleepLoop {
    pub fn parse(p: &Params, nr_cpus: u32) -> Result<NanosleepLoop, String> {
        p.check_known("nanosleep", PARAM_NAMES)?;
        let procs = p.u64_in("procs", nr_cpus as u64, 1, MAX_TASKS)? as u32;
        Ok(NanosleepLoop {
            procs,
            ns: p.time_ns("ns", 1000, 1, "ns", MAX_LATENCY_NS)?,
            duration_ns: p.time_ns("duration_ms", 100, NSEC_PER_MSEC, "ms", MAX_SIM_NS)?,
            tasks: Vec::new(),
            start_ns: 0,
            loops: 0,
            live: procs,
        })
    }
}

pub fn start(w: &mut NanosleepLoop, k: &mut Kernel) {
    let n = w.procs;
    let tasks = super::new_tasks(k, n, "nanosleep");
    let load = super::load_time(k, 0x1155);
    w.tasks = tasks;
    w.start_ns = load;
    k.q.push(load, Action::Program { what: 0 });
}

/// The parent forks every process (fork balancing places them).
pub fn on_action(w: &mut NanosleepLoop, k: &mut Kernel, _what: u32) {
    for t in w.tasks.clone() {
        super::spawn(k, 0, t);
    }
}

resume_points! {
    /// Where a nanosleep process resumes.
    enum LoopAt {
        /// Sleep again (or exit once the run's time is up).
        Sleep,
        Exited = super::EXITED,
    }
}

pub fn task_step(w: &mut NanosleepLoop, k: &mut Kernel, cpu: CpuId, s: &mut TaskFrame) -> Next {
    let end = w.start_ns + w.duration_ns;
    if LoopAt::from_u8(s.at) == LoopAt::Exited {
        unreachable!("nanosleep process ran after exit");
    }
    if k.now >= end {
        w.live -= 1;
        if w.live == 0 {
            super::all_exited(k);
        }
        return super::exit_current(k, cpu, s);
    }
    w.loops += 1;
    let ns = w.ns;
    Next::Call(k.costs.user_op, Nanosleep::with_timer_slack(ns))
}

impl super::Program for NanosleepLoop {
    fn parse(_name: &str, p: &Params, m: &crate::hw::Machine) -> Result<NanosleepLoop, String> {
        NanosleepLoop::parse(p, m.topo.nr_cpus)
    }
    fn planned_size(&self, _nr_cpus: u32) -> (u64, u64, &'static str) {
        (u64::from(self.procs), 0, "nanosleep procs=")
    }
    fn start(&mut self, k: &mut Kernel) {
        start(self, k)
    }
    fn on_action(&mut self, k: &mut Kernel, what: u32) {
        on_action(self, k, what)
    }
    #[inline]
    fn task_step(&mut self, k: &mut Kernel, cpu: CpuId, s: &mut TaskFrame) -> Next {
        task_step(self, k, cpu, s)
    }
    fn metric(&self, f: &super::RunFacts) -> super::Metric {
        super::Metric {
            name: "newidle_time",
            unit: "ms",
            lower_is_better: true,
            value: f.stats.newidle_ns as f64 / 1e6,
        }
    }
    fn json(&self, _f: &super::RunFacts) -> serde_json::Value {
        serde_json::json!({"name": "nanosleep", "procs": self.procs, "loops": self.loops})
    }
    fn text(&self, _f: &super::RunFacts) -> String {
        format!("nanosleep: {} processes, {} sleeps\n", self.procs, self.loops)
    }
}
