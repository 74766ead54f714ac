//! Models the menu governor, `drivers/cpuidle/governors/menu.c` @ v6.10: the prediction is
//! the smaller of the time to the next timer scaled by a per-bucket correction factor, and the
//! "typical interval" of the last 8 idle periods (with menu's outlier rejection).
//! Simplifications: no iowait buckets, no PM QoS latency limit, no tick-wakeup special case.
//! Integer arithmetic only.

use super::super::INTERVALS;
use crate::linux::kernel::time::tick_sched;
use crate::linux::{CpuId, Kernel};

/// Models `get_typical_interval()`: the average of the recent intervals if their spread is
/// small, dropping the largest outlier up to a few times; `None` if there is no stable value.
pub fn get_typical_interval(ints: &[u64]) -> Option<u64> {
    let mut limit = u64::MAX;
    loop {
        // The intervals still kept, filtered on each pass rather than collected (this runs at
        // every idle entry).
        let kept = || ints.iter().copied().filter(move |&v| v <= limit);
        let nr_kept = kept().count();
        let n = nr_kept as u128;
        if n == 0 {
            return None;
        }
        let sum: u128 = kept().map(|v| v as u128).sum();
        let avg = sum / n;
        let var: u128 = kept().map(|v| (v as i128 - avg as i128).unsigned_abs().pow(2)).sum::<u128>() / n;
        // Accept when the standard deviation is at most 20 us, or the average is at least six
        // standard deviations (menu's test, in squares to avoid roots).
        if var <= 400_000_000 || avg * avg > 36 * var {
            return Some(avg as u64);
        }
        if (nr_kept * 4) <= INTERVALS * 3 {
            return None;
        }
        limit = kept().max().expect("non-empty") - 1;
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

/// Models `menu_reflect()`: note the residency of the period that just ended (0 when the
/// state was not entered because NEED_RESCHED was already set); `menu_update()` folds it in
/// at the next selection.
pub fn menu_reflect(k: &mut Kernel, cpu: CpuId, residency_ns: u64) {
    let dev = &mut k.cpus[cpu as usize].idle_dev;
    dev.last_residency_ns = residency_ns;
    dev.needs_update = true;
}

/// Models `menu_update()`: update the correction factor of the bucket used and the ring of
/// recent intervals.
fn menu_update(k: &mut Kernel, cpu: CpuId) {
    let dev = &mut k.cpus[cpu as usize].idle_dev;
    if !dev.needs_update {
        return;
    }
    dev.needs_update = false;
    let measured = dev.last_residency_ns;
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
