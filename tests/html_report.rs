//! `--html`: one self-contained file (no scripts, no external resources) with the plots.

use std::process::Command;

fn report(args: &[&str], name: &str) -> String {
    let dir = std::env::temp_dir().join(format!("schedsim-html-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("r.html");
    // --html goes before a workload's own options (after `--`).
    let split = args.iter().position(|a| *a == "--").unwrap_or(args.len());
    let o = Command::new(env!("CARGO_BIN_EXE_schedsim"))
        .args(&args[..split])
        .arg("--html")
        .arg(&path)
        .args(&args[split..])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let html = std::fs::read_to_string(&path).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    html
}

fn self_contained(html: &str) {
    assert!(html.starts_with("<!DOCTYPE html>") && html.trim_end().ends_with("</html>"));
    for bad in ["<script", "<link", "<img", "src=", "url(", "@import"] {
        assert!(!html.contains(bad), "the report references something outside it: {bad}");
    }
    // The only URL is the SVG namespace, which is a name, not a fetch.
    assert_eq!(html.matches("http").count(), html.matches("http://www.w3.org/2000/svg").count());
}

#[test]
fn reproduce_writes_the_charts_per_experiment() {
    let html = report(&["reproduce", "ipistorm", "--runs", "2", "--param", "numipi=3000", "--quiet"], "reproduce");
    self_contained(&html);
    for want in ["Comparison", "Distribution over seeds", "Timeline: baseline", "Phases: sm_idle", "published"] {
        assert!(html.contains(want), "missing {want}");
    }
    // Comparison + seeds + 6 timelines + 6 phase charts.
    assert_eq!(html.matches("<svg").count(), 14);
}

#[test]
fn run_writes_latency_timeline_and_phases() {
    let html = report(
        &["run", "hackbench", "--machine", "smp-4", "--quiet", "--", "perf", "-p", "-g", "2", "-l", "20"],
        "run",
    );
    self_contained(&html);
    assert!(html.contains("Wakeup latency") && html.contains("Timeline:") && html.contains("Phases:"));
    assert_eq!(html.matches("<svg").count(), 3);
}
