//! The idle workload: nothing runs besides the kernel and its background, so the machine idles
//! (ticks, idle states, nohz). Used by tests of the idle path and for background captures.

use super::params::Params;
use super::{Metric, Program, RunFacts, TaskFrame};
use crate::linux::engine::Next;
use crate::linux::{CpuId, Kernel};

/// Nothing.
#[derive(Debug, Clone, Default)]
pub struct Idle;

impl Program for Idle {
    fn parse(_name: &str, p: &Params, _m: &crate::hw::Machine) -> Result<Idle, String> {
        p.check_known("idle", &[])?;
        Ok(Idle)
    }
    fn planned_size(&self, _nr_cpus: u32) -> (u64, u64, &'static str) {
        (0, 0, "the workload")
    }
    fn start(&mut self, _k: &mut Kernel) {}
    fn task_step(&mut self, _k: &mut Kernel, cpu: CpuId, _s: &mut TaskFrame) -> Next {
        unreachable!("CPU {cpu}: the idle workload has no tasks")
    }
    const FINISHES: bool = false;
    fn metric(&self, f: &RunFacts) -> Metric {
        Metric { name: "time", unit: "ms", lower_is_better: true, value: f.sim_ns as f64 / 1e6 }
    }
    fn json(&self, _f: &RunFacts) -> serde_json::Value {
        serde_json::json!({"name": "idle"})
    }
    fn text(&self, f: &RunFacts) -> String {
        format!("idle: {:.3} ms simulated\n", f.sim_ns as f64 / 1e6)
    }
}
