//! Models the menu governor, `drivers/cpuidle/governors/menu.c` @ v6.10: the prediction is
//! the smaller of the time to the next timer scaled by a per-bucket correction factor, and the
//! "typical interval" of the last 8 idle periods (with menu's outlier rejection).
//! Simplifications: no iowait buckets, no PM QoS latency limit; the recent intervals are kept
//! in ns (the kernel keeps microseconds). Integer arithmetic only.

use super::super::INTERVALS;
use crate::linux::kernel::time::tick_sched;
use crate::linux::{CpuId, Kernel};

/// Models `get_typical_interval()`: the average of the recent intervals if their spread is
/// small, dropping the largest outlier up to a few times; `None` if there is no stable value.
///
/// Runs on every idle entry, so it keeps no list of the kept values (each pass re-filters
/// `ints` by the limit) and divides in 64 bits whenever the 128-bit sum fits, which gives the
/// same quotient without the 128-bit division routine.
pub fn get_typical_interval(ints: &[u64]) -> Option<u64> {
    #[inline]
    fn div(a: u128, n: u128) -> u128 {
        if a <= u64::MAX as u128 {
            (a as u64 / n as u64) as u128
        } else {
            a / n
        }
    }
    let mut limit = u64::MAX;
    loop {
        let kept = || ints.iter().copied().filter(move |&v| v <= limit);
        let (mut count, mut sum, mut max) = (0usize, 0u128, 0u64);
        for v in kept() {
            count += 1;
            sum += v as u128;
            max = max.max(v);
        }
        let n = count as u128;
        if n == 0 {
            return None;
        }
        let avg = div(sum, n);
        let var: u128 = if max < 1 << 30 && count <= 16 {
            // Every square is below 2^60 and at most 16 of them are summed: 64 bits hold it.
            let a = avg as u64;
            (kept().map(|v| v.abs_diff(a).pow(2)).sum::<u64>() / count as u64) as u128
        } else {
            div(kept().map(|v| (v as i128 - avg as i128).unsigned_abs().pow(2)).sum::<u128>(), n)
        };
        // Accept when the standard deviation is at most 20 us, or the average is at least six
        // standard deviations (menu's test, in squares to avoid roots).
        if var <= 400_000_000 || avg * avg > 36 * var {
            return Some(avg as u64);
        }
        if (count * 4) <= INTERVALS * 3 {
            return None;
        }
        limit = max - 1;
    }
}

/// menu's RESOLUTION and DECAY: the correction factor is a fixed-point ratio scaled by
/// RESOLUTION * DECAY.
const RESOLUTION: u64 = 1024;
const DECAY: u64 = 8;
/// Idle periods longer than this count as perfect predictions (MAX_INTERESTING, 50 ms).
const MAX_INTERESTING_NS: u64 = 50_000_000;
/// Number of correction-factor buckets (no iowait split in the model).
pub const BUCKETS: usize = 6;

/// Models `which_bucket()`: the decade of the time to the next timer.
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

/// Models `menu_select()`: returns the state index and whether to stop the tick. First folds
/// in the previous idle period (`menu_update()`), then predicts this one as the smaller of
/// the corrected time to the next timer and the typical recent interval.
pub fn menu_select(k: &mut Kernel, cpu: CpuId) -> (u8, bool) {
    menu_update(k, cpu);
    let next_timer_ns = tick_sched::tick_nohz_get_sleep_length(k, cpu);
    let tick_stopped = k.cpus[cpu as usize].tick.stopped;
    let states = &k.m.idle_states;
    let first_deeper = states.iter().skip(1).find(|s| !s.disabled);
    let dev = &mut k.cpus[cpu as usize].idle_dev;
    dev.next_timer_ns = next_timer_ns;
    dev.bucket = which_bucket(next_timer_ns);
    if !states[0].disabled && first_deeper.is_none_or(|s| next_timer_ns < s.target_residency_ns) {
        // State 0 will be used whatever the prediction; keep the tick if it polls.
        return (0, states[0].kind != crate::hw::IdleKind::Poll);
    }
    let n = dev.nr_intervals.min(INTERVALS);
    let typical = if n == INTERVALS { get_typical_interval(&dev.intervals[..n]) } else { None };
    let corrected =
        (next_timer_ns as u128 * dev.correction_factor[dev.bucket] as u128 / (RESOLUTION * DECAY) as u128) as u64;
    let predicted = typical.map_or(corrected, |t| t.min(corrected));
    // The first enabled state is the fallback; then the deepest one whose residency fits.
    let mut idx: Option<u8> = None;
    for (i, s) in states.iter().enumerate() {
        if s.disabled {
            continue;
        }
        if idx.is_some() && s.target_residency_ns > predicted {
            break;
        }
        idx = Some(i as u8);
    }
    let idx = idx.unwrap_or(0);
    // CPUIDLE_FLAG_POLLING: only the POLL state (MWAIT states set TIF_POLLING_NRFLAG, but
    // they are not "polling states" to the governor).
    let polling = states[idx as usize].kind == crate::hw::IdleKind::Poll;
    let stop_tick = !((polling || predicted < k.tick_nsec()) && !tick_stopped);
    (idx, stop_tick)
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
    dev.correction_factor[b] = f.max(1);
    dev.intervals[dev.interval_ptr] = measured;
    dev.interval_ptr = (dev.interval_ptr + 1) % INTERVALS;
    dev.nr_intervals += 1;
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The first version (a list of kept values, 128-bit division throughout).
    fn typical_interval_reference(ints: &[u64]) -> Option<u64> {
        let mut limit = u64::MAX;
        loop {
            let kept: Vec<u64> = ints.iter().copied().filter(|&v| v <= limit).collect();
            let n = kept.len() as u128;
            if n == 0 {
                return None;
            }
            let sum: u128 = kept.iter().map(|&v| v as u128).sum();
            let avg = sum / n;
            let var: u128 = kept.iter().map(|&v| (v as i128 - avg as i128).unsigned_abs().pow(2)).sum::<u128>() / n;
            if var <= 400_000_000 || avg * avg > 36 * var {
                return Some(avg as u64);
            }
            if (kept.len() * 4) <= INTERVALS * 3 {
                return None;
            }
            limit = *kept.iter().max().expect("non-empty") - 1;
        }
    }

    proptest::proptest! {
        #[test]
        fn typical_interval_matches_reference(
            ints in proptest::collection::vec(
                proptest::prop_oneof![0u64..50_000, 0u64..100_000_000, 0u64..(1u64 << 62)],
                INTERVALS,
            )
        ) {
            proptest::prop_assert_eq!(get_typical_interval(&ints), typical_interval_reference(&ints));
        }
    }

    #[test]
    fn typical_interval_rejects_outliers() {
        assert_eq!(get_typical_interval(&[2000; 8]), Some(2000));
        let mut v = [2000u64; 8];
        v[3] = 4_000_000;
        assert_eq!(get_typical_interval(&v), Some(2000));
        let wild = [1_000, 9_000_000, 50_000, 3_000_000, 7_000, 20_000_000, 400_000, 12_000_000];
        assert_eq!(get_typical_interval(&wild), None);
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
        (k, stored)
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
        let (_, s) = folded(idx, 50_000_000, 3 * exit + 1000, false);
        assert_eq!(s, 2 * exit + 1000);
        // Under twice the exit latency: halved (the state was likely never reached).
        let (_, s) = folded(idx, 50_000_000, exit + 10, false);
        assert_eq!(s, (exit + 10) / 2);
        // Never more than the time to the next timer.
        let (_, s) = folded(idx, 1000, 3 * exit + 5000, false);
        assert_eq!(s, 1000);
    }

    #[test]
    fn menu_update_counts_an_unexpected_tick_as_a_long_period() {
        let (idx, exit) = deepest(&Kernel::for_test("xeon-128-4n"));
        let k = Kernel::for_test("xeon-128-4n");
        let far = 10 * k.tick_nsec();
        let (_, s) = folded(idx, far, 3 * exit, true);
        assert_eq!(s, far.min(9 * MAX_INTERESTING_NS / 10));
        // The tick was due within the prediction: the residency counts as measured.
        let near = k.tick_nsec() / 2;
        let (_, s) = folded(idx, near, near / 4 + 2 * exit + 1, true);
        assert_eq!(s, near / 4 + exit + 1);
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
        assert_eq!(d.intervals[(d.interval_ptr + INTERVALS - 1) % INTERVALS], 700_000);
    }

    #[test]
    fn a_bail_out_is_not_reflected_to_menu() {
        let mut k = Kernel::for_test("xeon-128-4n");
        k.m.governor = crate::hw::Governor::Menu;
        super::super::reflect(&mut k, 0, crate::linux::drivers::cpuidle::EBUSY_IDX, 0);
        assert!(!k.cpus[0].idle_dev.needs_update, "cpuidle_reflect() skips a negative index");
        assert_eq!(k.cpus[0].idle_dev.nr_intervals, 0);
    }
}
