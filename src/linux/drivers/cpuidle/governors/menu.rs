//! Models the menu governor, `drivers/cpuidle/governors/menu.c` @ v6.10 (with `gov.h`'s
//! RESIDENCY_THRESHOLD_NS): the prediction is the smaller of the "typical interval" of the
//! last 8 idle periods (with menu's outlier rejection) and, when that is not short, the time
//! to the next timer scaled by a per-bucket correction factor; the state is the deepest one
//! whose target residency and exit latency fit it, with v6.10's rules for the tick.
//! Simplifications: no task is ever in iowait in the model, so the iowait buckets and the
//! performance multiplier (`1 + 10 * nr_iowaiters`) are those of zero iowaiters; no PM QoS
//! request, so the latency limit is the default one. As in the kernel, the recent intervals
//! are whole microseconds in 32 bits and the ring starts at zero. Integer arithmetic only.

use super::super::INTERVALS;
use crate::linux::kernel::time::tick_sched::{self, KTIME_MAX};
use crate::linux::{CpuId, Kernel};

/// `get_typical_interval()`'s "no typical interval" (UINT_MAX).
pub const NO_TYPICAL_US: u32 = u32::MAX;

/// Models `get_typical_interval()` — drivers/cpuidle/governors/menu.c @ v6.10: the average of
/// the recent intervals (us) if their spread is small, dropping the largest values (all
/// copies of the maximum at once) while more than 3/4 of the ring is kept; [`NO_TYPICAL_US`]
/// if there is no stable value or the ring holds only zeros (a fresh device).
pub fn get_typical_interval(ints: &[u32; INTERVALS]) -> u32 {
    // The first pass keeps values up to INT_MAX (larger ones are wrapped measures).
    let mut thresh = i32::MAX as u32;
    loop {
        let (mut max, mut sum, mut divisor) = (0u32, 0u64, 0u64);
        for &v in ints.iter().filter(|&&v| v <= thresh) {
            sum += v as u64;
            divisor += 1;
            max = max.max(v);
        }
        if max == 0 {
            return NO_TYPICAL_US;
        }
        let avg = (sum / divisor) as u32;
        // The squares are summed in 64 bits with the kernel's wrap-around.
        let variance = ints
            .iter()
            .filter(|&&v| v <= thresh)
            .map(|&v| (v as i64 - avg as i64).wrapping_mul(v as i64 - avg as i64) as u64)
            .fold(0u64, u64::wrapping_add)
            / divisor;
        // Accept when the standard deviation is at most 20 us, or when at least 3/4 of the ring
        // is kept and the average exceeds six standard deviations (squares, no roots).
        if variance <= u64::MAX / 36
            && ((avg as u64 * avg as u64 > variance * 36 && divisor * 4 >= INTERVALS as u64 * 3) || variance <= 400)
        {
            return avg;
        }
        if divisor * 4 <= INTERVALS as u64 * 3 {
            return NO_TYPICAL_US;
        }
        thresh = max - 1;
    }
}

/// menu's RESOLUTION and DECAY: the correction factor is a fixed-point ratio scaled by
/// RESOLUTION * DECAY.
const RESOLUTION: u64 = 1024;
const DECAY: u64 = 8;
/// Idle periods longer than this count as perfect predictions (MAX_INTERESTING, 50 ms).
const MAX_INTERESTING_NS: u64 = 50_000_000;
/// Number of correction-factor buckets (the kernel's 12 less the iowait half, never used).
pub const BUCKETS: usize = 6;
/// RESIDENCY_THRESHOLD_NS — drivers/cpuidle/governors/gov.h @ v6.10: a typical interval at or
/// under this is trusted without asking for the time to the next timer.
pub const RESIDENCY_THRESHOLD_NS: u64 = 15_000;
/// `cpuidle_governor_latency_req()` without any PM QoS request: the CPU latency QoS default
/// (PM_QOS_CPU_LATENCY_DEFAULT_VALUE, 2000 s) in ns.
const LATENCY_REQ_DEFAULT_NS: u64 = 2_000 * 1_000_000_000;

/// Models `which_bucket()` with no iowaiters: the decade of the time to the next timer.
fn which_bucket(duration_ns: u64) -> usize {
    match duration_ns {
        d if d < 10_000 => 0,
        d if d < 100_000 => 1,
        d if d < 1_000_000 => 2,
        d if d < 10_000_000 => 3,
        d if d < 100_000_000 => 4,
        _ => 5,
    }
}

/// Models `menu_select()` — drivers/cpuidle/governors/menu.c @ v6.10: returns the state index
/// and whether to stop the tick. Each step below is one rule of the kernel function.
pub fn menu_select(k: &mut Kernel, cpu: CpuId) -> (u8, bool) {
    use crate::hw::IdleKind;
    // Step 0: fold in the previous idle period (`menu_update()` when `needs_update`).
    menu_update(k, cpu);
    let tick_nsec = k.tick_nsec();
    let tick_stopped = k.cpus[cpu as usize].tick.stopped;
    let mut latency_req = LATENCY_REQ_DEFAULT_NS;

    // Step 1: the typical interval first. Only when it is over RESIDENCY_THRESHOLD_NS is the
    // next timer asked for (`tick_nohz_get_sleep_length()`), and the prediction is the smaller
    // of the two, the timer distance scaled by its bucket's correction factor and rounded to
    // the closest microsecond. Otherwise the timer is taken as far away (KTIME_MAX, last
    // bucket) and the tick as half a period away.
    let typical_us = get_typical_interval(&k.cpus[cpu as usize].idle_dev.intervals);
    let mut predicted_ns = typical_us as u64 * 1000;
    let (next_timer_ns, delta_tick, bucket) = if predicted_ns > RESIDENCY_THRESHOLD_NS {
        let (delta, delta_tick) = tick_sched::tick_nohz_get_sleep_length(k, cpu);
        let bucket = which_bucket(delta);
        let factor = k.cpus[cpu as usize].idle_dev.correction_factor[bucket];
        let div = (RESOLUTION * DECAY * 1000) as u128;
        // `unsigned int timer_us` in the kernel: the quotient is truncated to 32 bits.
        let timer_us = ((div / 2 + delta as u128 * factor as u128) / div) as u32;
        predicted_ns = predicted_ns.min(timer_us as u64 * 1000);
        (delta, delta_tick, bucket)
    } else {
        (KTIME_MAX, tick_nsec / 2, which_bucket(KTIME_MAX))
    };
    let dev = &mut k.cpus[cpu as usize].idle_dev;
    dev.next_timer_ns = next_timer_ns;
    dev.bucket = bucket;

    // Step 2: state 0 will be used whatever the prediction when state 1's target residency is
    // beyond the next timer (or its exit latency beyond the limit): return it, keeping the tick
    // if it polls.
    let states = &k.m.idle_states;
    let polling = |i: usize| states[i].kind == IdleKind::Poll;
    if states.len() <= 1
        || ((next_timer_ns < states[1].target_residency_ns || latency_req < states[1].exit_latency_ns)
            && !states[0].disabled)
    {
        return (0, !polling(0));
    }

    // Step 3: with the tick already stopped a short misprediction is costly (the CPU may sit
    // in a shallow state until the next timer), so a prediction under a tick period becomes
    // the time to the next timer. With the tick running, the exit latency may not exceed the
    // prediction (`interactivity_req`: the prediction over the performance multiplier, 1
    // without iowaiters).
    if tick_stopped {
        if predicted_ns < tick_nsec {
            predicted_ns = next_timer_ns;
        }
    } else {
        latency_req = latency_req.min(predicted_ns);
    }

    // Step 4: the deepest enabled state whose target residency fits the prediction and whose
    // exit latency fits the limit. At the first state whose residency does not fit:
    // (a) if the state so far polls, take this one instead when its exit latency fits and its
    //     residency is within the next timer (a physical state rather than busy polling);
    // (b) else stop there if the prediction is under a tick period;
    // (c) else, with the tick running, stop there and lower the prediction to that state's
    //     residency (a shallow state keeps the tick, which lets the governor run again);
    // (d) else (tick stopped) take this deeper state if the one so far is shallow (residency
    //     under a tick period) and this one's residency is within `delta_tick`, so as not to
    //     be stuck in the shallow one, and return with the tick stopped.
    let mut idx: Option<usize> = None;
    for (i, s) in states.iter().enumerate() {
        if s.disabled {
            continue;
        }
        let cur = *idx.get_or_insert(i);
        if s.target_residency_ns > predicted_ns {
            if polling(cur) && s.exit_latency_ns <= latency_req && s.target_residency_ns <= next_timer_ns {
                predicted_ns = s.target_residency_ns;
                idx = Some(i);
                break;
            }
            if predicted_ns < tick_nsec {
                break;
            }
            if !tick_stopped {
                predicted_ns = states[cur].target_residency_ns;
                break;
            }
            let pick = if states[cur].target_residency_ns < tick_nsec && s.target_residency_ns <= delta_tick {
                i
            } else {
                cur
            };
            return (pick as u8, true);
        }
        if s.exit_latency_ns > latency_req {
            break;
        }
        idx = Some(i);
    }
    let mut idx = idx.unwrap_or(0);

    // Step 5: keep the tick when the state polls or the prediction is under a tick period
    // (and it is not stopped already); then, if the state's target residency is beyond the
    // time to the next tick (`delta_tick`), step down to the deepest enabled shallower state
    // whose residency fits it (state 0 if none does).
    let mut stop_tick = true;
    if (polling(idx) || predicted_ns < tick_nsec) && !tick_stopped {
        stop_tick = false;
        if idx > 0 && states[idx].target_residency_ns > delta_tick {
            for i in (0..idx).rev() {
                if states[i].disabled {
                    continue;
                }
                idx = i;
                if states[i].target_residency_ns <= delta_tick {
                    break;
                }
            }
        }
    }
    (idx as u8, stop_tick)
}

/// Models `menu_reflect()`: note the state entered, its residency (`cpuidle_enter_state()`
/// measures it from entry to exit, so it includes the exit latency) and whether the tick woke
/// the CPU (`tick_nohz_idle_got_tick()`); `menu_update()` folds them in at the next selection.
pub fn menu_reflect(k: &mut Kernel, cpu: CpuId, idx: u8, residency_ns: u64) {
    let got_tick = tick_sched::tick_nohz_idle_got_tick(k, cpu);
    let dev = &mut k.cpus[cpu as usize].idle_dev;
    dev.last_state_idx = idx;
    dev.last_residency_ns = residency_ns;
    dev.tick_wakeup = got_tick;
    dev.needs_update = true;
}

/// Models `menu_update()` — drivers/cpuidle/governors/menu.c @ v6.10: what the last idle period
/// measured, then the correction factor of the bucket used and the ring of recent intervals.
/// The measure is: 90% of MAX_INTERESTING when the tick woke a CPU that expected to sleep past
/// it (the prediction was wrong, count the period as long); the time to the next timer when the
/// polling state ran out of its time limit; else the residency less the state's exit latency
/// (halved instead when under twice the exit latency: the state was likely never reached);
/// at most the time to the next timer, so no factor exceeds one.
fn menu_update(k: &mut Kernel, cpu: CpuId) {
    let tick_nsec = k.tick_nsec();
    let dev = &k.cpus[cpu as usize].idle_dev;
    if !dev.needs_update {
        return;
    }
    let state = &k.m.idle_states[(dev.last_state_idx as usize).min(k.m.idle_states.len() - 1)];
    let measured = if dev.tick_wakeup && dev.next_timer_ns > tick_nsec {
        9 * MAX_INTERESTING_NS / 10
    } else if state.kind == crate::hw::IdleKind::Poll && dev.poll_time_limit {
        dev.next_timer_ns
    } else {
        let r = dev.last_residency_ns;
        let exit = state.exit_latency_ns;
        if r > 2 * exit {
            r - exit
        } else {
            r / 2
        }
    };
    let measured = measured.min(dev.next_timer_ns);
    let dev = &mut k.cpus[cpu as usize].idle_dev;
    dev.needs_update = false;
    let b = dev.bucket;
    let mut f = dev.correction_factor[b];
    f -= f / DECAY;
    if dev.next_timer_ns > 0 && measured < MAX_INTERESTING_NS {
        f += RESOLUTION * measured / dev.next_timer_ns;
    } else {
        f += RESOLUTION;
    }
    dev.correction_factor[b] = f;
    // The ring holds whole microseconds in 32 bits (`ktime_to_us()` into an unsigned int:
    // a measure of KTIME_MAX, a polling state timed out with no timer read, wraps).
    dev.intervals[dev.interval_ptr] = (measured / 1000) as u32;
    dev.interval_ptr = (dev.interval_ptr + 1) % INTERVALS;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typical_interval_rejects_outliers_upwards() {
        assert_eq!(get_typical_interval(&[2000; 8]), 2000);
        let mut v = [2000u32; 8];
        v[3] = 4_000_000;
        assert_eq!(get_typical_interval(&v), 2000);
        let wild = [1, 9_000, 50, 3_000, 7, 20_000, 400, 12_000];
        assert_eq!(get_typical_interval(&wild), NO_TYPICAL_US);
    }

    /// v6.10 accepts "average over six standard deviations" only while 3/4 of the ring is
    /// kept: three equal outliers go at once, the five left spread over 20 us, no answer.
    #[test]
    fn typical_interval_needs_three_quarters_of_the_ring_for_the_six_sigma_rule() {
        let v = [1000, 1100, 1000, 1100, 1000, 5000, 5000, 5000];
        assert_eq!(get_typical_interval(&v), NO_TYPICAL_US);
        // Within 20 us of each other the five are accepted (the variance rule has no quorum).
        let v = [1000, 1010, 1000, 1010, 1000, 5000, 5000, 5000];
        assert_eq!(get_typical_interval(&v), 1004);
    }

    /// `menu_enable_device()` zeroes the ring: no typical interval until a nonzero interval
    /// is in it, and then the zeros count (one 30 us period gives a 3 us typical interval).
    #[test]
    fn a_fresh_ring_of_zeros_gives_no_typical_interval_then_counts_its_zeros() {
        let mut v = [0u32; 8];
        assert_eq!(get_typical_interval(&v), NO_TYPICAL_US);
        v[0] = 30;
        assert_eq!(get_typical_interval(&v), 3);
    }

    /// Values over INT_MAX (a wrapped measure) are left out of the first pass.
    #[test]
    fn typical_interval_ignores_values_over_int_max() {
        let mut v = [500u32; 8];
        v[2] = u32::MAX - 5;
        assert_eq!(get_typical_interval(&v), 500);
    }
}

#[cfg(test)]
mod select_tests {
    use super::*;
    use crate::sim::Time;

    const MS: Time = 1_000_000;
    const US: Time = 1_000;

    /// `xeon-128-4n` under menu (POLL, C1 1/1 us, C1E 4/4 us, C6 170/600 us, HZ=1000) on
    /// CPU 0 at 10 ms + `into_tick` with the tick running, every recent interval `typical_us`.
    fn cpu(typical_us: u32, into_tick: Time) -> Kernel {
        let mut k = Kernel::for_test("xeon-128-4n");
        k.m.governor = crate::hw::Governor::Menu;
        assert_eq!(k.tick_nsec(), MS);
        assert_eq!(
            k.m.idle_states.iter().map(|s| (s.exit_latency_ns, s.target_residency_ns)).collect::<Vec<_>>(),
            [(0, 0), (US, US), (4 * US, 4 * US), (170 * US, 600 * US)]
        );
        k.now = 10 * MS + into_tick;
        k.cpus[0].tick.stopped = false;
        k.cpus[0].tick.next_tick = 11 * MS;
        k.cpus[0].idle_dev.intervals = [typical_us; INTERVALS];
        k
    }

    fn sleeper_in(k: &mut Kernel, d: Time) {
        let t = k.now + d;
        k.cpus[0].tick.sleepers.push((t, t, 1));
    }

    /// Step 5: the tick is kept (prediction under a period) and C6's 600 us residency is
    /// beyond the tick 300 us away: step down to C1E. With the tick 700 us away, C6 stays.
    #[test]
    fn a_kept_tick_nearer_than_c6s_residency_steps_down_to_c1e() {
        let mut k = cpu(800, 700 * US);
        assert_eq!(menu_select(&mut k, 0), (2, false));
        let mut k = cpu(800, 300 * US);
        assert_eq!(menu_select(&mut k, 0), (3, false));
    }

    /// Step 1: a typical interval at or under 15 us is used without reading the next timer:
    /// the timer counts as far away (last bucket) and the tick as half a period away.
    #[test]
    fn a_short_typical_interval_does_not_read_the_next_timer() {
        let mut k = cpu(10, 0);
        sleeper_in(&mut k, 2 * MS);
        assert_eq!(menu_select(&mut k, 0), (2, false));
        assert_eq!((k.cpus[0].idle_dev.next_timer_ns, k.cpus[0].idle_dev.bucket), (KTIME_MAX, BUCKETS - 1));
        // Over the threshold the timer is read.
        let mut k = cpu(16, 0);
        sleeper_in(&mut k, 2 * MS);
        menu_select(&mut k, 0);
        assert_eq!((k.cpus[0].idle_dev.next_timer_ns, k.cpus[0].idle_dev.bucket), (2 * MS, 3));
    }

    /// A fresh (all-zero) ring has no typical interval, so the next timer is read.
    #[test]
    fn a_fresh_device_reads_the_next_timer() {
        let mut k = cpu(0, 0);
        sleeper_in(&mut k, 2 * MS);
        assert_eq!(menu_select(&mut k, 0), (3, true), "2 ms x factor 1.0: C6, over a tick period");
        assert_eq!(k.cpus[0].idle_dev.next_timer_ns, 2 * MS);
    }

    /// Step 4a: POLL is the deepest state that fits, but C1's exit latency fits the prediction
    /// and its residency the next timer: C1 instead of busy polling.
    #[test]
    fn poll_is_promoted_to_c1_when_c1_fits_before_the_next_timer() {
        let mut k = cpu(10, 0);
        k.m.idle_states[1].target_residency_ns = 20 * US;
        assert_eq!(menu_select(&mut k, 0), (1, false));
        // C1's exit latency over the prediction: POLL stays.
        let mut k = cpu(10, 0);
        k.m.idle_states[1].target_residency_ns = 20 * US;
        k.m.idle_states[1].exit_latency_ns = 11 * US;
        assert_eq!(menu_select(&mut k, 0), (0, false));
    }

    /// Step 3 (tick running) and 4: a state whose exit latency exceeds the prediction is not
    /// taken even when its residency fits (`interactivity_req`).
    #[test]
    fn an_exit_latency_over_the_prediction_stops_the_search() {
        let mut k = cpu(35, 0);
        k.m.idle_states[2].exit_latency_ns = 40 * US;
        k.m.idle_states[2].target_residency_ns = 30 * US;
        assert_eq!(menu_select(&mut k, 0), (1, false));
    }

    /// Step 4c: a prediction over a tick period with a deeper state beyond it, tick running:
    /// stop at the shallower state and keep the tick (the prediction drops to its residency).
    #[test]
    fn a_running_tick_is_kept_when_the_deeper_state_does_not_fit() {
        let mut k = cpu(1500, 0);
        k.m.idle_states[3].target_residency_ns = 2 * MS;
        assert_eq!(menu_select(&mut k, 0), (2, false));
    }

    /// Step 3, tick stopped: a prediction under a tick period becomes the time to the next
    /// timer (5 ms here), so C6 rather than C1E; the tick stays stopped.
    #[test]
    fn a_stopped_tick_takes_the_timer_distance_for_a_short_prediction() {
        let mut k = cpu(100, 0);
        k.cpus[0].tick.stopped = true;
        sleeper_in(&mut k, 5 * MS);
        assert_eq!(menu_select(&mut k, 0), (3, true));
    }

    /// Step 4d, tick stopped: the state so far is shallow and the next one's residency is
    /// within the time to the next event: take the deeper one rather than sit in the shallow.
    #[test]
    fn a_stopped_tick_does_not_leave_the_cpu_stuck_in_a_shallow_state() {
        let mut k = cpu(2000, 0);
        k.cpus[0].tick.stopped = true;
        k.m.idle_states[3].target_residency_ns = 3 * MS;
        sleeper_in(&mut k, 50 * MS);
        assert_eq!(menu_select(&mut k, 0), (3, true));
        // The next event nearer than C6's residency: C1E.
        let mut k = cpu(2000, 0);
        k.cpus[0].tick.stopped = true;
        k.m.idle_states[3].target_residency_ns = 3 * MS;
        sleeper_in(&mut k, 2500 * US);
        assert_eq!(menu_select(&mut k, 0), (2, true));
    }

    /// The mechanism behind issue 38's UDP_RR cells: no typical interval (the ring's periods
    /// spread), the far bucket's correction factor at its floor (7: `f - f/8` no longer moves
    /// it and a 100 us period over seconds adds nothing), so the prediction is the timer
    /// distance x 7/8192. With the softlockup watchdog 3 s away, the time
    /// `tick_nohz_get_sleep_length()` returns, that is 2.56 ms: over a tick period, so C6 with
    /// the tick stopped. Under the old 1 s horizon it was 854 us: under a tick period, so the
    /// tick was kept and C6 taken only when the tick was at least C6's 600 us away (C1E here,
    /// the tick 300 us away): a mix of C6 and C1E that depended on where in the tick period
    /// each idle period began. With the watchdog 0.5 s away the prediction is 427 us: C1E.
    #[test]
    fn a_floor_correction_factor_times_the_watchdogs_distance_picks_the_state() {
        let wild = [1, 9_000, 50, 3_000, 7, 20_000, 400, 12_000];
        assert_eq!(get_typical_interval(&wild), NO_TYPICAL_US);
        let at = |watchdog: Time| {
            let mut k = cpu(0, 700 * US);
            k.cpus[0].idle_dev.intervals = wild;
            k.cpus[0].idle_dev.correction_factor[BUCKETS - 1] = 7;
            k.cpus[0].tick.watchdog = Some((k.now + watchdog, 0));
            let r = menu_select(&mut k, 0);
            assert_eq!(k.cpus[0].idle_dev.next_timer_ns, watchdog);
            r
        };
        assert_eq!(at(3_000 * MS), (3, true));
        assert_eq!(at(1_000 * MS), (2, false), "854 us: tick kept, C6 does not fit before it");
        assert_eq!(at(500 * MS), (2, false));
    }

    /// Step 2: state 1's residency beyond the next timer: state 0, tick kept as it polls.
    #[test]
    fn a_timer_before_state_1s_residency_gives_state_0() {
        let mut k = cpu(30, 0);
        k.m.idle_states[1].target_residency_ns = 20 * US;
        sleeper_in(&mut k, 10 * US);
        assert_eq!(menu_select(&mut k, 0), (0, false));
    }
}

#[cfg(test)]
mod update_tests {
    use super::*;

    /// A menu machine whose deepest state has an exit latency; one period reflected on CPU 0
    /// from state `idx` with `next_timer_ns` to the next timer, then folded in.
    fn folded(idx: u8, next_timer_ns: u64, residency_ns: u64, tick: bool) -> (Kernel, u64) {
        let mut k = Kernel::for_test("xeon-128-4n");
        k.m.governor = crate::hw::Governor::Menu;
        k.cpus[0].idle_dev.next_timer_ns = next_timer_ns;
        k.cpus[0].tick.got_idle_tick = tick;
        menu_reflect(&mut k, 0, idx, residency_ns);
        assert!(!k.cpus[0].tick.got_idle_tick, "menu_reflect reads and clears got_idle_tick");
        menu_update(&mut k, 0);
        let d = &k.cpus[0].idle_dev;
        let stored = d.intervals[(d.interval_ptr + INTERVALS - 1) % INTERVALS];
        (k, stored as u64)
    }

    fn deepest(k: &Kernel) -> (u8, u64) {
        let i = k.m.idle_states.len() - 1;
        (i as u8, k.m.idle_states[i].exit_latency_ns)
    }

    #[test]
    fn menu_update_deducts_the_exit_latency_from_the_residency() {
        let (idx, exit) = deepest(&Kernel::for_test("xeon-128-4n"));
        assert!(exit > 0, "the preset's deepest state has an exit latency");
        // Long enough: the exit latency comes off.
        // The ring keeps whole microseconds.
        let (_, s) = folded(idx, 50_000_000, 3 * exit + 1999, false);
        assert_eq!(s, (2 * exit + 1999) / 1000);
        // Under twice the exit latency: halved (the state was likely never reached).
        let (_, s) = folded(idx, 50_000_000, exit + 10, false);
        assert_eq!(s, (exit + 10) / 2 / 1000);
        // Never more than the time to the next timer.
        let (_, s) = folded(idx, 1000, 3 * exit + 5000, false);
        assert_eq!(s, 1);
    }

    #[test]
    fn menu_update_counts_an_unexpected_tick_as_a_long_period() {
        let (idx, exit) = deepest(&Kernel::for_test("xeon-128-4n"));
        let k = Kernel::for_test("xeon-128-4n");
        let far = 10 * k.tick_nsec();
        let (_, s) = folded(idx, far, 3 * exit, true);
        assert_eq!(s, far.min(9 * MAX_INTERESTING_NS / 10) / 1000);
        // The tick was due within the prediction: the residency counts as measured.
        let near = k.tick_nsec() / 2;
        let (_, s) = folded(idx, near, near / 4 + 2 * exit + 1, true);
        assert_eq!(s, (near / 4 + exit + 1) / 1000);
    }

    #[test]
    fn menu_update_takes_the_timer_distance_when_polling_ran_out() {
        let mut k = Kernel::for_test("xeon-128-4n");
        assert_eq!(k.m.idle_states[0].kind, crate::hw::IdleKind::Poll);
        k.cpus[0].idle_dev.next_timer_ns = 700_000;
        k.cpus[0].idle_dev.poll_time_limit = true;
        menu_reflect(&mut k, 0, 0, 20_000);
        menu_update(&mut k, 0);
        let d = &k.cpus[0].idle_dev;
        assert_eq!(d.intervals[(d.interval_ptr + INTERVALS - 1) % INTERVALS], 700);
    }

    /// Polling that ran out after a selection that never read the timer (KTIME_MAX) stores
    /// KTIME_MAX in microseconds cut to 32 bits, as the kernel's unsigned int ring does.
    #[test]
    fn a_timed_out_poll_without_a_timer_read_wraps_in_the_ring() {
        let mut k = Kernel::for_test("xeon-128-4n");
        k.cpus[0].idle_dev.next_timer_ns = KTIME_MAX;
        k.cpus[0].idle_dev.poll_time_limit = true;
        menu_reflect(&mut k, 0, 0, 20_000);
        menu_update(&mut k, 0);
        let d = &k.cpus[0].idle_dev;
        assert_eq!(d.intervals[0], (KTIME_MAX / 1000) as u32);
        assert_eq!(d.intervals[0], 2_783_138_807);
        assert_eq!(d.correction_factor[BUCKETS - 1], 8 * 1024, "counted as a perfect prediction");
    }

    #[test]
    fn a_bail_out_is_not_reflected_to_menu() {
        let mut k = Kernel::for_test("xeon-128-4n");
        k.m.governor = crate::hw::Governor::Menu;
        super::super::reflect(&mut k, 0, crate::linux::drivers::cpuidle::EBUSY_IDX, 0);
        assert!(!k.cpus[0].idle_dev.needs_update, "cpuidle_reflect() skips a negative index");
        assert_eq!(k.cpus[0].idle_dev.intervals, [0; INTERVALS]);
    }
}
