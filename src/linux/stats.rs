//! Counters of a run. Plain integers, updated at the modelled points.

use super::engine::NR_PHASES;
use crate::trace::WarnSite;

#[derive(Debug, Clone)]
pub struct Stats {
    /// Wakeup latency of workload tasks: `try_to_wake_up()` to running (ns).
    pub wakeup_latency: hdrhistogram::Histogram<u64>,
    /// Real CALL_FUNCTION_SINGLE IPIs sent.
    pub ipis_sent: u64,
    /// RESCHEDULE IPIs sent.
    pub resched_ipis_sent: u64,
    /// Notifications that only set a flag on a polling CPU (`sched_wake_idle_without_ipi`).
    pub ipis_avoided: u64,
    /// `do_idle()` loop exits (the idle task leaving the idle loop).
    pub idle_exits: u64,
    /// Idle-state entries and exits (`cpuidle_enter_state()` with a real state).
    pub idle_state_entries: u64,
    /// `schedule_idle()` calls.
    pub schedule_idle_calls: u64,
    /// `sched_balance_newidle()` calls, those that walked the domains, and time spent.
    pub newidle_calls: u64,
    pub newidle_balances: u64,
    pub newidle_ns: u64,
    /// Simulated time with `rd->overloaded` set (closed at the end of the run), and since when
    /// it has been set.
    pub overloaded_ns: u64,
    pub overloaded_since: Option<u64>,
    /// ksoftirqd wakeups.
    pub ksoftirqd_wakeups: u64,
    /// Wakeups by path: wakelist with a polling kick, wakelist with a real IPI, wakelist
    /// behind an earlier entry (coalesced), and direct remote/local enqueue.
    pub wakeups_wakelist_polling: u64,
    pub wakeups_wakelist_ipi: u64,
    pub wakeups_wakelist_coalesced: u64,
    pub wakeups_direct: u64,
    /// DELAY_DEQUEUE (v6.12): sleeps that left the task queued (`sched_delayed`), and wakeups
    /// that found it so and requeued it in place (`ttwu_runnable()`).
    pub delayed_dequeues: u64,
    pub wakeups_delayed: u64,
    /// Wakeups placed on a CPU that already had a pending wakee while another CPU of its LLC
    /// was idle.
    pub stacking_wakeups: u64,
    /// Wakeups placed on a CPU that already had a pending wakee when no other CPU of its LLC
    /// was idle (the overflow fallback of `select_idle_sibling()` to its target).
    pub stacking_fallback_wakeups: u64,
    /// The first stacking wakeup of the measured window: (time, target CPU, wakee pid), for a
    /// report's timeline (never read by the model).
    pub first_stacking: Option<(u64, u32, u32)>,
    /// RT tasks moved by `push_rt_task()` / `pull_rt_task()`, and RT push irq_works queued.
    pub rt_pushes: u64,
    pub rt_pulls: u64,
    pub rt_push_ipis: u64,
    /// Task migrations (`set_task_cpu()` to another CPU).
    pub cpu_migrations: u64,
    /// Context switches by kind: to the idle task, from the idle task, and task to task with
    /// prev still runnable (preempted); the rest are task to task with prev blocking.
    pub switches_to_idle: u64,
    pub switches_from_idle: u64,
    pub switches_preempt: u64,
    /// Tasks pulled by `sched_balance_rq()` (schedstat `lb_gained`): from newidle balancing,
    /// and from periodic/nohz balancing.
    pub lb_gained_newidle: u64,
    pub lb_gained_periodic: u64,
    /// nohz idle balancing: kicks sent (`kick_ilb` reaching a CPU), kicks whose
    /// `nohz_csd_func()` raised SCHED_SOFTIRQ, kicks lost there, `_nohz_idle_balance()` passes
    /// and the passes that aborted.
    pub nohz_kicks: u64,
    pub nohz_kicks_raised_softirq: u64,
    pub nohz_kicks_lost: u64,
    pub nohz_balances: u64,
    pub nohz_balance_aborts: u64,
    /// Active balances started (a stopper woken to push a task).
    pub active_balances: u64,
    /// Time charged to `update_sd_lb_stats()` (all balancing), and the part inside newidle.
    pub lb_stats_ns: u64,
    pub newidle_lb_stats_ns: u64,
    /// Context switches (`rq->nr_switches` summed).
    pub context_switches: u64,
    /// Context switches that changed the CPU's address space (`switch_mm_irqs_off()` with a
    /// CR3 write: a user task of another process than the loaded one).
    pub mm_switches: u64,
    /// Tick interrupts handled.
    pub ticks: u64,
    /// Tick stops on idle entry.
    pub tick_stops: u64,
    /// Modelled WARN_ON_ONCE hits (all, including repeats after the first of a site).
    pub warns: u64,
    pub warned_sites: Vec<WarnSite>,
    pub first_warn_ns: Option<u64>,
    /// Time with IRQs disabled, per CPU (ns).
    pub irqs_off_ns: Vec<u64>,
    /// Time per phase, per CPU (ns).
    pub phase_ns: Vec<[u64; NR_PHASES]>,
    /// Halted time per CPU (ns): waiting in MWAIT, HLT or an I/O-port C-state, wake latency
    /// included; not `poll_idle()`. perf's default `cycles` event counts unhalted cycles only,
    /// so a `perf record -a` share is a share of the time outside this.
    pub halted_ns: Vec<u64>,
}

impl Default for Stats {
    fn default() -> Self {
        Stats::new(0)
    }
}

impl Stats {
    pub fn new(nr_cpus: u32) -> Stats {
        Stats {
            // 1 ns .. 100 s at 3 significant digits.
            wakeup_latency: hdrhistogram::Histogram::new_with_bounds(1, 100_000_000_000, 3).expect("valid bounds"),
            ipis_sent: 0,
            resched_ipis_sent: 0,
            ipis_avoided: 0,
            idle_exits: 0,
            idle_state_entries: 0,
            schedule_idle_calls: 0,
            newidle_calls: 0,
            newidle_balances: 0,
            newidle_ns: 0,
            overloaded_ns: 0,
            overloaded_since: None,
            ksoftirqd_wakeups: 0,
            wakeups_wakelist_polling: 0,
            wakeups_wakelist_ipi: 0,
            wakeups_wakelist_coalesced: 0,
            wakeups_direct: 0,
            delayed_dequeues: 0,
            wakeups_delayed: 0,
            stacking_wakeups: 0,
            stacking_fallback_wakeups: 0,
            first_stacking: None,
            rt_pushes: 0,
            rt_pulls: 0,
            rt_push_ipis: 0,
            switches_to_idle: 0,
            switches_from_idle: 0,
            switches_preempt: 0,
            cpu_migrations: 0,
            lb_gained_newidle: 0,
            lb_gained_periodic: 0,
            active_balances: 0,
            lb_stats_ns: 0,
            newidle_lb_stats_ns: 0,
            nohz_kicks: 0,
            nohz_kicks_raised_softirq: 0,
            nohz_kicks_lost: 0,
            nohz_balances: 0,
            nohz_balance_aborts: 0,
            context_switches: 0,
            mm_switches: 0,
            ticks: 0,
            tick_stops: 0,
            warns: 0,
            warned_sites: Vec::new(),
            first_warn_ns: None,
            irqs_off_ns: vec![0; nr_cpus as usize],
            phase_ns: vec![[0; NR_PHASES]; nr_cpus as usize],
            halted_ns: vec![0; nr_cpus as usize],
        }
    }
}
