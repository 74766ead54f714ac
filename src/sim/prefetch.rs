//! Host cache prefetch hints for the simulator's own data (not a model of anything).
//!
//! On a machine of thousands of CPUs nearly every action first touches one CPU's state while
//! it is cold in the host's caches. The action queue knows which CPU is likely to run next
//! before the current action runs, so its state can be requested early. A prefetch never
//! changes behaviour: it is a hint to the host CPU, a no-op off x86-64.

/// Ask the host to bring the cache line holding `p` into its caches. `p` need not be valid for
/// reads (a prefetch never faults), so a guessed address is fine.
#[inline(always)]
pub fn prefetch<T>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: PREFETCHT0 is part of SSE, which every x86-64 CPU has; it does not access memory
    // architecturally and never faults, whatever the address.
    unsafe {
        core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(p as *const i8);
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// [`prefetch`] the `N` cache lines from `p` (unrolled: `N` is a constant).
#[inline(always)]
pub fn prefetch_lines<const N: usize, T>(p: *const T) {
    let p = p as *const u8;
    for i in 0..N {
        prefetch(p.wrapping_add(64 * i));
    }
}

/// [`prefetch`] every cache line of the `len` bytes from `p`.
#[inline(always)]
pub fn prefetch_bytes<T>(p: *const T, len: usize) {
    let p = p as *const u8;
    if len <= 128 {
        // At most three lines (one frame): its first byte, the byte a line on, its last byte.
        prefetch(p);
        if len > 64 {
            prefetch(p.wrapping_add(64));
        }
        prefetch(p.wrapping_add(len.max(1) - 1));
        return;
    }
    let start = p as usize;
    let last = start.wrapping_add(len - 1) & !63;
    let mut line = start & !63;
    loop {
        // The offset of the line from `p` (negative for the first line, as a wrapped usize).
        prefetch(p.wrapping_add(line.wrapping_sub(start)));
        if line >= last {
            break;
        }
        line += 64;
    }
}

#[cfg(test)]
mod tests {
    use super::super::{ActionQueue, Slot};
    use super::*;

    #[test]
    fn prefetching_any_address_is_harmless() {
        let v = [1u64; 40];
        prefetch(std::ptr::null::<u8>());
        prefetch_bytes(v.as_ptr(), std::mem::size_of_val(&v));
        prefetch_lines::<8, _>(v.as_ptr().wrapping_add(1 << 40));
        assert_eq!(v.iter().sum::<u64>(), 40);
    }

    proptest::proptest! {
        /// With FIFO order, [`ActionQueue::next_cpu_hint`] names the CPU whose action the next
        /// pop returns (`None` for an action of no CPU), whatever state the queue is in: right
        /// after a pop (the popped CPU not placed yet), after the popped CPU re-armed, or placed.
        #[test]
        fn the_hint_names_the_next_popped_cpu(
            ops in proptest::collection::vec((0u8..4, 0usize..300, 0u64..50), 1..600),
            nr_cpus in 1usize..300,
        ) {
            let mut q: ActionQueue<(u32, u32)> = ActionQueue::with_cpus(nr_cpus);
            let owner = |a: &(u32, u32)| a.0;
            let mut now = 0;
            for (n, (op, c, t)) in ops.into_iter().enumerate() {
                let c = c % nr_cpus;
                match op {
                    0 => q.set(c, Slot::Step, now + t, (c as u32, n as u32)),
                    1 => q.set(c, Slot::Timer, now + t, (c as u32, n as u32)),
                    2 => q.push(now + t, (if t % 3 == 0 { u32::MAX } else { c as u32 }, n as u32)),
                    _ => {
                        if t % 2 == 0 {
                            q.next_time();
                        }
                        let hint = q.next_cpu_hint(owner);
                        let got = q.pop();
                        let want = got.and_then(|(_, a)| (a.0 != u32::MAX).then_some(a.0 as usize));
                        proptest::prop_assert_eq!(hint, want);
                        if let Some((pt, a)) = got {
                            now = pt;
                            if a.0 != u32::MAX && t % 3 != 0 {
                                // The popped CPU re-arms, as a CPU does after its step.
                                q.set(a.0 as usize, Slot::Step, now + t, a);
                            }
                        }
                    }
                }
            }
        }
    }
}
