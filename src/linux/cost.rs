//! Per-code-path software costs (ns), shared by every kernel variant and machine.
//!
//! These are the time a path's own instructions take on a ~3 GHz server core, excluding the
//! cache-line transfers, IPI latencies and idle-state exit latencies that the hardware model
//! ([`crate::hw`]) charges separately whenever the path touches a line another CPU owns.
//!
//! Sources (see docs/costs.md for the arithmetic):
//! - Zen 2 at 4 GHz (docs/workloads.md §9.2, Norbert 2021): FUTEX_WAKE until `futex_wait` returns
//!   on a neighbour in POLL = 1.07 us, of which the FUTEX_WAKE call is 0.42-0.71 us. The
//!   wakee side (idle exit, flush, `sched_ttwu_pending`, `__schedule` with a switch, return)
//!   therefore takes ~0.4-0.65 us: `DO_IDLE_EXIT + FLUSH + TTWU_ACTIVATE + SCHEDULE_* +
//!   CONTEXT_SWITCH` below sums to 0.6 us.
//! - Interrupt processing ~1212 cycles on the receiving core (Shinjuku, §9.2): in the
//!   machine's `irq_entry_ns`/`irq_exit_ns`, not here.
//! - Upper bounds from the real 6.18 KVM trace in tests/fixtures (medians, us resolution,
//!   tracing on; method in docs/costs.md): idle exit -> sched_switch 2 us; switch to idle ->
//!   cpu_idle entry 3 us; a `sched_ttwu_pending` csd 4 us. The model's bare-metal figures are
//!   each well below those.
//! - `perf bench syscall basic` 0.079 us per syscall (§9.4) bounds the cheapest paths.
//! - Relative shape from this project's 6.18 KVM guest (docs/path-costs-check.md): after
//!   removing the trace records and scaling the clock, the guest's pure software paths run
//!   a median 9.2x the model's; `sched_balance_softirq()` ran 3.9-4.5x, i.e. the model charged
//!   it twice what the other costs imply, so `update_blocked_averages` and `balance_rq` were
//!   lowered by the same factor (0.44, from 300 and 200).

use crate::sim::Time;

/// The clock (MHz) of the software cost table's anchor: the polling-wakeup measurement on a Zen 2
/// Threadripper held at a fixed 4.0 GHz (docs/workloads.md §9.2, Norbert 2021), the one
/// bare-metal, per-path figure the table's absolute level rests on. The other rows are
/// estimates held to the anchored ones by the measured shape (docs/path-costs-check.md: one
/// factor k for every software path), so they share its clock.
pub const REFERENCE_MHZ: u32 = 4000;

/// One row of the software cost table: a [`PathCosts`] field, its value and the core clock the
/// value was measured at (or, for an estimate, the clock of the measurement it is held to).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PathCostRow {
    pub name: &'static str,
    pub ns: Time,
    pub clock_mhz: u32,
}

/// The table, written once: each row declares a [`PathCosts`] field (with its doc), its value
/// and the clock of its source, and [`PATH_COSTS`] lists the rows in the same order.
macro_rules! path_costs {
    ($($(#[doc = $doc:literal])* $name:ident = $ns:literal @ $mhz:expr;)*) => {
        /// The software costs of one run, at the machine's clock ([`PathCosts::for_machine`]).
        /// One set for all variants: a patch changes which paths run, never what a path costs.
        #[derive(Debug, Clone, PartialEq, Eq)]
        pub struct PathCosts {
            $($(#[doc = $doc])* pub $name: Time,)*
        }

        /// The rows of the table, in declaration order.
        pub const PATH_COSTS: &[PathCostRow] = &[$(PathCostRow { name: stringify!($name), ns: $ns, clock_mhz: $mhz }),*];

        impl PathCosts {
            /// The table's values at their own clocks, unscaled.
            pub fn reference() -> PathCosts {
                PathCosts { $($name: $ns,)* }
            }

        }
    };
}

path_costs! {
    /// `__schedule()` entry: IRQs off, `rcu_note_context_switch`, local rq lock, clock update.
    schedule_enter = 60 @ REFERENCE_MHZ;
    /// `pick_next_task_fair()` finding no runnable entity (before the newidle balance).
    pick_fair_empty = 30 @ REFERENCE_MHZ;
    /// `sched_balance_newidle()` when gated (misfit update, idle_stamp, rd check,
    /// `update_next_balance`, `nohz_newidle_balance`).
    newidle_gated = 70 @ REFERENCE_MHZ;
    /// `put_prev_task()` + `pick_next_task_idle()` with `set_next_task_idle()`/`update_idle_core`.
    pick_idle = 80 @ REFERENCE_MHZ;
    /// Picking a queued fair task (`pick_next_entity`, `set_next_entity`).
    pick_fair_task = 60 @ REFERENCE_MHZ;
    /// `__schedule()` exit without a switch: clear NR, balance callbacks, unlock, IRQs on.
    schedule_exit = 40 @ REFERENCE_MHZ;
    /// `context_switch()` + `finish_task_switch()`.
    context_switch = 250 @ REFERENCE_MHZ;
    /// `do_idle()` exit: set PNR, `tick_nohz_idle_exit()` with the tick running, clear POLL.
    do_idle_exit = 80 @ REFERENCE_MHZ;
    /// `do_idle()` entry: `nohz_run_idle_balance` check, set POLL, `tick_nohz_idle_enter()`.
    do_idle_enter = 70 @ REFERENCE_MHZ;
    /// The governor's `select` (menu).
    governor_select = 150 @ REFERENCE_MHZ;
    /// `call_cpuidle()` / `cpuidle_enter_state()` bookkeeping on each side of the state.
    cpuidle_enter = 40 @ REFERENCE_MHZ;
    /// `cpuidle_reflect()` and the `exit_idle` tail of `cpuidle_idle_call()`.
    cpuidle_exit = 40 @ REFERENCE_MHZ;
    /// `tick_nohz_stop_tick()` (hrtimer reprogram) and the restart in `tick_nohz_idle_exit()`.
    tick_stop = 400 @ REFERENCE_MHZ;
    tick_restart = 400 @ REFERENCE_MHZ;
    /// `flush_smp_call_function_queue()` / `__flush_...` fixed part (excluding line transfers).
    flush = 30 @ REFERENCE_MHZ;
    /// Per csd: the indirect call and `csd_unlock` bookkeeping.
    csd_call = 15 @ REFERENCE_MHZ;
    /// `smp_call_function_single()` set-up: get_cpu, csd init, `generic_exec_single`.
    smp_call_setup = 40 @ REFERENCE_MHZ;
    /// `try_to_wake_up()` placement part (pi_lock, state checks, select_task_rq).
    ttwu = 120 @ REFERENCE_MHZ;
    /// `ttwu_do_activate()`: enqueue + `wakeup_preempt`.
    ttwu_activate = 100 @ REFERENCE_MHZ;
    /// `handle_softirqs()` fixed part per pass.
    softirq = 60 @ REFERENCE_MHZ;
    /// `sched_tick()` and `update_process_times()` work in the tick handler.
    sched_tick = 300 @ REFERENCE_MHZ;
    /// `sched_balance_update_blocked_averages()`. Measured shape: docs/path-costs-check.md.
    update_blocked_averages = 130 @ REFERENCE_MHZ;
    /// `sched_balance_rq()` fixed part (measured shape: docs/path-costs-check.md), and
    /// `update_sg_lb_stats()` per CPU of the span.
    balance_rq = 90 @ REFERENCE_MHZ;
    lb_stats_per_cpu = 15 @ REFERENCE_MHZ;
    /// `cond_resched()` when nothing is pending.
    cond_resched = 10 @ REFERENCE_MHZ;
    /// `scheduler_ipi()`.
    scheduler_ipi = 20 @ REFERENCE_MHZ;
    /// Syscall entry + exit (`perf bench syscall basic`, no PTI: 0.079 us, docs/workloads.md §9.4).
    syscall = 80 @ REFERENCE_MHZ;
    /// The futex hash lookup and bucket handling beyond the syscall itself.
    futex = 100 @ REFERENCE_MHZ;
    /// A few user-space instructions around an atomic or a vDSO `gettimeofday()`.
    user_op = 20 @ REFERENCE_MHZ;
    /// Arming an hrtimer (`hrtimer_start_range_ns`, possibly reprogramming the APIC timer).
    hrtimer_start = 100 @ REFERENCE_MHZ;
    /// `__queue_work()` (pool lookup, insert, kick) and `process_one_work()`'s own bookkeeping
    /// around a work function, together: each charges half.
    queue_work = 150 @ REFERENCE_MHZ;
    /// `pipe_write()` beyond the syscall (`fs/pipe.rs`: from `perf bench sched pipe` on one CPU,
    /// docs/workloads.md §9.4, less the model's own syscall, wakeup and switch costs).
    pipe_write = 300 @ REFERENCE_MHZ;
    /// `pipe_read()` beyond the syscall (as `pipe_write`).
    pipe_read = 300 @ REFERENCE_MHZ;
    /// Re-taking `pipe->mutex` after a sleep and re-checking the ring.
    pipe_relock = 40 @ REFERENCE_MHZ;
    /// `unix_stream_sendmsg()` per call beyond the syscall (`net/unix.rs`).
    unix_sendmsg = 250 @ REFERENCE_MHZ;
    /// Per skb sent: head and data allocation, queueing, `sock_def_readable`.
    unix_skb = 350 @ REFERENCE_MHZ;
    /// `unix_stream_read_generic()` per call beyond the syscall.
    unix_recvmsg = 250 @ REFERENCE_MHZ;
    /// Per skb consumed: unlink, `consume_skb`, `sock_wfree`.
    unix_skb_free = 250 @ REFERENCE_MHZ;
    /// The `unix_state_lock()` + receive-queue lock section.
    unix_lock_hold = 40 @ REFERENCE_MHZ;
    /// `__wake_up_common_lock()` around the walk: irqsave, the lock, the unlock (the line
    /// transfer is charged separately; `kernel/wait.rs`).
    wake_up_lock = 20 @ REFERENCE_MHZ;
    /// Calling one wait-queue entry's wake function before `try_to_wake_up()`.
    wake_entry = 5 @ REFERENCE_MHZ;
    /// `wait4()` beyond the syscall: tasklist lock, `wait_task_zombie()`, rusage
    /// (`kernel/exit.rs`).
    wait4 = 150 @ REFERENCE_MHZ;
    /// Per child `wait_consider_task()` looks at.
    wait_per_child = 10 @ REFERENCE_MHZ;
    /// `do_sys_poll()` beyond the syscall for one descriptor (`fs/select.rs`).
    poll = 200 @ REFERENCE_MHZ;
    /// A repeated `vfs_poll()` after a wakeup.
    repoll = 30 @ REFERENCE_MHZ;
}

impl Default for PathCosts {
    /// The table unscaled ([`PathCosts::reference`]): every row at its own clock.
    fn default() -> Self {
        PathCosts::reference()
    }
}

/// `ns` measured at `from_mhz`, on a core running at `to_mhz`: the same instructions take
/// `from / to` as long. Integer arithmetic, rounded to the nearest nanosecond.
pub fn scale_to_clock(ns: Time, from_mhz: u32, to_mhz: u32) -> Time {
    let (from, to) = (u128::from(from_mhz), u128::from(to_mhz.max(1)));
    ((u128::from(ns) * from + to / 2) / to) as Time
}

/// The names of the table's rows, for error messages.
pub fn path_cost_names() -> impl Iterator<Item = &'static str> {
    PATH_COSTS.iter().map(|r| r.name)
}

/// Whether `name` is a row of the table.
pub fn is_path_cost(name: &str) -> bool {
    PATH_COSTS.iter().any(|r| r.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The wakee side of a polling wakeup stays within Norbert's Zen 2 bound (0.4-0.65 us).
    #[test]
    fn polling_wake_path_matches_its_source() {
        let c = PathCosts::default();
        let path = c.do_idle_exit
            + c.flush
            + c.csd_call
            + c.ttwu_activate
            + c.schedule_enter
            + c.pick_fair_task
            + c.context_switch;
        assert!((400..=650).contains(&path), "{path}");
    }
}
