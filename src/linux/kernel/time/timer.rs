//! Models the timer wheel of `kernel/time/timer.c` @ v6.10 for the timers the model carries
//! (background work items, timer callbacks and `schedule_timeout()` sleeps):
//!
//! - `add_timer_on()`/`mod_timer()` with the wheel's granularity: a timeout is rounded up to its
//!   level's granularity (`calc_wheel_index()`: level 0 is 1 jiffy for the first 64 jiffies,
//!   each level above is 8 times coarser), so a 1 s timer at HZ=250 expires on a 32 ms grid;
//! - `run_local_timers()` from the tick raises TIMER_SOFTIRQ only when a timer is due;
//! - `run_timer_softirq()` runs the expired callbacks in expiry order;
//! - `get_next_timer_interrupt()` for nohz: the next non-deferrable expiry (deferrable timers
//!   wait for the CPU's next tick and never wake an idle CPU).
//!
//! Simplifications: one list per CPU (a handful of timers) instead of the hashed levels; the
//! global (unpinned) timer migration of `timer_migration.c` is not modelled: a timer runs on
//! the CPU that armed it.

use crate::linux::engine::{Frame, Next};
use crate::linux::kernel::sched::core::TryToWakeUp;
use crate::linux::kernel::softirq::{__raise_softirq_irqoff, TIMER_SOFTIRQ};
use crate::linux::kernel::workqueue::{self, WorkId};
use crate::linux::{CpuId, Kernel, TaskId};
use crate::sim::Time;
use crate::trace::Event;

/// What a timer does when it expires.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimerFn {
    /// `delayed_work_timer_fn()`: queue the delayed work.
    DelayedWork(WorkId),
    /// A callback with no task (background source `src`).
    Callback { src: u16 },
    /// `process_timeout()`: wake the task sleeping in `schedule_timeout()`.
    ProcessTimeout(TaskId),
    /// `tcp_delack_timer()` of a TCP socket (`net/ipv4/tcp_input.rs`).
    TcpDelack(crate::linux::net::core::sock::InetId),
}

/// A `struct timer_list`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimerList {
    /// Expiry in jiffies (already rounded to the wheel's granularity).
    pub expires: u64,
    pub deferrable: bool,
    pub func: TimerFn,
    /// A hashed address for the trace (`timer=%p`).
    pub addr: u64,
    /// The background source whose name the trace prints as `function=`.
    pub src: u16,
}

/// The timers of one CPU (`struct timer_base`, standard and deferrable bases together).
#[derive(Debug, Clone, Default)]
pub struct TimerBase {
    pub timers: Vec<TimerList>,
}

/// LVL_CLK_SHIFT and LVL_BITS of the wheel: 8x coarser per level, 64 buckets per level.
const LVL_CLK_SHIFT: u32 = 3;
const LVL_BITS: u32 = 6;

/// Models `calc_wheel_index()`'s rounding: the jiffy at which a timer armed `now` for
/// `expires` really expires (the end of its bucket at its level).
pub fn wheel_expiry(now_j: u64, expires: u64) -> u64 {
    let delta = expires.saturating_sub(now_j);
    let mut lvl = 0;
    while lvl < 7 && delta >= (1u64 << LVL_BITS) << (lvl * LVL_CLK_SHIFT) {
        lvl += 1;
    }
    if lvl == 0 {
        return expires.max(now_j + 1);
    }
    // calc_index(): the bucket after the one `expires` falls in, so never early.
    let shift = lvl * LVL_CLK_SHIFT;
    ((expires >> shift) + 1) << shift
}

/// Models `add_timer_on()` / `mod_timer()` — kernel/time/timer.c @ v6.10: arm `func` on `cpu`
/// to expire `delay` ns from now (rounded up to jiffies, then to the wheel's granularity).
/// A stopped tick is reprogrammed if this timer is now the first event.
pub fn add_timer_on(k: &mut Kernel, cpu: CpuId, delay: Time, deferrable: bool, func: TimerFn, src: u16) {
    let now_j = k.jiffies();
    let expires = wheel_expiry(now_j, now_j + delay.div_ceil(k.tick_nsec()).max(1));
    let addr = 0xffff_8880_4000_0000 ^ ((src as u64) << 20) ^ ((cpu as u64) << 8);
    k.cpus[cpu as usize].timers.timers.push(TimerList { expires, deferrable, func, addr, src });
    if !deferrable {
        crate::linux::kernel::time::tick_sched::tick_program(k, cpu);
    }
}

/// Models `sk_reset_timer()` -> `mod_timer()` of a TCP socket's delayed-ACK timer —
/// net/core/sock.c, kernel/time/timer.c @ v6.10: the socket's one timer now expires at jiffy
/// `expires` (at the wheel's granularity), armed on `cpu`; an earlier arming, on whichever
/// CPU, is replaced.
pub fn mod_timer_tcp_delack(k: &mut Kernel, cpu: CpuId, sk: crate::linux::net::core::sock::InetId, expires: u64) {
    if let Some(old) = k.ipc.net.sk_mut(sk).tcp.ack.timer_cpu.replace(cpu) {
        k.cpus[old as usize].timers.timers.retain(|t| t.func != TimerFn::TcpDelack(sk));
    }
    let now_j = k.jiffies();
    let expires = wheel_expiry(now_j, expires);
    let addr = 0xffff_8881_0000_0000 ^ ((sk as u64) << 11);
    k.cpus[cpu as usize].timers.timers.push(TimerList {
        expires,
        deferrable: false,
        func: TimerFn::TcpDelack(sk),
        addr,
        src: 0,
    });
    crate::linux::kernel::time::tick_sched::tick_program(k, cpu);
}

/// The next non-deferrable expiry on `cpu` after the current jiffy, in ns
/// (`get_next_timer_interrupt()`; timers already due are the pending TIMER_SOFTIRQ's).
pub fn next_timer_event(k: &Kernel, cpu: CpuId) -> Option<Time> {
    let t = k.tick_nsec();
    let j = k.jiffies();
    k.cpus[cpu as usize].timers.timers.iter().filter(|x| !x.deferrable && x.expires > j).map(|x| x.expires * t).min()
}

/// A non-deferrable timer of `cpu` is due (its expiry jiffy has come).
pub fn timer_due(k: &Kernel, cpu: CpuId) -> bool {
    let j = k.jiffies();
    k.cpus[cpu as usize].timers.timers.iter().any(|x| !x.deferrable && x.expires <= j)
}

/// Models `run_local_timers()` — kernel/time/timer.c @ v6.10, from the tick: raise
/// TIMER_SOFTIRQ if a timer (deferrable ones included) is due.
pub fn run_local_timers(k: &mut Kernel, cpu: CpuId) {
    let j = k.jiffies();
    if k.cpus[cpu as usize].timers.timers.iter().any(|x| x.expires <= j) {
        __raise_softirq_irqoff(k, cpu, TIMER_SOFTIRQ);
    }
}

/// `run_timer_softirq()` resume points, in code order.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum RunTimerAt {
    /// `expire_timers()`: take the earliest expired timer (`timer_expire_entry`), or return.
    #[default]
    NextTimer,
    /// The timer's function ran its own time: its kernel work (queue the work, wake the task).
    CallFn,
    /// `timer_expire_exit`; a periodic callback re-arms itself.
    FnDone,
}

/// `run_timer_softirq()` in progress.
#[derive(Debug, Clone, Copy, Default)]
pub struct RunTimerSoftirq {
    pub at: RunTimerAt,
    pub cur: Option<TimerList>,
}

/// Models `run_timer_softirq()` -> `__run_timers()` -> `expire_timers()` — kernel/time/timer.c
/// @ v6.10: run every expired timer of this CPU, earliest first, each between a
/// `timer_expire_entry` and a `timer_expire_exit` record.
///
/// Context: TIMER_SOFTIRQ, IRQs on.
pub fn run_timer_softirq(k: &mut Kernel, cpu: CpuId, s: &mut RunTimerSoftirq) -> Next {
    match s.at {
        RunTimerAt::NextTimer => {
            let j = k.jiffies();
            let timers = &mut k.cpus[cpu as usize].timers.timers;
            let Some(i) = (0..timers.len()).filter(|&i| timers[i].expires <= j).min_by_key(|&i| (timers[i].expires, i))
            else {
                return Next::Ret(0);
            };
            let t = timers.remove(i);
            s.cur = Some(t);
            // The callback the trace names: the source's own, or the kernel's timer function
            // for delayed work and schedule_timeout() (after the sources in trace_funcs()).
            let n = k.cfg.background.sources.len() as u32;
            let func = match t.func {
                TimerFn::Callback { src } => src as u32,
                TimerFn::DelayedWork(_) => n,
                TimerFn::ProcessTimeout(_) => n + 1,
                TimerFn::TcpDelack(_) => n + 2,
            };
            k.tp(cpu, Event::TimerExpireEntry { timer: t.addr, func, now: j, baseclk: t.expires });
            s.at = RunTimerAt::CallFn;
            let c = match t.func {
                TimerFn::Callback { src } => {
                    let d = k.cfg.background.sources[src as usize].runtime;
                    d.draw(&mut k.cpus[cpu as usize].bg_rng)
                }
                TimerFn::DelayedWork(_) | TimerFn::ProcessTimeout(_) | TimerFn::TcpDelack(_) => 0,
            };
            Next::Cont(c)
        }
        RunTimerAt::CallFn => {
            let t = s.cur.expect("a timer is running");
            s.at = RunTimerAt::FnDone;
            match t.func {
                TimerFn::DelayedWork(w) => {
                    let (c, wake) = workqueue::__queue_work(k, cpu, w);
                    match wake {
                        Some(f) => Next::Call(c, f),
                        None => Next::Cont(c),
                    }
                }
                TimerFn::ProcessTimeout(p) => Next::Call(0, Frame::TryToWakeUp(TryToWakeUp::new(p, 0))),
                TimerFn::TcpDelack(sk) => Next::Cont(crate::linux::net::ipv4::tcp_input::tcp_delack_timer(k, cpu, sk)),
                TimerFn::Callback { .. } => Next::Cont(0),
            }
        }
        RunTimerAt::FnDone => {
            let t = s.cur.take().expect("a timer is running");
            k.tp(cpu, Event::TimerExpireExit { timer: t.addr });
            if let TimerFn::Callback { src } = t.func {
                // A periodic callback re-arms itself (mod_timer() from the callback).
                let srcd = &k.cfg.background.sources[src as usize];
                let deferrable = srcd.deferrable;
                let next = srcd.next_interval(&mut k.cpus[cpu as usize].bg_rng);
                add_timer_on(k, cpu, next, deferrable, t.func, src);
            }
            s.at = RunTimerAt::NextTimer;
            Next::Cont(0)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_wheel_rounds_long_timeouts_to_its_level_granularity() {
        // Level 0: exact for timeouts under 64 jiffies.
        assert_eq!(wheel_expiry(1000, 1010), 1010);
        assert_eq!(wheel_expiry(1000, 1000), 1001);
        // 250 jiffies (1 s at HZ=250) is level 1 (8-jiffy buckets) at the latest... and
        // never earlier than asked.
        let e = wheel_expiry(1000, 1250);
        assert!((1250..1250 + 64).contains(&e), "{e}");
        assert_eq!(e % 8, 0);
        // A long timeout lands on a coarse grid but never early.
        let e = wheel_expiry(0, 5000);
        assert!(e >= 5000 && e % 64 == 0, "{e}");
    }
}
