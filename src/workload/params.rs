//! `key=value` workload parameters, as given to `insmod` or a benchmark's command line, each
//! checked against the program-wide limits (`crate::limits`) where it is read.

use crate::limits::to_ns_checked;

/// Parsed parameters with the origin of each (for error messages).
#[derive(Debug, Clone, Default)]
pub struct Params {
    items: Vec<(String, String)>,
    /// Where these came from ("command line", "scenario.toml:12").
    pub origin: String,
}

/// Two parameter lists are equal when their items are (in order); where they came from only
/// shapes error messages.
impl PartialEq for Params {
    fn eq(&self, other: &Params) -> bool {
        self.items == other.items
    }
}

impl Eq for Params {}

impl Params {
    /// Parse `k=v` items. Every item needs its `=` and a key may appear once.
    pub fn parse<'a>(items: impl IntoIterator<Item = &'a str>, origin: &str) -> Result<Params, String> {
        let mut out: Vec<(String, String)> = Vec::new();
        for it in items {
            let it = it.trim();
            if it.is_empty() {
                continue;
            }
            let Some((key, val)) = it.split_once('=').map(|(k, v)| (k.trim(), v.trim())) else {
                return Err(format!("{origin}: parameter '{it}' has no value (expected {it}=VALUE)"));
            };
            if key.is_empty() {
                return Err(format!("{origin}: parameter '{it}' has no name (expected key=value)"));
            }
            if let Some((_, prev)) = out.iter().find(|(k, _)| k == key) {
                return Err(format!("{origin}: parameter '{key}' given twice ({key}={prev} and {key}={val})"));
            }
            out.push((key.to_string(), val.to_string()));
        }
        Ok(Params { items: out, origin: origin.to_string() })
    }

    pub fn from_pairs(pairs: Vec<(String, String)>, origin: &str) -> Params {
        let mut p = Params { items: Vec::new(), origin: origin.to_string() };
        for (k, v) in pairs {
            p.set(k, v);
        }
        p
    }

    /// Set `key`, replacing an earlier value (keeps the first position).
    pub fn set(&mut self, key: String, val: String) {
        match self.items.iter_mut().find(|(k, _)| *k == key) {
            Some(slot) => slot.1 = val,
            None => self.items.push((key, val)),
        }
    }

    /// Fail on keys not in `known`.
    pub fn check_known(&self, workload: &str, known: &[&str]) -> Result<(), String> {
        for (k, _) in &self.items {
            if !known.contains(&k.as_str()) {
                return Err(format!(
                    "{}: unknown {workload} parameter '{k}' (expected one of: {})",
                    self.origin,
                    known.join(", ")
                ));
            }
        }
        Ok(())
    }

    pub fn get(&self, key: &str) -> Option<&str> {
        self.items.iter().rev().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }

    pub fn u64_or(&self, key: &str, default: u64) -> Result<u64, String> {
        match self.get(key) {
            None => Ok(default),
            Some(v) => v.parse().map_err(|_| {
                format!("{}: parameter {key}='{v}' is not a non-negative integer (at most {})", self.origin, u64::MAX)
            }),
        }
    }

    /// `key` as an integer in `lo..=hi` (`default` when absent); the error names the key and
    /// the range.
    pub fn u64_in(&self, key: &str, default: u64, lo: u64, hi: u64) -> Result<u64, String> {
        let v = self.u64_or(key, default)?;
        if v < lo || v > hi {
            return Err(format!("{}: parameter {key}={v} is out of range ({lo}..={hi})", self.origin));
        }
        Ok(v)
    }

    /// `key`, a time in units of `unit_ns` named `unit` (`default` in those units when absent),
    /// as nanoseconds of at most `max_ns`; the error names the key and the range.
    pub fn time_ns(&self, key: &str, default: u64, unit_ns: u64, unit: &str, max_ns: u64) -> Result<u64, String> {
        let v = self.u64_or(key, default)?;
        to_ns_checked(v, unit_ns, unit, max_ns, &format!("parameter {key}"))
            .map_err(|e| format!("{}: {e}", self.origin))
    }

    pub fn bool_or(&self, key: &str, default: bool) -> Result<bool, String> {
        match self.get(key) {
            None => Ok(default),
            Some("1" | "y" | "Y" | "true") => Ok(true),
            Some("0" | "n" | "N" | "false") => Ok(false),
            Some(v) => Err(format!(
                "{}: parameter {key}='{v}' is not a boolean (expected 0/1, y/n or true/false)",
                self.origin
            )),
        }
    }

    pub fn pairs(&self) -> &[(String, String)] {
        &self.items
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::limits::{limit_ms_to_ns, MAX_LATENCY_NS};
    use crate::sim::NSEC_PER_MSEC;

    #[test]
    fn bare_keys_and_repeats_are_errors() {
        let e = Params::parse(["numipi"], "command line").unwrap_err();
        assert!(e.contains("'numipi' has no value"), "{e}");
        let e = Params::parse(["numipi=1", "numipi=2"], "command line").unwrap_err();
        assert!(e.contains("'numipi' given twice"), "{e}");
        assert!(Params::parse(["a=1", "b=2"], "x").is_ok());
    }

    #[test]
    fn ranges_and_conversions_are_checked() {
        let p = Params::parse(["n=5", "t=18446744073709551615", "big=99999999999999999999"], "x").unwrap();
        assert_eq!(p.u64_in("n", 1, 1, 10), Ok(5));
        assert!(p.u64_in("n", 1, 6, 10).unwrap_err().contains("n=5 is out of range (6..=10)"));
        let e = p.time_ns("t", 0, 1000, "us", MAX_LATENCY_NS).unwrap_err();
        assert!(e.contains("parameter t = 18446744073709551615 us is out of range (0..=1000000 us)"), "{e}");
        assert!(p.u64_or("big", 0).unwrap_err().contains("not a non-negative integer"));
        assert_eq!(limit_ms_to_ns(5, "--limit-ms"), Ok(5 * NSEC_PER_MSEC));
        assert!(limit_ms_to_ns(u64::MAX, "--limit-ms").unwrap_err().contains("(1..=3600000 ms"));
        assert!(limit_ms_to_ns(0, "--limit-ms").is_err());
    }
}
