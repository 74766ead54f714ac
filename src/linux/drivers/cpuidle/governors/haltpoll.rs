//! Models the haltpoll governor, `drivers/cpuidle/governors/haltpoll.c` @ v6.10, used with the
//! `cpuidle-haltpoll` driver in KVM guests: poll (state 0) for up to the CPU's poll window,
//! then halt (state 1); the window grows when the guest is woken soon after halting and
//! shrinks after long halts (`adjust_poll_limit()`), between 0 and `guest_halt_poll_ns`. The
//! module parameters come from the machine ([`crate::hw::HaltpollParams`]); with
//! `guest_halt_poll_ns=0` the window never opens and every idle period halts with the tick
//! stopped.
//!
//! Simplified: no PM QoS, so the `latency_req == 0` early return (always poll) never applies.

use crate::linux::{CpuId, Kernel};

/// Models `haltpoll_select()`: halt while the window is closed; after a poll, halt only if the
/// window expired with nothing to do; after anything else, poll. Returns (state, stop_tick):
/// the tick is stopped only for a halt chosen by the first two rules.
pub fn haltpoll_select(k: &mut Kernel, cpu: CpuId) -> (u8, bool) {
    let dev = &k.cpus[cpu as usize].idle_dev;
    if dev.poll_limit_ns == 0 {
        return (1, true);
    }
    if dev.last_state_idx == 0 {
        if dev.poll_time_limit {
            return (1, true);
        }
        return (0, false);
    }
    (0, false)
}

/// Models `haltpoll_reflect()`: remember the state entered and, unless it was the poll state,
/// adjust the window by the residency. Not called after a bail-out of `call_cpuidle()`
/// ([`reflect`](super::reflect) skips the governor, as `cpuidle_reflect()` does).
pub fn haltpoll_reflect(k: &mut Kernel, cpu: CpuId, idx: u8, residency_ns: u64) {
    let p = k.m.haltpoll;
    let dev = &mut k.cpus[cpu as usize].idle_dev;
    dev.last_state_idx = idx;
    dev.last_residency_ns = residency_ns;
    if idx != 0 {
        dev.poll_limit_ns = adjust_poll_limit(&p, dev.poll_limit_ns, residency_ns);
    }
}

/// Models `adjust_poll_limit()`: grow the window (at least to `grow_start`, at most to
/// `guest_halt_poll_ns`) after a halt that was longer than the window but within
/// `guest_halt_poll_ns`; shrink it (divide, or reset when the divisor is 0) after a longer
/// halt if shrinking is allowed. The kernel computes the new value in an `unsigned int`, so it
/// wraps and truncates at 32 bits as there.
pub fn adjust_poll_limit(p: &crate::hw::HaltpollParams, poll_limit_ns: u64, block_ns: u64) -> u64 {
    let max = u64::from(p.guest_halt_poll_ns);
    if block_ns > poll_limit_ns && block_ns <= max {
        let mut val = poll_limit_ns.wrapping_mul(u64::from(p.guest_halt_poll_grow)) as u32;
        if val < p.guest_halt_poll_grow_start {
            val = p.guest_halt_poll_grow_start;
        }
        if val > p.guest_halt_poll_ns {
            val = p.guest_halt_poll_ns;
        }
        u64::from(val)
    } else if block_ns > max && p.guest_halt_poll_allow_shrink {
        let val = poll_limit_ns as u32;
        u64::from(val.checked_div(p.guest_halt_poll_shrink).unwrap_or(0))
    } else {
        poll_limit_ns
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hw::HaltpollParams;
    use crate::linux::drivers::cpuidle::EBUSY_IDX;

    fn guest(edit: impl Fn(&mut HaltpollParams)) -> Kernel {
        let mut k = Kernel::for_test("icx-vm-32");
        edit(&mut k.m.haltpoll);
        k
    }

    #[test]
    fn poll_window_grows_on_short_halts_and_shrinks_on_long_ones() {
        let mut k = guest(|_| {});
        assert_eq!(haltpoll_select(&mut k, 0), (1, true), "no poll window yet: halt, tick stopped");
        haltpoll_reflect(&mut k, 0, 1, 10_000);
        assert_eq!(k.cpus[0].idle_dev.poll_limit_ns, 50_000, "grows to grow_start");
        haltpoll_reflect(&mut k, 0, 1, 60_000);
        assert_eq!(k.cpus[0].idle_dev.poll_limit_ns, 100_000);
        haltpoll_reflect(&mut k, 0, 1, 150_000);
        assert_eq!(k.cpus[0].idle_dev.poll_limit_ns, 200_000, "capped at guest_halt_poll_ns");
        haltpoll_reflect(&mut k, 0, 1, 5_000_000);
        assert_eq!(k.cpus[0].idle_dev.poll_limit_ns, 100_000);
        assert_eq!(haltpoll_select(&mut k, 0), (0, false), "after a halt: poll, tick kept");
        // A poll that ran out: halt next. A bail-out (-EBUSY) is not reflected to the governor
        // (`cpuidle_reflect()` skips a negative index): the window and the last state stay, so
        // the next selection still halts.
        haltpoll_reflect(&mut k, 0, 0, 100_000);
        k.cpus[0].idle_dev.poll_time_limit = true;
        assert_eq!(haltpoll_select(&mut k, 0), (1, true));
        super::super::reflect(&mut k, 0, EBUSY_IDX, 0);
        assert_eq!(k.cpus[0].idle_dev.poll_limit_ns, 100_000);
        assert_eq!(k.cpus[0].idle_dev.last_state_idx, 0);
        assert_eq!(haltpoll_select(&mut k, 0), (1, true));
    }

    #[test]
    fn a_zero_guest_halt_poll_ns_never_polls() {
        // This guest's /sys/module/haltpoll/parameters/guest_halt_poll_ns reads 0.
        let mut k = guest(|p| p.guest_halt_poll_ns = 0);
        for resid in [0, 500, 10_000, 3_000_000] {
            haltpoll_reflect(&mut k, 0, 1, resid);
            assert_eq!(k.cpus[0].idle_dev.poll_limit_ns, 0);
            assert_eq!(haltpoll_select(&mut k, 0), (1, true));
        }
    }

    #[test]
    fn shrink_parameters_are_honoured() {
        let p = HaltpollParams { guest_halt_poll_allow_shrink: false, ..Default::default() };
        assert_eq!(adjust_poll_limit(&p, 80_000, 1_000_000), 80_000, "shrinking disabled");
        let p = HaltpollParams { guest_halt_poll_shrink: 0, ..Default::default() };
        assert_eq!(adjust_poll_limit(&p, 80_000, 1_000_000), 0, "divisor 0 resets the window");
        let p = HaltpollParams { guest_halt_poll_grow: 3, guest_halt_poll_grow_start: 1_000, ..Default::default() };
        assert_eq!(adjust_poll_limit(&p, 10_000, 20_000), 30_000);
        assert_eq!(adjust_poll_limit(&p, 10_000, 5_000), 10_000, "a halt within the window changes nothing");
        // The kernel's unsigned int arithmetic: 3 * 2^31 wraps to 2^31.
        let p = HaltpollParams { guest_halt_poll_ns: u32::MAX, guest_halt_poll_grow: 3, ..Default::default() };
        assert_eq!(adjust_poll_limit(&p, 1 << 31, (1 << 31) + 1), 1 << 31);
    }
}
