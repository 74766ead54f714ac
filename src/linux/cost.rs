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

/// The software costs. One set for all variants: a patch changes which paths run, never what
/// a path costs.
#[derive(Debug, Clone)]
pub struct PathCosts {
    /// `__schedule()` entry: IRQs off, `rcu_note_context_switch`, local rq lock, clock update.
    pub schedule_enter: Time,
    /// `pick_next_task_fair()` finding no runnable entity (before the newidle balance).
    pub pick_fair_empty: Time,
    /// `sched_balance_newidle()` when gated (misfit update, idle_stamp, rd check,
    /// `update_next_balance`, `nohz_newidle_balance`).
    pub newidle_gated: Time,
    /// `put_prev_task()` + `pick_next_task_idle()` with `set_next_task_idle()`/`update_idle_core`.
    pub pick_idle: Time,
    /// Picking a queued fair task (`pick_next_entity`, `set_next_entity`).
    pub pick_fair_task: Time,
    /// `__schedule()` exit without a switch: clear NR, balance callbacks, unlock, IRQs on.
    pub schedule_exit: Time,
    /// `context_switch()` + `finish_task_switch()`.
    pub context_switch: Time,
    /// `do_idle()` exit: set PNR, `tick_nohz_idle_exit()` with the tick running, clear POLL.
    pub do_idle_exit: Time,
    /// `do_idle()` entry: `nohz_run_idle_balance` check, set POLL, `tick_nohz_idle_enter()`.
    pub do_idle_enter: Time,
    /// The governor's `select` (menu).
    pub governor_select: Time,
    /// `call_cpuidle()` / `cpuidle_enter_state()` bookkeeping on each side of the state.
    pub cpuidle_enter: Time,
    /// `cpuidle_reflect()` and the `exit_idle` tail of `cpuidle_idle_call()`.
    pub cpuidle_exit: Time,
    /// `tick_nohz_stop_tick()` (hrtimer reprogram) and the restart in `tick_nohz_idle_exit()`.
    pub tick_stop: Time,
    pub tick_restart: Time,
    /// `flush_smp_call_function_queue()` / `__flush_...` fixed part (excluding line transfers).
    pub flush: Time,
    /// Per csd: the indirect call and `csd_unlock` bookkeeping.
    pub csd_call: Time,
    /// `smp_call_function_single()` set-up: get_cpu, csd init, `generic_exec_single`.
    pub smp_call_setup: Time,
    /// `try_to_wake_up()` placement part (pi_lock, state checks, select_task_rq).
    pub ttwu: Time,
    /// `ttwu_do_activate()`: enqueue + `wakeup_preempt`.
    pub ttwu_activate: Time,
    /// `handle_softirqs()` fixed part per pass.
    pub softirq: Time,
    /// `sched_tick()` and `update_process_times()` work in the tick handler.
    pub sched_tick: Time,
    /// `sched_balance_update_blocked_averages()`. Measured shape: docs/path-costs-check.md.
    pub update_blocked_averages: Time,
    /// `sched_balance_rq()` fixed part (measured shape: docs/path-costs-check.md), and
    /// `update_sg_lb_stats()` per CPU of the span.
    pub balance_rq: Time,
    pub lb_stats_per_cpu: Time,
    /// `cond_resched()` when nothing is pending.
    pub cond_resched: Time,
    /// `scheduler_ipi()`.
    pub scheduler_ipi: Time,
    /// Syscall entry + exit (`perf bench syscall basic`, no PTI: 0.079 us, docs/workloads.md §9.4).
    pub syscall: Time,
    /// The futex hash lookup and bucket handling beyond the syscall itself.
    pub futex: Time,
    /// A few user-space instructions around an atomic or a vDSO `gettimeofday()`.
    pub user_op: Time,
    /// Arming an hrtimer (`hrtimer_start_range_ns`, possibly reprogramming the APIC timer).
    pub hrtimer_start: Time,
    /// `__queue_work()` (pool lookup, insert, kick) and `process_one_work()`'s own bookkeeping
    /// around a work function, together: each charges half.
    pub queue_work: Time,
    /// A process's creation and exit, from perf's process on this project's guest (docs/costs.md,
    /// "hackbench's fork and exit"), divided by the guest's measured slowdown of 9.2
    /// (docs/path-costs-check.md): `fork()`'s `copy_process()` (138 us there), a forked
    /// child's copy-on-write faults up to its first syscall (79 us), `socketpair()` beyond the
    /// syscall (4 us), and `do_exit()` before its `sched_process_exit` record (7 us) and from
    /// the record to `exit_notify()` (`exit_mm()`, `exit_files()`: 155 us).
    pub fork: Time,
    pub fork_child_faults: Time,
    pub socketpair: Time,
    pub exit_head: Time,
    pub exit_teardown: Time,
}

impl Default for PathCosts {
    fn default() -> Self {
        PathCosts {
            schedule_enter: 60,
            pick_fair_empty: 30,
            newidle_gated: 70,
            pick_idle: 80,
            pick_fair_task: 60,
            schedule_exit: 40,
            context_switch: 250,
            do_idle_exit: 80,
            do_idle_enter: 70,
            governor_select: 150,
            cpuidle_enter: 40,
            cpuidle_exit: 40,
            tick_stop: 400,
            tick_restart: 400,
            flush: 30,
            csd_call: 15,
            smp_call_setup: 40,
            ttwu: 120,
            ttwu_activate: 100,
            softirq: 60,
            sched_tick: 300,
            update_blocked_averages: 130,
            balance_rq: 90,
            lb_stats_per_cpu: 15,
            cond_resched: 10,
            scheduler_ipi: 20,
            syscall: 80,
            futex: 100,
            hrtimer_start: 100,
            user_op: 20,
            queue_work: 150,
            fork: 15_000,
            fork_child_faults: 8_600,
            socketpair: 430,
            exit_head: 760,
            exit_teardown: 16_800,
        }
    }
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
