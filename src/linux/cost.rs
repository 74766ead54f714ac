//! Per-code-path software costs (ns), shared by every kernel variant, scaled to each machine's
//! core clock.
//!
//! These are the time a path's own instructions take, excluding the cache-line transfers, IPI
//! latencies, interrupt entry/exit and idle-state exit latencies that the hardware model
//! ([`crate::hw`]) charges separately from the machine's own measured figures. Each row of the
//! table records the clock its source ran at; a run's costs are the rows scaled by
//! `row clock / machine clock` ([`PathCosts::for_machine`], docs/costs.md "The clock rule"),
//! and a machine file's `[path_costs]` table replaces rows with values measured on it.
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

            /// The field called `name`.
            fn field_mut(&mut self, name: &str) -> Option<&mut Time> {
                match name {
                    $(stringify!($name) => Some(&mut self.$name),)*
                    _ => None,
                }
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
    /// `switch_mm_irqs_off()` to another process's address space (CR3 write with PCID,
    /// mitigations) and the TLB and cache refill the next task pays; measured on this
    /// project's guest: a process ping-pong against a thread ping-pong on one CPU, 46 ns
    /// per switch, carried by the thread form's guest/model ratio 0.97 (docs/costs.md,
    /// "switch_mm").
    switch_mm = 82 @ REFERENCE_MHZ;
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
    /// One task-group level of `enqueue_task_fair()`'s `for_each_sched_entity()` walk, per
    /// level of `se->depth`: the group entity's `update_load_avg()` (with `UPDATE_TG`),
    /// `se_update_runnable()`, `update_cfs_group()` (a reweight of a queued entity) and the
    /// `h_nr_running` counts, or its `enqueue_entity()` when the parent was not queued. An
    /// estimate, not measured (docs/costs.md, "Task groups").
    enqueue_level = 40 @ REFERENCE_MHZ;
    /// The same for `dequeue_task_fair()`.
    dequeue_level = 40 @ REFERENCE_MHZ;
    /// One more leaf `cfs_rq` in `__update_blocked_fair()`'s walk of `rq->leaf_cfs_rq_list`:
    /// `update_cfs_rq_load_avg()`, `update_tg_load_avg()`, the group entity's
    /// `update_load_avg()` and the decayed check. An estimate (docs/costs.md, "Task groups").
    blocked_leaf = 40 @ REFERENCE_MHZ;
    /// A process's creation and exit, from perf's process on this project's guest (docs/costs.md,
    /// "hackbench's fork and exit"), divided by the guest's measured slowdown of 9.2
    /// (docs/path-costs-check.md), so at the reference clock: `fork()`'s `copy_process()`
    /// (138 us there), a forked child's copy-on-write faults up to its first syscall (79 us),
    /// `socketpair()` beyond the syscall (4 us), and `do_exit()` before its `sched_process_exit`
    /// record (7 us) and from the record to `exit_notify()` (`exit_mm()`, `exit_files()`: 155 us).
    fork = 15_000 @ REFERENCE_MHZ;
    fork_child_faults = 8_600 @ REFERENCE_MHZ;
    socketpair = 430 @ REFERENCE_MHZ;
    exit_head = 760 @ REFERENCE_MHZ;
    exit_teardown = 16_800 @ REFERENCE_MHZ;
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

/// Checks that every `[path_costs.NAME]` of a machine file names a row of the table: an error
/// naming the file (`origin`), the entry's line, the name and the valid names. `run::machine`
/// calls it where a machine file is read for a run (the hardware model's parser does not know
/// the kernel model's costs).
pub fn check_measured(m: &crate::hw::Machine, origin: &str) -> Result<(), String> {
    match m.path_costs.iter().find(|mc| !is_path_cost(&mc.name)) {
        None => Ok(()),
        Some(mc) => Err(format!(
            "{origin}:{}: [path_costs.{}]: unknown path cost `{}`; valid names: {}",
            mc.line,
            mc.name,
            mc.name,
            path_cost_names().collect::<Vec<_>>().join(", ")
        )),
    }
}

impl PathCosts {
    /// The costs a run on `m` charges: every row scaled from its clock to the machine's
    /// (`m.clock_mhz`), except the rows the machine file measured (`[path_costs]`), which are
    /// that measurement scaled from its own clock. Built once per run (`Kernel::new`).
    pub fn for_machine(m: &crate::hw::Machine) -> PathCosts {
        let mut c = PathCosts::reference();
        for r in PATH_COSTS {
            let v = c.field_mut(r.name).expect("every row is a field");
            *v = scale_to_clock(r.ns, r.clock_mhz, m.clock_mhz);
        }
        for mc in &m.path_costs {
            // The parser accepts only the table's names.
            // `check_measured` refused other names where the file was read.
            if let Some(v) = c.field_mut(&mc.name) {
                *v = scale_to_clock(mc.ns, mc.clock_mhz, m.clock_mhz);
            }
        }
        c
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scaling_is_by_the_ratio_of_clocks_rounded() {
        assert_eq!(scale_to_clock(250, 4000, 4000), 250);
        assert_eq!(scale_to_clock(250, 4000, 1900), 526); // 526.3
        assert_eq!(scale_to_clock(60, 4000, 3500), 69); // 68.6
        assert_eq!(scale_to_clock(5, 4000, 8000), 3); // 2.5 rounds up
        assert_eq!(scale_to_clock(1_000_000_000, 10_000, 100), 100_000_000_000);
    }

    #[test]
    fn every_row_is_a_field_and_the_default_is_the_table() {
        let mut c = PathCosts::default();
        for r in PATH_COSTS {
            assert_eq!(*c.field_mut(r.name).unwrap(), r.ns, "{}", r.name);
            assert!(is_path_cost(r.name));
        }
        assert!(!is_path_cost("line_llc_ns"));
        assert_eq!(PATH_COSTS.iter().filter(|r| r.name == "context_switch").count(), 1);
    }

    /// A machine's costs are the table scaled to its clock, except what it measured, which is
    /// scaled from the measurement's own clock; its hardware costs are left alone.
    #[test]
    fn a_machines_costs_follow_its_clock_and_its_measurements() {
        let mut m = crate::hw::preset("smp-4").unwrap();
        assert_eq!(PathCosts::for_machine(&m), PathCosts::reference());
        m.clock_mhz = 2000;
        m.path_costs.push(crate::hw::MeasuredPathCost {
            name: "syscall".into(),
            line: 1,
            ns: 300,
            clock_mhz: 3000,
            spread_ns: None,
            samples: None,
            method: None,
        });
        let hw_before = m.costs.clone();
        let c = PathCosts::for_machine(&m);
        let r = PathCosts::reference();
        assert_eq!(c.context_switch, 2 * r.context_switch);
        assert_eq!(c.pipe_write, 2 * r.pipe_write);
        assert_eq!(c.syscall, 450);
        assert_eq!(m.costs, hw_before);
    }

    /// A machine file without a clock runs the table unscaled.
    #[test]
    fn the_default_machine_clock_is_the_reference() {
        assert_eq!(crate::hw::DEFAULT_CLOCK_MHZ, REFERENCE_MHZ);
    }

    /// A measured cost must name a row: the error names the file, the entry's line, the name
    /// and every valid name. The presets measure none.
    #[test]
    fn a_measured_cost_of_no_row_is_refused_with_file_and_line() {
        let text = format!(
            "{}\n[path_costs.context_swtich]\nns = 5400\nclock_mhz = 2100\n",
            crate::hw::preset_text("smp-4").unwrap()
        );
        let m = crate::hw::machine_from_toml(&text, "m.toml").unwrap();
        let line = text.lines().position(|l| l == "[path_costs.context_swtich]").unwrap() + 1;
        let err = check_measured(&m, "m.toml").unwrap_err();
        assert!(
            err.starts_with(&format!(
                "m.toml:{line}: [path_costs.context_swtich]: unknown path cost `context_swtich`; valid names: "
            )),
            "{err}"
        );
        assert!(path_cost_names().all(|n| err.contains(n)), "{err}");
        for name in crate::hw::preset_names() {
            let m = crate::hw::preset(name).unwrap();
            assert!(m.path_costs.is_empty() && check_measured(&m, name).is_ok());
        }
    }

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
