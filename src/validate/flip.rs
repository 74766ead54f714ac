//! `validate --flip NAME=VALUE`: a setting the running kernel lets root change without a
//! reboot, applied alike to the host (sysfs) and to the model's machine file, so the model's
//! predicted change of each figure can be printed beside the measured one.
//!
//! The flips are the ones both sides have:
//! - `governor=menu|haltpoll`: `/sys/devices/system/cpu/cpuidle/current_governor`, the machine
//!   file's `governor` (the model has no `ladder` or `teo`).
//! - `guest_halt_poll_ns`, `guest_halt_poll_grow`, `guest_halt_poll_shrink`,
//!   `guest_halt_poll_grow_start`, `guest_halt_poll_allow_shrink`:
//!   `/sys/module/haltpoll/parameters/NAME` (drivers/cpuidle/governors/haltpoll.c), the
//!   machine file's `[haltpoll]` table.
//! - `disable=STATE`: every CPU's `cpuidle/stateN/disable` for the idle state named STATE
//!   (the sysfs `name`), the machine file's `disabled = true` on that `[[idle_state]]`.
//!
//! This module is the pure part (parsing, the flipped machine file, the delta table); the
//! host writes are `cli::validate`'s.

use super::{Row, RowKind, STRUCTURE_FLOOR};

/// The haltpoll governor's module parameters a flip may set, and whether each is a boolean.
pub const HALTPOLL_PARAMS: &[(&str, bool)] = &[
    ("guest_halt_poll_ns", false),
    ("guest_halt_poll_grow", false),
    ("guest_halt_poll_shrink", false),
    ("guest_halt_poll_grow_start", false),
    ("guest_halt_poll_allow_shrink", true),
];

/// One flip.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Flip {
    Governor(String),
    Haltpoll { name: String, value: String },
    Disable(String),
}

impl Flip {
    /// Parse `NAME=VALUE`; errors name the flip and what was expected.
    pub fn parse(s: &str) -> Result<Flip, String> {
        let Some((name, value)) = s.split_once('=') else {
            return Err(format!("--flip {s}: expected NAME=VALUE"));
        };
        let value = value.trim();
        match name.trim() {
            "governor" => match value {
                "menu" | "haltpoll" => Ok(Flip::Governor(value.into())),
                _ => Err(format!("--flip {s}: the model has the menu and haltpoll governors; expected one of them")),
            },
            "disable" if !value.is_empty() => Ok(Flip::Disable(value.into())),
            n => match HALTPOLL_PARAMS.iter().find(|(p, _)| *p == n) {
                Some((_, true)) => match value {
                    "Y" | "y" | "1" | "true" => Ok(Flip::Haltpoll { name: n.into(), value: "Y".into() }),
                    "N" | "n" | "0" | "false" => Ok(Flip::Haltpoll { name: n.into(), value: "N".into() }),
                    _ => Err(format!("--flip {s}: expected Y or N")),
                },
                Some((_, false)) => match value.parse::<u32>() {
                    Ok(_) => Ok(Flip::Haltpoll { name: n.into(), value: value.into() }),
                    Err(_) => Err(format!("--flip {s}: expected an unsigned 32-bit number")),
                },
                None => Err(format!(
                    "--flip {s}: unknown setting `{n}`; expected governor, disable or one of {}",
                    HALTPOLL_PARAMS.iter().map(|p| p.0).collect::<Vec<_>>().join(", ")
                )),
            },
        }
    }

    /// `NAME=VALUE` as given.
    pub fn label(&self) -> String {
        match self {
            Flip::Governor(g) => format!("governor={g}"),
            Flip::Haltpoll { name, value } => format!("{name}={value}"),
            Flip::Disable(s) => format!("disable={s}"),
        }
    }

    /// The machine file with the flip applied (comments are not kept), to be written elsewhere:
    /// a background profile file named relative to the machine file's directory `dir` is made
    /// absolute. Errors name the file.
    pub fn apply_to_machine(&self, text: &str, origin: &str, dir: &std::path::Path) -> Result<String, String> {
        let mut doc: toml::Table = text.parse().map_err(|e| format!("{origin}: {e}"))?;
        if let Some(toml::Value::String(b)) = doc.get_mut("background") {
            if b.ends_with(".toml") && std::path::Path::new(b.as_str()).is_relative() {
                *b = dir.join(b.as_str()).to_string_lossy().into_owned();
            }
        }
        match self {
            Flip::Governor(g) => {
                doc.insert("governor".into(), toml::Value::String(g.clone()));
            }
            Flip::Haltpoll { name, value } => {
                let v = if name == "guest_halt_poll_allow_shrink" {
                    toml::Value::Boolean(value == "Y")
                } else {
                    toml::Value::Integer(value.parse::<i64>().map_err(|e| format!("{}: {e}", self.label()))?)
                };
                let t = doc.entry("haltpoll").or_insert_with(|| toml::Value::Table(toml::Table::new()));
                let Some(t) = t.as_table_mut() else {
                    return Err(format!("{origin}: `haltpoll` is not a table"));
                };
                t.insert(name.clone(), v);
            }
            Flip::Disable(state) => {
                let states = doc
                    .get_mut("idle_state")
                    .and_then(|v| v.as_array_mut())
                    .ok_or_else(|| format!("{origin}: no [[idle_state]] to disable `{state}` in"))?;
                let mut found = false;
                for s in states.iter_mut().filter_map(|v| v.as_table_mut()) {
                    if s.get("name").and_then(|n| n.as_str()) == Some(state) {
                        s.insert("disabled".into(), toml::Value::Boolean(true));
                        found = true;
                    }
                }
                if !found {
                    return Err(format!("--flip {}: {origin} has no idle state named `{state}`", self.label()));
                }
            }
        }
        toml::to_string(&doc).map_err(|e| format!("{origin}: {e}"))
    }
}

/// One figure before and after a flip, real and model.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Delta {
    pub name: String,
    pub kind: RowKind,
    /// Real medians before and after, and whether the after runs fall outside the before
    /// runs' range (min-max) on one side: a measured change.
    pub real_before: Option<f64>,
    pub real_after: Option<f64>,
    pub measured_change: bool,
    /// Model means before and after.
    pub model_before: f64,
    pub model_after: f64,
    pub verdict: Verdict,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum Verdict {
    /// The host's figure moved out of its spread and the model's moved the same way.
    SameDirection,
    /// The host's figure moved and the model's did not, or moved the other way.
    Missed,
    /// Neither moved (the model's change is within the tolerance).
    BothFlat,
    /// The model moved beyond the tolerance; the host stayed within its spread.
    ModelOnly,
    /// No real figure.
    Unknown,
}

impl Verdict {
    fn text(self) -> &'static str {
        match self {
            Verdict::SameDirection => "same direction",
            Verdict::Missed => "MISSED",
            Verdict::BothFlat => "both flat",
            Verdict::ModelOnly => "model only",
            Verdict::Unknown => "n/a",
        }
    }
}

/// Whether `after` differs from `before` beyond `tolerance` (relative), or for structural
/// per-wakeup figures beyond [`STRUCTURE_FLOOR`].
fn moved(kind: RowKind, before: f64, after: f64, tolerance: f64) -> bool {
    let d = (after - before).abs();
    if kind == RowKind::Structure && d <= STRUCTURE_FLOOR {
        return false;
    }
    if before == 0.0 {
        return d > 0.0;
    }
    d / before.abs() > tolerance
}

/// Join the rows of the runs before and after a flip into deltas.
pub fn deltas(before: &[Row], after: &[Row], tolerance: f64) -> Vec<Delta> {
    before
        .iter()
        .filter_map(|b| {
            let a = after.iter().find(|a| a.name == b.name)?;
            let measured_change = match (b.real_min, b.real_max, a.real_min, a.real_max) {
                (Some(blo), Some(bhi), Some(alo), Some(ahi)) => {
                    let outside = alo > bhi || ahi < blo;
                    // A per-wakeup difference below the floor is no change, whatever the spread.
                    let big = match (b.real_median, a.real_median) {
                        (Some(x), Some(y)) => b.kind != RowKind::Structure || (y - x).abs() > STRUCTURE_FLOOR,
                        _ => false,
                    };
                    outside && big
                }
                _ => false,
            };
            let model_moved = moved(b.kind, b.model, a.model, tolerance);
            let verdict = match (b.real_median, a.real_median) {
                (Some(rb), Some(ra)) => {
                    if measured_change {
                        if model_moved && (a.model - b.model).signum() == (ra - rb).signum() {
                            Verdict::SameDirection
                        } else {
                            Verdict::Missed
                        }
                    } else if model_moved {
                        Verdict::ModelOnly
                    } else {
                        Verdict::BothFlat
                    }
                }
                _ => Verdict::Unknown,
            };
            Some(Delta {
                name: b.name.clone(),
                kind: b.kind,
                real_before: b.real_median,
                real_after: a.real_median,
                measured_change,
                model_before: b.model,
                model_after: a.model,
                verdict,
            })
        })
        .collect()
}

use super::fmt_figure as fmt;

fn change(before: f64, after: f64) -> String {
    if before == 0.0 {
        if after == 0.0 {
            "=".into()
        } else {
            format!("+{}", fmt(after))
        }
    } else {
        format!("{:+.0}%", 100.0 * (after - before) / before.abs())
    }
}

/// The predicted-against-measured table of one flip.
pub fn render(flip: &Flip, deltas: &[Delta]) -> String {
    let header: Vec<String> =
        ["figure", "real before", "real after", "measured", "model before", "model after", "predicted", "verdict"]
            .iter()
            .map(|s| s.to_string())
            .collect();
    let opt = |v: Option<f64>| v.map_or_else(|| "n/a".to_string(), fmt);
    let body: Vec<Vec<String>> = deltas
        .iter()
        .map(|d| {
            let measured = match (d.real_before, d.real_after) {
                (Some(b), Some(a)) if d.measured_change => change(b, a),
                (Some(_), Some(_)) => "(in spread)".into(),
                _ => "n/a".into(),
            };
            vec![
                d.name.clone(),
                opt(d.real_before),
                opt(d.real_after),
                measured,
                fmt(d.model_before),
                fmt(d.model_after),
                change(d.model_before, d.model_after),
                d.verdict.text().into(),
            ]
        })
        .collect();
    let count = |v: Verdict| deltas.iter().filter(|d| d.verdict == v).count();
    format!(
        "## flip {}\n\n{}\n{} measured changes: {} predicted in the same direction, {} missed; {} figures flat on both sides, {} moved only in the model\n",
        flip.label(),
        crate::report::render_grid(&header, &body),
        count(Verdict::SameDirection) + count(Verdict::Missed),
        count(Verdict::SameDirection),
        count(Verdict::Missed),
        count(Verdict::BothFlat),
        count(Verdict::ModelOnly)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const MACHINE: &str = "name = \"m\"\ngovernor = \"haltpoll\"\n[haltpoll]\nguest_halt_poll_ns = 0\n\
        [[idle_state]]\nname = \"POLL\"\n[[idle_state]]\nname = \"haltpoll\"\n";

    #[test]
    fn flips_parse_and_errors_name_them() {
        assert_eq!(Flip::parse("governor=menu").unwrap(), Flip::Governor("menu".into()));
        assert!(Flip::parse("governor=ladder").unwrap_err().contains("menu and haltpoll"));
        assert_eq!(
            Flip::parse("guest_halt_poll_ns=200000").unwrap(),
            Flip::Haltpoll { name: "guest_halt_poll_ns".into(), value: "200000".into() }
        );
        assert!(Flip::parse("guest_halt_poll_ns=-1").unwrap_err().contains("unsigned"));
        assert!(Flip::parse("guest_halt_poll_allow_shrink=maybe").unwrap_err().contains("Y or N"));
        assert!(Flip::parse("nice=5").unwrap_err().contains("unknown setting `nice`"));
        assert!(Flip::parse("governor").unwrap_err().contains("NAME=VALUE"));
        assert!(Flip::parse("disable=").is_err());
    }

    #[test]
    fn a_flip_changes_exactly_its_setting_in_the_machine_file() {
        let read = |f: &str| -> toml::Table {
            Flip::parse(f)
                .unwrap()
                .apply_to_machine(MACHINE, "m.toml", std::path::Path::new("/d"))
                .unwrap()
                .parse()
                .unwrap()
        };
        assert_eq!(read("governor=menu")["governor"].as_str(), Some("menu"));
        assert_eq!(read("guest_halt_poll_ns=200000")["haltpoll"]["guest_halt_poll_ns"].as_integer(), Some(200000));
        assert_eq!(
            read("guest_halt_poll_allow_shrink=N")["haltpoll"]["guest_halt_poll_allow_shrink"].as_bool(),
            Some(false)
        );
        let d = read("disable=POLL");
        let states = d["idle_state"].as_array().unwrap();
        assert_eq!(states[0]["disabled"].as_bool(), Some(true));
        assert!(states[1].get("disabled").is_none());
        let base: toml::Table = MACHINE.parse().unwrap();
        assert_eq!(read("governor=haltpoll"), base);
        // A background file beside the machine file stays the same file.
        let m = format!("background = \"m-background.toml\"\n{MACHINE}");
        let f =
            Flip::parse("governor=menu").unwrap().apply_to_machine(&m, "m.toml", std::path::Path::new("/d")).unwrap();
        assert!(f.contains("background = \"/d/m-background.toml\""), "{f}");
        let m = format!("background = \"server\"\n{MACHINE}");
        let f =
            Flip::parse("governor=menu").unwrap().apply_to_machine(&m, "m.toml", std::path::Path::new("/d")).unwrap();
        assert!(f.contains("background = \"server\""), "{f}");
        assert!(Flip::parse("disable=C6")
            .unwrap()
            .apply_to_machine(MACHINE, "m.toml", std::path::Path::new("/d"))
            .unwrap_err()
            .contains("no idle state named `C6`"));
    }

    fn row(name: &str, kind: RowKind, real: [f64; 3], model: f64) -> Row {
        Row {
            kind,
            name: name.into(),
            real_mean: Some(real[1]),
            real_min: Some(real[0]),
            real_max: Some(real[2]),
            real_median: Some(real[1]),
            status: None,
            target_met: None,
            model,
            ratio: None,
            within: false,
        }
    }

    #[test]
    fn verdicts_follow_the_spread_and_the_direction() {
        let s = RowKind::Speed;
        let before = [
            row("up", s, [10.0, 11.0, 12.0], 10.0),
            row("up-missed", s, [10.0, 11.0, 12.0], 10.0),
            row("flat", s, [10.0, 11.0, 12.0], 10.0),
            row("model-only", s, [10.0, 11.0, 12.0], 10.0),
            row("wake", RowKind::Structure, [0.100, 0.101, 0.102], 0.1),
        ];
        let after = [
            row("up", s, [14.0, 15.0, 16.0], 13.0),
            row("up-missed", s, [14.0, 15.0, 16.0], 9.0),
            row("flat", s, [11.0, 11.5, 12.5], 10.5),
            row("model-only", s, [11.0, 11.5, 12.5], 20.0),
            // Outside the spread but below the per-wakeup floor: no change.
            row("wake", RowKind::Structure, [0.105, 0.106, 0.107], 0.1),
        ];
        let d = deltas(&before, &after, 0.15);
        let v: Vec<Verdict> = d.iter().map(|d| d.verdict).collect();
        assert_eq!(
            v,
            [Verdict::SameDirection, Verdict::Missed, Verdict::BothFlat, Verdict::ModelOnly, Verdict::BothFlat]
        );
        let t = render(&Flip::Governor("menu".into()), &d);
        assert!(t.contains("2 measured changes: 1 predicted in the same direction, 1 missed"), "{t}");
        assert!(t.contains("+36%"), "{t}");
    }
}
