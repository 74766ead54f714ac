//! Models the parts of `kernel/sched/fair.c` @ v6.10 on the idle and balancing paths:
//! `sched_balance_newidle()` with its gates and IRQ-off domain walk, the periodic trigger and
//! softirq walk, and the nohz idle bookkeeping.
//!
//! Simplifications (until the load-balancing work lands): `sched_balance_rq()` is modelled by
//! its cost — `update_sd_lb_stats()` touching every CPU of the domain's span — and never pulls
//! a task; `rd->overloaded` is never recomputed (it lags, as in the kernel, but here forever).

use super::topology::SD_BALANCE_NEWIDLE;
use super::{SYSCTL_SCHED_MIGRATION_COST, NOHZ_NEWILB_KICK};
use crate::linux::engine::{Next, WaitOn};
use crate::linux::kernel::sched::core::{raw_spin_rq_lock, raw_spin_rq_unlock};
use crate::linux::kernel::softirq::{__raise_softirq_irqoff, SCHED_SOFTIRQ};
use crate::linux::{CpuId, Kernel};
use crate::sim::Time;

/// `sched_balance_newidle()` resume points.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum NewidleAt {
    #[default]
    Start,
    /// Walking the domains with the rq lock dropped (IRQs still off).
    Domain,
    Relock,
    Out,
}

#[derive(Debug, Clone, Copy, Default)]
pub struct NewidleBalance {
    pub at: NewidleAt,
    /// Domain index (bottom-up).
    pub sd: u8,
    pub pulled: i8,
    pub next_balance: u64,
    pub t0: Time,
    pub curr_cost: u64,
    pub started: Time,
}

/// Models `update_newidle_cost()` — kernel/sched/fair.c @ v6.10: raise the domain's max, or
/// decay it by 253/256 at most once a second. Returns true if it decayed.
pub fn update_newidle_cost(k: &mut Kernel, cpu: CpuId, sd: usize, cost: u64) -> bool {
    let j = k.jiffies();
    let hz = k.cfg.hz as u64;
    let d = &mut k.sd.domains_mut(cpu)[sd];
    if cost > d.max_newidle_lb_cost {
        d.max_newidle_lb_cost = cost;
        d.last_decay_max_lb_cost = j;
    } else if j > d.last_decay_max_lb_cost + hz {
        d.max_newidle_lb_cost = d.max_newidle_lb_cost * 253 / 256;
        d.last_decay_max_lb_cost = j;
        return true;
    }
    false
}

/// The cost of one `sched_balance_rq()` pass over a domain: fixed part plus
/// `update_sg_lb_stats()` for every CPU of the span.
fn balance_rq_cost(k: &Kernel, cpu: CpuId, sd: usize) -> Time {
    let w = k.sd.domains(cpu)[sd].span_weight as Time;
    k.costs.balance_rq + w * k.costs.lb_stats_per_cpu
}

/// Models `sched_balance_newidle()` — kernel/sched/fair.c @ v6.10.
///
/// Context: from `pick_next_task_fair()` with the rq lock held and IRQs off. If the gates
/// pass it drops the rq lock but keeps IRQs off while it walks the domains: remote CPUs can
/// enqueue here, but interrupts to this CPU wait until `__schedule()` unlocks. Returns (in the
/// CPU's return register) the number of tasks pulled, or -1 for RETRY_TASK.
pub fn sched_balance_newidle(k: &mut Kernel, cpu: CpuId, s: &mut NewidleBalance) -> Next {
    match s.at {
        NewidleAt::Start => {
            k.stats.newidle_calls += 1;
            s.started = k.now;
            s.next_balance = k.jiffies() + k.cfg.hz as u64;
            let rq = &mut k.cpus[cpu as usize].rq;
            if rq.ttwu_pending {
                k.cpus[cpu as usize].x.ret = 0;
                return Next::Ret(k.costs.newidle_gated / 2);
            }
            rq.idle_stamp = rq.clock.max(1);
            let avg_idle = rq.avg_idle;
            let lowest_cost = k.sd.domains(cpu).first().map(|d| d.max_newidle_lb_cost);
            if !k.rd.overloaded || lowest_cost.is_some_and(|c| avg_idle < c) {
                s.at = NewidleAt::Out;
                return Next::Cont(k.costs.newidle_gated);
            }
            let c = raw_spin_rq_unlock(k, cpu, cpu);
            k.stats.newidle_balances += 1;
            s.t0 = k.now;
            s.sd = 0;
            s.at = NewidleAt::Domain;
            Next::Cont(c + k.costs.newidle_gated + k.costs.update_blocked_averages)
        }
        NewidleAt::Domain => {
            let nsd = k.sd.domains(cpu).len();
            let i = s.sd as usize;
            if i >= nsd || s.pulled != 0 {
                s.at = NewidleAt::Relock;
                return Next::Cont(0);
            }
            let avg_idle = k.cpus[cpu as usize].rq.avg_idle;
            let d = &k.sd.domains(cpu)[i];
            if avg_idle < s.curr_cost + d.max_newidle_lb_cost {
                s.at = NewidleAt::Relock;
                return Next::Cont(0);
            }
            let mut c = 0;
            if d.flags & SD_BALANCE_NEWIDLE != 0 {
                c = balance_rq_cost(k, cpu, i);
                // domain_cost = t1 - t0 (the first domain also absorbs the blocked averages).
                let domain_cost = k.now + c - s.t0;
                update_newidle_cost(k, cpu, i, domain_cost);
                s.curr_cost += domain_cost;
                s.t0 = k.now + c;
            }
            s.sd += 1;
            Next::Cont(c)
        }
        NewidleAt::Relock => {
            let Some(lc) = raw_spin_rq_lock(k, cpu, cpu) else {
                return Next::Wait(WaitOn::Lock);
            };
            let rq = &mut k.cpus[cpu as usize].rq;
            rq.max_idle_balance_cost = rq.max_idle_balance_cost.max(s.curr_cost);
            // Tasks may have been enqueued here while the lock was dropped.
            if rq.cfs_h_nr_running > 0 {
                s.pulled = 1;
            }
            if rq.nr_running != rq.cfs_h_nr_running {
                s.pulled = -1;
            }
            s.at = NewidleAt::Out;
            Next::Cont(lc)
        }
        NewidleAt::Out => {
            let rq = &mut k.cpus[cpu as usize].rq;
            rq.next_balance = rq.next_balance.min(s.next_balance);
            if s.pulled != 0 {
                rq.idle_stamp = 0;
            } else {
                nohz_newidle_balance(k, cpu);
            }
            k.stats.newidle_ns += k.now - s.started;
            k.cpus[cpu as usize].x.ret = s.pulled as i64;
            Next::Ret(0)
        }
    }
}

/// Models `nohz_newidle_balance()` — kernel/sched/fair.c @ v6.10: ask the next `do_idle()`
/// entry to refresh blocked load if it is due.
fn nohz_newidle_balance(k: &mut Kernel, cpu: CpuId) {
    let rq = &k.cpus[cpu as usize].rq;
    if rq.avg_idle < SYSCTL_SCHED_MIGRATION_COST {
        return;
    }
    if !k.nohz.has_blocked || k.jiffies() < k.nohz.next_blocked {
        return;
    }
    k.cpus[cpu as usize].rq.nohz_flags |= NOHZ_NEWILB_KICK;
}

/// Models `nohz_balance_enter_idle()` — kernel/sched/fair.c @ v6.10, called at the first tick
/// stop of an idle period.
pub fn nohz_balance_enter_idle(k: &mut Kernel, cpu: CpuId) {
    let rq = &mut k.cpus[cpu as usize].rq;
    if !rq.nohz_tick_stopped {
        rq.nohz_tick_stopped = true;
        k.nohz.idle_cpus_mask.set(cpu);
        k.nohz.nr_cpus += 1;
        k.nohz.needs_update = true;
    }
    k.nohz.has_blocked = true;
}

/// Models `get_sd_balance_interval()` — kernel/sched/fair.c @ v6.10, in jiffies.
fn get_sd_balance_interval(k: &Kernel, cpu: CpuId, sd: usize, busy: bool) -> u64 {
    let d = &k.sd.domains(cpu)[sd];
    let mut ms = d.balance_interval as u64;
    if busy {
        ms *= d.busy_factor as u64;
    }
    let mut j = ms * k.cfg.hz as u64 / 1000;
    if busy {
        j = j.saturating_sub(1);
    }
    let max = (k.cfg.hz as u64 * k.m.topo.nr_cpus as u64 / 10).max(1);
    j.clamp(1, max)
}

/// Models `sched_balance_trigger()` — kernel/sched/fair.c @ v6.10: raise SCHED_SOFTIRQ when
/// the periodic balance is due. Called from the tick (hardirq): no ksoftirqd wakeup.
pub fn sched_balance_trigger(k: &mut Kernel, cpu: CpuId) -> Time {
    if k.jiffies() >= k.cpus[cpu as usize].rq.next_balance {
        __raise_softirq_irqoff(k, cpu, SCHED_SOFTIRQ);
    }
    0
}

/// `sched_balance_softirq()` in progress.
#[derive(Debug, Clone, Copy, Default)]
pub struct SchedBalanceSoftirq {
    pub at: u8,
}

/// Models `sched_balance_softirq()` -> `sched_balance_update_blocked_averages()` +
/// `sched_balance_domains()` — kernel/sched/fair.c @ v6.10, by cost: each due domain costs a
/// `sched_balance_rq()` pass; intervals, `last_balance` and `next_balance` are kept as the
/// kernel keeps them. No task moves (see the module note).
pub fn sched_balance_softirq(k: &mut Kernel, cpu: CpuId, _s: &mut SchedBalanceSoftirq) -> Next {
    let idle = k.cpus[cpu as usize].rq.idle_balance;
    let busy = !idle;
    let j = k.jiffies();
    let mut cost = k.costs.update_blocked_averages;
    let mut next_balance = j + 60 * k.cfg.hz as u64;
    let mut decayed = false;
    let mut max_cost = 0u64;
    for i in 0..k.sd.domains(cpu).len() {
        decayed |= update_newidle_cost(k, cpu, i, 0);
        max_cost += k.sd.domains(cpu)[i].max_newidle_lb_cost;
        let interval = get_sd_balance_interval(k, cpu, i, busy);
        let last = k.sd.domains(cpu)[i].last_balance;
        if j >= last + interval {
            cost += balance_rq_cost(k, cpu, i);
            k.sd.domains_mut(cpu)[i].last_balance = j;
        }
        let last = k.sd.domains(cpu)[i].last_balance;
        next_balance = next_balance.min(last + interval);
    }
    let rq = &mut k.cpus[cpu as usize].rq;
    if decayed {
        rq.max_idle_balance_cost = max_cost.max(SYSCTL_SCHED_MIGRATION_COST);
    }
    rq.next_balance = next_balance;
    Next::Ret(cost)
}
