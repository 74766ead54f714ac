//! Set-up facts a published run did not record, as plain knobs of the model (issue 31; the
//! ranges and their sources are in docs/unknowns.md). Each drives a kernel mechanism through
//! the kernel's own paths; none scales a cost. This file holds the one that is kernel state:
//! the newidle-balance state a CPU is in when the measured window opens
//! ([`StartState`]). The others live with the part of the model they configure: the tasks that
//! hold `rd->overloaded` are background sources (`crate::background::Profile::with_pinned_pair`),
//! the background's intensity scales its sources (`crate::background::Profile::with_intensity`),
//! and a guest's idle wake mode is part of the machine (`crate::hw::GuestIdle`).

use crate::hw::topology::Topology;
use crate::linux::kernel::sched::topology::SchedDomains;
use crate::linux::kernel::sched::SYSCTL_SCHED_MIGRATION_COST;
use crate::linux::{CpuId, Kernel};

/// The largest `max_newidle_lb_cost` accepted: one second, far above any walk (a walk costs
/// microseconds; docs/unknowns.md §2) but finite.
pub const MAX_NEWIDLE_COST_NS: u64 = crate::sim::NSEC_PER_SEC;

/// `rq->avg_idle` and `sd->max_newidle_lb_cost` of chosen CPUs when the measured window opens
/// (after the background warm-up): the two values `sched_balance_newidle()` (kernel/sched/fair.c
/// @ v6.10) compares to decide whether a newly idle CPU walks its domains, and how far up.
///
/// Only the CPUs and domains named are set; everything else keeps the state the warm-up left.
/// The default (nothing named) changes nothing. After the window opens the kernel's own
/// updates take over: a wakeup onto the CPU averages a new idle period into `avg_idle`
/// (`ttwu_do_activate()`), a newidle walk of a domain raises its cost, and the periodic
/// balance decays it by 253/256 once a second (`update_newidle_cost()`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StartState {
    /// (CPU, `rq->avg_idle` in ns).
    pub avg_idle: Vec<(CpuId, u64)>,
    /// (CPU, domain level: 0 is the CPU's lowest domain, `rq->sd`; ns).
    pub max_newidle_lb_cost: Vec<(CpuId, usize, u64)>,
    /// `rd->overloaded` as the window opens: `Some(true)` if something put two runnable tasks on
    /// one CPU since the last root-level balance that found none (a transient: the kernel's
    /// own balancing clears it when its next root-level `update_sd_lb_stats()` finds no such
    /// CPU); `None` leaves what the warm-up left.
    pub overloaded: Option<bool>,
}

impl StartState {
    /// Whether this state is one a v6.10 machine can be in: the CPUs and levels exist, and each
    /// `avg_idle` is at most the cap `ttwu_do_activate()` applies, `2 * rq->max_idle_balance_cost`,
    /// where `max_idle_balance_cost` is at least `sysctl_sched_migration_cost` and, after a
    /// decay in `sched_balance_domains()`, the sum of the CPU's domains' costs (those named
    /// here; the others are taken as 0). Errors name the entry and the bound.
    pub fn validate(&self, topo: &Topology, sd: &SchedDomains) -> Result<(), String> {
        let nr = topo.nr_cpus;
        for &(cpu, level, cost) in &self.max_newidle_lb_cost {
            if cpu >= nr {
                return Err(format!("max_newidle_lb_cost of CPU {cpu}: the machine has CPUs 0-{}", nr - 1));
            }
            let levels = sd.domains(cpu);
            if level >= levels.len() {
                let names: Vec<String> = levels.iter().enumerate().map(|(i, d)| format!("{i} ({})", d.name)).collect();
                return Err(format!(
                    "max_newidle_lb_cost of CPU {cpu} at domain level {level}: CPU {cpu} has levels {}",
                    names.join(", ")
                ));
            }
            if cost > MAX_NEWIDLE_COST_NS {
                return Err(format!(
                    "max_newidle_lb_cost of CPU {cpu} level {level} = {cost} ns: expected at most {MAX_NEWIDLE_COST_NS} ns"
                ));
            }
        }
        for &(cpu, avg) in &self.avg_idle {
            if cpu >= nr {
                return Err(format!("avg_idle of CPU {cpu}: the machine has CPUs 0-{}", nr - 1));
            }
            let sum: u64 = self.max_newidle_lb_cost.iter().filter(|e| e.0 == cpu).map(|e| e.2).sum();
            let cap = 2 * sum.max(SYSCTL_SCHED_MIGRATION_COST);
            if avg > cap {
                return Err(format!(
                    "avg_idle of CPU {cpu} = {avg} ns: a CPU's avg_idle is capped at 2 * max_idle_balance_cost = {cap} ns"
                ));
            }
        }
        Ok(())
    }

    /// Put the named CPUs and domains in this state (the measured window opens now). A
    /// domain's decay clock restarts now: its next decay comes a second later at the earliest.
    pub fn apply(&self, k: &mut Kernel) {
        let jiffies = k.jiffies();
        for &(cpu, avg) in &self.avg_idle {
            k.cpus[cpu as usize].rq.avg_idle = avg;
        }
        for &(cpu, level, cost) in &self.max_newidle_lb_cost {
            let d = &mut k.sd.domains_mut(cpu)[level];
            d.max_newidle_lb_cost = cost;
            d.last_decay_max_lb_cost = jiffies;
        }
        if let Some(o) = self.overloaded {
            crate::linux::kernel::sched::set_rd_overloaded(k, o);
        }
    }

    pub fn is_empty(&self) -> bool {
        self.avg_idle.is_empty() && self.max_newidle_lb_cost.is_empty() && self.overloaded.is_none()
    }
}

/// The measured window opens at `now`: clear the schedstat counters and put the CPUs in the
/// configured [`StartState`].
pub fn open_window(k: &mut Kernel) {
    crate::linux::kernel::sched::stats::clear(k);
    if !k.cfg.start.is_empty() {
        let s = k.cfg.start.clone();
        s.apply(k);
    }
}
