//! Background activity: what a real machine runs besides the workload, described as data.
//!
//! A [`Profile`] lists *sources*, each one kernel mechanism with its period, jitter, CPU
//! placement and run-time distribution, measured on a real machine (see docs/costs.md,
//! "Background activity"). The types and the boot of the sources the kernel runs itself
//! (kworkers, timers, the watchdog, tick softirqs, periodic kernel threads) are in
//! `linux::background`; this module reads profiles and runs the kinds that are user programs
//! ([`daemon`]): `daemon`, and `pinned-hog` (a user task bound to one CPU by
//! `sched_setaffinity()` that never sleeps once woken: [`pinned`]).
//!
//! Profiles are TOML (`src/background/profiles/*.toml`, embedded in the binary; a user's own
//! file in the same format with `--background FILE`). Every number in a built-in profile
//! carries its source in a comment.

pub mod daemon;
pub mod intensity;
pub mod pinned;

pub use crate::linux::background::{Cpus, Dist, Kind, Profile, Source, WARMUP_NS};
use serde::Deserialize;

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
        if kind == Kind::PinnedHog && !matches!(cpus, Cpus::One(_)) {
            return Err(at("a pinned-hog source is bound to one CPU: cpus must be a CPU number".into()));
        }
        if kind == Kind::UnboundWork && cpus != Cpus::Any {
            return Err(at("an unbound-work source runs on any CPU: cpus must be \"any\"".into()));
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::Prng;

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
