//! Models the periodic tick and its nohz-idle control, `kernel/time/tick-sched.c` @ v6.10,
//! with the per-CPU hrtimer queue reduced to what the model uses: the tick itself and task
//! sleep timers.
//!
//! Simplifications: jiffies are derived from virtual time (the timekeeping CPU's tick is
//! exact); ticks of all CPUs are aligned (`sched_skew_tick=0`, the default).

use crate::linux::engine::Action;
use crate::linux::{CpuId, Kernel, TaskId};
use crate::sim::{Slot, Time, NSEC_PER_SEC};
use smallvec::SmallVec;

/// Sleep timers a CPU holds without a heap block of their own: a task sleeps on at most one,
/// so this is the number of tasks sleeping on one CPU at once before the list moves to the
/// heap. Inside the [`crate::linux::Cpu`], the list is in the lines the executor prefetches
/// with the rest of the CPU's hot state, and its first task can be named for a prefetch one
/// action ahead (a separate block was one more miss to wait for on large machines).
const INLINE_SLEEPERS: usize = 2;

/// Per-CPU tick state (`struct tick_sched` plus the hrtimer base).
#[derive(Debug, Clone)]
pub struct TickSched {
    /// The tick is stopped (`ts->tick_stopped`).
    pub stopped: bool,
    /// Expiry of the next periodic tick.
    pub next_tick: Time,
    /// Armed task sleep timers: (hard expiry, soft expiry, task). A timer runs at the first
    /// timer interrupt at or after its soft expiry; the APIC is programmed for the hard one.
    pub sleepers: SmallVec<[(Time, Time, TaskId); INLINE_SLEEPERS]>,
    /// Timers that expired in the current interrupt and still have a task to wake.
    pub expired: SmallVec<[TaskId; 2 * INLINE_SLEEPERS]>,
    /// Expiry programmed into the local APIC timer, and its generation.
    pub armed: Option<Time>,
    pub timer_gen: u32,
    /// The first tick stop has happened (nohz_balance_enter_idle runs on it).
    pub was_stopped_once: bool,
    /// The softlockup watchdog's hrtimer: next expiry and its background source.
    pub watchdog: Option<(Time, u16)>,
    /// Background softirqs raised from the tick (`tick-softirq` sources): next due instant and
    /// source.
    pub softirq_due: Vec<(Time, u16)>,
    /// `ts->inidle`: between `tick_nohz_idle_enter()` and `tick_nohz_idle_exit()`.
    pub inidle: bool,
    /// `ts->got_idle_tick`: the tick's handler ran while `inidle` (read and cleared by
    /// [`tick_nohz_idle_got_tick`]).
    pub got_idle_tick: bool,
}

impl TickSched {
    pub fn new(_hz: u32, _cpu: CpuId) -> Self {
        TickSched {
            stopped: false,
            next_tick: 0,
            sleepers: SmallVec::new(),
            expired: SmallVec::new(),
            armed: None,
            timer_gen: 0,
            was_stopped_once: false,
            watchdog: None,
            softirq_due: Vec::new(),
            inidle: false,
            got_idle_tick: false,
        }
    }
}

fn next_boundary(k: &Kernel) -> Time {
    let t = k.tick_nsec();
    (k.now / t + 1) * t
}

/// The earliest pending expiry of `cpu`: the one its local APIC timer is (to be) programmed
/// for (the clockevent device's `next_event`).
fn next_clock_event(k: &Kernel, cpu: CpuId) -> Option<Time> {
    let ts = &k.cpus[cpu as usize].tick;
    // A stopped tick is reprogrammed for the next timer-wheel expiry (tick_nohz_stop_tick()).
    let mut next = if ts.stopped { super::timer::next_timer_event(k, cpu) } else { Some(ts.next_tick) };
    for &(t, _, _) in &ts.sleepers {
        next = Some(next.map_or(t, |n: Time| n.min(t)));
    }
    if let Some((t, _)) = ts.watchdog {
        next = Some(next.map_or(t, |n: Time| n.min(t)));
    }
    next
}

/// Program the local APIC timer for the earliest pending expiry.
pub fn tick_program(k: &mut Kernel, cpu: CpuId) {
    let next = next_clock_event(k, cpu);
    if next == k.cpus[cpu as usize].tick.armed {
        return;
    }
    let ts = &mut k.cpus[cpu as usize].tick;
    ts.armed = next;
    ts.timer_gen = ts.timer_gen.wrapping_add(1);
    // The CPU's timer slot holds the one programmed expiry: re-programming replaces it.
    if let Some(t) = next {
        let gen = ts.timer_gen;
        k.q.set(cpu as usize, Slot::Timer, t.max(k.now), Action::ApicTimer { cpu, gen });
    } else {
        k.q.cancel(cpu as usize, Slot::Timer);
    }
}

/// Start the periodic tick at boot.
pub fn tick_start(k: &mut Kernel, cpu: CpuId) {
    k.cpus[cpu as usize].tick.next_tick = next_boundary(k);
    tick_program(k, cpu);
}

/// Arm a sleep timer for task `p` on `cpu` with the range [soft, hard]
/// (`hrtimer_start_range_ns` of an hrtimer_sleeper).
pub fn hrtimer_start_sleeper(k: &mut Kernel, cpu: CpuId, soft: Time, hard: Time, p: TaskId) {
    k.cpus[cpu as usize].tick.sleepers.push((hard, soft, p));
    tick_program(k, cpu);
}

/// Models `hrtimer_interrupt()` — kernel/time/hrtimer.c @ v6.10: run the expired timers of
/// this CPU (the tick's `tick_sched_timer()`; sleepers are queued in `expired` for the
/// handler to wake) and reprogram. Returns the handler's cost.
pub fn hrtimer_interrupt(k: &mut Kernel, cpu: CpuId) -> Time {
    let now = k.now;
    let nb = next_boundary(k);
    let mut cost = 0;
    let ts = &mut k.cpus[cpu as usize].tick;
    ts.armed = None;
    // Expired sleepers, in expiry order.
    let mut i = 0;
    let mut fired = SmallVec::<[(Time, Time, TaskId); 2 * INLINE_SLEEPERS]>::new();
    while i < ts.sleepers.len() {
        if ts.sleepers[i].1 <= now {
            fired.push(ts.sleepers.swap_remove(i));
        } else {
            i += 1;
        }
    }
    fired.sort_unstable();
    // The handler pops from the end: push in reverse so the earliest is woken first.
    for &(_, _, p) in fired.iter().rev() {
        ts.expired.push(p);
    }
    let watchdog = ts.watchdog.filter(|&(t, _)| t <= now);
    if !ts.stopped && ts.next_tick <= now {
        ts.next_tick = nb;
        cost += tick_sched_timer(k, cpu);
    } else if ts.stopped && super::timer::timer_due(k, cpu) {
        // The stopped tick's hrtimer was set for a timer-wheel expiry: tick_nohz_handler()
        // runs the tick's work once and leaves the tick stopped.
        cost += tick_sched_timer(k, cpu);
    }
    if let Some((_, src)) = watchdog {
        cost += crate::linux::kernel::watchdog::watchdog_timer_fn(k, cpu, src);
    }
    tick_program(k, cpu);
    cost
}

/// Models `tick_sched_timer()` -> `tick_sched_handle()` -> `update_process_times()` ->
/// `sched_tick()` — kernel/time/tick-sched.c, kernel/time/timer.c @ v6.10.
/// `update_process_times()` also runs `run_local_timers()` (TIMER_SOFTIRQ when a timer is
/// due) and `rcu_sched_clock_irq()` (modelled as the profile's tick-raised softirqs).
fn tick_sched_timer(k: &mut Kernel, cpu: CpuId) -> Time {
    k.stats.ticks += 1;
    // tick_sched_do_timer(): a tick taken in the idle loop is noted for the governor.
    let ts = &mut k.cpus[cpu as usize].tick;
    if ts.inidle {
        ts.got_idle_tick = true;
    }
    let c = crate::linux::kernel::sched::core::sched_tick(k, cpu);
    super::timer::run_local_timers(k, cpu);
    tick_raise_background_softirqs(k, cpu);
    c
}

/// The background `tick-softirq` sources due on this tick (`rcu_sched_clock_irq()` raising
/// RCU_SOFTIRQ, ...): raise the vector and queue the handler's run time for it (charged when
/// the softirq runs, not in the tick handler).
fn tick_raise_background_softirqs(k: &mut Kernel, cpu: CpuId) {
    let now = k.now;
    let mut i = 0;
    while i < k.cpus[cpu as usize].tick.softirq_due.len() {
        let (due, src) = k.cpus[cpu as usize].tick.softirq_due[i];
        if due <= now {
            let s = &k.cfg.background.sources[src as usize];
            let (vec, d) = (s.vec, s.runtime);
            let next = s.next_interval(&mut k.cpus[cpu as usize].bg_rng);
            let run = d.draw(&mut k.cpus[cpu as usize].bg_rng);
            let c = &mut k.cpus[cpu as usize];
            c.tick.softirq_due[i].0 = now + next;
            c.softirq_work[vec as usize] += run;
            crate::linux::kernel::softirq::__raise_softirq_irqoff(k, cpu, vec);
        }
        i += 1;
    }
}

/// Models `tick_nohz_idle_enter()` — kernel/time/tick-sched.c @ v6.10 (bookkeeping only: sets
/// `inidle`; its cost is part of `do_idle()` entry).
pub fn tick_nohz_idle_enter(k: &mut Kernel, cpu: CpuId) {
    k.cpus[cpu as usize].tick.inidle = true;
}

/// Models `tick_nohz_idle_got_tick()` — kernel/time/tick-sched.c @ v6.10: whether the tick's
/// handler ran since the idle loop was entered (or since the last call), clearing the flag.
pub fn tick_nohz_idle_got_tick(k: &mut Kernel, cpu: CpuId) -> bool {
    std::mem::take(&mut k.cpus[cpu as usize].tick.got_idle_tick)
}

/// `KTIME_MAX`: the distance to an event that is not coming.
pub const KTIME_MAX: Time = i64::MAX as Time;

/// The model's stand-in for the next timer event of a CPU that has none queued (a machine run
/// without background, where the kernel would still have its softlockup watchdog's hrtimer,
/// 0-4 s away): 1 s. Never used when any hrtimer or timer is queued on the CPU.
pub const NO_TIMER_HORIZON: Time = NSEC_PER_SEC;

/// Models `tick_nohz_get_sleep_length()` — kernel/time/tick-sched.c @ v6.10. Returns the time
/// to the next timer event if the tick were stopped, and `delta_next`: the time to the event
/// the CPU's clockevent device is programmed for now (the next tick while the tick runs, or an
/// earlier hrtimer; [`KTIME_MAX`] if nothing is programmed). The first is the earliest of the
/// next sleeper, the watchdog and the next non-deferrable timer-wheel expiry: the kernel's
/// `tick_nohz_next_event()` (the timer wheel, [`KTIME_MAX`] when it is empty) lowered to
/// `hrtimer_next_event_without()` (every hrtimer but the tick: sleepers, the softlockup
/// watchdog, up to 4 s away), with no horizon of its own. As `tick_nohz_next_event()` does, a
/// running tick with a timer-wheel expiry due by the next tick gives `delta_next` instead.
/// When nothing at all is queued (a machine run without background: the kernel would still
/// have its watchdog hrtimer) the model stands in a 1 s horizon, [`NO_TIMER_HORIZON`].
/// Simplifications: `can_stop_idle_tick()`'s and `rcu_needs_cpu()`'s vetoes and the
/// timekeeping CPU's `timekeeping_max_deferment()` cap (minutes for a TSC, beyond the
/// watchdog) are not modelled; "now" is the current instant, not `ts->idle_entrytime`.
pub fn tick_nohz_get_sleep_length(k: &Kernel, cpu: CpuId) -> (Time, Time) {
    let ts = &k.cpus[cpu as usize].tick;
    let delta_next = next_clock_event(k, cpu).map_or(KTIME_MAX, |t| t.saturating_sub(k.now));
    let wheel = super::timer::next_timer_event(k, cpu);
    if !ts.stopped && wheel.is_some_and(|t| t <= ts.next_tick) {
        return (delta_next, delta_next);
    }
    let sleeper = ts.sleepers.iter().map(|&(_, soft, _)| soft).min();
    let watchdog = ts.watchdog.map(|(t, _)| t);
    let next = [sleeper, watchdog, wheel].into_iter().flatten().min().unwrap_or(k.now + NO_TIMER_HORIZON);
    (next.saturating_sub(k.now), delta_next)
}

/// Models `tick_nohz_idle_stop_tick()` -> `tick_nohz_stop_tick()`: stop the periodic tick on
/// idle entry; on the first stop, `nohz_balance_enter_idle()`. Returns the cost.
pub fn tick_nohz_idle_stop_tick(k: &mut Kernel, cpu: CpuId) -> Time {
    if k.cpus[cpu as usize].tick.stopped {
        return 0;
    }
    k.cpus[cpu as usize].tick.stopped = true;
    k.stats.tick_stops += 1;
    let c = crate::linux::kernel::sched::fair::nohz_balance_enter_idle(k, cpu);
    tick_program(k, cpu);
    k.costs.tick_stop + c
}

/// Models `tick_nohz_idle_exit()`: restart a stopped tick (hrtimer reprogram). Returns the
/// cost beyond the do_idle exit bookkeeping.
pub fn tick_nohz_idle_exit(k: &mut Kernel, cpu: CpuId) -> Time {
    k.cpus[cpu as usize].tick.inidle = false;
    if !k.cpus[cpu as usize].tick.stopped {
        return 0;
    }
    let nb = next_boundary(k);
    let ts = &mut k.cpus[cpu as usize].tick;
    ts.stopped = false;
    ts.next_tick = nb;
    tick_program(k, cpu);
    k.costs.tick_restart
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Time = 1_000_000;

    /// CPU 0 of `xeon-128-4n` at 10.3 ms with the tick running and nothing queued.
    fn cpu() -> Kernel {
        let mut k = Kernel::for_test("xeon-128-4n");
        k.now = 10 * MS + 300_000;
        let ts = &mut k.cpus[0].tick;
        (ts.stopped, ts.next_tick, ts.watchdog) = (false, 11 * MS, None);
        ts.sleepers.clear();
        k.cpus[0].timers.timers.clear();
        k
    }

    /// `tick_nohz_get_sleep_length()` has no horizon of its own: with only the softlockup
    /// watchdog's hrtimer queued, 3 s away, the sleep length is those 3 s. The model once
    /// capped it at 1 s on every CPU, so every CPU without a nearer timer read the same 1 s,
    /// and menu's floor correction factor (7/8192) made that a prediction of 854 us on all of
    /// them: under a tick period, over C6's 600 us residency (issue 38, UDP_RR at 25-50%).
    #[test]
    fn the_sleep_length_reaches_the_watchdog_past_one_second() {
        let mut k = cpu();
        k.cpus[0].tick.watchdog = Some((k.now + 3_000 * MS, 0));
        assert_eq!(tick_nohz_get_sleep_length(&k, 0), (3_000 * MS, 700_000));
        // A nearer hrtimer (a sleeper) comes first.
        let t = k.now + 5 * MS;
        k.cpus[0].tick.sleepers.push((t, t, 1));
        assert_eq!(tick_nohz_get_sleep_length(&k, 0).0, 5 * MS);
    }

    /// Nothing queued at all (a machine run without background, whose kernel would still have
    /// its watchdog): the model's stand-in horizon.
    #[test]
    fn with_nothing_queued_the_sleep_length_is_the_stand_in_horizon() {
        let k = cpu();
        assert_eq!(tick_nohz_get_sleep_length(&k, 0), (NO_TIMER_HORIZON, 700_000));
    }
}
