//! Background activity: what a real machine's kernel runs besides the workload, described as
//! data (a [`Profile`] of *sources*, parsed from TOML by `crate::background`), and the boot of
//! the sources the kernel runs itself ([`boot`]). Simulator bookkeeping, not a kernel
//! structure: each source is one kernel mechanism with its period, jitter, CPU placement and
//! run-time distribution, measured on a real machine (docs/costs.md, "Background activity").
//!
//! | kind | mechanism (kernel model) |
//! |---|---|
//! | `percpu-work` | a per-CPU delayed work item: its timer (`kernel/time/timer.rs`) fires in TIMER_SOFTIRQ, `__queue_work()` wakes the bound `kworker/N:1` (`kernel/workqueue.rs`), which runs the work function and re-arms the timer |
//! | `unbound-work` | the same, queued to the unbound pool: `kworker/uN:1` runs wherever `select_task_rq_fair()` places it |
//! | `timer` | a `timer_list` callback in TIMER_SOFTIRQ with no task |
//! | `watchdog` | the softlockup hrtimer (`watchdog_timer_fn()`), which queues `softlockup_fn()` on the CPU's stopper (`migration/N`) |
//! | `tick-softirq` | a softirq raised from the tick while the tick runs (RCU_SOFTIRQ from `rcu_sched_clock_irq()`) |
//! | `kthread` | a kernel thread that sleeps (`schedule_timeout()`) and runs (e.g. `rcu_preempt`): `kernel/kthread.rs` |
//! | `daemon` | a user task that sleeps (`nanosleep()`) and runs: a program (`crate::background`), not booted here |
//! | `pinned-hog` | a user task bound to one CPU (`sched_setaffinity()`) that never sleeps once woken: a program too |

use super::kernel::time::timer::{add_timer_on, TimerFn};
use super::kernel::workqueue::{create_pool, init_delayed_work};
use super::Kernel;
use crate::sim::{Prng, Time};

/// How long a machine runs its background alone before the programs start (the run's measured
/// window opens then: `Kernel::measure_from`): 2 s, longer than most sources' periods (vmstat 1-2 s,
/// PSI 2 s, memcg flush 2 s) and half the watchdog's.
pub const WARMUP_NS: Time = 2 * crate::sim::NSEC_PER_SEC;

/// A source's kind: which kernel mechanism runs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    PercpuWork,
    UnboundWork,
    Timer,
    Watchdog,
    TickSoftirq,
    Kthread,
    Daemon,
    PinnedHog,
}

impl Kind {
    /// The kinds that are user programs (`crate::background::daemon`), not kernel code.
    pub fn is_program(self) -> bool {
        matches!(self, Kind::Daemon | Kind::PinnedHog)
    }

    pub const NAMES: &'static [&'static str] =
        &["percpu-work", "unbound-work", "timer", "watchdog", "tick-softirq", "kthread", "daemon", "pinned-hog"];
    pub fn parse(s: &str) -> Option<Kind> {
        Some(match s {
            "percpu-work" => Kind::PercpuWork,
            "unbound-work" => Kind::UnboundWork,
            "timer" => Kind::Timer,
            "watchdog" => Kind::Watchdog,
            "tick-softirq" => Kind::TickSoftirq,
            "kthread" => Kind::Kthread,
            "daemon" => Kind::Daemon,
            "pinned-hog" => Kind::PinnedHog,
            _ => return None,
        })
    }
}

/// Where a source's instances run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cpus {
    /// One instance per CPU.
    All,
    /// One unbound instance.
    Any,
    /// One instance bound to this CPU.
    One(u32),
}

/// A duration distribution given by its quantiles p0, p50, p90, p99, p100 (ns). A draw picks
/// a uniform point in [0, 10000) basis points and interpolates linearly inside the quantile
/// segment it falls in: integer arithmetic only.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Dist {
    pub q: [u64; 5],
}

impl Dist {
    /// Cumulative probability (basis points) at each quantile.
    const AT: [u64; 5] = [0, 5000, 9000, 9900, 10000];

    pub fn draw(&self, rng: &mut Prng) -> Time {
        let u = rng.range(0, 9999);
        let i = (1..5).find(|&i| u < Self::AT[i]).unwrap_or(4);
        let (p0, p1) = (Self::AT[i - 1], Self::AT[i]);
        let (v0, v1) = (self.q[i - 1], self.q[i]);
        v0 + (v1 - v0) * (u - p0) / (p1 - p0)
    }

    /// The distribution's median.
    pub fn median(&self) -> Time {
        self.q[1]
    }
}

/// One source of background activity.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Source {
    /// Work function, timer callback or task comm, as the kernel's trace prints it.
    pub name: String,
    pub kind: Kind,
    /// Mean interval between runs of one instance, and the uniform jitter around it.
    pub period_ns: Time,
    pub jitter_ns: Time,
    /// Timer-driven kinds: a deferrable timer does not wake an idle CPU.
    pub deferrable: bool,
    pub cpus: Cpus,
    /// Duration of one run (work function, callback, softirq handler, or a task's run).
    pub runtime: Dist,
    /// `tick-softirq`: the softirq vector number.
    pub vec: u32,
}

impl Source {
    /// The next interval of this source, drawn in [period - jitter, period + jitter].
    pub fn next_interval(&self, rng: &mut Prng) -> Time {
        let lo = self.period_ns.saturating_sub(self.jitter_ns).max(1);
        rng.range(lo, self.period_ns + self.jitter_ns)
    }
}

/// A named set of sources.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Profile {
    pub name: String,
    pub description: String,
    pub source: String,
    pub sources: Vec<Source>,
}

impl Profile {
    /// The function names trace records cite by index: the sources' names, then the kernel's
    /// own timer functions that expire for them (`delayed_work_timer_fn` for delayed work,
    /// `process_timeout` for `schedule_timeout()` sleeps).
    pub fn trace_funcs(&self) -> Vec<String> {
        let mut v: Vec<String> = self.sources.iter().map(|s| s.name.clone()).collect();
        v.push("delayed_work_timer_fn".into());
        v.push("process_timeout".into());
        v.push("tcp_delack_timer".into());
        v
    }
}

/// The CPUs a source's instances run on: every CPU, one drawn from CPU 0's background stream
/// (`any`), or the one it names (clamped to the machine).
pub fn instance_cpus(k: &mut Kernel, s: &Source) -> Vec<u32> {
    let nr = k.m.topo.nr_cpus;
    match s.cpus {
        Cpus::All => (0..nr).collect(),
        Cpus::Any => vec![k.cpus[0].bg_rng.range(0, nr as u64 - 1) as u32],
        Cpus::One(c) => vec![c.min(nr - 1)],
    }
}

/// The first expiry of an instance on `cpu`: a uniformly drawn phase of the source's period
/// (the machine has been up for a while, so instances are out of phase).
pub fn first_phase(k: &mut Kernel, cpu: u32, s: &Source) -> Time {
    k.cpus[cpu as usize].bg_rng.range(1, s.period_ns)
}

/// Boot the sources of the kernel's profile (`k.cfg.background`) that the kernel runs itself:
/// create the worker pools, work items and periodic kernel threads, and arm every instance's
/// first expiry ([`first_phase`]). Draws come from the CPUs' background streams only; with no
/// sources nothing is created or drawn. `daemon` and `pinned-hog` sources are user programs,
/// booted by their program after these (in profile order, from the same streams).
pub fn boot(k: &mut Kernel) {
    let sources = k.cfg.background.sources.clone();
    for (i, s) in sources.iter().enumerate() {
        if s.kind.is_program() {
            continue;
        }
        let src = i as u16;
        for c in instance_cpus(k, s) {
            let phase = first_phase(k, c, s);
            match s.kind {
                Kind::PercpuWork | Kind::UnboundWork => {
                    let bound = (s.kind == Kind::PercpuWork).then_some(c);
                    let pool = match k.wq.pool_of(bound) {
                        Some(p) => p,
                        None => create_pool(k, bound),
                    };
                    let w = init_delayed_work(k, src, pool);
                    add_timer_on(k, c, phase, s.deferrable, TimerFn::DelayedWork(w), src);
                }
                Kind::Timer => add_timer_on(k, c, phase, s.deferrable, TimerFn::Callback { src }, src),
                Kind::Watchdog => {
                    k.cpus[c as usize].tick.watchdog = Some((phase, src));
                    super::kernel::time::tick_sched::tick_program(k, c);
                }
                Kind::TickSoftirq => k.cpus[c as usize].tick.softirq_due.push((phase, src)),
                Kind::Kthread => {
                    let pinned = (s.cpus != Cpus::Any).then_some(c);
                    let comm = if s.cpus == Cpus::All { format!("{}/{c}", s.name) } else { s.name.clone() };
                    super::kernel::kthread::kthread_create_asleep(k, comm, pinned, c, src, phase);
                }
                Kind::Daemon | Kind::PinnedHog => unreachable!("skipped above"),
            }
        }
    }
}
