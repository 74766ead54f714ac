//! The background's intensity (an unknown of issue 31, docs/unknowns.md): how busy the
//! machine's own activity was during a published run, as one scale on the rates of a profile's
//! sources. The profile stays the same set of kernel mechanisms; each source's period (and its
//! jitter) is divided by the scale, so each runs that many times as often.
//!
//! What is not scaled: the softlockup watchdog (its period is the kernel's `watchdog_thresh`,
//! not activity) and pinned hogs (they never sleep). Run times are not scaled: a busier machine
//! runs the same work functions more often.

use super::{Kind, Profile};

/// The smallest and largest scale accepted, in percent: a hundredth of the measured rates up to
/// a hundred times them, far outside the sourced range (docs/unknowns.md) but finite.
pub const INTENSITY_PCT_RANGE: (u32, u32) = (1, 10_000);

impl Profile {
    /// This profile with every activity rate multiplied by `pct` percent (100: as measured,
    /// which returns the profile unchanged). A period shorter than a microsecond is refused.
    pub fn with_intensity(mut self, pct: u32) -> Result<Profile, String> {
        let (lo, hi) = INTENSITY_PCT_RANGE;
        if !(lo..=hi).contains(&pct) {
            return Err(format!("background intensity {pct}% is out of range ({lo}..={hi}%)"));
        }
        if pct == 100 {
            return Ok(self);
        }
        for s in &mut self.sources {
            if matches!(s.kind, Kind::Watchdog | Kind::PinnedHog) {
                continue;
            }
            let scale = |ns: u64| (u128::from(ns) * 100 / u128::from(pct)) as u64;
            let period = scale(s.period_ns);
            if period < 1_000 {
                return Err(format!(
                    "background intensity {pct}%: source {} would run every {period} ns (at least 1 us)",
                    s.name
                ));
            }
            s.period_ns = period;
            s.jitter_ns = scale(s.jitter_ns).min(period);
        }
        Ok(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn periods_divide_by_the_scale_except_the_watchdogs() {
        let p = super::super::builtin("kvm-guest").unwrap();
        let q = p.clone().with_intensity(400).unwrap();
        for (a, b) in p.sources.iter().zip(&q.sources) {
            if a.kind == Kind::Watchdog {
                assert_eq!(a, b);
            } else {
                assert_eq!(b.period_ns, a.period_ns / 4, "{}", a.name);
                assert_eq!(b.jitter_ns, a.jitter_ns / 4, "{}", a.name);
                assert_eq!(b.runtime, a.runtime);
            }
        }
        assert_eq!(p.clone().with_intensity(100).unwrap(), p);
        assert!(p.clone().with_intensity(0).unwrap_err().contains("out of range"));
        assert!(p.with_intensity(10_001).is_err());
    }
}
