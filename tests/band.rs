//! `reproduce X --band`: the design is stated and deterministic, points that put the machine in
//! the same state are one state, and the band's runs go through the sweep machinery: a band
//! swept whole or as shards and merged gives the same tables as `reproduce --band`.

use schedsim::experiments::{self, ExpOpts};
use schedsim::sweep::band::{self, BandOpts, Design};
use schedsim::sweep::{self, Shard, SweepOpts};
use std::path::PathBuf;

/// A small experiment file: ipistorm on smp-4 over three unknowns.
const TINY: &str = r#"
name = "tiny-band"
description = "ipistorm on smp-4 over three unknowns"
title = "ipistorm numipi=300 single=1 cpulist=0 offset=1 on smp-4"

[spec]
workload = "ipistorm"
machine = "smp-4"
background = "kvm-guest"
params = { numipi = 300, single = 1, cpulist = 0, offset = 1 }

[[variant]]
label = "v6.10"
kernel = "v6.10"
published = 1.0

[[variant]]
label = "sm_idle"
kernel = "v6.10"
patches = ["+3dcac251b066"]
published = 0.25

[[unknown]]
name = "overload-holder"
values = ["none", "2"]

[[unknown]]
name = "start-avg-idle"
at = "1"

[[unknown]]
name = "background-intensity"
"#;

fn tmpdir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("schedsim-band-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn plan(name: &str, o: &ExpOpts) -> experiments::Plan {
    experiments::plan_of(name, o).unwrap_or_else(|e| panic!("{name}: {e}"))
}

#[test]
fn the_grid_has_the_default_each_unknown_alone_and_every_combination() {
    let p = plan("ipistorm", &ExpOpts::default());
    let band::Layout { axes, states, notes } = band::states(&p, Design::Grid).unwrap();
    assert!(notes.is_empty());
    let names: Vec<&str> = axes.iter().map(|a| a.unknown.name()).collect();
    assert_eq!(
        names,
        ["overload-holder", "start-overloaded", "start-avg-idle", "newidle-cost", "background-intensity"]
    );
    let points: Vec<_> = states.iter().flat_map(|s| &s.points).collect();
    assert_eq!(points.iter().filter(|p| p.kind == "grid").count(), 5 * 2 * 3 * 3 * 3);
    assert_eq!(points.iter().filter(|p| p.kind == "one-at-a-time").count(), 5 + 2 + 3 + 3 + 3);
    // s0 is the default; the points that leave the machine as it is are s0 too: no pair, the
    // background at 100%.
    assert!(states[0].values.is_empty());
    let s0: Vec<String> = states[0].points.iter().flat_map(|p| p.values.clone()).collect();
    assert_eq!(s0, ["overload-holder=none", "background-intensity=100%"]);
    // Every state's unknowns are distinct, and a grid point with the pair is its own state.
    let mut seen: Vec<&Vec<String>> = states.iter().map(|s| &s.values).collect();
    seen.sort();
    seen.dedup();
    assert_eq!(seen.len(), states.len());
    assert_eq!(states.len(), 1 + (16 - 2) + 270);
    // Each state's spec carries its unknowns on its command line.
    let runs = band::runs(&p, &BandOpts { design: Design::Grid, ..BandOpts::default() }, 0).unwrap();
    assert_eq!(runs.len(), 6 * 5 + (states.len() - 1) * 6 * 2);
    let r = runs.iter().find(|r| r.band.as_ref().unwrap().state == 1).unwrap();
    assert!(r.spec.command_line().contains("--unknown overload-holder=same-core@16"), "{}", r.spec.command_line());
}

#[test]
fn unknowns_that_change_nothing_in_a_state_are_left_out_of_it() {
    let p = plan("schbench-ttwu", &ExpOpts::default());
    let states = band::states(&p, Design::Grid).unwrap().states;
    for s in &states {
        let has = |n: &str| s.values.iter().any(|v| v.starts_with(n));
        if s.values.contains(&"guest-idle=mwait".to_string()) {
            assert_eq!(s.values.len(), 1, "an MWAIT guest neither polls nor halts: {:?}", s.values);
        }
        if s.values.contains(&"guest-idle=hlt".to_string()) {
            assert!(!has("guest-halt-poll-ns"), "no cpuidle-haltpoll on a HLT guest: {:?}", s.values);
        }
        assert!(!has("host-halt-poll-ns") || has("guest-idle=hlt"), "host polling off: {:?}", s.values);
    }
    // hlt: 3 host windows (0 is plain HLT) x 3 wakes; guest-haltpoll: 2 windows (0 is plain
    // HLT again) x 3 wakes; mwait: 1. The default (guest-haltpoll 200us, the preset's wake)
    // is one of them.
    assert_eq!(states.len(), 9 + 6 + 1);
}

#[test]
fn a_latin_hypercube_is_seeded_and_uses_each_stratum_once() {
    let at = |seed: u64| {
        let p = plan("ipistorm", &ExpOpts { seed, ..ExpOpts::default() });
        let states = band::states(&p, Design::Lhs(8)).unwrap().states;
        let mut pts: Vec<Vec<String>> =
            states.iter().flat_map(|s| &s.points).filter(|p| p.kind == "lhs").map(|p| p.values.clone()).collect();
        pts.sort();
        pts
    };
    let a = at(1);
    assert_eq!(a.len(), 8);
    assert_eq!(a, at(1), "the same seed, the same points");
    assert_ne!(a, at(2), "another seed, another hypercube");
    // start-avg-idle takes the midpoint of each of its 8 strata exactly once.
    let mut avg: Vec<String> = a.iter().map(|p| p[2].clone()).collect();
    avg.sort();
    let mut want: Vec<String> =
        (0..8u64).map(|k| format!("start-avg-idle={}@16", band_time((2 * k + 1) * 1_000_000 / 16))).collect();
    want.sort();
    assert_eq!(avg, want);
    // The enumeration of five placements: each value for eight strata, in fifths.
    let holders: Vec<&String> = a.iter().map(|p| &p[0]).collect();
    assert!(holders.iter().all(|h| h.starts_with("overload-holder=")));
    assert!(holders.iter().any(|h| h.ends_with("=none")) && holders.iter().any(|h| h.ends_with("other-node@16")));
}

fn band_time(ns: u64) -> String {
    schedsim::unknowns::format_time(ns)
}

#[test]
fn design_and_experiment_errors_are_clear() {
    for bad in ["lhs", "lhs:0", "lhs:x", "grid:2", "lhs:10001"] {
        assert!(Design::parse(bad).unwrap_err().contains("expected auto, grid or lhs:N"), "{bad}");
    }
    assert_eq!(Design::parse("lhs:12").unwrap(), Design::Lhs(12));
    // auto: ipistorm's five unknowns make a grid of 270 points, more than auto runs whole, so
    // auto takes the Latin hypercube of 24 (besides the default and the 16 one-at-a-time
    // points); with one unknown fixed the grid has 54 points and auto runs it whole.
    assert_eq!(Design::parse("auto").unwrap(), Design::Auto);
    let kinds = |l: &band::Layout, k: &str| l.states.iter().flat_map(|s| &s.points).filter(|p| p.kind == k).count();
    let auto = band::states(&plan("ipistorm", &ExpOpts::default()), Design::Auto).unwrap();
    assert_eq!((kinds(&auto, "grid"), kinds(&auto, "lhs"), kinds(&auto, "one-at-a-time")), (0, 24, 16));
    let o = ExpOpts { overrides: vec![("unknown".into(), "overload-holder=same-llc@16".into())], ..ExpOpts::default() };
    let auto = band::states(&plan("ipistorm", &o), Design::Auto).unwrap();
    assert_eq!((kinds(&auto, "grid"), kinds(&auto, "lhs")), (54, 0));
    let e = band::states(&plan("rt-push", &ExpOpts::default()), Design::Grid).unwrap_err();
    assert!(e.contains("experiment 'rt-push' names no unknowns"), "{e}");
    // An unknown fixed on the command line is not a dimension of the band.
    let o = ExpOpts { overrides: vec![("unknown".into(), "overload-holder=same-llc@16".into())], ..ExpOpts::default() };
    let band::Layout { axes, states, notes } = band::states(&plan("ipistorm", &o), Design::Grid).unwrap();
    assert_eq!(axes.len(), 4);
    assert_eq!(
        notes,
        ["overload-holder is fixed at same-llc@16 (--unknown or a calibration): not a dimension of the band"]
    );
    assert_eq!(states.iter().flat_map(|s| &s.points).filter(|p| p.kind == "grid").count(), 2 * 3 * 3 * 3);
    // An experiment file's [[unknown]] errors name the file and line.
    let bad = TINY.replace("values = [\"none\", \"2\"]", "values = [\"none\", \"2\"]\nlo = \"1\"");
    let e = experiments::file::plan(&bad, "x.toml", &ExpOpts::default()).err().unwrap();
    assert!(e.starts_with("x.toml:") && e.contains("[[unknown]] overload-holder: give values"), "{e}");
    let bad =
        TINY.replace("name = \"start-avg-idle\"\nat = \"1\"", "name = \"start-avg-idle\"\nlo = \"1ms@1\"\nhi = \"5\"");
    let e = experiments::file::plan(&bad, "x.toml", &ExpOpts::default()).err().unwrap();
    assert!(e.contains("start-avg-idle=5: expected TIME@CPULIST"), "{e}");
}

fn merged(files: &[PathBuf]) -> (String, String) {
    let groups = sweep::merge(&sweep::read_lines(files).unwrap());
    (sweep::render_merged(&groups), serde_json::to_string(&groups).unwrap())
}

#[test]
fn a_band_sharded_and_merged_prints_what_reproduce_band_prints() {
    let dir = tmpdir("shards");
    let exp = dir.join("tiny.toml");
    std::fs::write(&exp, TINY).unwrap();
    let grid = format!(
        "[[run]]\nexperiment = \"{}\"\nband = true\nband_design = \"lhs:3\"\nband_seeds = 1\nseeds = 2\n",
        exp.display()
    );
    let runs = sweep::parse_grid(&grid, "grid.toml").unwrap();
    assert!(runs.iter().all(|r| r.band.is_some()));
    // The band in one process, as `reproduce --band` runs it.
    let o = ExpOpts { runs: 2, ..ExpOpts::default() };
    let p = plan(exp.to_str().unwrap(), &o);
    let bo = BandOpts { design: Design::Lhs(3), runs: 1 };
    let own = band::runs(&p, &bo, 0).unwrap();
    assert_eq!(own.iter().map(|r| r.key()).collect::<Vec<_>>(), runs.iter().map(|r| r.key()).collect::<Vec<_>>());
    let (point, lines) = band::execute(&p, &own, 2).unwrap();
    assert_eq!(point.iter().map(Vec::len).collect::<Vec<_>>(), [2, 2], "the default state over the plan's seeds");
    let refs: Vec<&serde_json::Value> = lines.iter().collect();
    let report = band::analyze(&refs).unwrap();
    let text = band::render(&report);
    // Swept whole and as three shards, then merged.
    let whole = dir.join("all.jsonl");
    sweep::sweep(&runs, &whole, &SweepOpts { shard: Shard::ALL, jobs: 2 }).unwrap();
    let mut shards = Vec::new();
    for i in 0..3 {
        let f = dir.join(format!("shard-{i}.jsonl"));
        sweep::sweep(&runs, &f, &SweepOpts { shard: Shard { index: i, count: 3 }, jobs: 1 }).unwrap();
        shards.push(f);
    }
    let (text_whole, json_whole) = merged(std::slice::from_ref(&whole));
    let (text_shards, json_shards) = merged(&shards);
    assert_eq!(text_whole, text_shards);
    assert_eq!(json_whole, json_shards);
    assert!(
        text_whole.ends_with(&text),
        "merge prints the band tables reproduce --band prints:\n{text_whole}\n---\n{text}"
    );
    assert!(text.contains("Ratios within one state") && text.contains("Sensitivity"), "{text}");
    // The binary: the same tables after the experiment's own.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_schedsim"))
        .args([
            "reproduce",
            exp.to_str().unwrap(),
            "--runs",
            "2",
            "--band",
            "--band-design",
            "lhs:3",
            "--band-runs",
            "1",
        ])
        .args(["--quiet", "--jobs", "1"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(stdout.contains(&text), "{stdout}");
    // And --json carries band, ratios and sensitivity beside the table.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_schedsim"))
        .args([
            "reproduce",
            exp.to_str().unwrap(),
            "--runs",
            "2",
            "--band",
            "--band-design",
            "lhs:3",
            "--band-runs",
            "1",
        ])
        .args(["--quiet", "--json"])
        .output()
        .unwrap();
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["rows"].as_array().unwrap().len(), 2);
    assert_eq!(doc["band"]["design"], "lhs:3");
    assert_eq!(doc["band"]["rows"].as_array().unwrap().len(), 2);
    assert_eq!(doc["ratios"][0]["variant"], "sm_idle");
    assert_eq!(doc["ratios"][0]["published"], 0.25);
    assert_eq!(doc["sensitivity"].as_array().unwrap().len(), 2 * 3);
    assert_eq!(doc["band"]["states"].as_array().unwrap().len(), report.states.len());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_band_moves_where_its_unknowns_say() {
    // On the tiny band: the pinned pair on CPU 2 holds rd->overloaded, so CPU 1's newidle
    // passes walk and v6.10's calls get slower; SM_IDLE's idle re-entry does not balance, so
    // its ratio to v6.10 within that state drops. The passes run when a call finds CPU 1
    // polling: with C1 (1 us exit) on, v6.10's menu promotes CPU 1's short idle periods from
    // POLL to C1, which smp-4 enters with HLT (a real IPI, no pass), so C1 is off here.
    let dir = tmpdir("moves");
    let exp = dir.join("tiny.toml");
    let polling =
        TINY.replace("background = \"kvm-guest\"", "background = \"kvm-guest\"\nidle_states = { C1 = false }");
    assert_ne!(polling, TINY);
    std::fs::write(&exp, polling).unwrap();
    let p = plan(exp.to_str().unwrap(), &ExpOpts { runs: 2, ..ExpOpts::default() });
    let runs = band::runs(&p, &BandOpts { design: Design::Lhs(2), runs: 2 }, 0).unwrap();
    let (_, lines) = band::execute(&p, &runs, 2).unwrap();
    let r = band::analyze(&lines.iter().collect::<Vec<_>>()).unwrap();
    let cell = |v: &str, u: &str| r.sensitivity.iter().find(|c| c.variant == v && c.unknown == u).unwrap().clone();
    let pair = cell("v6.10", "overload-holder");
    let none = pair.values[0].normalized.unwrap();
    let held = pair.values.iter().find(|x| x.value == "2").unwrap().normalized.unwrap();
    assert!(held > none * 1.05, "the pair slows v6.10's calls: {none} -> {held}");
    let ratio = cell("sm_idle", "overload-holder");
    assert!(ratio.ratio_min.unwrap() < ratio.ratio_max.unwrap() - 0.03, "{ratio:?}");
    let band_row = &r.band[0];
    assert!(band_row.max >= held - 1e-9 && band_row.min <= 1.0 + 1e-9, "{band_row:?}");
    let _ = std::fs::remove_dir_all(&dir);
}
