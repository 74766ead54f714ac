//! The kernel model. This directory mirrors the Linux source tree: the model of
//! `kernel/sched/core.c: try_to_wake_up()` is `linux/kernel/sched/core.rs: try_to_wake_up`,
//! the model of `drivers/cpuidle/poll_state.c: poll_idle()` is
//! `linux/drivers/cpuidle/poll_state.rs: poll_idle`, and so on.
//!
//! [`Kernel`] holds the simulated machine's kernel: per-CPU execution state ([`engine`]), the
//! runqueues and tasks, the modelled cache lines, the trace buffer and the counters. It names
//! no program: the run's programs (a workload, background daemons) reach it through
//! [`programs::Programs`], and a `World` (`crate::world`) owns the kernel, the programs and the
//! run.
//!
//! Architecture invariants: nothing here does I/O, reads the wall clock, iterates a hash map,
//! or uses floating point; the only randomness is the per-CPU [`Prng`] streams derived from the
//! run's seed.

pub mod arch;
pub mod background;
pub mod check;
pub mod config;
pub mod cost;
pub mod drivers;
pub mod engine;
pub mod fs;
pub mod kernel;
pub mod net;
pub mod patches;
pub mod programs;
pub mod stats;
pub mod unknowns;

use crate::hw::cacheline::{LineId, Lines};
use crate::hw::Machine;
use crate::sim::{ActionQueue, Prng, Time};
use crate::trace::{self, Event, Record, TraceBuf};
pub use config::KernelConfig;
pub use engine::{Action, Frame, Next, WaitOn};
use kernel::sched::topology::{build_sched_domains, SchedDomains};
use kernel::sched::{Nohz, RootDomain, Rq, Task, TaskKind};
use stats::Stats;

/// A CPU id (Linux numbering).
pub type CpuId = u32;
/// Index of a task in [`Kernel::tasks`] (not its pid).
pub type TaskId = u32;
/// Index of a call-single-data entry in [`Kernel::csds`].
pub type CsdId = u32;

/// `preempt_count` layout (include/linux/preempt.h).
pub mod preempt {
    pub const PREEMPT_MASK: u32 = 0x0000_00ff;
    pub const SOFTIRQ_OFFSET: u32 = 0x0000_0100;
    pub const SOFTIRQ_DISABLE_OFFSET: u32 = 0x0000_0200;
    pub const SOFTIRQ_MASK: u32 = 0x0000_ff00;
    pub const HARDIRQ_OFFSET: u32 = 0x0001_0000;
    pub const HARDIRQ_MASK: u32 = 0x000f_0000;
    pub const NMI_MASK: u32 = 0x00f0_0000;
}

/// CSD flags and types (include/linux/smp_types.h).
pub mod csd_flags {
    pub const CSD_FLAG_LOCK: u32 = 0x01;
    pub const CSD_TYPE_ASYNC: u32 = 0x00;
    pub const CSD_TYPE_SYNC: u32 = 0x10;
    pub const CSD_TYPE_IRQ_WORK: u32 = 0x20;
    pub const CSD_TYPE_TTWU: u32 = 0x30;
    pub const CSD_FLAG_TYPE_MASK: u32 = 0xF0;
}

/// What a queued call-single-data entry runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CsdFunc {
    /// ipistorm's empty callback.
    DoNothingIpi,
    /// `nohz_csd_func(rq)` for the rq of this CPU.
    NohzCsdFunc(CpuId),
    /// A task's `wake_entry` (`CSD_TYPE_TTWU`), consumed by `sched_ttwu_pending()`.
    TtwuEntry(TaskId),
    /// The root domain's `rto_push_work` irq_work (`rto_push_irq_work_func`).
    RtoPushIrqWork,
}

/// A `call_single_data_t`.
#[derive(Debug, Clone)]
pub struct Csd {
    /// `node.u_flags`: CSD_FLAG_LOCK plus a CSD_TYPE_*.
    pub flags: u32,
    pub func: CsdFunc,
    /// The line holding the csd (on the sender's stack, in per-CPU data, or in `task_struct`).
    pub line: LineId,
    /// A hashed address, as `%p` prints it.
    pub addr: u64,
}

/// Per-CPU state: the executor's view of the hardware thread plus the kernel's per-CPU data.
///
/// Laid out for the host's caches (`repr(C)`, fields in this order, aligned to a cache line):
/// on a large machine nearly every action finds its CPU's state cold, so the fields a step
/// touches come first, packed ([`CPU_HOT_BYTES`] from the start: the executor state, the small
/// per-CPU words, the runqueue, the tick and the cpuidle device), and what only occasional
/// paths use (multi-target calls, the timer wheel, background softirq work) comes after them.
/// `World::run` prefetches the hot part of the next action's CPU.
#[derive(Debug)]
#[repr(C, align(64))]
pub struct Cpu {
    /// Execution state of the hardware thread (frames, IRQ latch, waits).
    pub x: engine::Exec,
    pub id: CpuId,
    /// `preempt_count` (per-CPU on x86).
    pub preempt_count: u32,
    /// `irq_stat.__softirq_pending`.
    pub softirq_pending: u32,
    /// The task this CPU switched away from in the last context switch (`prev` as seen by
    /// `finish_task_switch()` running on `next`'s stack).
    pub switch_prev: TaskId,
    /// The line of the `call_single_queue` head.
    pub csq_line: LineId,
    /// PREEMPT_NEED_RESCHED, folded into the per-CPU preempt_count on x86.
    pub pnr: bool,
    /// `call_single_queue`: entries in llist_add order (the head is the last element).
    pub csq: Vec<CsdId>,
    /// The CPU's random stream (hardware latency jitter). After `csq`, so that its 32 bytes
    /// sit in one host cache line (before it they straddled two, and every draw touched both).
    pub rng: Prng,
    /// `struct rq`.
    pub rq: Rq,
    /// The per-CPU tick/hrtimer state (kernel/time).
    pub tick: kernel::time::tick_sched::TickSched,
    /// The cpuidle device of this CPU.
    pub idle_dev: drivers::cpuidle::CpuidleDevice,
    // The cold part: the fields below are used by occasional paths only.
    /// Scratch list of `__flush_smp_call_function_queue()` (entries taken by `llist_del_all`).
    pub flush_list: Vec<CsdId>,
    /// The timer wheel of this CPU (`kernel/time/timer.rs`).
    pub timers: kernel::time::timer::TimerBase,
    /// The per-CPU `csd_data` used by non-waiting `smp_call_function_single()`.
    pub csd_data: CsdId,
    /// The on-stack csd of waiting `smp_call_function_single()` (one stack slot per CPU).
    pub stack_csd: CsdId,
    /// `rq->nohz_csd` (func `nohz_csd_func`).
    pub nohz_csd: CsdId,
    /// The softirq RFC v1 per-CPU flag `will_do_softirq_post_flush` and its line.
    pub will_do_softirq_post_flush: bool,
    pub softirq_flag_line: LineId,
    /// PREEMPT_RT `softirq_ctrl.cnt` (also used on !RT by the softirq RFC v2), and its line.
    pub softirq_ctrl_cnt: u32,
    pub softirq_ctrl_line: LineId,
    /// `cfd_data`: this CPU's csd for each target of multi-target calls (allocated on first
    /// use), and the mask of targets that need an IPI.
    pub cfd: Vec<CsdId>,
    pub cfd_ipi_mask: crate::hw::cpumask::CpuMask,
    /// Run time queued for background softirq handlers, per vector (e.g. `rcu_core()`).
    pub softirq_work: [Time; 10],
    /// The CPU's stream for background activity (run times, periods), separate from the
    /// hardware jitter stream so that a machine without background draws exactly as before.
    pub bg_rng: Prng,
    /// A KVM guest's vCPU: the host's halt-polling window for it (`hw::kvm`; used only when
    /// the machine has `host_halt_poll`).
    pub vcpu_halt_poll: crate::hw::kvm::VcpuHaltPoll,
    /// `cpu_tlbstate.loaded_mm`: the address space whose page tables this CPU runs on (kept
    /// across kernel threads, lazy TLB); `arch::x86::mm::switch_mm_irqs_off`.
    pub loaded_mm: kernel::sched::MmId,
}

/// The bytes of [`Cpu`] a step usually touches: up to the end of its cpuidle device.
pub const CPU_HOT_BYTES: usize =
    std::mem::offset_of!(Cpu, idle_dev) + std::mem::size_of::<drivers::cpuidle::CpuidleDevice>();

/// The task `c` would switch to if its running task blocked now, when that is its idle task
/// (the running task is the only one queued): a host prefetch target, not a model of anything.
#[inline(always)]
fn idle_after_block(c: &Cpu) -> Option<TaskId> {
    (c.rq.curr != c.rq.idle && c.rq.nr_running <= 1).then_some(c.rq.idle)
}

/// Simulated time of a running `World::run`, stored every 2^20 actions for the command
/// line's progress display (any run may store it; the model never reads it).
pub static PROGRESS_NS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// The smallest machine whose per-CPU state `World::run` prefetches. At 128 it made `run
/// hackbench 32 --machine epyc-7763-2s` (256 CPUs, whose state stays in the host's L2) 1.11x
/// slower in CPU time (median of 15 alternated pairs).
pub(crate) const PREFETCH_MIN_CPUS: u32 = 512;

/// The simulated machine's kernel: its state, the executor running it, and its instrumentation
/// (the trace buffer, the counters, the invariant checkers).
pub struct Kernel {
    pub now: Time,
    pub q: ActionQueue<Action>,
    pub m: Machine,
    pub cfg: KernelConfig,
    pub costs: cost::PathCosts,
    pub cpus: Vec<Cpu>,
    /// The running frame of every CPU (the executor's, apart from `cpus`; see
    /// [`engine::TopFrames`]).
    pub tops: engine::TopFrames,
    pub tasks: Vec<Task>,
    /// The fair class's `sched_entity` of every task, indexed by [`TaskId`].
    pub ents: Vec<kernel::sched::fair_class::SchedEntity>,
    pub csds: Vec<Csd>,
    /// Futex words of the workload (user memory).
    pub futexes: Vec<kernel::futex::Futex>,
    /// Pipes, AF_UNIX sockets and the wait queues of the workload (`fs/`, `net/`).
    pub ipc: fs::Ipc,
    pub lines: Lines,
    pub sd: SchedDomains,
    pub rd: RootDomain,
    /// `sched_balance_running`: a CPU is balancing an SD_SERIALIZE (NUMA) domain. Balancing a
    /// domain is one step in the model, so no other CPU can observe it held; kept for the rule.
    pub sched_balance_running: bool,
    /// `sd_llc_shared`, indexed by `sd_llc_id` (the LLC's first CPU).
    pub llc_shared: Vec<kernel::sched::fair::SdShared>,
    pub nohz: Nohz,
    /// Worker pools and work items (`kernel/workqueue.rs`).
    pub wq: kernel::workqueue::Workqueues,
    pub trace: TraceBuf,
    pub stats: Stats,
    /// Number of actions processed (the simulator's unit of work): the run's queue pops and
    /// the executor's run-ahead steps.
    pub actions: u64,
    /// How far the executor may run a CPU ahead without going through the queue
    /// ([`engine::run_cpu`]): the run's limit, or just before the measured window opens. Set
    /// by the `World` that runs the kernel.
    pub horizon: Time,
    /// Start of the measured window: counters and phase times cover `[measure_from, end]`
    /// (the background warm-up before the workload is not measured, as `perf stat` around a
    /// benchmark does not see the machine's past). 0 without background. Set by the run
    /// before its programs start.
    pub measure_from: Time,
    next_pid: u32,
    seed: u64,
    /// Invariant checkers (`--check`); `None` (the default) costs one branch per hook.
    pub checks: Option<Box<check::Checks>>,
}

impl Kernel {
    /// Build a machine in its boot state: every CPU in its idle task's `do_idle()` loop,
    /// per-CPU ksoftirqd threads asleep.
    pub fn new(m: Machine, cfg: KernelConfig, seed: u64) -> Kernel {
        let nr = m.topo.nr_cpus;
        let sd = build_sched_domains(&m.topo);
        let mut k = Kernel {
            now: 0,
            q: ActionQueue::with_cpus(nr as usize),
            costs: cost::PathCosts::for_machine(&m),
            cpus: Vec::with_capacity(nr as usize),
            tops: engine::TopFrames::new(nr as usize),
            // The per-CPU idle, ksoftirqd and stopper tasks, without a doubling's slack.
            tasks: Vec::with_capacity(3 * nr as usize),
            ents: Vec::with_capacity(3 * nr as usize),
            csds: Vec::new(),
            futexes: Vec::new(),
            ipc: fs::Ipc::default(),
            lines: Lines::for_topology(&m.topo),
            sd,
            rd: RootDomain::default(),
            llc_shared: Vec::new(),
            sched_balance_running: false,
            nohz: Nohz::new(nr),
            wq: Default::default(),
            trace: TraceBuf::default(),
            stats: Stats::new(nr),
            actions: 0,
            horizon: Time::MAX,
            measure_from: 0,
            next_pid: 2,
            seed,
            checks: None,
            m,
            cfg,
        };
        let policy = match k.cfg.fair {
            patches::FairClass::Eevdf => kernel::sched::fair_class::FairPolicy::Eevdf,
            patches::FairClass::Cfs => kernel::sched::fair_class::FairPolicy::Cfs,
        };
        let tun = kernel::sched::fair_class::FairTunables::for_cpus_hz(nr, k.cfg.hz);
        // The runqueue lines first, in CPU order: the balancing models read a whole span of
        // them in a row (update_sd_lb_stats()), so they sit next to each other on the host.
        let (rq_lock_lines, rq_pending_lines) = kernel::sched::rq_lines::alloc(&mut k.lines, nr);
        for c in 0..nr {
            let idle = k.new_task(TaskKind::Idle, format!("swapper/{c}"), 0, 120, Some(c));
            k.tasks[idle as usize].pid = 0;
            let rq_lock_line = rq_lock_lines[c as usize];
            let csq_line = k.lines.alloc(c);
            // The RFC v1 flag: cacheline-aligned gets a line of its own; unaligned shares the
            // line of this CPU's call_single_queue head (see patches.rs).
            let softirq_flag_line = if k.cfg.softirq_flag_unaligned() { csq_line } else { k.lines.alloc(c) };
            let csd_line = k.lines.alloc(c);
            let softirq_ctrl_line = k.lines.alloc(c);
            let csd_data = k.new_csd(CsdFunc::DoNothingIpi, csd_line, 0);
            let stack_line = k.lines.alloc(c);
            let stack_csd = k.new_csd(CsdFunc::DoNothingIpi, stack_line, 0);
            let nohz_csd = k.new_csd(CsdFunc::NohzCsdFunc(c), rq_pending_lines[c as usize], 0);
            let tick = kernel::time::tick_sched::TickSched::new(k.m.hz, c);
            let rng = Prng::new(seed, 1 + c as u64);
            k.cpus.push(Cpu {
                id: c,
                x: engine::Exec::new(),
                rq: Rq::new(c, idle, rq_lock_line, rq_pending_lines[c as usize], {
                    let mut cfs = kernel::sched::fair_class::CfsRq::new(policy, tun);
                    // The fair class's features are rows of the one sched_features! table.
                    cfs.feat = k.cfg.fair_features();
                    cfs
                }),
                preempt_count: 1,
                pnr: false,
                csq: Vec::new(),
                csq_line,
                flush_list: Vec::new(),
                softirq_pending: 0,
                csd_data,
                stack_csd,
                nohz_csd,
                cfd: Vec::new(),
                // Sized by smp_call_function_many_cond() when it runs (no N-bit mask per CPU
                // on machines that never call it).
                cfd_ipi_mask: crate::hw::cpumask::CpuMask::default(),
                will_do_softirq_post_flush: false,
                softirq_flag_line,
                softirq_ctrl_cnt: 0,
                softirq_ctrl_line,
                tick,
                idle_dev: drivers::cpuidle::CpuidleDevice::new(),
                rng,
                switch_prev: idle,
                timers: Default::default(),
                softirq_work: [0; 10],
                bg_rng: Prng::new(seed, 0xB6_0000 + c as u64),
                vcpu_halt_poll: Default::default(),
                loaded_mm: kernel::sched::NO_MM,
            });
            k.tasks[idle as usize].on_cpu = true;
            k.tasks[idle as usize].on_rq = true;
        }
        kernel::sched::group_sums::init(&mut k);
        // The root domain's RT overload mask and its push irq_work.
        k.rd.rt.rto_mask = crate::hw::cpumask::CpuMask::new(nr);
        let rto_line = k.lines.alloc(0);
        k.rd.rt.rto_push_work = k.new_csd(CsdFunc::RtoPushIrqWork, rto_line, csd_flags::CSD_TYPE_IRQ_WORK);
        k.rd.rt.cpupri = kernel::sched::rt::Cpupri::new(nr);
        // sd_llc_shared: the machine has been up for a while and idle, so periodic balancing
        // has computed the full SIS_UTIL scan budget, every CPU is idle and cores are idle.
        k.llc_shared = (0..nr)
            .map(|c| kernel::sched::fair::SdShared {
                nr_busy_cpus: 0,
                has_idle_cores: true,
                nr_idle_scan: k.sd.sd_llc_size[c as usize],
            })
            .collect();
        for c in 0..nr {
            let t = k.new_task(TaskKind::Ksoftirqd, format!("ksoftirqd/{c}"), 0, 120, Some(c));
            k.tasks[t as usize].state = kernel::sched::TASK_INTERRUPTIBLE;
            k.tasks[t as usize].saved = kernel::softirq::ksoftirqd_initial_stack();
            k.cpus[c as usize].rq.ksoftirqd = t;
            let st = k.new_task(TaskKind::Stopper, format!("migration/{c}"), 0, 0, Some(c));
            k.tasks[st as usize].state = kernel::sched::TASK_INTERRUPTIBLE;
            k.tasks[st as usize].saved = kernel::stop_machine::stopper_initial_stack();
            k.cpus[c as usize].rq.stopper = st;
        }
        // Boot: every CPU enters cpu_startup_entry() -> do_idle() at a seed-dependent phase of
        // its first tick, so runs with different seeds differ in their alignment.
        for c in 0..nr {
            let idle = k.cpus[c as usize].rq.idle;
            k.tops.set(c as usize, Frame::DoIdle(Default::default()));
            let _ = idle;
            kernel::time::tick_sched::tick_start(&mut k, c);
            k.q.set(c as usize, crate::sim::Slot::Step, 0, Action::Resume { cpu: c, gen: 0 });
            k.cpus[c as usize].x.busy = true;
        }
        k
    }

    /// A quiet v6.10 kernel on preset `machine` (its HZ and preemption model, no background),
    /// booted and not yet run: for the kernel model's own unit tests.
    #[cfg(test)]
    pub(crate) fn for_test(machine: &str) -> Kernel {
        let m = crate::hw::preset(machine).expect("a preset");
        let mut cfg = KernelConfig::resolve("v6.10", "", m.hz).expect("v6.10");
        cfg.preempt = config::Preempt::parse(&m.preempt).expect("the preset's preemption model");
        Kernel::new(m, cfg, 1)
    }

    /// Allocate a task. `pinned` binds it to one CPU (`kthread_bind`).
    pub fn new_task(&mut self, kind: TaskKind, comm: String, policy: u32, prio: i32, pinned: Option<CpuId>) -> TaskId {
        let id = self.tasks.len() as TaskId;
        let pid = self.next_pid;
        self.next_pid += 1;
        let home = pinned.unwrap_or(0);
        let ti_line = self.lines.alloc(home);
        let wake_line = self.lines.alloc(home);
        let wake_entry = self.new_csd(CsdFunc::TtwuEntry(id), wake_line, kernel::sched::CSD_TTWU_TYPE);
        self.tasks.push(Task::new(pid, comm, prio, kind, home, pinned, ti_line, wake_entry));
        let t = self.tasks.last_mut().expect("just pushed");
        t.policy = policy;
        // sched_fork(): a SCHED_RR task starts with a full slice.
        t.rr_time_slice = kernel::sched::rt::rr_timeslice_ticks(self.cfg.hz);
        self.ents.push(kernel::sched::fair_class::SchedEntity::with_nice(id, prio - 120));
        id
    }

    /// Allocate a csd on `line` (unlocked, type ASYNC).
    pub fn alloc_csd(&mut self, func: CsdFunc, line: LineId) -> CsdId {
        self.new_csd(func, line, 0)
    }

    fn new_csd(&mut self, func: CsdFunc, line: LineId, flags: u32) -> CsdId {
        let id = self.csds.len() as CsdId;
        // A deterministic stand-in for the kernel's hashed %p value.
        let mut s = self.seed ^ (0xC5D0_0000 + id as u64);
        let addr = crate::sim::rng::splitmix64(&mut s) & 0x0000_0000_ffff_ffff;
        self.csds.push(Csd { flags, func, line, addr });
        id
    }

    /// Run `f` on `cpu`'s fair runqueue and the entity table (disjoint borrows).
    #[inline]
    pub fn with_cfs<R>(
        &mut self,
        cpu: CpuId,
        f: impl FnOnce(&mut kernel::sched::fair_class::CfsRq, &mut [kernel::sched::fair_class::SchedEntity]) -> R,
    ) -> R {
        let Kernel { cpus, ents, .. } = self;
        f(&mut cpus[cpu as usize].rq.cfs, ents)
    }

    /// jiffies at the current instant (the timekeeping CPU's tick is modelled as exact).
    #[inline]
    pub fn jiffies(&self) -> u64 {
        self.now / self.tick_nsec()
    }

    /// TICK_NSEC for the configured HZ.
    #[inline]
    pub fn tick_nsec(&self) -> Time {
        crate::sim::NSEC_PER_SEC / self.cfg.hz as u64
    }

    /// The current task on `cpu`.
    #[inline]
    pub fn curr(&self, cpu: CpuId) -> TaskId {
        self.cpus[cpu as usize].rq.curr
    }

    /// Sample a cache-line transfer for a line access that missed.
    #[inline]
    pub fn line_ns(&mut self, cpu: CpuId, d: Option<crate::hw::topology::Distance>) -> Time {
        match d {
            None => 0,
            Some(d) => {
                let r = self.m.costs.line[d as usize];
                self.cpus[cpu as usize].rng.range(r.lo_ns, r.hi_ns)
            }
        }
    }

    /// `cpu` reads `line`; returns the cost in ns.
    #[inline]
    pub fn line_read(&mut self, cpu: CpuId, line: LineId) -> Time {
        let d = self.lines.read(line, cpu, &self.m.topo);
        self.line_ns(cpu, d)
    }

    /// `cpu` writes `line`; returns the cost in ns and wakes a CPU spinning on or monitoring it.
    /// Inlined down to the test for a line `cpu` holds alone, unwatched: such a write costs
    /// nothing, draws nothing and leaves the line as it is (the call is for the other cases).
    #[inline(always)]
    pub fn line_write(&mut self, cpu: CpuId, line: LineId) -> Time {
        if self.lines.owned_alone(line, cpu) {
            return 0;
        }
        self.line_write_shared(cpu, line)
    }

    /// [`Kernel::line_write`] of a line another CPU holds or watches.
    #[inline(never)]
    fn line_write_shared(&mut self, cpu: CpuId, line: LineId) -> Time {
        let (d, watcher) = self.lines.write_watched(line, cpu, &self.m.topo);
        let cost = self.line_ns(cpu, d);
        if let Some(w) = watcher {
            if w != cpu {
                // The invalidation reaches the watcher with this write; it then re-reads the
                // line itself (and pays that transfer in its own step).
                engine::notify(self, w, cost);
            }
        }
        cost
    }

    /// Record a trace event on `cpu` with the flags computed from the modelled CPU state.
    /// Inlined down to the `enabled` test, so an untraced run neither calls nor builds the
    /// record (the event's fields are only computed on the traced path).
    #[inline(always)]
    pub fn tp(&mut self, cpu: CpuId, event: Event) {
        if self.trace.enabled {
            self.tp_record(cpu, event);
        }
    }

    /// The traced path of [`Kernel::tp`].
    #[inline(never)]
    fn tp_record(&mut self, cpu: CpuId, event: Event) {
        let c = &self.cpus[cpu as usize];
        let curr = &self.tasks[c.rq.curr as usize];
        let mut flags = 0u8;
        if c.x.irqs_off {
            flags |= trace::flags::IRQS_OFF;
        }
        if curr.ti_flags & kernel::sched::TIF_NEED_RESCHED != 0 {
            flags |= trace::flags::NEED_RESCHED;
        }
        if c.pnr {
            flags |= trace::flags::PREEMPT_RESCHED;
        }
        if c.preempt_count & preempt::HARDIRQ_MASK != 0 {
            flags |= trace::flags::HARDIRQ;
        }
        if c.preempt_count & preempt::SOFTIRQ_OFFSET != 0 {
            flags |= trace::flags::SOFTIRQ;
        }
        if c.preempt_count & preempt::SOFTIRQ_DISABLE_OFFSET != 0 && c.preempt_count & preempt::SOFTIRQ_OFFSET == 0 {
            flags |= trace::flags::BH_OFF;
        }
        let pc = (c.preempt_count & preempt::PREEMPT_MASK).min(15) as u8;
        self.trace.records.push(Record { ts_ns: self.now, cpu, pid: curr.pid, flags, preempt_count: pc, event });
        if self.trace.full() {
            self.flush_trace();
        }
    }

    /// Hand the buffered trace records to the streaming sink, if one is attached, announcing
    /// the tasks created since the last hand-over (the cold path of [`Kernel::tp`]; also called
    /// once at the end of a run).
    #[cold]
    #[inline(never)]
    pub fn flush_trace(&mut self) {
        let from = self.trace.tasks_sent.min(self.tasks.len());
        let new: Vec<trace::TaskInfo> = self.tasks[from..]
            .iter()
            .filter(|t| t.kind != kernel::sched::TaskKind::Idle)
            .map(|t| trace::TaskInfo {
                pid: t.pid,
                tgid: t.pid,
                comm: t.comm.clone(),
                kthread: t.kind != kernel::sched::TaskKind::Workload,
            })
            .collect();
        self.trace.flush(&new, self.tasks.len());
    }

    /// A modelled `WARN_ON_ONCE()` firing: a finding of the run, recorded in the trace and the
    /// counters; the run goes on.
    pub fn warn_on_once(&mut self, cpu: CpuId, site: trace::WarnSite) {
        check::on_warn(self, cpu, site);
        self.stats.warns += 1;
        if self.stats.warned_sites.contains(&site) {
            return;
        }
        self.stats.warned_sites.push(site);
        self.stats.first_warn_ns.get_or_insert(self.now);
        self.tp(cpu, Event::Warning { site });
    }

    /// Turn the invariant checkers on ([`check`]); they observe only, so the run's steps and
    /// trace stay the same. Call before the run starts.
    pub fn enable_checks(&mut self) {
        if self.checks.is_none() {
            self.checks = Some(Box::new(check::Checks::new(self)));
        }
    }

    /// The violations the checkers kept (empty when checks are off).
    pub fn violations(&self) -> &[check::Violation] {
        self.checks.as_deref().map_or(&[], |c| c.violations.as_slice())
    }

    /// Check the runqueue invariants: every queued task is on exactly one runqueue (its own
    /// CPU's), and each runqueue's counts match the tasks queued on it. For tests; O(tasks).
    pub fn check_invariants(&self) -> Result<(), String> {
        let nr = self.m.topo.nr_cpus as usize;
        let mut counted = vec![0u32; nr];
        for (i, t) in self.tasks.iter().enumerate() {
            if t.kind == kernel::sched::TaskKind::Idle {
                continue;
            }
            if t.kind == kernel::sched::TaskKind::Stopper {
                if t.on_rq {
                    counted[t.cpu as usize] += 1;
                }
                continue;
            }
            let id = i as TaskId;
            let holders: Vec<usize> = (0..nr)
                .filter(|&c| {
                    let cfs = &self.cpus[c].rq.cfs;
                    cfs.is_queued(&self.ents, id)
                        || (cfs.curr == Some(id) && self.ents[i].on_rq)
                        || self.cpus[c].rq.rt.on_rt_rq(id)
                })
                .collect();
            if t.on_rq {
                if holders != vec![t.cpu as usize] {
                    return Err(format!(
                        "task {} ({}) on_rq on CPU {} but held by runqueues {:?} at {}",
                        t.pid, t.comm, t.cpu, holders, self.now
                    ));
                }
                counted[t.cpu as usize] += 1;
            } else if !holders.is_empty() {
                return Err(format!(
                    "task {} ({}) not on_rq but held by runqueues {:?} at {}",
                    t.pid, t.comm, holders, self.now
                ));
            }
        }
        for (c, n) in counted.iter().enumerate() {
            let rq = &self.cpus[c].rq;
            if rq.nr_running != *n || rq.cfs_h_nr_running + rq.rt.nr_running() + rq.stop_runnable as u32 != *n {
                return Err(format!(
                    "CPU {c}: nr_running {} / h_nr_running {} but {} queued tasks at {}",
                    rq.nr_running, rq.cfs_h_nr_running, n, self.now
                ));
            }
        }
        Ok(())
    }

    /// Open the measured window at `measure_from`: close the warm-up's accounting and start
    /// the counters afresh (the run calls this once, before the first action at or after it).
    pub fn begin_measurement(&mut self) {
        self.now = self.now.max(self.measure_from);
        engine::account_all(self);
        let nr = self.m.topo.nr_cpus;
        // WARN_ON_ONCE() fires once per boot: the sites that fired in the warm-up stay fired.
        let fired = std::mem::take(&mut self.stats.warned_sites);
        self.stats = Stats::new(nr);
        self.stats.warned_sites = fired;
        if self.rd.overloaded {
            self.stats.overloaded_since = Some(self.now);
        }
        unknowns::open_window(self);
    }

    /// Ask the host to cache the per-CPU state an action of `cpu` touches first, found
    /// without reading it: the hot part of its `Cpu` and its phase counters (see
    /// [`crate::sim::prefetch`]).
    #[inline(always)]
    pub(crate) fn prefetch_cpu(&self, cpu: usize) {
        use crate::sim::prefetch::{prefetch_bytes, prefetch_lines};
        if let Some(c) = self.cpus.get(cpu) {
            prefetch_lines::<{ CPU_HOT_BYTES.div_ceil(64) }, _>(c);
            // The CPU's phase counters: a row of 72 bytes, usually across two lines.
            let row = self.stats.phase_ns.as_ptr().wrapping_add(cpu);
            prefetch_bytes(row, std::mem::size_of::<[u64; engine::NR_PHASES]>());
        }
    }

    /// The second stage, one action ahead, once `cpu`'s `Cpu` (requested two actions ahead
    /// by [`Kernel::prefetch_cpu`]) is in cache: what it points to (the top frame of its stack
    /// and the one below it, the modelled lines of its rq lock and call_single_queue, its
    /// current task and entity). With one action of lead the task and entity measured slower
    /// (1.04-1.18x the time per action, nanosleep and hackbench on 1024 and 4096 CPUs); with
    /// the pipeline two actions deep they measured faster (nanosleep on 4096 CPUs, 15 alternated
    /// runs: median 257 ns per action with them, 270 without, 337 for the one-deep pipeline).
    #[inline(always)]
    pub(crate) fn prefetch_cpu_deep(&self, cpu: usize) {
        use crate::sim::prefetch::{prefetch, prefetch_bytes, prefetch_lines};
        if let Some(c) = self.cpus.get(cpu) {
            // The running frame's slot: one line (a `Frame` is 64 bytes, the slot aligned).
            prefetch(self.tops.prefetch_addr(cpu));
            self.lines.prefetch(c.rq.lock_line);
            self.lines.prefetch(c.csq_line);
            // The frame below the running one (a return or a switch moves it).
            let st = &c.x.stack;
            prefetch_bytes(st.as_ptr().wrapping_add(st.len().saturating_sub(1)), 64);
            let curr = c.rq.curr as usize;
            prefetch_lines::<2, _>(self.tasks.as_ptr().wrapping_add(curr));
            // The task of the first sleep timer in its list: on an idle CPU with one sleeper
            // the next action is often that timer's interrupt, which wakes the task.
            if let Some(&(_, _, p)) = c.tick.sleepers.first() {
                prefetch_lines::<2, _>(self.tasks.as_ptr().wrapping_add(p as usize));
            }
            // The idle task, when the running task is the only one: if it blocks, the switch
            // reads the idle task and takes its top frame.
            if let Some(idle) = idle_after_block(c) {
                prefetch_lines::<2, _>(self.tasks.as_ptr().wrapping_add(idle as usize));
            }
            prefetch_bytes(
                self.ents.as_ptr().wrapping_add(curr),
                std::mem::size_of::<kernel::sched::fair_class::SchedEntity>(),
            );
        }
    }

    /// The last stage, as `cpu`'s action starts: the modelled line of its current task's flags.
    #[inline(always)]
    pub(crate) fn prefetch_cpu_task(&self, cpu: usize) {
        if let Some(c) = self.cpus.get(cpu) {
            if let Some(t) = self.tasks.get(c.rq.curr as usize) {
                self.lines.prefetch(t.ti_line);
            }
            // The idle task's top frame (its task was requested an action ahead, as above).
            if let Some(t) = idle_after_block(c).and_then(|idle| self.tasks.get(idle as usize)) {
                engine::prefetch_caller(&t.saved);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    /// The hot part of `Cpu` starts it and stays within the lines `World::run` prefetches and
    /// ARCHITECTURE.md states; the cold part follows it.
    #[test]
    fn cpu_hot_part_comes_first_and_stays_small() {
        use super::{Cpu, CPU_HOT_BYTES};
        use std::mem::{align_of, offset_of};
        assert_eq!(align_of::<Cpu>(), 64);
        assert_eq!(offset_of!(Cpu, x), 0);
        assert!(CPU_HOT_BYTES.div_ceil(64) <= 15, "hot part of Cpu: {CPU_HOT_BYTES} bytes");
        for cold in
            [offset_of!(Cpu, flush_list), offset_of!(Cpu, cfd), offset_of!(Cpu, timers), offset_of!(Cpu, bg_rng)]
        {
            assert!(cold >= CPU_HOT_BYTES);
        }
    }

    /// The jitter stream, drawn by most steps (every line transfer), lies in one host cache
    /// line.
    #[test]
    fn cpu_rng_sits_in_one_host_cache_line() {
        use super::Cpu;
        use std::mem::{offset_of, size_of};
        let start = offset_of!(Cpu, rng);
        let end = start + size_of::<crate::sim::Prng>() - 1;
        assert_eq!(start / 64, end / 64, "Cpu::rng spans bytes {start}..={end}");
    }
}
