//! Background activity: what a real machine runs besides the workload, described as data.
//!
//! A [`Profile`] lists *sources*, each one kernel mechanism with its period, jitter, CPU
//! placement and run-time distribution, measured on a real machine (see docs/costs.md,
//! "Background activity"). The kernel model runs every source through its own code paths:
//!
//! | kind | mechanism (kernel model) |
//! |---|---|
//! | `percpu-work` | a per-CPU delayed work item: its timer (`kernel/time/timer.rs`) fires in TIMER_SOFTIRQ, `__queue_work()` wakes the bound `kworker/N:1` (`kernel/workqueue.rs`), which runs the work function and re-arms the timer |
//! | `unbound-work` | the same, queued to the unbound pool: `kworker/uN:1` runs wherever `select_task_rq_fair()` places it |
//! | `timer` | a `timer_list` callback in TIMER_SOFTIRQ with no task |
//! | `watchdog` | the softlockup hrtimer (`watchdog_timer_fn()`), which queues `softlockup_fn()` on the CPU's stopper (`migration/N`) |
//! | `tick-softirq` | a softirq raised from the tick while the tick runs (RCU_SOFTIRQ from `rcu_sched_clock_irq()`) |
//! | `kthread` | a kernel thread that sleeps (`schedule_timeout()`) and runs (e.g. `rcu_preempt`) |
//! | `daemon` | a user task that sleeps (`nanosleep()`) and runs |
//! | `pinned-hog` | a user task bound to one CPU (`sched_setaffinity()`) that never sleeps once woken (see `pinned.rs`) |
//!
//! Profiles are TOML (`src/background/profiles/*.toml`, embedded in the binary; a user's own
//! file in the same format with `--background FILE`). Every number in a built-in profile
//! carries its source in a comment.

pub mod intensity;
pub mod pinned;
pub mod task;

use crate::sim::{Prng, Time};
use serde::Deserialize;

/// How long a machine runs its background alone before the workload starts (see
/// `Kernel::workload_start_offset`): 2 s, longer than most sources' periods (vmstat 1-2 s,
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
    pub const NAMES: &'static [&'static str] =
        &["percpu-work", "unbound-work", "timer", "watchdog", "tick-softirq", "kthread", "daemon", "pinned-hog"];
    fn parse(s: &str) -> Option<Kind> {
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
        v
    }
}

/// The built-in profiles: (name, TOML text).
pub const BUILTIN: &[(&str, &str)] =
    &[("kvm-guest", include_str!("profiles/kvm-guest.toml")), ("server", include_str!("profiles/server.toml"))];

/// The names a user may give to `--background`, besides a file path.
pub fn names() -> Vec<&'static str> {
    let mut v: Vec<&str> = BUILTIN.iter().map(|(n, _)| *n).collect();
    v.push("none");
    v
}

/// A built-in profile by name (`none` is the empty profile).
pub fn builtin(name: &str) -> Option<Profile> {
    if name == "none" {
        return Some(Profile { name: "none".into(), ..Default::default() });
    }
    let (_, text) = BUILTIN.iter().find(|(n, _)| *n == name)?;
    Some(parse(text, &format!("built-in background '{name}'")).expect("built-in background profiles parse"))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawProfile {
    name: String,
    #[serde(default)]
    description: String,
    /// How the numbers were measured (a top-level `source` key would clash with the
    /// `[[source]]` tables).
    #[serde(default)]
    measured: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSource {
    name: String,
    kind: String,
    period_us: u64,
    #[serde(default)]
    jitter_us: u64,
    #[serde(default)]
    deferrable: bool,
    #[serde(default = "default_cpus")]
    cpus: String,
    runtime_ns: Vec<u64>,
    #[serde(default)]
    vec: Option<String>,
}

fn default_cpus() -> String {
    "all".into()
}

/// Longest period or run time a profile may give (1 hour), so that arithmetic stays far from
/// overflow.
const MAX_US: u64 = 3_600_000_000;

/// The 1-based line of byte offset `at` in `text`.
fn line_of(text: &str, at: usize) -> usize {
    text[..at.min(text.len())].bytes().filter(|&b| b == b'\n').count() + 1
}

/// Parse a profile. `origin` names the file in errors, which say the line and what was
/// expected.
pub fn parse(text: &str, origin: &str) -> Result<Profile, String> {
    let doc: toml::Table = text.parse::<toml::Table>().map_err(|e| {
        let line = e.span().map(|s| line_of(text, s.start)).unwrap_or(1);
        format!("{origin}:{line}: {}", e.message())
    })?;
    // Line of a `[[source]]` table number `i`, for errors.
    let table_lines: Vec<usize> =
        text.lines().enumerate().filter(|(_, l)| l.trim() == "[[source]]").map(|(i, _)| i + 1).collect();
    let mut top = doc.clone();
    let raw_sources = top.remove("source");
    let raw: RawProfile =
        toml::Value::Table(top).try_into().map_err(|e: toml::de::Error| format!("{origin}:1: {}", e.message()))?;
    let mut p = Profile { name: raw.name, description: raw.description, source: raw.measured, sources: Vec::new() };
    let Some(list) = raw_sources else { return Ok(p) };
    let toml::Value::Array(list) = list else {
        return Err(format!("{origin}: `source` must be an array of tables ([[source]])"));
    };
    for (i, v) in list.into_iter().enumerate() {
        let line = table_lines.get(i).copied().unwrap_or(1);
        let at = |msg: String| format!("{origin}:{line}: [[source]] #{}: {msg}", i + 1);
        let r: RawSource = v.try_into().map_err(|e: toml::de::Error| at(e.message().to_string()))?;
        let kind = Kind::parse(&r.kind)
            .ok_or_else(|| at(format!("kind = \"{}\" is not one of {}", r.kind, Kind::NAMES.join(", "))))?;
        if r.period_us == 0 || r.period_us > MAX_US {
            return Err(at(format!("period_us = {} is out of range (1..={MAX_US})", r.period_us)));
        }
        if r.jitter_us > r.period_us {
            return Err(at(format!("jitter_us = {} is larger than period_us = {}", r.jitter_us, r.period_us)));
        }
        let cpus = match r.cpus.as_str() {
            "all" => Cpus::All,
            "any" => Cpus::Any,
            s => Cpus::One(
                s.parse::<u32>().map_err(|_| at(format!("cpus = \"{s}\" is not \"all\", \"any\" or a CPU number")))?,
            ),
        };
        if kind == Kind::UnboundWork && cpus != Cpus::Any {
            return Err(at("an unbound-work source runs on any CPU: cpus must be \"any\"".into()));
        }
        if kind == Kind::PinnedHog && !matches!(cpus, Cpus::One(_)) {
            return Err(at("a pinned-hog source is bound to one CPU: cpus must be a CPU number".into()));
        }
        if matches!(kind, Kind::Watchdog | Kind::TickSoftirq) && cpus != Cpus::All {
            return Err(at(format!("a {} source is per-CPU: cpus must be \"all\"", r.kind)));
        }
        let q: [u64; 5] = r.runtime_ns.as_slice().try_into().map_err(|_| {
            at(format!("runtime_ns must list 5 quantiles (p0, p50, p90, p99, p100), got {}", r.runtime_ns.len()))
        })?;
        if q.windows(2).any(|w| w[0] > w[1]) {
            return Err(at("runtime_ns quantiles must not decrease".into()));
        }
        if q[4] > MAX_US * 1000 {
            return Err(at(format!("runtime_ns p100 = {} is out of range (at most {} ns)", q[4], MAX_US * 1000)));
        }
        let vec = match (kind, r.vec.as_deref()) {
            (Kind::TickSoftirq, Some(v)) => softirq_vec(v).ok_or_else(|| at(format!("vec = \"{v}\" is not a softirq name (HI, TIMER, NET_TX, NET_RX, BLOCK, IRQ_POLL, TASKLET, SCHED, HRTIMER, RCU)")))?,
            (Kind::TickSoftirq, None) => return Err(at("a tick-softirq source needs vec = \"NAME\"".into())),
            (_, Some(_)) => return Err(at("vec is only for tick-softirq sources".into())),
            (_, None) => 0,
        };
        p.sources.push(Source {
            name: r.name,
            kind,
            period_ns: r.period_us * 1000,
            jitter_ns: r.jitter_us * 1000,
            deferrable: r.deferrable,
            cpus,
            runtime: Dist { q },
            vec,
        });
    }
    Ok(p)
}

/// Softirq vector numbers (include/linux/interrupt.h).
fn softirq_vec(name: &str) -> Option<u32> {
    const NAMES: [&str; 10] =
        ["HI", "TIMER", "NET_TX", "NET_RX", "BLOCK", "IRQ_POLL", "TASKLET", "SCHED", "HRTIMER", "RCU"];
    NAMES.iter().position(|n| *n == name).map(|i| i as u32)
}

/// Boot the background sources of the kernel's profile (`k.cfg.background`): create the
/// worker pools and tasks, and arm every instance's first expiry at a uniformly drawn phase of
/// its period (the machine has been up for a while, so instances are out of phase). Draws come
/// from the CPUs' background streams only; with no sources nothing is created or drawn.
pub fn start(k: &mut crate::linux::Kernel) {
    use crate::linux::kernel::time::timer::{add_timer_on, TimerFn};
    use crate::linux::kernel::workqueue::{create_pool, init_delayed_work};
    let nr = k.m.topo.nr_cpus;
    let sources = k.cfg.background.sources.clone();
    for (i, s) in sources.iter().enumerate() {
        let src = i as u16;
        let cpus: Vec<u32> = match s.cpus {
            Cpus::All => (0..nr).collect(),
            Cpus::Any => vec![k.cpus[0].bg_rng.range(0, nr as u64 - 1) as u32],
            Cpus::One(c) => vec![c.min(nr - 1)],
        };
        for &c in &cpus {
            let phase = k.cpus[c as usize].bg_rng.range(1, s.period_ns);
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
                    crate::linux::kernel::time::tick_sched::tick_program(k, c);
                }
                Kind::TickSoftirq => k.cpus[c as usize].tick.softirq_due.push((phase, src)),
                Kind::Kthread | Kind::Daemon | Kind::PinnedHog => {
                    use crate::linux::kernel::sched::{TaskKind, TASK_IDLE, TASK_INTERRUPTIBLE};
                    let (tk, state) = if s.kind == Kind::Kthread {
                        (TaskKind::Kthread, TASK_IDLE)
                    } else {
                        (TaskKind::Daemon, TASK_INTERRUPTIBLE)
                    };
                    // A hog is a user task: bound by its affinity mask (below), not kthread_bind().
                    let pinned = (s.cpus != Cpus::Any && s.kind != Kind::PinnedHog).then_some(c);
                    let comm = if s.cpus == Cpus::All { format!("{}/{c}", s.name) } else { s.name.clone() };
                    let t = k.new_task(tk, comm, 0, 120, pinned);
                    k.tasks[t as usize].state = state;
                    k.tasks[t as usize].cpu = c;
                    k.tasks[t as usize].saved = task::initial_stack(s.kind, src);
                    if s.kind == Kind::PinnedHog {
                        pinned::bind(k, t, c);
                    }
                    if s.kind == Kind::Kthread {
                        add_timer_on(k, c, phase, false, TimerFn::ProcessTimeout(t), src);
                    } else {
                        let slack = crate::linux::kernel::futex::DEFAULT_TIMER_SLACK_NS;
                        crate::linux::kernel::time::tick_sched::hrtimer_start_sleeper(k, c, phase, phase + slack, t);
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_profiles_parse_and_have_sources() {
        for (name, _) in BUILTIN {
            let p = builtin(name).unwrap();
            assert!(!p.sources.is_empty(), "{name}");
            assert!(!p.source.is_empty(), "{name} says where its numbers come from");
        }
        assert!(builtin("none").unwrap().sources.is_empty());
        assert!(builtin("nope").is_none());
    }

    #[test]
    fn draws_stay_inside_the_quantiles_and_follow_them() {
        let d = Dist { q: [100, 1000, 2000, 5000, 9000] };
        let mut r = Prng::new(7, 1);
        let mut v: Vec<u64> = (0..20000).map(|_| d.draw(&mut r)).collect();
        v.sort_unstable();
        assert!(v[0] >= 100 && v[v.len() - 1] <= 9000);
        let med = v[v.len() / 2];
        assert!((900..=1100).contains(&med), "median {med}");
        let p90 = v[v.len() * 9 / 10];
        assert!((1900..=2100).contains(&p90), "p90 {p90}");
    }

    #[test]
    fn bad_profiles_name_the_line_and_the_field() {
        let t = "name = \"x\"\n\n[[source]]\nname = \"a\"\nkind = \"cron\"\nperiod_us = 10\nruntime_ns = [1,2,3,4,5]\n";
        let e = parse(t, "p.toml").unwrap_err();
        assert!(e.starts_with("p.toml:3:") && e.contains("kind = \"cron\""), "{e}");
        let t = "name = \"x\"\n[[source]]\nname = \"a\"\nkind = \"timer\"\nperiod_us = 10\nruntime_ns = [1,2]\n";
        assert!(parse(t, "p.toml").unwrap_err().contains("5 quantiles"));
        let t = "name = \"x\"\n[[source]]\nname = \"a\"\nkind = \"timer\"\nperiod_us = 0\nruntime_ns = [1,2,3,4,5]\n";
        assert!(parse(t, "p.toml").unwrap_err().contains("period_us = 0"));
        let t = "name = \"x\"\n[[source]]\nname = \"a\"\nkind = \"timer\"\nperiod_us = 10\nruntime_ns = [1,2,3,4,5]\nbogus = 1\n";
        assert!(parse(t, "p.toml").unwrap_err().contains("bogus"));
        let t = "name = \"x\"\n[[source]]\nname = \"a\"\nkind = \"timer\"\nperiod_us = 18446744073709551615\nruntime_ns = [1,2,3,4,5]\n";
        assert!(parse(t, "p.toml").is_err());
        assert!(parse("name = ", "p.toml").unwrap_err().starts_with("p.toml:1:"));
    }
}
