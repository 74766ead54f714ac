//! `--help` and README are generated from, or checked against, the tables in code: the
//! scenarios, kernels, machine presets, sched features and experiments `--help` lists, README's
//! reference tables (between its `<!-- tables -->` markers), and the commands README says take
//! `--json`.

use schedsim::cli::readme_tables;
use schedsim::experiments::EXPERIMENTS;
use schedsim::linux::kernel::sched::features::SCHED_FEATURES;
use schedsim::linux::patches::KERNELS;
use schedsim::spec::scenario;
use std::process::Command;

fn help(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_schedsim")).args(args).output().unwrap();
    assert!(out.status.success(), "{args:?}");
    // clap wraps long help lines: join them so names split across lines still match.
    String::from_utf8(out.stdout).unwrap().split_whitespace().collect::<Vec<_>>().join(" ")
}

fn assert_lists(text: &str, what: &str, names: &[&str]) {
    for n in names {
        assert!(text.contains(n), "{what} does not list {n}:\n{text}");
    }
}

#[test]
fn help_lists_every_scenario_kernel_machine_feature_and_experiment() {
    let scenarios: Vec<&str> = scenario::BUILTIN.iter().map(|b| b.0).collect();
    let kernels: Vec<&str> = KERNELS.iter().map(|k| k.name).collect();
    let features: Vec<&str> = SCHED_FEATURES.iter().filter(|f| f.modelled).map(|f| f.name).collect();
    let unknowns: Vec<&str> = schedsim::unknowns::UNKNOWNS.iter().map(|u| u.name).collect();
    for cmd in ["run", "compare"] {
        let h = help(&[cmd, "--help"]);
        assert_lists(&h, cmd, &scenarios);
        assert_lists(&h, cmd, &kernels);
        assert_lists(&h, cmd, schedsim::hw::preset_names());
        assert_lists(&h, cmd, &features);
        assert_lists(&h, cmd, &schedsim::background::names());
        assert_lists(&h, cmd, schedsim::linux::config::Preempt::NAMES);
        assert_lists(&h, cmd, &unknowns);
    }
    let experiments: Vec<&str> = EXPERIMENTS.iter().map(|e| e.name).collect();
    assert_lists(&help(&["reproduce", "--help"]), "reproduce", &experiments);
    assert_lists(&help(&["reproduce", "--help"]), "reproduce", &unknowns);
    assert_lists(&help(&["explore", "--help"]), "explore", &unknowns);
    // An unmodelled feature is not offered.
    let h = help(&["run", "--help"]);
    let unmodelled = SCHED_FEATURES.iter().find(|f| !f.modelled).unwrap();
    assert!(!h.contains(&format!(" {},", unmodelled.name)), "{h}");
}

const BEGIN: &str =
    "<!-- tables: generated from the code by cli::readme_tables(); tests/help_tables.rs checks them -->\n";
const END: &str = "<!-- end of tables -->\n";

#[test]
fn readme_tables_match_the_code() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/README.md");
    let readme = std::fs::read_to_string(path).unwrap();
    let (Some(b), Some(e)) = (readme.find(BEGIN), readme.find(END)) else {
        panic!("README.md has no {BEGIN:?} ... {END:?} block");
    };
    let have = &readme[b + BEGIN.len()..e];
    let want = format!("\n{}\n", readme_tables());
    if have != want {
        if std::env::var_os("UPDATE_README").is_some() {
            let new = format!("{}{BEGIN}{want}{}", &readme[..b], &readme[e..]);
            std::fs::write(path, new).unwrap();
            return;
        }
        panic!("README.md's tables differ from the code; rerun with UPDATE_README=1 to rewrite them.\nwant:\n{want}");
    }
}

/// README names the commands that take `--json`; each of them does, and the ones that print
/// something else (a TOML file, a program's output, JSON lines) are not named.
#[test]
fn the_commands_readme_says_take_json_do() {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    let line = readme.lines().find(|l| l.contains("take `--json`")).expect("README names the --json commands");
    let named: Vec<&str> = line.split('`').skip(1).step_by(2).filter(|w| *w != "--json").collect();
    assert!(named.len() >= 6, "{line}");
    for cmd in ["run", "compare", "reproduce", "list", "bench", "merge", "validate", "sweep", "machine", "host-run"] {
        let takes = help(&[cmd, "--help"]).contains("--json");
        assert_eq!(takes, named.contains(&cmd), "{cmd}: takes --json = {takes}, README: {line}");
    }
}

/// `list --unknowns` prints the table of named unknowns, every row with its mechanism, range,
/// default and collapsing measurement; `list --json` carries the same rows.
#[test]
fn list_prints_the_unknowns_table() {
    let text = help(&["list", "--unknowns"]);
    for u in schedsim::unknowns::UNKNOWNS {
        assert!(text.contains(u.name), "{}", u.name);
        assert!(text.contains(&u.collapse.split_whitespace().collect::<Vec<_>>().join(" ")), "{}", u.name);
    }
    assert_eq!(text.matches("mechanism:").count(), schedsim::unknowns::UNKNOWNS.len());
    let out = Command::new(env!("CARGO_BIN_EXE_schedsim")).args(["list", "--json"]).output().unwrap();
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let names: Vec<&str> = doc["unknowns"].as_array().unwrap().iter().map(|u| u["name"].as_str().unwrap()).collect();
    let want: Vec<&str> = schedsim::unknowns::UNKNOWNS.iter().map(|u| u.name).collect();
    assert_eq!(names, want);
    assert!(doc["unknowns"][0]["range"].as_str().unwrap().contains("docs/unknowns.md"));
}
