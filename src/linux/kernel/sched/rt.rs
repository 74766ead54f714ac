//! Models the SCHED_FIFO and SCHED_RR parts of `kernel/sched/rt.c` and
//! `kernel/sched/cpupri.c` @ v6.10 that the RT push experiment needs: the per-rq priority
//! array and pushable list, the root domain's overload mask, wakeup placement
//! (`select_task_rq_rt` / `find_lowest_rq`), `wakeup_preempt_rt`, `task_woken_rt`,
//! `push_rt_task(s)` as a balance callback after a switch, `pull_rt_task` from `balance_rt`,
//! and the RT_PUSH_IPI irq_work chain (`tell_cpu_to_push` -> `rto_push_irq_work_func`).
//!
//! SCHED_RR's slice (`task_tick_rt`) and `yield_task_rt` are modelled for rt-app workloads.
//!
//! Simplifications (say so before relying on them): no RT group scheduling and no RT
//! throttling (`sched_rt_runtime_us`), no deadline class, no migrate-disable, no asymmetric
//! capacities. A task's affinity is `Task::cpu_allowed` (one bound CPU, a
//! `sched_setaffinity()` mask, or all CPUs). A push or pull that takes a second rq lock does so inside one
//! modelled step (as the fair balancer does): `double_lock_balance()` is charged as the lock
//! line transfer but never waits, so the kernel's "the world changed while the lock was
//! dropped" retries do not arise.
//!
//! Priorities are kernel priorities (`p->prio`): 0 is the highest RT priority, 99
//! (`MAX_RT_PRIO - 1`) means "no RT task" in `highest_prio`; a SCHED_FIFO task of user
//! priority `r` has `prio = 99 - r`.

use super::core::{move_queued_task_locked, resched_curr};
use super::topology::SD_WAKE_AFFINE;
use super::TaskKind;
use crate::linux::patches::Patch;
use crate::linux::{CpuId, Kernel, TaskId};
use crate::sim::Time;
use crate::trace::Sym;

/// `MAX_RT_PRIO`.
pub const MAX_RT_PRIO: i32 = 100;

/// The kernel priority of a SCHED_FIFO task of user priority `rtprio` (1..=99).
pub const fn fifo_prio(rtprio: i32) -> i32 {
    MAX_RT_PRIO - 1 - rtprio
}

/// `rt_task(p)`: a task of the RT class. The stopper is SCHED_FIFO by name only (stop class).
#[inline]
pub fn rt_task(k: &Kernel, p: TaskId) -> bool {
    let t = &k.tasks[p as usize];
    t.prio < MAX_RT_PRIO && t.kind != TaskKind::Stopper
}

/// `struct rt_rq` (the fields the model uses).
#[derive(Debug, Default)]
pub struct RtRq {
    /// `active`: runnable RT tasks, the running one included, as (prio, task) in priority
    /// order and FIFO within a priority (the bitmap of lists, flattened).
    pub queue: Vec<(i32, TaskId)>,
    /// `pushable_tasks`: queued, not running, migratable tasks (a plist: prio order, FIFO).
    pub pushable: Vec<(i32, TaskId)>,
    /// `overloaded`: this rq is in the root domain's `rto_mask`.
    pub overloaded: bool,
    /// The `rt_push_head` balance callback is queued (`rt_queue_push_tasks()`).
    pub push_callback: bool,
    /// `distribute_cpu_mask_prev` of `cpumask_any_and_distribute()` (lib/cpumask.c), per CPU.
    pub distribute_prev: Option<CpuId>,
}

impl RtRq {
    /// `highest_prio.curr`.
    pub fn highest_prio_curr(&self) -> i32 {
        self.queue.first().map_or(MAX_RT_PRIO - 1, |&(p, _)| p)
    }
    /// `highest_prio.next`: the best pushable task.
    pub fn highest_prio_next(&self) -> i32 {
        self.pushable.first().map_or(MAX_RT_PRIO - 1, |&(p, _)| p)
    }
    pub fn nr_running(&self) -> u32 {
        self.queue.len() as u32
    }
    fn insert(list: &mut Vec<(i32, TaskId)>, prio: i32, p: TaskId, head: bool) {
        let at =
            if head { list.partition_point(|&(q, _)| q < prio) } else { list.partition_point(|&(q, _)| q <= prio) };
        list.insert(at, (prio, p));
    }
    fn remove(list: &mut Vec<(i32, TaskId)>, p: TaskId) -> bool {
        match list.iter().position(|&(_, t)| t == p) {
            Some(i) => {
                list.remove(i);
                true
            }
            None => false,
        }
    }
    pub fn on_rt_rq(&self, p: TaskId) -> bool {
        self.queue.iter().any(|&(_, t)| t == p)
    }
}

/// The RT part of `struct root_domain`: the overload mask and the RT_PUSH_IPI iterator state.
#[derive(Debug, Default)]
pub struct RtRootDomain {
    /// `rto_mask` / `rto_count`.
    pub rto_mask: crate::hw::cpumask::CpuMask,
    pub rto_count: u32,
    /// `rto_cpu` (-1 as None), `rto_loop`, `rto_loop_next`.
    pub rto_cpu: Option<CpuId>,
    pub rto_loop: u32,
    pub rto_loop_next: u32,
    /// `rto_push_work`, the irq_work queued from CPU to CPU (a csd of type IRQ_WORK).
    pub rto_push_work: crate::linux::CsdId,
    /// `rd->cpupri`.
    pub cpupri: Cpupri,
}

/// Models `struct cpupri` — kernel/sched/cpupri.c @ v6.10: each CPU's level (0 for no RT
/// task queued, 1..=99 the level of its highest RT priority, see [`convert_prio`]) and, per
/// level, the mask and count of the CPUs at it, kept by [`Cpupri::set`] as RT tasks are queued
/// and dequeued, so [`cpupri_find`] looks at levels, not at every runqueue.
#[derive(Debug, Default)]
pub struct Cpupri {
    cpu_to_pri: Vec<u8>,
    pri_to_cpu: Vec<crate::hw::cpumask::CpuMask>,
    count: Vec<u32>,
}

/// `CPUPRI_NR_PRIORITIES` without the deadline level (no deadline class is modelled).
const CPUPRI_LEVELS: usize = MAX_RT_PRIO as usize;

impl Cpupri {
    /// `cpupri_init()`: every CPU at level 0 (CPUPRI_NORMAL).
    pub fn new(nr_cpus: u32) -> Cpupri {
        let mut pri_to_cpu = vec![crate::hw::cpumask::CpuMask::new(nr_cpus); CPUPRI_LEVELS];
        pri_to_cpu[0] = crate::hw::cpumask::CpuMask::full(nr_cpus);
        let mut count = vec![0; CPUPRI_LEVELS];
        count[0] = nr_cpus;
        Cpupri { cpu_to_pri: vec![0; nr_cpus as usize], pri_to_cpu, count }
    }

    /// `cpu`'s level (`cpu_to_pri`): 0 for no RT task queued, else its highest RT level.
    pub fn level(&self, cpu: CpuId) -> i32 {
        i32::from(self.cpu_to_pri[cpu as usize])
    }

    /// `cpupri_set()`: `cpu`'s highest priority is now at `level`.
    pub fn set(&mut self, cpu: CpuId, level: i32) {
        let (old, new) = (self.cpu_to_pri[cpu as usize] as usize, level as usize);
        if old == new {
            return;
        }
        self.pri_to_cpu[old].clear(cpu);
        self.count[old] -= 1;
        self.pri_to_cpu[new].set(cpu);
        self.count[new] += 1;
        self.cpu_to_pri[cpu as usize] = new as u8;
    }
}

/// `cpupri_set(rd->cpupri, cpu, highest_prio.curr)` after `cpu`'s RT queue changed.
fn update_cpupri(k: &mut Kernel, cpu: CpuId) {
    let level = convert_prio(k.cpus[cpu as usize].rq.rt.highest_prio_curr());
    k.rd.rt.cpupri.set(cpu, level);
}

fn migratable(k: &Kernel, p: TaskId) -> bool {
    k.tasks[p as usize].migratable()
}

/// `task_current(rq, p)`.
fn task_current(k: &Kernel, cpu: CpuId, p: TaskId) -> bool {
    k.cpus[cpu as usize].rq.curr == p
}

// ------------------------------------------------------------------------------------------
// Enqueue, dequeue, pushable list and overload (rt.c @ v6.10)
// ------------------------------------------------------------------------------------------

/// Models `enqueue_pushable_task()`: add `p` and mark the rq overloaded (`rt_set_overload()`).
fn enqueue_pushable_task(k: &mut Kernel, cpu: CpuId, p: TaskId) {
    let prio = k.tasks[p as usize].prio;
    let rt = &mut k.cpus[cpu as usize].rq.rt;
    RtRq::remove(&mut rt.pushable, p);
    RtRq::insert(&mut rt.pushable, prio, p, false);
    if !rt.overloaded {
        rt.overloaded = true;
        k.rd.rt.rto_mask.set(cpu);
        k.rd.rt.rto_count += 1;
    }
}

/// Models `dequeue_pushable_task()`: remove `p`; the last one clears the overload.
fn dequeue_pushable_task(k: &mut Kernel, cpu: CpuId, p: TaskId) {
    let rt = &mut k.cpus[cpu as usize].rq.rt;
    RtRq::remove(&mut rt.pushable, p);
    if rt.pushable.is_empty() && rt.overloaded {
        rt.overloaded = false;
        k.rd.rt.rto_mask.clear(cpu);
        k.rd.rt.rto_count -= 1;
    }
}

/// Models `enqueue_task_rt()`: the tail of its priority list (`head`: ENQUEUE_HEAD), and the
/// pushable list unless it is current or pinned.
pub fn enqueue_task_rt(k: &mut Kernel, cpu: CpuId, p: TaskId, head: bool) {
    let prio = k.tasks[p as usize].prio;
    RtRq::insert(&mut k.cpus[cpu as usize].rq.rt.queue, prio, p, head);
    update_cpupri(k, cpu);
    if !task_current(k, cpu, p) && migratable(k, p) {
        enqueue_pushable_task(k, cpu, p);
    }
}

/// Models `dequeue_task_rt()`.
pub fn dequeue_task_rt(k: &mut Kernel, cpu: CpuId, p: TaskId) {
    RtRq::remove(&mut k.cpus[cpu as usize].rq.rt.queue, p);
    update_cpupri(k, cpu);
    dequeue_pushable_task(k, cpu, p);
}

/// Models `pick_task_rt()`: the first task of the highest non-empty priority list.
pub fn pick_task_rt(k: &Kernel, cpu: CpuId) -> Option<TaskId> {
    k.cpus[cpu as usize].rq.rt.queue.first().map(|&(_, p)| p)
}

/// Models `put_prev_task_rt()`: a preempted, still-queued, migratable task becomes pushable.
pub fn put_prev_task_rt(k: &mut Kernel, cpu: CpuId, p: TaskId) {
    if k.cpus[cpu as usize].rq.rt.on_rt_rq(p) && migratable(k, p) {
        enqueue_pushable_task(k, cpu, p);
    }
}

/// Models `set_next_task_rt(rq, p, first=true)`: the running task is never pushable; queue
/// the push balance callback if something is (`rt_queue_push_tasks()`).
pub fn set_next_task_rt(k: &mut Kernel, cpu: CpuId, p: TaskId) {
    dequeue_pushable_task(k, cpu, p);
    if !k.cpus[cpu as usize].rq.rt.pushable.is_empty() {
        k.cpus[cpu as usize].rq.rt.push_callback = true;
    }
}

/// Models `__balance_callbacks()` for the RT push head: run `push_rt_tasks()` if queued.
/// Context: the rq lock held, at the end of `__schedule()` (`finish_lock_switch()` or the
/// `prev == next` unlock). Returns the cost.
pub fn balance_callbacks(k: &mut Kernel, cpu: CpuId) -> Time {
    if !std::mem::take(&mut k.cpus[cpu as usize].rq.rt.push_callback) {
        return 0;
    }
    push_rt_tasks(k, cpu, cpu)
}

// ------------------------------------------------------------------------------------------
// cpupri and find_lowest_rq
// ------------------------------------------------------------------------------------------

/// `convert_prio()` (cpupri.c): the cpupri level of a CPU whose highest RT priority is
/// `prio`. 0 is CPUPRI_NORMAL (no RT task: idle or fair), 1..=99 RT levels.
fn convert_prio(prio: i32) -> i32 {
    if prio >= MAX_RT_PRIO - 1 {
        0
    } else {
        MAX_RT_PRIO - 1 - prio
    }
}

/// Models `cpupri_find()` / `__cpupri_find()` — kernel/sched/cpupri.c @ v6.10: the CPUs at
/// the lowest cpupri level below `p`'s that `p` may run on (empty if none): levels from the
/// lowest up, each level's mask and'ed with `p`'s affinity. Costs nothing in simulated time
/// (docs/costs.md).
pub fn cpupri_find(k: &Kernel, p: TaskId) -> crate::hw::cpumask::CpuMask {
    use crate::hw::cpumask::CpuMask;
    let nr = k.m.topo.nr_cpus;
    let t = &k.tasks[p as usize];
    let task_pri = convert_prio(t.prio) as usize;
    let cp = &k.rd.rt.cpupri;
    for idx in 0..task_pri.min(CPUPRI_LEVELS) {
        if cp.count[idx] == 0 {
            continue;
        }
        let level = &cp.pri_to_cpu[idx];
        let mask = match (t.pinned, &t.cpus_mask) {
            (Some(c), _) => {
                if !level.test(c) {
                    continue;
                }
                CpuMask::of(c, nr)
            }
            (None, Some(m)) if t.mask_weight != 0 => level.and(m),
            _ => level.clone(),
        };
        if !mask.is_empty() {
            debug_assert_eq!(mask, cpupri_find_by_scan(k, p), "cpupri levels disagree with the runqueues");
            return mask;
        }
    }
    debug_assert!(cpupri_find_by_scan(k, p).is_empty(), "cpupri levels disagree with the runqueues");
    CpuMask::new(nr)
}

/// [`cpupri_find`] computed from every runqueue's `highest_prio.curr`, for the debug check.
fn cpupri_find_by_scan(k: &Kernel, p: TaskId) -> crate::hw::cpumask::CpuMask {
    let nr = k.m.topo.nr_cpus;
    let task_pri = convert_prio(k.tasks[p as usize].prio);
    let allowed = |c: CpuId| k.tasks[p as usize].cpu_allowed(c);
    let level = |c: CpuId| convert_prio(k.cpus[c as usize].rq.rt.highest_prio_curr());
    let best = (0..nr).filter(|&c| allowed(c)).map(level).filter(|&l| l < task_pri).min();
    let mut mask = crate::hw::cpumask::CpuMask::new(nr);
    for c in (0..nr).filter(|&c| allowed(c) && Some(level(c)) == best) {
        mask.set(c);
    }
    mask
}

/// Models `find_lowest_rq()` — kernel/sched/rt.c @ v6.10: among the lowest-priority CPUs,
/// prefer `p`'s own CPU, then this CPU if it shares an SD_WAKE_AFFINE domain with it, then
/// the next such CPU in that domain (`cpumask_any_and_distribute()`), innermost domain first.
pub fn find_lowest_rq(k: &mut Kernel, this_cpu: CpuId, p: TaskId) -> Option<CpuId> {
    if !migratable(k, p) {
        return None;
    }
    let lowest = cpupri_find(k, p);
    if lowest.is_empty() {
        return None;
    }
    let cpu = k.tasks[p as usize].cpu;
    if lowest.test(cpu) {
        return Some(cpu);
    }
    let this = lowest.test(this_cpu).then_some(this_cpu);
    let nd = k.sd.domains(cpu).len();
    for level in 0..nd {
        let d = &k.sd.domains(cpu)[level];
        if d.flags & SD_WAKE_AFFINE == 0 {
            continue;
        }
        if let Some(t) = this {
            if d.span.test(t) {
                return Some(t);
            }
        }
        let cand = lowest.and(&d.span);
        if let Some(best) = any_distribute(k, this_cpu, &cand) {
            return Some(best);
        }
    }
    if this.is_some() {
        return this;
    }
    any_distribute(k, this_cpu, &lowest)
}

/// `cpumask_any_and_distribute()` (lib/cpumask.c): the next set CPU after the one this CPU
/// returned last time, wrapping.
fn any_distribute(k: &mut Kernel, this_cpu: CpuId, mask: &crate::hw::cpumask::CpuMask) -> Option<CpuId> {
    let prev = k.cpus[this_cpu as usize].rq.rt.distribute_prev;
    let start = prev.map_or(0, |p| (p + 1) % k.m.topo.nr_cpus);
    let next = mask.iter_wrap(start).next();
    if next.is_some() {
        k.cpus[this_cpu as usize].rq.rt.distribute_prev = next;
    }
    next
}

// ------------------------------------------------------------------------------------------
// Wakeup: placement, preemption, task_woken
// ------------------------------------------------------------------------------------------

/// Models `select_task_rq_rt()` — kernel/sched/rt.c @ v6.10, for a wakeup or fork of an
/// unpinned RT task whose CPU is `cpu`: if that CPU runs an RT task that is pinned or does
/// not rank below `p`, look for a lower-priority CPU and move there only if `p` would outrank
/// everything queued on it. Reads the target's `curr` without its lock.
pub fn select_task_rq_rt(k: &mut Kernel, this_cpu: CpuId, p: TaskId, cpu: CpuId) -> CpuId {
    let curr = k.cpus[cpu as usize].rq.curr;
    let prio = k.tasks[p as usize].prio;
    let test = rt_task(k, curr) && (!migratable(k, curr) || k.tasks[curr as usize].prio <= prio);
    if test {
        if let Some(target) = find_lowest_rq(k, this_cpu, p) {
            if prio < k.cpus[target as usize].rq.rt.highest_prio_curr() {
                return target;
            }
        }
    }
    cpu
}

/// Models `wakeup_preempt_rt()` — kernel/sched/rt.c @ v6.10, for an RT wakee `p` against an
/// RT `curr`: preempt if `p` ranks higher; at equal priority, `check_preempt_equal_prio()`
/// requeues `p` at the head and reschedules when `curr` could move elsewhere and `p` cannot.
/// Returns true to resched.
pub fn wakeup_preempt_rt(k: &mut Kernel, cpu: CpuId, p: TaskId) -> bool {
    let curr = k.cpus[cpu as usize].rq.curr;
    let (pp, cp) = (k.tasks[p as usize].prio, k.tasks[curr as usize].prio);
    if pp < cp {
        return true;
    }
    if pp == cp && !super::need_resched(k, cpu) {
        // check_preempt_equal_prio()
        if !migratable(k, curr) || cpupri_find(k, curr).is_empty() {
            return false;
        }
        if migratable(k, p) && !cpupri_find(k, p).is_empty() {
            return false;
        }
        let rt = &mut k.cpus[cpu as usize].rq.rt;
        RtRq::remove(&mut rt.queue, p);
        RtRq::insert(&mut rt.queue, pp, p, true);
        return true;
    }
    false
}

/// The 2013 `ok_to_push_task(p, curr)` (Steven Rostedt's patch 1/3): `p` may be pushed away
/// from `curr`'s CPU because `p` can migrate, `curr` is RT, and `curr` is pinned or does not
/// rank below `p`. In v6.10 `task_woken_rt()` spells the same test inline (and also accepts a
/// deadline `curr`; the model has no deadline class).
pub fn ok_to_push_task(k: &Kernel, p: TaskId, curr: TaskId) -> bool {
    migratable(k, p)
        && rt_task(k, curr)
        && (!migratable(k, curr) || k.tasks[curr as usize].prio <= k.tasks[p as usize].prio)
}

/// Models `task_woken_rt()` — kernel/sched/rt.c @ v6.10, after `wakeup_preempt()` in
/// `ttwu_do_activate()`: if `p` is not running, `curr` is not about to reschedule and `p`
/// may be pushed away from `curr`, push. `cpu` performs it on `rq_cpu` (lock held).
pub fn task_woken_rt(k: &mut Kernel, cpu: CpuId, rq_cpu: CpuId, p: TaskId) -> Time {
    let curr = k.cpus[rq_cpu as usize].rq.curr;
    let need_to_push = !task_current(k, rq_cpu, p) && !super::need_resched(k, rq_cpu) && ok_to_push_task(k, p, curr);
    if need_to_push {
        push_rt_tasks(k, cpu, rq_cpu)
    } else {
        0
    }
}

// ------------------------------------------------------------------------------------------
// Push and pull
// ------------------------------------------------------------------------------------------

/// Models `push_rt_task(rq, pull)` — kernel/sched/rt.c @ v6.10, run by `cpu` on `rq_cpu` with
/// its lock held: take the best pushable task; if it outranks `curr`, v6.10 just reschedules
/// (it is about to preempt). With the 2013 `ok_to_push_task` switch, a task that
/// `ok_to_push_task()` allows is pushed even then, so a pinned `curr` keeps its CPU. Then find
/// a lower-priority CPU and move the task there. Returns (moved, cost).
pub fn push_rt_task(k: &mut Kernel, cpu: CpuId, rq_cpu: CpuId) -> (bool, Time) {
    let rq = &k.cpus[rq_cpu as usize].rq;
    if !rq.rt.overloaded {
        return (false, 0);
    }
    let Some(&(prio, next)) = rq.rt.pushable.first() else {
        return (false, 0);
    };
    let curr = rq.curr;
    let mut c = 0;
    if prio < k.tasks[curr as usize].prio {
        let push_anyway = k.cfg.has(Patch::Rostedt2013OkToPushTask) && ok_to_push_task(k, next, curr);
        if !push_anyway {
            c += resched_curr(k, cpu, rq_cpu, Sym::ReschedCurr);
            return (false, c);
        }
    }
    // find_lock_lowest_rq(): a CPU whose highest queued priority is below the task's.
    let Some(dst) = find_lowest_rq(k, cpu, next) else {
        return (false, c);
    };
    if dst == rq_cpu || k.cpus[dst as usize].rq.rt.highest_prio_curr() <= prio {
        return (false, c);
    }
    // double_lock_balance(): the other rq's lock line.
    c += k.line_write(cpu, k.cpus[dst as usize].rq.lock_line);
    k.cpus[dst as usize].rq.clock = k.now;
    c += move_queued_task_locked(k, cpu, rq_cpu, dst, next).1;
    c += k.costs.ttwu_activate + resched_curr(k, cpu, dst, Sym::ReschedCurr);
    k.stats.rt_pushes += 1;
    (true, c)
}

/// Models `push_rt_tasks()`: push while something moves.
pub fn push_rt_tasks(k: &mut Kernel, cpu: CpuId, rq_cpu: CpuId) -> Time {
    let mut c = 0;
    loop {
        let (moved, pc) = push_rt_task(k, cpu, rq_cpu);
        c += pc;
        if !moved {
            return c;
        }
    }
}

/// `need_pull_rt_task(rq, prev)`: this rq's best RT priority is now below `prev`'s.
pub fn need_pull_rt_task(k: &Kernel, cpu: CpuId, prev: TaskId) -> bool {
    k.cpus[cpu as usize].rq.rt.highest_prio_curr() > k.tasks[prev as usize].prio
}

/// Models `balance_rt()` — kernel/sched/rt.c @ v6.10, for an RT `prev` from
/// `put_prev_task_balance()`: if `prev` left the RT queue and this CPU's best RT priority is
/// now below its own, pull (`pull_rt_task()`). Returns the cost.
pub fn balance_rt(k: &mut Kernel, cpu: CpuId, prev: TaskId) -> Time {
    if !k.cpus[cpu as usize].rq.rt.on_rt_rq(prev) && need_pull_rt_task(k, cpu, prev) {
        return pull_rt_task(k, cpu);
    }
    0
}

/// Models `balance_rt()` -> `pull_rt_task()` — kernel/sched/rt.c @ v6.10, from `__schedule()`
/// before the pick when an RT `prev` leaves the RT queue and this CPU's priority drops. With
/// RT_PUSH_IPI (the default) it does not pull itself: it starts the irq_work chain that has
/// each overloaded CPU push (`tell_cpu_to_push()`). Without it, it pulls the best pushable
/// task of each overloaded CPU that would run here, skipping a task that outranks its own
/// CPU's `curr` (it is about to preempt there). Returns the cost.
pub fn pull_rt_task(k: &mut Kernel, cpu: CpuId) -> Time {
    let count = k.rd.rt.rto_count;
    if count == 0 || (count == 1 && k.rd.rt.rto_mask.test(cpu)) {
        return 0;
    }
    // RT_PUSH_IPI exists from b6366f048e0c (v4.1); before it the feature bit is moot.
    if k.cfg.feat(super::features::SchedFeat::RT_PUSH_IPI) && k.cfg.has(crate::linux::patches::Patch::B6366f048e0c) {
        return tell_cpu_to_push(k, cpu);
    }
    let mut c = 0;
    let mut resched = false;
    let srcs: Vec<CpuId> = k.rd.rt.rto_mask.iter().filter(|&s| s != cpu).collect();
    for src in srcs {
        if k.cpus[src as usize].rq.rt.highest_prio_next() >= k.cpus[cpu as usize].rq.rt.highest_prio_curr() {
            continue;
        }
        c += k.line_write(cpu, k.cpus[src as usize].rq.lock_line);
        // pick_highest_pushable_task(src, this_cpu)
        let p = k.cpus[src as usize]
            .rq
            .rt
            .pushable
            .iter()
            .map(|&(_, t)| t)
            .find(|&t| k.tasks[t as usize].cpu_allowed(cpu) && !k.tasks[t as usize].on_cpu);
        let Some(p) = p else { continue };
        let pp = k.tasks[p as usize].prio;
        if pp >= k.cpus[cpu as usize].rq.rt.highest_prio_curr() {
            continue;
        }
        let src_curr = k.cpus[src as usize].rq.curr;
        if pp < k.tasks[src_curr as usize].prio {
            continue;
        }
        c += move_queued_task_locked(k, cpu, src, cpu, p).1;
        c += k.costs.ttwu_activate;
        k.stats.rt_pulls += 1;
        resched = true;
    }
    if resched {
        c += resched_curr(k, cpu, cpu, Sym::ReschedCurr);
    }
    c
}

/// `RR_TIMESLICE` (include/linux/sched/rt.h): 100 ms, in jiffies of this HZ.
pub fn rr_timeslice_ticks(hz: u32) -> u32 {
    (100 * hz / 1000).max(1)
}

/// Models `requeue_task_rt(rq, p, head=0)`: move `p` to the tail of its priority list.
fn requeue_task_rt(k: &mut Kernel, cpu: CpuId, p: TaskId) {
    let prio = k.tasks[p as usize].prio;
    let rt = &mut k.cpus[cpu as usize].rq.rt;
    if RtRq::remove(&mut rt.queue, p) {
        RtRq::insert(&mut rt.queue, prio, p, false);
    }
}

/// Models `task_tick_rt()` — kernel/sched/rt.c @ v6.10, for the running RT task `p` of `cpu`:
/// a SCHED_RR task uses up one tick of its slice; when the slice is gone it gets a new one and,
/// if another task waits at its priority, goes to the tail of its list and reschedules.
/// SCHED_FIFO tasks have no slice. Returns true to resched.
pub fn task_tick_rt(k: &mut Kernel, cpu: CpuId, p: TaskId) -> bool {
    if k.tasks[p as usize].policy != super::SCHED_RR {
        return false;
    }
    let t = &mut k.tasks[p as usize];
    t.rr_time_slice = t.rr_time_slice.saturating_sub(1);
    if t.rr_time_slice > 0 {
        return false;
    }
    t.rr_time_slice = rr_timeslice_ticks(k.cfg.hz);
    let prio = k.tasks[p as usize].prio;
    let peers = k.cpus[cpu as usize].rq.rt.queue.iter().filter(|&&(q, _)| q == prio).count();
    if peers > 1 {
        requeue_task_rt(k, cpu, p);
        return true;
    }
    false
}

/// Models `yield_task_rt()` — kernel/sched/rt.c @ v6.10: the current task goes to the tail of
/// its priority list (the `schedule()` that follows picks the next one at that priority).
pub fn yield_task_rt(k: &mut Kernel, cpu: CpuId) {
    let curr = k.cpus[cpu as usize].rq.curr;
    requeue_task_rt(k, cpu, curr);
}

/// Models `rto_next_cpu()`: the next CPU of `rto_mask` after `rto_cpu`; at the end, loop
/// again if another CPU lowered its priority meanwhile (`rto_loop_next` moved).
fn rto_next_cpu(k: &mut Kernel) -> Option<CpuId> {
    loop {
        let start = k.rd.rt.rto_cpu.map_or(0, |c| c + 1);
        let next = k.rd.rt.rto_mask.iter().find(|&c| c >= start);
        k.rd.rt.rto_cpu = next;
        if next.is_some() {
            return next;
        }
        let n = k.rd.rt.rto_loop_next;
        if k.rd.rt.rto_loop == n {
            return None;
        }
        k.rd.rt.rto_loop = n;
    }
}

/// Models `tell_cpu_to_push()`: bump `rto_loop_next`; if no chain is running, start one at
/// the first overloaded CPU with `irq_work_queue_on()`. (`rto_loop_start` and `rto_lock` are
/// held only inside this step, so the trylock always succeeds in the model.)
fn tell_cpu_to_push(k: &mut Kernel, cpu: CpuId) -> Time {
    k.rd.rt.rto_loop_next = k.rd.rt.rto_loop_next.wrapping_add(1);
    if k.rd.rt.rto_cpu.is_some() {
        return 0;
    }
    match rto_next_cpu(k) {
        Some(target) => irq_work_queue_on(k, cpu, target),
        None => 0,
    }
}

/// Models `irq_work_queue_on()` — kernel/irq_work.c @ v6.10 for the root domain's
/// `rto_push_work`: claim it (a pending work is not queued twice) and queue it on the
/// target's call-single queue as a CSD_TYPE_IRQ_WORK entry. The local case (`arch_irq_work_raise`,
/// a self-IPI) is modelled through the same queue.
fn irq_work_queue_on(k: &mut Kernel, cpu: CpuId, target: CpuId) -> Time {
    use crate::linux::csd_flags::CSD_FLAG_LOCK;
    let w = k.rd.rt.rto_push_work;
    if k.csds[w as usize].flags & CSD_FLAG_LOCK != 0 {
        return 0;
    }
    k.csds[w as usize].flags |= CSD_FLAG_LOCK;
    crate::linux::check::on_csd_lock(k, w);
    k.stats.rt_push_ipis += 1;
    crate::linux::kernel::smp::__smp_call_single_queue(k, cpu, target, w, Sym::IrqWorkQueueOn)
}

/// Models `rto_push_irq_work_func()` — kernel/sched/rt.c @ v6.10, in hardirq on an overloaded
/// CPU: push what can be pushed (`push_rt_task(rq, true)` under the rq lock), then pass the
/// work to the next overloaded CPU. Returns the cost.
pub fn rto_push_irq_work_func(k: &mut Kernel, cpu: CpuId) -> Time {
    let mut c = 0;
    if !k.cpus[cpu as usize].rq.rt.pushable.is_empty() {
        c += k.line_write(cpu, k.cpus[cpu as usize].rq.lock_line);
        k.cpus[cpu as usize].rq.clock = k.now;
        c += push_rt_tasks(k, cpu, cpu);
    }
    match rto_next_cpu(k) {
        Some(next) => c + irq_work_queue_on(k, cpu, next),
        None => c,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn priority_lists_are_fifo_within_a_priority_and_head_enqueue_goes_first() {
        let mut q = Vec::new();
        RtRq::insert(&mut q, 49, 1, false);
        RtRq::insert(&mut q, 39, 2, false);
        RtRq::insert(&mut q, 49, 3, false);
        RtRq::insert(&mut q, 49, 4, true);
        assert_eq!(q, vec![(39, 2), (49, 4), (49, 1), (49, 3)]);
        assert!(RtRq::remove(&mut q, 1));
        assert!(!RtRq::remove(&mut q, 1));
        let rt = RtRq { queue: q, ..Default::default() };
        assert_eq!(rt.highest_prio_curr(), 39);
        assert_eq!(RtRq::default().highest_prio_curr(), MAX_RT_PRIO - 1);
    }

    #[test]
    fn cpupri_levels() {
        // No RT task (idle or fair) is CPUPRI_NORMAL; FIFO 1..99 map to levels 1..99.
        assert_eq!(convert_prio(MAX_RT_PRIO - 1), 0);
        assert_eq!(convert_prio(fifo_prio(1)), 1);
        assert_eq!(convert_prio(fifo_prio(99)), 99);
        assert_eq!(fifo_prio(50), 49);
    }

    /// `cpupri_set()` moves a CPU between level masks; the counts follow, so a level with no
    /// CPU is skipped without looking at its mask.
    #[test]
    fn cpupri_set_moves_a_cpu_between_levels() {
        let mut cp = Cpupri::new(8);
        assert_eq!(cp.count[0], 8);
        cp.set(3, 50);
        cp.set(5, 50);
        cp.set(5, 20);
        cp.set(6, 0);
        assert_eq!((cp.count[0], cp.count[20], cp.count[50]), (6, 1, 1));
        assert!(cp.pri_to_cpu[50].test(3) && !cp.pri_to_cpu[0].test(3));
        assert_eq!(cp.pri_to_cpu[20].iter().collect::<Vec<_>>(), vec![5]);
        cp.set(3, 0);
        assert_eq!((cp.count[0], cp.count[50]), (7, 0));
        assert!(cp.pri_to_cpu[50].is_empty());
    }

    #[test]
    fn rr_timeslice_is_100_ms_in_ticks() {
        assert_eq!(rr_timeslice_ticks(250), 25);
        assert_eq!(rr_timeslice_ticks(1000), 100);
        assert_eq!(rr_timeslice_ticks(100), 10);
    }
}
