//! The calibration bundle: everything `machine --from-host --calibrate` captured, in one text
//! file, so that the analysis can be run again without root (`--from-capture FILE`) and a
//! saved bundle is the test fixture (`tests/calibrate_fixture.rs`).
//!
//! Format: a first line `#schedsim-calibration v1`, then sections, each a header line
//! `#section KIND NAME BYTES` followed by exactly BYTES bytes and a newline. Kinds: `meta` (TOML,
//! [`Meta`]), `host` (the text `machine --from-host` wrote) and `capture` (the tracefs `trace`
//! text of one program of the calibration set, named as in [`Meta::captures`]).

use serde::{Deserialize, Serialize};

/// First line of a bundle.
pub const MAGIC: &str = "#schedsim-calibration v1";

/// What the capture side knew.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Meta {
    /// The trace clock of every capture (`x86-tsc`, or a clock printing seconds).
    pub clock: String,
    /// The rate of the `x86-tsc` counter in kHz, measured against CLOCK_MONOTONIC_RAW (0 for a
    /// clock printing seconds).
    pub tsc_khz: u64,
    /// The core clock the software paths ran at (MHz): what `[path_costs]` records.
    pub clock_mhz: u64,
    /// Why the traces' timestamps agree across CPUs (the clock's check).
    pub clock_note: String,
    /// `uname -r`.
    pub kernel: String,
    /// A capture whose other tasks used more than this share of the CPUs (percent) was
    /// discarded.
    pub max_foreign_pct: u64,
    /// The captures kept, in the order taken.
    pub captures: Vec<CaptureMeta>,
    /// Captures discarded because other work disturbed them.
    #[serde(default)]
    pub discarded: Vec<Discarded>,
}

/// One kept capture.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CaptureMeta {
    /// One of [`super::CAPTURES`].
    pub name: String,
    /// The command that ran (for the record).
    pub command: String,
    /// The program's root pids (their forks and threads belong to it too).
    pub roots: Vec<u32>,
    /// Other tasks' share of the CPUs during the program, in permille.
    pub foreign_permille: u64,
    /// The tracefs per-CPU buffers overran (events lost).
    #[serde(default)]
    pub lost_events: bool,
}

/// One discarded capture.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Discarded {
    pub name: String,
    pub foreign_permille: u64,
}

/// A parsed bundle.
#[derive(Debug, Clone, Default)]
pub struct Bundle {
    pub meta: Meta,
    /// `machine --from-host` text.
    pub host: String,
    /// (capture name, trace text), in `meta.captures` order.
    pub captures: Vec<(String, String)>,
}

impl Bundle {
    /// The trace text of a capture.
    pub fn capture(&self, name: &str) -> Option<&str> {
        self.captures.iter().find(|(n, _)| n == name).map(|(_, t)| t.as_str())
    }

    /// The metadata of a capture.
    pub fn capture_meta(&self, name: &str) -> Option<&CaptureMeta> {
        self.meta.captures.iter().find(|c| c.name == name)
    }
}

/// Write a bundle's text.
pub fn write(b: &Bundle) -> String {
    let meta = toml::to_string(&b.meta).expect("the metadata serializes");
    let mut o = String::with_capacity(b.captures.iter().map(|(_, t)| t.len() + 64).sum::<usize>() + 4096);
    o.push_str(MAGIC);
    o.push('\n');
    let mut section = |kind: &str, name: &str, body: &str| {
        o.push_str(&format!("#section {kind} {name} {}\n", body.len()));
        o.push_str(body);
        o.push('\n');
    };
    section("meta", "-", &meta);
    section("host", "-", &b.host);
    for (n, t) in &b.captures {
        section("capture", n, t);
    }
    o
}

/// Read a bundle; `origin` names it in errors (which say the line and what was expected).
pub fn read(text: &str, origin: &str) -> Result<Bundle, String> {
    let Some(rest) = text.strip_prefix(MAGIC).and_then(|r| r.strip_prefix('\n')) else {
        return Err(format!("{origin}:1: expected `{MAGIC}` (a bundle written by `machine --from-host --calibrate`)"));
    };
    let line_at = |off: usize| text[..off.min(text.len())].bytes().filter(|&b| b == b'\n').count() + 1;
    let mut pos = text.len() - rest.len();
    let mut b = Bundle::default();
    let mut meta = None;
    while pos < text.len() {
        let end = text[pos..].find('\n').map_or(text.len(), |i| pos + i);
        let header = &text[pos..end];
        let words: Vec<&str> = header.split(' ').collect();
        let (kind, name, len) = match words.as_slice() {
            ["#section", k, n, l] => match l.parse::<usize>() {
                Ok(l) => (*k, *n, l),
                Err(_) => return Err(format!("{origin}:{}: `{header}`: the byte count is not a number", line_at(pos))),
            },
            _ => {
                return Err(format!(
                    "{origin}:{}: expected a section header `#section KIND NAME BYTES`, found `{}`",
                    line_at(pos),
                    header.chars().take(60).collect::<String>()
                ))
            }
        };
        let start = end + 1;
        let stop = start.checked_add(len).filter(|&s| s < text.len() && text.is_char_boundary(s));
        let Some(stop) = stop else {
            return Err(format!(
                "{origin}:{}: section `{kind} {name}` says {len} bytes, beyond the end of the file",
                line_at(pos)
            ));
        };
        if text.as_bytes()[stop] != b'\n' {
            return Err(format!("{origin}:{}: section `{kind} {name}` is not {len} bytes long", line_at(stop)));
        }
        let body = &text[start..stop];
        match kind {
            "meta" => {
                let m: Meta = toml::from_str(body).map_err(|e| {
                    let l =
                        e.span().map_or(0, |s| text[start..start + s.start].bytes().filter(|&b| b == b'\n').count());
                    format!("{origin}:{}: {}", line_at(start) + l, e.message())
                })?;
                meta = Some(m);
            }
            "host" => b.host = body.to_string(),
            "capture" => b.captures.push((name.to_string(), body.to_string())),
            other => {
                return Err(format!(
                    "{origin}:{}: unknown section kind `{other}` (expected meta, host or capture)",
                    line_at(pos)
                ))
            }
        }
        pos = stop + 1;
    }
    b.meta = meta.ok_or_else(|| format!("{origin}: no `meta` section"))?;
    if b.host.is_empty() {
        return Err(format!("{origin}: no `host` section (the machine file of the host)"));
    }
    for c in &b.meta.captures {
        if b.capture(&c.name).is_none() {
            return Err(format!(
                "{origin}: the metadata lists capture `{}` but the bundle has no such section",
                c.name
            ));
        }
    }
    Ok(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bundle_reads_back_and_bad_ones_say_where() {
        let b = Bundle {
            meta: Meta {
                clock: "x86-tsc".into(),
                tsc_khz: 2_600_000,
                clock_mhz: 2600,
                captures: vec![CaptureMeta { name: "idle".into(), roots: vec![], ..Default::default() }],
                ..Default::default()
            },
            host: "name = \"h\"\n".into(),
            captures: vec![(
                "idle".into(),
                "# tracer: nop\n  <idle>-0 [000] d..1. 5: cpu_idle: state=1 cpu_id=0\n".into(),
            )],
        };
        let t = write(&b);
        let r = read(&t, "b").unwrap();
        assert_eq!(r.meta, b.meta);
        assert_eq!(r.host, b.host);
        assert_eq!(r.captures, b.captures);
        assert!(read("nope", "b").unwrap_err().contains("b:1: expected `#schedsim"));
        let cut = &t[..t.len() - 10];
        assert!(read(cut, "b").unwrap_err().contains("beyond the end"), "{}", read(cut, "b").unwrap_err());
        let bad = t.replace("#section host - ", "#section hots - ");
        assert!(read(&bad, "b").unwrap_err().contains("unknown section kind `hots`"));
    }
}
