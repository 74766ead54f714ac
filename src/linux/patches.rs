//! Upstream patches as switches, keyed by commit id (or, for RFCs that were never merged, by
//! their posting). Each row names exactly one code path change; the model reads
//! `k.cfg.has(Patch::X)` at the place the patch touches.

/// One row of the patch table.
#[derive(Debug)]
pub struct PatchInfo {
    pub patch: Patch,
    /// Commit id (12 hex digits) or the RFC's key.
    pub id: &'static str,
    pub subject: &'static str,
    /// Kernel release it was merged for, or where it was posted.
    pub merged: &'static str,
    /// Patches this one cannot be combined with.
    pub conflicts: &'static [Patch],
    /// Patches this one builds on.
    pub requires: &'static [Patch],
}

/// The patch table, written once: each row gives the `Patch` variant (its doc says what the
/// model changes) and the row's id, subject, release, conflicts and requirements. The enum
/// and [`PATCHES`] are generated together, in this order, so a variant without a row cannot
/// exist and `Patch::info` is an index. The order is also the order of a kernel label's deltas.
macro_rules! patches {
    ($(
        $(#[doc = $doc:literal])*
        $name:ident {
            id: $id:literal,
            subject: $subject:literal,
            merged: $merged:literal,
            conflicts: [$($conflict:ident),*],
            requires: [$($require:ident),*],
        }
    )*) => {
        /// A modelled patch.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum Patch { $( $(#[doc = $doc])* $name ),* }

        /// Every patch, in `Patch` order (row `i` is the variant with discriminant `i`).
        pub const PATCHES: &[PatchInfo] = &[$(
            PatchInfo {
                patch: Patch::$name,
                id: $id,
                subject: $subject,
                merged: $merged,
                conflicts: &[$(Patch::$conflict),*],
                requires: &[$(Patch::$require),*],
            }
        ),*];
    };
}

patches! {
    /// b2a02fc43a1f: `send_call_function_single_ipi()` sets NEED_RESCHED on a polling idle
    /// CPU instead of sending an IPI (kernel/smp.c, `call_function_single_prep_ipi()`).
    B2a02fc43a1f {
        id: "b2a02fc43a1f",
        subject: "smp: Optimize send_call_function_single_ipi()",
        merged: "v5.8",
        conflicts: [],
        requires: [],
    }
    /// 3dcac251b066: `schedule_idle()` passes SM_IDLE; `__schedule()` skips the pick when the
    /// idle task reschedules with nothing runnable.
    Sm3dcac251b066 {
        id: "3dcac251b066",
        subject: "sched/core: Introduce SM_IDLE and an idle re-entry fast-path in __schedule()",
        merged: "v6.12",
        conflicts: [],
        requires: [],
    }
    /// f3dd3f674555: `ttwu_queue_cond()` queues on the wakelist whenever the target is idle;
    /// before it, a same-LLC wakeup used the wakelist only for a task still on its CPU
    /// (WF_ON_CPU) with at most one task there.
    F3dd3f674555 {
        id: "f3dd3f674555",
        subject: "sched: Remove the limitation of WF_ON_CPU on wakelist if wakee cpu is idle",
        merged: "v6.0",
        conflicts: [],
        requires: [],
    }
    /// d6962c4fe8f9: `sched_ttwu_pending()` clears `rq->ttwu_pending` after the enqueue;
    /// before it, the flag was cleared before taking the rq lock.
    D6962c4fe8f9 {
        id: "d6962c4fe8f9",
        subject: "sched: Clear ttwu_pending after enqueue_task()",
        merged: "v6.2",
        conflicts: [],
        requires: [],
    }
    /// ea9cffc0a154: `nohz_csd_func()` no longer requires `!need_resched()` before raising
    /// SCHED_SOFTIRQ (a polling kick set NEED_RESCHED only to deliver the csd).
    Ea9cffc0a154 {
        id: "ea9cffc0a154",
        subject: "sched/core: Remove the unnecessary need_resched() check in nohz_csd_func()",
        merged: "v6.13",
        conflicts: [],
        requires: [],
    }
    /// ff47a0acfcce: `_nohz_idle_balance()` aborts only if this CPU is really busy
    /// (`!idle_cpu() && need_resched()`), not on a bare NEED_RESCHED.
    Ff47a0acfcce {
        id: "ff47a0acfcce",
        subject: "sched/fair: Check idle_cpu() before need_resched() to detect ilb CPU turning busy",
        merged: "v6.13",
        conflicts: [],
        requires: [],
    }
    /// e932c4ab38f0: `nohz_csd_func()` raises SCHED_SOFTIRQ with `__raise_softirq_irqoff()`,
    /// so a kick delivered to a polling CPU's idle task does not wake ksoftirqd.
    E932c4ab38f0 {
        id: "e932c4ab38f0",
        subject: "sched/core: Prevent wakeup of ksoftirqd during idle load balance",
        merged: "v6.13",
        conflicts: [],
        requires: [],
    }
    /// 6675ce20046d: on PREEMPT_RT, `do_softirq_post_smp_call_flush()` does not warn about
    /// SCHED_SOFTIRQ raised by the flush.
    S6675ce20046d {
        id: "6675ce20046d",
        subject: "softirq: Allow raising SCHED_SOFTIRQ from SMP-call-function on RT kernel",
        merged: "v6.13",
        conflicts: [],
        requires: [],
    }
    /// The TIF_NOTIFY_IPI RFC: polling CPUs are told of a pending IPI with TIF_NOTIFY_IPI, and
    /// the idle loop calls `schedule_idle()` only for a real NEED_RESCHED.
    TifNotifyIpiRfc {
        id: "rfc-tif-notify-ipi",
        subject: "[RFC] sched: Introduce TIF_NOTIFY_IPI (posted 2024-02-20)",
        merged: "not merged",
        conflicts: [],
        requires: [],
    }
    /// Softirq RFC v1 (patch 3/3 of the 2024-07 series): a per-CPU, cacheline-aligned flag
    /// set around `__flush_smp_call_function_queue()` stops `raise_softirq_irqoff()` from
    /// waking ksoftirqd there.
    SoftirqFlagRfcV1 {
        id: "rfc-softirq-flag",
        subject: "[RFC 3/3] softirq: Avoid waking up ksoftirqd from flush_smp_call_function_queue() (posted 2024-07-10, cacheline-aligned flag)",
        merged: "not merged",
        conflicts: [SoftirqFlagRfcV1Unaligned],
        requires: [],
    }
    /// Steven Rostedt 2013 (tip pull 1db13ecf8905, patch 2/3): `idle_balance()` moves out of
    /// `__schedule()` into the idle class's post-schedule hook, after the switch to idle (a
    /// pull then costs a second switch, idle -> task). Modelled on today's kernel: the newidle
    /// balance leaves `pick_next_task_fair()` and runs after `__schedule()` unlocks.
    Rostedt2013PostSchedule {
        id: "rostedt-2013-post-schedule",
        subject: "sched: Move idle_balance() to post_schedule (Steven Rostedt, 2013-02, tip pull 1db13ecf8905)",
        merged: "not kept",
        conflicts: [],
        requires: [],
    }
    /// Rostedt 2013 patch 3/3: that balance drops the rq lock with IRQs *enabled*.
    Rostedt2013IrqsOn {
        id: "rostedt-2013-irqs-on",
        subject: "sched: Enable interrupts in idle_balance() (Steven Rostedt, 2013-02)",
        merged: "not kept",
        conflicts: [],
        requires: [Rostedt2013PostSchedule],
    }
    /// The follow-up in the 2013 thread: skip the post-schedule balance if a task arrived.
    Rostedt2013NrRunningCheck {
        id: "rostedt-2013-nr-running-check",
        subject: "sched: Check rq->nr_running before the post-schedule idle_balance() (2013 thread follow-up)",
        merged: "not kept",
        conflicts: [],
        requires: [Rostedt2013PostSchedule],
    }
    /// Rostedt 2013 patch 1/3: `ok_to_push_task(p, curr)` shared by `task_woken_rt()` and
    /// `push_rt_task()`; `push_rt_task()` no longer gives up on a task that outranks `curr`
    /// when `curr` is pinned (or does not rank below it), so the task is pushed away instead
    /// of preempting the pinned task.
    Rostedt2013OkToPushTask {
        id: "rostedt-2013-ok-to-push-task",
        subject: "sched/rt: Use ok_to_push_task() in push_rt_task() as in task_woken_rt() (Steven Rostedt, 2013-02)",
        merged: "not kept",
        conflicts: [],
        requires: [],
    }
    /// Softirq RFC v2 (2024-07): reuse PREEMPT_RT's per-CPU `softirq_ctrl.cnt` on !RT too; its
    /// low bits count "softirqs will be processed after this flush", and
    /// `should_wake_ksoftirqd()` reads it.
    SoftirqCtrlRfcV2 {
        id: "rfc-v2-softirq-ctrl",
        subject: "[RFC v2 3/3] softirq: reuse softirq_ctrl.cnt on !RT to mark a flush that will run softirqs (posted 2024-07)",
        merged: "not merged",
        conflicts: [SoftirqFlagRfcV1, SoftirqFlagRfcV1Unaligned],
        requires: [],
    }
    /// The same RFC with the flag placed without alignment: it shares the line of the CPU's
    /// `call_single_queue` head, which every sender writes.
    SoftirqFlagRfcV1Unaligned {
        id: "rfc-softirq-flag-unaligned",
        subject: "[RFC 3/3] as rfc-softirq-flag, with the per-CPU flag not cacheline-aligned",
        merged: "not merged",
        conflicts: [SoftirqFlagRfcV1],
        requires: [],
    }
    // ----- Era switches: behaviour added after v3.8 that the v6.10 model has. `v3.8` is the
    // v6.10 model without them (docs/rostedt-2013.md says what each moves). -----
    /// c6e7bd7afaeb (v5.8): `try_to_wake_up()` queues a wakee that is still descheduling
    /// (`p->on_cpu`) on its CPU's wakelist instead of spinning until it is off the CPU.
    C6e7bd7afaeb {
        id: "c6e7bd7afaeb",
        subject: "sched/core: Optimize ttwu() spinning on p->on_cpu",
        merged: "v5.8",
        conflicts: [],
        requires: [],
    }
    /// 2ebb17717550 (v5.8): `ttwu_queue_cond()` also queues a same-LLC wakeup when the wakee
    /// is descheduling there (WF_ON_CPU) and at most one task runs there; before it (since
    /// 518cd6234178, v3.3) the wakelist was used only across LLCs.
    S2ebb17717550 {
        id: "2ebb17717550",
        subject: "sched/core: Offload wakee task activation if it the wakee is descheduling",
        merged: "v5.8",
        conflicts: [],
        requires: [C6e7bd7afaeb],
    }
    /// 38033c37faab (v3.15): the newidle balance runs inside `pick_next_task_fair()`; before
    /// it `__schedule()` called `idle_balance()` itself, before `put_prev_task()` and the pick,
    /// whenever `nr_running == 0`.
    S38033c37faab {
        id: "38033c37faab",
        subject: "sched: Push down pre_schedule() and idle_balance() (the model's v3.15+ newidle path carries the 9bd721c55c8a and 4486edd12b5a gates)",
        merged: "v3.15",
        conflicts: [],
        requires: [S9bd721c55c8a, S4486edd12b5a],
    }
    /// 9bd721c55c8a (v3.13): the newidle balance is skipped (and its domain walk cut short)
    /// when `avg_idle` is below the domains' `max_newidle_lb_cost`.
    S9bd721c55c8a {
        id: "9bd721c55c8a",
        subject: "sched/balancing: Consider max cost of idle balance per sched domain",
        merged: "v3.13",
        conflicts: [],
        requires: [],
    }
    /// abfafa54db9a (v3.13): the `avg_idle` sample of a long idle period is averaged in and then
    /// capped at `2 * max_idle_balance_cost`; before it, a sample above `2 *
    /// sysctl_sched_migration_cost` set `avg_idle` to that cap at once.
    Abfafa54db9a {
        id: "abfafa54db9a",
        subject: "sched: Reduce overestimating rq->avg_idle",
        merged: "v3.13",
        conflicts: [],
        requires: [],
    }
    /// 4486edd12b5a (v3.17): the newidle balance is skipped unless the root domain is
    /// overloaded (`rd->overload`, some CPU with two or more runnable tasks).
    S4486edd12b5a {
        id: "4486edd12b5a",
        subject: "sched/fair: Implement fast idling of CPUs when the system is partially loaded (rd->overload)",
        merged: "v3.17",
        conflicts: [],
        requires: [],
    }
    /// 147f3efaa241 (v6.6): the fair class is EEVDF; without it, CFS (vruntime order, wakeup
    /// preemption by wakeup granularity, sleeper credit).
    S147f3efaa241 {
        id: "147f3efaa241",
        subject: "sched/fair: Implement an EEVDF-like scheduling policy",
        merged: "v6.6",
        conflicts: [],
        requires: [],
    }
    /// 152e11f6df29 (v6.12): DELAY_DEQUEUE. A fair task that goes to sleep while not eligible
    /// stays queued (`sched_delayed`, still `on_rq` and counted in `nr_running`) so that its
    /// negative lag keeps competing: a pick that reaches it finishes the dequeue
    /// (`pick_next_entity()` -> `dequeue_entities(DEQUEUE_DELAYED)`), a wakeup before that
    /// requeues it in place (`ttwu_runnable()` -> `requeue_delayed_entity()`, the
    /// ENQUEUE_DELAYED of 781773e3b680 in the same series), with no placement and no wakelist.
    S152e11f6df29 {
        id: "152e11f6df29",
        subject: "sched/fair: Implement delayed dequeue",
        merged: "v6.12",
        conflicts: [],
        requires: [S147f3efaa241],
    }
    /// 54a58a787791 (v6.12): DELAY_ZERO. A delayed task leaves the queue, or is woken, with
    /// its lag clipped to at most 0: one woken after its lag turned positive is placed again
    /// at the 0-lag point with a new deadline.
    S54a58a787791 {
        id: "54a58a787791",
        subject: "sched/fair: Implement DELAY_ZERO",
        merged: "v6.12",
        conflicts: [],
        requires: [S152e11f6df29],
    }
    /// aa3ee4f0b754 (v6.16): `wake_affine_idle()`'s sync test counts the waker's runqueue
    /// without its delayed (DELAY_DEQUEUE) entities: a sync waker alone with sleeping but still
    /// queued tasks pulls its wakee to its own CPU, as it did before delayed dequeue.
    Aa3ee4f0b754 {
        id: "aa3ee4f0b754",
        subject: "sched/fair: Fixup wake_up_sync() vs DELAYED_DEQUEUE",
        merged: "v6.16",
        conflicts: [],
        requires: [S152e11f6df29],
    }
    /// 62470419e993 (v3.12): `wake_wide()` turns the affine wakeup off for wakers and wakees
    /// that switch partners often (`wakee_flips`).
    S62470419e993 {
        id: "62470419e993",
        subject: "sched: Implement smarter wake-affine logic (wake_wide)",
        merged: "v3.12",
        conflicts: [],
        requires: [],
    }
    /// 10e2f1acd010 (v4.9): `select_idle_sibling()` rewritten (idle core, then a CPU-by-CPU
    /// scan, then an SMT sibling; later refined by recent_used_cpu and SIS_UTIL); before it,
    /// the first fully idle group of the LLC by a walk of the sched groups.
    S10e2f1acd010 {
        id: "10e2f1acd010",
        subject: "sched/core: Rewrite and improve select_idle_siblings()",
        merged: "v4.9",
        conflicts: [],
        requires: [],
    }
    /// b92486cbf2aa (v3.11): CPU loads are PELT runnable load averages; before it,
    /// `wake_affine()` compared instantaneous `rq->load.weight`. The later restructuring of
    /// `wake_affine()` into `wake_affine_idle()` / `wake_affine_weight()` (v4.13-v4.15, commit
    /// not pinned here) is folded into this row.
    B92486cbf2aa {
        id: "b92486cbf2aa",
        subject: "sched: Compute runnable load avg in cpu_load and cpu_avg_load_per_task (wake_affine on PELT load)",
        merged: "v3.11",
        conflicts: [],
        requires: [],
    }
    /// b6366f048e0c (v4.1): RT_PUSH_IPI: a CPU lowering its RT priority asks overloaded CPUs to
    /// push (irq_work chain) instead of pulling from them itself.
    B6366f048e0c {
        id: "b6366f048e0c",
        subject: "sched/rt: Use IPI to trigger RT task push migration instead of pulling",
        merged: "v4.1",
        conflicts: [],
        requires: [],
    }
    /// 82c65d60d644 (v3.16): `do_idle()` clears the idle task's TIF_POLLING_NRFLAG before it
    /// schedules, so the flag is set only while the idle task runs its loop. Without it (as
    /// before v3.16, where the flag was set once and kept across `schedule()`), a switched-out
    /// idle task still "polls", and `set_nr_if_polling()` (the wakelist and call-single IPI
    /// elision) leaves out the IPI to a CPU that is running a task: the queued csd waits until
    /// that CPU next goes idle. Every named kernel has it (a bug switch for exploration, not an
    /// era switch: `v3.8` keeps it as it keeps the rest of the v6.10 idle loop).
    S82c65d60d644 {
        id: "82c65d60d644",
        subject: "sched/idle: Clear polling before descheduling the idle thread",
        merged: "v3.16",
        conflicts: [],
        requires: [],
    }
}

impl Patch {
    pub fn info(self) -> &'static PatchInfo {
        &PATCHES[self as usize]
    }

    /// Look a patch up by id; a unique prefix of at least 7 characters of a commit id works.
    pub fn from_id(id: &str) -> Option<Patch> {
        if let Some(p) = PATCHES.iter().find(|p| p.id == id) {
            return Some(p.patch);
        }
        if id.len() >= 7 {
            let m: Vec<_> = PATCHES.iter().filter(|p| p.id.starts_with(id)).collect();
            if m.len() == 1 {
                return Some(m[0].patch);
            }
        }
        None
    }
}

/// The fair class a kernel uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FairClass {
    /// EEVDF (v6.6 and later).
    Eevdf,
    /// CFS (before v6.6).
    Cfs,
}

/// A named kernel: a base plus the patches it contains.
#[derive(Debug)]
pub struct NamedKernel {
    pub name: &'static str,
    pub description: &'static str,
    pub patches: &'static [Patch],
    pub fair: FairClass,
}

pub const KERNELS: &[NamedKernel] = &[
    NamedKernel {
        name: "v3.8",
        description: "Linux 3.8 (Rostedt's 2013 base): v6.10 with the era switches reverted (CFS, idle_balance() in __schedule(), no same-LLC wakelist, no RT_PUSH_IPI)",
        patches: &[Patch::S82c65d60d644],
        fair: FairClass::Cfs,
    },
    NamedKernel {
        name: "v6.1",
        description: "Linux 6.1 (the 2022 base of the ttwu_pending fix; CFS)",
        patches: &[Patch::B2a02fc43a1f, Patch::F3dd3f674555, Patch::C6e7bd7afaeb, Patch::S2ebb17717550, Patch::S38033c37faab, Patch::S9bd721c55c8a, Patch::Abfafa54db9a, Patch::S4486edd12b5a, Patch::S62470419e993, Patch::S10e2f1acd010, Patch::B92486cbf2aa, Patch::B6366f048e0c, Patch::S82c65d60d644],
        fair: FairClass::Cfs,
    },
    NamedKernel {
        name: "v6.2",
        description: "Linux 6.2: v6.1 + the ttwu_pending fix (CFS)",
        patches: &[Patch::B2a02fc43a1f, Patch::F3dd3f674555, Patch::D6962c4fe8f9, Patch::C6e7bd7afaeb, Patch::S2ebb17717550, Patch::S38033c37faab, Patch::S9bd721c55c8a, Patch::Abfafa54db9a, Patch::S4486edd12b5a, Patch::S62470419e993, Patch::S10e2f1acd010, Patch::B92486cbf2aa, Patch::B6366f048e0c, Patch::S82c65d60d644],
        fair: FairClass::Cfs,
    },
    NamedKernel {
        name: "v6.10",
        description: "Linux 6.10 (the model's baseline; EEVDF)",
        patches: &[Patch::B2a02fc43a1f, Patch::F3dd3f674555, Patch::D6962c4fe8f9, Patch::S147f3efaa241, Patch::C6e7bd7afaeb, Patch::S2ebb17717550, Patch::S38033c37faab, Patch::S9bd721c55c8a, Patch::Abfafa54db9a, Patch::S4486edd12b5a, Patch::S62470419e993, Patch::S10e2f1acd010, Patch::B92486cbf2aa, Patch::B6366f048e0c, Patch::S82c65d60d644],
        fair: FairClass::Eevdf,
    },
    NamedKernel {
        name: "v6.12",
        description: "Linux 6.12: v6.10 + SM_IDLE",
        patches: &[
            Patch::B2a02fc43a1f,
            Patch::F3dd3f674555,
            Patch::D6962c4fe8f9,
            Patch::Sm3dcac251b066,
            Patch::S147f3efaa241,
            Patch::C6e7bd7afaeb, Patch::S2ebb17717550, Patch::S38033c37faab, Patch::S9bd721c55c8a, Patch::Abfafa54db9a, Patch::S4486edd12b5a, Patch::S62470419e993, Patch::S10e2f1acd010, Patch::B92486cbf2aa, Patch::B6366f048e0c, Patch::S82c65d60d644,
        ],
        fair: FairClass::Eevdf,
    },
    NamedKernel {
        name: "v6.13",
        description: "Linux 6.13: v6.12 + the nohz/softirq fixes of the 2024 series",
        patches: &[
            Patch::B2a02fc43a1f,
            Patch::F3dd3f674555,
            Patch::D6962c4fe8f9,
            Patch::Sm3dcac251b066,
            Patch::Ea9cffc0a154,
            Patch::Ff47a0acfcce,
            Patch::E932c4ab38f0,
            Patch::S6675ce20046d,
            Patch::S147f3efaa241,
            Patch::C6e7bd7afaeb, Patch::S2ebb17717550, Patch::S38033c37faab, Patch::S9bd721c55c8a, Patch::Abfafa54db9a, Patch::S4486edd12b5a, Patch::S62470419e993, Patch::S10e2f1acd010, Patch::B92486cbf2aa, Patch::B6366f048e0c, Patch::S82c65d60d644,
        ],
        fair: FairClass::Eevdf,
    },
    NamedKernel {
        name: "v6.18",
        description: "Linux 6.18 as far as modelled: v6.13 + delayed dequeue (DELAY_DEQUEUE, DELAY_ZERO of v6.12); the kernel of this project's guest",
        patches: &[
            Patch::B2a02fc43a1f,
            Patch::F3dd3f674555,
            Patch::D6962c4fe8f9,
            Patch::Sm3dcac251b066,
            Patch::Ea9cffc0a154,
            Patch::Ff47a0acfcce,
            Patch::E932c4ab38f0,
            Patch::S6675ce20046d,
            Patch::S147f3efaa241,
            Patch::S152e11f6df29,
            Patch::S54a58a787791,
            Patch::Aa3ee4f0b754,
            Patch::C6e7bd7afaeb, Patch::S2ebb17717550, Patch::S38033c37faab, Patch::S9bd721c55c8a, Patch::Abfafa54db9a, Patch::S4486edd12b5a, Patch::S62470419e993, Patch::S10e2f1acd010, Patch::B92486cbf2aa, Patch::B6366f048e0c, Patch::S82c65d60d644,
        ],
        fair: FairClass::Eevdf,
    },
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_variant_is_its_row() {
        // The macro makes row i the variant with discriminant i; info() relies on it.
        for (i, p) in PATCHES.iter().enumerate() {
            assert_eq!(p.patch as usize, i, "{}", p.id);
            assert_eq!(p.patch.info().id, p.id);
        }
    }

    #[test]
    fn ids_are_unique_and_resolve() {
        for p in PATCHES {
            assert_eq!(Patch::from_id(p.id), Some(p.patch));
            assert_eq!(PATCHES.iter().filter(|q| q.id == p.id).count(), 1);
        }
        assert_eq!(Patch::from_id("b2a02fc"), Some(Patch::B2a02fc43a1f));
        assert_eq!(Patch::from_id("deadbeef"), None);
    }

    #[test]
    fn a_kernel_is_eevdf_exactly_when_it_has_147f3efaa241() {
        for k in KERNELS {
            assert_eq!(k.fair == FairClass::Eevdf, k.patches.contains(&Patch::S147f3efaa241), "{}", k.name);
            for p in k.patches {
                for r in p.info().requires {
                    assert!(k.patches.contains(r), "{}: {} requires {}", k.name, p.info().id, r.info().id);
                }
            }
        }
    }
}
