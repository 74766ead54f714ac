//! The CPU executor: how a modelled hardware thread runs kernel code paths in virtual time.
//!
//! Each CPU runs a stack of [`Frame`]s, one per active kernel function (a hand-written
//! coroutine: the frame holds the function's resume point and locals). A *step* runs the top
//! frame up to its next modelled point: its effects on shared state happen at the step's start
//! instant and the step returns the time until the next one ([`Next`]). Interrupt handlers are
//! frames pushed on top of whatever was running:
//!
//! - an interrupt that arrives while IRQs are enabled preempts the current step, and the
//!   step's remaining time is resumed when the handler returns;
//! - an interrupt that arrives while IRQs are disabled is latched and taken at the instant a
//!   step re-enables IRQs;
//! - a CPU waiting in an idle state, or spinning on a cache line, blocks until a writer or an
//!   interrupt wakes it.
//!
//! Context switches swap the task part of the stack: a task's frames are saved in its
//! `task_struct` model and restored when it runs again, exactly where `__schedule()` left it.
//!
//! Where the frames live is simulator machinery: a CPU's running (top) frame is in its slot of
//! [`TopFrames`], apart from its `Cpu`, and the frames below it in [`Exec::stack`].
//!
//! Decision (docs/design.md): explicit state machines rather than async coroutines. They
//! were measured faster (docs/design.md, "The executor"), and a frame is plain `Copy` data that can be
//! printed, hashed and compared.

use super::arch::x86::HardIrq;
use super::drivers::cpuidle::EnterState;
use super::kernel::sched::core::{Schedule, ScheduleCaller, TryToWakeUp, TtwuPending};
use super::kernel::sched::fair::{NewidleBalance, SchedBalanceSoftirq};
use super::kernel::sched::idle::{CpuidleIdleCall, DoIdle};
use super::kernel::smp::{FlushQueue, FlushSmpCallFunctionQueue, SmpCallFunction};
use super::kernel::softirq::{HandleSoftirqs, Ksoftirqd};
use super::programs::{Programs, TaskFrame};
use super::{CpuId, Kernel};
use crate::sim::{Slot, Time};
use crate::trace::Vector;

/// One active kernel function on a CPU's stack.
///
/// `repr(u8)`: the variant is a tag byte of its own at the start of the frame, so dispatching
/// on it (and `phase_of`) is one load and a table index rather than decoding a niche inside the
/// largest variant. The payloads are 8-byte aligned, so the tag takes a word and the largest,
/// [`TaskFrame`], is held to 56 bytes: a frame is 64, one host cache
/// line, so a CPU's running-frame slot in [`TopFrames`] is one line and a push or pop moves one.
#[derive(Debug, Clone, Copy)]
#[repr(u8)]
pub enum Frame {
    /// The idle task's `cpu_startup_entry()` / `do_idle()` loop.
    DoIdle(DoIdle),
    /// `cpuidle_idle_call()` with `call_cpuidle()`.
    CpuidleIdleCall(CpuidleIdleCall),
    /// An idle state's `enter` routine.
    EnterState(EnterState),
    /// `schedule()`, `schedule_idle()`, `preempt_schedule_common()`.
    ScheduleCaller(ScheduleCaller),
    /// `__schedule()`.
    Schedule(Schedule),
    /// `sched_balance_newidle()`.
    NewidleBalance(NewidleBalance),
    /// `idle_balance()` of v3.8 (before 38033c37faab).
    IdleBalance(super::kernel::sched::fair::IdleBalance),
    /// The 2013 idle-class post-schedule hook.
    PostScheduleIdle(super::kernel::sched::core::PostScheduleIdle),
    /// `sched_balance_softirq()`.
    SchedBalanceSoftirq(SchedBalanceSoftirq),
    /// `flush_smp_call_function_queue()` (task context).
    FlushSmpCallFunctionQueue(FlushSmpCallFunctionQueue),
    /// `__flush_smp_call_function_queue()`.
    FlushQueue(FlushQueue),
    /// `smp_call_function_single()` / `smp_call_function_many_cond()`.
    SmpCallFunction(SmpCallFunction),
    /// An interrupt handler (entry, the vector's handler, irq exit).
    HardIrq(HardIrq),
    /// `handle_softirqs()`.
    HandleSoftirqs(HandleSoftirqs),
    /// `try_to_wake_up()`.
    TryToWakeUp(TryToWakeUp),
    /// `sched_ttwu_pending()`.
    TtwuPending(TtwuPending),
    /// The body of a per-CPU ksoftirqd thread (`smpboot_thread_fn` + `run_ksoftirqd`).
    Ksoftirqd(Ksoftirqd),
    /// `ret_from_fork` -> `schedule_tail()` for a task's first run.
    RetFromFork,
    /// A per-CPU stopper thread (`migration/N`).
    Stopper(super::kernel::stop_machine::Stopper),
    /// The `futex` syscall (FUTEX_WAIT / FUTEX_WAKE).
    Futex(super::kernel::futex::FutexOp),
    /// `nanosleep()` / `usleep_range()`.
    Nanosleep(super::kernel::futex::Nanosleep),
    /// `write()` / `read()` on a pipe.
    Pipe(super::fs::pipe::PipeOp),
    /// `sendmsg()` / `recvmsg()` (`write()` / `read()`) on an AF_UNIX stream socket.
    UnixStream(super::net::unix::UnixStreamOp),
    /// `sendto()` / `recvfrom()` on a TCP or UDP socket.
    Inet(super::net::socket::InetOp),
    /// `net_rx_action()` (the NET_RX softirq) with the backlog NAPI's `process_backlog()`.
    NetRxAction(super::net::core::dev::NetRxAction),
    /// `release_sock()` / `__sk_flush_backlog()` of an AF_INET socket.
    SockBacklog(super::net::core::sock::SockBacklog),
    /// `poll()` on one descriptor.
    Poll(super::fs::select::PollOp),
    /// `__wake_up_common_lock()` walking a wait queue.
    WakeUp(super::kernel::wait::WakeUp),
    /// `wait4()` for any child.
    Wait4(super::kernel::exit::Wait4),
    /// `do_exit()`.
    DoExit(super::kernel::exit::DoExit),
    /// `fork()`/`clone()`: `kernel_clone()`.
    KernelClone(super::kernel::fork::KernelClone),
    /// A program task's own code (a user program, or a test module's kernel thread body):
    /// [`super::programs`].
    Program(TaskFrame),
    /// `worker_thread()` of a kworker.
    Worker(super::kernel::workqueue::WorkerThread),
    /// `run_timer_softirq()`.
    RunTimerSoftirq(super::kernel::time::timer::RunTimerSoftirq),
    /// A periodic kernel thread of the background profile (`kernel/kthread.rs`).
    Kthread(super::kernel::kthread::PeriodicKthread),
}

// With its own tag word, a frame is 64 bytes only while its largest variant is at most 56.
const _: () = assert!(
    std::mem::size_of::<TaskFrame>() <= 56,
    "TaskFrame grew beyond 56 bytes: Frame would grow beyond one 64-byte line"
);

/// What a step asks the executor to do next. `repr(u8)`: a tag byte of its own at the start,
/// which the executor branches on after every step, rather than a niche inside the frame of
/// `Call` that would have to be decoded.
#[derive(Debug, Clone, Copy)]
#[repr(u8)]
pub enum Next {
    /// Run this frame's next step after the given time.
    Cont(Time),
    /// Push `Frame` and run its first step after the given time; this frame resumes when it
    /// returns.
    Call(Time, Frame),
    /// This frame returns; the caller's next step runs after the given time.
    Ret(Time),
    /// Block until woken; the same step then runs again (and re-checks its condition).
    Wait(WaitOn),
    /// The step performed a context switch (it saved and restored the task stacks itself);
    /// the new top frame runs after the given time.
    Switched(Time),
}

/// What a blocked CPU is waiting for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WaitOn {
    /// MONITOR/MWAIT on the idle task's flag line in idle state `idx`, IRQs off, break on
    /// interrupt.
    Mwait { idx: u8 },
    /// `poll_idle()`: spinning on need_resched with IRQs on.
    PollIdle,
    /// `sti; hlt` in idle state `idx` (IRQs on while halted).
    Hlt { idx: u8 },
    /// An I/O-port C-state `idx` (IRQs off; only an interrupt wakes).
    IoPort { idx: u8 },
    /// Spinning on a cache line (a csd lock word, `p->on_cpu`); woken when it is written.
    Spin,
    /// Queued on a contended spinlock; woken by the handover.
    Lock,
}

impl WaitOn {
    /// The CPU is halted while it waits: MWAIT, HLT or an I/O-port C-state stop the core's
    /// clock, so perf's `cycles` event does not count (a CPU in `poll_idle()` is running).
    #[inline]
    pub fn halts(self) -> bool {
        matches!(self, WaitOn::Mwait { .. } | WaitOn::Hlt { .. } | WaitOn::IoPort { .. })
    }
}

/// Simulator actions. A CPU's `Resume` lives in its [`Slot::Step`] and its `ApicTimer` in its
/// [`Slot::Timer`] of the action queue: whenever what the CPU is doing changes (an interrupt
/// preempts it, a wait ends, the timer is re-programmed) the slot is overwritten or emptied, so
/// no stale action is ever queued. `gen` is the generation the action was scheduled under; it
/// always matches when the action runs (checked). `repr(u32)` puts every variant's fields after
/// a 4-byte tag, so moving an action out of the queue copies whole words.
#[derive(Debug, Clone, Copy)]
#[repr(u32)]
pub enum Action {
    /// Run the next step of `cpu` (its current step's time has elapsed, or its wait ended).
    Resume { cpu: CpuId, gen: u32 },
    /// An interrupt vector arrives at `cpu`'s local APIC (in flight: the queue's heap).
    Irq { cpu: CpuId, vector: Vector },
    /// The local APIC timer of `cpu` fires (the hrtimer hardware event).
    ApicTimer { cpu: CpuId, gen: u32 },
    /// A program's own action (e.g. the module's init wakes its threads): [`Programs::on_action`].
    Program { what: u32 },
}

impl Action {
    /// The CPU this action belongs to (`u32::MAX` for a program's action): the "thread" of
    /// the interleaving explorer's per-CPU strategies (`ActionQueue::owner_of`).
    pub fn owner(&self) -> u32 {
        match *self {
            Action::Resume { cpu, .. } | Action::Irq { cpu, .. } | Action::ApicTimer { cpu, .. } => cpu,
            Action::Program { .. } => u32::MAX,
        }
    }
}

/// Where a CPU's time goes, for the per-phase breakdown.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Phase {
    /// A task's own code.
    Task = 0,
    /// Spinning in the kernel for another CPU (csd_lock_wait, lock contention).
    Spin,
    /// Asleep or polling in an idle state.
    IdleState,
    /// The idle loop's own bookkeeping (do_idle, governor, state entry/exit, tick stop/restart).
    IdleLoop,
    /// `flush_smp_call_function_queue()` from the idle task (task context).
    Flush,
    /// `__schedule()` and its callers, excluding newidle balance.
    Schedule,
    /// `sched_balance_newidle()`.
    Newidle,
    /// Hard interrupt handlers.
    HardIrq,
    /// Softirq processing.
    Softirq,
}

pub const NR_PHASES: usize = 9;

impl Phase {
    pub const ALL: [Phase; NR_PHASES] = [
        Phase::Task,
        Phase::Spin,
        Phase::IdleState,
        Phase::IdleLoop,
        Phase::Flush,
        Phase::Schedule,
        Phase::Newidle,
        Phase::HardIrq,
        Phase::Softirq,
    ];
    pub fn name(self) -> &'static str {
        match self {
            Phase::Task => "task",
            Phase::Spin => "spin",
            Phase::IdleState => "idle-state",
            Phase::IdleLoop => "idle-loop",
            Phase::Flush => "flush",
            Phase::Schedule => "schedule",
            Phase::Newidle => "newidle",
            Phase::HardIrq => "hardirq",
            Phase::Softirq => "softirq",
        }
    }
}

/// The running frame of every CPU, each in a slot of its own aligned to a host cache line
/// (simulator machinery, no kernel counterpart).
///
/// A CPU's frames are its current task's kernel frames, then interrupt frames on top. The top
/// one, which every step of the CPU reads first, lives here and the frames below it in
/// [`Exec::stack`]. Its address depends only on the CPU number, so the host loads it in
/// parallel with the CPU's `Cpu` rather than after reading where that CPU's stack is (on a
/// large machine both are usually out of cache when an action starts). A task's saved stack
/// (`Task::saved`) holds all its frames, its top one last.
///
/// Each slot is an `UnsafeCell`, reached through the raw pointer it hands out
/// ([`TopFrames::ptr`]): the running frame, which its step holds mutably, may be written through
/// that pointer while the table itself is only shared, and reading another CPU's slot does not
/// alias it.
pub struct TopFrames {
    /// A `Vec` rather than a `Box<[_]>`: a `Box` asserts unique access to its contents whenever
    /// the kernel is borrowed mutably, which the pointer the running step holds must outlive.
    slots: Vec<TopSlot>,
}

#[repr(C, align(64))]
struct TopSlot(std::cell::UnsafeCell<Frame>);

impl TopFrames {
    /// `nr` CPUs, each at the idle task's `do_idle()` (as every CPU boots).
    pub fn new(nr: usize) -> Self {
        TopFrames {
            slots: (0..nr).map(|_| TopSlot(std::cell::UnsafeCell::new(Frame::DoIdle(Default::default())))).collect(),
        }
    }

    /// The slot of CPU `ci`. The table is never resized after `Kernel::new`, so the pointer
    /// stays valid for the kernel's life.
    #[inline(always)]
    pub fn ptr(&self, ci: usize) -> *mut Frame {
        assert!(ci < self.slots.len(), "cpu {ci} has no frame slot");
        self.slots[ci].0.get()
    }

    /// The slot of CPU `ci` without a bounds check: the caller has checked `ci` against the
    /// CPU table, which `Kernel::new` builds with as many CPUs as this table (neither is ever
    /// resized).
    ///
    /// # Safety
    /// `ci < self.len()`.
    #[inline(always)]
    pub unsafe fn ptr_unchecked(&self, ci: usize) -> *mut Frame {
        debug_assert!(ci < self.slots.len());
        // SAFETY: the caller guarantees `ci` is in bounds.
        unsafe { self.slots.get_unchecked(ci).0.get() }
    }

    /// Where CPU `ci`'s slot would be, for a prefetch (never dereferenced, so any `ci` is fine).
    #[inline(always)]
    pub fn prefetch_addr(&self, ci: usize) -> *const Frame {
        self.slots.as_ptr().wrapping_add(ci) as *const Frame
    }

    /// The number of CPUs.
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    /// Whether there are no CPUs (never, for a built kernel).
    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// The running frame of CPU `ci`, for a reader outside that CPU's step.
    #[inline]
    pub fn get(&self, ci: usize) -> &Frame {
        // SAFETY: in bounds (`ptr` checks); no step of `ci` is running, so nothing holds it
        // mutably.
        unsafe { &*self.ptr(ci) }
    }

    /// Make `f` the running frame of CPU `ci` (outside that CPU's step).
    #[inline]
    pub fn set(&mut self, ci: usize, f: Frame) {
        // SAFETY: as for `get`; `&mut self` excludes other readers.
        unsafe { *self.ptr(ci) = f }
    }
}

impl std::fmt::Debug for TopFrames {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries((0..self.slots.len()).map(|c| self.get(c))).finish()
    }
}

/// All frames of CPU `ci`, its task's outermost function first and the running frame last,
/// for a reader outside that CPU's step (checks, tests).
pub fn cpu_frames(k: &Kernel, ci: usize) -> Vec<Frame> {
    let mut v = k.cpus[ci].x.stack.clone();
    v.push(*k.tops.get(ci));
    v
}

/// The bottom frame of CPU `ci` (its task's outermost function), for a reader outside that
/// CPU's step.
pub fn bottom_frame(k: &Kernel, ci: usize) -> &Frame {
    k.cpus[ci].x.stack.first().unwrap_or_else(|| k.tops.get(ci))
}

/// The executor's per-CPU state.
#[derive(Debug)]
pub struct Exec {
    /// The frames below the running one (the running one is in [`TopFrames`]): the current
    /// task's kernel frames, then interrupt frames on top.
    pub stack: Vec<Frame>,
    /// Generation; see [`Action`].
    pub gen: u32,
    /// Set while blocked.
    pub waiting: Option<WaitOn>,
    /// A Resume is scheduled for `deadline`.
    pub busy: bool,
    pub deadline: Time,
    /// Return value register for a frame's callee.
    pub ret: i64,
    /// Latched interrupt vectors (bit per [`Vector`]).
    pub pending: u8,
    /// Local interrupts disabled.
    pub irqs_off: bool,
    pub irqs_off_since: Time,
    /// The line this CPU watches while blocked (MONITOR target or spin-loop variable).
    pub watch_line: Option<crate::hw::cacheline::LineId>,
    /// Phase accounting: what the time since `acct_since` is charged to.
    pub acct_since: Time,
    pub acct_phase: Phase,
    /// The phase of the innermost `HardIrq` or `HandleSoftirqs` frame on the stack (work done
    /// above it is charged to it), or `None` outside interrupt context. Kept on push and pop of
    /// those frames and on a context switch, so the executor never walks the stack per step.
    pub irq_phase: Option<Phase>,
    /// Since when the CPU has been halted, while `waiting` is a halting wait
    /// ([`WaitOn::halts`]); the halted time is charged to `stats.halted_ns` when it ends.
    pub halted_since: Time,
}

impl Exec {
    pub fn new() -> Self {
        Exec {
            stack: Vec::with_capacity(16),
            gen: 0,
            waiting: None,
            busy: false,
            deadline: 0,
            ret: 0,
            pending: 0,
            irqs_off: false,
            irqs_off_since: 0,
            watch_line: None,
            acct_since: 0,
            acct_phase: Phase::IdleLoop,
            irq_phase: None,
            halted_since: 0,
        }
    }
}

impl Exec {
    /// An interrupt is latched and IRQs are on: the executor takes it before the next step.
    /// (`pending` is tested first: it is almost always clear, so the branch predicts well,
    /// whereas `irqs_off` flips from step to step.)
    #[inline(always)]
    pub fn irq_due(&self) -> bool {
        self.pending != 0 && !self.irqs_off
    }

    /// The frame below the running one: its caller, or for an interrupt frame the context it
    /// interrupted. The running frame is in [`TopFrames`], so this is the top of `stack`.
    #[inline]
    pub fn caller_frame_mut(&mut self) -> Option<&mut Frame> {
        self.stack.last_mut()
    }
}

impl Default for Exec {
    fn default() -> Self {
        Self::new()
    }
}

fn vector_bit(v: Vector) -> u8 {
    match v {
        Vector::LocalTimer => 1,
        Vector::CallFunctionSingle => 2,
        Vector::Reschedule => 4,
        Vector::CallFunction => 8,
    }
}

/// Highest-priority latched vector (x86 services higher vector numbers first).
fn highest_pending(p: u8) -> Option<Vector> {
    if p & 4 != 0 {
        Some(Vector::Reschedule)
    } else if p & 8 != 0 {
        Some(Vector::CallFunction)
    } else if p & 2 != 0 {
        Some(Vector::CallFunctionSingle)
    } else if p & 1 != 0 {
        Some(Vector::LocalTimer)
    } else {
        None
    }
}

/// Process one action; a program's goes to `p`.
#[inline]
pub fn dispatch<P: Programs>(k: &mut Kernel, p: &mut P, a: Action) {
    let cpu = match a {
        Action::Resume { cpu, gen } => {
            let x = &mut k.cpus[cpu as usize].x;
            assert_eq!(gen, x.gen, "cpu {cpu}: a stale Resume was queued");
            x.busy = false;
            if let Some(w) = x.waiting.take() {
                x.gen = x.gen.wrapping_add(1);
                if w.halts() {
                    end_halt(k, cpu);
                }
                release_watch(k, cpu);
            }
            cpu
        }
        Action::Irq { cpu, vector } => {
            // A local timer comes as an Irq only late, from a vCPU's expiry (below).
            let taken =
                if vector == Vector::LocalTimer { local_timer_injected(k, cpu) } else { irq_arrive(k, cpu, vector) };
            if !taken {
                return;
            }
            cpu
        }
        Action::ApicTimer { cpu, gen } => {
            assert_eq!(k.cpus[cpu as usize].tick.timer_gen, gen, "cpu {cpu}: a stale ApicTimer was queued");
            k.cpus[cpu as usize].tick.armed = None;
            if let Some(late) = k.m.costs.timer_late_running {
                if timer_expired_in_guest(k, cpu, late) {
                    return;
                }
            }
            if !irq_arrive(k, cpu, Vector::LocalTimer) {
                return;
            }
            cpu
        }
        Action::Program { what } => return p.on_action(k, what),
    };
    // The executor's one call site.
    run_cpu(k, p, cpu);
}

/// Disable local interrupts on `cpu` (`local_irq_disable()` / `local_irq_save()`).
#[inline]
pub fn local_irq_disable(k: &mut Kernel, cpu: CpuId) {
    let x = &mut k.cpus[cpu as usize].x;
    if !x.irqs_off {
        x.irqs_off = true;
        x.irqs_off_since = k.now;
        super::check::on_irqs_off(k, cpu);
    }
}

/// Enable local interrupts on `cpu`. A latched interrupt is taken by the executor right after
/// the current step's effects (at this instant).
#[inline]
pub fn local_irq_enable(k: &mut Kernel, cpu: CpuId) {
    let x = &mut k.cpus[cpu as usize].x;
    if x.irqs_off {
        x.irqs_off = false;
        let d = k.now - x.irqs_off_since;
        k.stats.irqs_off_ns[cpu as usize] += d;
        super::check::on_irqs_on(k, cpu, d);
    }
}

/// An interrupt reaches `cpu`. Returns whether it preempted the CPU (a handler frame is on
/// top, to run now).
fn irq_arrive(k: &mut Kernel, cpu: CpuId, vector: Vector) -> bool {
    let c = &mut k.cpus[cpu as usize];
    c.x.pending |= vector_bit(vector);
    match c.x.waiting {
        Some(WaitOn::Hlt { idx }) if k.m.host_halt_poll.is_some() => {
            // A KVM guest's vCPU halted in HLT, its host polling: the wake costs what
            // kvm_vcpu_halt() was doing when the interrupt came (see `hw::kvm`). A second
            // interrupt while the vCPU is already being woken changes nothing.
            if !c.x.busy {
                let t = kvm_hlt_wake(k, cpu, idx, vector == Vector::LocalTimer);
                wake_at(k, cpu, t);
            }
            false
        }
        Some(WaitOn::Mwait { idx }) | Some(WaitOn::Hlt { idx }) | Some(WaitOn::IoPort { idx }) => {
            // Leave the idle state: the hardware exit latency, then the CPU resumes the idle
            // routine (and takes the interrupt once IRQs are on).
            let s = &k.m.idle_states[idx as usize];
            let w = s.wake_by(vector == Vector::LocalTimer);
            let t = c.rng.range(w.lo_ns, w.hi_ns) + halt_extra(s, k.now - c.x.halted_since);
            wake_at(k, cpu, t);
            false
        }
        _ => !c.x.irqs_off && take_irq(k, cpu),
    }
}

/// A KVM guest's local timer expired on `cpu` (a vCPU) while it was in guest mode (running,
/// or polling: not halted in HLT or an I/O-port state, whose wake is the idle state's
/// `timer_wake_ns`): KVM makes the interrupt pending at the expiry and injects it at the
/// vCPU's next VM entry (arch/x86/kvm/lapic.c, `apic_timer_expired()`; arch/x86/kvm/x86.c,
/// `vcpu_run()` -> `kvm_inject_pending_timer_irqs()` @ v6.10), `late`
/// (`hw::HwCosts::timer_late_running`, as measured) after the expiry. Queues that delivery
/// and returns true, or false when the vCPU is halted (the caller delivers at once).
#[cold]
fn timer_expired_in_guest(k: &mut Kernel, cpu: CpuId, late: crate::hw::LatencyNs) -> bool {
    let c = &mut k.cpus[cpu as usize];
    if matches!(c.x.waiting, Some(WaitOn::Hlt { .. }) | Some(WaitOn::IoPort { .. })) {
        return false;
    }
    let t = c.rng.range(late.lo_ns, late.hi_ns);
    k.q.push(k.now + t, Action::Irq { cpu, vector: Vector::LocalTimer });
    true
}

/// The late local timer of [`timer_expired_in_guest`] reaches `cpu`. A vCPU that halted since
/// the expiry does not stay halted: the interrupt was pending at the host before the HLT
/// (`kvm_vcpu_check_block()` sees it), so the halt ends at once, without the halted wake.
/// Returns whether the interrupt preempted the CPU, as [`irq_arrive`].
#[cold]
fn local_timer_injected(k: &mut Kernel, cpu: CpuId) -> bool {
    let c = &mut k.cpus[cpu as usize];
    if !matches!(c.x.waiting, Some(WaitOn::Hlt { .. }) | Some(WaitOn::IoPort { .. })) {
        return irq_arrive(k, cpu, Vector::LocalTimer);
    }
    c.x.pending |= vector_bit(Vector::LocalTimer);
    if !c.x.busy {
        if let Some(p) = k.m.host_halt_poll {
            let halted = k.now - c.x.halted_since;
            c.vcpu_halt_poll.kvm_vcpu_halt_end(&p, halted);
        }
        wake_at(k, cpu, 0);
    }
    false
}

/// The wake latency of `cpu`, a KVM guest's vCPU halted in HLT in idle state `idx`, reached by
/// an interrupt now, with the host halt-polling (`hw::kvm::HostHaltPoll`): the polled wake if
/// the host's poll window still covers the time since the HLT, else the state's own (blocked)
/// wake (its timer wake for the local timer); then the end of `kvm_vcpu_halt()` adjusts the
/// vCPU's window by the whole halt.
#[cold]
fn kvm_hlt_wake(k: &mut Kernel, cpu: CpuId, idx: u8, local_timer: bool) -> Time {
    let Kernel { cpus, m, now, .. } = k;
    let p = m.host_halt_poll.expect("host halt-polling is on");
    let c = &mut cpus[cpu as usize];
    let halted = *now - c.x.halted_since;
    let t = if c.vcpu_halt_poll.polled(&p, halted) {
        c.rng.range(p.polled_wake.lo_ns, p.polled_wake.hi_ns)
    } else {
        let s = &m.idle_states[idx as usize];
        let w = s.wake_by(local_timer);
        c.rng.range(w.lo_ns, w.hi_ns) + halt_extra(s, halted)
    };
    c.vcpu_halt_poll.kvm_vcpu_halt_end(&p, halted + t);
    t
}

/// What a halt of `halted` adds to the wake of idle state `s` (`hw::HaltCurve`): the host side
/// of a long halt (`halt_extra`, which the guest sees as one figure) and the guest's own slower
/// path after it (`halt_refill`, charged here too: the model has no cache state); 0 for a state
/// without curves.
#[inline]
fn halt_extra(s: &crate::hw::IdleStateDesc, halted: Time) -> Time {
    let host = s.halt_extra.as_ref().map_or(0, |h| h.extra_ns(halted));
    let guest = s.halt_refill.as_ref().map_or(0, |h| h.extra_ns(halted));
    host + guest
}

/// Preempt whatever `cpu` is doing with its highest latched interrupt: push its handler's
/// frame, which the caller then runs ([`run_cpu`]). Returns false if none is latched.
fn take_irq(k: &mut Kernel, cpu: CpuId) -> bool {
    account(k, cpu);
    let now = k.now;
    let c = &mut k.cpus[cpu as usize];
    let Some(vector) = highest_pending(c.x.pending) else { return false };
    c.x.pending &= !vector_bit(vector);
    // A waiting CPU re-runs its wait step after the handler; a CPU in the middle of a step
    // resumes the rest of that step's time.
    let was = c.x.waiting.take();
    let was_waiting = was.is_some();
    let saved = if c.x.busy && !was_waiting { c.x.deadline.saturating_sub(now) } else { 0 };
    c.x.busy = false;
    if was.is_some_and(WaitOn::halts) {
        end_halt(k, cpu);
    }
    if was_waiting {
        release_watch(k, cpu);
    }
    let c = &mut k.cpus[cpu as usize];
    c.x.gen = c.x.gen.wrapping_add(1);
    // The CPU disables interrupts when it vectors through the IDT.
    c.x.irqs_off = true;
    c.x.irqs_off_since = now;
    let top = k.tops.ptr(cpu as usize);
    // SAFETY: no step of `cpu` is running (interrupts are taken between steps); the slot is
    // not in the stack's buffer.
    unsafe {
        push_frame(&mut c.x.stack, top);
        *top = Frame::HardIrq(HardIrq::new(vector, saved));
    }
    c.x.irq_phase = Some(Phase::HardIrq);
    // The interrupted step's Resume (if any) is replaced by the handler's steps.
    k.q.cancel(cpu as usize, Slot::Step);
    super::check::on_irqs_off(k, cpu);
    true
}

/// A waiter on `cpu` should re-check its condition after `delay`.
pub fn notify(k: &mut Kernel, cpu: CpuId, delay: Time) {
    let c = &mut k.cpus[cpu as usize];
    let extra = match c.x.waiting {
        None => return,
        Some(WaitOn::Mwait { idx }) => {
            let w = k.m.idle_states[idx as usize].wake;
            c.rng.range(w.lo_ns, w.hi_ns)
        }
        Some(WaitOn::Hlt { .. }) | Some(WaitOn::IoPort { .. }) => return,
        Some(_) => 0,
    };
    wake_at(k, cpu, delay + extra);
}

/// Schedule the end of `cpu`'s wait (keeps the earliest if several wake-ups race). Also used
/// by a step that is about to wait with a timeout (`poll_idle()`'s poll limit).
pub fn wake_at(k: &mut Kernel, cpu: CpuId, delay: Time) {
    let now = k.now;
    let c = &mut k.cpus[cpu as usize];
    let t = now + delay;
    if c.x.busy && c.x.deadline <= t {
        return;
    }
    c.x.busy = true;
    c.x.deadline = t;
    c.x.gen = c.x.gen.wrapping_add(1);
    let gen = c.x.gen;
    // Keep `waiting` set until the Resume runs: a later interrupt still sees the CPU asleep.
    k.q.set(cpu as usize, Slot::Step, t, Action::Resume { cpu, gen });
}

/// Stop watching lines when a wait ends.
fn release_watch(k: &mut Kernel, cpu: CpuId) {
    let c = &mut k.cpus[cpu as usize];
    if let Some(l) = c.x.watch_line.take() {
        if k.lines.watcher(l) == Some(cpu) {
            k.lines.set_watcher(l, None);
        }
    }
}

/// Charge the time since the last accounting point to the phase that was running.
///
/// The executor calls this only when a CPU's phase changes (and at interrupt entry and the end
/// of a run): a run of steps in one phase is charged once, as one interval. Reads of
/// `stats.phase_ns` during a run go through [`phase_ns_now`], which adds the open interval.
#[inline]
pub fn account(k: &mut Kernel, cpu: CpuId) {
    let now = k.now;
    let x = &mut k.cpus[cpu as usize].x;
    let d = now - x.acct_since;
    x.acct_since = now;
    k.stats.phase_ns[cpu as usize][x.acct_phase as usize] += d;
}

/// The time `cpu` has spent in `phase` up to now: the charged time plus the open interval
/// since the last accounting point if `phase` is the one running.
pub fn phase_ns_now(k: &Kernel, cpu: CpuId, phase: Phase) -> u64 {
    let x = &k.cpus[cpu as usize].x;
    let open = if x.acct_phase == phase { k.now - x.acct_since } else { 0 };
    k.stats.phase_ns[cpu as usize][phase as usize] + open
}

/// Make `p` the phase a CPU's time is charged to from now, closing the interval of the
/// previous phase if it differs (on the CPU's executor state and its row of `stats.phase_ns`).
#[inline(always)]
fn set_phase(x: &mut Exec, phase_ns: &mut [u64; NR_PHASES], now: Time, p: Phase) {
    if x.acct_phase != p {
        let d = now - x.acct_since;
        x.acct_since = now;
        phase_ns[x.acct_phase as usize] += d;
        x.acct_phase = p;
    }
}

/// A halting wait of `cpu` ends now: charge its halted time (see [`WaitOn::halts`]).
#[inline]
fn end_halt(k: &mut Kernel, cpu: CpuId) {
    let x = &mut k.cpus[cpu as usize].x;
    k.stats.halted_ns[cpu as usize] += k.now - x.halted_since;
    x.halted_since = k.now;
}

/// Close the accounting of every CPU at the end of a run.
pub fn account_all(k: &mut Kernel) {
    if let Some(t) = k.stats.overloaded_since {
        k.stats.overloaded_ns += k.now - t;
        k.stats.overloaded_since = Some(k.now);
    }
    for c in 0..k.cpus.len() as CpuId {
        account(k, c);
        if k.cpus[c as usize].x.waiting.is_some_and(WaitOn::halts) {
            end_halt(k, c);
        }
        if k.cpus[c as usize].x.irqs_off {
            let s = k.cpus[c as usize].x.irqs_off_since;
            k.stats.irqs_off_ns[c as usize] += k.now - s;
            k.cpus[c as usize].x.irqs_off_since = k.now;
        }
    }
}

/// The phase a frame's time is charged to while it runs and while it waits. Every arm is a
/// constant pair, so the match compiles to a table lookup rather than an indirect jump (it is
/// evaluated after most steps).
#[inline]
fn phase_of(f: &Frame, waiting: bool) -> Phase {
    let (running, blocked) = match f {
        Frame::DoIdle(_) | Frame::CpuidleIdleCall(_) => (Phase::IdleLoop, Phase::IdleLoop),
        Frame::EnterState(_) => (Phase::IdleLoop, Phase::IdleState),
        Frame::ScheduleCaller(_) | Frame::Schedule(_) | Frame::RetFromFork => (Phase::Schedule, Phase::Schedule),
        Frame::NewidleBalance(_) => (Phase::Newidle, Phase::Newidle),
        Frame::IdleBalance(_) => (Phase::Newidle, Phase::Newidle),
        Frame::PostScheduleIdle(_) => (Phase::Schedule, Phase::Schedule),
        Frame::FlushSmpCallFunctionQueue(_) | Frame::FlushQueue(_) | Frame::TtwuPending(_) => {
            (Phase::Flush, Phase::Flush)
        }
        Frame::HardIrq(_) => (Phase::HardIrq, Phase::HardIrq),
        Frame::HandleSoftirqs(_)
        | Frame::SchedBalanceSoftirq(_)
        | Frame::RunTimerSoftirq(_)
        | Frame::NetRxAction(_) => (Phase::Softirq, Phase::Softirq),
        Frame::Worker(_) | Frame::Kthread(_) => (Phase::Task, Phase::Task),
        Frame::SmpCallFunction(_) | Frame::TryToWakeUp(_) | Frame::WakeUp(_) => (Phase::Task, Phase::Spin),
        Frame::Ksoftirqd(_) | Frame::Program(_) | Frame::Futex(_) | Frame::Nanosleep(_) | Frame::Stopper(_) => {
            (Phase::Task, Phase::Task)
        }
        Frame::Pipe(_)
        | Frame::UnixStream(_)
        | Frame::Inet(_)
        | Frame::SockBacklog(_)
        | Frame::Poll(_)
        | Frame::Wait4(_)
        | Frame::DoExit(_) => (Phase::Task, Phase::Task),
        Frame::KernelClone(_) => (Phase::Task, Phase::Task),
    };
    if waiting {
        blocked
    } else {
        running
    }
}

/// The interrupt-context phase a frame opens: work done in hardirq/softirq context is charged
/// to those phases whatever runs inside.
#[inline]
fn irq_phase_of(f: &Frame) -> Option<Phase> {
    match f {
        Frame::HardIrq(_) => Some(Phase::HardIrq),
        Frame::HandleSoftirqs(_) => Some(Phase::Softirq),
        _ => None,
    }
}

/// The innermost interrupt-context phase of a CPU's frames: the running frame `top`, then
/// the stack below it.
fn stack_irq_phase(x: &Exec, top: &Frame) -> Option<Phase> {
    irq_phase_of(top).or_else(|| x.stack.iter().rev().find_map(irq_phase_of))
}

/// What a CPU's time is charged to from now: the innermost interrupt-context frame's phase,
/// else the running frame's (`top`).
#[inline(always)]
fn top_phase(x: &Exec, top: &Frame) -> Phase {
    if let Some(p) = x.irq_phase {
        return p;
    }
    phase_of(top, x.waiting.is_some())
}

/// Run `cpu`'s steps until it has to wait for time to pass or for something to happen.
///
/// Each step runs in place: the running frame stays in its CPU's slot of [`TopFrames`] while
/// its step function runs (no copy out and back of the frame). During a step, the frames below
/// it are reached through [`Exec::caller_frame_mut`]; the only step that changes the stack
/// itself is the context switch in `__schedule()`, which moves the frames below the running one
/// to the previous task and brings the next task's whole saved stack, and returns
/// [`Next::Switched`]: this loop then completes the swap (the running frame, `__schedule()`'s
/// own, goes on top of the previous task's saved stack, and the next task's top frame into the
/// slot). An interrupt taken between steps ([`take_irq`]) pushes its handler, which this loop
/// then runs as a fresh run of the CPU would (no recursion: [`dispatch`] is its one caller).
pub fn run_cpu<P: Programs>(k: &mut Kernel, p: &mut P, cpu: CpuId) {
    let ci = cpu as usize;
    // The CPU table is built once by `Kernel::new` and never resized (no CPU hotplug), so this
    // check made once covers the unchecked lookups of this loop.
    assert!(ci < k.cpus.len(), "cpu {cpu} does not exist");
    debug_assert_eq!(k.tops.len(), k.cpus.len());
    // The running frame's slot: its address depends on `cpu` only (the table is never resized).
    // SAFETY: `ci < k.cpus.len()`, which is `k.tops.len()` (both built by `Kernel::new` for
    // every CPU).
    let top = unsafe { k.tops.ptr_unchecked(ci) };
    // Bound the number of zero-time steps to catch a modelling loop early.
    let mut guard = 0u32;
    // `acct_phase` was computed by this call for the stack as it is now, with the CPU running.
    // A step that continues (`Next::Cont`) leaves the stack, `irq_phase` and `waiting` as they
    // were (it holds only its own frame's locals, so it cannot change its frame's kind), so the
    // phase stays right and is not recomputed. On entry it may be stale: computed while the CPU
    // waited, or before `take_irq` pushed a handler.
    let mut phase_fresh = false;
    loop {
        // The steps inline into this loop, and without this the compiler computes the address
        // of every kernel field they use once on entry and keeps it on the stack: some 36
        // instructions per call, for a loop that most calls (an action's one step) run once.
        // Taking the kernel pointer through `black_box` each iteration makes those addresses
        // per-iteration values, folded into the accesses that use them (a performance hint
        // only: the pointer is the same).
        let k = std::hint::black_box(&mut *k);
        // The CPU's executor state is looked up once before and once after each step (the step
        // itself gets the whole kernel).
        let x = exec_mut(&mut k.cpus, ci);
        // An interrupt latched while IRQs were off is taken the instant they are on again.
        if x.irq_due() {
            if !take_irq(k, cpu) {
                return;
            }
            // The handler runs now, as a fresh run of this CPU would run it.
            guard = 0;
            phase_fresh = false;
            continue;
        }
        // SAFETY: `top` is this CPU's slot. The step gets `&mut Kernel` and this frame: no step
        // reaches the running frame through the kernel (the slots are reached through raw
        // pointers, and only between steps for the running CPU; frames below it are reached
        // through `Exec::caller_frame_mut`), so the frame aliases no other access during the
        // step, and it does not move (the context switch leaves the slot alone).
        let frame: &mut Frame = unsafe { &mut *top };
        let next = step(k, p, cpu, frame);
        let now = k.now;
        let x = exec_mut(&mut k.cpus, ci);
        // SAFETY (every `*top` below): the step has returned, so nothing else holds the frame.
        let delay = match next {
            Next::Cont(t) if phase_fresh => {
                debug_assert_eq!(x.acct_phase, top_phase(x, unsafe { &*top }));
                t
            }
            Next::Cont(t) => {
                let p = top_phase(x, unsafe { &*top });
                set_phase(x, &mut k.stats.phase_ns[ci], now, p);
                phase_fresh = true;
                t
            }
            Next::Call(t, ref callee) => {
                if let Some(p) = irq_phase_of(callee) {
                    x.irq_phase = Some(p);
                }
                // The callee is the new top frame and the CPU is running.
                let p = x.irq_phase.unwrap_or_else(|| phase_of(callee, false));
                // Each frame is copied once, straight to where it goes (the caller from the slot
                // onto the stack, the callee from `next` into the slot), not through a
                // temporary.
                // SAFETY: the slot is neither in the stack's buffer nor in `next`.
                unsafe {
                    push_frame(&mut x.stack, top);
                    std::ptr::copy_nonoverlapping(callee, top, 1);
                }
                set_phase(x, &mut k.stats.phase_ns[ci], now, p);
                phase_fresh = true;
                t
            }
            Next::Ret(t) => {
                let was_irq = irq_phase_of(unsafe { &*top }).is_some();
                // SAFETY: the slot is not in the stack's buffer.
                let popped = unsafe { pop_frame(&mut x.stack, top) };
                assert!(popped, "cpu {cpu}: its outermost frame returned at {now}");
                prefetch_caller(&x.stack);
                let caller = unsafe { &*top };
                if was_irq {
                    x.irq_phase = stack_irq_phase(x, caller);
                }
                let p = top_phase(x, caller);
                set_phase(x, &mut k.stats.phase_ns[ci], now, p);
                phase_fresh = true;
                t
            }
            Next::Switched(t) => {
                // Complete the swap `context_switch()` began: the running frame (this CPU's
                // `__schedule()`, left to resume in the previous task) goes on top of the
                // previous task's saved frames, and the next task's top frame becomes the
                // running one.
                let prev = k.cpus[ci].switch_prev as usize;
                // SAFETY: the slot is not in a task's saved stack.
                unsafe { push_frame(&mut k.tasks[prev].saved, top) };
                let x = exec_mut(&mut k.cpus, ci);
                // SAFETY: as for `Next::Ret`; the next task's top frame moves into the slot.
                let popped = unsafe { pop_frame(&mut x.stack, top) };
                assert!(popped, "cpu {cpu}: switched to a task with no saved frames at {now}");
                prefetch_caller(&x.stack);
                let next_top = unsafe { &*top };
                // The switch brought the incoming stack's interrupt phase with it.
                debug_assert_eq!(x.irq_phase, stack_irq_phase(x, next_top), "cpu {cpu}: switched-in irq phase");
                let p = top_phase(x, next_top);
                set_phase(x, &mut k.stats.phase_ns[ci], now, p);
                phase_fresh = true;
                t
            }
            Next::Wait(on) => {
                x.waiting = Some(on);
                if on.halts() {
                    x.halted_since = now;
                }
                let (irqs_off, pending) = (x.irqs_off, x.pending);
                let p = top_phase(x, unsafe { &*top });
                set_phase(x, &mut k.stats.phase_ns[ci], now, p);
                if pending != 0 {
                    match on {
                        // MWAIT with a pending (even masked) interrupt, or HLT/port entry with
                        // one latched, falls straight through: no sleep.
                        WaitOn::Mwait { .. } | WaitOn::Hlt { .. } | WaitOn::IoPort { .. } => wake_at(k, cpu, 0),
                        // Taken at once (its handler runs now) if IRQs are on.
                        _ if !irqs_off && take_irq(k, cpu) => {
                            guard = 0;
                            phase_fresh = false;
                            continue;
                        }
                        _ => {}
                    }
                }
                return;
            }
        };
        let x = exec_mut(&mut k.cpus, ci);
        if delay > 0 {
            if x.irq_due() {
                // IRQs were enabled by this step with an interrupt latched: it is taken now and
                // the rest of this step's time runs after the handler.
                x.busy = true;
                x.deadline = now + delay;
                if !take_irq(k, cpu) {
                    return;
                }
                guard = 0;
                phase_fresh = false;
                continue;
            }
            let t = now + delay;
            // Run-ahead: if nothing else is due before this CPU's next step (strictly: a
            // same-time action queued earlier goes first), take the step now instead of a
            // queue round trip. The processing order is exactly the queue's, so results are
            // identical; only FIFO ordering allows it (a chooser must see every action). The
            // step must not cross the run's horizon (`Kernel::horizon`: its limit, or the start
            // of the measured window, which `World::run` opens before the first action at or
            // after it), nor go on once the programs have finished.
            if k.q.is_fifo() && k.q.none_due_by(t) && t <= k.horizon && !p.finished() {
                k.now = t;
                k.actions += 1;
                x.gen = x.gen.wrapping_add(1);
                // A Resume this CPU's own step scheduled (a wait with a timeout) is superseded.
                k.q.cancel(ci, Slot::Step);
                guard = 0;
                continue;
            }
            x.busy = true;
            x.deadline = t;
            x.gen = x.gen.wrapping_add(1);
            let gen = x.gen;
            k.q.set(ci, Slot::Step, t, Action::Resume { cpu, gen });
            return;
        }
        guard += 1;
        assert!(guard < 10_000, "cpu {cpu}: zero-time step loop at {} in {:?}", now, unsafe { &*top });
    }
}

/// Push a copy of the frame at `src` (a running-frame slot) on `stack`, copying it once,
/// straight into the stack's buffer (`Vec::push(*src)` copies it through a temporary).
///
/// # Safety
/// `src` points to a valid frame outside `stack`'s buffer.
#[inline(always)]
unsafe fn push_frame(stack: &mut Vec<Frame>, src: *const Frame) {
    let n = stack.len();
    if n == stack.capacity() {
        stack.reserve(1);
    }
    // SAFETY: `n < capacity`, so slot `n` is allocated and unused; `src` does not overlap it
    // (the caller's guarantee); a frame is `Copy`, so the copy is a valid frame.
    unsafe {
        std::ptr::copy_nonoverlapping(src, stack.as_mut_ptr().add(n), 1);
        stack.set_len(n + 1);
    }
}

/// Move the frame on top of `stack` into the running-frame slot `dst`, copying it once,
/// straight from the stack's buffer (`Vec::pop` copies it through a temporary); false, and
/// nothing moved, when `stack` is empty.
///
/// # Safety
/// `dst` points to a frame outside `stack`'s buffer that nothing else borrows.
#[inline(always)]
unsafe fn pop_frame(stack: &mut Vec<Frame>, dst: *mut Frame) -> bool {
    let Some(n) = stack.len().checked_sub(1) else { return false };
    // SAFETY: slot `n < len` holds a valid frame and does not overlap `dst` (the caller's
    // guarantee); the stack forgets it (a frame is `Copy`, there is nothing to drop).
    unsafe {
        std::ptr::copy_nonoverlapping(stack.as_ptr().add(n), dst, 1);
        stack.set_len(n);
    }
    true
}

/// Ask the host for the line of the frame on top of `stack` (a host cache hint only, see
/// [`crate::sim::prefetch`]): after a return or a context switch it is the frame the next
/// return copies into the running slot, and a task's stack buffer is often out of the host's
/// caches when the task has just been switched in.
#[inline(always)]
pub(crate) fn prefetch_caller(stack: &[Frame]) {
    // An empty stack gives an address before the buffer: harmless, a prefetch never faults.
    crate::sim::prefetch::prefetch(stack.as_ptr().wrapping_add(stack.len()).wrapping_sub(1));
}

/// The executor state of CPU `ci`, for [`run_cpu`]'s loop, which looks it up twice per step.
#[inline(always)]
fn exec_mut(cpus: &mut [super::Cpu], ci: usize) -> &mut Exec {
    debug_assert!(ci < cpus.len());
    // SAFETY: `run_cpu` asserted `ci < k.cpus.len()` on entry, and the CPU table is never
    // resized after `Kernel::new` (no step adds or removes CPUs).
    unsafe { &mut cpus.get_unchecked_mut(ci).x }
}

/// Run one step of `frame` on `cpu`.
///
/// A step that goes on at the same instant (`Next::Cont(0)`) has its frame's next step run
/// here at once, unless an interrupt is due ([`irq_due`]): exactly what [`run_cpu`]'s loop would
/// do next, without the round trip through it (half of all steps in `ipistorm` and a quarter
/// in `hackbench` are such zero-time transitions between resume points). The phase charged is
/// unchanged by a `Cont`, and no time passes, so the accounting is the same. At most
/// `ZERO_TIME_RUN` such steps run here in a row; then the executor's own zero-time guard
/// counts them.
fn step<P: Programs>(k: &mut Kernel, p: &mut P, cpu: CpuId, frame: &mut Frame) -> Next {
    use super::kernel::sched::{core, fair, idle};
    use super::kernel::{smp, softirq};
    const ZERO_TIME_RUN: u32 = 64;
    macro_rules! run {
        ($e:expr) => {{
            let mut n = 0;
            loop {
                match $e {
                    Next::Cont(0) if n < ZERO_TIME_RUN && !irq_due(k, cpu) => n += 1,
                    next => break next,
                }
            }
        }};
    }
    match frame {
        Frame::DoIdle(s) => run!(idle::do_idle(k, cpu, s)),
        Frame::CpuidleIdleCall(s) => run!(idle::cpuidle_idle_call(k, cpu, s)),
        Frame::EnterState(s) => run!(super::drivers::cpuidle::cpuidle_enter_state(k, cpu, s)),
        Frame::ScheduleCaller(s) => run!(core::schedule_caller(k, cpu, s)),
        Frame::Schedule(s) => run!(core::__schedule(k, cpu, s)),
        Frame::NewidleBalance(s) => run!(fair::sched_balance_newidle(k, cpu, s)),
        Frame::PostScheduleIdle(s) => run!(core::post_schedule_idle(k, cpu, s)),
        Frame::IdleBalance(s) => run!(fair::idle_balance(k, cpu, s)),
        Frame::SchedBalanceSoftirq(s) => run!(fair::sched_balance_softirq(k, cpu, s)),
        Frame::FlushSmpCallFunctionQueue(s) => run!(smp::flush_smp_call_function_queue(k, cpu, s)),
        Frame::FlushQueue(s) => run!(smp::__flush_smp_call_function_queue(k, cpu, s)),
        Frame::SmpCallFunction(s) => run!(smp::smp_call_function(k, cpu, s)),
        Frame::HardIrq(s) => run!(super::arch::x86::irq_handler(k, cpu, s)),
        Frame::HandleSoftirqs(s) => run!(softirq::handle_softirqs(k, cpu, s)),
        Frame::TryToWakeUp(s) => run!(core::try_to_wake_up(k, cpu, s)),
        Frame::TtwuPending(s) => run!(core::sched_ttwu_pending(k, cpu, s)),
        Frame::Ksoftirqd(s) => run!(softirq::run_ksoftirqd(k, cpu, s)),
        Frame::RetFromFork => run!(core::schedule_tail(k, cpu)),
        Frame::Futex(s) => run!(super::kernel::futex::futex(k, cpu, s)),
        Frame::Stopper(s) => run!(super::kernel::stop_machine::cpu_stopper_thread(k, cpu, s)),
        Frame::Nanosleep(s) => run!(super::kernel::futex::nanosleep(k, cpu, s)),
        Frame::Pipe(s) => run!(super::fs::pipe::pipe_op(k, cpu, s)),
        Frame::UnixStream(s) => run!(super::net::unix::unix_stream_op(k, cpu, s)),
        Frame::Inet(s) => run!(super::net::socket::inet_op(k, cpu, s)),
        Frame::NetRxAction(s) => run!(super::net::core::dev::net_rx_action(k, cpu, s)),
        Frame::SockBacklog(s) => run!(super::net::core::sock::release_sock(k, cpu, s)),
        Frame::Poll(s) => run!(super::fs::select::do_sys_poll(k, cpu, s)),
        Frame::WakeUp(s) => run!(super::kernel::wait::wake_up(k, cpu, s)),
        Frame::Wait4(s) => run!(super::kernel::exit::do_wait(k, cpu, s)),
        Frame::DoExit(s) => run!(super::kernel::exit::do_exit(k, cpu, s)),
        Frame::KernelClone(s) => run!(super::kernel::fork::kernel_clone(k, cpu, s)),
        Frame::Program(s) => run!(match super::kernel::entry::common::exit_to_user_mode_loop(k, s) {
            Some(next) => next,
            None => p.task_step(k, cpu, s),
        }),
        Frame::Worker(s) => run!(super::kernel::workqueue::worker_thread(k, cpu, s)),
        Frame::RunTimerSoftirq(s) => run!(super::kernel::time::timer::run_timer_softirq(k, cpu, s)),
        Frame::Kthread(s) => run!(super::kernel::kthread::periodic_kthread(k, cpu, s)),
    }
}

/// Whether the executor would take an interrupt on `cpu` before its next step: one is latched
/// and IRQs are on (the test at the top of [`run_cpu`]'s loop).
///
/// A step whose frame goes on at the same instant (`Next::Cont(0)`) may instead run its next
/// resume point at once when this is false: the executor would do exactly that, with nothing
/// in between, and the zero-time round trip through it is what such a step costs the
/// simulator. (When it is true, the step returns and the interrupt is taken first.)
#[inline]
pub fn irq_due(k: &Kernel, cpu: CpuId) -> bool {
    k.cpus[cpu as usize].x.irq_due()
}

/// Start watching `line` for writes by other CPUs (MONITOR, or a spin loop's reads).
pub fn watch(k: &mut Kernel, cpu: CpuId, line: crate::hw::cacheline::LineId) {
    let w = k.lines.watcher(line);
    assert!(
        w.is_none() || w == Some(cpu),
        "line {line}: CPU {cpu} watches it while CPU {w:?} does (one watcher per line)"
    );
    k.lines.set_watcher(line, Some(cpu));
    k.cpus[cpu as usize].x.watch_line = Some(line);
}

/// Send an interrupt from `from` to `to`: the target's APIC receives it after the measured
/// delivery latency. Returns the sender-side cost (the ICR write).
pub fn send_ipi(k: &mut Kernel, from: CpuId, to: CpuId, vector: Vector) -> Time {
    let d = k.m.costs.ipi_delivery;
    let t = k.cpus[from as usize].rng.range(d.lo_ns, d.hi_ns);
    k.q.push(k.now + t, Action::Irq { cpu: to, vector });
    k.m.costs.ipi_send_ns
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A frame fits one 64-byte host cache line, and so does a CPU's running-frame slot: a
    /// step's dispatch, and a push or pop of the running frame, touch one line.
    #[test]
    fn a_frame_and_its_running_slot_are_one_host_cache_line() {
        use std::mem::{align_of, size_of};
        assert!(size_of::<Frame>() <= 64, "Frame is {} bytes", size_of::<Frame>());
        assert_eq!(size_of::<TopSlot>(), 64);
        assert_eq!(align_of::<TopSlot>(), 64);
        let t = TopFrames::new(3);
        for c in 0..3 {
            let a = t.ptr(c) as usize;
            assert_eq!(a % 64, 0, "slot {c} starts mid-line");
            assert!(matches!(t.get(c), Frame::DoIdle(_)));
        }
    }
}
