//! `schedsim sweep` and `schedsim merge`: a small grid run whole and as 3 shards merges to the
//! same lines and tables, and a second sweep skips the runs already written.

use schedsim::sweep::{self, Shard, SweepOpts, SweepSummary};
use std::path::{Path, PathBuf};

const GRID: &str = r#"
kernels = ["v6.10", "v6.10+3dcac251b066"]
machines = ["smp-4"]
seeds = 2
background = "none"

[[run]]
workload = "ipistorm"
params = { numipi = 200 }

[[run]]
experiment = "rt-push"
seeds = 1
"#;

fn tmpdir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("schedsim-sweep-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn sorted_lines(files: &[&Path]) -> Vec<String> {
    let mut v: Vec<String> = files
        .iter()
        .flat_map(|f| std::fs::read_to_string(f).unwrap().lines().map(str::to_string).collect::<Vec<_>>())
        .collect();
    v.sort();
    v
}

fn merged(files: &[PathBuf]) -> (String, String) {
    let groups = sweep::merge(&sweep::read_lines(files).unwrap());
    (sweep::render_merged(&groups), serde_json::to_string(&groups).unwrap())
}

#[test]
fn three_shards_merge_to_the_unsharded_run_and_reruns_skip() {
    let dir = tmpdir("shards");
    let runs = sweep::parse_grid(GRID, "grid.toml").unwrap();
    // 2 kernels x 2 seeds of ipistorm, and rt-push's 4 variants x 1 seed.
    assert_eq!(runs.len(), 8);
    assert_eq!(runs.iter().filter(|r| r.experiment.is_some()).count(), 4);

    let whole = dir.join("all.jsonl");
    let s = sweep::sweep(&runs, &whole, &SweepOpts { shard: Shard::ALL, jobs: 2 }).unwrap();
    assert_eq!(s, SweepSummary { grid_runs: 8, shard_runs: 8, skipped: 0, ran: 8 });

    let mut shards = Vec::new();
    let mut total = 0;
    for i in 0..3 {
        let f = dir.join(format!("shard-{i}.jsonl"));
        let s = sweep::sweep(&runs, &f, &SweepOpts { shard: Shard { index: i, count: 3 }, jobs: 1 }).unwrap();
        assert!(s.ran > 0 && s.ran == s.shard_runs, "shard {i}: {s:?}");
        total += s.ran;
        shards.push(f);
    }
    assert_eq!(total, 8, "the shards partition the grid");

    let shard_refs: Vec<&Path> = shards.iter().map(PathBuf::as_path).collect();
    assert_eq!(sorted_lines(&[&whole]), sorted_lines(&shard_refs), "same lines modulo order");
    let (text_whole, json_whole) = merged(std::slice::from_ref(&whole));
    let (text_shards, json_shards) = merged(&shards);
    assert_eq!(text_whole, text_shards);
    assert_eq!(json_whole, json_shards);
    // Both groups are there, each with its baseline first and a %change table.
    assert!(text_whole.contains("Test          : ipistorm numipi=200 on smp-4 background=none"), "{text_whole}");
    assert!(text_whole.contains("Test          : experiment rt-push"), "{text_whole}");
    assert!(text_whole.contains("v6.10 (v6.10)") && text_whole.contains("1.00 [baseline]"));
    assert!(text_whole.contains("%change") && text_whole.contains("time_ms"), "{text_whole}");

    // A second sweep finds every run done.
    let before = std::fs::read_to_string(&whole).unwrap();
    let s = sweep::sweep(&runs, &whole, &SweepOpts { shard: Shard::ALL, jobs: 2 }).unwrap();
    assert_eq!((s.skipped, s.ran), (8, 0));
    assert_eq!(std::fs::read_to_string(&whole).unwrap(), before);

    // An interrupted write: the last line cut in half is no done run, that run alone is redone,
    // and the cut line is ended with a newline (never truncated: issue 35), so merge skips it.
    let f = &shards[0];
    let text = std::fs::read_to_string(f).unwrap();
    let body = text.trim_end_matches('\n');
    let last = body.rfind('\n').map_or(0, |p| p + 1);
    let cut = &text[..last + (body.len() - last) / 2];
    std::fs::write(f, cut).unwrap();
    let s = sweep::sweep(&runs, f, &SweepOpts { shard: Shard { index: 0, count: 3 }, jobs: 1 }).unwrap();
    assert_eq!(s.ran, 1, "{s:?}");
    assert!(std::fs::read_to_string(f).unwrap().starts_with(cut));
    assert_eq!(sorted_lines(&[f]), {
        let mut v: Vec<String> = text.lines().map(str::to_string).collect();
        v.push(cut[last..].to_string());
        v.sort();
        v
    });
    assert_eq!(merged(&shards).0, text_whole);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_binary_sweeps_and_merges() {
    let dir = tmpdir("bin");
    let grid = dir.join("grid.toml");
    std::fs::write(&grid, GRID).unwrap();
    let bin = env!("CARGO_BIN_EXE_schedsim");
    for i in 0..3 {
        let out = std::process::Command::new(bin)
            .args(["sweep", grid.to_str().unwrap(), "--jobs", "1", "--shard", &format!("{i}/3"), "--out"])
            .arg(dir.join(format!("s{i}.jsonl")))
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    }
    let out = std::process::Command::new(bin)
        .arg("merge")
        .args((0..3).map(|i| dir.join(format!("s{i}.jsonl"))))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("experiment rt-push") && text.contains("%change"), "{text}");

    // Bad input: file:line errors, exit code 2, nothing written.
    std::fs::write(&grid, "kernels = [\"v6.10\"]\n\n[[run]]\nworkload = \"ipistorm\"\nparams = { numipi = 1.5 }\n")
        .unwrap();
    let out = std::process::Command::new(bin)
        .args(["sweep", grid.to_str().unwrap(), "--out"])
        .arg(dir.join("bad.jsonl"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains(&format!("{}:3:", grid.display())) && err.contains("params.numipi"), "{err}");
    assert!(!dir.join("bad.jsonl").exists());
    let out =
        std::process::Command::new(bin).args(["sweep", grid.to_str().unwrap(), "--shard", "3/3"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let _ = std::fs::remove_dir_all(&dir);
}
