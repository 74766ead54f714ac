//! `reproduce lkp-matrix`: the cells filter, the sweep's sharding of the plan, and the JSON rows.

use schedsim::experiments::{self, ExpOpts};

#[test]
fn a_sweep_of_the_matrix_takes_cells_and_expands_base_and_patched_per_seed() {
    let runs = schedsim::sweep::parse_grid(
        "[[run]]\nexperiment = \"lkp-matrix\"\ncells = \"netperf-*_RR-25%\"\nseeds = 2\n",
        "g.toml",
    )
    .unwrap();
    // 2 cells x (v6.10, +SM_IDLE) x 2 seeds.
    assert_eq!(runs.len(), 8);
    assert!(runs.iter().all(|r| r.spec.machine == "xeon-128-4n" && r.spec.workload == "netperf"));
    assert_eq!(runs.iter().filter(|r| r.spec.patches == "+3dcac251b066").count(), 4);
    let e = schedsim::sweep::parse_grid("[[run]]\nworkload = \"netperf\"\ncells = \"x\"\n", "g.toml").unwrap_err();
    assert!(e.starts_with("g.toml:") && e.contains("cells"), "{e}");
    let e = schedsim::sweep::parse_grid("[[run]]\nexperiment = \"lkp-matrix\"\ncells = \"nosuch\"\n", "g.toml")
        .unwrap_err();
    assert!(e.contains("--cells nosuch"), "{e}");
}

#[test]
fn cells_is_refused_by_the_other_experiments() {
    let o = ExpOpts { cells: Some("hackbench".into()), ..ExpOpts::default() };
    let e = experiments::plan_of("rt-push", &o).err().expect("refused");
    assert!(e.contains("--cells hackbench") && e.contains("lkp-matrix"), "{e}");
}

#[test]
fn a_json_row_carries_its_cell_and_change() {
    let o = ExpOpts { runs: 1, cells: Some("netperf-UDP_RR-25%".into()), ..ExpOpts::default() };
    let c = experiments::plan_of("lkp-matrix", &o).and_then(|p| p.run(2)).expect("runs");
    assert_eq!(c.rows.len(), 1);
    let v = serde_json::to_value(&c).unwrap();
    let row = &v["rows"][0];
    assert_eq!(row["cell"], "netperf-UDP_RR-25%");
    let (b, p, ch) = (
        row["base_mean"].as_f64().unwrap(),
        row["patched_mean"].as_f64().unwrap(),
        row["change_pct"].as_f64().unwrap(),
    );
    assert!(b > 0.0 && p > 0.0);
    assert!((ch - 100.0 * (p - b) / b).abs() < 1e-9, "{ch} {b} {p}");
    assert_eq!(row["published_base"], 2_746_806.0);
    // How far the shortened run is from settled is reported, not assumed.
    let h = row["second_half_ratio"].as_f64().unwrap();
    assert!(h.is_finite() && h > 0.0, "second half / first half = {h}");
    let text = schedsim::report::render_table(&c);
    assert!(text.contains("%change") && text.contains("netperf-UDP_RR-25%: netperf.Throughput_total_tps"), "{text}");
}

/// The shortened schbench cells have settled: each cell's request p90 at `-r 2` is within 2%
/// of its p90 at twice the length (the left-out overcommitted cells would not be). It was 1%
/// until v6.10's `menu_select()`: since then schbench-100%-mthread-1-workers gives 3116 us at
/// `-r 2` against 3076 us at `-r 4` (1.3%; the other cells stay within 1%).
#[test]
fn schbench_cells_p90_is_the_same_at_twice_the_length() {
    use schedsim::experiments::lkp_matrix::{cells, Bench, SCHBENCH_SECS};
    let p90 = |args: &str| {
        let mut s = schedsim::spec::RunSpec::new("schbench23");
        s.machine = "xeon-128-4n".into();
        s.params = schedsim::workload::params::Params::from_pairs(vec![("args".into(), args.into())], "test");
        let r = schedsim::run::execute(&s).expect("runs");
        r.workload.metric(&r.facts()).value
    };
    let mut n = 0;
    for c in cells().iter().filter(|c| matches!(c.bench, Bench::Schbench { .. })) {
        let cmd = c.command(128);
        let args = cmd.trim_start_matches("schbench ");
        let long = args.replace(&format!("-r {SCHBENCH_SECS}"), &format!("-r {}", 2 * SCHBENCH_SECS));
        let (a, b) = (p90(args), p90(&long));
        assert!(
            a > 0.0 && (a - b).abs() <= 0.02 * b,
            "{}: p90 {a} us at -r {SCHBENCH_SECS}, {b} us at twice that",
            c.name
        );
        n += 1;
    }
    assert_eq!(n, 6);
}
