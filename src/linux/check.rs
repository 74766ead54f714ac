//! Invariant checkers: the kernel's own rules about wakeups, IPIs, csds, IRQs and runqueues,
//! checked while the model runs (`schedsim run --check`, and every exploration run).
//!
//! Each [`Rule`] names the kernel rule it encodes and the kernel function that relies on it
//! ([`Rule::kernel_rule`]). The checkers only *observe*: they read kernel state and write their
//! own [`Checks`], never the model's state, the queue, the random streams or the trace, so a run
//! with checks on takes exactly the same steps as one without (`tests/checks.rs` compares
//! traces). With checks off ([`Kernel::checks`] is `None`) each hook costs one branch.
//!
//! Hooks are small calls placed at the points where the checked state changes (the `on_*`
//! functions below); each is `#[inline]` and does nothing but test `k.checks`, then calls a
//! cold out-of-line body. A violation's text ([`Violation::detail`]) is built only when it
//! fires; at most [`MAX_VIOLATIONS`] are kept, and the first instant and count of every rule
//! are kept whatever the number.

use super::kernel::sched::idle_cpu;
use super::{CpuId, Kernel, TaskId};
use crate::sim::Time;
use crate::trace::WarnSite;

/// The most violations a run keeps (the first ones); later ones are only counted.
pub const MAX_VIOLATIONS: usize = 100;

/// A checked kernel rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Rule {
    /// A task is queued on at most one runqueue, its own CPU's.
    TaskOnOneRq,
    /// `nr_running` of a runqueue equals the tasks its classes hold.
    NrRunningConserved,
    /// A woken task is enqueued and runs within [`LOST_WAKEUP_BOUND_NS`].
    LostWakeup,
    /// An idle-looking CPU is chosen for a wakee while a wakelist entry to it is in flight.
    TtwuPendingIdleChosen,
    /// `rq->ttwu_pending` is set with no wakelist entry outstanding.
    TtwuPendingStale,
    /// An IPI was left out for a CPU that does not poll its flags.
    IpiElidedNotPolling,
    /// A csd stayed locked longer than [`CSD_LOCK_BOUND_NS`].
    CsdLockHeld,
    /// A csd (or a task's wake_entry) was queued again while still locked / queued.
    CsdReusedWhileLocked,
    /// A CPU ran with IRQs off longer than [`IRQS_OFF_BOUND_NS`] (idle-state time excluded).
    IrqsOffTooLong,
    /// A CPU waited for a runqueue lock while holding a higher-ordered one.
    RqLockOrder,
    /// A CPU switched tasks holding a runqueue lock other than its own (handed over).
    RqLockAcrossSwitch,
    /// A modelled kernel `WARN_ON*` fired.
    Warn(WarnSite),
}

impl Rule {
    /// Every rule (each warning site once).
    pub fn all() -> Vec<Rule> {
        let mut v = vec![
            Rule::TaskOnOneRq,
            Rule::NrRunningConserved,
            Rule::LostWakeup,
            Rule::TtwuPendingIdleChosen,
            Rule::TtwuPendingStale,
            Rule::IpiElidedNotPolling,
            Rule::CsdLockHeld,
            Rule::CsdReusedWhileLocked,
            Rule::IrqsOffTooLong,
            Rule::RqLockOrder,
            Rule::RqLockAcrossSwitch,
        ];
        v.extend(WarnSite::ALL.iter().map(|&s| Rule::Warn(s)));
        v
    }

    /// A short kebab-case id.
    pub fn name(&self) -> &'static str {
        match self {
            Rule::TaskOnOneRq => "task-on-one-rq",
            Rule::NrRunningConserved => "nr-running-conserved",
            Rule::LostWakeup => "lost-wakeup",
            Rule::TtwuPendingIdleChosen => "ttwu-pending-idle-chosen",
            Rule::TtwuPendingStale => "ttwu-pending-stale",
            Rule::IpiElidedNotPolling => "ipi-elided-not-polling",
            Rule::CsdLockHeld => "csd-lock-held",
            Rule::CsdReusedWhileLocked => "csd-reused-while-locked",
            Rule::IrqsOffTooLong => "irqs-off-too-long",
            Rule::RqLockOrder => "rq-lock-order",
            Rule::RqLockAcrossSwitch => "rq-lock-across-switch",
            Rule::Warn(WarnSite::DoSoftirqPostSmpCallFlush) => "warn-do-softirq-post-smp-call-flush",
            Rule::Warn(WarnSite::NohzCsdFuncNoKick) => "warn-nohz-csd-func-no-kick",
        }
    }

    /// The rule from its [`Rule::name`].
    pub fn from_name(name: &str) -> Option<Rule> {
        Rule::all().into_iter().find(|r| r.name() == name)
    }

    /// The kernel rule in words, and the kernel function and file that encode or rely on it.
    pub fn kernel_rule(&self) -> &'static str {
        match self {
            Rule::TaskOnOneRq => {
                "a task is enqueued only when it is not queued (p->on_rq == 0) and dequeued only from \
                 task_cpu(p)'s runqueue: enqueue_task()/dequeue_task() in kernel/sched/core.c"
            }
            Rule::NrRunningConserved => {
                "rq->nr_running counts exactly the tasks queued in the runqueue's classes \
                 (add_nr_running()/sub_nr_running() in kernel/sched/sched.h)"
            }
            Rule::LostWakeup => {
                "try_to_wake_up() (kernel/sched/core.c) that moved a task to TASK_WAKING gets it \
                 enqueued, and a runnable task on an idle CPU is run (resched_curr() of the idle task) \
                 -- here within 10 ms of simulated time, unless its CPU is busy with other tasks"
            }
            Rule::TtwuPendingIdleChosen => {
                "a CPU with a wakelist entry in flight must not look idle: idle_cpu()/available_idle_cpu() \
                 read rq->ttwu_pending, which sched_ttwu_pending() (kernel/sched/core.c) clears only \
                 after enqueue_task(), so select_idle_sibling() (kernel/sched/fair.c) does not stack \
                 a second wakee on it (d6962c4fe8f9)"
            }
            Rule::TtwuPendingStale => {
                "rq->ttwu_pending is set by __ttwu_queue_wakelist() only together with a queued \
                 wake_entry and cleared by sched_ttwu_pending() (kernel/sched/core.c); a CPU does not \
                 enter an idle state with it set and nothing queued"
            }
            Rule::IpiElidedNotPolling => {
                "an IPI is left out only for a CPU whose idle task polls its thread flags \
                 (TIF_POLLING_NRFLAG): set_nr_and_not_polling()/set_nr_if_polling() in \
                 kernel/sched/core.c, send_call_function_single_ipi() in kernel/smp.c"
            }
            Rule::CsdLockHeld => {
                "a queued csd is unlocked by its target's __flush_smp_call_function_queue() \
                 (kernel/smp.c) within a bound (the kernel's CSD_LOCK_WAIT_DEBUG reports 5 s; here \
                 10 ms of simulated time)"
            }
            Rule::CsdReusedWhileLocked => {
                "a csd is queued only when unlocked (csd_lock() waits, smp_call_function_single_async() \
                 returns -EBUSY in kernel/smp.c); callers that own a csd serialize its use, e.g. \
                 kick_ilb() with the NOHZ_KICK_MASK bits of nohz_flags (kernel/sched/fair.c), \
                 try_to_wake_up() with p->wake_entry"
            }
            Rule::IrqsOffTooLong => {
                "no CPU runs with interrupts disabled beyond a bound: the latency the irqsoff tracer \
                 (kernel/trace/trace_irqsoff.c) measures between local_irq_disable() and \
                 local_irq_enable(); here 1 ms of simulated time, time asleep in an idle state excluded"
            }
            Rule::RqLockOrder => {
                "runqueue locks nest in CPU order: double_rq_lock()/double_lock_balance() \
                 (kernel/sched/sched.h) take the lower one first and only trylock out of order"
            }
            Rule::RqLockAcrossSwitch => {
                "only this CPU's rq lock is held across context_switch(); finish_task_switch() \
                 (kernel/sched/core.c) releases it on the next task's side"
            }
            Rule::Warn(WarnSite::DoSoftirqPostSmpCallFlush) => {
                "WARN_ON_ONCE in do_softirq_post_smp_call_flush() (kernel/softirq.c, PREEMPT_RT): \
                 the flush raised a softirq that was not pending before it"
            }
            Rule::Warn(WarnSite::NohzCsdFuncNoKick) => {
                "WARN_ON in nohz_csd_func() (kernel/sched/core.c): the ILB csd ran without a kick \
                 bit in nohz_flags"
            }
        }
    }
}

/// One observed violation of a [`Rule`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    pub rule: Rule,
    /// The simulated instant it was observed (for a bound, the instant the bound ran out).
    pub time_ns: u64,
    /// The CPU it concerns (the target of a wakeup or IPI, the CPU holding a lock, ...).
    pub cpu: u32,
    /// What was seen, in words (built only when the violation fires).
    pub detail: String,
}

/// Bound of [`Rule::LostWakeup`]: a woken task is enqueued, and a task queued on an idle CPU
/// runs, within 10 ms. The longest modelled path from `try_to_wake_up()` to the switch is an
/// IPI delivery (µs), the deepest idle state's exit latency (≤ 1 ms in the presets), a flush
/// and `__schedule()`; 10 ms is an order of magnitude above it, so only a wakeup that is
/// really lost (never enqueued, or enqueued on a CPU that stays idle) passes it.
pub const LOST_WAKEUP_BOUND_NS: Time = 10_000_000;
/// Bound of [`Rule::CsdLockHeld`] (see its kernel rule): the same 10 ms.
pub const CSD_LOCK_BOUND_NS: Time = 10_000_000;
/// Bound of [`Rule::IrqsOffTooLong`]: 1 ms.
pub const IRQS_OFF_BOUND_NS: Time = 1_000_000;

/// Per-rule summary: how many times it fired and the first instant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RuleCount {
    pub rule: Rule,
    pub count: u64,
    pub first_ns: u64,
    pub first_cpu: u32,
}

/// What the checkers remember of a task.
#[derive(Debug, Clone, Copy, Default)]
struct TaskCheck {
    /// The CPU whose wakelist holds this task's `wake_entry` (queued, not yet activated).
    wakelist: Option<CpuId>,
    /// When `try_to_wake_up()` set TASK_WAKING, until the task is enqueued (or reported).
    woken_at: Option<Time>,
}

/// What the checkers remember of a CPU.
#[derive(Debug, Clone, Default)]
struct CpuCheck {
    /// Wakelist entries queued to this CPU and not yet activated by `sched_ttwu_pending()`.
    wakelist: u32,
    /// Since when the idle task is current with tasks queued (they must get the CPU).
    idle_with_work_since: Option<Time>,
    /// When IRQs went off and the time spent in idle states (`Phase::IdleState`) then.
    irqs_off_idle_ns: Option<(Time, u64)>,
    /// Runqueue locks held, in acquisition order.
    held: Vec<CpuId>,
}

/// Checker state of a run.
#[derive(Debug, Default)]
pub struct Checks {
    /// The first [`MAX_VIOLATIONS`] violations, in the order observed.
    pub violations: Vec<Violation>,
    /// Every rule that fired, in the order first reported (a bound is reported when it is
    /// checked, with the instant it ran out), with its count and first instant.
    pub counts: Vec<RuleCount>,
    cpus: Vec<CpuCheck>,
    /// Indexed by [`TaskId`]; grows as tasks are created.
    tasks: Vec<TaskCheck>,
    /// Wakeups to look at again when their bound runs out: (deadline, task, woken at), in
    /// deadline order (the bound is one constant).
    wake_deadlines: std::collections::VecDeque<(Time, TaskId, Time)>,
    /// When each csd was locked (`Time::MAX`: unlocked), indexed by [`super::CsdId`].
    csd_locked: Vec<Time>,
}

impl Checks {
    /// Checker state for the machine `k` (sized by its CPUs).
    pub fn new(k: &Kernel) -> Checks {
        Checks { cpus: vec![CpuCheck::default(); k.m.topo.nr_cpus as usize], ..Checks::default() }
    }

    fn csd(&mut self, csd: super::CsdId) -> &mut Time {
        let i = csd as usize;
        if i >= self.csd_locked.len() {
            self.csd_locked.resize(i + 1, Time::MAX);
        }
        &mut self.csd_locked[i]
    }

    fn task(&mut self, p: TaskId) -> &mut TaskCheck {
        let i = p as usize;
        if i >= self.tasks.len() {
            self.tasks.resize(i + 1, TaskCheck::default());
        }
        &mut self.tasks[i]
    }

    /// Record a violation; `detail` runs only if the violation is kept.
    #[cold]
    #[inline(never)]
    pub fn report(&mut self, rule: Rule, time_ns: u64, cpu: u32, detail: impl FnOnce() -> String) {
        match self.counts.iter_mut().find(|c| c.rule == rule) {
            Some(c) => c.count += 1,
            None => self.counts.push(RuleCount { rule, count: 1, first_ns: time_ns, first_cpu: cpu }),
        }
        if self.violations.len() < MAX_VIOLATIONS {
            self.violations.push(Violation { rule, time_ns, cpu, detail: detail() });
        }
    }

    /// How many times `rule` fired.
    pub fn count(&self, rule: Rule) -> u64 {
        self.counts.iter().find(|c| c.rule == rule).map_or(0, |c| c.count)
    }

    /// The first instant `rule` fired.
    pub fn first(&self, rule: Rule) -> Option<u64> {
        self.counts.iter().find(|c| c.rule == rule).map(|c| c.first_ns)
    }

    /// The earliest violation of any rule.
    pub fn first_violation(&self) -> Option<&Violation> {
        self.violations.iter().min_by_key(|v| v.time_ns)
    }
}

// ---------------------------------------------------------------------------------------
// Hooks. Each is a branch on `k.checks` and, when checks are on, a cold call.
// ---------------------------------------------------------------------------------------

/// Take the checker state out of the kernel for a hook's body (so the body can read the
/// kernel freely) and put it back.
#[inline]
fn with(k: &mut Kernel, f: impl FnOnce(&Kernel, &mut Checks)) {
    if let Some(mut c) = k.checks.take() {
        f(k, &mut c);
        k.checks = Some(c);
    }
}

/// A modelled `WARN_ON*` fired at `site` on `cpu` (every firing, not only the first).
#[inline]
pub fn on_warn(k: &mut Kernel, cpu: CpuId, site: WarnSite) {
    if k.checks.is_some() {
        warn_slow(k, cpu, site);
    }
}

#[cold]
#[inline(never)]
fn warn_slow(k: &mut Kernel, cpu: CpuId, site: WarnSite) {
    with(k, |k, c| {
        c.report(Rule::Warn(site), k.now, cpu, || format!("{site:?} fired on CPU {cpu}"));
    });
}

// ----- ttwu_pending and the wakelist (Rule::TtwuPendingIdleChosen, TtwuPendingStale) -----

/// `__ttwu_queue_wakelist()` on `cpu` queues `p`'s wake_entry to `target` (after setting
/// `ttwu_pending`). A wake_entry already queued is a reused csd.
#[inline]
pub fn on_wakelist_queue(k: &mut Kernel, cpu: CpuId, p: TaskId, target: CpuId) {
    if k.checks.is_some() {
        wakelist_queue_slow(k, cpu, p, target);
    }
}

#[cold]
#[inline(never)]
fn wakelist_queue_slow(k: &mut Kernel, cpu: CpuId, p: TaskId, target: CpuId) {
    with(k, |k, c| {
        if let Some(q) = c.task(p).wakelist {
            let pid = k.tasks[p as usize].pid;
            c.report(Rule::CsdReusedWhileLocked, k.now, target, || {
                format!(
                    "CPU {cpu} queued the wake_entry of pid {pid} to CPU {target} while it is still queued to CPU {q}"
                )
            });
            c.cpus[q as usize].wakelist = c.cpus[q as usize].wakelist.saturating_sub(1);
        }
        c.task(p).wakelist = Some(target);
        c.cpus[target as usize].wakelist += 1;
    });
}

/// `sched_ttwu_pending()` on `cpu` has enqueued `p` (`ttwu_do_activate()`).
#[inline]
pub fn on_wakelist_activate(k: &mut Kernel, cpu: CpuId, p: TaskId) {
    if k.checks.is_some() {
        wakelist_activate_slow(k, cpu, p);
    }
}

#[cold]
#[inline(never)]
fn wakelist_activate_slow(k: &mut Kernel, cpu: CpuId, p: TaskId) {
    with(k, |_k, c| {
        if c.task(p).wakelist.take().is_some() {
            c.cpus[cpu as usize].wakelist = c.cpus[cpu as usize].wakelist.saturating_sub(1);
        }
    });
}

/// `try_to_wake_up()` on `cpu` chose `target` for `p`; `selected`: the class's
/// `select_task_rq()` chose it (the task may run on several CPUs), so an idle-looking target
/// was chosen *because* it looked idle. Fires [`Rule::TtwuPendingIdleChosen`] if the target
/// looks idle (`idle_cpu()`) while a wakelist entry to it is still in flight.
#[inline]
pub fn on_wakee_placed(k: &mut Kernel, cpu: CpuId, p: TaskId, target: CpuId, selected: bool) {
    if selected && k.checks.is_some() {
        wakee_placed_slow(k, cpu, p, target);
    }
}

#[cold]
#[inline(never)]
fn wakee_placed_slow(k: &mut Kernel, cpu: CpuId, p: TaskId, target: CpuId) {
    with(k, |k, c| {
        let inflight = c.cpus[target as usize].wakelist;
        if inflight == 0 || !idle_cpu(k, target) {
            return;
        }
        let pid = k.tasks[p as usize].pid;
        c.report(Rule::TtwuPendingIdleChosen, k.now, target, || {
            format!(
                "CPU {cpu} chose CPU {target} for pid {pid}: it looks idle (curr idle, nr_running 0, \
                 ttwu_pending 0) with {inflight} wakelist entr{} not yet enqueued",
                if inflight == 1 { "y" } else { "ies" }
            )
        });
    });
}

/// `cpu` is about to enter an idle state (`cpuidle_enter_state()`): it must not have
/// `ttwu_pending` set with nothing queued ([`Rule::TtwuPendingStale`]).
#[inline]
pub fn on_idle_enter(k: &mut Kernel, cpu: CpuId) {
    if k.checks.is_some() {
        idle_enter_slow(k, cpu);
    }
}

#[cold]
#[inline(never)]
fn idle_enter_slow(k: &mut Kernel, cpu: CpuId) {
    with(k, |k, c| {
        if k.cpus[cpu as usize].rq.ttwu_pending && c.cpus[cpu as usize].wakelist == 0 {
            c.report(Rule::TtwuPendingStale, k.now, cpu, || {
                format!("CPU {cpu} enters an idle state with ttwu_pending set and no wakelist entry queued")
            });
        }
    });
}

// ----- IPI elision (Rule::IpiElidedNotPolling) -----

/// `cpu` left out the IPI to `target` because its thread flags said it polls
/// (`set_nr_if_polling()` / `set_nr_and_not_polling()` succeeded). The kernel rule behind the
/// elision (e3baac47f0e8, with 82c65d60d644): TIF_POLLING_NRFLAG is set only while the idle task
/// runs its idle loop and will test NEED_RESCHED before sleeping. The check does not read the
/// flag: it reads where the target's idle task is (its `do_idle()` frame between the loop test
/// and the idle call) and that it is not asleep in a state that ignores its flag line.
#[inline]
pub fn on_ipi_elided(k: &mut Kernel, cpu: CpuId, target: CpuId) {
    if k.checks.is_some() {
        ipi_elided_slow(k, cpu, target);
    }
}

#[cold]
#[inline(never)]
fn ipi_elided_slow(k: &mut Kernel, cpu: CpuId, target: CpuId) {
    use super::engine::{Frame, WaitOn};
    use super::kernel::sched::idle::DoIdleAt;
    with(k, |k, c| {
        let t = &k.cpus[target as usize];
        let why = if t.rq.curr != t.rq.idle {
            Some(format!("CPU {target} runs pid {}, its idle task is switched out", k.tasks[t.rq.curr as usize].pid))
        } else if matches!(t.x.waiting, Some(WaitOn::Hlt { .. }) | Some(WaitOn::IoPort { .. })) {
            Some(format!("CPU {target} sleeps in an idle state that does not watch its flags"))
        } else {
            match super::engine::bottom_frame(k, target as usize) {
                Frame::DoIdle(d) if matches!(d.at, DoIdleAt::LoopCheck | DoIdleAt::AfterIdleCall) => None,
                Frame::DoIdle(d) => Some(format!(
                    "CPU {target}'s idle task has left its idle loop (do_idle at {:?}): it will not test NEED_RESCHED again before it sleeps",
                    d.at
                )),
                _ => Some(format!("CPU {target}'s idle task is not in do_idle()")),
            }
        };
        if let Some(why) = why {
            c.report(Rule::IpiElidedNotPolling, k.now, target, || {
                format!("CPU {cpu} left out the IPI to CPU {target}: {why}")
            });
        }
    });
}

// ----- Runqueue membership (Rule::TaskOnOneRq, NrRunningConserved) and lost wakeups -----

/// `p` is about to be enqueued on `rq_cpu` (`activate_task()`, the stopper's wakeup).
#[inline]
pub fn on_enqueue(k: &mut Kernel, rq_cpu: CpuId, p: TaskId) {
    if k.checks.is_some() {
        enqueue_slow(k, rq_cpu, p);
    }
}

#[cold]
#[inline(never)]
fn enqueue_slow(k: &mut Kernel, rq_cpu: CpuId, p: TaskId) {
    with(k, |k, c| {
        let t = &k.tasks[p as usize];
        if t.on_rq {
            let (pid, on) = (t.pid, t.cpu);
            c.report(Rule::TaskOnOneRq, k.now, rq_cpu, || {
                format!("pid {pid} enqueued on CPU {rq_cpu} while still queued (on_rq) on CPU {on}")
            });
        }
        if let Some(w) = c.task(p).woken_at.take() {
            if k.now - w > LOST_WAKEUP_BOUND_NS {
                let pid = t.pid;
                c.report(Rule::LostWakeup, w + LOST_WAKEUP_BOUND_NS, rq_cpu, || {
                    format!("pid {pid} woken at {w} ns was enqueued on CPU {rq_cpu} only {} ns later", k.now - w)
                });
            }
        }
    });
}

/// `p` is about to be dequeued from `rq_cpu` (`deactivate_task()`).
#[inline]
pub fn on_dequeue(k: &mut Kernel, rq_cpu: CpuId, p: TaskId) {
    if k.checks.is_some() {
        dequeue_slow(k, rq_cpu, p);
    }
}

#[cold]
#[inline(never)]
fn dequeue_slow(k: &mut Kernel, rq_cpu: CpuId, p: TaskId) {
    with(k, |k, c| {
        let t = &k.tasks[p as usize];
        if !t.on_rq || t.cpu != rq_cpu {
            let (pid, on, cpu) = (t.pid, t.on_rq, t.cpu);
            c.report(Rule::TaskOnOneRq, k.now, rq_cpu, || {
                format!("pid {pid} dequeued from CPU {rq_cpu} but on_rq={on} task_cpu={cpu}")
            });
        }
    });
}

/// `rq_cpu`'s runqueue changed (after an enqueue or dequeue): its counts must add up, and an
/// idle CPU with queued tasks starts its clock.
#[inline]
pub fn on_rq_changed(k: &mut Kernel, rq_cpu: CpuId) {
    if k.checks.is_some() {
        rq_changed_slow(k, rq_cpu);
    }
}

#[cold]
#[inline(never)]
fn rq_changed_slow(k: &mut Kernel, rq_cpu: CpuId) {
    with(k, |k, c| {
        let rq = &k.cpus[rq_cpu as usize].rq;
        let classes = rq.cfs_h_nr_running + rq.rt.nr_running() + rq.stop_runnable as u32;
        if rq.nr_running != classes {
            let (n, f, r, st) = (rq.nr_running, rq.cfs_h_nr_running, rq.rt.nr_running(), rq.stop_runnable);
            c.report(Rule::NrRunningConserved, k.now, rq_cpu, || {
                format!("CPU {rq_cpu}: nr_running {n} but fair {f} + rt {r} + stop {}", st as u32)
            });
        }
        let cc = &mut c.cpus[rq_cpu as usize];
        if rq.nr_running == 0 {
            cc.idle_with_work_since = None;
        } else if rq.curr == rq.idle && cc.idle_with_work_since.is_none() {
            cc.idle_with_work_since = Some(k.now);
        }
    });
    expire(k);
}

/// `try_to_wake_up()` on `cpu` moved `p` to TASK_WAKING: it must be enqueued within the bound.
#[inline]
pub fn on_waking(k: &mut Kernel, p: TaskId) {
    if k.checks.is_some() {
        waking_slow(k, p);
    }
}

#[cold]
#[inline(never)]
fn waking_slow(k: &mut Kernel, p: TaskId) {
    with(k, |k, c| {
        c.task(p).woken_at = Some(k.now);
        c.wake_deadlines.push_back((k.now + LOST_WAKEUP_BOUND_NS, p, k.now));
    });
    expire(k);
}

/// `cpu` switches from `prev` to `next` (`context_switch()`): only `cpu`'s own rq lock may be
/// held, and an idle CPU that had work now runs it.
#[inline]
pub fn on_switch(k: &mut Kernel, cpu: CpuId, prev: TaskId, next: TaskId) {
    if k.checks.is_some() {
        switch_slow(k, cpu, prev, next);
    }
}

#[cold]
#[inline(never)]
fn switch_slow(k: &mut Kernel, cpu: CpuId, prev: TaskId, next: TaskId) {
    with(k, |k, c| {
        let held = &c.cpus[cpu as usize].held;
        if held.as_slice() != [cpu] {
            let held = held.clone();
            c.report(Rule::RqLockAcrossSwitch, k.now, cpu, || {
                format!("CPU {cpu} switches tasks holding rq locks {held:?} (only its own may be handed over)")
            });
        }
        let idle = k.cpus[cpu as usize].rq.idle;
        if prev == idle && next != idle {
            if let Some(since) = c.cpus[cpu as usize].idle_with_work_since.take() {
                if k.now - since > LOST_WAKEUP_BOUND_NS {
                    c.report(Rule::LostWakeup, since + LOST_WAKEUP_BOUND_NS, cpu, || {
                        format!("CPU {cpu} stayed idle {} ns with a task queued", k.now - since)
                    });
                }
            }
        }
    });
}

/// Look at wakeups and idle CPUs whose bound ran out (lazily, from the hooks; the instant
/// reported is the one the bound ran out, so it does not depend on when this runs).
fn expire(k: &mut Kernel) {
    with(k, |k, c| {
        while let Some(&(deadline, p, w)) = c.wake_deadlines.front() {
            if deadline > k.now {
                break;
            }
            c.wake_deadlines.pop_front();
            if c.task(p).woken_at == Some(w) {
                c.task(p).woken_at = None;
                let (pid, st) = (k.tasks[p as usize].pid, k.tasks[p as usize].state);
                c.report(Rule::LostWakeup, deadline, k.tasks[p as usize].cpu, || {
                    format!("pid {pid} woken at {w} ns is not enqueued {LOST_WAKEUP_BOUND_NS} ns later (state {st:#x})")
                });
            }
        }
    });
}

// ----- csd locks (Rule::CsdLockHeld, CsdReusedWhileLocked) -----

/// `cpu` sets CSD_FLAG_LOCK on `csd` (`csd_lock()`, `irq_work_claim()`, the async claim).
#[inline]
pub fn on_csd_lock(k: &mut Kernel, csd: super::CsdId) {
    if k.checks.is_some() {
        with(k, |k, c| *c.csd(csd) = k.now);
    }
}

/// `cpu` clears CSD_FLAG_LOCK on `csd` (`csd_unlock()`).
#[inline]
pub fn on_csd_unlock(k: &mut Kernel, cpu: CpuId, csd: super::CsdId) {
    if k.checks.is_some() {
        csd_unlock_slow(k, cpu, csd);
    }
}

#[cold]
#[inline(never)]
fn csd_unlock_slow(k: &mut Kernel, cpu: CpuId, csd: super::CsdId) {
    with(k, |k, c| {
        let since = std::mem::replace(c.csd(csd), Time::MAX);
        if since != Time::MAX && k.now - since > CSD_LOCK_BOUND_NS {
            let func = k.csds[csd as usize].func;
            c.report(Rule::CsdLockHeld, since + CSD_LOCK_BOUND_NS, cpu, || {
                format!("csd of {func:?} locked at {since} ns, unlocked by CPU {cpu} {} ns later", k.now - since)
            });
        }
    });
}

/// `cpu` found `csd`, which its caller owns by its own serialization, still locked.
#[inline]
pub fn on_csd_busy(k: &mut Kernel, cpu: CpuId, target: CpuId, csd: super::CsdId) {
    if k.checks.is_some() {
        with(k, |k, c| {
            let func = k.csds[csd as usize].func;
            c.report(Rule::CsdReusedWhileLocked, k.now, target, || {
                format!("CPU {cpu} found the csd of {func:?} for CPU {target} still locked (-EBUSY): its owner's serialization failed")
            });
        });
    }
}

// ----- IRQs off (Rule::IrqsOffTooLong) -----

/// `cpu` disabled interrupts (they were on).
#[inline]
pub fn on_irqs_off(k: &mut Kernel, cpu: CpuId) {
    if k.checks.is_some() {
        with(k, |k, c| {
            let idle = super::engine::phase_ns_now(k, cpu, super::engine::Phase::IdleState);
            c.cpus[cpu as usize].irqs_off_idle_ns = Some((k.now, idle));
        });
    }
}

/// `cpu` enables interrupts after `off_ns` with them off.
#[inline]
pub fn on_irqs_on(k: &mut Kernel, cpu: CpuId, off_ns: Time) {
    if off_ns > IRQS_OFF_BOUND_NS && k.checks.is_some() {
        irqs_on_slow(k, cpu, off_ns);
    }
}

#[cold]
#[inline(never)]
fn irqs_on_slow(k: &mut Kernel, cpu: CpuId, off_ns: Time) {
    with(k, |k, c| {
        let Some((t_off, at_off)) = c.cpus[cpu as usize].irqs_off_idle_ns.take() else { return };
        if t_off < k.measure_from && k.now >= k.measure_from {
            // The counters restarted when the measured window opened: the split is unknown.
            return;
        }
        let idle = super::engine::phase_ns_now(k, cpu, super::engine::Phase::IdleState);
        let Some(asleep) = idle.checked_sub(at_off) else { return };
        let awake = off_ns.saturating_sub(asleep);
        if awake > IRQS_OFF_BOUND_NS {
            let since = k.now - off_ns;
            c.report(Rule::IrqsOffTooLong, since + IRQS_OFF_BOUND_NS, cpu, || {
                format!("CPU {cpu} ran {awake} ns with IRQs off (from {since} ns; {asleep} ns asleep excluded)")
            });
        }
    });
}

// ----- rq locks (Rule::RqLockOrder; RqLockAcrossSwitch in on_switch) -----

/// `cpu` acquired `rq_cpu`'s lock.
#[inline]
pub fn on_rq_lock(k: &mut Kernel, cpu: CpuId, rq_cpu: CpuId) {
    if k.checks.is_some() {
        with(k, |_k, c| {
            let held = &mut c.cpus[cpu as usize].held;
            if !held.contains(&rq_cpu) {
                held.push(rq_cpu);
            }
        });
    }
}

/// `cpu` queues behind the owner of `rq_cpu`'s lock: it must not hold a lock ordered after it.
#[inline]
pub fn on_rq_lock_wait(k: &mut Kernel, cpu: CpuId, rq_cpu: CpuId) {
    if k.checks.is_some() {
        with(k, |k, c| {
            let held = &c.cpus[cpu as usize].held;
            if let Some(&h) = held.iter().find(|&&h| h > rq_cpu) {
                c.report(Rule::RqLockOrder, k.now, cpu, || {
                    format!("CPU {cpu} waits for CPU {rq_cpu}'s rq lock while holding CPU {h}'s")
                });
            }
        });
    }
}

/// `cpu` released `rq_cpu`'s lock.
#[inline]
pub fn on_rq_unlock(k: &mut Kernel, cpu: CpuId, rq_cpu: CpuId) {
    if k.checks.is_some() {
        with(k, |_k, c| c.cpus[cpu as usize].held.retain(|&h| h != rq_cpu));
    }
}

/// The end of a run: the bounds still running and the full runqueue invariants.
pub fn on_run_end(k: &mut Kernel) {
    if k.checks.is_some() {
        run_end_slow(k);
    }
}

#[cold]
#[inline(never)]
fn run_end_slow(k: &mut Kernel) {
    expire(k);
    with(k, |k, c| {
        for cpu in 0..c.cpus.len() {
            if let Some(since) = c.cpus[cpu].idle_with_work_since {
                if k.now - since > LOST_WAKEUP_BOUND_NS && k.cpus[cpu].rq.curr == k.cpus[cpu].rq.idle {
                    c.cpus[cpu].idle_with_work_since = None;
                    c.report(Rule::LostWakeup, since + LOST_WAKEUP_BOUND_NS, cpu as u32, || {
                        format!("CPU {cpu} idle since {since} ns with {} tasks queued", k.cpus[cpu].rq.nr_running)
                    });
                }
            }
        }
        for csd in 0..c.csd_locked.len() {
            let since = c.csd_locked[csd];
            if since != Time::MAX && k.now - since > CSD_LOCK_BOUND_NS {
                c.csd_locked[csd] = Time::MAX;
                let func = k.csds[csd].func;
                c.report(Rule::CsdLockHeld, since + CSD_LOCK_BOUND_NS, 0, || {
                    format!("csd of {func:?} locked at {since} ns is still locked at the end ({} ns)", k.now)
                });
            }
        }
        for cpu in 0..c.cpus.len() {
            let Some((t_off, at_off)) = c.cpus[cpu].irqs_off_idle_ns else { continue };
            if !k.cpus[cpu].x.irqs_off || (t_off < k.measure_from && k.now >= k.measure_from) {
                continue;
            }
            let idle = super::engine::phase_ns_now(k, cpu as CpuId, super::engine::Phase::IdleState);
            let asleep = idle.saturating_sub(at_off);
            let awake = (k.now - t_off).saturating_sub(asleep);
            if awake > IRQS_OFF_BOUND_NS {
                c.cpus[cpu].irqs_off_idle_ns = None;
                c.report(Rule::IrqsOffTooLong, t_off + IRQS_OFF_BOUND_NS, cpu as u32, || {
                    format!("CPU {cpu} has had IRQs off since {t_off} ns, {awake} ns awake, at the end of the run")
                });
            }
        }
        if let Err(e) = k.check_invariants() {
            // check_invariants() names a CPU for a count mismatch, a task otherwise.
            let rule = if e.starts_with("CPU ") { Rule::NrRunningConserved } else { Rule::TaskOnOneRq };
            c.report(rule, k.now, 0, || format!("at the end of the run: {e}"));
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_kebab_case_and_resolve() {
        let all = Rule::all();
        for r in &all {
            let n = r.name();
            assert!(n.chars().all(|c| c.is_ascii_lowercase() || c == '-'), "{n}");
            assert_eq!(all.iter().filter(|q| q.name() == n).count(), 1, "{n}");
            assert_eq!(Rule::from_name(n), Some(*r));
            assert!(r.kernel_rule().contains("kernel/"), "{n}: the kernel rule names its file");
        }
    }

    #[test]
    fn report_keeps_the_first_violations_and_counts_all() {
        let mut c = Checks::default();
        let mut built = 0;
        for i in 0..(MAX_VIOLATIONS as u64 + 5) {
            c.report(Rule::LostWakeup, 100 + i, 1, || {
                built += 1;
                "x".into()
            });
        }
        c.report(Rule::RqLockOrder, 7, 2, || "y".into());
        assert_eq!(c.violations.len(), MAX_VIOLATIONS);
        assert_eq!(built, MAX_VIOLATIONS, "details are built only for kept violations");
        assert_eq!(c.count(Rule::LostWakeup), MAX_VIOLATIONS as u64 + 5);
        assert_eq!(c.first(Rule::LostWakeup), Some(100));
        assert_eq!(c.count(Rule::RqLockOrder), 1);
        assert_eq!(c.first(Rule::RqLockOrder), Some(7));
        assert_eq!(c.count(Rule::TaskOnOneRq), 0);
    }
}
