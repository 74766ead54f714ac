//! Models the parts of `kernel/sched/fair.c` @ v6.10 on the idle and balancing paths:
//! `sched_balance_newidle()` with its gates and IRQ-off domain walk, the periodic trigger and
//! softirq walk, and the nohz idle bookkeeping.
//!
//! `sched_balance_rq()` pulls queued tasks with the kernel's gates (see its simplifications);
//! its cost is `update_sd_lb_stats()` touching every CPU of the domain's span.
//! `rd->overloaded` is set eagerly and recomputed only by a root-level balance, as in the kernel.

use super::topology::SD_BALANCE_NEWIDLE;
use super::{
    NOHZ_BALANCE_KICK, NOHZ_KICK_MASK, NOHZ_NEWILB_KICK, NOHZ_NEXT_KICK, NOHZ_STATS_KICK, SYSCTL_SCHED_MIGRATION_COST,
};
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
    /// Rostedt 2013 patch 3/3: drop the rq lock with IRQs enabled (post-schedule hook only).
    pub irqs_on: bool,
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

/// The cost of `update_sd_lb_stats()` run by `cpu` over `dst`'s domain `sd`: for every group,
/// `update_sg_lb_stats()` reads every CPU's runqueue and PELT fields, several modelled lines per
/// CPU (`rq_lines::update_sg_lb_stats_reads`: `nr_running`, the fair counts, the PELT averages,
/// and what `idle_cpu()` reads of a CPU with no runnable task). Each read is a transfer when
/// another CPU wrote that line since this CPU last read it, plus `lb_stats_per_cpu` for the
/// arithmetic per CPU. The reads are charged one after another: the model does not overlap
/// misses (no memory-level parallelism). The transfers of one distance are charged with one
/// draw per walk ([`Prng::sum_below`](crate::sim::rng::Prng::sum_below): the sum's mean and
/// variance; docs/costs.md, "One draw per distance"), in order of distance.
fn update_sd_lb_stats_cost(k: &mut Kernel, cpu: CpuId, dst: CpuId, sd: usize) -> Time {
    let d = &k.sd.domains(dst)[sd];
    let mut stats = d.span_weight as Time * k.costs.lb_stats_per_cpu;
    // The reads of every other CPU of the span, with the borrows split once: the misses
    // counted by distance.
    let Kernel { sd: sds, lines, m, cpus, .. } = k;
    let (lo, ws) = sds.domains(dst)[sd].span.stored_words();
    let misses = super::rq_lines::update_sg_lb_stats_reads(lines, &sds.sums, &m.topo, cpu, lo, ws);
    let rng = &mut cpus[cpu as usize].rng;
    for (n, r) in misses.into_iter().zip(m.costs.line) {
        // `Prng::range(lo_ns, hi_ns)` summed n times: the ranges are not reversed
        // (`LatencyNs::new`), and a fixed cost draws nothing.
        if n != 0 {
            stats += n * r.lo_ns + rng.sum_below(n, r.hi_ns - r.lo_ns + 1);
        }
    }
    k.stats.lb_stats_ns += stats;
    stats
}

/// Models `sched_balance_update_blocked_averages()` — kernel/sched/fair.c @ v6.10: decay the
/// blocked PELT load of every leaf `cfs_rq` of `rq_cpu`'s rq (`__update_blocked_fair()` walks
/// `rq->leaf_cfs_rq_list`: `KernelConfig::nr_leaf_cfs_rqs` of them, the root's included), plus
/// the rt, dl and irq averages, run by `cpu` (the rq's own CPU, or an idle load balancer on its
/// behalf): `rq_lock_irqsave()` writes the rq's `lock` line and `update_cfs_rq_load_avg()` its
/// `pelt` line (the group cfs_rqs' lines are not modelled). Returns the cost:
/// `update_blocked_averages` with the root's cfs_rq, `blocked_leaf` per other leaf.
pub fn sched_balance_update_blocked_averages(k: &mut Kernel, cpu: CpuId, rq_cpu: CpuId) -> Time {
    let lock = k.cpus[rq_cpu as usize].rq.lock_line;
    let c = k.line_write(cpu, lock) + super::rq_lines::pelt_written(k, cpu, rq_cpu);
    let others = Time::from(k.cfg.nr_leaf_cfs_rqs - 1);
    c + k.costs.update_blocked_averages + others * k.costs.blocked_leaf
}

/// `enum cpu_idle_type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CpuIdleType {
    /// CPU_IDLE: periodic or nohz balance on behalf of an idle CPU.
    Idle,
    /// CPU_NOT_IDLE: periodic balance on a busy CPU.
    NotIdle,
    /// CPU_NEWLY_IDLE: from `sched_balance_newidle()`.
    NewlyIdle,
}

/// Models `should_we_balance()` — kernel/sched/fair.c @ v6.10: a newly idle CPU always
/// balances (unless a task arrived); otherwise only the first idle CPU of the local group, or,
/// if none is idle, the group's balance CPU.
fn should_we_balance(k: &Kernel, cpu: CpuId, sd: usize, idle: CpuIdleType) -> bool {
    let rq = &k.cpus[cpu as usize].rq;
    if idle == CpuIdleType::NewlyIdle {
        return rq.nr_running == 0 && !rq.ttwu_pending;
    }
    let d = &k.sd.domains(cpu)[sd];
    let Some(local) = k.sd.sums.local_group(cpu, sd) else { return true };
    debug_assert_eq!(Some(local), d.groups.iter().position(|g| g.test(cpu)));
    let g = &d.groups[local];
    super::group_sums::debug_check_group(k, cpu, sd, local);
    if let Some(first_idle) = g.first_and(k.sd.sums.idle_mask()) {
        return first_idle == cpu;
    }
    d.group_balance_cpu.get(local).is_none_or(|&b| b == cpu)
}

/// Models `task_hot()` — kernel/sched/fair.c @ v6.10: a task that ran within
/// `sysctl_sched_migration_cost` is cache hot. "Ran" is `p->se.exec_start`, which
/// `update_curr()` moves to the last accounting of its run (a preempted task's is the instant
/// it was switched out), not the start of that run; a task moved off a CPU has it cleared
/// (`migrate_task_rq_fair()`), so it is never hot at its new CPU until it runs there.
fn task_hot(k: &Kernel, p: TaskId) -> bool {
    k.now.saturating_sub(k.ents[p as usize].exec_start) < SYSCTL_SCHED_MIGRATION_COST
}

/// Models `sched_balance_rq()` (was `load_balance()`) — kernel/sched/fair.c @ v6.10, for
/// `dst` over its domain `sd`. Returns (tasks moved, cost).
///
/// Simplifications: groups are compared by runnable tasks beyond one per CPU (`sum_nr_running`
/// against the group weight), not by PELT load, capacity and the full group classification;
/// the busiest runqueue is the one with the most runnable tasks; no active balance through
/// the stopper. What is kept: `should_we_balance()`, only queued (not running) tasks move,
/// `task_hot()` with `nr_balance_failed > cache_nice_tries`, NEWLY_IDLE stops after one task,
/// `nr_balance_failed` and `balance_interval` growth/reset outside NEWLY_IDLE, and the pulled
/// task preempting the destination's current task (`attach_tasks` -> `wakeup_preempt`).
///
/// Schedstat (`sd->lb_*[idle]`, shown by `show_schedstat()`, see `super::stats`): counted where
/// the kernel counts them; a model verdict of "balanced" after picking the busiest group (the
/// kernel's `calculate_imbalance()` finding none, inside `sched_balance_find_src_group()`)
/// counts as `lb_nobusyg`, and all tasks pinned as `out_all_pinned` (`lb_balanced`).
pub fn sched_balance_rq(k: &mut Kernel, cpu: CpuId, dst: CpuId, sd: usize, idle: CpuIdleType) -> (u32, Time) {
    let ti = super::stats::idx(idle);
    k.sd.domains_mut(dst)[sd].lb[ti].lb_count += 1;
    // should_we_balance() looks at the local group only; update_sd_lb_stats() runs after it.
    let mut cost = k.costs.balance_rq;
    if !should_we_balance(k, dst, sd, idle) {
        k.sd.domains_mut(dst)[sd].lb[ti].lb_balanced += 1;
        return (0, cost);
    }
    cost += update_sd_lb_stats_cost(k, cpu, dst, sd);
    let d = &k.sd.domains(dst)[sd];
    let local = k.sd.sums.local_group(dst, sd);
    debug_assert_eq!(local, d.groups.iter().position(|g| g.test(dst)));
    // sched_balance_find_src_group(): the group with the most excess runnable tasks.
    let mut busiest: Option<(u32, usize)> = None;
    for gi in 0..d.groups.len() {
        if Some(gi) == local {
            continue;
        }
        super::group_sums::debug_check_group(k, dst, sd, gi);
        let e = k.sd.sums.excess(k.sd.sums.group_id(dst, sd, gi));
        if e > 0 && busiest.is_none_or(|(be, _)| e > be) {
            busiest = Some((e, gi));
        }
    }
    let at_root = k.sd.domains(dst).len() == sd + 1;
    if at_root {
        // update_sd_lb_stats() at the root domain recomputes rd->overloaded.
        super::group_sums::debug_check_overloaded(k);
        let o = k.sd.sums.any_overloaded();
        super::set_rd_overloaded(k, o);
    }
    let Some((_, gi)) = busiest else {
        let lb = &mut k.sd.domains_mut(dst)[sd].lb[ti];
        lb.lb_nobusyg += 1;
        lb.lb_balanced += 1;
        balanced(k, dst, sd, idle);
        return (0, cost);
    };
    // sched_balance_find_src_rq(): the CPU of that group with the most runnable tasks.
    // Borrowed, not cloned: the search only reads the kernel (an `Arc` clone and drop are
    // two atomic read-modify-writes per balance).
    let group = &k.sd.domains(dst)[sd].groups[gi];
    let h_nr = |c: CpuId| {
        debug_assert_eq!(k.sd.sums.cfs_h_nr_running(c), k.cpus[c as usize].rq.cfs_h_nr_running);
        k.sd.sums.cfs_h_nr_running(c)
    };
    let Some(src) = group.iter().filter(|&c| c != dst).max_by_key(|&c| (h_nr(c), u32::MAX - c)) else {
        let lb = &mut k.sd.domains_mut(dst)[sd].lb[ti];
        lb.lb_nobusyq += 1;
        lb.lb_balanced += 1;
        return (0, cost);
    };
    // calculate_imbalance(): moving must leave the two runqueues closer; half the difference.
    let (src_nr, dst_nr) = (k.cpus[src as usize].rq.cfs_h_nr_running, k.cpus[dst as usize].rq.cfs_h_nr_running);
    if src_nr < 2 || dst_nr + 1 >= src_nr {
        let lb = &mut k.sd.domains_mut(dst)[sd].lb[ti];
        lb.lb_nobusyg += 1;
        lb.lb_balanced += 1;
        balanced(k, dst, sd, idle);
        return (0, cost);
    }
    k.sd.domains_mut(dst)[sd].lb[ti].lb_imbalance += ((src_nr - dst_nr) / 2).max(1);
    // detach_tasks(): queued tasks, oldest-first as the kernel walks cfs_tasks from the tail.
    cost += k.line_read(cpu, k.cpus[src as usize].rq.lock_line);
    let nice_tries = k.sd.domains(dst)[sd].cache_nice_tries;
    let failed = k.sd.domains(dst)[sd].nr_balance_failed;
    // loop_max = min(sysctl_sched_nr_migrate, busiest->nr_running): 32 (!RT) or 8 (RT).
    let nr_migrate = if k.cfg.preempt_rt { 8 } else { 32 };
    let want = if idle == CpuIdleType::NewlyIdle { 1 } else { ((src_nr - dst_nr) / 2).clamp(1, nr_migrate) };
    let mut moved = 0u32;
    let mut hot_moved = 0u32;
    // LBF_ALL_PINNED: stays set while every task looked at is bound elsewhere.
    let mut all_pinned = true;
    let curr = k.cpus[src as usize].rq.curr;
    if k.tasks[curr as usize].cpu_allowed(dst) && k.tasks[curr as usize].kind.is_fair_task() {
        all_pinned = false;
    }
    // The queue in tree order as it was here, walked without a copy: the walk only dequeues
    // what it visits, so the next entity is the one after the last visited position.
    let mut after = None;
    while let Some(p) = k.cpus[src as usize].rq.cfs.next_queued(&k.ents, after) {
        after = Some(k.cpus[src as usize].rq.cfs.tree_pos(&k.ents[p as usize]));
        if moved >= want {
            break;
        }
        let t = &k.tasks[p as usize];
        // can_migrate_task(): not allowed on dst (LBF_DST_PINNED is not modelled: the kernel
        // would retry another dst CPU of the group).
        if !t.cpu_allowed(dst) {
            continue;
        }
        // A delayed task is asleep: it is not moved (the kernel moves one only when migrating
        // load; the model's balancer moves runnable counts).
        if k.ents[p as usize].sched_delayed {
            continue;
        }
        all_pinned = false;
        // can_migrate_task(): `task_on_cpu()`, running or still being switched out. The
        // kernel's detach_tasks() holds busiest's rq lock, which a CPU in the middle of a
        // context switch keeps until finish_task_switch() clears prev->on_cpu, so there only
        // the current task is on_cpu; the model's balancer does not take that lock, so a
        // preempted prev whose switch has not finished is on_cpu too and must stay (moving it
        // let another CPU pick it while its old CPU still ran on its stack).
        if t.on_cpu {
            continue;
        }
        let hot = task_hot(k, p);
        if hot && failed <= nice_tries {
            continue;
        }
        cost += move_queued_task(k, cpu, src, dst, p) + k.costs.ttwu_activate;
        moved += 1;
        hot_moved += hot as u32;
    }
    let lb = &mut k.sd.domains_mut(dst)[sd].lb[ti];
    if moved > 0 {
        lb.lb_gained += moved;
        lb.lb_hot_gained += hot_moved;
    } else if all_pinned {
        lb.lb_balanced += 1;
    } else {
        lb.lb_failed += 1;
    }
    if moved == 0 && all_pinned {
        // out_all_pinned: nothing here may run on dst; back off (up to MAX_PINNED_INTERVAL).
        if idle != CpuIdleType::NewlyIdle {
            let d = &mut k.sd.domains_mut(dst)[sd];
            d.nr_balance_failed = 0;
            d.balance_interval = (d.balance_interval * 2).min(512);
        }
        return (0, cost);
    }
    if moved == 0 {
        if idle != CpuIdleType::NewlyIdle {
            k.sd.domains_mut(dst)[sd].nr_balance_failed += 1;
            // need_active_balance(): repeated failures -> have the stopper of the busiest CPU
            // push its running task away (it preempts it), if that task may run on dst.
            let d = &k.sd.domains(dst)[sd];
            let curr_ok = k.tasks[curr as usize].kind.is_fair_task()
                && !super::rt::rt_task(k, curr)
                && k.tasks[curr as usize].cpu_allowed(dst);
            if curr_ok && d.nr_balance_failed > d.cache_nice_tries + 2 && !k.cpus[src as usize].rq.active_balance {
                k.cpus[src as usize].rq.active_balance = true;
                let work = crate::linux::kernel::stop_machine::StopWork::ActiveLoadBalance { push_cpu: dst };
                if let Some(c) = crate::linux::kernel::stop_machine::stop_one_cpu_nowait(k, cpu, src, work) {
                    cost += c;
                    k.stats.active_balances += 1;
                }
                let d = &mut k.sd.domains_mut(dst)[sd];
                d.nr_balance_failed = d.cache_nice_tries + 1;
            }
        }
        return (0, cost);
    }
    if idle != CpuIdleType::NewlyIdle {
        let d = &mut k.sd.domains_mut(dst)[sd];
        d.nr_balance_failed = 0;
        d.balance_interval = d.min_interval;
    }
    (moved, cost)
}

/// Balanced: outside NEWLY_IDLE, reset the failure count and back the interval off.
fn balanced(k: &mut Kernel, dst: CpuId, sd: usize, idle: CpuIdleType) {
    if idle == CpuIdleType::NewlyIdle {
        return;
    }
    let d = &mut k.sd.domains_mut(dst)[sd];
    d.nr_balance_failed = 0;
    if d.balance_interval < d.max_interval {
        d.balance_interval = (d.balance_interval * 2).min(d.max_interval);
    }
}

/// Models `active_load_balance_cpu_stop()` — kernel/sched/fair.c @ v6.10, run by the stopper
/// of the busiest CPU `cpu`: move one fair task (the one the stopper preempted is now queued)
/// to `push_cpu`, ignoring cache hotness (LBF_ACTIVE_LB), if that still helps. Returns the cost.
pub fn active_load_balance_cpu_stop(k: &mut Kernel, cpu: CpuId, push_cpu: CpuId) -> Time {
    k.cpus[cpu as usize].rq.active_balance = false;
    let (src_nr, dst_nr) = (k.cpus[cpu as usize].rq.cfs_h_nr_running, k.cpus[push_cpu as usize].rq.cfs_h_nr_running);
    if src_nr == 0 || dst_nr >= src_nr {
        return k.costs.balance_rq;
    }
    let mut after = None;
    while let Some(p) = k.cpus[cpu as usize].rq.cfs.next_queued(&k.ents, after) {
        after = Some(k.cpus[cpu as usize].rq.cfs.tree_pos(&k.ents[p as usize]));
        if !k.tasks[p as usize].cpu_allowed(push_cpu) || k.ents[p as usize].sched_delayed {
            continue;
        }
        let c = move_queued_task(k, cpu, cpu, push_cpu, p);
        return k.costs.balance_rq + k.costs.ttwu_activate + c;
    }
    k.costs.balance_rq
}

/// `detach_task()` + `attach_task()`: move a queued task from `src` to `dst`, then
/// `wakeup_preempt()` on `dst` (which sets NEED_RESCHED there, or IPIs it). Returns the cost
/// of the runqueue line writes (the resched's cost is not charged here, as before).
fn move_queued_task(k: &mut Kernel, cpu: CpuId, src: CpuId, dst: CpuId, p: TaskId) -> Time {
    use crate::linux::kernel::sched::core::{move_queued_task_locked, resched_curr, wakeup_preempt};
    let (r, c) = move_queued_task_locked(k, cpu, src, dst, p);
    if wakeup_preempt(k, dst, p, r) {
        resched_curr(k, cpu, dst, crate::trace::Sym::WakeupPreempt);
    }
    c
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
                // Gated: the lowest domain still pulls the next periodic balance forward.
                if lowest_cost.is_some() {
                    s.next_balance = update_next_balance(k, cpu, 0, s.next_balance);
                }
                s.at = NewidleAt::Out;
                return Next::Cont(k.costs.newidle_gated);
            }
            let c = raw_spin_rq_unlock(k, cpu, cpu);
            if s.irqs_on {
                crate::linux::engine::local_irq_enable(k, cpu);
            }
            k.stats.newidle_balances += 1;
            s.t0 = k.now;
            s.sd = 0;
            s.at = NewidleAt::Domain;
            Next::Cont(c + k.costs.newidle_gated + sched_balance_update_blocked_averages(k, cpu, cpu))
        }
        NewidleAt::Domain => {
            let nsd = k.sd.domains(cpu).len();
            let i = s.sd as usize;
            if i >= nsd || s.pulled != 0 {
                s.at = NewidleAt::Relock;
                return Next::Cont(0);
            }
            // Every domain visited pulls the next periodic balance forward, the one whose
            // cost stops the walk included.
            s.next_balance = update_next_balance(k, cpu, i, s.next_balance);
            let avg_idle = k.cpus[cpu as usize].rq.avg_idle;
            let d = &k.sd.domains(cpu)[i];
            if avg_idle < s.curr_cost + d.max_newidle_lb_cost {
                s.at = NewidleAt::Relock;
                return Next::Cont(0);
            }
            let mut c = 0;
            if d.flags & SD_BALANCE_NEWIDLE != 0 {
                let before = k.stats.lb_stats_ns;
                let (pulled, cost) = sched_balance_rq(k, cpu, cpu, i, CpuIdleType::NewlyIdle);
                k.stats.lb_gained_newidle += pulled as u64;
                k.stats.newidle_lb_stats_ns += k.stats.lb_stats_ns - before;
                c = cost;
                if pulled > 0 {
                    s.pulled = pulled as i8;
                }
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
            if s.irqs_on {
                crate::linux::engine::local_irq_disable(k, cpu);
            }
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
/// stop of an idle period. Returns the cost (`rq->nohz_tick_stopped`'s line).
pub fn nohz_balance_enter_idle(k: &mut Kernel, cpu: CpuId) -> Time {
    let mut c = 0;
    let rq = &mut k.cpus[cpu as usize].rq;
    if !rq.nohz_tick_stopped {
        rq.nohz_tick_stopped = true;
        c = super::rq_lines::pending_written(k, cpu, cpu);
        k.nohz.idle_cpus_mask.set(cpu);
        k.nohz.nr_cpus += 1;
        // set_cpu_sd_state_idle(): one busy CPU fewer in the LLC.
        let l = llc_of(k, cpu);
        k.llc_shared[l].nr_busy_cpus = k.llc_shared[l].nr_busy_cpus.saturating_sub(1);
        k.nohz.needs_update = true;
    }
    k.nohz.has_blocked = true;
    c
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

/// Models `update_next_balance()` — kernel/sched/fair.c @ v6.10: the earlier of `next` and
/// domain `sd`'s next periodic balance at its idle interval (the newly idle CPU counts as not
/// busy), in jiffies. `sched_balance_newidle()` calls it for each domain it looks at, so a CPU
/// that goes idle often keeps its `rq->next_balance` at most one idle interval past the
/// domain's last balance, and its tick raises SCHED_SOFTIRQ that often.
fn update_next_balance(k: &Kernel, cpu: CpuId, sd: usize, next: u64) -> u64 {
    let interval = get_sd_balance_interval(k, cpu, sd, false);
    next.min(k.sd.domains(cpu)[sd].last_balance + interval)
}

/// Models `sched_balance_trigger()` — kernel/sched/fair.c @ v6.10: raise SCHED_SOFTIRQ when
/// the periodic balance is due. Called from the tick (hardirq): no ksoftirqd wakeup.
pub fn sched_balance_trigger(k: &mut Kernel, cpu: CpuId) -> Time {
    if k.jiffies() >= k.cpus[cpu as usize].rq.next_balance {
        __raise_softirq_irqoff(k, cpu, SCHED_SOFTIRQ);
    }
    nohz_balancer_kick(k, cpu)
}

/// `sched_balance_softirq()` resume points.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum SchedBalanceSoftirqAt {
    /// Take the kick flags: start the nohz idle balance, or balance this CPU.
    #[default]
    Start,
    /// `_nohz_idle_balance()`: the next idle CPU.
    NohzIdleBalance,
}

/// `sched_balance_softirq()` in progress (with the nohz idle balance it may run).
#[derive(Debug, Clone, Copy, Default)]
pub struct SchedBalanceSoftirq {
    pub at: SchedBalanceSoftirqAt,
    /// nohz: the kick flags taken, the next CPU of the idle mask to visit (as an offset from
    /// this CPU), and the earliest next balance seen.
    pub flags: u32,
    pub i: u32,
    pub next_balance: u64,
}

/// Models `sched_balance_domains()` (was `rebalance_domains()`) — kernel/sched/fair.c @ v6.10,
/// run by `cpu` for `target`'s domains (the nohz idle balancer runs it for other idle CPUs, so
/// pulled tasks land on them). Returns the cost.
pub fn sched_balance_domains(k: &mut Kernel, cpu: CpuId, target: CpuId, idle: CpuIdleType) -> Time {
    let busy = idle == CpuIdleType::NotIdle;
    let j = k.jiffies();
    let mut cost = 0;
    let mut next_balance = j + 60 * k.cfg.hz as u64;
    let mut decayed = false;
    let mut max_cost = 0u64;
    let mut idle = idle;
    for i in 0..k.sd.domains(target).len() {
        decayed |= update_newidle_cost(k, target, i, 0);
        max_cost += k.sd.domains(target)[i].max_newidle_lb_cost;
        let interval = get_sd_balance_interval(k, target, i, busy);
        let last = k.sd.domains(target)[i].last_balance;
        let serialize = k.sd.domains(target)[i].flags & super::topology::SD_SERIALIZE != 0;
        if serialize && k.sched_balance_running {
            // SD_SERIALIZE: another CPU is balancing a NUMA domain; skip this one.
            continue;
        }
        if j >= last + interval {
            let (moved, c) = sched_balance_rq(k, cpu, target, i, idle);
            k.stats.lb_gained_periodic += moved as u64;
            cost += c;
            if moved > 0 {
                // The CPU now has work: it balances as busy from here on.
                idle = CpuIdleType::NotIdle;
            }
            k.sd.domains_mut(target)[i].last_balance = j;
            if Some(i) == k.sd.sd_llc[target as usize] {
                // update_sd_lb_stats() at the LLC level ends with update_idle_cpu_scan().
                let span = k.sd.domains(target)[i].span.clone();
                let sum_util: u64 = span.iter().map(|c| k.cpus[c as usize].rq.cfs.avg.util_avg).sum();
                update_idle_cpu_scan(k, target, sum_util);
            }
        }
        let last = k.sd.domains(target)[i].last_balance;
        next_balance = next_balance.min(last + interval);
    }
    let rq = &mut k.cpus[target as usize].rq;
    if decayed {
        rq.max_idle_balance_cost = max_cost.max(SYSCTL_SCHED_MIGRATION_COST);
    }
    rq.next_balance = next_balance;
    cost
}

/// Models `sched_balance_softirq()` (was `run_rebalance_domains()`) — kernel/sched/fair.c
/// @ v6.10: if this CPU was kicked as the nohz idle balancer (and is idle), balance the tickless
/// idle CPUs on their behalf (`nohz_idle_balance()`); otherwise update blocked averages and
/// balance this CPU's own domains.
///
/// Context: SCHED_SOFTIRQ (in `handle_softirqs()`, IRQs on).
pub fn sched_balance_softirq(k: &mut Kernel, cpu: CpuId, s: &mut SchedBalanceSoftirq) -> Next {
    match s.at {
        SchedBalanceSoftirqAt::Start => {
            let idle = if k.cpus[cpu as usize].rq.idle_balance { CpuIdleType::Idle } else { CpuIdleType::NotIdle };
            // nohz_idle_balance(): take this CPU's kick flags; act only when idle.
            let flags = std::mem::take(&mut k.cpus[cpu as usize].rq.nohz_idle_balance);
            if flags != 0 && idle == CpuIdleType::Idle {
                // _nohz_idle_balance() starts: clear the global flags it will refresh.
                if flags & NOHZ_STATS_KICK != 0 {
                    k.nohz.has_blocked = false;
                }
                if flags & NOHZ_NEXT_KICK != 0 {
                    k.nohz.needs_update = false;
                }
                k.stats.nohz_balances += 1;
                s.flags = flags;
                s.i = 1;
                s.next_balance = k.jiffies() + 60 * k.cfg.hz as u64;
                s.at = SchedBalanceSoftirqAt::NohzIdleBalance;
                return Next::Cont(0);
            }
            let c = sched_balance_update_blocked_averages(k, cpu, cpu) + sched_balance_domains(k, cpu, cpu, idle);
            Next::Ret(c)
        }
        SchedBalanceSoftirqAt::NohzIdleBalance => _nohz_idle_balance_step(k, cpu, s),
    }
}

/// One CPU of `_nohz_idle_balance()` — kernel/sched/fair.c @ v6.10: visit the CPUs of
/// `nohz.idle_cpus_mask` that are idle, starting after this one and ending with it (if it is
/// in the mask and idle); abort if this CPU needs
/// to reschedule (v6.10: plain `need_resched()`; with ff47a0acfcce only if it is also not
/// idle); refresh blocked load (STATS) and, if due, balance that CPU's domains on its behalf
/// (BALANCE).
fn _nohz_idle_balance_step(k: &mut Kernel, cpu: CpuId, s: &mut SchedBalanceSoftirq) -> Next {
    let nr = k.m.topo.nr_cpus;
    while s.i <= nr {
        let b = (cpu + s.i) % nr;
        s.i += 1;
        // for_each_cpu_wrap(nohz.idle_cpus_mask, this_cpu + 1): this CPU too only if it is in
        // the mask, and any CPU only while it is idle.
        if !k.nohz.idle_cpus_mask.test(b) || !super::idle_cpu(k, b) {
            continue;
        }
        let abort = if k.cfg.has(crate::linux::patches::Patch::Ff47a0acfcce) {
            !super::idle_cpu(k, cpu) && super::need_resched(k, cpu)
        } else {
            super::need_resched(k, cpu)
        };
        if abort {
            // Give the work back to the next balancer.
            k.stats.nohz_balance_aborts += 1;
            if s.flags & NOHZ_STATS_KICK != 0 {
                k.nohz.has_blocked = true;
            }
            if s.flags & NOHZ_NEXT_KICK != 0 {
                k.nohz.needs_update = true;
            }
            return Next::Ret(0);
        }
        let mut c = 0;
        if s.flags & NOHZ_STATS_KICK != 0 {
            // update_nohz_stats(): the blocked-load decay of that CPU.
            c += sched_balance_update_blocked_averages(k, cpu, b);
        }
        if k.jiffies() >= k.cpus[b as usize].rq.next_balance && s.flags & NOHZ_BALANCE_KICK != 0 {
            let line = k.cpus[b as usize].rq.lock_line;
            c += k.line_write(cpu, line);
            c += sched_balance_domains(k, cpu, b, CpuIdleType::Idle);
        }
        s.next_balance = s.next_balance.min(k.cpus[b as usize].rq.next_balance);
        return Next::Cont(c);
    }
    k.nohz.next_balance = s.next_balance;
    if s.flags & NOHZ_STATS_KICK != 0 {
        // nohz.next_blocked = now + LOAD_AVG_PERIOD (32 ms).
        k.nohz.next_blocked = k.jiffies() + (32 * k.cfg.hz as u64).div_ceil(1000);
    }
    Next::Ret(0)
}

/// Models `nohz_balance_exit_idle()` — kernel/sched/fair.c @ v6.10: on the first busy tick
/// after idle, leave `nohz.idle_cpus_mask` and count as busy in the LLC. Returns the cost
/// (`rq->nohz_tick_stopped`'s line).
fn nohz_balance_exit_idle(k: &mut Kernel, cpu: CpuId) -> Time {
    let rq = &mut k.cpus[cpu as usize].rq;
    if !rq.nohz_tick_stopped {
        return 0;
    }
    rq.nohz_tick_stopped = false;
    let c = super::rq_lines::pending_written(k, cpu, cpu);
    k.nohz.idle_cpus_mask.clear(cpu);
    k.nohz.nr_cpus -= 1;
    let l = llc_of(k, cpu);
    k.llc_shared[l].nr_busy_cpus += 1;
    c
}

/// Models `find_new_ilb()` — kernel/sched/fair.c @ v6.10: the first CPU of the nohz idle
/// mask, other than this one, that is idle right now.
fn find_new_ilb(k: &Kernel, cpu: CpuId) -> Option<CpuId> {
    k.nohz.idle_cpus_mask.iter().find(|&c| c != cpu && super::idle_cpu(k, c))
}

/// Models `kick_ilb()` — kernel/sched/fair.c @ v6.10: throttle full kicks to one per jiffy,
/// pick the idle load balancer, claim its `nohz_flags` (a CPU that already has kick bits is
/// being kicked by someone else: just add ours), and send it `nohz_csd` with
/// `smp_call_function_single_async()` (NEED_RESCHED only, on a polling CPU).
fn kick_ilb(k: &mut Kernel, cpu: CpuId, flags: u32) -> Time {
    if flags & NOHZ_BALANCE_KICK != 0 {
        k.nohz.next_balance = k.jiffies() + 1;
    }
    let Some(ilb) = find_new_ilb(k, cpu) else { return 0 };
    let old = k.cpus[ilb as usize].rq.nohz_flags;
    k.cpus[ilb as usize].rq.nohz_flags |= flags;
    // atomic_fetch_or() of the ILB's nohz_flags: its `pending` line.
    let mut c = super::rq_lines::pending_written(k, cpu, ilb);
    if old & NOHZ_KICK_MASK != 0 {
        return c;
    }
    k.stats.nohz_kicks += 1;
    let csd = k.cpus[ilb as usize].nohz_csd;
    if k.csds[csd as usize].flags & crate::linux::csd_flags::CSD_FLAG_LOCK != 0 {
        crate::linux::check::on_csd_busy(k, cpu, ilb, csd);
        return c; // -EBUSY
    }
    k.csds[csd as usize].flags = crate::linux::csd_flags::CSD_FLAG_LOCK | crate::linux::csd_flags::CSD_TYPE_ASYNC;
    crate::linux::check::on_csd_lock(k, csd);
    c += crate::linux::kernel::smp::__smp_call_single_queue(k, cpu, ilb, csd, crate::trace::Sym::KickIlb);
    c
}

/// Models `nohz_balancer_kick()` — kernel/sched/fair.c @ v6.10, from a busy CPU's tick: leave
/// the nohz mask, then kick an idle load balancer if tickless CPUs have blocked load to
/// refresh or this CPU has work to give (two or more runnable tasks, or another busy CPU in the
/// LLC). Returns the cost.
pub fn nohz_balancer_kick(k: &mut Kernel, cpu: CpuId) -> Time {
    if k.cpus[cpu as usize].rq.idle_balance {
        return 0;
    }
    let c = nohz_balance_exit_idle(k, cpu);
    if k.nohz.nr_cpus == 0 {
        return c;
    }
    let j = k.jiffies();
    let mut flags = 0;
    if k.nohz.has_blocked && j > k.nohz.next_blocked {
        flags = NOHZ_STATS_KICK;
    }
    if j >= k.nohz.next_balance {
        let rq = &k.cpus[cpu as usize].rq;
        let llc_busy = k.llc_shared[llc_of(k, cpu)].nr_busy_cpus > 1;
        if rq.nr_running >= 2 || llc_busy {
            flags = NOHZ_STATS_KICK | NOHZ_BALANCE_KICK;
        }
    }
    if k.nohz.needs_update {
        flags |= NOHZ_NEXT_KICK;
    }
    if flags == 0 {
        return c;
    }
    c + kick_ilb(k, cpu, flags)
}

// ---------------------------------------------------------------------------------------
// The fair class's operations (`fair_sched_class`, dispatched by `class.rs`)
// ---------------------------------------------------------------------------------------

/// Models `enqueue_task_fair()` — kernel/sched/fair.c @ v6.10 (flat: one entity, no group
/// hierarchy): `enqueue_entity()` and `h_nr_running++` (`activate_task()` does the
/// `add_nr_running()`). Returns true if its `update_curr()` asks to resched the current task.
pub fn enqueue_task_fair(
    k: &mut Kernel,
    rq_cpu: CpuId,
    p: crate::linux::TaskId,
    flags: super::fair_class::EnqueueFlags,
) -> bool {
    let now = k.now;
    let r = k.with_cfs(rq_cpu, |cfs, ents| cfs.enqueue_entity(ents, p, now, flags));
    k.cpus[rq_cpu as usize].rq.cfs_h_nr_running += 1;
    r
}

/// Models `dequeue_task_fair()` — kernel/sched/fair.c @ v6.10 (flat): `dequeue_entity()` and
/// `h_nr_running--`. Returns false if the entity was delayed instead (DELAY_DEQUEUE, v6.12:
/// `dequeue_entities()` returns -1): the task stays queued and counted, and the caller,
/// `deactivate_task()`, leaves it `on_rq` (`block_task()` skips `__block_task()`).
pub fn dequeue_task_fair(
    k: &mut Kernel,
    rq_cpu: CpuId,
    p: crate::linux::TaskId,
    flags: super::fair_class::DequeueFlags,
) -> bool {
    let now = k.now;
    k.with_cfs(rq_cpu, |cfs, ents| cfs.dequeue_entity(ents, p, now, flags));
    if k.ents[p as usize].sched_delayed {
        k.stats.delayed_dequeues += 1;
        return false;
    }
    k.cpus[rq_cpu as usize].rq.cfs_h_nr_running -= 1;
    true
}

/// Models `pick_task_fair()` — kernel/sched/fair.c @ v6.10: `pick_next_entity()` (EEVDF's
/// eligible entity with the earliest deadline, or CFS's leftmost). With DELAY_DEQUEUE (v6.12)
/// a picked entity that is delayed is dequeued for good instead (`pick_next_entity()` ->
/// `dequeue_entities(DEQUEUE_SLEEP | DEQUEUE_DELAYED)` -> `__block_task()`), and the pick
/// starts again (`goto again`). Simplification: that final dequeue costs nothing beyond the
/// pick's own cost.
pub fn pick_task_fair(k: &mut Kernel, cpu: CpuId) -> Option<crate::linux::TaskId> {
    let now = k.now;
    loop {
        let p = k.with_cfs(cpu, |cfs, ents| cfs.pick_next_entity(ents, now))?;
        if !k.ents[p as usize].sched_delayed {
            return Some(p);
        }
        finish_delayed_dequeue(k, cpu, p);
    }
}

/// The end of a delayed dequeue: `dequeue_entities(DEQUEUE_SLEEP | DEQUEUE_DELAYED)` on `p`'s
/// entity, then the core's `__block_task()` (`p->on_rq = 0`, `sub_nr_running()`), under the
/// rq lock of `rq_cpu`.
pub fn finish_delayed_dequeue(k: &mut Kernel, rq_cpu: CpuId, p: crate::linux::TaskId) {
    use super::fair_class::DequeueFlags;
    crate::linux::check::on_dequeue(k, rq_cpu, p);
    let now = k.now;
    let flags = DequeueFlags { sleep: true, delayed: true, ..Default::default() };
    k.with_cfs(rq_cpu, |cfs, ents| cfs.dequeue_entity(ents, p, now, flags));
    let rq = &mut k.cpus[rq_cpu as usize].rq;
    rq.cfs_h_nr_running -= 1;
    rq.nr_running -= 1;
    super::group_sums::rq_changed(k, rq_cpu);
    k.tasks[p as usize].on_rq = false;
    crate::linux::check::on_rq_changed(k, rq_cpu);
}

/// Models the fair part of `ttwu_runnable()` — kernel/sched/core.c @ v6.12 for a delayed task
/// (`enqueue_task(ENQUEUE_DELAYED)` -> `enqueue_task_fair()` -> `requeue_delayed_entity()`),
/// under `rq_cpu`'s lock: the task is queued again as it was, no placement, no migration.
pub fn requeue_delayed_task(k: &mut Kernel, rq_cpu: CpuId, p: crate::linux::TaskId) {
    let now = k.now;
    k.with_cfs(rq_cpu, |cfs, ents| cfs.requeue_delayed_entity(ents, p, now));
}

/// Models `set_next_task_fair()` as `pick_next_task_fair()` reaches it: with `prev` still the
/// fair runqueue's curr (the fast path), `put_prev_entity()` then `set_next_entity()`.
pub fn set_next_task_fair(k: &mut Kernel, cpu: CpuId, p: crate::linux::TaskId) {
    let now = k.now;
    k.with_cfs(cpu, |cfs, ents| cfs.switch_to(ents, p, now));
}

/// Models `put_prev_task_fair()` — kernel/sched/fair.c @ v6.10: `put_prev_entity()` (a still
/// queued curr goes back into the tree).
pub fn put_prev_task_fair(k: &mut Kernel, cpu: CpuId) {
    let now = k.now;
    k.with_cfs(cpu, |cfs, ents| cfs.put_prev_entity(ents, now));
}

/// Models `check_preempt_wakeup_fair()` — kernel/sched/fair.c @ v6.10, for a fair wakee `p`
/// against a fair `curr`: under WAKEUP_PREEMPTION, EEVDF's (or CFS's) wakeup test, or'ed with
/// the enqueue's own `update_curr()` verdict. True to resched.
pub fn check_preempt_wakeup_fair(
    k: &mut Kernel,
    rq_cpu: CpuId,
    p: crate::linux::TaskId,
    enqueue_resched: bool,
) -> bool {
    let mut resched = enqueue_resched;
    if k.cfg.feat(super::features::SchedFeat::WAKEUP_PREEMPTION) {
        let now = k.now;
        resched |= k.with_cfs(rq_cpu, |cfs, ents| cfs.check_preempt_wakeup(ents, p, now));
    }
    resched
}

/// Models `migrate_task_rq_fair()` — kernel/sched/fair.c @ v6.10: take the entity's load and
/// vruntime basis off `prev_cpu`'s runqueue.
pub fn migrate_task_rq_fair(k: &mut Kernel, p: crate::linux::TaskId, prev_cpu: CpuId) {
    k.with_cfs(prev_cpu, |cfs, ents| cfs.migrate_task_rq(ents, p));
}

/// Models `task_tick_fair()` -> `entity_tick()` — kernel/sched/fair.c @ v6.10: slice and
/// deadline accounting of the running entity. True to resched.
pub fn task_tick_fair(k: &mut Kernel, cpu: CpuId) -> bool {
    let now = k.now;
    k.with_cfs(cpu, |cfs, ents| cfs.check_preempt_tick(ents, now))
}

/// Models `yield_task_fair()` — kernel/sched/fair.c @ v6.10.
pub fn yield_task_fair(k: &mut Kernel, cpu: CpuId) {
    let now = k.now;
    k.with_cfs(cpu, |cfs, ents| cfs.yield_task(ents, now));
}

// ---------------------------------------------------------------------------------------
// Wakeup placement: select_task_rq_fair() and the idle-sibling search
// ---------------------------------------------------------------------------------------

use super::available_idle_cpu;
use super::topology::{SD_SHARE_CPUCAPACITY, SD_WAKE_AFFINE};
use crate::linux::kernel::sched::features::SchedFeat;
use crate::linux::TaskId;

/// `sd_llc_shared`: the per-LLC shared state (`struct sched_domain_shared`).
#[derive(Debug, Clone, Default)]
pub struct SdShared {
    /// `nr_busy_cpus` (maintained by the nohz idle bookkeeping).
    pub nr_busy_cpus: u32,
    /// `has_idle_cores`: a hint that some core of the LLC is fully idle.
    pub has_idle_cores: bool,
    /// `nr_idle_scan`: the SIS_UTIL scan budget, written by `update_idle_cpu_scan()`.
    pub nr_idle_scan: u32,
}

/// The CPU whose `sd_llc_shared` `cpu` uses.
#[inline]
fn llc_of(k: &Kernel, cpu: CpuId) -> usize {
    k.sd.sd_llc_id[cpu as usize] as usize
}

/// `available_idle_cpu(other)` read by `cpu`: the runqueue lines `idle_cpu()` reads, each a
/// transfer when another CPU wrote it since (`rq_lines::idle_cpu_reads`). Returns that cost.
#[inline]
fn peek_rq(k: &mut Kernel, cpu: CpuId, other: CpuId) -> Time {
    super::rq_lines::idle_cpu_reads(k, cpu, other)
}

/// Models `record_wakee()` — kernel/sched/fair.c @ v6.10: the waker's `wakee_flips` count
/// wakee changes, halved at most once a second.
pub fn record_wakee(k: &mut Kernel, cpu: CpuId, p: TaskId) {
    let j = k.jiffies();
    let hz = k.cfg.hz as u64;
    let curr = k.curr(cpu) as usize;
    let t = &mut k.tasks[curr];
    if j > t.wakee_flip_decay_ts + hz {
        t.wakee_flips >>= 1;
        t.wakee_flip_decay_ts = j;
    }
    if t.last_wakee != Some(p) {
        t.last_wakee = Some(p);
        t.wakee_flips += 1;
    }
}

/// Models `wake_wide()` — kernel/sched/fair.c @ v6.10: spread (no affine wakeup) when both
/// the waker and the wakee switch partners more often than the LLC has CPUs.
pub fn wake_wide(k: &Kernel, cpu: CpuId, p: TaskId) -> bool {
    let mut master = k.tasks[k.curr(cpu) as usize].wakee_flips;
    let mut slave = k.tasks[p as usize].wakee_flips;
    let factor = k.sd.sd_llc_size[cpu as usize];
    if master < slave {
        std::mem::swap(&mut master, &mut slave);
    }
    !(slave < factor || master < slave * factor)
}

/// `cpu_load()`: the runqueue's PELT load average.
pub fn cpu_load(k: &Kernel, cpu: CpuId) -> u64 {
    k.cpus[cpu as usize].rq.cfs.avg.load_avg
}

/// `task_h_load()` without cgroups: the task's PELT load average.
pub fn task_h_load(k: &Kernel, p: TaskId) -> u64 {
    k.ents[p as usize].avg.load_avg
}

/// Models `wake_affine_idle()` — kernel/sched/fair.c @ v6.10. `None` is "no opinion".
fn wake_affine_idle(k: &Kernel, this_cpu: CpuId, prev_cpu: CpuId, sync: bool) -> Option<CpuId> {
    if available_idle_cpu(k, this_cpu) && k.sd.cpus_share_cache(this_cpu, prev_cpu) {
        return Some(if available_idle_cpu(k, prev_cpu) { prev_cpu } else { this_cpu });
    }
    if sync {
        let rq = &k.cpus[this_cpu as usize].rq;
        // aa3ee4f0b754: delayed (sleeping) entities do not count as running here.
        let delayed = if k.cfg.has(crate::linux::patches::Patch::Aa3ee4f0b754) { rq.cfs.nr_delayed } else { 0 };
        if rq.nr_running - delayed == 1 {
            return Some(this_cpu);
        }
    }
    if available_idle_cpu(k, prev_cpu) {
        return Some(prev_cpu);
    }
    None
}

/// Models `wake_affine_weight()` — kernel/sched/fair.c @ v6.10 (capacities equal: no
/// asymmetric CPUs in the model's machines).
fn wake_affine_weight(
    k: &Kernel,
    imbalance_pct: u32,
    p: TaskId,
    this_cpu: CpuId,
    prev_cpu: CpuId,
    sync: bool,
) -> Option<CpuId> {
    let task_load = task_h_load(k, p) as i64;
    let mut this_eff = cpu_load(k, this_cpu) as i64;
    if sync {
        let current_load = task_h_load(k, k.curr(this_cpu)) as i64;
        if current_load > this_eff {
            return Some(this_cpu);
        }
        this_eff -= current_load;
    }
    this_eff += task_load;
    if k.cfg.feat(SchedFeat::WA_BIAS) {
        this_eff *= 100;
    }
    this_eff *= 1024;
    let mut prev_eff = cpu_load(k, prev_cpu) as i64 - task_load;
    if k.cfg.feat(SchedFeat::WA_BIAS) {
        prev_eff *= 100 + (imbalance_pct as i64 - 100) / 2;
    }
    prev_eff *= 1024;
    if sync {
        prev_eff += 1;
    }
    (this_eff < prev_eff).then_some(this_cpu)
}

/// Models `wake_affine()` — kernel/sched/fair.c @ v6.10: this CPU or the wakee's previous one.
fn wake_affine(k: &Kernel, imbalance_pct: u32, p: TaskId, this_cpu: CpuId, prev_cpu: CpuId, sync: bool) -> CpuId {
    let mut target = None;
    if k.cfg.feat(SchedFeat::WA_IDLE) {
        target = wake_affine_idle(k, this_cpu, prev_cpu, sync);
    }
    if target.is_none() && k.cfg.feat(SchedFeat::WA_WEIGHT) {
        target = wake_affine_weight(k, imbalance_pct, p, this_cpu, prev_cpu, sync);
    }
    if target == Some(this_cpu) {
        this_cpu
    } else {
        prev_cpu
    }
}

/// Models `test_idle_cores()`.
fn test_idle_cores(k: &Kernel, cpu: CpuId) -> bool {
    k.llc_shared[llc_of(k, cpu)].has_idle_cores
}

/// Models `set_idle_cores()`.
fn set_idle_cores(k: &mut Kernel, cpu: CpuId, val: bool) {
    let l = llc_of(k, cpu);
    k.llc_shared[l].has_idle_cores = val;
}

/// Models `__update_idle_core()` — kernel/sched/fair.c @ v6.10, from `set_next_task_idle()`:
/// if every SMT sibling of this CPU is idle, mark the LLC as having an idle core. Returns the
/// cost of reading the siblings' runqueues.
pub fn __update_idle_core(k: &mut Kernel, cpu: CpuId) -> Time {
    if k.m.topo.smt_siblings(cpu).len() < 2 || test_idle_cores(k, cpu) {
        return 0;
    }
    let mut cost = 0;
    let mut next = smt_sibling_from(k, cpu, 0);
    while let Some(s) = next {
        next = smt_sibling_from(k, cpu, s + 1);
        if s == cpu {
            continue;
        }
        cost += peek_rq(k, cpu, s);
        if !available_idle_cpu(k, s) {
            return cost;
        }
    }
    set_idle_cores(k, cpu, true);
    cost
}

/// The first SMT sibling of `cpu` (itself included) numbered `from` or above: a walk over the
/// siblings that leaves `k` free between steps without collecting them.
fn smt_sibling_from(k: &Kernel, cpu: CpuId, from: CpuId) -> Option<CpuId> {
    k.m.topo.smt_siblings(cpu).iter().copied().find(|&s| s >= from)
}

/// Models `select_idle_core()`: `Ok(core)` if the whole core is idle; otherwise records the
/// first idle sibling in `idle_cpu`.
fn select_idle_core(
    k: &mut Kernel,
    cpu: CpuId,
    core: CpuId,
    p: TaskId,
    idle_cpu: &mut Option<CpuId>,
    cost: &mut Time,
) -> bool {
    let allowed = |k: &Kernel, c: CpuId| k.tasks[p as usize].cpu_allowed(c);
    let mut idle = true;
    let mut next = smt_sibling_from(k, core, 0);
    while let Some(s) = next {
        next = smt_sibling_from(k, core, s + 1);
        *cost += peek_rq(k, cpu, s);
        if !search_idle_cpu(k, s) {
            // sched_idle_cpu() is never true here (no SCHED_IDLE tasks modelled).
            idle = false;
            continue;
        }
        if idle_cpu.is_none() && allowed(k, s) {
            *idle_cpu = Some(s);
        }
    }
    idle && allowed(k, core)
}

/// Models `select_idle_cpu()` — kernel/sched/fair.c @ v6.10: nothing if the SIS_UTIL budget
/// is zero; else scan the LLC from target+1, whole cores when one is known idle, otherwise CPU
/// by CPU within the budget.
fn select_idle_cpu(
    k: &mut Kernel,
    cpu: CpuId,
    p: TaskId,
    has_idle_core: bool,
    target: CpuId,
    cost: &mut Time,
) -> Option<CpuId> {
    let llc = k.sd.sd_llc[target as usize];
    let llc = llc?;
    let span = k.sd.domains(target)[llc].span.clone();
    let allowed = |k: &Kernel, c: CpuId| k.tasks[p as usize].cpu_allowed(c);
    // The SIS_UTIL budget applies to the CPU-by-CPU scan only, but an exhausted budget (an
    // overloaded LLC) ends the search before any scan, the idle-core one included.
    let mut nr: i64 = i64::MAX;
    if k.cfg.feat(SchedFeat::SIS_UTIL) {
        nr = k.llc_shared[llc_of(k, target)].nr_idle_scan as i64 + 1;
        if nr == 1 {
            return None;
        }
    }
    let mut idle_cpu = None;
    // The cores already scanned (`cpus &= ~cpu_smt_mask(core)` in the kernel's `cpus`): their
    // SMT siblings are skipped. The scan goes through the LLC span in wrap order, so a core's
    // siblings are all marked once it is scanned.
    let n = k.m.topo.nr_cpus;
    for c in span.iter_wrap((target + 1) % n) {
        if !allowed(k, c) || (has_idle_core && core_scanned(k, p, &span, target, c)) {
            continue;
        }
        if has_idle_core {
            if select_idle_core(k, cpu, c, p, &mut idle_cpu, cost) {
                return Some(c);
            }
        } else {
            nr -= 1;
            if nr <= 0 {
                return None;
            }
            *cost += peek_rq(k, cpu, c);
            if search_idle_cpu(k, c) {
                return Some(c);
            }
        }
    }
    if has_idle_core {
        set_idle_cores(k, target, false);
    }
    idle_cpu
}

/// Whether `select_idle_cpu()`'s idle-core scan, going through `span` in wrap order from
/// `target + 1`, has already scanned `c`'s core: an SMT sibling of `c` in the span that the
/// task may use comes before `c` (the first such sibling is scanned and drops the whole core
/// from the kernel's `cpus` mask). Computed from the siblings instead of a per-wakeup mask.
fn core_scanned(k: &Kernel, p: TaskId, span: &crate::hw::cpumask::CpuMask, target: CpuId, c: CpuId) -> bool {
    let n = k.m.topo.nr_cpus;
    let start = (target + 1) % n;
    let order = |x: CpuId| if x >= start { x - start } else { x + n - start };
    let mut next = smt_sibling_from(k, c, 0);
    while let Some(s) = next {
        next = smt_sibling_from(k, c, s + 1);
        if s != c && order(s) < order(c) && span.test(s) && k.tasks[p as usize].cpu_allowed(s) {
            return true;
        }
    }
    false
}

/// Models `select_idle_smt()`: an idle SMT sibling of `target` inside the LLC.
fn select_idle_smt(k: &mut Kernel, cpu: CpuId, p: TaskId, target: CpuId, cost: &mut Time) -> Option<CpuId> {
    let mut next = smt_sibling_from(k, target, 0);
    while let Some(s) = next {
        next = smt_sibling_from(k, target, s + 1);
        if s == target || !k.tasks[p as usize].cpu_allowed(s) {
            continue;
        }
        *cost += peek_rq(k, cpu, s);
        if search_idle_cpu(k, s) {
            return Some(s);
        }
    }
    None
}

/// The idle test of `select_idle_sibling()`'s search past the target and prev CPUs:
/// `available_idle_cpu()`, and on a machine with `idle_search_in_idle_loop = false` also in
/// interrupt context (an idle CPU sitting in its idle loop, halted or not, is passed over).
/// That is a measured guest kernel, not an upstream rule: on the 2-vCPU guest (Linux
/// 6.18.44-fc, whose command line carries the non-upstream `sched_vcpu_pack=15`) the search
/// never took an idle vCPU halted in its idle loop (0 of 83,425 perf-pipe and 720 rt-app
/// wakeups) and mostly took one handling an interrupt (77 of 146), while the prev check took
/// an idle prev every time (docs/validate-guest.md, "Wakeup placement on the guest").
pub fn search_idle_cpu(k: &Kernel, cpu: CpuId) -> bool {
    available_idle_cpu(k, cpu) && (k.m.idle_search_in_idle_loop || k.cpus[cpu as usize].x.irq_phase.is_some())
}

/// Models `select_idle_sibling()` — kernel/sched/fair.c @ v6.10. Every idle test is
/// `available_idle_cpu()`, which reads `ttwu_pending`, so a CPU that already has a wakee
/// queued does not look idle (unless `ttwu_pending` was cleared early, pre-d6962c4fe8f9).
/// The search past the target and prev (`recent_used_cpu`, `select_idle_smt()`,
/// `select_idle_cpu()`) tests [`search_idle_cpu`]: on a machine with
/// `idle_search_in_idle_loop = false` it passes over idle CPUs outside interrupt context.
pub fn select_idle_sibling(
    k: &mut Kernel,
    cpu: CpuId,
    p: TaskId,
    prev: CpuId,
    target: CpuId,
    cost: &mut Time,
) -> CpuId {
    *cost += peek_rq(k, cpu, target);
    if available_idle_cpu(k, target) {
        return target;
    }
    if prev != target && k.sd.cpus_share_cache(prev, target) {
        *cost += peek_rq(k, cpu, prev);
        if available_idle_cpu(k, prev) {
            return prev;
        }
    }
    // A per-CPU kthread waking a task on its own CPU (IO completion): stack on prev.
    let curr = k.curr(cpu);
    let kthread_waker =
        k.tasks[curr as usize].pinned == Some(cpu) && k.tasks[curr as usize].kind != super::TaskKind::Idle;
    if kthread_waker
        && prev == cpu
        && k.cpus[cpu as usize].rq.nr_running <= 1
        && k.cpus[cpu as usize].preempt_count & crate::linux::preempt::HARDIRQ_MASK == 0
    {
        return prev;
    }
    let recent = k.tasks[p as usize].recent_used_cpu;
    k.tasks[p as usize].recent_used_cpu = Some(prev);
    if let Some(r) = recent {
        if r != prev && r != target && k.sd.cpus_share_cache(r, target) && k.tasks[p as usize].cpu_allowed(r) {
            *cost += peek_rq(k, cpu, r);
            if search_idle_cpu(k, r) {
                return r;
            }
        }
    }
    if k.sd.sd_llc[target as usize].is_none() {
        return target;
    }
    let smt = k.sd.domains(target).first().is_some_and(|d| d.flags & SD_SHARE_CPUCAPACITY != 0);
    let mut has_idle_core = false;
    if smt {
        has_idle_core = test_idle_cores(k, target);
        if !has_idle_core && k.sd.cpus_share_cache(prev, target) {
            if let Some(i) = select_idle_smt(k, cpu, p, prev, cost) {
                return i;
            }
        }
    }
    if let Some(i) = select_idle_cpu(k, cpu, p, has_idle_core, target, cost) {
        return i;
    }
    target
}

/// Models `select_task_rq_fair()` for a wakeup (WF_TTWU) — kernel/sched/fair.c @ v6.10: the
/// wake-affine decision at the first SD_WAKE_AFFINE domain spanning both CPUs, then the
/// idle-sibling search. Returns (CPU, cost of the search). Simplifications: no EAS, no
/// SD_BALANCE_WAKE slow path (off by default on every domain).
pub fn select_task_rq_fair(k: &mut Kernel, cpu: CpuId, p: TaskId, prev_cpu: CpuId, sync: bool) -> (CpuId, Time) {
    record_wakee(k, cpu, p);
    let allowed_here = k.tasks[p as usize].cpu_allowed(cpu);
    // wake_wide() exists from 62470419e993 (v3.12).
    let wide = k.cfg.has(crate::linux::patches::Patch::S62470419e993) && wake_wide(k, cpu, p);
    let want_affine = !wide && allowed_here;
    if !k.cfg.has(crate::linux::patches::Patch::S10e2f1acd010) {
        return select_task_rq_fair_v38(k, cpu, p, prev_cpu, sync, want_affine);
    }
    let mut new_cpu = prev_cpu;
    let mut cost = 0;
    // A wakeup on the wakee's previous CPU keeps new_cpu = prev_cpu whichever domain is found,
    // so the domain walk is only needed when the CPUs differ.
    if want_affine && cpu != prev_cpu {
        let places = k.m.topo.places();
        let x = places[cpu as usize] ^ places[prev_cpu as usize];
        let found =
            k.sd.domains(cpu)
                .iter()
                .find(|d| d.flags & SD_WAKE_AFFINE != 0 && d.span_test_apart(prev_cpu, x))
                .map(|d| d.imbalance_pct);
        if let Some(pct) = found {
            new_cpu = if k.cfg.has(crate::linux::patches::Patch::B92486cbf2aa) {
                wake_affine(k, pct, p, cpu, prev_cpu, sync)
            } else {
                wake_affine_v38(k, pct, p, cpu, prev_cpu, sync)
            };
        }
    }
    let t = select_idle_sibling(k, cpu, p, prev_cpu, new_cpu, &mut cost);
    (t, cost)
}

/// Models `update_idle_cpu_scan()` — kernel/sched/fair.c @ v6.10: the SIS_UTIL budget from
/// the LLC's summed utilization, computed by periodic/idle balancing at the LLC level.
pub fn update_idle_cpu_scan(k: &mut Kernel, cpu: CpuId, sum_util: u64) {
    let Some(llc) = k.sd.sd_llc[cpu as usize] else { return };
    let d = &k.sd.domains(cpu)[llc];
    let llc_weight = d.span_weight as u64;
    let pct = d.imbalance_pct as u64;
    // x = sum_util / llc_weight; y = 1024 - min(1024, x^2 * pct^2 / (10000 * 1024)).
    let x = sum_util / llc_weight.max(1);
    let tmp = (x * x).saturating_mul(pct * pct) / (10000 * 1024);
    let y = 1024 - tmp.min(1024);
    let nr = (y * llc_weight / 1024) as u32;
    let l = llc_of(k, cpu);
    k.llc_shared[l].nr_idle_scan = nr;
}

/// Models `sched_balance_find_dst_cpu()` (was `find_idlest_cpu()`) for a new task
/// (SD_BALANCE_FORK) — kernel/sched/fair.c @ v6.10: from the highest domain with the flag
/// down, take the group with the most idle CPUs (then the fewest runnable tasks, the local
/// group first on ties), and finally its first idle CPU, else its least loaded one.
/// Simplification: group load is the runnable count, not PELT load and capacity.
pub fn sched_balance_find_dst_cpu(k: &Kernel, cpu: CpuId, p: TaskId) -> CpuId {
    use super::topology::SD_BALANCE_FORK;
    if let Some(c) = k.tasks[p as usize].pinned {
        return c;
    }
    let task = &k.tasks[p as usize];
    let doms = k.sd.domains(cpu);
    let Some(top) = doms.iter().rposition(|d| d.flags & SD_BALANCE_FORK != 0) else { return cpu };
    let mut span = doms[top].span.clone();
    let mut level = top as isize;
    let score = |c: CpuId| (k.cpus[c as usize].rq.nr_running + k.cpus[c as usize].rq.ttwu_pending as u32, c);
    while level >= 0 {
        let owner = span.first().unwrap_or(cpu);
        let d = &k.sd.domains(owner)[level as usize];
        let mut best: Option<(u32, u32, bool, usize)> = None;
        for (gi, g) in d.groups.iter().enumerate() {
            // find_idlest_group(): skip groups the task may not use (p->cpus_ptr).
            if !g.intersects(&span) || task.cpus_mask.as_ref().is_some_and(|m| !g.intersects(m)) {
                continue;
            }
            super::group_sums::debug_check_group(k, owner, level as usize, gi);
            let id = k.sd.sums.group_id(owner, level as usize, gi);
            let (idle, load) = (k.sd.sums.nr_idle(id), k.sd.sums.load(id));
            let local = g.test(cpu);
            let better = match best {
                None => true,
                Some((bi, bl, blocal, _)) => {
                    idle > bi || (idle == bi && (load < bl || (load == bl && local && !blocal)))
                }
            };
            if better {
                best = Some((idle, load, local, gi));
            }
        }
        let Some((_, _, _, gi)) = best else { break };
        span = d.groups[gi].clone();
        level -= 1;
        if span.weight() <= 1 {
            break;
        }
    }
    // find_idlest_group_cpu(): only CPUs of the group the task may use.
    let ok = |c: CpuId| task.cpu_allowed(c);
    let found = span
        .iter()
        .filter(|&c| ok(c))
        .find(|&c| idle_cpu_like(k, c))
        .or_else(|| span.iter().filter(|&c| ok(c)).min_by_key(|&c| score(c)));
    found.unwrap_or(cpu)
}

fn idle_cpu_like(k: &Kernel, c: CpuId) -> bool {
    super::idle_cpu(k, c)
}

/// The v6.10 gates of newidle balancing, each pinned on a hand-set kernel state (i7-4c8t:
/// SMT and MC domains, a quiet machine).
#[cfg(test)]
mod newidle_gate_tests {
    use super::*;

    fn kernel() -> Kernel {
        let mut k = Kernel::for_test("i7-4c8t");
        // A long uptime so that decay and blocked-load clocks are past their first period.
        k.now = 10 * crate::sim::NSEC_PER_SEC;
        k
    }

    /// Run `sched_balance_newidle()` on CPU 0 from its entry (rq lock held, as
    /// `pick_next_task_fair()` calls it) to its return; the domains it walked.
    fn newidle(k: &mut Kernel) -> (Vec<u8>, i64) {
        let cpu = 0;
        k.cpus[0].rq.lock_owner = Some(cpu);
        k.cpus[0].preempt_count += 1;
        let mut s = NewidleBalance::default();
        let mut walked = Vec::new();
        for _ in 0..100 {
            let (at, sd) = (s.at, s.sd);
            let next = sched_balance_newidle(k, cpu, &mut s);
            if at == NewidleAt::Domain && s.sd > sd {
                walked.push(sd);
            }
            match next {
                Next::Ret(_) => return (walked, k.cpus[0].x.ret),
                Next::Cont(t) => k.now += t,
                other => panic!("unexpected {other:?}"),
            }
        }
        panic!("newidle did not return")
    }

    #[test]
    fn rd_overloaded_clear_gates_the_walk() {
        let mut k = kernel();
        k.rd.overloaded = false;
        k.cpus[0].rq.avg_idle = 1_000_000;
        let (walked, _) = newidle(&mut k);
        assert!(walked.is_empty());
        assert_eq!(k.stats.newidle_balances, 0);
        // idle_stamp is stamped even when gated.
        assert_ne!(k.cpus[0].rq.idle_stamp, 0);
        k.rd.overloaded = true;
        let (walked, _) = newidle(&mut k);
        assert_eq!(walked, vec![0, 1], "SMT then MC");
        assert_eq!(k.stats.newidle_balances, 1);
    }

    #[test]
    fn avg_idle_below_the_lowest_domains_cost_gates_the_walk() {
        let mut k = kernel();
        k.rd.overloaded = true;
        k.sd.domains_mut(0)[0].max_newidle_lb_cost = 100_000;
        k.cpus[0].rq.avg_idle = 50_000;
        let (walked, _) = newidle(&mut k);
        assert!(walked.is_empty());
        k.cpus[0].rq.avg_idle = 150_000;
        let (walked, _) = newidle(&mut k);
        assert!(!walked.is_empty());
    }

    #[test]
    fn the_walk_stops_where_avg_idle_is_below_cost_so_far_plus_the_domains_max() {
        let mut k = kernel();
        k.rd.overloaded = true;
        k.sd.domains_mut(0)[0].max_newidle_lb_cost = 1_000;
        k.sd.domains_mut(0)[1].max_newidle_lb_cost = 400_000;
        k.sd.domains_mut(0)[0].last_decay_max_lb_cost = k.jiffies();
        k.sd.domains_mut(0)[1].last_decay_max_lb_cost = k.jiffies();
        k.cpus[0].rq.avg_idle = 300_000;
        let (walked, _) = newidle(&mut k);
        assert_eq!(walked, vec![0], "MC is skipped: avg_idle < curr_cost + its max cost");
    }

    /// `update_next_balance()` in `sched_balance_newidle()` (v6.10): a newly idle CPU pulls its
    /// `rq->next_balance` to its lowest domain's last balance plus the idle interval, gated or
    /// not, so that the next tick raises SCHED_SOFTIRQ. The guest's perf pipe showed it: SCHED
    /// softirqs on most ticks of both CPUs (262 a second against the model's 110 without it).
    #[test]
    fn a_gated_newidle_pulls_next_balance_to_the_lowest_domains_idle_interval() {
        let mut k = kernel();
        k.rd.overloaded = false;
        let j = k.jiffies();
        k.sd.domains_mut(0)[0].last_balance = j - 1;
        k.sd.domains_mut(0)[1].last_balance = j - 1;
        k.cpus[0].rq.next_balance = j + 50;
        let (walked, _) = newidle(&mut k);
        assert!(walked.is_empty());
        let want = j - 1 + get_sd_balance_interval(&k, 0, 0, false);
        assert_eq!(k.cpus[0].rq.next_balance, want);
        assert!(want <= j + 1, "due within a jiffy of now: {want} vs {j}");
        // An earlier next_balance is kept.
        k.cpus[0].rq.next_balance = j - 5;
        newidle(&mut k);
        assert_eq!(k.cpus[0].rq.next_balance, j - 5);
    }

    #[test]
    fn every_domain_the_walk_looks_at_pulls_next_balance_the_stopping_one_included() {
        let mut k = kernel();
        k.rd.overloaded = true;
        let j = k.jiffies();
        k.sd.domains_mut(0)[0].max_newidle_lb_cost = 1_000;
        k.sd.domains_mut(0)[1].max_newidle_lb_cost = 400_000;
        k.sd.domains_mut(0)[0].last_decay_max_lb_cost = j;
        k.sd.domains_mut(0)[1].last_decay_max_lb_cost = j;
        k.sd.domains_mut(0)[0].last_balance = j + 100;
        // MC stops the walk (avg_idle below its cost) but its interval still counts.
        k.sd.domains_mut(0)[1].last_balance = j + 10;
        k.cpus[0].rq.avg_idle = 300_000;
        k.cpus[0].rq.next_balance = j + 1000;
        let (walked, _) = newidle(&mut k);
        assert_eq!(walked, vec![0]);
        assert_eq!(k.cpus[0].rq.next_balance, j + 10 + get_sd_balance_interval(&k, 0, 1, false));
    }

    #[test]
    fn a_pending_wakeup_returns_before_stamping_idle() {
        let mut k = kernel();
        k.rd.overloaded = true;
        k.cpus[0].rq.ttwu_pending = true;
        crate::linux::kernel::sched::group_sums::rq_changed(&mut k, 0);
        k.cpus[0].rq.idle_stamp = 0;
        let (walked, ret) = newidle(&mut k);
        assert!(walked.is_empty() && ret == 0);
        assert_eq!(k.cpus[0].rq.idle_stamp, 0);
    }

    #[test]
    fn max_newidle_lb_cost_decays_by_253_256_at_most_once_a_second() {
        let mut k = kernel();
        k.sd.domains_mut(0)[0].max_newidle_lb_cost = 256_000;
        k.sd.domains_mut(0)[0].last_decay_max_lb_cost = k.jiffies();
        assert!(!update_newidle_cost(&mut k, 0, 0, 0), "within a second: no decay");
        k.now += 2 * crate::sim::NSEC_PER_SEC;
        assert!(update_newidle_cost(&mut k, 0, 0, 0));
        assert_eq!(k.sd.domains(0)[0].max_newidle_lb_cost, 253_000);
        // A more expensive pass raises the max at once.
        assert!(!update_newidle_cost(&mut k, 0, 0, 300_000));
        assert_eq!(k.sd.domains(0)[0].max_newidle_lb_cost, 300_000);
    }

    #[test]
    fn rd_overloaded_is_cleared_only_by_the_root_domains_stats() {
        let mut k = kernel();
        k.rd.overloaded = true;
        // No runqueue holds two tasks. The SMT level (not the root) leaves the flag alone.
        let _ = sched_balance_rq(&mut k, 0, 0, 0, CpuIdleType::NewlyIdle);
        assert!(k.rd.overloaded);
        let root = k.sd.domains(0).len() - 1;
        let _ = sched_balance_rq(&mut k, 0, 0, root, CpuIdleType::NewlyIdle);
        assert!(!k.rd.overloaded);
    }

    #[test]
    fn update_sd_lb_stats_reads_every_cpu_of_the_span() {
        let mut k = kernel();
        let root = k.sd.domains(0).len() - 1;
        let before = k.stats.lb_stats_ns;
        let _ = sched_balance_rq(&mut k, 0, 0, root, CpuIdleType::NewlyIdle);
        let first = k.stats.lb_stats_ns - before;
        // Seven remote runqueue lines missed, so the pass costs more than the arithmetic.
        assert!(first > 8 * k.costs.lb_stats_per_cpu, "{first}");
        // Read again with nothing written since: the lines hit, only the arithmetic is left.
        let before = k.stats.lb_stats_ns;
        let _ = sched_balance_rq(&mut k, 0, 0, root, CpuIdleType::NewlyIdle);
        assert_eq!(k.stats.lb_stats_ns - before, 8 * k.costs.lb_stats_per_cpu);
    }

    #[test]
    fn nohz_newidle_balance_needs_avg_idle_above_migration_cost_and_blocked_load_due() {
        let mut k = kernel();
        k.nohz.has_blocked = true;
        k.nohz.next_blocked = 0;
        k.cpus[0].rq.avg_idle = SYSCTL_SCHED_MIGRATION_COST - 1;
        nohz_newidle_balance(&mut k, 0);
        assert_eq!(k.cpus[0].rq.nohz_flags & NOHZ_NEWILB_KICK, 0);
        k.cpus[0].rq.avg_idle = SYSCTL_SCHED_MIGRATION_COST;
        nohz_newidle_balance(&mut k, 0);
        assert_ne!(k.cpus[0].rq.nohz_flags & NOHZ_NEWILB_KICK, 0);
    }
}
// ---------------------------------------------------------------------------------------
// v3.8 paths (era switches reverted): `idle_balance()` from `__schedule()`, the 3.8
// `wake_affine()` and `select_idle_sibling()`
// ---------------------------------------------------------------------------------------

/// `idle_balance()` (v3.8) resume points.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum IdleBalanceAt {
    /// The gates; past them, drop the rq lock.
    #[default]
    Start,
    /// Walking the domains with the rq lock dropped.
    Domain,
    Relock,
    Out,
}

/// `idle_balance()` (v3.8) in progress.
#[derive(Debug, Clone, Copy, Default)]
pub struct IdleBalance {
    pub at: IdleBalanceAt,
    /// Rostedt 2013 patch 3/3: drop the rq lock with IRQs enabled (post-schedule hook only).
    pub irqs_on: bool,
    /// Domain index (bottom-up).
    pub sd: u8,
    pub pulled: u8,
    pub next_balance: u64,
    pub t0: Time,
    pub curr_cost: u64,
    pub started: Time,
}

/// Models `idle_balance()` — kernel/sched/fair.c @ v3.8, called by `__schedule()` before the
/// pick when `nr_running == 0` (before 38033c37faab), or by Rostedt's post-schedule hook.
///
/// Context: rq lock held, IRQs off. Its only gate is `avg_idle < sysctl_sched_migration_cost`
/// (with 4486edd12b5a the `rd->overload` gate and with 9bd721c55c8a the `max_newidle_lb_cost`
/// gates are added, as the later kernels have them). Past the gate it drops the rq lock (IRQs
/// stay off unless `irqs_on`), walks the domains with SD_BALANCE_NEWIDLE bottom-up through the
/// shared `sched_balance_rq()` (NEWLY_IDLE) until one pulls, and relocks. No RETRY_TASK: the
/// caller's pick sees whatever is queued. Returns (in the return register) the tasks pulled.
/// Simplification: `sched_balance_rq()` is today's (see its doc), including its NEWLY_IDLE
/// `should_we_balance()` that stops when a task arrived; 3.8's `load_balance()` computed the
/// local group's load with that task instead.
pub fn idle_balance(k: &mut Kernel, cpu: CpuId, s: &mut IdleBalance) -> Next {
    use crate::linux::patches::Patch;
    match s.at {
        IdleBalanceAt::Start => {
            k.stats.newidle_calls += 1;
            s.started = k.now;
            let rq = &mut k.cpus[cpu as usize].rq;
            rq.idle_stamp = rq.clock.max(1);
            let avg_idle = rq.avg_idle;
            let mut gated = avg_idle < SYSCTL_SCHED_MIGRATION_COST;
            if k.cfg.has(Patch::S4486edd12b5a) && !k.rd.overloaded {
                gated = true;
            }
            if k.cfg.has(Patch::S9bd721c55c8a) {
                gated |= k.sd.domains(cpu).first().is_some_and(|d| avg_idle < d.max_newidle_lb_cost);
            }
            if gated {
                s.at = IdleBalanceAt::Out;
                return Next::Cont(k.costs.newidle_gated);
            }
            let c = raw_spin_rq_unlock(k, cpu, cpu);
            if s.irqs_on {
                crate::linux::engine::local_irq_enable(k, cpu);
            }
            k.stats.newidle_balances += 1;
            s.next_balance = k.jiffies() + k.cfg.hz as u64;
            s.t0 = k.now;
            s.at = IdleBalanceAt::Domain;
            Next::Cont(c + k.costs.newidle_gated + sched_balance_update_blocked_averages(k, cpu, cpu))
        }
        IdleBalanceAt::Domain => {
            let i = s.sd as usize;
            if i >= k.sd.domains(cpu).len() || s.pulled != 0 {
                s.at = IdleBalanceAt::Relock;
                return Next::Cont(0);
            }
            let (flags, max_cost) = {
                let d = &k.sd.domains(cpu)[i];
                (d.flags, d.max_newidle_lb_cost)
            };
            if k.cfg.has(Patch::S9bd721c55c8a) && k.cpus[cpu as usize].rq.avg_idle < s.curr_cost + max_cost {
                s.at = IdleBalanceAt::Relock;
                return Next::Cont(0);
            }
            let mut c = 0;
            if flags & SD_BALANCE_NEWIDLE != 0 {
                let before = k.stats.lb_stats_ns;
                let (pulled, cost) = sched_balance_rq(k, cpu, cpu, i, CpuIdleType::NewlyIdle);
                k.stats.lb_gained_newidle += pulled as u64;
                k.stats.newidle_lb_stats_ns += k.stats.lb_stats_ns - before;
                c = cost;
                s.pulled = pulled.min(u8::MAX as u32) as u8;
                if k.cfg.has(Patch::S9bd721c55c8a) {
                    let domain_cost = k.now + c - s.t0;
                    update_newidle_cost(k, cpu, i, domain_cost);
                    s.curr_cost += domain_cost;
                    s.t0 = k.now + c;
                }
            }
            // next_balance = min over the domains of last_balance + balance_interval.
            let d = &k.sd.domains(cpu)[i];
            let interval = (d.balance_interval as u64 * k.cfg.hz as u64 / 1000).max(1);
            s.next_balance = s.next_balance.min(d.last_balance + interval);
            if s.pulled != 0 {
                k.cpus[cpu as usize].rq.idle_stamp = 0;
            }
            s.sd += 1;
            Next::Cont(c)
        }
        IdleBalanceAt::Relock => {
            if s.irqs_on {
                crate::linux::engine::local_irq_disable(k, cpu);
            }
            let Some(lc) = raw_spin_rq_lock(k, cpu, cpu) else {
                return Next::Wait(WaitOn::Lock);
            };
            let j = k.jiffies();
            let rq = &mut k.cpus[cpu as usize].rq;
            if k.cfg.has(Patch::S9bd721c55c8a) {
                rq.max_idle_balance_cost = rq.max_idle_balance_cost.max(s.curr_cost);
            }
            if s.pulled != 0 || j > rq.next_balance {
                rq.next_balance = s.next_balance;
            }
            s.at = IdleBalanceAt::Out;
            Next::Cont(lc)
        }
        IdleBalanceAt::Out => {
            k.stats.newidle_ns += k.now - s.started;
            k.cpus[cpu as usize].x.ret = s.pulled as i64;
            Next::Ret(0)
        }
    }
}

/// Models `wake_affine()` — kernel/sched/fair.c @ v3.8 (before b92486cbf2aa), without task
/// groups (`effective_load()` is the weight itself) and with equal `power_of()` (it cancels):
/// loads are the instantaneous `rq->load.weight` (`wake_idx` is 0 on the SMT and MC domains);
/// a sync wakeup takes the waker's weight off this CPU. Affine if this CPU, with the wakee,
/// is no more loaded than the previous CPU scaled by half the domain's imbalance margin, or
/// (not sync) if both together carry less than one average task of this CPU.
fn wake_affine_v38(k: &Kernel, imbalance_pct: u32, p: TaskId, this_cpu: CpuId, prev_cpu: CpuId, sync: bool) -> CpuId {
    let weighted_cpuload = |c: CpuId| k.cpus[c as usize].rq.cfs.load_weight as i64;
    let mut this_load = weighted_cpuload(this_cpu);
    let load = weighted_cpuload(prev_cpu);
    if sync {
        let curr = k.curr(this_cpu);
        if k.tasks[curr as usize].kind != super::TaskKind::Idle && !super::rt::rt_task(k, curr) {
            this_load -= k.ents[curr as usize].weight as i64;
        }
    }
    let weight = k.ents[p as usize].weight as i64;
    let balanced = if this_load > 0 {
        let this_eff = 100 * (this_load + weight);
        let prev_eff = (100 + (imbalance_pct as i64 - 100) / 2) * load;
        this_eff <= prev_eff
    } else {
        true
    };
    if sync && balanced {
        return this_cpu;
    }
    // cpu_avg_load_per_task(this_cpu).
    let nr = k.cpus[this_cpu as usize].rq.nr_running as i64;
    let tl_per_task = if nr > 0 { weighted_cpuload(this_cpu) / nr } else { 0 };
    if balanced || (this_load <= load && this_load + load <= tl_per_task) {
        this_cpu
    } else {
        prev_cpu
    }
}

/// Models `select_idle_sibling()` — kernel/sched/fair.c @ v3.8 (before 10e2f1acd010): the
/// target if it is this CPU or the previous one and idle; otherwise, from the LLC domain down,
/// the first sched group (starting with the target's) whose CPUs are all idle and which the
/// task may use gives its first allowed CPU; else the target. Every idle test is `idle_cpu()`
/// (3.8's also said "not idle" while its wake list was non-empty) and reads that runqueue.
pub fn select_idle_sibling_v38(
    k: &mut Kernel,
    cpu: CpuId,
    p: TaskId,
    prev: CpuId,
    target: CpuId,
    cost: &mut Time,
) -> CpuId {
    if target == cpu {
        *cost += peek_rq(k, cpu, cpu);
        if super::idle_cpu(k, cpu) {
            return cpu;
        }
    }
    if target == prev {
        *cost += peek_rq(k, cpu, prev);
        if super::idle_cpu(k, prev) {
            return prev;
        }
    }
    let Some(llc) = k.sd.sd_llc[target as usize] else { return target };
    let pinned = k.tasks[p as usize].pinned;
    let allowed = |c: CpuId| pinned.is_none_or(|x| x == c);
    for level in (0..=llc).rev() {
        'group: for gi in 0..k.sd.domains(target)[level].groups.len() {
            let g = k.sd.domains(target)[level].groups[gi].clone();
            if !g.iter().any(allowed) {
                continue;
            }
            for i in g.iter() {
                *cost += peek_rq(k, cpu, i);
                if !super::idle_cpu(k, i) {
                    continue 'group;
                }
            }
            let first_allowed = g.iter().find(|&c| allowed(c));
            if let Some(c) = first_allowed {
                return c;
            }
        }
    }
    target
}

/// Models `select_task_rq_fair()` for a wakeup — kernel/sched/fair.c @ v3.8: with an affine
/// domain (the first SD_WAKE_AFFINE domain of this CPU spanning the previous one, when this CPU
/// is allowed), `wake_affine()` chooses between this CPU and the previous one and
/// `select_idle_sibling()` searches from there; without one the task stays on its previous CPU
/// (no SD_BALANCE_WAKE on these machines' domains, so no idlest-group search either).
fn select_task_rq_fair_v38(
    k: &mut Kernel,
    cpu: CpuId,
    p: TaskId,
    prev_cpu: CpuId,
    sync: bool,
    want_affine: bool,
) -> (CpuId, Time) {
    if !want_affine {
        return (prev_cpu, 0);
    }
    let Some(pct) =
        k.sd.domains(cpu)
            .iter()
            .find(|d| d.flags & SD_WAKE_AFFINE != 0 && d.span.test(prev_cpu))
            .map(|d| d.imbalance_pct)
    else {
        return (prev_cpu, 0);
    };
    let mut target = prev_cpu;
    if cpu != prev_cpu {
        target = if k.cfg.has(crate::linux::patches::Patch::B92486cbf2aa) {
            wake_affine(k, pct, p, cpu, prev_cpu, sync)
        } else {
            wake_affine_v38(k, pct, p, cpu, prev_cpu, sync)
        };
    }
    let mut cost = 0;
    let t = select_idle_sibling_v38(k, cpu, p, prev_cpu, target, &mut cost);
    (t, cost)
}
