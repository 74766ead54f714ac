//! Models `kernel/sched/sched.h` @ v6.10: the runqueue, the root domain, the nohz state, and
//! the flag vocabulary shared by the scheduler files; plus the parts of `task_struct` and
//! `thread_info` the model needs.

pub mod class;
pub mod core;
pub mod fair;
pub mod fair_class;
pub mod features;
pub mod group_sums;
pub mod idle;
pub mod rq_lines;
pub mod rt;
pub mod stats;
pub mod stop_task;
pub mod syscalls;
pub mod topology;

use crate::hw::cacheline::LineId;
use crate::linux::engine::Frame;
use crate::linux::{CpuId, CsdId, Kernel, TaskId};
use crate::sim::Time;

// Thread flags (arch/x86/include/asm/thread_info.h bit numbers).
/// TIF_NEED_RESCHED: rescheduling necessary.
pub const TIF_NEED_RESCHED: u32 = 1 << 3;
/// TIF_POLLING_NRFLAG: the idle task is polling TIF_NEED_RESCHED (no IPI needed to wake it).
pub const TIF_POLLING_NRFLAG: u32 = 1 << 21;
/// TIF_NOTIFY_IPI (the 2024 RFC): an IPI is pending for a polling idle CPU.
pub const TIF_NOTIFY_IPI: u32 = 1 << 22;

// Task states (include/linux/sched.h).
pub const TASK_RUNNING: u32 = 0x0000;
pub const TASK_INTERRUPTIBLE: u32 = 0x0001;
pub const TASK_UNINTERRUPTIBLE: u32 = 0x0002;
pub const TASK_DEAD: u32 = 0x0080;
pub const TASK_WAKING: u32 = 0x0200;
pub const TASK_NOLOAD: u32 = 0x0400;
/// TASK_IDLE: how idle kthreads wait (reported as 'I').
pub const TASK_IDLE: u32 = TASK_UNINTERRUPTIBLE | TASK_NOLOAD;

/// The csd type of a task's `wake_entry`.
pub const CSD_TTWU_TYPE: u32 = crate::linux::csd_flags::CSD_TYPE_TTWU;

// rq->nohz_flags (kernel/sched/sched.h).
pub const NOHZ_BALANCE_KICK: u32 = 1 << 0;
pub const NOHZ_STATS_KICK: u32 = 1 << 1;
pub const NOHZ_NEWILB_KICK: u32 = 1 << 2;
pub const NOHZ_NEXT_KICK: u32 = 1 << 3;
pub const NOHZ_KICK_MASK: u32 = NOHZ_BALANCE_KICK | NOHZ_STATS_KICK | NOHZ_NEXT_KICK;

// Wake flags (kernel/sched/sched.h; WF_ON_CPU as in v5.19, removed by f3dd3f674555's series).
/// A new task's placement (`wake_up_new_task()`).
pub const WF_FORK: u32 = 0x04;
pub const WF_TTWU: u32 = 0x08;
/// A synchronous wakeup: the waker is about to sleep.
pub const WF_SYNC: u32 = 0x10;
pub const WF_MIGRATED: u32 = 0x20;
/// The wakee is still on its CPU (descheduling).
pub const WF_ON_CPU: u32 = 0x40;

/// Models `set_rd_overloaded()` — kernel/sched/sched.h @ v6.10: write `rd->overloaded` only
/// when it changes. Also keeps the simulator's count of how long the flag was set.
pub fn set_rd_overloaded(k: &mut Kernel, v: bool) {
    if k.rd.overloaded == v {
        return;
    }
    k.rd.overloaded = v;
    if v {
        k.stats.overloaded_since = Some(k.now);
    } else if let Some(t) = k.stats.overloaded_since.take() {
        k.stats.overloaded_ns += k.now - t;
    }
}

/// `sysctl_sched_migration_cost`, ns.
pub const SYSCTL_SCHED_MIGRATION_COST: u64 = 500_000;

/// What kind of task this is (what its kernel or user code is).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TaskKind {
    /// The per-CPU idle task (`swapper/N`, pid 0).
    Idle,
    /// A per-CPU `ksoftirqd/N` thread.
    Ksoftirqd,
    /// A per-CPU stopper thread `migration/N` (stop class).
    Stopper,
    /// A workload task.
    Workload,
    /// A workqueue worker (`kworker/N:1` bound to a CPU, or the unbound `kworker/uN:1`).
    Kworker,
    /// A background kernel thread (`rcu_preempt`, ...).
    Kthread,
    /// A background user daemon.
    Daemon,
}

impl TaskKind {
    /// A fair-class task that runs code of its own (not idle, ksoftirqd or a stopper): what
    /// the load balancer may move and the tick accounts as the fair `curr`.
    pub fn is_fair_task(self) -> bool {
        matches!(self, TaskKind::Workload | TaskKind::Kworker | TaskKind::Kthread | TaskKind::Daemon)
    }
}

/// The parts of `task_struct` and `thread_info` the model reads and writes.
///
/// Laid out by hand (`repr(C)`, aligned to the host's 64-byte cache lines): the fields nearly
/// every switch, wakeup and syscall return touch fill the first line, those of wakeups and
/// balancing follow, the rest come last. A performance layout only (`run hackbench 32` on 256
/// CPUs: 2.5% fewer simulated L1 misses than the compiler's order).
#[derive(Debug, Clone)]
#[repr(C, align(64))]
pub struct Task {
    /// `__state`.
    pub state: u32,
    /// `task_cpu(p)`.
    pub cpu: CpuId,
    /// `thread_info.flags` and the line it lives on.
    pub ti_flags: u32,
    pub ti_line: LineId,
    /// `wake_entry`, the task's TTWU csd.
    pub wake_entry: CsdId,
    pub prio: i32,
    /// `policy` (SCHED_NORMAL 0, SCHED_FIFO 1, SCHED_RR 2).
    pub policy: u32,
    /// `on_rq` (queued, including the running task).
    pub on_rq: bool,
    /// `on_cpu`: running or still being switched out.
    pub on_cpu: bool,
    /// `sched_remote_wakeup`.
    pub sched_remote_wakeup: bool,
    pub kind: TaskKind,
    /// The CPU this task is bound to (`kthread_bind`), if any.
    pub pinned: Option<CpuId>,
    /// The return value of the task's last syscall, as its user code sees it in `pt_regs->ax`
    /// (written by `kernel::entry::common::syscall_exit_to_user_mode` for a workload task; the CPU's
    /// return register is clobbered if the task schedules on its way back to user mode).
    pub user_ret: i64,
    /// Accumulated run time and the start of the current run.
    pub sum_exec_runtime: Time,
    pub exec_start: Time,
    /// The task's kernel stack while it is not running.
    pub saved: Vec<Frame>,
    /// The interrupt-context phase of `saved` (`Exec::irq_phase` when it was switched out), so
    /// a context switch does not walk the incoming stack to find it. Fresh stacks have none.
    pub saved_irq_phase: Option<crate::linux::engine::Phase>,
    /// When the current wakeup began (`sched_waking`), until the task runs.
    pub woken_at: Option<Time>,
    /// Simulator observation, not kernel state: how long the last wakeup waited to run
    /// (`sched_waking` to `sched_switch`); see `wake_placement`.
    pub wake_to_run_ns: Time,
    /// `wakee_flips`, `last_wakee` and (below) `wakee_flip_decay_ts` (jiffies), of
    /// record_wakee/wake_wide.
    pub wakee_flips: u32,
    /// The SCHED_RR `rt.time_slice` left, in ticks.
    pub rr_time_slice: u32,
    pub last_wakee: Option<TaskId>,
    /// `recent_used_cpu`.
    pub recent_used_cpu: Option<CpuId>,
    pub wakee_flip_decay_ts: u64,
    /// Simulator observation, not kernel state: what the last wakeup's target CPU held when
    /// the task was placed there. Workloads read it and `wake_to_run_ns` to say why a latency
    /// sample was large.
    pub wake_placement: WakePlacement,
    /// `nr_cpus_allowed` of `cpus_mask` when it is set, 0 exactly when it is not. Tested
    /// before `cpus_mask` (which lies on a host cache line of its own) so that a task allowed
    /// every CPU is answered from the lines its wakeup reads anyway.
    pub mask_weight: u32,
    pub pid: u32,
    pub comm: String,
    /// `cpus_mask` set by `sched_setaffinity()`, when it is not every CPU (None: all CPUs, or
    /// the one `pinned` CPU). Read through [`Task::cpu_allowed`] and [`Task::migratable`].
    pub cpus_mask: Option<crate::hw::cpumask::CpuMask>,
    /// `p->mm`: the address space of a user task ([`NO_MM`] for a kernel thread, which
    /// borrows the previous task's, lazy TLB). Threads of one process share it (`CLONE_VM`,
    /// `kernel::fork::copy_process_clone_vm`); `switch_mm_irqs_off()` runs when it changes.
    pub mm: MmId,
}

/// An address space (`struct mm_struct`), by id: a process's is one plus its first task's
/// id (`kernel::fork::copy_process`), so ids are unique without a counter.
pub type MmId = u32;
/// `p->mm == NULL`: a kernel thread.
pub const NO_MM: MmId = 0;

impl Task {
    /// `cpumask_test_cpu(cpu, p->cpus_ptr)`: `cpu` is in the task's affinity (its bound CPU,
    /// its `sched_setaffinity()` mask, or any CPU).
    #[inline]
    pub fn cpu_allowed(&self, cpu: CpuId) -> bool {
        match self.pinned {
            Some(c) => c == cpu,
            None => self.mask_weight == 0 || self.cpus_mask.as_ref().is_none_or(|m| m.test(cpu)),
        }
    }

    /// `p->nr_cpus_allowed > 1`: the task may run on more than one CPU.
    #[inline]
    pub fn migratable(&self) -> bool {
        // `mask_weight` is 0 without a mask (every CPU) and the mask's weight with one.
        self.pinned.is_none() && self.mask_weight != 1
    }

    /// The one CPU a task with `nr_cpus_allowed == 1` may run on.
    pub fn single_cpu(&self) -> Option<CpuId> {
        match self.pinned {
            Some(c) => Some(c),
            None if self.mask_weight == 1 => self.cpus_mask.as_ref().and_then(|m| m.first()),
            None => None,
        }
    }
}

// Scheduling policies (include/uapi/linux/sched.h).
pub const SCHED_NORMAL: u32 = 0;
pub const SCHED_FIFO: u32 = 1;
pub const SCHED_RR: u32 = 2;

/// What a wakeup's target CPU held at the instant `try_to_wake_up()` chose it (see
/// `core::note_placement`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum WakePlacement {
    /// Not placed by `try_to_wake_up()` (not woken yet, or woken while still queued).
    #[default]
    None,
    /// An idle CPU that no other wakee had been sent to.
    Idle,
    /// An idle CPU already chosen for another wakee that had not run yet, while another CPU of
    /// the LLC was idle: the stacking of d6962c4fe8f9.
    IdleStacked,
    /// As `IdleStacked`, but no other CPU of the LLC was idle (overflow).
    IdleStackedNoneLeft,
    /// A CPU running a task (the waker's own CPU included).
    Busy,
}

impl Task {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        pid: u32,
        comm: String,
        prio: i32,
        kind: TaskKind,
        cpu: CpuId,
        pinned: Option<CpuId>,
        ti_line: LineId,
        wake_entry: CsdId,
    ) -> Task {
        Task {
            pid,
            comm,
            prio,
            kind,
            state: TASK_RUNNING,
            on_rq: false,
            on_cpu: false,
            cpu,
            pinned,
            cpus_mask: None,
            mask_weight: 0,
            policy: SCHED_NORMAL,
            rr_time_slice: 0,
            ti_flags: 0,
            ti_line,
            wake_entry,
            sched_remote_wakeup: false,
            wakee_flips: 0,
            wakee_flip_decay_ts: 0,
            last_wakee: None,
            recent_used_cpu: None,
            woken_at: None,
            wake_placement: WakePlacement::None,
            wake_to_run_ns: 0,
            saved: Vec::new(),
            saved_irq_phase: None,
            sum_exec_runtime: 0,
            exec_start: 0,
            user_ret: 0,
            mm: NO_MM,
        }
    }
}

/// `struct rq` (the fields the modelled paths use).
#[derive(Debug)]
pub struct Rq {
    pub cpu: CpuId,
    pub curr: TaskId,
    pub idle: TaskId,
    /// This CPU's ksoftirqd and stopper.
    pub ksoftirqd: TaskId,
    pub stopper: TaskId,
    /// The stopper is runnable (the stop class has a task), and its queued work.
    pub stop_runnable: bool,
    pub stop_work: Option<crate::linux::kernel::stop_machine::StopWork>,
    /// `active_balance`: an active balance of this CPU is in flight.
    pub active_balance: bool,
    /// 2013 `rq->post_schedule`: run the idle class's post-schedule hook after this switch.
    pub post_schedule: bool,
    /// `nr_running`: all runnable tasks, including curr.
    pub nr_running: u32,
    /// `cfs.h_nr_running`.
    pub cfs_h_nr_running: u32,
    /// `cfs`: the fair class's runqueue (EEVDF or CFS), over the entity table
    /// [`Kernel::ents`](crate::linux::Kernel).
    pub cfs: fair_class::CfsRq,
    /// `rt`: the RT class's runqueue.
    pub rt: rt::RtRq,
    /// `ttwu_pending`.
    pub ttwu_pending: bool,
    /// `__lock`: the CPU holding it, waiters in arrival order, and its line.
    pub lock_owner: Option<CpuId>,
    pub lock_waiters: Vec<CpuId>,
    /// The first line of this runqueue's block (`rq_lines.rs`): `lock`, then `cfs`, `pelt`
    /// and `curr`.
    pub lock_line: LineId,
    /// The `pending` line (`nohz_csd`, `nohz_flags`, `ttwu_pending`, `nr_switches`).
    pub pending_line: LineId,
    /// `clock` (updated by `update_rq_clock`).
    pub clock: Time,
    /// `idle_stamp`, `avg_idle`, `max_idle_balance_cost` (ns).
    pub idle_stamp: Time,
    pub avg_idle: u64,
    pub max_idle_balance_cost: u64,
    /// `next_balance` (jiffies).
    pub next_balance: u64,
    /// `idle_balance`: snapshot of idle_cpu() at the last tick or nohz kick.
    pub idle_balance: bool,
    /// `nohz_idle_balance` flags for the next SCHED_SOFTIRQ.
    pub nohz_idle_balance: u32,
    /// `nohz_flags` (atomic).
    pub nohz_flags: u32,
    /// `nohz_tick_stopped`.
    pub nohz_tick_stopped: bool,
    /// `nr_switches`.
    pub nr_switches: u64,
    /// Wakees placed on this CPU since it last switched to a task (stacking detection).
    pub wakees_placed: u32,
}

impl Rq {
    pub fn new(cpu: CpuId, idle: TaskId, lock_line: LineId, pending_line: LineId, cfs: fair_class::CfsRq) -> Rq {
        Rq {
            cpu,
            curr: idle,
            idle,
            ksoftirqd: idle,
            stopper: idle,
            stop_runnable: false,
            stop_work: None,
            active_balance: false,
            post_schedule: false,
            nr_running: 0,
            cfs_h_nr_running: 0,
            cfs,
            rt: rt::RtRq::default(),
            ttwu_pending: false,
            lock_owner: None,
            lock_waiters: Vec::new(),
            lock_line,
            pending_line,
            clock: 0,
            idle_stamp: 0,
            // sched_init(): avg_idle = 2 * migration cost; max_idle_balance_cost = migration cost.
            avg_idle: 2 * SYSCTL_SCHED_MIGRATION_COST,
            max_idle_balance_cost: SYSCTL_SCHED_MIGRATION_COST,
            next_balance: 0,
            idle_balance: true,
            nohz_idle_balance: 0,
            nohz_flags: 0,
            nohz_tick_stopped: false,
            nr_switches: 0,
            wakees_placed: 0,
        }
    }
}

/// `struct root_domain` (the fields the model uses).
#[derive(Debug, Default)]
pub struct RootDomain {
    /// `overloaded`: some rq has had two or more runnable tasks (set eagerly, cleared only by
    /// a root-level `update_sd_lb_stats`).
    pub overloaded: bool,
    pub overutilized: bool,
    /// The RT overload mask and push iterator.
    pub rt: rt::RtRootDomain,
}

/// The global `nohz` structure (kernel/sched/fair.c).
#[derive(Debug)]
pub struct Nohz {
    pub idle_cpus_mask: crate::hw::cpumask::CpuMask,
    pub nr_cpus: u32,
    pub has_blocked: bool,
    pub needs_update: bool,
    pub next_balance: u64,
    pub next_blocked: u64,
}

impl Nohz {
    pub fn new(nr: u32) -> Nohz {
        Nohz {
            idle_cpus_mask: crate::hw::cpumask::CpuMask::new(nr),
            nr_cpus: 0,
            has_blocked: false,
            needs_update: false,
            next_balance: 0,
            next_blocked: 0,
        }
    }
}

/// Models `idle_cpu()` — kernel/sched/core.c @ v6.10. Lock-free and racy by design: it reads
/// curr, nr_running and ttwu_pending at this instant.
pub fn idle_cpu(k: &Kernel, cpu: CpuId) -> bool {
    let rq = &k.cpus[cpu as usize].rq;
    rq.curr == rq.idle && rq.nr_running == 0 && !rq.ttwu_pending
}

/// Models `available_idle_cpu()` — kernel/sched/core.c @ v6.10: `idle_cpu()` and the vCPU is
/// not preempted by its host (never, in the model).
pub fn available_idle_cpu(k: &Kernel, cpu: CpuId) -> bool {
    idle_cpu(k, cpu)
}

/// Models `tif_need_resched()` / `need_resched()` for the current task of `cpu`.
#[inline]
pub fn need_resched(k: &Kernel, cpu: CpuId) -> bool {
    k.tasks[k.curr(cpu) as usize].ti_flags & TIF_NEED_RESCHED != 0
}

/// Models `need_resched_or_ipi()` of the TIF_NOTIFY_IPI RFC: true if NEED_RESCHED, or (with
/// the RFC) NOTIFY_IPI, is set on the current task.
#[inline]
pub fn need_resched_or_ipi(k: &Kernel, cpu: CpuId) -> bool {
    let f = k.tasks[k.curr(cpu) as usize].ti_flags;
    f & TIF_NEED_RESCHED != 0 || (k.cfg.tif_notify_ipi() && f & TIF_NOTIFY_IPI != 0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hw::cpumask::CpuMask;

    fn task() -> Task {
        Task::new(1, "t".into(), 120, TaskKind::Workload, 0, None, 0, 0)
    }

    /// The fields of the hot path share the first host cache line of a `Task`.
    #[test]
    fn task_hot_fields_share_the_first_cache_line() {
        use std::mem::{align_of, offset_of, size_of};
        assert_eq!(align_of::<Task>(), 64);
        let end = |off: usize, size: usize| off + size;
        for last in [
            end(offset_of!(Task, state), size_of::<u32>()),
            end(offset_of!(Task, on_cpu), 1),
            end(offset_of!(Task, ti_flags), size_of::<u32>()),
            end(offset_of!(Task, wake_entry), size_of::<CsdId>()),
            end(offset_of!(Task, user_ret), size_of::<i64>()),
            end(offset_of!(Task, exec_start), size_of::<Time>()),
            end(offset_of!(Task, sum_exec_runtime), size_of::<Time>()),
        ] {
            assert!(last <= 64, "a hot field ends at byte {last}");
        }
        // The affinity test of a task allowed every CPU reads `mask_weight`, on the line of
        // the wakee bookkeeping that a wakeup's `record_wakee()` reads anyway.
        let line = |off: usize, size: usize| (off / 64, (off + size - 1) / 64);
        let wakee = line(offset_of!(Task, wakee_flip_decay_ts), size_of::<u64>());
        assert_eq!(wakee.0, wakee.1);
        assert_eq!(line(offset_of!(Task, mask_weight), size_of::<u32>()), wakee);
    }

    #[test]
    fn affinity_is_the_bound_cpu_the_mask_or_every_cpu() {
        let mut t = task();
        assert!(t.cpu_allowed(3) && t.migratable() && t.single_cpu().is_none());
        t.pinned = Some(2);
        assert!(t.cpu_allowed(2) && !t.cpu_allowed(3) && !t.migratable());
        assert_eq!(t.single_cpu(), Some(2));
        t.pinned = None;
        let mut m = CpuMask::new(4);
        m.set(1);
        m.set(3);
        t.cpus_mask = Some(m.clone());
        t.mask_weight = m.weight();
        assert!(t.cpu_allowed(1) && t.cpu_allowed(3) && !t.cpu_allowed(0));
        assert!(t.migratable() && t.single_cpu().is_none());
        t.cpus_mask = Some(CpuMask::of(3, 4));
        t.mask_weight = 1;
        assert!(!t.migratable());
        assert_eq!(t.single_cpu(), Some(3));
    }
}
