//! CPU-bound spinners started on chosen CPUs: the overload setups of the 2024 nohz threads.
//! `tasks` spinning tasks are started round-robin on `start` (a cpulist), allowed on every
//! CPU — as if started under `taskset -c START` and then given the full mask — and spin in
//! user mode for `duration_ms`. With `start` one CPU this is the ilb-polling setup; with
//! `start` one NUMA node, Julia Lawall's overloaded-node shape.
//!
//! The workload records when the machine is first "filled": no CPU has more than one
//! runnable task (read from the runqueues at each spinner's 1 ms check, never written).

use super::params::Params;
use super::TaskFrame;
use crate::hw::cpumask::{parse_cpulist, CpuMask};
use crate::limits::{MAX_SIM_NS, MAX_TASKS};
use crate::linux::engine::{Action, Next};
use crate::linux::programs::resume_points;
use crate::linux::{CpuId, Kernel, TaskId};
use crate::sim::{Time, NSEC_PER_MSEC};

pub const PARAM_NAMES: &[&str] = &["tasks", "start", "duration_ms"];

#[derive(Debug, Clone)]
pub struct Spinners {
    pub tasks: u32,
    pub start: CpuMask,
    pub duration_ns: Time,
    pub threads: Vec<TaskId>,
    pub start_ns: Time,
    /// First instant at which no CPU had more than one runnable task.
    pub filled_ns: Option<Time>,
    pub live: u32,
}

impl Spinners {
    pub fn parse(p: &Params, nr_cpus: u32) -> Result<Spinners, String> {
        p.check_known("spinners", PARAM_NAMES)?;
        let tasks = p.u64_in("tasks", 8, 1, MAX_TASKS)? as u32;
        let start = match p.get("start") {
            None => parse_cpulist("0", nr_cpus),
            Some(s) => parse_cpulist(s, nr_cpus),
        }
        .map_err(|e| format!("{}: parameter start: {e}", p.origin))?;
        if start.is_empty() {
            return Err(format!("{}: parameter start is empty", p.origin));
        }
        let duration_ns = p.time_ns("duration_ms", 200, NSEC_PER_MSEC, "ms", MAX_SIM_NS)?;
        Ok(Spinners { tasks, start, duration_ns, threads: Vec::new(), start_ns: 0, filled_ns: None, live: tasks })
    }

    /// Time from the start until the machine was filled (ms), if it was.
    pub fn time_to_fill_ns(&self) -> Option<Time> {
        self.filled_ns.map(|t| t - self.start_ns)
    }
}

pub fn start(w: &mut Spinners, k: &mut Kernel) {
    let n = w.tasks;
    let threads = super::new_tasks(k, n, "spinner");
    let load = super::load_time(k, 0x5B1);
    w.threads = threads;
    w.start_ns = load;
    k.q.push(load, Action::Program { what: 0 });
}

/// Start each spinner on its CPU of `start` (round-robin).
pub fn on_action(w: &mut Spinners, k: &mut Kernel, _what: u32) {
    let cpus: Vec<CpuId> = w.start.iter().collect();
    let threads = w.threads.clone();
    for (i, t) in threads.into_iter().enumerate() {
        let c = cpus[i % cpus.len()];
        // Started under taskset on its CPU; it may then run anywhere.
        super::spawn_on(k, c, t);
    }
}

resume_points! {
    /// Where a spinner resumes.
    enum SpinnerAt {
        /// Spin (or exit once the run's time is up).
        Spin,
        Exited = super::EXITED,
    }
}

pub fn task_step(w: &mut Spinners, k: &mut Kernel, cpu: CpuId, s: &mut TaskFrame) -> Next {
    let end = { w.start_ns + w.duration_ns };
    if SpinnerAt::from_u8(s.at) == SpinnerAt::Exited {
        unreachable!("spinner ran after exit");
    }
    if k.now >= end {
        w.live -= 1;
        if w.live == 0 {
            super::all_exited(k);
        }
        return super::exit_current(k, cpu, s);
    }
    if w.filled_ns.is_none() {
        let nr = k.m.topo.nr_cpus;
        if (0..nr).all(|c| k.cpus[c as usize].rq.cfs_h_nr_running <= 1) {
            let now = k.now;
            w.filled_ns = Some(now);
        }
    }
    // Spin 1 ms of user time (preemptible at any interrupt).
    s.user = true;
    Next::Cont(NSEC_PER_MSEC.min(end - k.now))
}

impl super::Program for Spinners {
    fn parse(_name: &str, p: &Params, m: &crate::hw::Machine) -> Result<Spinners, String> {
        Spinners::parse(p, m.topo.nr_cpus)
    }
    fn planned_size(&self, _nr_cpus: u32) -> (u64, u64, &'static str) {
        (u64::from(self.tasks), 0, "spinners tasks=")
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
        let v = self.time_to_fill_ns().unwrap_or(f.sim_ns) as f64 / 1e6;
        super::Metric { name: "time_to_fill", unit: "ms", lower_is_better: true, value: v }
    }
    fn json(&self, _f: &super::RunFacts) -> serde_json::Value {
        serde_json::json!({
            "name": "spinners",
            "tasks": self.tasks,
            "time_to_fill_ns": self.time_to_fill_ns(),
        })
    }
    fn text(&self, _f: &super::RunFacts) -> String {
        match self.time_to_fill_ns() {
            Some(t) => format!(
                "spinners: {} tasks; every CPU had at most one task after {:.3} ms\n",
                self.tasks,
                t as f64 / 1e6
            ),
            None => format!("spinners: {} tasks; some CPU still had several tasks at the end\n", self.tasks),
        }
    }
}
