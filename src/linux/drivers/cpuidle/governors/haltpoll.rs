//! Models the haltpoll governor, `drivers/cpuidle/governors/haltpoll.c` @ v6.10, used with the
//! `cpuidle-haltpoll` driver in KVM guests: poll (state 0) for up to `poll_limit_ns`, then
//! halt (state 1); the poll window grows when the guest is woken just after halting and
//! shrinks after long sleeps (`adjust_poll_limit()`), between 0 and `guest_halt_poll_ns`.

use crate::linux::{CpuId, Kernel};

/// Module parameters (drivers/cpuidle/governors/haltpoll.c defaults).
pub const GUEST_HALT_POLL_NS: u64 = 200_000;
pub const GUEST_HALT_POLL_SHRINK: u64 = 2;
pub const GUEST_HALT_POLL_GROW: u64 = 2;
pub const GUEST_HALT_POLL_GROW_START: u64 = 50_000;

/// Models `haltpoll_select()`: poll after a halt; after a poll, halt only if the poll window
/// expired with nothing to do. The tick is never stopped while polling.
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

/// Models `haltpoll_reflect()` + `adjust_poll_limit()`.
pub fn haltpoll_reflect(k: &mut Kernel, cpu: CpuId, idx: u8, residency_ns: u64) {
    let dev = &mut k.cpus[cpu as usize].idle_dev;
    dev.last_state_idx = idx;
    dev.last_residency_ns = residency_ns;
    if idx == 0 {
        return;
    }
    let block_ns = residency_ns;
    if block_ns > dev.poll_limit_ns && block_ns <= GUEST_HALT_POLL_NS {
        let val = (dev.poll_limit_ns * GUEST_HALT_POLL_GROW).clamp(GUEST_HALT_POLL_GROW_START, GUEST_HALT_POLL_NS);
        dev.poll_limit_ns = val;
    } else if block_ns > GUEST_HALT_POLL_NS {
        dev.poll_limit_ns /= GUEST_HALT_POLL_SHRINK;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn poll_window_grows_on_short_halts_and_shrinks_on_long_ones() {
        let spec = {
            let mut s = crate::run::RunSpec::new("idle");
            s.machine = "icx-vm-32".into();
            s
        };
        let mut k = crate::run::build(&spec).unwrap();
        assert_eq!(haltpoll_select(&mut k, 0).0, 1, "no poll window yet: halt");
        haltpoll_reflect(&mut k, 0, 1, 10_000);
        assert_eq!(k.cpus[0].idle_dev.poll_limit_ns, GUEST_HALT_POLL_GROW_START);
        haltpoll_reflect(&mut k, 0, 1, 60_000);
        assert_eq!(k.cpus[0].idle_dev.poll_limit_ns, 100_000);
        haltpoll_reflect(&mut k, 0, 1, 150_000);
        assert_eq!(k.cpus[0].idle_dev.poll_limit_ns, GUEST_HALT_POLL_NS);
        haltpoll_reflect(&mut k, 0, 1, 5_000_000);
        assert_eq!(k.cpus[0].idle_dev.poll_limit_ns, GUEST_HALT_POLL_NS / 2);
        assert_eq!(haltpoll_select(&mut k, 0).0, 0, "after a halt: poll");
    }
}
