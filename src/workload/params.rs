//! `key=value` workload parameters, as given to `insmod` or a benchmark's command line.

/// Parsed parameters with the origin of each (for error messages).
#[derive(Debug, Clone, Default)]
pub struct Params {
    items: Vec<(String, String)>,
    /// Where these came from ("command line", "scenario.toml:12").
    pub origin: String,
}

impl Params {
    /// Parse `k=v` items. A bare `k` means `k=1`.
    pub fn parse<'a>(items: impl IntoIterator<Item = &'a str>, origin: &str) -> Result<Params, String> {
        let mut out = Vec::new();
        for it in items {
            let it = it.trim();
            if it.is_empty() {
                continue;
            }
            let (key, val) = match it.split_once('=') {
                Some((k, v)) => (k.trim(), v.trim()),
                None => (it, "1"),
            };
            if key.is_empty() {
                return Err(format!("{origin}: parameter '{it}' has no name (expected key=value)"));
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
            Some(v) => {
                v.parse().map_err(|_| format!("{}: parameter {key}='{v}' is not a non-negative integer", self.origin))
            }
        }
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
