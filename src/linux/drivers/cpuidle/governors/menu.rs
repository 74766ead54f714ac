//! Models the menu governor, `drivers/cpuidle/governors/menu.c` @ v6.10, simplified: the
//! prediction is the smaller of the time to the next timer and the "typical interval" of the
//! last 8 idle periods (with menu's outlier rejection); there is no correction-factor bucket
//! table and no PM QoS latency limit. Integer arithmetic only.

use super::super::INTERVALS;
use crate::linux::kernel::time::tick_sched;
use crate::linux::{CpuId, Kernel};

/// Models `get_typical_interval()`: the average of the recent intervals if their spread is
/// small, dropping the largest outlier up to a few times; `None` if there is no stable value.
pub fn get_typical_interval(ints: &[u64]) -> Option<u64> {
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
        // Accept when the standard deviation is at most 20 us, or the average is at least six
        // standard deviations (menu's test, in squares to avoid roots).
        if var <= 400_000_000 || avg * avg > 36 * var {
            return Some(avg as u64);
        }
        if (kept.len() * 4) <= INTERVALS * 3 {
            return None;
        }
        limit = *kept.iter().max().expect("non-empty") - 1;
    }
}

/// Models `menu_select()`: returns the state index and whether to stop the tick.
pub fn menu_select(k: &mut Kernel, cpu: CpuId) -> (u8, bool) {
    let next_timer_ns = tick_sched::tick_nohz_get_sleep_length(k, cpu);
    let dev = &k.cpus[cpu as usize].idle_dev;
    let n = dev.nr_intervals.min(INTERVALS);
    let typical = if n == INTERVALS { get_typical_interval(&dev.intervals[..n]) } else { None };
    let predicted = typical.map_or(next_timer_ns, |t| t.min(next_timer_ns));
    let mut idx = 0u8;
    for (i, s) in k.m.idle_states.iter().enumerate() {
        if s.disabled {
            continue;
        }
        if i > 0 && s.target_residency_ns > predicted {
            break;
        }
        idx = i as u8;
    }
    let polling = matches!(k.m.idle_states[idx as usize].kind, crate::hw::IdleKind::Poll);
    let tick_stopped = k.cpus[cpu as usize].tick.stopped;
    let stop_tick = !((polling || predicted < k.tick_nsec()) && !tick_stopped);
    (idx, stop_tick)
}

/// Models `menu_reflect()` + `menu_update()`: record the measured idle interval.
pub fn menu_reflect(k: &mut Kernel, cpu: CpuId, residency_ns: u64) {
    let dev = &mut k.cpus[cpu as usize].idle_dev;
    dev.last_residency_ns = residency_ns;
    dev.intervals[dev.interval_ptr] = residency_ns;
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
