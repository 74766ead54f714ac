//! The cache lines of a runqueue that other CPUs read, as `struct rq`, `struct cfs_rq` and
//! `struct sched_avg` lay them out in v6.10 (kernel/sched/sched.h, include/linux/sched.h),
//! x86-64, a distribution configuration (SMP, NUMA_BALANCING, NO_HZ_COMMON, FAIR_GROUP_SCHED,
//! no lock debugging). docs/costs.md ("The runqueue lines `update_sg_lb_stats()` reads") gives
//! the offsets field by field; in short, with `rq` 64-byte aligned:
//!
//! | line | what the readers use | written by | when |
//! |---|---|---|---|
//! | `lock` (rq + 0) | `__lock`, `nr_running`, `nr_numa_running`, `nr_preferred_running` | the rq lock's holder | every lock acquire; `nr_running` changes only under it |
//! | `pending` (rq + 64) | `nohz_csd`, `nohz_tick_stopped`, `nohz_flags`, `ttwu_pending`, `nr_switches` | the owner; a remote waker or kicker | each context switch (`nr_switches`), a wakelist wakeup (`ttwu_pending` set remotely, cleared by the owner), an idle-balance kick (`nohz_flags`, `nohz_csd`), tick stop and restart |
//! | `cfs` (`rq->cfs` + 0) | `cfs.load`, `nr_running`, `h_nr_running`, `idle_h_nr_running`, `avg_vruntime`, `avg_load`, `min_vruntime` | the rq lock's holder | each fair enqueue and dequeue; `update_curr()` (`min_vruntime`) under a fair curr: tick, put_prev, set_next |
//! | `pelt` (`rq->cfs.avg`, its own line: `struct sched_avg` is `____cacheline_aligned`) | `load_avg`, `runnable_avg`, `util_avg`, `util_est` | the rq lock's holder; a balancer on behalf of an idle CPU | each `update_load_avg()`: enqueue, dequeue, tick, put_prev/set_next of a queued entity; the blocked-load update |
//! | `curr` (`rq->curr`, `rq->idle`, after the class runqueues) | `curr`, `idle` | the owner | each context switch |
//!
//! `update_sg_lb_stats()` reads, for every CPU of the group: `cpu_load()`, `cpu_util_cfs()`,
//! `cpu_runnable()` (the `pelt` line), `rq->cfs.h_nr_running` (`cfs`), `rq->nr_running` and, on
//! NUMA levels, the NUMA counters (`lock`); and only for a CPU with `nr_running == 0`,
//! `idle_cpu()`: `rq->curr != rq->idle` (`curr`) and, if its idle task runs, `ttwu_pending`
//! (`pending`). `idle_cpu()` alone (`available_idle_cpu()` in the wakeup path) reads `curr`,
//! then `nr_running` (`lock`) if the idle task runs, then `ttwu_pending` (`pending`) if no task
//! is queued. Not modelled: `cpu_capacity` (its own line, read by `sched_reduced_capacity()`
//! only for one-task CPUs while idle balancing, written only by its owner once per balance
//! interval) and `misfit_task_load` (only with SD_ASYM_CPUCAPACITY, which these machines do not
//! have).
//!
//! The `lock`, `cfs`, `pelt` and `curr` lines of a CPU are allocated as one block of four
//! ([`BLOCK`]) modelled lines, so a balancing walk reads each CPU's lines from one place on the
//! host; the `pending` lines are a run of their own.

use crate::hw::cacheline::{LineId, Lines, PerCpuLines};
use crate::linux::{CpuId, Kernel};
use crate::sim::Time;

/// Modelled lines per CPU in a runqueue block: `lock`, `cfs`, `pelt`, `curr`.
pub const BLOCK: u32 = 4;
/// Each line's place in the block.
pub const LOCK: u32 = 0;
pub const CFS: u32 = 1;
pub const PELT: u32 = 2;
pub const CURR: u32 = 3;

/// Allocates every CPU's runqueue lines, homed on that CPU: the blocks first, in CPU order,
/// then the `pending` lines. Returns (each CPU's `lock` line, each CPU's `pending` line).
pub fn alloc(lines: &mut Lines, nr_cpus: u32) -> (Vec<LineId>, Vec<LineId>) {
    let lock: Vec<LineId> = (0..nr_cpus)
        .map(|c| {
            let first = lines.alloc(c);
            for _ in 1..BLOCK {
                lines.alloc(c);
            }
            first
        })
        .collect();
    let pending = (0..nr_cpus).map(|c| lines.alloc(c)).collect();
    (lock, pending)
}

/// The `cfs` and `pelt` lines of `rq_cpu`, written by `cpu`: a fair enqueue or dequeue, or
/// `put_prev`/`set_next` of a queued entity, or the tick's `entity_tick()` (each runs
/// `update_curr()` and `update_load_avg()`). Returns the cost of the writes.
#[inline]
pub fn cfs_written(k: &mut Kernel, cpu: CpuId, rq_cpu: CpuId) -> Time {
    let lock = k.cpus[rq_cpu as usize].rq.lock_line;
    k.line_write(cpu, lock + CFS) + k.line_write(cpu, lock + PELT)
}

/// The `pelt` line of `rq_cpu`, written by `cpu`: `update_cfs_rq_load_avg()` of the
/// blocked-load update. Returns the cost.
#[inline]
pub fn pelt_written(k: &mut Kernel, cpu: CpuId, rq_cpu: CpuId) -> Time {
    let lock = k.cpus[rq_cpu as usize].rq.lock_line;
    k.line_write(cpu, lock + PELT)
}

/// A context switch on `cpu`: `rq->curr = next` and `++rq->nr_switches`. Returns the cost.
#[inline]
pub fn switched(k: &mut Kernel, cpu: CpuId) -> Time {
    let rq = &k.cpus[cpu as usize].rq;
    let (curr, pending) = (rq.lock_line + CURR, rq.pending_line);
    k.line_write(cpu, curr) + k.line_write(cpu, pending)
}

/// The `pending` line of `rq_cpu` written by `cpu` (`ttwu_pending`, `nohz_flags`,
/// `nohz_tick_stopped`). Returns the cost.
#[inline]
pub fn pending_written(k: &mut Kernel, cpu: CpuId, rq_cpu: CpuId) -> Time {
    let line = k.cpus[rq_cpu as usize].rq.pending_line;
    k.line_write(cpu, line)
}

/// The reads of `idle_cpu(other)` by `cpu` (`available_idle_cpu()` in the wakeup path): the
/// `curr` line; the `lock` line if `other` runs its idle task; the `pending` line if, besides,
/// no task is queued. Returns the cost. Reads only the group sums' masks and the lines, not
/// `other`'s runqueue (a cold host line on a large machine).
#[inline]
pub fn idle_cpu_reads(k: &mut Kernel, cpu: CpuId, other: CpuId) -> Time {
    let s = &k.sd.sums;
    let lock = s.rq_line0 + BLOCK * other;
    let pending = s.pending_line0 + other;
    let (curr_idle, empty) = (s.curr_idle_mask().test(other), s.empty_mask().test(other));
    debug_assert_eq!(lock, k.cpus[other as usize].rq.lock_line);
    let mut c = k.line_read(cpu, lock + CURR);
    if curr_idle {
        c += k.line_read(cpu, lock + LOCK);
        if empty {
            c += k.line_read(cpu, pending);
        }
    }
    c
}

/// The reads `update_sg_lb_stats()` makes, run by `cpu`, over every CPU of a span but `cpu`
/// given by its stored words (`words[j]` holds CPUs `64 * (lo + j)` onwards): each CPU's
/// `lock`, `cfs` and `pelt` lines, then the `curr` line of each CPU with no runnable task
/// and the `pending` line of each of those running its idle task (`idle_cpu()`). Returns the
/// reads that missed, counted by distance (indexed by `Distance as usize`): the walk charges
/// them by distance, so their order does not matter.
pub fn update_sg_lb_stats_reads(
    lines: &mut Lines,
    sums: &super::group_sums::GroupSums,
    topo: &crate::hw::topology::Topology,
    cpu: CpuId,
    lo: u32,
    words: &[u64],
) -> [u64; 5] {
    let (empty, curr_idle) = (sums.empty_mask(), sums.curr_idle_mask());
    let block = |j: u32, width: u32| PerCpuLines { first: sums.rq_line0 + j, stride: BLOCK, width };
    // cpu_load(), cpu_util_cfs(), cpu_runnable(), cfs.h_nr_running, nr_running.
    let misses = lines.count_blocks::<3>(block(LOCK, 3), lo, words, |_| !0, cpu, topo);
    // `if (!nr_running && idle_cpu(i))`: rq->curr, then (its idle task running) ttwu_pending.
    let curr = lines.count_blocks::<1>(block(CURR, 1), lo, words, |i| empty.word(i as u32), cpu, topo);
    let pending = PerCpuLines { first: sums.pending_line0, stride: 1, width: 1 };
    let both = |i: usize| empty.word(i as u32) & curr_idle.word(i as u32);
    let pending = lines.count_blocks::<1>(pending, lo, words, both, cpu, topo);
    // At most five lines of each CPU: no field of the sum overflows.
    const { assert!((BLOCK as u64 + 1) * crate::limits::MAX_CPUS as u64 <= 65535) };
    misses.plus(curr).plus(pending).by_distance()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::linux::kernel::sched::group_sums::rq_changed;

    /// A quiet 4-CPU machine, every CPU in its idle task.
    fn kernel() -> Kernel {
        Kernel::for_test("smp-4")
    }

    /// The distances of the misses of CPU 0's `update_sg_lb_stats()` reads over every CPU,
    /// nearest first.
    fn lb_misses(k: &mut Kernel) -> Vec<crate::hw::topology::Distance> {
        use crate::hw::topology::Distance::*;
        let span = crate::hw::cpumask::CpuMask::full(k.m.topo.nr_cpus);
        let (lo, ws) = span.stored_words();
        let Kernel { sd, lines, m, .. } = k;
        let counts = update_sg_lb_stats_reads(lines, &sd.sums, &m.topo, 0, lo, ws);
        [Local, Smt, Llc, Socket, Remote]
            .into_iter()
            .zip(counts)
            .flat_map(|(d, n)| std::iter::repeat_n(d, n as usize))
            .collect()
    }

    /// An idle CPU costs the balancer five lines (nr_running, the fair counts, PELT, curr,
    /// ttwu_pending), a CPU with a runnable task three; a line costs a transfer again only
    /// after its owner writes it.
    #[test]
    fn the_balancer_reads_each_line_v6_10_puts_the_fields_in() {
        let mut k = kernel();
        assert_eq!(lb_misses(&mut k).len(), 3 * 5, "three other CPUs, idle: five lines each");
        assert!(lb_misses(&mut k).is_empty(), "nothing written since");
        // CPU 2's blocked-load update writes its PELT line: one transfer, from CPU 2.
        pelt_written(&mut k, 2, 2);
        assert_eq!(lb_misses(&mut k), [k.m.topo.distance(2, 0)]);
        // CPU 3 has a runnable task: its curr and pending lines are no longer read, so its
        // context switch costs the next balance nothing, while its enqueue does.
        k.cpus[3].rq.nr_running = 1;
        rq_changed(&mut k, 3);
        switched(&mut k, 3);
        assert!(lb_misses(&mut k).is_empty());
        cfs_written(&mut k, 3, 3);
        assert_eq!(lb_misses(&mut k).len(), 2, "the fair counts and PELT lines");
        // A remote wakelist wakeup of CPU 1 writes its pending line: read again (CPU 1 is idle).
        pending_written(&mut k, 3, 1);
        assert_eq!(lb_misses(&mut k), [k.m.topo.distance(3, 0)]);
    }

    /// `idle_cpu()` reads curr, then nr_running if the idle task runs, then ttwu_pending if no
    /// task is queued.
    #[test]
    fn idle_cpu_reads_stop_where_idle_cpu_returns() {
        let mut k = kernel();
        let d = k.m.line_cost(1, 0).lo_ns;
        assert!(d > 0);
        let c = idle_cpu_reads(&mut k, 0, 1);
        assert!(c >= 3 * d, "curr, lock and pending lines: {c}");
        assert_eq!(idle_cpu_reads(&mut k, 0, 1), 0);
        // Another task is current on CPU 1: only its curr line is read.
        let other = k.cpus[2].rq.idle;
        k.cpus[1].rq.curr = other;
        rq_changed(&mut k, 1);
        switched(&mut k, 1);
        pending_written(&mut k, 1, 1);
        let c = idle_cpu_reads(&mut k, 0, 1);
        assert!((d..2 * d).contains(&c), "the curr line only: {c}");
    }

    /// The writers pay for the readers: once the balancer has read an idle CPU's lines, that
    /// CPU's next context switch invalidates two of them.
    #[test]
    fn a_switch_after_a_balance_pays_for_its_lines() {
        let mut k = kernel();
        assert_eq!(switched(&mut k, 1), 0, "lines held alone cost nothing to write");
        lb_misses(&mut k);
        assert!(switched(&mut k, 1) >= 2 * k.m.line_cost(0, 1).lo_ns);
    }
}
