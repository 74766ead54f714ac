//! Trace records: the compact, binary form of the kernel trace events the model emits.
//!
//! Records are appended in the simulator's hot loop as small `Copy` values; all text formatting
//! happens afterwards, in [`ftrace`]. Architecture invariant: the kernel model never formats
//! text; it only pushes [`Record`]s.

pub mod ftrace;
pub mod perfetto;
pub mod sink;
pub mod tracedat;

/// `common_flags` bits of a trace entry (include/linux/trace_events.h, 6.13+ numbering).
pub mod flags {
    pub const IRQS_OFF: u8 = 0x01;
    pub const NEED_RESCHED_LAZY: u8 = 0x02;
    /// TIF_NEED_RESCHED of the current task.
    pub const NEED_RESCHED: u8 = 0x04;
    pub const HARDIRQ: u8 = 0x08;
    pub const SOFTIRQ: u8 = 0x10;
    /// PREEMPT_NEED_RESCHED folded into the per-CPU preempt_count.
    pub const PREEMPT_RESCHED: u8 = 0x20;
    pub const NMI: u8 = 0x40;
    pub const BH_OFF: u8 = 0x80;
}

/// Kernel symbols that appear as `callsite=`, `callback=` or `func=` in trace lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Sym {
    /// `callback=0x0` of a plain reschedule IPI.
    Null,
    GenericSmpCallFunctionSingleInterrupt,
    TtwuQueueWakelist,
    WakeupPreempt,
    ReschedCurr,
    SmpCallFunctionSingle,
    SmpCallFunctionSingleAsync,
    GenericExecSingle,
    KickIlb,
    /// The callback of ipistorm's calls.
    DoNothingIpi,
    SchedTtwuPending,
    NohzCsdFunc,
    /// `smp_call_function_many_cond()`.
    SmpCallFunctionManyCond,
    /// `irq_work_queue_on()` (the RT push irq_work's call site).
    IrqWorkQueueOn,
    /// `rto_push_irq_work_func`, the RT push irq_work.
    RtoPushIrqWorkFunc,
}

/// x86 interrupt vectors that the model delivers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Vector {
    /// LOCAL_TIMER_VECTOR, 236.
    LocalTimer,
    /// CALL_FUNCTION_SINGLE_VECTOR, 251.
    CallFunctionSingle,
    /// RESCHEDULE_VECTOR, 253.
    Reschedule,
    /// CALL_FUNCTION_VECTOR, 252 (multi-target SMP calls).
    CallFunction,
}

impl Vector {
    pub const fn number(self) -> u32 {
        match self {
            Vector::LocalTimer => 236,
            Vector::CallFunctionSingle => 251,
            Vector::Reschedule => 253,
            Vector::CallFunction => 252,
        }
    }
}

/// Modelled kernel warnings (`WARN_ON_ONCE` sites). A warning is a finding of the run, not a
/// crash of the simulator.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum WarnSite {
    /// kernel/softirq.c `do_softirq_post_smp_call_flush()` (PREEMPT_RT).
    DoSoftirqPostSmpCallFlush,
    /// kernel/sched/core.c `nohz_csd_func()`: kicked without a kick bit.
    NohzCsdFuncNoKick,
}

impl WarnSite {
    pub const ALL: &'static [WarnSite] = &[WarnSite::DoSoftirqPostSmpCallFlush, WarnSite::NohzCsdFuncNoKick];
}

/// `WORK_CPU_UNBOUND` as the `workqueue_queue_work` tracepoint prints `req_cpu` for work queued
/// without a CPU (NR_CPUS on a 256-CPU config): a value of the trace format, which the kernel
/// model's `__queue_work()` records and the trace writers recognise.
pub const WORK_CPU_UNBOUND: u32 = 256;

/// One trace event with its kernel fields. Task names are resolved from pids at format time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Event {
    /// `sched_switch`. `prev_state` is the kernel's TASK_REPORT encoding: 0 = R, 1 = S, 2 = D,
    /// 0x80 = I; `| 0x100` (TASK_REPORT_MAX) marks a preempted task (`R+`).
    SchedSwitch {
        prev_pid: u32,
        prev_prio: i32,
        prev_state: u32,
        next_pid: u32,
        next_prio: i32,
    },
    SchedWaking {
        pid: u32,
        prio: i32,
        target_cpu: u32,
    },
    SchedWakeup {
        pid: u32,
        prio: i32,
        target_cpu: u32,
    },
    SchedWakeupNew {
        pid: u32,
        prio: i32,
        target_cpu: u32,
    },
    SchedMigrateTask {
        pid: u32,
        prio: i32,
        orig_cpu: u32,
        dest_cpu: u32,
    },
    SchedWakeIdleWithoutIpi {
        cpu: u32,
    },
    /// `sched_process_exit`: the task leaves in `do_exit()`; `group_dead` when it was the last
    /// thread of its group.
    SchedProcessExit {
        pid: u32,
        prio: i32,
        group_dead: bool,
    },
    IpiSendCpu {
        cpu: u32,
        callsite: Sym,
        callback: Sym,
    },
    /// `ipi_send_cpumask`; `mask` indexes [`TraceBuf::masks`].
    IpiSendCpumask {
        mask: u32,
        callsite: Sym,
        callback: Sym,
    },
    /// `csd` is the address of the csd; it prints hashed like `%p`.
    CsdQueueCpu {
        cpu: u32,
        callsite: Sym,
        func: Sym,
        csd: u64,
    },
    CsdFunctionEntry {
        func: Sym,
        csd: u64,
    },
    CsdFunctionExit {
        func: Sym,
        csd: u64,
    },
    /// `cpu_idle`; `state` is `u32::MAX` (PWR_EVENT_EXIT) on exit.
    CpuIdle {
        state: u32,
        cpu_id: u32,
    },
    /// `local_timer_entry`, `call_function_single_entry`, `reschedule_entry`.
    VectorEntry {
        vector: Vector,
    },
    VectorExit {
        vector: Vector,
    },
    SoftirqRaise {
        vec: u32,
    },
    SoftirqEntry {
        vec: u32,
    },
    SoftirqExit {
        vec: u32,
    },
    /// A modelled `WARN_ON_ONCE` firing.
    Warning {
        site: WarnSite,
    },
    /// `workqueue_queue_work`; `func` indexes the background sources (their names are the
    /// work functions), `work` is the work item's address.
    WorkqueueQueueWork {
        work: u64,
        func: u32,
        req_cpu: u32,
        cpu: u32,
    },
    WorkqueueExecuteStart {
        work: u64,
        func: u32,
    },
    WorkqueueExecuteEnd {
        work: u64,
        func: u32,
    },
    /// `timer_expire_entry`; `now` and `baseclk` in jiffies.
    TimerExpireEntry {
        timer: u64,
        func: u32,
        now: u64,
        baseclk: u64,
    },
    TimerExpireExit {
        timer: u64,
    },
}

/// One trace record: the common header plus the event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Record {
    /// Time of the event, ns since the start of the run.
    pub ts_ns: u64,
    /// CPU the event was recorded on.
    pub cpu: u32,
    /// `current`'s pid on that CPU (0 for the idle task).
    pub pid: u32,
    /// `common_flags` ([`flags`]).
    pub flags: u8,
    /// `common_preempt_count`: low nibble preempt depth, high nibble migrate-disable depth.
    pub preempt_count: u8,
    pub event: Event,
}

/// Render a cpumask as the kernel's `%*pb` does: 32-bit hex groups separated by commas, most
/// significant first, the first group without leading zeros.
pub fn cpumask_pb(m: &crate::hw::cpumask::CpuMask, nr_cpus: u32) -> String {
    let groups = nr_cpus.div_ceil(32).max(1);
    let mut out = String::new();
    for g in (0..groups).rev() {
        let mut v = 0u32;
        for b in 0..32 {
            let c = g * 32 + b;
            if c < nr_cpus && m.test(c) {
                v |= 1 << b;
            }
        }
        if g == groups - 1 {
            let width = (nr_cpus - g * 32).div_ceil(4) as usize;
            out.push_str(&format!("{v:0width$x}"));
        } else {
            out.push_str(&format!(",{v:08x}"));
        }
    }
    out
}

/// The names the formatter needs for a pid.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskName {
    pub pid: u32,
    pub comm: String,
}

/// A task as the trace writers name it: `comm`, `tgid` and whether it is a kernel thread. The
/// per-CPU idle tasks (pid 0, `swapper/N`) are never listed: writers name them themselves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskInfo {
    pub pid: u32,
    pub tgid: u32,
    pub comm: String,
    pub kthread: bool,
}

/// Where a streaming trace goes: a writer that takes the records in chunks while the run goes
/// on ([`sink`] has the ftrace text, Perfetto and trace.dat ones). Formatting happens here, never
/// in the model: the kernel only appends [`Record`]s to [`TraceBuf`] and hands a full buffer over.
///
/// Adding a trace event means adding an [`Event`] variant and one arm in each writer's match
/// (`ftrace::write_record`, `perfetto::encode_event`, `tracedat::encode_record`); the compiler
/// lists the writers that miss it.
pub trait TraceSink {
    /// Tasks that appeared since the last call (in creation order), before any record names them.
    fn tasks(&mut self, new: &[TaskInfo]);
    /// The names of the run's background functions (work functions, timer callbacks), which
    /// records cite by index; given once, before the first chunk.
    fn funcs(&mut self, names: &[String]);
    /// A chunk of records in time order; `masks` are the CPU masks the chunk's records index
    /// (ids restart at 0 with every chunk).
    fn write(&mut self, records: &[Record], masks: &[crate::hw::cpumask::CpuMask]) -> std::io::Result<()>;
    /// The run is over: complete the file (temporary file renamed into place). Returns the
    /// number of records written.
    fn finish(self: Box<Self>) -> std::io::Result<u64>;
    /// Give up: remove whatever was written.
    fn abort(self: Box<Self>);
}

/// Records per chunk handed to a [`TraceSink`] (about 3 MB of records).
pub const SINK_CHUNK_RECORDS: usize = 64 * 1024;

/// An append-only trace buffer. Recording can be switched off, in which case `push` is one
/// predictable branch. With a [`TraceSink`] attached, the kernel hands the buffer over every
/// [`SINK_CHUNK_RECORDS`] records ([`TraceBuf::full`]), so memory stays bounded however long the
/// run.
#[derive(Default)]
pub struct TraceBuf {
    pub enabled: bool,
    pub records: Vec<Record>,
    /// CPU masks referenced by records (`ipi_send_cpumask`).
    pub masks: Vec<crate::hw::cpumask::CpuMask>,
    /// The streaming writer, if any.
    pub sink: Option<Box<dyn TraceSink>>,
    /// Tasks already announced to the sink.
    pub tasks_sent: usize,
    /// The first write error of the sink; the run goes on without a trace and reports it.
    pub error: Option<std::io::Error>,
    /// Records per chunk when not 0 (tests use small chunks); else [`SINK_CHUNK_RECORDS`].
    pub chunk: usize,
}

impl std::fmt::Debug for TraceBuf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TraceBuf")
            .field("enabled", &self.enabled)
            .field("records", &self.records.len())
            .field("sink", &self.sink.is_some())
            .finish()
    }
}

impl TraceBuf {
    #[inline]
    pub fn push(&mut self, r: Record) {
        if self.enabled {
            self.records.push(r);
        }
    }

    /// True when a sink is attached and the buffer holds a full chunk.
    #[inline]
    pub fn full(&self) -> bool {
        let chunk = if self.chunk == 0 { SINK_CHUNK_RECORDS } else { self.chunk };
        self.records.len() >= chunk && self.sink.is_some()
    }

    /// Hand the buffered records to the sink, after announcing `new_tasks` (the tasks created
    /// since the last flush; `tasks_total` is the kernel's task count, so the next flush knows
    /// where to start). Without a sink this does nothing.
    pub fn flush(&mut self, new_tasks: &[TaskInfo], tasks_total: usize) {
        let Some(sink) = self.sink.as_mut() else { return };
        self.tasks_sent = tasks_total;
        if self.error.is_none() {
            sink.tasks(new_tasks);
            if let Err(e) = sink.write(&self.records, &self.masks) {
                self.error = Some(e);
            }
        }
        self.records.clear();
        self.masks.clear();
    }
}
