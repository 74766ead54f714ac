//! Models the softlockup detector of `kernel/watchdog.c` @ v6.10: a per-CPU hrtimer
//! (`watchdog_timer_fn()`, every `watchdog_thresh * 2 / 5` seconds: 4 s by default) that
//! queues `softlockup_fn()` on the CPU's stopper (`stop_one_cpu_nowait()`), so `migration/N`
//! wakes, preempts whatever runs there (stop class) and touches the watchdog timestamp.
//! The period and the stopper work's run time come from the background profile.

use crate::linux::kernel::stop_machine::{stop_one_cpu_nowait, StopWork};
use crate::linux::{CpuId, Kernel};
use crate::sim::Time;

/// Models `watchdog_timer_fn()`: queue the stopper work and forward the timer. Returns the
/// handler's cost.
pub fn watchdog_timer_fn(k: &mut Kernel, cpu: CpuId, src: u16) -> Time {
    let s = &k.cfg.background.sources[src as usize];
    let next = s.next_interval(&mut k.cpus[cpu as usize].bg_rng);
    k.cpus[cpu as usize].tick.watchdog = Some((k.now + next, src));
    stop_one_cpu_nowait(k, cpu, cpu, StopWork::SoftlockupFn { src }).unwrap_or(0) + k.costs.hrtimer_start
}

/// Models `softlockup_fn()`, run by the stopper: touch the timestamp. Returns its cost.
pub fn softlockup_fn(k: &mut Kernel, cpu: CpuId, src: u16) -> Time {
    let d = k.cfg.background.sources[src as usize].runtime;
    d.draw(&mut k.cpus[cpu as usize].bg_rng)
}
