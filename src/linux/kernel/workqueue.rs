//! Models `kernel/workqueue.c` @ v6.10 for the background work items: per-CPU (bound) worker
//! pools, each with its `kworker/N:1` thread bound to its CPU, and one unbound pool whose
//! `kworker/uN:1` runs wherever the scheduler places it.
//!
//! - `__queue_work()` puts the work on its pool's worklist and wakes the pool's worker if it
//!   is idle (`kick_pool()` -> `wake_up_process()`);
//! - `worker_thread()` runs the worklist (`process_one_work()`: `workqueue_execute_start`, the
//!   work function, `workqueue_execute_end`), calls `cond_resched()` after each item, and
//!   sleeps in TASK_IDLE when the list is empty;
//! - a periodic delayed work (vmstat_update, psi_avgs_work, ...) re-arms its own timer from its
//!   work function on the CPU it ran on, as those functions do with
//!   `queue_delayed_work_on()`/`schedule_delayed_work()`.
//!
//! Simplifications: one worker per pool (no concurrency management: the workloads here never
//! block a work item), no rescuers, no per-pod unbound pools (one unbound pool per machine).

use crate::linux::engine::{Frame, Next};
use crate::linux::kernel::sched::core::{ScheduleCaller, TryToWakeUp};
use crate::linux::kernel::sched::{TASK_IDLE, TASK_RUNNING};
use crate::linux::kernel::time::timer::{add_timer_on, TimerFn};
use crate::linux::{CpuId, Kernel, TaskId};
use crate::sim::Time;
use crate::trace::Event;
use std::collections::VecDeque;

/// Index of a work item in [`Workqueues::works`].
pub type WorkId = u32;

/// A `struct delayed_work` of a background source.
#[derive(Debug, Clone)]
pub struct Work {
    /// The background source (its name is the work function).
    pub src: u16,
    /// The pool it is queued to.
    pub pool: u32,
    /// WORK_STRUCT_PENDING.
    pub pending: bool,
    /// A hashed address for the trace (`work struct %p`).
    pub addr: u64,
}

/// A `struct worker_pool` with its one worker.
#[derive(Debug, Clone)]
pub struct WorkerPool {
    /// The bound CPU, or `None` for the unbound pool.
    pub cpu: Option<CpuId>,
    pub worklist: VecDeque<WorkId>,
    pub worker: TaskId,
}

/// All work items and pools of the machine.
#[derive(Debug, Clone, Default)]
pub struct Workqueues {
    pub works: Vec<Work>,
    pub pools: Vec<WorkerPool>,
    /// The pool of each bound CPU (`NO_POOL`: none yet), and the unbound pool: a lookup, not a
    /// scan of every pool (one pool per CPU on a large machine).
    by_cpu: Vec<u32>,
    unbound: Option<u32>,
}

/// No pool for that CPU yet.
const NO_POOL: u32 = u32::MAX;

impl Workqueues {
    /// The pool of bound CPU `cpu`, or the unbound pool.
    pub fn pool_of(&self, cpu: Option<CpuId>) -> Option<u32> {
        match cpu {
            Some(c) => self.by_cpu.get(c as usize).copied().filter(|&p| p != NO_POOL),
            None => self.unbound,
        }
    }
}

/// Create the worker pool for `cpu` (or the unbound pool) with its worker, asleep.
pub fn create_pool(k: &mut Kernel, cpu: Option<CpuId>) -> u32 {
    let nr = k.m.topo.nr_cpus;
    let comm = match cpu {
        Some(c) => format!("kworker/{c}:1"),
        None => format!("kworker/u{}:1", 2 * nr),
    };
    let w = k.new_task(crate::linux::kernel::sched::TaskKind::Kworker, comm, 0, 120, cpu);
    // The pool this call makes; its worker knows it (`worker->pool`).
    let pool = k.wq.pools.len() as u32;
    k.tasks[w as usize].state = TASK_IDLE;
    k.tasks[w as usize].saved = vec![
        Frame::Worker(WorkerThread { at: WorkerAt::Woken, work: 0, pool }),
        Frame::ScheduleCaller(ScheduleCaller::asleep_in_schedule()),
        Frame::Schedule(crate::linux::kernel::sched::core::Schedule::switched_out()),
    ];
    if cpu.is_none() {
        // An unbound worker starts on the node's first CPU.
        k.tasks[w as usize].cpu = 0;
    }
    k.wq.pools.push(WorkerPool { cpu, worklist: VecDeque::new(), worker: w });
    match cpu {
        Some(c) => {
            let c = c as usize;
            if k.wq.by_cpu.len() <= c {
                k.wq.by_cpu.resize(c + 1, NO_POOL);
            }
            k.wq.by_cpu[c] = pool;
        }
        None => k.wq.unbound = Some(pool),
    }
    pool
}

/// Create a delayed work item of background source `src` on `pool`.
pub fn init_delayed_work(k: &mut Kernel, src: u16, pool: u32) -> WorkId {
    let id = k.wq.works.len() as WorkId;
    let addr = 0xffff_8880_3000_0000 ^ ((src as u64) << 24) ^ ((pool as u64) << 12) ^ (id as u64) << 4;
    k.wq.works.push(Work { src, pool, pending: false, addr });
    id
}

/// Models `__queue_work()` + `kick_pool()` — kernel/workqueue.c @ v6.10, run by `cpu`: queue
/// `w` on its pool and, if the pool's worker sleeps, return its wakeup to call. Returns the
/// cost and the wakeup.
pub fn __queue_work(k: &mut Kernel, cpu: CpuId, w: WorkId) -> (Time, Option<Frame>) {
    let work = &mut k.wq.works[w as usize];
    if work.pending {
        return (0, None);
    }
    work.pending = true;
    let (pool, addr, src) = (work.pool, work.addr, work.src);
    let p = &mut k.wq.pools[pool as usize];
    p.worklist.push_back(w);
    let worker = p.worker;
    let req_cpu = p.cpu.unwrap_or(crate::trace::WORK_CPU_UNBOUND);
    let on = p.cpu.unwrap_or(cpu);
    k.tp(cpu, Event::WorkqueueQueueWork { work: addr, func: src as u32, req_cpu, cpu: on });
    let t = &k.tasks[worker as usize];
    // A worker asleep but still queued (DELAY_DEQUEUE) needs its wakeup too.
    let asleep = !t.on_rq || k.ents[worker as usize].sched_delayed;
    let wake = (t.state != TASK_RUNNING && asleep).then(|| Frame::TryToWakeUp(TryToWakeUp::new(worker, 0)));
    // `queue_work` covers this function and `process_one_work()`'s bookkeeping: half each.
    (k.costs.queue_work / 2, wake)
}

/// `worker_thread()` resume points, in code order.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum WorkerAt {
    /// Take the next work item and run it (`process_one_work()`), or sleep in TASK_IDLE.
    #[default]
    NextWork,
    /// Back from `schedule()`: woken for new work.
    Woken,
    /// The work function returned: `workqueue_execute_end`, re-arm, `cond_resched()`.
    WorkDone,
}

/// `worker_thread()` in progress.
#[derive(Debug, Clone, Copy, Default)]
pub struct WorkerThread {
    pub at: WorkerAt,
    pub work: WorkId,
    /// `worker->pool`.
    pub pool: u32,
}

/// Models `worker_thread()` -> `process_one_work()` — kernel/workqueue.c @ v6.10.
///
/// Context: the pool's kworker, a fair kernel thread.
pub fn worker_thread(k: &mut Kernel, cpu: CpuId, s: &mut WorkerThread) -> Next {
    let me = k.curr(cpu);
    match s.at {
        WorkerAt::NextWork => {
            let pool = s.pool as usize;
            debug_assert_eq!(k.wq.pools[pool].worker, me, "kworker {me} runs another pool's worker_thread()");
            let Some(w) = k.wq.pools[pool].worklist.pop_front() else {
                // Nothing to do: worker_enter_idle(), sleep in TASK_IDLE.
                k.tasks[me as usize].state = TASK_IDLE;
                s.at = WorkerAt::Woken;
                return Next::Call(0, Frame::ScheduleCaller(ScheduleCaller::schedule()));
            };
            let work = &mut k.wq.works[w as usize];
            work.pending = false;
            let (addr, src) = (work.addr, work.src);
            k.tp(cpu, Event::WorkqueueExecuteStart { work: addr, func: src as u32 });
            s.work = w;
            s.at = WorkerAt::WorkDone;
            let d = k.cfg.background.sources[src as usize].runtime;
            let run = d.draw(&mut k.cpus[cpu as usize].bg_rng);
            // process_one_work()'s bookkeeping: the other half of `queue_work`.
            Next::Cont(k.costs.queue_work - k.costs.queue_work / 2 + run)
        }
        WorkerAt::Woken => {
            k.tasks[me as usize].state = TASK_RUNNING;
            s.at = WorkerAt::NextWork;
            Next::Cont(0)
        }
        WorkerAt::WorkDone => {
            let work = &k.wq.works[s.work as usize];
            let (addr, src) = (work.addr, work.src);
            k.tp(cpu, Event::WorkqueueExecuteEnd { work: addr, func: src as u32 });
            // The work function re-arms itself on this CPU (queue_delayed_work_on()).
            let srcd = &k.cfg.background.sources[src as usize];
            let deferrable = srcd.deferrable;
            let next = srcd.next_interval(&mut k.cpus[cpu as usize].bg_rng);
            add_timer_on(k, cpu, next, deferrable, TimerFn::DelayedWork(s.work), src);
            s.at = WorkerAt::NextWork;
            // cond_resched() between work items.
            match crate::linux::kernel::sched::core::cond_resched(k, cpu) {
                Some(f) => Next::Call(k.costs.cond_resched, f),
                None => Next::Cont(k.costs.cond_resched),
            }
        }
    }
}
